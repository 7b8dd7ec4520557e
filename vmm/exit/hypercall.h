/* SPDX-License-Identifier: MIT */
/*
 * hypercall.h - the guest ABI of tracevisor (VMCALL), and the hooks a
 * tracing backend registers to serve it.  docs/HYPERCALLS.md is the
 * user-facing description of the same contract.
 *
 * Discovery: CPUID leaf 0x40000000 returns EBX:ECX:EDX = "trac" "evis"
 * "or\0\0" and EAX = 0x40000001; leaf 0x40000001 returns EAX =
 * TV_VERSION_CODE and EBX = TV_HC_ABI_VERSION.  CPUID never faults, so
 * the probe is safe on bare metal; VMCALL without tracevisor raises #UD.
 *
 * Calling convention (64-bit mode; CPL 0 only, any other CPL gets #UD and
 * nothing else changes):
 *
 *   in:  RAX = function (enum tv_hc_function), RBX, RCX, RDX = arguments
 *   out: RAX = status: TV_HC_OK (0) or a negative TV_HC_E* code, sign
 *        extended to 64 bits; results in RBX, RCX, RDX as listed per
 *        function; every register a function does not list is preserved.
 *
 * Outside 64-bit mode (protected or real mode, compatibility mode) only
 * the low 32 bits of each register are read, and results are written
 * zero-extended from 32 bits (EAX = the 32-bit status).
 *
 *   TV_HC_PROBE        -> RBX = TV_HC_PROBE_MAGIC, RCX = TV_HC_ABI_VERSION,
 *                         RDX = TV_VERSION_CODE
 *   TV_HC_TRACE_START  RBX = flags (backend-defined; 0 = defaults)
 *   TV_HC_TRACE_STOP   -
 *   TV_HC_MARKER       RBX = 64-bit label id; RCX, RDX = up to 16 bytes
 *                      of label text, little-endian: byte i of the label
 *                      is byte i of RCX for i < 8, byte i - 8 of RDX for
 *                      i >= 8 (not NUL-terminated when all 16 are used)
 *   TV_HC_EVENT        RBX = enum tv_hc_event: a boot event happened on
 *                      this CPU (tracevisor's own ExitBootServices hook
 *                      makes it); opens the window when trace_start names
 *                      that event, else changes nothing (TV_HC_OK);
 *                      TV_HC_EINVAL for an unknown event (ABI 2)
 *   TV_HC_MEM_WATCH    RBX = address, RCX = length (bytes), RDX = mode:
 *                      bits 1:0 = 1 read, 2 write, 3 both; bit 8 = RBX is
 *                      guest-physical (else guest-linear, translated
 *                      through the guest's page tables at the call, page
 *                      by page, one watch range per physically
 *                      contiguous run); RSI, RDI = up to 16 bytes of
 *                      label as MARKER's RCX, RDX.  Watches the memory
 *                      (docs/MEMTRACE.md) -> RAX = the watch id (> 0) or
 *                      TV_HC_EINVAL (bad length/mode, memory not mapped
 *                      or not the guest's), TV_HC_EBUSY (limits reached),
 *                      TV_HC_ENOSYS (memory watches not armed) (ABI 3)
 *   TV_HC_MEM_UNWATCH  RBX = watch id: removes every range of it (ABI 3)
 *   TV_HC_MEM_LABEL    as TV_HC_MEM_WATCH, but only names the memory with
 *                      the label in the trace (no watch): TV_HC_OK (ABI 3)
 *
 * Errors: TV_HC_EINVAL  unknown function number
 *         TV_HC_ENOSYS  no tracing backend configured (no hook registered)
 *         TV_HC_EBUSY   the backend refuses in its current state (e.g.
 *                       start while tracing); backends may return any
 *                       TV_HC_E* code
 *
 * This header is self-contained (stdint only) so guest-side tools may
 * include it for the constants.
 */
#ifndef TV_HYPERCALL_H
#define TV_HYPERCALL_H

#include <stdbool.h>
#include <stdint.h>

/* Bumped whenever a function is added or a register's meaning changes. */
#define TV_HC_ABI_VERSION 3

/* "TRVS" in memory order: RBX of TV_HC_PROBE. */
#define TV_HC_PROBE_MAGIC 0x53565254u

/* CPUID hypervisor leaves (Intel reserves 0x40000000-0x4fffffff for them). */
#define TV_CPUID_LEAF_SIGNATURE 0x40000000u
#define TV_CPUID_LEAF_VERSION   0x40000001u
#define TV_CPUID_LEAF_MAX       TV_CPUID_LEAF_VERSION

enum tv_hc_function {
	TV_HC_PROBE = 0,
	TV_HC_TRACE_START = 1,
	TV_HC_TRACE_STOP = 2,
	TV_HC_MARKER = 3,
	TV_HC_EVENT = 4,
	TV_HC_MEM_WATCH = 5,
	TV_HC_MEM_UNWATCH = 6,
	TV_HC_MEM_LABEL = 7,
	/*
	 * Boot-time only, used by tracevisor's own boot code before it hands
	 * the machine to the OS loader; once sealed both return TV_HC_EINVAL,
	 * so nothing the OS runs can switch tracing off by leaving VMX.
	 *   TV_HC_DEVIRT  this CPU leaves VMX and goes on unvirtualized
	 *                 (RAX = TV_HC_OK there; TV_HC_EBUSY if the guest is
	 *                 not in 64-bit paged mode)
	 *   TV_HC_SEAL    refuse TV_HC_DEVIRT and TV_HC_SEAL from now on
	 */
	TV_HC_DEVIRT = 0x100,
	TV_HC_SEAL = 0x101,
};

/* RDX of TV_HC_MEM_WATCH / TV_HC_MEM_LABEL */
#define TV_HC_MEM_READ   1u
#define TV_HC_MEM_WRITE  2u
#define TV_HC_MEM_PHYS   (1u << 8)

/* RBX of TV_HC_EVENT. */
enum tv_hc_event {
	TV_HC_EVENT_EXIT_BOOT_SERVICES = 1,   /* the OS loader called ExitBootServices */
};

/* Status codes in RAX (the Linux errno numbers, negated). */
#define TV_HC_OK       0
#define TV_HC_EBUSY  (-16)
#define TV_HC_EINVAL (-22)
#define TV_HC_ENOSYS (-38)

#define TV_HC_LABEL_LEN 16

/* --- hypervisor side --------------------------------------------------- */

struct per_cpu;

/*
 * The tracing backend.  Each hook runs in VMX root on the CPU that made
 * the call, with that CPU's per_cpu; it returns TV_HC_OK or a negative
 * TV_HC_E* code, which becomes the guest's RAX.  A NULL hook makes its
 * function return TV_HC_ENOSYS.  label is exactly TV_HC_LABEL_LEN bytes,
 * not necessarily NUL-terminated.
 */
struct hypercall_hooks {
	int (*trace_start)(struct per_cpu *cpu, uint64_t flags);
	int (*trace_stop)(struct per_cpu *cpu);
	int (*marker)(struct per_cpu *cpu, uint64_t id, const char label[TV_HC_LABEL_LEN]);
	int (*event)(struct per_cpu *cpu, uint64_t event);
	/*
	 * mem - TV_HC_MEM_WATCH, _UNWATCH or _LABEL (fn) with RBX, RCX, RDX
	 * (a, b, c: masked as above) and the RSI:RDI label; returns RAX: an
	 * id >= 0 or a TV_HC_E* code.
	 */
	int64_t (*mem)(struct per_cpu *cpu, uint64_t fn, uint64_t a, uint64_t b, uint64_t c,
		       const char label[TV_HC_LABEL_LEN]);
};

/*
 * hypercall_set_hooks - register the backend (NULL: none).  The struct is
 * used in place, not copied: it must outlive the registration.  Safe to
 * call while other CPUs take hypercalls (atomic pointer store).
 */
void hypercall_set_hooks(const struct hypercall_hooks *hooks);

/* hypercall_sealed - whether TV_HC_SEAL was made (boot is over). */
bool hypercall_sealed(void);
/* hypercall_reset_seal - tests only: back to the boot state. */
void hypercall_reset_seal(void);

/* tv_hc_strerror - text for a TV_HC_* status ("unknown status" otherwise). */
const char *tv_hc_strerror(int64_t status);

#endif /* TV_HYPERCALL_H */
