/* SPDX-License-Identifier: MIT */
/*
 * guest_mem.h - read guest memory at guest-linear addresses: a walker of
 * the guest's own page tables over guest-physical memory.
 *
 * The MTF tracer needs the bytes of the instruction the guest just
 * executed; it knows the guest's RIP and CS and the paging state from the
 * VMCS.  tracevisor's EPT is an identity map, so guest-physical equals
 * host-physical, but the walker only reads physical memory through the
 * read_phys callback in struct gmem_ctx (the hypervisor passes a plain
 * copy from its identity map, tests a fake memory).
 *
 * Paging modes (SDM 3A chapter 4, picked as the CPU does from CR0.PG,
 * CR4.PAE, EFER.LMA and CR4.LA57, Table 4-1):
 *   - paging off: the linear address is the physical one, truncated to
 *     32 bits (legacy linear addresses are 32 bits wide);
 *   - 32-bit paging (4.3): 4 KiB pages, 4 MiB pages when CR4.PSE, with
 *     PSE-36 physical bits 39:32 from PDE bits 20:13 (up to MAXPHYADDR);
 *   - PAE paging (4.4): 4 KiB and 2 MiB pages; the four PDPTEs are taken
 *     from ctx->pdpte when pdpte_valid (with EPT the CPU loads them from
 *     the VMCS GUEST_PDPTE0-3 fields at VM entry, and the copy in memory
 *     may differ from what the guest uses), else read at CR3[31:5];
 *   - 4-level and 5-level (CR4.LA57) IA-32e paging (4.5): 4 KiB, 2 MiB
 *     and 1 GiB pages, linear addresses must be canonical (48 or 57 bits).
 *
 * The caller supplies the linear address: in real mode and protected mode
 * that is the segment base plus the offset (CS.base + EIP for code), which
 * the caller computes; the walker adds nothing.
 *
 * What it does not do, on purpose: it never writes guest memory (no
 * accessed/dirty bit updates: the tracer must leave no trace in the
 * guest), and it does not check access rights (U/S, R/W, XD, protection
 * keys, SMAP): the tracer reads as the hypervisor, not as the guest.  It
 * does not consult the guest's TLB either, so a guest that changed its
 * page tables without flushing may see other bytes than the walker.
 *
 * Reserved bits (SDM 3A 4.3-4.5 entry formats) are checked, as the CPU
 * would fault on them: physical-address bits at and above MAXPHYADDR, XD
 * (bit 63) without EFER.NXE, PS in PML5E/PML4E, bits 20:13 / 29:13 of
 * 2 MiB / 1 GiB leaves, PAE PDPTE bits 2:1 and 8:5, 32-bit 4 MiB PDE bit 21.
 * 1 GiB pages are assumed supported (CPUID.80000001H:EDX[26]).
 *
 * Errors (negative: -GMEM_ERR_*, text from gmem_strerror):
 *   GMEM_ERR_NOT_PRESENT   an entry on the walk has P = 0
 *   GMEM_ERR_NONCANONICAL  IA-32e: the address is not canonical
 *   GMEM_ERR_RESERVED      an entry on the walk has a reserved bit set
 *   GMEM_ERR_READ          read_phys failed (for an entry or for data)
 *   GMEM_ERR_ARG           NULL ctx/buf/callback, MAXPHYADDR outside 32..52
 *
 * Pure code: no allocation, no globals; safe on every CPU at once.
 */
#ifndef TV_GUEST_MEM_H
#define TV_GUEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Control-register and EFER bits the walk depends on (SDM 3A 2.5, 2.2.1). */
#define GMEM_CR0_PG     (1ull << 31)
#define GMEM_CR4_PSE    (1ull << 4)
#define GMEM_CR4_PAE    (1ull << 5)
#define GMEM_CR4_LA57   (1ull << 12)
#define GMEM_EFER_LMA   (1ull << 10)
#define GMEM_EFER_NXE   (1ull << 11)

/* Paging-structure entry bits common to all modes. */
#define GMEM_PTE_P      (1ull << 0)
#define GMEM_PTE_RW     (1ull << 1)
#define GMEM_PTE_US     (1ull << 2)
#define GMEM_PTE_A      (1ull << 5)
#define GMEM_PTE_D      (1ull << 6)
#define GMEM_PTE_PS     (1ull << 7)   /* PDE/PDPTE: maps a large page */
#define GMEM_PTE_XD     (1ull << 63)

enum gmem_err {
	GMEM_ERR_NOT_PRESENT = 1,
	GMEM_ERR_NONCANONICAL = 2,
	GMEM_ERR_RESERVED = 3,
	GMEM_ERR_READ = 4,
	GMEM_ERR_ARG = 5,
};

enum gmem_paging {
	GMEM_PAGING_OFF = 0,
	GMEM_PAGING_32 = 1,
	GMEM_PAGING_PAE = 2,
	GMEM_PAGING_4LEVEL = 3,
	GMEM_PAGING_5LEVEL = 4,
};

/*
 * Read len bytes of guest-physical memory at gpa into buf; 0 on success,
 * anything else is a failure (reported as GMEM_ERR_READ).  Calls never
 * cross a 4 KiB boundary.
 */
typedef int (*gmem_read_phys_fn)(void *opaque, uint64_t gpa, void *buf, size_t len);

struct gmem_ctx {
	uint64_t cr0, cr3, cr4;
	uint64_t efer;            /* LMA and NXE are used */
	uint8_t maxphyaddr;       /* CPUID.80000008H:EAX[7:0]; 0 means 52 */
	bool pdpte_valid;         /* PAE: pdpte[] holds the PDPTEs in use */
	uint64_t pdpte[4];        /* VMCS GUEST_PDPTE0..3 */
	gmem_read_phys_fn read_phys;
	void *opaque;             /* passed to read_phys */
};

/* The result of one walk. */
struct gmem_walk {
	uint64_t gpa;             /* the guest-physical address of gva */
	uint64_t page_size;       /* 4 KiB, 2 MiB, 4 MiB or 1 GiB (4 KiB with paging off) */
	uint64_t leaf;            /* the entry that mapped it (0 with paging off) */
	uint8_t level;            /* of the leaf: 1 PTE, 2 PDE, 3 PDPTE (0 paging off) */
	uint8_t paging;           /* enum gmem_paging */
	/* on GMEM_ERR_NOT_PRESENT / GMEM_ERR_RESERVED: the entry and its level */
	uint64_t fault_entry;
	uint8_t fault_level;      /* 1 PTE .. 5 PML5E; PAE PDPTE is 3 */
};

/* gmem_paging_mode - the paging mode ctx describes (SDM 3A Table 4-1). */
enum gmem_paging gmem_paging_mode(const struct gmem_ctx *ctx);

/*
 * gmem_walk - translate gva and report how.  w is always written (zeroed,
 * then filled as far as the walk got).  Returns 0 or an error above.
 */
int gmem_walk(const struct gmem_ctx *ctx, uint64_t gva, struct gmem_walk *w);

/* gmem_translate - gmem_walk keeping only the address.  *gpa untouched on error. */
int gmem_translate(const struct gmem_ctx *ctx, uint64_t gva, uint64_t *gpa);

/*
 * gmem_read - len bytes at gva into buf, each 4 KiB page translated on its
 * own, so a read may cross into a page that maps elsewhere or is absent.
 * On error buf holds the bytes of the pages before the failing one and is
 * undefined beyond.  An instruction fetch that may straddle a page should
 * read up to the page end first and ask for the rest only when the
 * decoder says -X86_ERR_TRUNCATED, so an absent next page does not fail a
 * fetch that did not need it (docs/DECODER.md).
 * Returns 0 or an error above; len 0 succeeds without reading.
 */
int gmem_read(const struct gmem_ctx *ctx, uint64_t gva, void *buf, size_t len);

/* Text for a return value of the functions above ("unknown error" otherwise). */
const char *gmem_strerror(int err);

#endif /* TV_GUEST_MEM_H */
