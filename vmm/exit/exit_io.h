/* SPDX-License-Identifier: MIT */
/*
 * exit_io.h - I/O-instruction exits (reason 30): the I/O bitmaps that
 * make only the PCI configuration ports 0xCF8-0xCFF exit, the decoders of
 * the exit qualification, and the handler (vmm/exit/exit_io.c) that gives
 * the guest configuration mechanism #1 without the hidden functions
 * (vmm/exit/pci_hide.h).
 */
#ifndef TV_EXIT_IO_H
#define TV_EXIT_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vmx/vcpu.h"

/*
 * Exit qualification for I/O instructions (SDM 3C 28.2.1, Table 28-5):
 * bits 2:0 size of access - 1 (0, 1 or 3), bit 3 direction (1 = IN),
 * bit 4 string instruction (INS/OUTS), bit 5 REP prefix, bit 6 operand
 * encoding (1 = immediate port), bits 31:16 port number.
 */
static inline unsigned io_qual_size(uint64_t q)   { return (unsigned)(q & 7) + 1; }
static inline bool io_qual_in(uint64_t q)         { return (q >> 3) & 1; }
static inline bool io_qual_string(uint64_t q)     { return (q >> 4) & 1; }
static inline bool io_qual_rep(uint64_t q)        { return (q >> 5) & 1; }
static inline bool io_qual_imm(uint64_t q)        { return (q >> 6) & 1; }
static inline uint16_t io_qual_port(uint64_t q)   { return (uint16_t)(q >> 16); }

/* The ports that exit: CONFIG_ADDRESS and CONFIG_DATA (PCI 3.0 3.2.2.3.2). */
#define IO_EXIT_FIRST 0xcf8u
#define IO_EXIT_LAST  0xcffu

/*
 * io_bitmap_build - I/O bitmap A (ports 0x0000-0x7FFF) and B
 * (0x8000-0xFFFF), one bit per port, a set bit makes IN/OUT/INS/OUTS
 * touching that port exit (SDM 3C 25.6.4; an access exits when the bit of
 * any byte it touches is set).  Sets exactly IO_EXIT_FIRST..IO_EXIT_LAST.
 */
void io_bitmap_build(uint8_t a[4096], uint8_t b[4096]);

/* io_bitmap_test - does the bitmap pair make an access to port exit? */
bool io_bitmap_test(const uint8_t a[4096], const uint8_t b[4096], uint16_t port);

/*
 * exit_io_instruction - reason 30; needs ctx->qualification and
 * ctx->instr_len.  IN/OUT of 1, 2 or 4 bytes go through pci_cfg_io();
 * IN writes AL, AX (the rest of RAX kept) or EAX (zero-extended into
 * RAX, as a 32-bit register write does); RIP advances.  INS/OUTS (with or
 * without REP) are refused: #GP(0) is injected (the fault the CPU raises
 * for a denied I/O access), RIP stays, cpu->stats.io_string_refused
 * counts them and the first few are logged.  An access size the SDM
 * does not define (qualification bits 2:0 = 2 or > 3) stops the CPU.
 */
enum exit_action exit_io_instruction(struct exit_ctx *ctx);

#endif /* TV_EXIT_IO_H */
