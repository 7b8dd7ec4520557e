/* SPDX-License-Identifier: MIT */
/*
 * config_trace.c - tracevisor.conf's trace keys (docs/CONFIG.md,
 * "Tracing"): the source, the ring, the start trigger, the filters, PT
 * options, the PMI, and their check against each other.  Pure.
 */
#include "vmm/config.h"
#include "vmm/config_keys.h"
#include "vmm/exit/preempt.h"

#include <stdio.h>
#include <string.h>

bool config_trace_cpu(const struct tv_config *cfg, uint32_t index)
{
	if (cfg->trace_all_cpus)
		return true;
	if (index >= CONFIG_TRACE_CPUS_MAX)
		return false;
	return (cfg->trace_cpus[index / 32] >> (index % 32)) & 1;
}

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
int config_key_source(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

int config_key_overflow(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (!strcmp(val, "stop")) {
		cfg->trace_overflow = TV_OVERFLOW_STOP;
		return 0;
	}
	if (!strcmp(val, "overwrite")) {
		cfg->trace_overflow = TV_OVERFLOW_OVERWRITE;
		return 0;
	}
	if (!strcmp(val, "wait")) {
		cfg->trace_overflow = TV_OVERFLOW_WAIT;
		return 0;
	}
	snprintf(err, errlen, "overflow must be wait, stop or overwrite");
	return -1;
}

int config_key_wait_ms(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (config_parse_u64(val, &n) || n < 1 || n > CONFIG_WAIT_MS_MAX) {
		snprintf(err, errlen, "wait_ms must be 1..%u milliseconds", CONFIG_WAIT_MS_MAX);
		return -1;
	}
	cfg->trace_wait_ms = (uint32_t)n;
	return 0;
}

int config_key_stall_tsc(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (!strcmp(val, "keep"))
		cfg->trace_stall_tsc = 0;
	else if (!strcmp(val, "hide"))
		cfg->trace_stall_tsc = 1;
	else {
		snprintf(err, errlen, "stall_tsc must be keep or hide");
		return -1;
	}
	return 0;
}

/* code_snapshots (docs/SNAPSHOTS.md): auto, on or off; auto = on with source = pt. */
int config_key_code_snapshots(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (!strcmp(val, "auto"))
		cfg->code_snapshots = TRACE_SNAP_AUTO;
	else if (!strcmp(val, "on"))
		cfg->code_snapshots = TRACE_SNAP_ON;
	else if (!strcmp(val, "off"))
		cfg->code_snapshots = TRACE_SNAP_OFF;
	else {
		snprintf(err, errlen, "code_snapshots must be auto, on or off");
		return -1;
	}
	return 0;
}

/*
 * A receiver means the trace streams while it is made: wait (nothing
 * lost while the receiver answers) unless the file says otherwise.
 */
void config_trace_finish(struct tv_config *cfg, const uint32_t line[CONFIG_NKEYS])
{
	if (!line[CONFIG_KEY_INDEX_overflow] && cfg->receiver_set)
		cfg->trace_overflow = TV_OVERFLOW_WAIT;
}

int config_key_trace_buffer_kb(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t kb;

	if (config_parse_u64(val, &kb) || kb < CONFIG_TRACE_BUFFER_KB_MIN ||
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
	return config_parse_u64(s, out);
}

int config_key_trace_start(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

int config_key_trace_stop_after(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (config_parse_u64(val, &n)) {
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
int config_key_pt_options(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

int config_key_trace_cpl(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

int config_key_trace_cr3(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

int config_key_trace_ip(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

int config_key_trace_cpus(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

int config_key_pt_drain_us(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t us;

	if (!strcmp(val, "auto")) {
		cfg->pt_drain_us = CONFIG_PT_DRAIN_US_AUTO;
		return 0;
	}
	if (config_parse_u64(val, &us) || (us && (us < PREEMPT_POLL_US_MIN || us > PREEMPT_POLL_US_MAX))) {
		snprintf(err, errlen, "pt_drain_us must be auto, 0 (off) or %u..%u microseconds",
			 PREEMPT_POLL_US_MIN, PREEMPT_POLL_US_MAX);
		return -1;
	}
	cfg->pt_drain_us = (uint32_t)us;
	return 0;
}

/* A power of two in lo..hi KiB into *out, or the error naming key. */
static int parse_kb(const char *key, const char *val, uint32_t lo, uint32_t hi, uint32_t *out,
		    char *err, size_t errlen)
{
	uint64_t kb;

	if (config_parse_u64(val, &kb) || kb < lo || kb > hi || (kb & (kb - 1))) {
		snprintf(err, errlen, "%s must be a power of two from %u to %u", key, lo, hi);
		return -1;
	}
	*out = (uint32_t)kb;
	return 0;
}

int config_key_pt_buffer_kb(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	return parse_kb("pt_buffer_kb", val, CONFIG_PT_BUFFER_KB_MIN, CONFIG_PT_BUFFER_KB_MAX,
			&cfg->pt_buffer_kb, err, errlen);
}

int config_key_pt_topa_kb(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	return parse_kb("pt_topa_kb", val, CONFIG_PT_TOPA_KB_MIN, CONFIG_PT_TOPA_KB_MAX,
			&cfg->pt_topa_kb, err, errlen);
}

int config_key_bts_buffer_kb(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	return parse_kb("bts_buffer_kb", val, CONFIG_BTS_BUFFER_KB_MIN, CONFIG_BTS_BUFFER_KB_MAX,
			&cfg->bts_buffer_kb, err, errlen);
}

uint32_t config_pt_buffer_kb(const struct tv_config *cfg)
{
	if (cfg->pt_buffer_kb)
		return cfg->pt_buffer_kb;
	/* unset: the user's trace_buffer_kb applies to PT too, never below today's 1 MiB */
	return cfg->trace_buffer_kb > CONFIG_PT_BUFFER_KB_FLOOR ? cfg->trace_buffer_kb :
								   CONFIG_PT_BUFFER_KB_FLOOR;
}

uint32_t config_pt_topa_kb(const struct tv_config *cfg)
{
	uint32_t ring = config_pt_buffer_kb(cfg), topa = ring / 4;

	if (cfg->pt_topa_kb && cfg->pt_topa_kb <= ring)
		return cfg->pt_topa_kb;
	if (topa < CONFIG_PT_TOPA_KB_MIN)
		topa = CONFIG_PT_TOPA_KB_MIN;   /* <= ring: pt_buffer_kb >= 16 */
	if (topa > CONFIG_PT_TOPA_KB_MAX)
		topa = CONFIG_PT_TOPA_KB_MAX;
	return topa;
}

uint32_t config_pt_drain_us(const struct tv_config *cfg)
{
	uint64_t us;

	if (cfg->pt_drain_us != CONFIG_PT_DRAIN_US_AUTO)
		return cfg->pt_drain_us;
	/* the time to fill the output at the assumed peak rate (config.h) */
	us = (uint64_t)config_pt_topa_kb(cfg) * 1000 / CONFIG_PT_PEAK_KB_PER_MS;
	if (us < PREEMPT_POLL_US_MIN)
		us = PREEMPT_POLL_US_MIN;
	if (us > PREEMPT_POLL_US_MAX)
		us = PREEMPT_POLL_US_MAX;
	return (uint32_t)us;
}

int config_key_pmi(struct tv_config *cfg, const char *val, char *err, size_t errlen)
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

int config_key_pmi_every(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	uint64_t n;

	if (config_parse_u64(val, &n) || n < 1 || n > CONFIG_PMI_EVERY_MAX) {
		snprintf(err, errlen, "pmi_every must be 1..%u records", CONFIG_PMI_EVERY_MAX);
		return -1;
	}
	cfg->trace_pmi_every = (uint32_t)n;
	return 0;
}


/*
 * mem_watch = 0xLO-0xHI[:r|w|rw] (docs/MEMTRACE.md): guest-physical
 * [LO, HI), LO < HI, below 2^52; mode rw by default.  One watch per line,
 * up to TRACE_MEM_WATCH_CONFIG_MAX lines.
 */
int config_key_mem_watch(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	char num[24];
	const char *dash = strchr(val, '-'), *colon = strchr(val, ':');
	struct trace_mem_watch w = { 0, 0, TV_MEMW_MODE_RW };
	size_t n;

	if (cfg->nmem_watch >= TRACE_MEM_WATCH_CONFIG_MAX) {
		snprintf(err, errlen, "mem_watch: at most %u lines", TRACE_MEM_WATCH_CONFIG_MAX);
		return -1;
	}
	if (!dash || (colon && colon < dash))
		goto bad;
	n = (size_t)(dash - val);
	if (!n || n >= sizeof(num))
		goto bad;
	memcpy(num, val, n);
	num[n] = '\0';
	if (strncmp(num, "0x", 2) || config_parse_u64(num, &w.lo))
		goto bad;
	n = colon ? (size_t)(colon - dash - 1) : strlen(dash + 1);
	if (!n || n >= sizeof(num))
		goto bad;
	memcpy(num, dash + 1, n);
	num[n] = '\0';
	if (strncmp(num, "0x", 2) || config_parse_u64(num, &w.hi))
		goto bad;
	if (colon) {
		if (!strcmp(colon + 1, "r"))
			w.mode = TV_MEMW_MODE_R;
		else if (!strcmp(colon + 1, "w"))
			w.mode = TV_MEMW_MODE_W;
		else if (!strcmp(colon + 1, "rw"))
			w.mode = TV_MEMW_MODE_RW;
		else
			goto bad;
	}
	if (w.lo >= w.hi || w.hi > (1ull << 52)) {
		snprintf(err, errlen, "mem_watch: the range must be LO < HI <= 2^52 (guest-physical, HI exclusive)");
		return -1;
	}
	cfg->mem_watch[cfg->nmem_watch++] = w;
	return 0;
bad:
	snprintf(err, errlen, "mem_watch must be 0xLO-0xHI[:r|w|rw] (hexadecimal, guest-physical, HI exclusive)");
	return -1;
}

/* mem_filter = none | sharing (mtrace's cache-line rule). */
int config_key_mem_filter(struct tv_config *cfg, const char *val, char *err, size_t errlen)
{
	if (!strcmp(val, "none"))
		cfg->mem_filter = TRACE_MEM_FILTER_NONE;
	else if (!strcmp(val, "sharing"))
		cfg->mem_filter = TRACE_MEM_FILTER_SHARING;
	else {
		snprintf(err, errlen, "mem_filter must be none or sharing");
		return -1;
	}
	return 0;
}

/*
 * The PMI keys against the source: a request no CPU could honour is an
 * error here, not a silent no-op at boot (source = auto is checked when
 * the source is chosen).
 */
void config_trace_check(const struct tv_config *cfg, const uint32_t line[CONFIG_NKEYS],
			struct config_result *res)
{
	uint32_t pmi = line[CONFIG_KEY_INDEX_pmi], every = line[CONFIG_KEY_INDEX_pmi_every];
	uint32_t topa = line[CONFIG_KEY_INDEX_pt_topa_kb];
	uint8_t src = cfg->trace_source;
	char names[64];

	source_names(names, sizeof(names), true, " and ");
	if (cfg->trace_pmi && src != TV_SOURCE_NONE && !tv_source_takes_pmi(src))
		config_add_error(res, pmi, "pmi = on applies to %s: source = %s takes no PMI",
				 names, tv_source_name(src));
	if (every && !cfg->trace_pmi)
		config_add_error(res, every, "pmi_every needs pmi = on");
	else if (every && src == TV_SOURCE_PT)
		config_add_error(res, every, "pmi_every sets the bts threshold or the lbr counter period: pt's PMI comes at a ToPA region's end");
	/* a drain empties the whole output into the ring: it must fit an empty one */
	/* memory watches single-step with MTF: the mtf source owns it */
	if (cfg->nmem_watch && src == TV_SOURCE_MTF)
		config_add_error(res, line[CONFIG_KEY_INDEX_mem_watch],
				 "mem_watch steps each watched access with MTF: it cannot be used with source = mtf (pick btf, lbr, bts, pt or auto)");
	if (topa && cfg->pt_topa_kb > config_pt_buffer_kb(cfg))
		config_add_error(res, topa, "pt_topa_kb %u > the PT ring's pt_buffer_kb %u%s: %u used",
				 cfg->pt_topa_kb, config_pt_buffer_kb(cfg),
				 line[CONFIG_KEY_INDEX_pt_buffer_kb] ? "" : " (from trace_buffer_kb)",
				 config_pt_topa_kb(cfg));
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

void config_log_trace(const struct tv_config *cfg)
{
	const struct trace_pt_opts *o = &cfg->trace_pt;
	char pt[64];
	int n;

	log_info("config: source=%s overflow=%s trace_buffer_kb=%u trace_start=%s%s%.0llx trace_stop_after=%llu trace_cpl=%s trace_cr3=%#llx trace_ip=%u range(s) trace_cpus=%s",
		 config_source_name(cfg->trace_source),
		 cfg->trace_overflow == TV_OVERFLOW_STOP ? "stop" :
		 cfg->trace_overflow == TV_OVERFLOW_WAIT ? "wait" : "overwrite",
		 cfg->trace_buffer_kb, config_start_name(cfg->trace_start),
		 cfg->trace_start == TV_TRIG_ADDRESS ? ":0x" : "",
		 (unsigned long long)cfg->trace_start_address,
		 (unsigned long long)cfg->trace_stop_after,
		 cfg->trace_filter.cpl == TRACE_CPL_KERNEL ? "kernel" :
		 cfg->trace_filter.cpl == TRACE_CPL_USER ? "user" : "all",
		 (unsigned long long)cfg->trace_filter.cr3, cfg->trace_filter.nranges,
		 cfg->trace_all_cpus ? "all" : "list");
	n = snprintf(pt, sizeof(pt), "%s,%s", o->tsc ? "tsc" : "notsc",
		     o->dis_retc ? "noretc" : "retc");
	if (o->mtc && n > 0 && (size_t)n < sizeof(pt))
		n += snprintf(pt + n, sizeof(pt) - (size_t)n, ",mtc=%u", o->mtc_freq);
	if (o->cyc && n > 0 && (size_t)n < sizeof(pt))
		n += snprintf(pt + n, sizeof(pt) - (size_t)n, ",cyc=%u", o->cyc_thresh);
	if (o->psb_freq && n > 0 && (size_t)n < sizeof(pt))
		snprintf(pt + n, sizeof(pt) - (size_t)n, ",psb=%u", o->psb_freq);
	if (cfg->trace_overflow == TV_OVERFLOW_WAIT || cfg->trace_stall_tsc)
		log_info("config: wait_ms=%u stall_tsc=%s", cfg->trace_wait_ms,
			 cfg->trace_stall_tsc ? "hide" : "keep");
	log_info("config: pt_options=%s pt_drain_us=%u%s pmi=%s pmi_every=%u", pt,
		 config_pt_drain_us(cfg), cfg->pt_drain_us == CONFIG_PT_DRAIN_US_AUTO ? " (auto)" : "",
		 cfg->trace_pmi ? "on" : "off", cfg->trace_pmi_every);
	log_info("config: pt_buffer_kb=%u%s pt_topa_kb=%u%s bts_buffer_kb=%u",
		 config_pt_buffer_kb(cfg), cfg->pt_buffer_kb ? "" : " (from trace_buffer_kb)",
		 config_pt_topa_kb(cfg), cfg->pt_topa_kb == config_pt_topa_kb(cfg) ? "" : " (derived)",
		 cfg->bts_buffer_kb);
	log_info("config: code_snapshots=%s",
		 cfg->code_snapshots == TRACE_SNAP_ON ? "on" :
		 cfg->code_snapshots == TRACE_SNAP_OFF ? "off" : "auto (on with source = pt)");
	for (unsigned i = 0; i < cfg->nmem_watch; i++)
		log_info("config: mem_watch=%#llx-%#llx:%s", (unsigned long long)cfg->mem_watch[i].lo,
			 (unsigned long long)cfg->mem_watch[i].hi,
			 cfg->mem_watch[i].mode == TV_MEMW_MODE_R ? "r" :
			 cfg->mem_watch[i].mode == TV_MEMW_MODE_W ? "w" : "rw");
	if (cfg->nmem_watch || cfg->mem_filter)
		log_info("config: mem_filter=%s",
			 cfg->mem_filter == TRACE_MEM_FILTER_SHARING ? "sharing" : "none");
}
