/* SPDX-License-Identifier: MIT */
/*
 * exit_io.h - I/O-instruction exits (reason 30): the I/O bitmaps that
 * make only the PCI configuration ports 0xCF8-0xCFF (while a function is
 * hidden) and the ACPI PM1 control ports (once known, with a trace
 * source) exit, the decoders of the exit qualification, and the handler
 * (vmm/exit/exit_io.c) that gives the guest configuration mechanism #1
 * without the hidden functions (vmm/exit/pci_hide.h) and sees the guest's
 * ACPI sleep (the power-off) before it happens (docs/PCI-HIDE.md).
 */
#ifndef TV_EXIT_IO_H
#define TV_EXIT_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/lib/guest_mem.h"
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

/* io_bitmap_set_port - make accesses touching port exit (an atomic OR). */
void io_bitmap_set_port(uint8_t a[4096], uint8_t b[4096], uint16_t port);

/* io_bitmap_test - does the bitmap pair make an access to port exit? */
bool io_bitmap_test(const uint8_t a[4096], const uint8_t b[4096], uint16_t port);

/*
 * The ACPI PM1 control registers (vmm/lib/acpi.h: PM1a_CNT, PM1b_CNT; a
 * write with SLP_EN enters a sleep state, S5 = power-off).  The ports come
 * from the FADT, found through the EFI configuration table: at boot on a
 * real machine, and again at the ExitBootServices event because an OS
 * loader may install the tables only then (the Bochs bench's does).
 *
 * io_sleep_init - the resident copy's setup (hv_init): the shared bitmaps
 *   (a, b; NULL: no I/O bitmaps, nothing is ever armed), the EFI system
 *   table's physical address (0: none) and how to read physical memory.
 * io_sleep_learn - walk the tables now and arm what the FADT names; when
 *   says where from ("boot", "ExitBootServices") for the log line.
 *   Returns the number of ports armed, or an ACPI_ERR_* code (logged).
 * io_sleep_arm - make accesses touching the 16-bit registers at pm1a and
 *   pm1b (0: none) exit from now on (both bytes' bits; never cleared).
 *   Returns the number armed, or -1 without bitmaps.
 * io_sleep_ports - the armed ports (0: none), out[0] PM1a, out[1] PM1b.
 */
void io_sleep_init(uint8_t *a, uint8_t *b, uint64_t efi_st, gmem_read_phys_fn rd, void *rd_ctx);
int io_sleep_learn(const char *when);
int io_sleep_arm(uint16_t pm1a, uint16_t pm1b);
void io_sleep_ports(uint16_t out[2]);

/*
 * exit_io_instruction - reason 30; needs ctx->qualification and
 * ctx->instr_len.  IN/OUT of 1, 2 or 4 bytes touching an armed PM1
 * control register are performed on the real port as asked; an OUT whose
 * bytes set SLP_EN in one first calls the guest_sleep exit hook
 * (vmm/exit/hooks.h) with the port and value.  Other IN/OUT go through
 * pci_cfg_io().  IN writes AL, AX (the rest of RAX kept) or EAX
 * (zero-extended into RAX, as a 32-bit register write does); RIP
 * advances.  INS/OUTS (with or without REP) are refused: #GP(0) is injected (the fault the CPU raises
 * for a denied I/O access), RIP stays, cpu->stats.io_string_refused
 * counts them and the first few are logged.  An access size the SDM
 * does not define (qualification bits 2:0 = 2 or > 3) stops the CPU.
 */
enum exit_action exit_io_instruction(struct exit_ctx *ctx);

#endif /* TV_EXIT_IO_H */
