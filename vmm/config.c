/* SPDX-License-Identifier: MIT */
/*
 * config.c - parser for tracevisor.conf.  Pure: no I/O, no allocation.
 * This file: the defaults, the file format (lines, comments, quotes,
 * duplicate and unknown keys, the error list), the value parsers the key
 * groups share, and the machine, log and PCI keys; the trace keys are in
 * config_trace.c, the network keys in config_net.c (config_keys.h).
 */
#include "vmm/config.h"
#include "vmm/config_keys.h"
#include "vmm/exit/preempt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void config_defaults(struct tv_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->loader[0] = '\0';
	cfg->log_level = LOG_INFO;
	cfg->serial_port = 0x3f8;
	cfg->console = true;
	cfg->log_ring_kb = 256;
	cfg->vmx = true;
	cfg->heartbeat_s = 0;
	cfg->trace_source = TV_SOURCE_NONE;
	cfg->trace_overflow = TV_OVERFLOW_OVERWRITE;
	cfg->trace_start = TV_TRIG_HYPERCALL;
	cfg->trace_start_address = 0;
	cfg->trace_buffer_kb = 1024;
	cfg->trace_stop_after = 0;
	trace_filter_all(&cfg->trace_filter);
	memset(cfg->trace_filter.ranges, 0, sizeof(cfg->trace_filter.ranges));
	trace_pt_opts_default(&cfg->trace_pt);
	cfg->trace_all_cpus = true;
	memset(cfg->trace_cpus, 0, sizeof(cfg->trace_cpus));
	cfg->nic = CONFIG_NIC_AUTO;
	cfg->net_dhcp = true;
	/* QEMU's and Bochs's slirp: the host's 127.0.0.1 is 10.0.2.2 to the guest. */
	cfg->receiver_ip = 10u << 24 | 2u << 8 | 2u;
	cfg->receiver_port = 6543;     /* TVP_PORT, tracevisor record's default */
	cfg->net_selftest = 0;
	cfg->net_bench = 0;
	cfg->control_key_len = 0;
	cfg->data_key_len = 0;
	cfg->data_key_control = false;
	strcpy(cfg->machine, "tracevisor");
	cfg->poll_us = PREEMPT_POLL_US_DEFAULT;
	cfg->pt_drain_us = CONFIG_PT_DRAIN_US_AUTO;
	cfg->bts_buffer_kb = CONFIG_BTS_BUFFER_KB_DEFAULT;
	cfg->trace_wait_ms = CONFIG_WAIT_MS_DEFAULT;
	cfg->trace_stall_tsc = 0;      /* keep */
	cfg->code_snapshots = 0;       /* auto: on with source = pt (docs/SNAPSHOTS.md) */
	cfg->npci_hide = 0;
}

/* --- value parsers (config_keys.h) ------------------------------------------ */

int config_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -1;
		if (v > (UINT64_MAX - d) / (uint64_t)base)
			return -1;
		v = v * (uint64_t)base + d;
	}
	*out = v;
	return 0;
}

int config_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/* --- the machine, the log, polling, hidden PCI functions ---------------------- */

int config_key_loader(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	size_t n = strlen(val);

	if (n == 0 || n >= sizeof(cfg->loader)) {
		snprintf(err, errlen, "loader path must be 1..%zu characters",
			 sizeof(cfg->loader) - 1);
		return -1;
	}
	if (val[0] != '\\' && val[0] != '/') {
		snprintf(err, errlen, "loader path must be absolute on this volume, e.g. \\EFI\\debian\\grubx64.efi");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (val[i] < 0x20 || val[i] > 0x7e) {
			snprintf(err, errlen, "loader path may hold printable ASCII only");
			return -1;
		}
	}
	for (size_t i = 0; i < n; i++)
		cfg->loader[i] = val[i] == '/' ? '\\' : val[i];
	cfg->loader[n] = '\0';
	return 0;
}

int config_key_log_level(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	for (int l = LOG_ERR; l <= LOG_DEBUG; l++) {
		if (!strcmp(val, log_level_name((enum log_level)l))) {
			cfg->log_level = (enum log_level)l;
			return 0;
		}
	}
	snprintf(err, errlen, "log_level must be err, warn, info or debug");
	return -1;
}

int config_key_serial(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	static const uint16_t com[] = { 0x3f8, 0x2f8, 0x3e8, 0x2e8 };
	uint64_t port;

	if (!strcmp(val, "off") || !strcmp(val, "none")) {
		cfg->serial_port = 0;
		return 0;
	}
	if (!strncmp(val, "com", 3) && val[3] >= '1' && val[3] <= '4' && !val[4]) {
		cfg->serial_port = com[val[3] - '1'];
		return 0;
	}
	if (config_parse_u64(val, &port) || port == 0 || port > 0xfff8) {
		snprintf(err, errlen, "serial must be off, com1..com4 or an I/O port 0x1..0xfff8");
		return -1;
	}
	cfg->serial_port = (uint16_t)port;
	return 0;
}

int config_key_console(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (config_parse_bool(val, &cfg->console)) {
		snprintf(err, errlen, "console must be on or off");
		return -1;
	}
	return 0;
}

int config_key_log_ring_kb(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t kb;

	if (config_parse_u64(val, &kb) || kb < 4 || kb > 4096 || (kb & (kb - 1))) {
		snprintf(err, errlen, "log_ring_kb must be a power of two from 4 to 4096");
		return -1;
	}
	cfg->log_ring_kb = (uint32_t)kb;
	return 0;
}

int config_key_vmx(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (config_parse_bool(val, &cfg->vmx)) {
		snprintf(err, errlen, "vmx must be on or off");
		return -1;
	}
	return 0;
}

int config_key_heartbeat_s(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t s;

	if (!strcmp(val, "off")) {
		cfg->heartbeat_s = 0;
		return 0;
	}
	if (config_parse_u64(val, &s) || s > 3600) {
		snprintf(err, errlen, "heartbeat_s must be off or 0..3600 seconds");
		return -1;
	}
	cfg->heartbeat_s = (uint32_t)s;
	return 0;
}

int config_key_poll_us(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t us;

	if (config_parse_u64(val, &us) || us < PREEMPT_POLL_US_MIN || us > PREEMPT_POLL_US_MAX) {
		snprintf(err, errlen, "poll_us must be %u..%u microseconds",
			 PREEMPT_POLL_US_MIN, PREEMPT_POLL_US_MAX);
		return -1;
	}
	cfg->poll_us = (uint32_t)us;
	return 0;
}

int config_key_pci_hide(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	struct pci_bdf f[CONFIG_PCI_HIDE_MAX];
	char buf[CONFIG_LINE_MAX + 1];
	uint32_t n = 0;
	char *p, *next;

	if (strlen(val) >= sizeof(buf))
		goto bad;
	strcpy(buf, val);
	for (p = buf; p; p = next) {
		next = strchr(p, ',');
		if (next)
			*next++ = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		for (char *e = p + strlen(p); e > p && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		if (n == CONFIG_PCI_HIDE_MAX) {
			snprintf(err, errlen, "pci_hide takes at most %d functions", CONFIG_PCI_HIDE_MAX);
			return -1;
		}
		if (pci_bdf_parse(p, &f[n]))
			goto bad;
		n++;
	}
	memcpy(cfg->pci_hide, f, n * sizeof(f[0]));
	cfg->npci_hide = n;
	return 0;
bad:
	snprintf(err, errlen, "pci_hide must be BB:DD.F[,BB:DD.F...] (hex, as lspci prints, at most %d)",
		 CONFIG_PCI_HIDE_MAX);
	return -1;
}

/* --- the file format ---------------------------------------------------------- */

static const struct config_key {
	const char *name;
	int (*fn)(struct tv_config *cfg, const char *val, char *err, size_t errlen);
} config_keys[CONFIG_NKEYS] = {
#define CONFIG_KEY_ENTRY_(k) [CONFIG_KEY_INDEX_##k] = { #k, config_key_##k },
	CONFIG_KEY_LIST(CONFIG_KEY_ENTRY_)
#undef CONFIG_KEY_ENTRY_
};

void config_add_error(struct config_result *res, uint32_t line, const char *fmt, ...)
{
	va_list ap;

	if (res->nerrors < CONFIG_MAX_ERRORS) {
		struct config_error *e = &res->errors[res->nerrors];

		e->line = line;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	res->nerrors++;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

static int is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Parse one line (no line end, NUL-terminated, may be modified in place). */
static void parse_line(struct tv_config *cfg, char *s, uint32_t lineno,
		       uint32_t seen[CONFIG_NKEYS], struct config_result *res)
{
	char *key, *val, *eq, *end;
	char err[100];
	size_t i;

	while (is_space(*s))
		s++;
	if (*s == '\0' || *s == '#' || *s == ';')
		return;
	eq = strchr(s, '=');
	if (!eq) {
		config_add_error(res, lineno, "expected `key = value`");
		return;
	}
	key = s;
	end = eq;
	while (end > key && is_space(end[-1]))
		end--;
	*end = '\0';
	if (*key == '\0') {
		config_add_error(res, lineno, "missing key before '='");
		return;
	}
	for (char *k = key; *k; k++) {
		if (!is_key_char(*k)) {
			config_add_error(res, lineno, "bad character in key (keys are lower-case a-z, 0-9, _)");
			return;
		}
	}

	val = eq + 1;
	while (is_space(*val))
		val++;
	if (*val == '"') {
		char *close = strchr(val + 1, '"');

		if (!close) {
			config_add_error(res, lineno, "unterminated quote in value of %s", key);
			return;
		}
		end = close + 1;
		while (is_space(*end))
			end++;
		if (*end && *end != '#' && *end != ';') {
			config_add_error(res, lineno, "text after closing quote in value of %s", key);
			return;
		}
		*close = '\0';
		val++;
	} else {
		/* A comment starts at '#' or ';' that follows whitespace. */
		for (end = val; *end; end++)
			if ((*end == '#' || *end == ';') &&
			    (end > val ? is_space(end[-1]) : val > eq + 1))
				break;
		while (end > val && is_space(end[-1]))
			end--;
		*end = '\0';
	}

	for (i = 0; i < CONFIG_NKEYS; i++)
		if (!strcmp(key, config_keys[i].name))
			break;
	if (i == CONFIG_NKEYS) {
		config_add_error(res, lineno, "unknown key '%.40s'", key);
		return;
	}
	/* mem_watch: one watch per line, up to TRACE_MEM_WATCH_CONFIG_MAX (its own check) */
	if (seen[i] && i != CONFIG_KEY_INDEX_mem_watch) {
		config_add_error(res, lineno, "duplicate key '%s' (first set on line %u)",
			  key, seen[i]);
		return;
	}
	if (*val == '\0') {
		config_add_error(res, lineno, "empty value for %s", key);
		return;
	}
	err[0] = '\0';
	if (config_keys[i].fn(cfg, val, err, sizeof(err))) {
		config_add_error(res, lineno, "%s", err);
		return;
	}
	seen[i] = lineno;
}

uint32_t config_parse(struct tv_config *cfg, const char *text, size_t len,
		      struct config_result *res)
{
	uint32_t seen[CONFIG_NKEYS] = { 0 };
	char line[CONFIG_LINE_MAX + 1];
	uint32_t lineno = 0;
	size_t pos = 0;

	memset(res, 0, sizeof(*res));
	if (len >= 3 && (uint8_t)text[0] == 0xef && (uint8_t)text[1] == 0xbb &&
	    (uint8_t)text[2] == 0xbf)
		pos = 3;

	while (pos < len) {
		size_t start = pos, n;
		int bad = 0;

		lineno++;
		while (pos < len && text[pos] != '\n')
			pos++;
		n = pos - start;
		if (pos < len)
			pos++; /* skip '\n' */
		if (n && text[start + n - 1] == '\r')
			n--;
		if (n > CONFIG_LINE_MAX) {
			config_add_error(res, lineno, "line longer than %d characters", CONFIG_LINE_MAX);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			uint8_t c = (uint8_t)text[start + i];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				bad = 1;
		}
		if (bad) {
			config_add_error(res, lineno, "control character in line");
			continue;
		}
		memcpy(line, text + start, n);
		line[n] = '\0';
		parse_line(cfg, line, lineno, seen, res);
	}
	config_trace_finish(cfg, seen);
	config_trace_check(cfg, seen, res);
	return res->nerrors;
}

void config_log(const struct tv_config *cfg)
{
	log_info("config: loader=%s log_level=%s serial=%#x console=%s log_ring_kb=%u vmx=%s heartbeat_s=%u",
		 cfg->loader[0] ? cfg->loader : "(next BootOrder entry)",
		 log_level_name(cfg->log_level), cfg->serial_port,
		 cfg->console ? "on" : "off", cfg->log_ring_kb, cfg->vmx ? "on" : "off",
		 cfg->heartbeat_s);
	config_log_trace(cfg);
	config_log_net(cfg);
	log_info("config: poll_us=%u pci_hide=%u function(s)", cfg->poll_us, cfg->npci_hide);
}
