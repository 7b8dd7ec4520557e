/* SPDX-License-Identifier: MIT */
/*
 * config_keys.h - inside the tracevisor.conf parser (vmm/config*.c); the
 * rest of the tree uses vmm/config.h.
 *
 * The parser is split by meaning:
 *   config.c        the file format (lines, comments, quotes, duplicate
 *                   and unknown keys, the error list), the defaults, the
 *                   value parsers below, and the machine and log keys;
 *   config_trace.c  the trace keys and their check against each other;
 *   config_net.c    the network and export keys.
 * CONFIG_KEY_LIST names every key once: it gives the key table (config.c)
 * and each key's function, config_key_<name>, which lives in the file of
 * its group.
 */
#ifndef TV_CONFIG_KEYS_H
#define TV_CONFIG_KEYS_H

#include "vmm/config.h"

#define CONFIG_KEY_LIST(X)                                                     \
	/* config.c */                                                         \
	X(loader) X(log_level) X(serial) X(console) X(log_ring_kb) X(vmx)      \
	X(heartbeat_s) X(poll_us) X(pci_hide)                                  \
	/* config_trace.c */                                                   \
	X(source) X(overflow) X(trace_buffer_kb) X(trace_start)                \
	X(trace_stop_after) X(trace_cpl) X(pt_options) X(trace_cr3)            \
	X(trace_ip) X(trace_cpus) X(pt_drain_us) X(pmi) X(pmi_every)           \
	X(pt_buffer_kb) X(pt_topa_kb) X(bts_buffer_kb)                         \
	X(wait_ms) X(stall_tsc) X(code_snapshots) X(mem_watch) X(mem_filter)  \
	/* config_net.c */                                                     \
	X(nic) X(net_ip) X(net_gw) X(receiver) X(net_selftest) X(net_bench)    \
	X(control_key) X(data_key) X(machine)

/*
 * config_key_<name> - apply the value val (non-empty, unquoted, trimmed)
 * of key <name> to cfg.  Returns 0, or -1 with the reason in err (errlen
 * bytes) and cfg unchanged.
 */
#define CONFIG_KEY_DECL_(k) \
	int config_key_##k(struct tv_config *cfg, const char *val, char *err, size_t errlen);
CONFIG_KEY_LIST(CONFIG_KEY_DECL_)
#undef CONFIG_KEY_DECL_

/* An index per key, in CONFIG_KEY_LIST's order (config_parse's "seen" lines). */
enum config_key_index {
#define CONFIG_KEY_INDEX_(k) CONFIG_KEY_INDEX_##k,
	CONFIG_KEY_LIST(CONFIG_KEY_INDEX_)
#undef CONFIG_KEY_INDEX_
	CONFIG_NKEYS
};

/* Value parsers shared by the groups: 0, or -1 on a malformed value. */

/* config_parse_u64 - decimal, or hexadecimal with 0x; no sign, no overflow. */
int config_parse_u64(const char *s, uint64_t *out);

/* config_parse_bool - on/yes/true/1 or off/no/false/0. */
int config_parse_bool(const char *s, bool *out);

/* config_add_error - record an error at line (1-based) in res. */
void config_add_error(struct config_result *res, uint32_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * config_trace_check - the trace keys against each other once the whole
 * file is read; line[] holds the line each key was set on (0 = not set),
 * indexed by enum config_key_index.  Errors go to res.
 */
void config_trace_check(const struct tv_config *cfg, const uint32_t line[CONFIG_NKEYS],
			struct config_result *res);

/*
 * config_trace_finish - defaults that depend on other keys, once the
 * whole file is read (before config_trace_check): overflow is wait when
 * receiver is set and overflow is not.
 */
void config_trace_finish(struct tv_config *cfg, const uint32_t line[CONFIG_NKEYS]);

/* config_log_trace, config_log_net - their groups' lines of config_log. */
void config_log_trace(const struct tv_config *cfg);
void config_log_net(const struct tv_config *cfg);

#endif /* TV_CONFIG_KEYS_H */
