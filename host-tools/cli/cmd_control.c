/* SPDX-License-Identifier: MIT */
/*
 * cmd_control.c - `tracevisor control`: one authenticated CONTROL message
 * to a traced machine (docs/PROTOCOL.md).  The options and the op's words
 * are parsed here; the message is net/proto.c's, the sending record.c's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/record.h"
#include "net/proto.h"

void control_usage(FILE *f)
{
	fputs(
"Usage: tracevisor control (--to ADDR:PORT --session ID | --capture DIR)\n"
"                          (--key FILE | --key-hex HEX) [--counter N] [--repeat N]\n"
"                          OP [ARGS]\n"
"\n"
"Send one authenticated CONTROL message (docs/PROTOCOL.md) to a machine\n"
"running tracevisor. The machine checks the HMAC-SHA256 tag with its\n"
"control_key, the session id (the boot) and the counter, applies the\n"
"command and sends its CONTROL_REPLY to its receiver: `tracevisor record`\n"
"prints it (\"control start (counter N) applied\"). A forged, replayed or\n"
"malformed command gets no reply at all, by design.\n"
"\n"
"Ops:\n"
"  nop                      check key and session, change nothing\n"
"  start CPUS               open a trace window (trigger \"receiver\") on CPUS:\n"
"                           \"all\", \"3\", \"0-3,8\"\n"
"  stop CPUS                close it\n"
"  marker VALUE [LABEL]     a MARKER record with VALUE (and LABEL, at most 256\n"
"                           bytes) in every traced CPU's stream, or --cpu N's\n"
"  filter CPL [CR3 [LO-HI]...]  replace the trace filter: CPL \"0\", \"3\" or\n"
"                           \"0,3\"; CR3 0 for any address space; up to 4\n"
"                           inclusive linear address ranges\n"
"  watch LO-HI[:r|w|rw] [LABEL]  watch guest-physical [LO, HI) (docs/MEMTRACE.md;\n"
"                           default rw): every access becomes a MEM record;\n"
"                           the machine picks the id, its MEM_WATCH record\n"
"                           in the capture names it ('tracevisor mem')\n"
"  unwatch ID               remove watch ID\n"
"  label LO-HI LABEL        name guest-physical [LO, HI) without watching it\n"
"\n"
"Options:\n"
"  -t, --to ADDR:PORT   the machine (the `peer` of its capture's meta.json)\n"
"      --session ID     its session id, hex (meta.json `session_id`)\n"
"      --capture DIR    take both from DIR/meta.json\n"
"      --key FILE       the control key: a file of hex digits, or raw bytes\n"
"      --key-hex HEX    the control key as hex digits\n"
"      --counter N      the command's counter (default: the wall clock in ns,\n"
"                       which is above any earlier command's)\n"
"      --repeat N       send it N times (the same counter: the machine applies\n"
"                       it once and answers each repeat); default 1\n"
"      --cpu N          marker: only CPU N's stream\n"
"  -h, --help           this text\n"
"\n"
"Exit status: 0 sent, 1 error, 2 usage.\n"
"\n"
"Example:\n"
"  tracevisor control --capture captures/lab-7-1a2b3c4d5e6f7081 --key lab.key \\\n"
"      marker 42 \"before the crash\"\n", f);
}

/* What the options name: the machine, the key, the counter. */
struct control_opts {
	struct sockaddr_in to;
	bool have_to;
	uint64_t session, counter, repeat, cpu;
	uint8_t key[REC_KEY_MAX];
	size_t keylen;
};

/* The op's argument, as proto_encode_control takes it. */
union control_args {
	struct tvp_ctl_cpus cpus;
	struct tvp_ctl_filter filter;
	struct {
		struct tvp_ctl_marker m;
		char label[TVP_LABEL_MAX];
	} marker;
	struct {
		struct tvp_ctl_mem_watch w;
		char label[TVP_LABEL_MAX];
	} mem;
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return !*s || *end || errno || *s == '-' ? -1 : 0;
}

/* One option: 0, -1 for a bad value, or the exit status to return. */
static int control_opt(int o, const char *arg, struct control_opts *co)
{
	char *end;
	int err;

	switch (o) {
	case 't':
		if (rec_parse_addr(arg, REC_DEFAULT_PORT, &co->to))
			return -1;
		co->have_to = true;
		return 0;
	case 's':
		errno = 0;
		co->session = strtoull(arg, &end, 16);
		return !*arg || *end || errno || !co->session ? -1 : 0;
	case 'c': {
		char path[4200];

		snprintf(path, sizeof(path), "%s/meta.json", arg);
		err = rec_capture_target(arg, &co->session, &co->to);
		if (err == -TVH_ERR_IO) {
			msg("%s: %s", path, strerror(errno));
			return EXIT_ERR;
		}
		if (err) {
			msg("%s: no session_id or peer", path);
			return EXIT_ERR;
		}
		co->have_to = true;
		return 0;
	}
	case 'k':
		err = rec_load_key(arg, co->key, &co->keylen);
		if (err) {
			msg("--key %s: %s", arg, err == -TVH_ERR_IO ? strerror(errno) :
			    "empty or longer than 256 bytes");
			return EXIT_USAGE;
		}
		return 0;
	case 'K':
		return rec_parse_key_hex(arg, co->key, &co->keylen) ? -1 : 0;
	case 'n':
		return parse_u64(arg, &co->counter) || !co->counter ? -1 : 0;
	case 'r':
		return parse_u64(arg, &co->repeat) || !co->repeat || co->repeat > 100 ? -1 : 0;
	case 'C':
		return parse_u64(arg, &co->cpu) || co->cpu >= TVP_MAX_CPUS ? -1 : 0;
	default:
		return -1;
	}
}

/* filter CPL [CR3 [LO-HI]...]: words[0..n), n >= 1. */
static int parse_filter(char **words, int n, struct tvp_ctl_filter *f)
{
	for (const char *cpl = words[0]; *cpl; cpl++) {
		if (*cpl == '0')
			f->cpl |= 1u << 0;
		else if (*cpl == '3')
			f->cpl |= 1u << 3;
		else if (*cpl != ',')
			return -1;
	}
	if (!f->cpl || (n > 1 && parse_u64(words[1], &f->cr3)))
		return -1;
	for (int i = 2; i < n; i++) {
		char lo_s[32];
		const char *dash = strchr(words[i], '-');
		uint64_t a, b;

		if (!dash || (size_t)(dash - words[i]) >= sizeof(lo_s))
			return -1;
		memcpy(lo_s, words[i], (size_t)(dash - words[i]));
		lo_s[dash - words[i]] = '\0';
		if (parse_u64(lo_s, &a) || parse_u64(dash + 1, &b) || a > b)
			return -1;
		f->ranges[f->nranges].lo = a;
		f->ranges[f->nranges].hi = b;
		f->nranges++;
	}
	return 0;
}

/* "LO-HI" with an optional ":r", ":w" or ":rw" (mode 0 when modes is false). */
static int parse_mem_range(const char *word, bool modes, struct tvp_ctl_mem_watch *w)
{
	char buf[80], *dash, *colon;

	if (strlen(word) >= sizeof(buf))
		return -1;
	strcpy(buf, word);
	colon = strchr(buf, ':');
	w->mode = modes ? TV_MEMW_MODE_RW : 0;
	if (colon) {
		*colon++ = '\0';
		if (!modes)
			return -1;
		w->mode = !strcmp(colon, "r") ? TV_MEMW_MODE_R : !strcmp(colon, "w") ? TV_MEMW_MODE_W :
			  !strcmp(colon, "rw") ? TV_MEMW_MODE_RW : 0;
		if (!w->mode)
			return -1;
	}
	dash = strchr(buf, '-');
	if (!dash)
		return -1;
	*dash++ = '\0';
	if (parse_u64(buf, &w->lo) || parse_u64(dash, &w->hi) || w->lo >= w->hi)
		return -1;
	return 0;
}

/* watch LO-HI[:MODE] [LABEL], label LO-HI LABEL, unwatch ID. */
static int parse_mem(const char *op, char **words, int n, struct tvp_control *c,
		     union control_args *args)
{
	struct tvp_ctl_mem_watch *w = &args->mem.w;
	size_t l = 0;
	uint64_t id;

	if (!strcmp(op, "unwatch")) {
		if (n != 1 || parse_u64(words[0], &id) || !id || id > UINT16_MAX)
			return -1;
		w->op = TV_MEMW_REMOVE;
		w->id = (uint16_t)id;
	} else {
		bool arm = !strcmp(op, "watch");

		if (arm ? n != 1 && n != 2 : n != 2)
			return -1;
		if (parse_mem_range(words[0], arm, w))
			return -1;
		w->op = arm ? TV_MEMW_ARM : TV_MEMW_LABEL;
		l = n == 2 ? strlen(words[1]) : 0;
		if (l > TVP_LABEL_MAX)
			return -1;
		memcpy(args->mem.label, n == 2 ? words[1] : "", l);
		w->label_len = (uint32_t)l;
	}
	c->op = TVP_CTL_MEM_WATCH;
	c->arg_len = (uint16_t)(sizeof(*w) + l);
	return 0;
}

/*
 * parse_op - OP and its n argument words into c (op, arg_len) and args;
 * cpu is --cpu's value (marker).  0, or -1: bad op or arguments.
 */
static int parse_op(const char *op, char **words, int n, uint64_t cpu,
		    struct tvp_control *c, union control_args *args)
{
	if (!strcmp(op, "nop") && n == 0) {
		c->op = TVP_CTL_NOP;
	} else if ((!strcmp(op, "start") || !strcmp(op, "stop")) && n == 1) {
		c->op = op[2] == 'a' ? TVP_CTL_START : TVP_CTL_STOP;
		c->arg_len = sizeof(args->cpus);
		if (rec_parse_cpus(words[0], args->cpus.mask))
			return -1;
	} else if (!strcmp(op, "marker") && (n == 1 || n == 2)) {
		size_t l = n == 2 ? strlen(words[1]) : 0;

		if (parse_u64(words[0], &args->marker.m.value) || l > TVP_LABEL_MAX)
			return -1;
		args->marker.m.cpu = (uint32_t)cpu;
		args->marker.m.label_len = (uint32_t)l;
		if (l)
			memcpy(args->marker.label, words[1], l);
		c->op = TVP_CTL_MARKER;
		c->arg_len = (uint16_t)(sizeof(args->marker.m) + l);
	} else if (!strcmp(op, "filter") && n > 0 && n <= 2 + (int)TVP_CTL_RANGES) {
		if (parse_filter(words, n, &args->filter))
			return -1;
		c->op = TVP_CTL_FILTERS;
		c->arg_len = sizeof(args->filter);
	} else if (!strcmp(op, "watch") || !strcmp(op, "unwatch") || !strcmp(op, "label")) {
		return parse_mem(op, words, n, c, args);
	} else {
		return -1;
	}
	return 0;
}

/* Build the CONTROL and send it: the exit status. */
static int control_send(const struct control_opts *co, const char *op,
			const struct tvp_control *c, const union control_args *args)
{
	uint8_t buf[TVP_MAX_DATAGRAM];
	const char *failed;
	char a[64];
	int len;

	len = proto_encode_control(buf, sizeof(buf), co->session, c, c->arg_len ? args : NULL,
				   co->key, co->keylen);
	if (len < 0) {
		msg("cannot build it: %s", proto_strerror(len));
		return EXIT_ERR;
	}
	if (rec_send_repeat(&co->to, buf, (size_t)len, co->repeat, &failed)) {
		msg("%s: %s", failed, strerror(errno));
		return EXIT_ERR;
	}
	rec_addr_str(&co->to, a, sizeof(a));
	printf("sent %s (counter %" PRIu64 ") to %s, session %016" PRIx64
	       "; its reply goes to the machine's receiver\n", op, co->counter, a, co->session);
	return EXIT_OK;
}

int cmd_control(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "to", required_argument, NULL, 't' },
		{ "session", required_argument, NULL, 's' },
		{ "capture", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "key-hex", required_argument, NULL, 'K' },
		{ "counter", required_argument, NULL, 'n' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct control_opts co = { .counter = rec_wall_ns(), .repeat = 1, .cpu = TVP_CPU_ALL };
	union control_args args;
	struct tvp_control c;
	const char *op;
	int o;

	memset(&args, 0, sizeof(args));
	memset(&c, 0, sizeof(c));
	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "+:t:h", lo, NULL)) != -1) {
		int ret;

		if (o == 'h') {
			control_usage(stdout);
			return EXIT_OK;
		}
		if (o == '?' || o == ':')
			return usage_error("bad option '%s'", argv[optind - 1]);
		ret = control_opt(o, optarg, &co);
		if (ret > 0)
			return ret;
		if (ret)
			return usage_error("bad value '%s' for %s", optarg, argv[optind - 1]);
	}
	if (!co.have_to || !co.session || !co.keylen || optind >= argc)
		return usage_error("needs the machine (--to and --session, or --capture), a key "
				   "and an op");
	op = argv[optind++];
	c.counter = co.counter;
	if (parse_op(op, argv + optind, argc - optind, co.cpu, &c, &args))
		return usage_error("bad op or arguments ('%s')", op);
	return control_send(&co, op, &c, &args);
}
