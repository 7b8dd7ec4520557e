/* SPDX-License-Identifier: MIT */
/*
 * config.h - tracevisor.conf: `key = value` lines, `#` or `;` comments.
 *
 * The file lives at \EFI\tracevisor\tracevisor.conf on tracevisor's own
 * volume.  Keys, values and defaults are documented in docs/CONFIG.md.
 * A bad line never stops the machine from booting: it is reported with
 * its line number and the key keeps its default (or earlier good value).
 */
#ifndef TV_CONFIG_H
#define TV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/lib/log.h"
#include "vmm/exit/pci_hide.h"
#include "vmm/trace/trace.h"

#define CONFIG_PATH_MAX 256
#define CONFIG_LINE_MAX 1024
#define CONFIG_MAX_ERRORS 16

/* trace_buffer_kb bounds: the ring needs its 128-byte header plus a
 * power-of-two data area of at least 4 KiB (vmm/trace/format.h). */
#define CONFIG_TRACE_BUFFER_KB_MIN 8
#define CONFIG_TRACE_BUFFER_KB_MAX (1024 * 1024)   /* 1 GiB per CPU */
#define CONFIG_TRACE_CPUS_MAX 256                  /* trace_cpus indexes 0..255 */
#define CONFIG_PCI_HIDE_MAX 8                      /* functions pci_hide= lists */
#define CONFIG_CONTROL_KEY_MAX 64                  /* bytes (EXPORT_KEY_MAX) */
#define CONFIG_MACHINE_MAX 64                      /* with the NUL (TVP_MACHINE_LEN) */
#define CONFIG_PT_DRAIN_US_DEFAULT 1000              /* pt_drain_us at the default pt_topa_kb */
#define CONFIG_PT_DRAIN_US_AUTO UINT32_MAX          /* pt_drain_us = auto: from pt_topa_kb */
/*
 * PT and BTS buffers per CPU, KiB, powers of two (docs/CONFIG.md).
 * pt_buffer_kb: the PT stream ring, at least the ToPA output (a drain of
 * all of it must fit an empty ring); unset: the larger of trace_buffer_kb
 * and CONFIG_PT_BUFFER_KB_FLOOR.  pt_topa_kb: the ToPA output regions
 * together (vmm/trace/backend/pt.h, PT_AREA_TOPA_MIN..MAX); unset:
 * pt_buffer_kb / 4 within those bounds.  bts_buffer_kb: the BTS buffer.
 */
#define CONFIG_PT_BUFFER_KB_MIN 16
#define CONFIG_PT_BUFFER_KB_MAX (4u * 1024 * 1024)     /* 4 GiB per CPU */
#define CONFIG_PT_BUFFER_KB_FLOOR 1024                 /* unset: at least 1 MiB */
#define CONFIG_PT_TOPA_KB_MIN 16                       /* 4 regions of 4 KiB */
#define CONFIG_PT_TOPA_KB_MAX (256u * 1024)            /* 64 regions of 4 MiB */
#define CONFIG_BTS_BUFFER_KB_MIN 8
#define CONFIG_BTS_BUFFER_KB_MAX 4096                  /* TRACE_BTS_BUF_BYTES_MAX */
#define CONFIG_BTS_BUFFER_KB_DEFAULT 64
/*
 * pt_drain_us = auto: the time a core writing CONFIG_PT_PEAK_KB_PER_MS
 * (256 KiB per ms, ~268 MB/s) takes to fill the ToPA output:
 * pt_topa_kb * 1000 / 256 us, within PREEMPT_POLL_US_MIN..MAX; 1000 at
 * the default 256 KiB.
 */
#define CONFIG_PT_PEAK_KB_PER_MS 256
#define CONFIG_PMI_EVERY_MAX 1000000u                /* pmi_every */
#define CONFIG_WAIT_MS_DEFAULT 2000u                 /* wait_ms (TRACE_WAIT_MS_DEFAULT) */
#define CONFIG_WAIT_MS_MAX 3600000u                  /* wait_ms: an hour */

struct tv_config {
	char loader[CONFIG_PATH_MAX];  /* "" = next BootOrder entry */
	enum log_level log_level;
	uint16_t serial_port;          /* 0 = no serial logging */
	bool console;                  /* log to the firmware console */
	uint32_t log_ring_kb;          /* power of two, 4..4096 */
	bool vmx;                      /* virtualize (blue pill) when VT-x is there */
	uint32_t heartbeat_s;          /* 0 = off; else a per-CPU status line every N s */

	/* tracing (docs/CONFIG.md, "Tracing") */
	uint8_t trace_source;          /* enum tv_source; TV_SOURCE_NONE = auto */
	uint8_t trace_overflow;        /* enum tv_overflow */
	uint8_t trace_start;           /* enum tv_trigger: BOOT, HYPERCALL, ADDRESS,
					* EXIT_BOOT_SERVICES or KERNEL_ENTRY */
	uint64_t trace_start_address;  /* TV_TRIG_ADDRESS: guest-physical address */
	uint32_t trace_buffer_kb;      /* per CPU, power of two */
	uint32_t pt_buffer_kb;         /* PT stream ring per CPU; 0 = unset (config_pt_buffer_kb) */
	uint32_t pt_topa_kb;           /* ToPA output per CPU; 0 = unset (config_pt_topa_kb) */
	uint32_t bts_buffer_kb;        /* BTS buffer per CPU */
	uint64_t trace_stop_after;     /* branch records per window, 0 = unlimited */
	struct trace_filter trace_filter; /* cpl, cr3 (0 = any), IP ranges */
	struct trace_pt_opts trace_pt;  /* pt_options: PT packet options */
	bool trace_all_cpus;           /* trace_cpus = all */
	uint32_t trace_cpus[CONFIG_TRACE_CPUS_MAX / 32]; /* bit n: CPU index n */

	/* network (docs/CONFIG.md, "Network"; docs/NET.md) */
	uint8_t nic;                   /* CONFIG_NIC_* */
	uint8_t nic_pci[3];            /* CONFIG_NIC_PCI: bus, device, function */
	uint8_t nic_mac[6];            /* CONFIG_NIC_MAC */
	bool net_dhcp;                 /* net_ip = dhcp */
	uint32_t net_ip;               /* static address, a.b.c.d as a << 24 | ... */
	uint8_t net_prefix;            /* static netmask length, 1..32 */
	uint32_t net_gw;               /* 0 = none */
	uint32_t receiver_ip;          /* where the trace goes */
	uint16_t receiver_port;
	bool receiver_set;             /* receiver= given: the trace goes over the network */
	uint32_t net_selftest;         /* records of the boot-time link self-test, 0 = off */
	uint32_t net_bench;            /* raw frames sent after the self-test, 0 = off */
	uint8_t control_key[CONFIG_CONTROL_KEY_MAX]; /* HMAC key of CONTROL messages */
	uint8_t control_key_len;       /* 0 = no control key: CONTROL refused */
	uint8_t data_key[CONFIG_CONTROL_KEY_MAX]; /* the data path's key (config_data_key) */
	uint8_t data_key_len;          /* 0 = none (unless data_key_control) */
	bool data_key_control;         /* data_key = control: the control key seals */
	char machine[CONFIG_MACHINE_MAX]; /* name in the HELLO and the capture's directory */

	/* VMX-root polling and hidden PCI functions (docs/PCI-HIDE.md) */
	uint32_t poll_us;              /* poll hook period, microseconds */
	uint32_t pt_drain_us;          /* source = pt: drain tick, microseconds, 0 = off,
					* CONFIG_PT_DRAIN_US_AUTO (config_pt_drain_us) */
	bool trace_pmi;                /* pmi = on: lbr/bts/pt drain on their PMI too */
	uint32_t trace_pmi_every;      /* pmi_every: bts threshold / lbr counter period, 0 = default */
	uint32_t trace_wait_ms;        /* overflow = wait: the bound of one wait, ms */
	uint8_t trace_stall_tsc;       /* stall_tsc: enum trace_stall_tsc */
	uint8_t code_snapshots;        /* code_snapshots: enum trace_snap_mode (0 = auto) */
	/* memory-access tracing (docs/MEMTRACE.md): mem_watch lines, mem_filter */
	uint8_t mem_filter;            /* enum trace_mem_filter */
	uint8_t nmem_watch;
	struct trace_mem_watch mem_watch[TRACE_MEM_WATCH_CONFIG_MAX];
	uint32_t npci_hide;
	struct pci_bdf pci_hide[CONFIG_PCI_HIDE_MAX];  /* pci_hide = BB:DD.F,... */
};

enum { CONFIG_NIC_AUTO, CONFIG_NIC_OFF, CONFIG_NIC_PCI, CONFIG_NIC_MAC };
#define CONFIG_NET_SELFTEST_MAX 1000000u
#define CONFIG_NET_BENCH_MAX 1000000u

struct config_error {
	uint32_t line;                 /* 1-based */
	char msg[120];
};

struct config_result {
	uint32_t nerrors;              /* all errors, even past CONFIG_MAX_ERRORS */
	struct config_error errors[CONFIG_MAX_ERRORS];
};

/* config_defaults - fill cfg with the documented defaults. */
void config_defaults(struct tv_config *cfg);

/*
 * config_parse - apply text[0..len) on top of *cfg.
 * text need not be NUL-terminated and may use LF or CRLF line ends and
 * start with a UTF-8 byte-order mark.  Every malformed line (unknown key,
 * bad value, missing '=', duplicate key, over-long line, NUL or control
 * byte) is recorded in *res with its line number and leaves cfg unchanged
 * for that key.  Returns the number of errors (0 on a clean file).
 */
uint32_t config_parse(struct tv_config *cfg, const char *text, size_t len,
		      struct config_result *res);

/* config_trace_cpu - does cfg trace the CPU with this index? */
bool config_trace_cpu(const struct tv_config *cfg, uint32_t index);

/*
 * config_data_key - the key that seals the export's data path
 * (docs/PROTOCOL.md, "With a key"): data_key's own, or the control key
 * with data_key = control.  Returns its length (*key set), 0: unsealed.
 */
size_t config_data_key(const struct tv_config *cfg, const uint8_t **key);

/*
 * The PT and BTS buffer sizes and the drain tick in force, in KiB and
 * microseconds: the key's value, or what it is derived from when unset
 * (docs/CONFIG.md).  config_pt_topa_kb is also the derived value when the
 * key asked for more than the PT ring holds (a config error).
 */
uint32_t config_pt_buffer_kb(const struct tv_config *cfg);
uint32_t config_pt_topa_kb(const struct tv_config *cfg);
uint32_t config_pt_drain_us(const struct tv_config *cfg);

/* config_log - write the effective configuration to the log at info. */
void config_log(const struct tv_config *cfg);

#endif /* TV_CONFIG_H */
