/* SPDX-License-Identifier: MIT */
/*
 * config.c - parser for tracevisor.conf.  Pure: no I/O, no allocation.
 */
#include "vmm/config.h"
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
	strcpy(cfg->machine, "tracevisor");
	cfg->poll_us = PREEMPT_POLL_US_DEFAULT;
	cfg->pt_drain_us = CONFIG_PT_DRAIN_US_DEFAULT;
	cfg->npci_hide = 0;
}

bool config_trace_cpu(const struct tv_config *cfg, uint32_t index)
{
	if (cfg->trace_all_cpus)
		return true;
	if (index >= CONFIG_TRACE_CPUS_MAX)
		return false;
	return (cfg->trace_cpus[index / 32] >> (index % 32)) & 1;
}

/* --- value parsers: return 0, or -1 with a reason in err ------------------ */

static int parse_u64(const char *s, uint64_t *out)
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

static int parse_bool(const char *s, bool *out)
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

typedef int (*key_fn)(struct tv_config *cfg, const char *val, char *err, size_t errlen);

static int key_loader(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

static int key_log_level(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

static int key_serial(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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
	if (parse_u64(val, &port) || port == 0 || port > 0xfff8) {
		snprintf(err, errlen, "serial must be off, com1..com4 or an I/O port 0x1..0xfff8");
		return -1;
	}
	cfg->serial_port = (uint16_t)port;
	return 0;
}

static int key_console(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (parse_bool(val, &cfg->console)) {
		snprintf(err, errlen, "console must be on or off");
		return -1;
	}
	return 0;
}

static int key_log_ring_kb(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t kb;

	if (parse_u64(val, &kb) || kb < 4 || kb > 4096 || (kb & (kb - 1))) {
		snprintf(err, errlen, "log_ring_kb must be a power of two from 4 to 4096");
		return -1;
	}
	cfg->log_ring_kb = (uint32_t)kb;
	return 0;
}

static int key_vmx(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (parse_bool(val, &cfg->vmx)) {
		snprintf(err, errlen, "vmx must be on or off");
		return -1;
	}
	return 0;
}

static int key_heartbeat_s(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t s;

	if (!strcmp(val, "off")) {
		cfg->heartbeat_s = 0;
		return 0;
	}
	if (parse_u64(val, &s) || s > 3600) {
		snprintf(err, errlen, "heartbeat_s must be off or 0..3600 seconds");
		return -1;
	}
	cfg->heartbeat_s = (uint32_t)s;
	return 0;
}

/* --- tracing ---------------------------------------------------------------- */

/*
 * The names of TV_SOURCE_LIST (all, or those that take a PMI) as
 * "a, b, c<conj>d" into buf (truncated to len), for the error messages.
 */
static void source_names(char *buf, size_t len, bool pmi_only, const char *conj)
{
	unsigned s, last = 0, k = 0;
	size_t n = 0;

	buf[0] = '\0';
	for (s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX; s++)
		if (!pmi_only || tv_source_takes_pmi(s))
			last = s;
	for (s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX && n < len; s++) {
		if (pmi_only && !tv_source_takes_pmi(s))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      !k++ ? "" : s == last ? conj : ", ", tv_source_name(s));
	}
}

/* source = auto or a name of TV_SOURCE_LIST (vmm/trace/format.h). */
static int key_source(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	char names[64];

	if (!strcmp(val, "auto")) {
		cfg->trace_source = TV_SOURCE_NONE;
		return 0;
	}
	for (unsigned s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX; s++) {
		if (!strcmp(val, tv_source_name(s))) {
			cfg->trace_source = (uint8_t)s;
			return 0;
		}
	}
	source_names(names, sizeof(names), false, " or ");
	snprintf(err, errlen, "source must be auto, %s", names);
	return -1;
}

static int key_overflow(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (!strcmp(val, "stop")) {
		cfg->trace_overflow = TV_OVERFLOW_STOP;
		return 0;
	}
	if (!strcmp(val, "overwrite")) {
		cfg->trace_overflow = TV_OVERFLOW_OVERWRITE;
		return 0;
	}
	snprintf(err, errlen, "overflow must be stop or overwrite");
	return -1;
}

static int key_trace_buffer_kb(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t kb;

	if (parse_u64(val, &kb) || kb < CONFIG_TRACE_BUFFER_KB_MIN ||
	    kb > CONFIG_TRACE_BUFFER_KB_MAX || (kb & (kb - 1))) {
		snprintf(err, errlen, "trace_buffer_kb must be a power of two from %u to %u",
			 CONFIG_TRACE_BUFFER_KB_MIN, CONFIG_TRACE_BUFFER_KB_MAX);
		return -1;
	}
	cfg->trace_buffer_kb = (uint32_t)kb;
	return 0;
}

static bool is_canonical(uint64_t v)
{
	return (uint64_t)(((int64_t)(v << 16)) >> 16) == v;
}

/* A 0x-prefixed hexadecimal number (addresses are always written in hex). */
static int parse_hex(const char *s, uint64_t *out)
{
	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return -1;
	return parse_u64(s, out);
}

static int key_trace_start(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	static const struct { const char *name; enum tv_trigger trig; } t[] = {
		{ "boot", TV_TRIG_BOOT }, { "hypercall", TV_TRIG_HYPERCALL },
		{ "exit_boot_services", TV_TRIG_EXIT_BOOT_SERVICES },
		{ "kernel_entry", TV_TRIG_KERNEL_ENTRY },
	};
	uint64_t a;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!strcmp(val, t[i].name)) {
			cfg->trace_start = (uint8_t)t[i].trig;
			cfg->trace_start_address = 0;
			return 0;
		}
	}
	if (!strncmp(val, "address:", 8)) {
		if (parse_hex(val + 8, &a) || !is_canonical(a)) {
			snprintf(err, errlen, "trace_start address must be a canonical 0x... address");
			return -1;
		}
		cfg->trace_start = TV_TRIG_ADDRESS;
		cfg->trace_start_address = a;
		return 0;
	}
	snprintf(err, errlen, "trace_start must be boot, hypercall, exit_boot_services, kernel_entry or address:0xADDR");
	return -1;
}

static int key_trace_stop_after(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(val, &n)) {
		snprintf(err, errlen, "trace_stop_after must be a record count (0 = unlimited)");
		return -1;
	}
	cfg->trace_stop_after = n;
	return 0;
}

/* One "name=N" of pt_options: N in 0..15 into *out; -1 when malformed. */
static int pt_opt_num(const char *tok, size_t len, size_t name_len, uint8_t *out)
{
	unsigned n = 0;
	size_t i = name_len + 1;

	if (len <= i || tok[name_len] != '=' || len - i > 2)
		return -1;
	for (; i < len; i++) {
		if (tok[i] < '0' || tok[i] > '9')
			return -1;
		n = n * 10 + (unsigned)(tok[i] - '0');
	}
	if (n > 15)
		return -1;
	*out = (uint8_t)n;
	return 0;
}

/*
 * pt_options = a comma-separated list: tsc | notsc, retc | noretc,
 * mtc=N, cyc=N, psb=N (N 0..15, the IA32_RTIT_CTL encodings), or
 * default.  Whether the CPU can is checked when a window opens.
 */
static int key_pt_options(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	struct trace_pt_opts o;
	const char *p = val;

	trace_pt_opts_default(&o);
	while (*p) {
		size_t len = strcspn(p, ",");
		int bad = 0;

#define TOK(s) (len == sizeof(s) - 1 && !strncmp(p, s, len))
		if (TOK("default"))
			trace_pt_opts_default(&o);
		else if (TOK("tsc"))
			o.tsc = 1;
		else if (TOK("notsc"))
			o.tsc = 0;
		else if (TOK("retc"))
			o.dis_retc = 0;
		else if (TOK("noretc"))
			o.dis_retc = 1;
		else if (len > 3 && !strncmp(p, "mtc", 3))
			bad = pt_opt_num(p, len, 3, &o.mtc_freq), o.mtc = 1;
		else if (len > 3 && !strncmp(p, "cyc", 3))
			bad = pt_opt_num(p, len, 3, &o.cyc_thresh), o.cyc = 1;
		else if (len > 3 && !strncmp(p, "psb", 3))
			bad = pt_opt_num(p, len, 3, &o.psb_freq);
		else
			bad = 1;
#undef TOK
		if (bad || !len) {
			snprintf(err, errlen, "pt_options: '%.*s' is not tsc, notsc, retc, noretc, mtc=N, cyc=N, psb=N (N 0..15) or default",
				 (int)len, p);
			return -1;
		}
		p += len;
		if (*p == ',' && !*++p) {
			snprintf(err, errlen, "pt_options: empty item after ','");
			return -1;
		}
	}
	cfg->trace_pt = o;
	return 0;
}

static int key_trace_cpl(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (!strcmp(val, "kernel"))
		cfg->trace_filter.cpl = TRACE_CPL_KERNEL;
	else if (!strcmp(val, "user"))
		cfg->trace_filter.cpl = TRACE_CPL_USER;
	else if (!strcmp(val, "all"))
		cfg->trace_filter.cpl = TRACE_CPL_ALL;
	else {
		snprintf(err, errlen, "trace_cpl must be kernel, user or all");
		return -1;
	}
	return 0;
}

static int key_trace_cr3(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t cr3;

	if (!strcmp(val, "any")) {
		cfg->trace_filter.cr3 = 0;
		return 0;
	}
	/* CR3 is a physical address: at most 52 bits (SDM 3A 4.5) */
	if (parse_hex(val, &cr3) || cr3 == 0 || (cr3 >> 52)) {
		snprintf(err, errlen, "trace_cr3 must be any or a non-zero 0x... value below 2^52");
		return -1;
	}
	cfg->trace_filter.cr3 = cr3;
	return 0;
}

static int key_trace_ip(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	struct trace_range r[TRACE_MAX_RANGES];
	char buf[CONFIG_LINE_MAX + 1];
	uint32_t n = 0;
	char *p, *next;

	if (strlen(val) >= sizeof(buf))
		goto bad;
	strcpy(buf, val);
	for (p = buf; p; p = next) {
		char *dash;

		next = strchr(p, ',');
		if (next)
			*next++ = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		for (char *e = p + strlen(p); e > p && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		dash = strchr(p, '-');
		if (!dash)
			goto bad;
		*dash = '\0';
		if (n == TRACE_MAX_RANGES) {
			snprintf(err, errlen, "trace_ip takes at most %d ranges", TRACE_MAX_RANGES);
			return -1;
		}
		if (parse_hex(p, &r[n].lo) || parse_hex(dash + 1, &r[n].hi))
			goto bad;
		if (r[n].lo > r[n].hi) {
			snprintf(err, errlen, "trace_ip range %u: start above end", n + 1);
			return -1;
		}
		n++;
	}
	memcpy(cfg->trace_filter.ranges, r, n * sizeof(r[0]));
	cfg->trace_filter.nranges = n;
	return 0;
bad:
	snprintf(err, errlen, "trace_ip must be 0xLO-0xHI[,0xLO-0xHI...] (hex, at most %d)",
		 TRACE_MAX_RANGES);
	return -1;
}

static int key_trace_cpus(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint32_t set[CONFIG_TRACE_CPUS_MAX / 32] = { 0 };
	const char *p = val;

	if (!strcmp(val, "all")) {
		cfg->trace_all_cpus = true;
		memset(cfg->trace_cpus, 0, sizeof(cfg->trace_cpus));
		return 0;
	}
	for (;;) {
		uint32_t v = 0;
		int digits = 0;

		while (*p == ' ' || *p == '\t')
			p++;
		while (*p >= '0' && *p <= '9' && digits < 4) {
			v = v * 10 + (uint32_t)(*p++ - '0');
			digits++;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (!digits || v >= CONFIG_TRACE_CPUS_MAX || (*p && *p != ',')) {
			snprintf(err, errlen, "trace_cpus must be all or a list of CPU indexes 0..%d, e.g. 0,2,3",
				 CONFIG_TRACE_CPUS_MAX - 1);
			return -1;
		}
		set[v / 32] |= 1u << (v % 32);
		if (!*p)
			break;
		p++;  /* ',' */
	}
	cfg->trace_all_cpus = false;
	memcpy(cfg->trace_cpus, set, sizeof(set));
	return 0;
}

/* --- network ------------------------------------------------------------------ */

/* Hex digits at *p (at most max), value in *out; returns how many. */
static int parse_hex_digits(const char **p, int max, uint32_t *out)
{
	int n = 0;

	*out = 0;
	for (; n < max; n++, (*p)++) {
		char c = **p;
		uint32_t d;

		if (c >= '0' && c <= '9')
			d = (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (uint32_t)(c - 'A' + 10);
		else
			break;
		*out = *out << 4 | d;
	}
	return n;
}

/* a.b.c.d (decimal, each 0..255) at *p; advances *p past it. */
static int parse_ipv4(const char **p, uint32_t *out)
{
	uint32_t ip = 0;

	for (int i = 0; i < 4; i++) {
		uint32_t v = 0;
		int digits = 0;

		if (i && *(*p)++ != '.')
			return -1;
		while (**p >= '0' && **p <= '9' && digits < 3) {
			v = v * 10 + (uint32_t)(*(*p)++ - '0');
			digits++;
		}
		if (!digits || v > 255 || (**p >= '0' && **p <= '9'))
			return -1;
		ip = ip << 8 | v;
	}
	*out = ip;
	return 0;
}

static int key_nic(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	uint32_t v[6];
	int colons = 0;

	if (!strcmp(val, "auto") || !strcmp(val, "off")) {
		cfg->nic = val[0] == 'a' ? CONFIG_NIC_AUTO : CONFIG_NIC_OFF;
		return 0;
	}
	for (const char *c = val; *c; c++)
		colons += *c == ':';
	if (colons == 5) {
		for (int i = 0; i < 6; i++) {
			if ((i && *p++ != ':') || parse_hex_digits(&p, 2, &v[i]) != 2)
				goto bad;
		}
		if (*p || (v[0] & 1))
			goto bad;
		for (int i = 0; i < 6; i++)
			cfg->nic_mac[i] = (uint8_t)v[i];
		cfg->nic = CONFIG_NIC_MAC;
		return 0;
	}
	/* [0000:]BB:DD.F as lspci writes it: hex bus and device, function 0..7. */
	if (colons == 2) {
		if (parse_hex_digits(&p, 4, &v[0]) != 4 || v[0] != 0 || *p++ != ':')
			goto bad;
	} else if (colons != 1) {
		goto bad;
	}
	if (parse_hex_digits(&p, 2, &v[0]) != 2 || *p++ != ':' ||
	    parse_hex_digits(&p, 2, &v[1]) != 2 || v[1] > 0x1f || *p++ != '.' ||
	    *p < '0' || *p > '7' || p[1])
		goto bad;
	cfg->nic_pci[0] = (uint8_t)v[0];
	cfg->nic_pci[1] = (uint8_t)v[1];
	cfg->nic_pci[2] = (uint8_t)(*p - '0');
	cfg->nic = CONFIG_NIC_PCI;
	return 0;
bad:
	snprintf(err, errlen, "nic must be auto, off, a PCI address BB:DD.F or a unicast MAC xx:xx:xx:xx:xx:xx");
	return -1;
}

static int key_net_ip(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	uint32_t ip, prefix = 0;
	int digits = 0;

	if (!strcmp(val, "dhcp")) {
		cfg->net_dhcp = true;
		return 0;
	}
	if (parse_ipv4(&p, &ip) || *p++ != '/')
		goto bad;
	while (*p >= '0' && *p <= '9' && digits < 2) {
		prefix = prefix * 10 + (uint32_t)(*p++ - '0');
		digits++;
	}
	if (!digits || *p || prefix < 1 || prefix > 32 || ip == 0)
		goto bad;
	cfg->net_dhcp = false;
	cfg->net_ip = ip;
	cfg->net_prefix = (uint8_t)prefix;
	return 0;
bad:
	snprintf(err, errlen, "net_ip must be dhcp or A.B.C.D/prefix (prefix 1..32)");
	return -1;
}

static int key_net_gw(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	uint32_t ip;

	if (!strcmp(val, "none")) {
		cfg->net_gw = 0;
		return 0;
	}
	if (parse_ipv4(&p, &ip) || *p || ip == 0) {
		snprintf(err, errlen, "net_gw must be none or A.B.C.D");
		return -1;
	}
	cfg->net_gw = ip;
	return 0;
}

static int key_receiver(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	uint32_t ip;
	uint64_t port;

	if (parse_ipv4(&p, &ip) || ip == 0 || *p++ != ':' || parse_u64(p, &port) ||
	    port == 0 || port > 65535 || (p[0] == '0' && p[1] == 'x')) {
		snprintf(err, errlen, "receiver must be A.B.C.D:PORT (port 1..65535)");
		return -1;
	}
	cfg->receiver_ip = ip;
	cfg->receiver_port = (uint16_t)port;
	cfg->receiver_set = true;
	return 0;
}

static int key_net_selftest(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (!strcmp(val, "off")) {
		cfg->net_selftest = 0;
		return 0;
	}
	if (parse_u64(val, &n) || n > CONFIG_NET_SELFTEST_MAX) {
		snprintf(err, errlen, "net_selftest must be off or a record count 0..%u",
			 CONFIG_NET_SELFTEST_MAX);
		return -1;
	}
	cfg->net_selftest = (uint32_t)n;
	return 0;
}

static int key_net_bench(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (!strcmp(val, "off")) {
		cfg->net_bench = 0;
		return 0;
	}
	if (parse_u64(val, &n) || n > CONFIG_NET_BENCH_MAX) {
		snprintf(err, errlen, "net_bench must be off or a frame count 0..%u",
			 CONFIG_NET_BENCH_MAX);
		return -1;
	}
	cfg->net_bench = (uint32_t)n;
	return 0;
}

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* control_key = HEX: 2..128 hex digits, an even number (1..64 bytes). */
static int key_control_key(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint8_t key[CONFIG_CONTROL_KEY_MAX];
	size_t n = strlen(val);

	if (!strcmp(val, "none")) {
		memset(cfg->control_key, 0, sizeof(cfg->control_key));
		cfg->control_key_len = 0;
		return 0;
	}
	if (n < 2 || n % 2 || n > 2 * CONFIG_CONTROL_KEY_MAX)
		goto bad;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hex_nibble(val[i]), lo = hex_nibble(val[i + 1]);

		if (hi < 0 || lo < 0)
			goto bad;
		key[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	memset(cfg->control_key, 0, sizeof(cfg->control_key));
	memcpy(cfg->control_key, key, n / 2);
	cfg->control_key_len = (uint8_t)(n / 2);
	return 0;
bad:
	snprintf(err, errlen, "control_key must be none or 2..%d hex digits (1..%d bytes, an even count)",
		 2 * CONFIG_CONTROL_KEY_MAX, CONFIG_CONTROL_KEY_MAX);
	return -1;
}

/* machine = NAME: letters, digits, '-', '_', '.', 1..63 characters. */
static int key_machine(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	size_t n = strlen(val);

	if (n == 0 || n >= CONFIG_MACHINE_MAX)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		char c = val[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			goto bad;
	}
	memcpy(cfg->machine, val, n + 1);
	return 0;
bad:
	snprintf(err, errlen, "machine must be 1..%d characters of A-Z a-z 0-9 - _ .",
		 CONFIG_MACHINE_MAX - 1);
	return -1;
}

static int key_poll_us(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t us;

	if (parse_u64(val, &us) || us < PREEMPT_POLL_US_MIN || us > PREEMPT_POLL_US_MAX) {
		snprintf(err, errlen, "poll_us must be %u..%u microseconds",
			 PREEMPT_POLL_US_MIN, PREEMPT_POLL_US_MAX);
		return -1;
	}
	cfg->poll_us = (uint32_t)us;
	return 0;
}

static int key_pt_drain_us(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t us;

	if (parse_u64(val, &us) || (us && (us < PREEMPT_POLL_US_MIN || us > PREEMPT_POLL_US_MAX))) {
		snprintf(err, errlen, "pt_drain_us must be 0 (off) or %u..%u microseconds",
			 PREEMPT_POLL_US_MIN, PREEMPT_POLL_US_MAX);
		return -1;
	}
	cfg->pt_drain_us = (uint32_t)us;
	return 0;
}

static int key_pmi(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (!strcmp(val, "on"))
		cfg->trace_pmi = true;
	else if (!strcmp(val, "off"))
		cfg->trace_pmi = false;
	else {
		snprintf(err, errlen, "pmi must be on or off");
		return -1;
	}
	return 0;
}

static int key_pmi_every(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_u64(val, &n) || n < 1 || n > CONFIG_PMI_EVERY_MAX) {
		snprintf(err, errlen, "pmi_every must be 1..%u records", CONFIG_PMI_EVERY_MAX);
		return -1;
	}
	cfg->trace_pmi_every = (uint32_t)n;
	return 0;
}

static int key_pci_hide(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

static const struct config_key {
	const char *name;
	key_fn fn;
} config_keys[] = {
	{ "loader", key_loader },
	{ "log_level", key_log_level },
	{ "serial", key_serial },
	{ "console", key_console },
	{ "log_ring_kb", key_log_ring_kb },
	{ "vmx", key_vmx },
	{ "heartbeat_s", key_heartbeat_s },
	{ "source", key_source },
	{ "overflow", key_overflow },
	{ "trace_buffer_kb", key_trace_buffer_kb },
	{ "trace_start", key_trace_start },
	{ "trace_stop_after", key_trace_stop_after },
	{ "trace_cpl", key_trace_cpl },
	{ "pt_options", key_pt_options },
	{ "trace_cr3", key_trace_cr3 },
	{ "trace_ip", key_trace_ip },
	{ "trace_cpus", key_trace_cpus },
	{ "nic", key_nic },
	{ "net_ip", key_net_ip },
	{ "net_gw", key_net_gw },
	{ "receiver", key_receiver },
	{ "net_selftest", key_net_selftest },
	{ "net_bench", key_net_bench },
	{ "control_key", key_control_key },
	{ "machine", key_machine },
	{ "poll_us", key_poll_us },
	{ "pt_drain_us", key_pt_drain_us },
	{ "pmi", key_pmi },
	{ "pmi_every", key_pmi_every },
	{ "pci_hide", key_pci_hide },
};

#define NKEYS (sizeof(config_keys) / sizeof(config_keys[0]))

static void add_error(struct config_result *res, uint32_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add_error(struct config_result *res, uint32_t line, const char *fmt, ...)
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
		       uint32_t seen[NKEYS], struct config_result *res)
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
		add_error(res, lineno, "expected `key = value`");
		return;
	}
	key = s;
	end = eq;
	while (end > key && is_space(end[-1]))
		end--;
	*end = '\0';
	if (*key == '\0') {
		add_error(res, lineno, "missing key before '='");
		return;
	}
	for (char *k = key; *k; k++) {
		if (!is_key_char(*k)) {
			add_error(res, lineno, "bad character in key (keys are lower-case a-z, 0-9, _)");
			return;
		}
	}

	val = eq + 1;
	while (is_space(*val))
		val++;
	if (*val == '"') {
		char *close = strchr(val + 1, '"');

		if (!close) {
			add_error(res, lineno, "unterminated quote in value of %s", key);
			return;
		}
		end = close + 1;
		while (is_space(*end))
			end++;
		if (*end && *end != '#' && *end != ';') {
			add_error(res, lineno, "text after closing quote in value of %s", key);
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

	for (i = 0; i < NKEYS; i++)
		if (!strcmp(key, config_keys[i].name))
			break;
	if (i == NKEYS) {
		add_error(res, lineno, "unknown key '%.40s'", key);
		return;
	}
	if (seen[i]) {
		add_error(res, lineno, "duplicate key '%s' (first set on line %u)",
			  key, seen[i]);
		return;
	}
	if (*val == '\0') {
		add_error(res, lineno, "empty value for %s", key);
		return;
	}
	err[0] = '\0';
	if (config_keys[i].fn(cfg, val, err, sizeof(err))) {
		add_error(res, lineno, "%s", err);
		return;
	}
	seen[i] = lineno;
}

static uint32_t key_line(const uint32_t seen[NKEYS], const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(config_keys[i].name, name))
			return seen[i];
	return 0;
}

/*
 * The PMI keys against the source: a request no CPU could honour is an
 * error here, not a silent no-op at boot (source = auto is checked when
 * the source is chosen).
 */
static void check_pmi(const struct tv_config *cfg, const uint32_t seen[NKEYS],
		      struct config_result *res)
{
	uint32_t pmi = key_line(seen, "pmi"), every = key_line(seen, "pmi_every");
	uint8_t src = cfg->trace_source;
	char names[64];

	source_names(names, sizeof(names), true, " and ");
	if (cfg->trace_pmi && src != TV_SOURCE_NONE && !tv_source_takes_pmi(src))
		add_error(res, pmi, "pmi = on applies to %s: source = %s takes no PMI",
			  names, tv_source_name(src));
	if (every && !cfg->trace_pmi)
		add_error(res, every, "pmi_every needs pmi = on");
	else if (every && src == TV_SOURCE_PT)
		add_error(res, every, "pmi_every sets the bts threshold or the lbr counter period: pt's PMI comes at a ToPA region's end");
}

uint32_t config_parse(struct tv_config *cfg, const char *text, size_t len,
		      struct config_result *res)
{
	uint32_t seen[NKEYS] = { 0 };
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
			add_error(res, lineno, "line longer than %d characters", CONFIG_LINE_MAX);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			uint8_t c = (uint8_t)text[start + i];

			if ((c < 0x20 && c != '\t') || c == 0x7f)
				bad = 1;
		}
		if (bad) {
			add_error(res, lineno, "control character in line");
			continue;
		}
		memcpy(line, text + start, n);
		line[n] = '\0';
		parse_line(cfg, line, lineno, seen, res);
	}
	check_pmi(cfg, seen, res);
	return res->nerrors;
}

static const char *config_source_name(uint8_t s)
{
	const char *name = tv_source_name(s);

	if (s == TV_SOURCE_NONE)
		return "auto";
	return name ? name : "?";
}

static const char *config_start_name(uint8_t t)
{
	switch (t) {
	case TV_TRIG_BOOT: return "boot";
	case TV_TRIG_HYPERCALL: return "hypercall";
	case TV_TRIG_ADDRESS: return "address";
	case TV_TRIG_EXIT_BOOT_SERVICES: return "exit_boot_services";
	case TV_TRIG_KERNEL_ENTRY: return "kernel_entry";
	default: return "?";
	}
}

void config_log(const struct tv_config *cfg)
{
	log_info("config: loader=%s log_level=%s serial=%#x console=%s log_ring_kb=%u vmx=%s heartbeat_s=%u",
		 cfg->loader[0] ? cfg->loader : "(next BootOrder entry)",
		 log_level_name(cfg->log_level), cfg->serial_port,
		 cfg->console ? "on" : "off", cfg->log_ring_kb, cfg->vmx ? "on" : "off",
		 cfg->heartbeat_s);
	log_info("config: source=%s overflow=%s trace_buffer_kb=%u trace_start=%s%s%.0llx trace_stop_after=%llu trace_cpl=%s trace_cr3=%#llx trace_ip=%u range(s) trace_cpus=%s",
		 config_source_name(cfg->trace_source),
		 cfg->trace_overflow == TV_OVERFLOW_STOP ? "stop" : "overwrite",
		 cfg->trace_buffer_kb, config_start_name(cfg->trace_start),
		 cfg->trace_start == TV_TRIG_ADDRESS ? ":0x" : "",
		 (unsigned long long)cfg->trace_start_address,
		 (unsigned long long)cfg->trace_stop_after,
		 cfg->trace_filter.cpl == TRACE_CPL_KERNEL ? "kernel" :
		 cfg->trace_filter.cpl == TRACE_CPL_USER ? "user" : "all",
		 (unsigned long long)cfg->trace_filter.cr3, cfg->trace_filter.nranges,
		 cfg->trace_all_cpus ? "all" : "list");
	{
		const struct trace_pt_opts *o = &cfg->trace_pt;
		char pt[64];
		int n = snprintf(pt, sizeof(pt), "%s,%s", o->tsc ? "tsc" : "notsc",
				 o->dis_retc ? "noretc" : "retc");

		if (o->mtc && n > 0 && (size_t)n < sizeof(pt))
			n += snprintf(pt + n, sizeof(pt) - (size_t)n, ",mtc=%u", o->mtc_freq);
		if (o->cyc && n > 0 && (size_t)n < sizeof(pt))
			n += snprintf(pt + n, sizeof(pt) - (size_t)n, ",cyc=%u", o->cyc_thresh);
		if (o->psb_freq && n > 0 && (size_t)n < sizeof(pt))
			snprintf(pt + n, sizeof(pt) - (size_t)n, ",psb=%u", o->psb_freq);
		log_info("config: pt_options=%s pt_drain_us=%u pmi=%s pmi_every=%u", pt,
			 cfg->pt_drain_us, cfg->trace_pmi ? "on" : "off", cfg->trace_pmi_every);
	}
	{
		char ip[24] = "dhcp";

		if (!cfg->net_dhcp)
			snprintf(ip, sizeof(ip), "%u.%u.%u.%u/%u", cfg->net_ip >> 24,
				 (cfg->net_ip >> 16) & 255, (cfg->net_ip >> 8) & 255,
				 cfg->net_ip & 255, cfg->net_prefix);
		log_info("config: nic=%s net_ip=%s net_gw=%u.%u.%u.%u receiver=%u.%u.%u.%u:%u net_selftest=%u net_bench=%u",
			 cfg->nic == CONFIG_NIC_AUTO ? "auto" : cfg->nic == CONFIG_NIC_OFF ? "off" :
			 cfg->nic == CONFIG_NIC_PCI ? "pci" : "mac", ip,
			 cfg->net_gw >> 24, (cfg->net_gw >> 16) & 255, (cfg->net_gw >> 8) & 255,
			 cfg->net_gw & 255,
			 cfg->receiver_ip >> 24, (cfg->receiver_ip >> 16) & 255,
			 (cfg->receiver_ip >> 8) & 255, cfg->receiver_ip & 255, cfg->receiver_port,
			 cfg->net_selftest, cfg->net_bench);
	}
	/* The key itself never goes to the log (the log travels with the trace). */
	log_info("config: machine=%s control_key=%s", cfg->machine,
		 cfg->control_key_len ? "set" : "none");
	log_info("config: poll_us=%u pci_hide=%u function(s)", cfg->poll_us, cfg->npci_hide);
}
