/* SPDX-License-Identifier: MIT */
/*
 * trace_format.h - the trace stream: what the hypervisor writes into its
 * reserved memory, what goes over the wire and what the host tools read.
 * docs/FORMAT.md is the prose version; this header is the normative one.
 *
 * Shared by the freestanding side (vmm/) and the host tools: fixed-width
 * types only, little endian, no pointers, every struct's size asserted.
 *
 * Per CPU there are up to two streams:
 *  - the record stream: branch records and sideband (CR3 changes, start/
 *    stop, config, time, log lines, image loads, markers, loss), a ring of
 *    variable-length records, each a multiple of 8 bytes;
 *  - with Intel PT, the raw PT byte stream as the hardware wrote it
 *    (libipt decodes it), in its own buffer; sideband TV_REC_PT_SYNC
 *    records tie PT byte offsets to TSC values.
 *
 * Sequence numbers: every record of a CPU's record stream has an implicit
 * 64-bit sequence number, its position in the stream since the stream
 * began (the first record written is 0).  The ring header says which
 * sequence number sits at its tail, so a reader that starts anywhere
 * knows exactly how many records it missed.
 */
#ifndef TV_TRACE_FORMAT_H
#define TV_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define TV_TRACE_MAGIC   0x52545654u   /* "TVTR" little endian */
#define TV_TRACE_VERSION 1u

/*
 * The trace sources: the one list every table that names them takes from
 * (the enum below, config's `source =` keywords, trace caps, ring and
 * HELLO validation, TVP_CAP_KNOWN, the host tools' names; the Wireshark
 * dissector cannot include C, so tests/build/source-list.sh checks its
 * table against this one).  X(ID, value, name, pmi, description):
 *   value - the number in tv_trace_ring.source, TV_REC_CONFIG and the
 *           HELLO: wire and capture format, never renumber; the values
 *           are 1..TV_SOURCE_MAX with no gap (asserted below);
 *   name  - the config keyword and the name the tools print;
 *   pmi   - 1 when `pmi = on` can drain this source on its PMI.
 * A new source is one line here (and its backend).  Value 0 is
 * TV_SOURCE_NONE: no tracing on the wire, "auto" in the config.
 */
#define TV_SOURCE_LIST(X)                                                        \
	X(MTF, 1, "mtf", 0, "monitor trap flag: single-step, software decode")   \
	X(BTF, 2, "btf", 0, "DEBUGCTL.BTF single-step on branches + LBR top")    \
	X(LBR, 3, "lbr", 1, "last branch records, read on PMI / exits")          \
	X(BTS, 4, "bts", 1, "branch trace store")                                \
	X(PT, 5, "pt", 1, "Intel Processor Trace (raw in its own stream)")

/* Where the records come from (tv_trace_ring.source, TV_REC_CONFIG). */
enum tv_source {
	TV_SOURCE_NONE = 0,
#define TV_SOURCE_ENUM_(id, value, name, pmi, desc) TV_SOURCE_##id = value,
	TV_SOURCE_LIST(TV_SOURCE_ENUM_)
#undef TV_SOURCE_ENUM_
};

/* TV_SOURCE_COUNT: values 0..TV_SOURCE_MAX, NONE included. */
#define TV_SOURCE_ONE_(id, value, name, pmi, desc) + 1
enum { TV_SOURCE_COUNT = 1 TV_SOURCE_LIST(TV_SOURCE_ONE_) };
#undef TV_SOURCE_ONE_
#define TV_SOURCE_MAX (TV_SOURCE_COUNT - 1)

/* Every value in 1..TV_SOURCE_MAX, each once: the bits of the values OR
 * to exactly bits 1..MAX only when the COUNT - 1 entries are distinct
 * and leave no gap (a gap would break the tables indexed by value). */
#define TV_SOURCE_BIT_(id, value, name, pmi, desc) | (1u << (value))
_Static_assert((0u TV_SOURCE_LIST(TV_SOURCE_BIT_)) == (1u << TV_SOURCE_COUNT) - 2u,
	       "TV_SOURCE_LIST values must be 1..TV_SOURCE_MAX without gap or repeat");
#undef TV_SOURCE_BIT_

/* tv_source_name - "mtf", "btf", ... for a listed source; NULL for
 * TV_SOURCE_NONE and unknown values (callers pick "auto", "none", "?"). */
static inline const char *tv_source_name(unsigned s)
{
	switch (s) {
#define TV_SOURCE_CASE_(id, value, name, pmi, desc) case value: return name;
	TV_SOURCE_LIST(TV_SOURCE_CASE_)
#undef TV_SOURCE_CASE_
	}
	return NULL;
}

/* tv_source_takes_pmi - can `pmi = on` drain source s on its PMI? */
static inline int tv_source_takes_pmi(unsigned s)
{
	switch (s) {
#define TV_SOURCE_CASE_(id, value, name, pmi, desc) case value: return pmi;
	TV_SOURCE_LIST(TV_SOURCE_CASE_)
#undef TV_SOURCE_CASE_
	}
	return 0;
}

/* Overflow policy (tv_trace_ring.flags bits 1:0). */
enum tv_overflow {
	TV_OVERFLOW_STOP = 0,       /* keep the oldest: new records are dropped, counted */
	TV_OVERFLOW_OVERWRITE = 1,  /* keep the newest: the oldest are dropped, counted */
	/*
	 * Configuration and engine only, never in a ring header or a HELLO:
	 * a STOP ring whose producer stalls in VMX root until the exporter
	 * has freed room (docs/BACKPRESSURE.md); after wait_ms without the
	 * receiver it drops as STOP does, counted.
	 */
	TV_OVERFLOW_WAIT = 2,
};

/*
 * The ring header, at the start of each CPU's record buffer; the data area
 * (data_size bytes, a power of two) follows it at offset hdr_size.  head
 * and tail are running byte counts (never wrapped): record bytes live at
 * data[(pos) & (data_size - 1)] and may wrap around the end.
 * head - tail <= data_size always.  The producer (that CPU, in VMX root)
 * is the only writer of head, next_seq, lost_* and the producer state;
 * the exporter advances tail only in TV_OVERFLOW_STOP mode, the producer
 * only in OVERWRITE mode.  tail_seq always names the record at tail
 * (next_seq when the ring is empty).
 */
struct tv_trace_ring {
	uint32_t magic;          /* TV_TRACE_MAGIC */
	uint16_t version;        /* TV_TRACE_VERSION */
	uint16_t hdr_size;       /* sizeof(struct tv_trace_ring) */
	uint32_t cpu;            /* logical CPU index (0 = boot CPU) */
	uint32_t apic_id;
	uint32_t source;         /* enum tv_source */
	uint32_t flags;          /* bits 1:0 enum tv_overflow */
	uint64_t data_size;      /* bytes, power of two, >= 4096 */
	uint64_t head;           /* bytes ever written */
	uint64_t tail;           /* oldest byte still held */
	uint64_t tail_seq;       /* sequence number of the record at tail */
	uint64_t next_seq;       /* sequence number the next record gets */
	uint64_t lost_records;   /* records dropped (either policy), ever */
	uint64_t lost_bytes;     /* their bytes */
	uint64_t tsc_hz;         /* TSC frequency, 0 if unknown */
	uint64_t start_tsc;      /* TSC when the ring was initialised */
	/*
	 * Producer state (vmm/trace/ring.c; zero-initialised, readers may
	 * ignore it).  It lives in the header, not in a private struct, so a
	 * memory dump or a header snapshot shows everything the producer knew.
	 */
	uint64_t chain_to;       /* `to` of the last branch record written */
	uint64_t chain_pos;      /* position of the full branch opening the
				  * compact chain; TV_CHAIN_NONE: no chain */
	uint64_t pending_lost;   /* STOP: dropped, not yet in a TV_REC_LOST */
	uint64_t last_tsc;       /* newest TSC the producer was given */
};
_Static_assert(sizeof(struct tv_trace_ring) == 128, "tv_trace_ring layout");
_Static_assert(offsetof(struct tv_trace_ring, data_size) == 24, "data_size at 24");
_Static_assert(offsetof(struct tv_trace_ring, tail_seq) == 48, "tail_seq at 48");
_Static_assert(offsetof(struct tv_trace_ring, start_tsc) == 88, "start_tsc at 88");
_Static_assert(offsetof(struct tv_trace_ring, chain_to) == 96, "producer state at 96");

#define TV_CHAIN_NONE UINT64_MAX  /* tv_trace_ring.chain_pos: no open chain */

/* Record types (tv_rec.type). */
enum tv_rec_type {
	TV_REC_PAD = 0,          /* skip size bytes; holds a sequence number like
				  * any record (the ring itself never writes one) */
	TV_REC_BRANCH = 1,       /* struct tv_rec_branch */
	TV_REC_BRANCH_COMPACT = 2, /* struct tv_rec_branch_compact */
	TV_REC_LBR = 3,          /* struct tv_rec_lbr */
	TV_REC_CR3 = 4,          /* struct tv_rec_cr3 */
	TV_REC_START = 5,        /* struct tv_rec_startstop */
	TV_REC_STOP = 6,         /* struct tv_rec_startstop */
	TV_REC_CONFIG = 7,       /* struct tv_rec_text: "key=value" */
	TV_REC_TIME = 8,         /* struct tv_rec_time */
	TV_REC_LOG = 9,          /* struct tv_rec_text: a log line, info = level */
	TV_REC_IMAGE = 10,       /* struct tv_rec_image */
	TV_REC_LOST = 11,        /* struct tv_rec_lost */
	TV_REC_MARKER = 12,      /* struct tv_rec_marker */
	TV_REC_PT_SYNC = 13,     /* struct tv_rec_pt_sync */
	TV_REC_CODE = 14,        /* struct tv_rec_code: a code page executed */
	TV_REC_CODE_DATA = 15,   /* struct tv_rec_code_data: 512 bytes of one */
	TV_REC_MEM = 16,         /* struct tv_rec_mem: one access to watched memory */
	TV_REC_MEM_WATCH = 17,   /* struct tv_rec_mem_watch: a watch armed, removed, a label */
	TV_REC_MEM_STATS = 18,   /* struct tv_rec_mem_stats: counters at a window's stop */
	TV_REC_TYPE_MAX
};

/* Branch kinds (tv_rec.info of branch records). */
enum tv_branch_kind {
	TV_BR_UNKNOWN = 0,
	TV_BR_JCC = 1,           /* taken conditional jump (incl. JCXZ, LOOP) */
	TV_BR_JMP = 2,           /* direct near jump */
	TV_BR_JMP_IND = 3,       /* indirect near jump */
	TV_BR_CALL = 4,          /* direct near call */
	TV_BR_CALL_IND = 5,      /* indirect near call */
	TV_BR_RET = 6,           /* near return */
	TV_BR_FAR = 7,           /* far jmp/call/ret */
	TV_BR_SYSCALL = 8,       /* SYSCALL, SYSENTER, INT n, INT3, INTO */
	TV_BR_SYSRET = 9,        /* SYSRET, SYSEXIT, IRET */
	TV_BR_EXCEPTION = 10,    /* fault or trap delivered (from = faulting IP) */
	TV_BR_INTERRUPT = 11,    /* external interrupt or NMI delivered */
	TV_BR_KIND_MAX
};

/* Every record starts with this; size is the whole record, a multiple of 8. */
struct tv_rec {
	uint8_t type;            /* enum tv_rec_type */
	uint8_t info;            /* per type: branch kind, log level, image kind */
	uint16_t size;           /* bytes including this header, >= 8, multiple of 8 */
	uint32_t aux;            /* per type, see each record */
};
_Static_assert(sizeof(struct tv_rec) == 8, "tv_rec layout");

/* Branch flags (tv_rec.aux of TV_REC_BRANCH). */
#define TV_BRF_TSC        (1u << 0)   /* tsc field present (size 32, else 24) */
#define TV_BRF_MISPRED    (1u << 1)   /* mispredicted (LBR_INFO, LBR sources) */
#define TV_BRF_IN_TSX     (1u << 2)
#define TV_BRF_TSX_ABORT  (1u << 3)
/*
 * LBR records: the stack was full when it was read, and this is the
 * oldest record of that read: branches before it may have been lost (the
 * stack holds only its depth; docs/BACKENDS-LBR.md).
 */
#define TV_BRF_LBR_FULL   (1u << 4)

/* A branch: control went from `from` (the branch's IP) to `to`. */
struct tv_rec_branch {
	struct tv_rec h;         /* TV_REC_BRANCH, info = kind, aux = TV_BRF_* */
	uint64_t from;
	uint64_t to;
	uint64_t tsc;            /* only when aux & TV_BRF_TSC */
};
_Static_assert(sizeof(struct tv_rec_branch) == 32, "branch layout");
#define TV_REC_BRANCH_SIZE     24u   /* without tsc */
#define TV_REC_BRANCH_TSC_SIZE 32u   /* with aux & TV_BRF_TSC */

/*
 * The compact form MTF mostly writes: `from` is given as a forward offset
 * from the previous branch record's `to` in the same stream (the branch
 * ends the basic block that started there), in aux.  A reader needs the
 * previous branch record, so the producer writes a compact record only
 * right after another branch record (full or compact) and writes a full
 * TV_REC_BRANCH instead:
 *  - after a ring initialisation, a START, a LOST or any other non-branch
 *    record (so a chain of compact records is always a contiguous run that
 *    opens with a full branch: dropping records up to the next non-compact
 *    one never leaves a compact record without its base);
 *  - when the offset does not fit (from < prev to, or >= 2^32 above it),
 *    or the branch has flags (TSC, MISPRED, TSX), which only the full
 *    record carries;
 *  - when data_size / 16 bytes or more have been written since the full
 *    branch that opened the chain, so that one drop under OVERWRITE never
 *    takes more than about 1/16 of the ring with it.
 * When OVERWRITE drops records it drops the compact ones after the dropped
 * ones too, up to the next non-compact record (all counted in
 * lost_records), so under OVERWRITE the tail never starts on a compact
 * record.  (Under STOP the exporter may release records up to a compact
 * one; it has read the base already.)
 */
struct tv_rec_branch_compact {
	struct tv_rec h;         /* TV_REC_BRANCH_COMPACT, info = kind, aux = from - prev_to */
	uint64_t to;
};
_Static_assert(sizeof(struct tv_rec_branch_compact) == 16, "compact layout");

/* One LBR entry (FROM/TO/INFO MSRs), oldest first in the stream. */
struct tv_rec_lbr {
	struct tv_rec h;         /* TV_REC_LBR, info = kind (TV_BR_UNKNOWN if unknown), aux = TV_BRF_* */
	uint64_t from;
	uint64_t to;
	uint64_t lbr_info;       /* raw IA32_LBR_x_INFO (0 when the format has none) */
};
_Static_assert(sizeof(struct tv_rec_lbr) == 32, "lbr layout");

/* The guest's CR3 changed (MOV to CR3 exit, or seen at a VM exit). */
struct tv_rec_cr3 {
	struct tv_rec h;         /* TV_REC_CR3, aux 0 */
	uint64_t tsc;
	uint64_t cr3;
	uint64_t rip;            /* guest RIP of the MOV */
};
_Static_assert(sizeof(struct tv_rec_cr3) == 32, "cr3 layout");

/* Why tracing started or stopped (aux of START/STOP). */
enum tv_trigger {
	TV_TRIG_BOOT = 0,        /* config: trace from launch */
	TV_TRIG_HYPERCALL = 1,
	TV_TRIG_ADDRESS = 2,     /* first execution of a configured address */
	TV_TRIG_EXIT_BOOT_SERVICES = 3,
	TV_TRIG_KERNEL_ENTRY = 4,
	TV_TRIG_RECEIVER = 5,    /* authenticated control message */
	TV_TRIG_FULL = 6,        /* STOP only: ring full under TV_OVERFLOW_STOP */
	TV_TRIG_LIMIT = 7,       /* STOP only: configured record/time limit */
	TV_TRIG_GUEST_RESET = 8, /* STOP only: the guest triple-faulted (the
				  * window ends where the machine died) */
	TV_TRIG_GUEST_POWEROFF = 9, /* STOP only: the guest entered an ACPI
				     * sleep state (SLP_EN: the power-off); every
				     * CPU's window ends there */
	TV_TRIG_MAX = TV_TRIG_GUEST_POWEROFF,
};

struct tv_rec_startstop {
	struct tv_rec h;         /* TV_REC_START / TV_REC_STOP, aux = enum tv_trigger */
	uint64_t tsc;
	uint64_t rip;            /* guest RIP where it happened */
};
_Static_assert(sizeof(struct tv_rec_startstop) == 24, "startstop layout");

/* TSC <-> time: tsc_hz and, when the firmware clock was read, wall time. */
struct tv_rec_time {
	struct tv_rec h;         /* TV_REC_TIME, aux 0 */
	uint64_t tsc;
	uint64_t tsc_hz;
	uint64_t unix_ns;        /* wall clock at tsc, 0 = unknown */
};
_Static_assert(sizeof(struct tv_rec_time) == 32, "time layout");

/*
 * Text records (CONFIG, LOG): aux = text length in bytes (no NUL), the
 * text follows tsc, zero-padded to a multiple of 8.  LOG: info = level
 * (0 err .. 3 debug).
 */
struct tv_rec_text {
	struct tv_rec h;
	uint64_t tsc;
	char text[];
};
_Static_assert(sizeof(struct tv_rec_text) == 16, "text fixed part");

/* Image kinds (tv_rec.info of TV_REC_IMAGE). */
enum tv_image_kind {
	TV_IMG_FIRMWARE = 0,     /* from the EFI debug image info table */
	TV_IMG_LOADER = 1,       /* the chainloaded OS loader */
	TV_IMG_KERNEL = 2,       /* the OS kernel, once it runs */
	TV_IMG_OTHER = 3,
};

/* An image in guest memory: aux = name length, name follows, padded. */
struct tv_rec_image {
	struct tv_rec h;         /* TV_REC_IMAGE */
	uint64_t tsc;
	uint64_t base;           /* load address (guest virtual = physical for firmware) */
	uint64_t size;
	char name[];             /* UTF-8 path or name as the source knows it */
};
_Static_assert(sizeof(struct tv_rec_image) == 32, "image fixed part");

/*
 * Records were dropped just before this point (stop policy: written when
 * there is room again, right before the next record that fits, which is
 * never a compact branch).  OVERWRITE writes none: its drops show as
 * tail_seq moving past records nobody read.
 */
struct tv_rec_lost {
	struct tv_rec h;         /* TV_REC_LOST, aux 0 */
	uint64_t tsc;
	uint64_t records;        /* how many since the previous LOST record */
};
_Static_assert(sizeof(struct tv_rec_lost) == 24, "lost layout");

/* A guest-to-tracer marker (hypercall): value and an optional label. */
struct tv_rec_marker {
	struct tv_rec h;         /* TV_REC_MARKER, aux = label length */
	uint64_t tsc;
	uint64_t value;
	char label[];
};
_Static_assert(sizeof(struct tv_rec_marker) == 24, "marker fixed part");

/* The PT stream of this CPU had written `pt_offset` bytes at `tsc`. */
struct tv_rec_pt_sync {
	struct tv_rec h;         /* TV_REC_PT_SYNC, aux 0 */
	uint64_t tsc;
	uint64_t pt_offset;      /* running byte count of the PT stream */
	uint64_t pt_lost;        /* PT bytes lost so far (OVF, full ToPA) */
};
_Static_assert(sizeof(struct tv_rec_pt_sync) == 32, "pt_sync layout");

/*
 * Code snapshots (docs/SNAPSHOTS.md): the bytes of every guest page that
 * executes, so a PT (or any) capture decodes without the guest's files.
 *
 * The hypervisor takes execute permission away from guest memory in EPT.
 * The first instruction fetch from a page is an EPT violation: the page
 * is hashed, a TV_REC_CODE names it (guest-physical and linear page, CR3,
 * time, content hash), and, when the content is new to this boot (the
 * hypervisor keeps a table of hashes it has sent), eight TV_REC_CODE_DATA
 * records follow it in the same stream with the 4 KiB.  The page then
 * executes freely but is write-protected; a write re-arms it (execute
 * taken away again, write allowed), so the next execution takes a new
 * snapshot (TV_CODEF_REARM) - text patching, module loads, exec reusing
 * the page.  A page whose content was sent already (on any CPU's stream)
 * costs one TV_REC_CODE: readers index contents by hash over the whole
 * capture, not per CPU.
 *
 * A snapshot is valid for its address space (cr3; kernel pages are mapped
 * in every one) from its tsc until the next TV_REC_CODE of the same
 * guest-physical page.
 */
#define TV_CODE_PAGE       4096u
#define TV_CODE_CHUNK      512u     /* bytes per TV_REC_CODE_DATA */
#define TV_CODE_CHUNKS     (TV_CODE_PAGE / TV_CODE_CHUNK)

/* tv_rec.info of TV_REC_CODE */
#define TV_CODEF_NEW       (1u << 0)  /* content follows (TV_CODE_CHUNKS CODE_DATA) */
#define TV_CODEF_REARM     (1u << 1)  /* executed again after a write to the page */
#define TV_CODEF_LINEAR    (1u << 2)  /* linear is valid (else only gpa is known) */
#define TV_CODEF_USER      (1u << 3)  /* the fetch was at CPL 3 */
/*
 * linear is the page as Intel PT reports its IPs, written at a SIPI: PT
 * payloads are effective addresses (CS-relative) unless
 * CPUID.(14H,0):ECX[31] (LIP) is 1 (SDM 3C 33.3.1.1), and a CPU started
 * by a SIPI runs 16-bit code at CS.base = vector << 12, IP 0: its
 * TIP.PGE says IP 0.  So the SIPI page is recorded again at linear 0
 * (gpa - linear = CS.base), for the decoder to find the code at the IPs
 * the trace gives (on a LIP CPU no IP there names it: never looked up).
 */
#define TV_CODEF_PTIP      (1u << 4)
#define TV_CODEF_ALL       (TV_CODEF_NEW | TV_CODEF_REARM | TV_CODEF_LINEAR | TV_CODEF_USER | \
			    TV_CODEF_PTIP)

struct tv_rec_code {
	struct tv_rec h;         /* TV_REC_CODE, info = TV_CODEF_*, aux 0 */
	uint64_t tsc;
	uint64_t gpa;            /* guest-physical page (4 KiB aligned) */
	uint64_t linear;         /* linear page of the fetch (4 KiB aligned) */
	uint64_t cr3;            /* guest CR3 at the fetch, as the VMCS holds it */
	uint64_t hash;           /* tv_code_hash of the page's 4 KiB */
};
_Static_assert(sizeof(struct tv_rec_code) == 48, "code layout");

struct tv_rec_code_data {
	struct tv_rec h;         /* TV_REC_CODE_DATA, aux = chunk index 0..7 */
	uint64_t hash;           /* the page's tv_code_hash */
	uint8_t bytes[TV_CODE_CHUNK];  /* page bytes [aux * 512, aux * 512 + 512) */
};
_Static_assert(sizeof(struct tv_rec_code_data) == 528, "code data layout");

/*
 * tv_code_hash - 64-bit FNV-1a over the page's 512 little-endian 64-bit
 * words (one multiply per word: cheap in VMX root without SSE).  Not
 * cryptographic: it deduplicates contents of one boot (a collision, about
 * n^2 / 2^65 for n distinct pages, would show a page's older content);
 * readers check each content they assemble against it.
 */
static inline uint64_t tv_code_hash(const void *page)
{
	const uint8_t *p = (const uint8_t *)page;
	uint64_t h = 0xcbf29ce484222325ull;

	for (unsigned i = 0; i < TV_CODE_PAGE; i += 8) {
		uint64_t w = 0;

		for (unsigned b = 0; b < 8; b++)
			w |= (uint64_t)p[i + b] << (8 * b);
		h = (h ^ w) * 0x100000001b3ull;
	}
	return h;
}

/*
 * Memory-access tracing (docs/MEMTRACE.md): every guest access to watched
 * guest-physical memory, with the instruction that made it.  The watched
 * pages lose the EPT rights the watch names; at the violation the access
 * is recorded and the one instruction is let through on that CPU alone
 * (an EPT view with the watched pages open, then the monitor trap flag,
 * then the restricted view again), so no other CPU's access is missed.
 *
 * One TV_REC_MEM per access to a watched range (an instruction with two
 * memory operands in watched ranges - MOVS, PUSH [mem] - gives two).
 * Accesses to a watched page outside every watched range are stepped but
 * not recorded: counted in TV_REC_MEM_STATS.collateral.
 */
/* tv_rec.aux of TV_REC_MEM: flags in bits 11:0, CPL in 13:12, watch id in 31:16 */
#define TV_MEMF_READ       (1u << 0)  /* the instruction reads the operand */
#define TV_MEMF_WRITE      (1u << 1)  /* writes it (both: read-modify-write) */
#define TV_MEMF_LOCK       (1u << 2)  /* LOCK prefix, or XCHG with memory */
#define TV_MEMF_OLD        (1u << 3)  /* old: the operand before the instruction */
#define TV_MEMF_NEW        (1u << 4)  /* new: the operand after it (a write) */
#define TV_MEMF_STRING     (1u << 5)  /* a string instruction's operand (one iteration) */
#define TV_MEMF_IMPLICIT   (1u << 6)  /* an implicit operand (the stack of PUSH/POP/CALL/RET) */
#define TV_MEMF_SPLIT      (1u << 7)  /* crosses a page: gpa2 is the second page's address */
#define TV_MEMF_UNDECODED  (1u << 8)  /* not decoded: size 0, only the violation's facts */
#define TV_MEMF_LINEAR     (1u << 9)  /* gla is valid */
#define TV_MEMF_CPL_SHIFT  12
#define TV_MEMF_ID_SHIFT   16

struct tv_rec_mem {
	struct tv_rec h;         /* TV_REC_MEM, info = size in bytes (0: unknown), aux as above */
	uint64_t tsc;            /* at the violation */
	uint64_t rip;            /* guest RIP of the instruction (linear) */
	uint64_t cr3;            /* guest CR3 */
	uint64_t gla;            /* guest-linear address of the operand (TV_MEMF_LINEAR) */
	uint64_t gpa;            /* guest-physical address of its first byte */
	uint64_t gpa2;           /* TV_MEMF_SPLIT: guest-physical page of the rest, else 0 */
	uint64_t old;            /* TV_MEMF_OLD: the operand's first 8 bytes before */
	uint64_t new_val;        /* TV_MEMF_NEW: its first 8 bytes after */
};
_Static_assert(sizeof(struct tv_rec_mem) == 72, "mem layout");

/* tv_rec.info of TV_REC_MEM_WATCH */
enum tv_mem_watch_op {
	TV_MEMW_ARM = 1,         /* [lo, hi) watched from tsc on */
	TV_MEMW_REMOVE = 2,      /* watch id removed */
	TV_MEMW_LABEL = 3,       /* [lo, hi) named, not watched (the guest's label call) */
};
/* Watch modes (aux bits 23:16 of TV_REC_MEM_WATCH) */
#define TV_MEMW_MODE_R     1u
#define TV_MEMW_MODE_W     2u
#define TV_MEMW_MODE_RW    3u
/* Where a watch came from (aux bits 31:24) */
enum tv_mem_watch_origin {
	TV_MEMW_FROM_CONFIG = 1,
	TV_MEMW_FROM_HYPERCALL = 2,
	TV_MEMW_FROM_CONTROL = 3,
};

struct tv_rec_mem_watch {
	struct tv_rec h;         /* TV_REC_MEM_WATCH, info = op, aux = id | mode << 16 | origin << 24 */
	uint64_t tsc;
	uint64_t lo, hi;         /* guest-physical [lo, hi) */
	uint64_t gla;            /* the linear address the guest passed (hypercall), else 0 */
	uint64_t cr3;            /* guest CR3 at the call (hypercall), else 0 */
	/* label text (not NUL-terminated), size - 48 bytes, NUL padding */
};
_Static_assert(sizeof(struct tv_rec_mem_watch) == 48, "mem watch fixed part");

struct tv_rec_mem_stats {
	struct tv_rec h;         /* TV_REC_MEM_STATS, aux 0; this CPU, since boot */
	uint64_t tsc;
	uint64_t recorded;       /* TV_REC_MEM written (the ring may still refuse: LOST) */
	uint64_t filtered;       /* accesses mem_filter = sharing left out */
	uint64_t collateral;     /* steps for accesses to watched pages outside every range */
	uint64_t steps;          /* single steps in all */
	uint64_t undecoded;      /* instructions the access decoder could not read or decode */
	uint64_t outside_window; /* violations on watched pages with this CPU's window closed */
};
_Static_assert(sizeof(struct tv_rec_mem_stats) == 64, "mem stats layout");

/* 64-bit mask: ~7u alone would zero-extend and clear bits 63:32. */
#define TV_REC_ALIGN(n) (((n) + 7u) & ~(uint64_t)7u)
#define TV_REC_MAX_SIZE 1024u    /* no record is larger: text is cut to fit */

#endif /* TV_TRACE_FORMAT_H */
