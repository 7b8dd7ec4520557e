/* SPDX-License-Identifier: MIT */
/*
 * cmd_record.c - `tracevisor record`: its options, usage text and exit
 * status around the library's receiver loop (receiver.h, docs/RECEIVER.md).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/receiver.h"
#include "host-tools/lib/record.h"

void record_usage(FILE *f)
{
	fputs(
"Usage: tracevisor record [-l ADDR:PORT] [-o DIR] [--key FILE | --key-hex HEX] [--auth]\n"
"                         [--machines N] [--duration S] [--idle S] [--quiet]\n"
"\n"
"Receive the trace of one or more machines running tracevisor over UDP (the\n"
"export protocol, docs/PROTOCOL.md) and write one capture directory per\n"
"session (one boot of one machine), docs/CAPTURE.md:\n"
"\n"
"  DIR/<machine>-<session id>/trace.tvt    every CPU's records (and PT), what\n"
"                                          'tracevisor dump' and the other\n"
"                                          commands read\n"
"  DIR/<machine>-<session id>/cpuN.pt      raw Intel PT bytes of CPU N\n"
"  DIR/<machine>-<session id>/meta.json    machine, CPU model, trace source,\n"
"                                          capabilities, TSC Hz, times\n"
"  DIR/<machine>-<session id>/losses.json  per CPU: received, duplicates,\n"
"                                          retransmit requests, records the\n"
"                                          machine declared lost (exact ranges),\n"
"                                          still missing at close; losses.txt\n"
"\n"
"Every datagram is acknowledged; missing ones are asked for again (NACK), so\n"
"a lossy network costs retransmissions, not records. The only records that\n"
"can be lost are those the machine's ring overwrote before the receiver\n"
"acknowledged them, and the machine says exactly which (losses.json).\n"
"Records are written as they arrive in order and flushed at least every\n"
"0.2 s: a crash or power cut loses at most that much.\n"
"\n"
"Options:\n"
"  -l, --listen ADDR:PORT  UDP address to listen on (default 0.0.0.0:6543, the\n"
"                          hypervisor's default `receiver =` port); ADDR alone\n"
"                          or :PORT also work\n"
"  -o, --output DIR        where session directories go (default: .)\n"
"      --key FILE          control key (hex digits, or raw bytes); needed only\n"
"                          to send CONTROL messages (--start)\n"
"      --key-hex HEX       the control key as hex digits\n"
"      --auth              with a key: the authenticated data path (every\n"
"                          datagram sealed with a session key derived from the\n"
"                          key; others are counted and dropped). The machine\n"
"                          must seal too (docs/PROTOCOL.md, \"With a key\")\n"
"      --start CPUS        with a key: send START for CPUS (\"all\", \"0-3,8\")\n"
"                          to every new session once its HELLO arrived\n"
"      --machines N        accept at most N machines (1 to 64: sessions whose\n"
"                          HELLO arrived), and exit once N of them have closed\n"
"                          (see --idle); default: no limit. At most 8 sessions\n"
"                          are open at a time\n"
"      --duration S        stop after S seconds (decimals allowed)\n"
"      --idle S            close a session after S seconds without a datagram\n"
"                          (its capture is then complete); default: at exit\n"
"      --status-interval S period of the plain status lines when stderr is not\n"
"                          a terminal (default 10)\n"
"      --rcvbuf BYTES      the socket's receive buffer (default 8 MiB; set with\n"
"                          SO_RCVBUFFORCE when allowed, else capped by\n"
"                          net.core.rmem_max)\n"
"  -q, --quiet             no progress and no summary (errors only)\n"
"  -h, --help              this text\n"
"\n"
"Progress: on a terminal one line on stderr is redrawn twice a second\n"
"(sessions, records and records/s, MB and MB/s of datagrams, retransmit\n"
"requests, records lost, datagrams rejected); otherwise a plain line every\n"
"--status-interval seconds.\n"
"\n"
"Ctrl-C (SIGINT) or SIGTERM: stop receiving, write what was received, print\n"
"each session's loss summary and capture directory on stdout, exit 0.\n"
"\n"
"Bad input: datagrams that fail to decode (length, magic, version, CRC,\n"
"fields, records, a CPU beyond 255) or that only a receiver sends are counted\n"
"by kind and dropped; they never create a session. The counts are in the\n"
"summary.\n"
"\n"
"Hostile input (docs/PROTOCOL.md, \"Threat model\"): without a key anyone on\n"
"the network can send datagrams. A session is bound to the address and port\n"
"of its first datagram: its id from anywhere else is dropped (\"foreign\"),\n"
"so a HELLO or LOSS with a known id cannot rename, retarget or cut a session\n"
"(only a session that never sent a HELLO gives way to a HELLO). Sessions that\n"
"never said HELLO give way to new ones and do not count for --machines;\n"
"replies to an address never exceed 3 times what it sent (no amplifier).\n"
"\n"
"Exit status: 0 ok (also after Ctrl-C), 1 socket or capture write error,\n"
"2 usage.\n"
"\n"
"Example:\n"
"  tracevisor record -o captures --machines 1 --idle 10\n"
"  tracevisor dump captures/lab-7-1a2b3c4d5e6f7081/trace.tvt\n", f);
}

/* The options the library's receiver takes (receiver.h); 2 on a bad one. */
static int record_opt(int o, const char *arg, struct tvh_record_opts *ro)
{
	char *end;
	int err;

	switch (o) {
	case 'l':
		return rec_parse_addr(arg, REC_DEFAULT_PORT, &ro->listen) ? -1 : 0;
	case 'o':
		ro->outdir = arg;
		return 0;
	case 'k':
		err = rec_load_key(arg, ro->key, &ro->keylen);
		if (err) {
			msg("--key %s: %s", arg, err == -TVH_ERR_IO ? strerror(errno) :
			    "empty or longer than 256 bytes");
			return EXIT_USAGE;
		}
		return 0;
	case 'K':
		return rec_parse_key_hex(arg, ro->key, &ro->keylen) ? -1 : 0;
	case 'A':
		ro->auth = true;
		return 0;
	case 'S':
		if (rec_parse_cpus(arg, ro->start_cpus.mask))
			return -1;
		ro->start = true;
		return 0;
	case 'm':
		ro->machines = (unsigned)strtoul(arg, &end, 10);
		return *end || !*arg || ro->machines > REC_MAX_SESSIONS ? -1 : 0;
	case 'd':
	case 'i':
	case 'I': {
		double v = strtod(arg, &end);

		if (*end || !*arg || !(v > 0) || v > 1e7)
			return -1;
		if (o == 'd')
			ro->duration = v;
		else if (o == 'i')
			ro->idle = v;
		else
			ro->status_every = v;
		return 0;
	}
	case 'B': {
		unsigned long v = strtoul(arg, &end, 0);

		if (*end || !*arg || v < 65536 || v > (1ul << 30))
			return -1;
		ro->rcvbuf = (int)v;
		return 0;
	}
	case 'q':
		ro->quiet = true;
		return 0;
	default:
		return -1;
	}
}

int cmd_record(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "output", required_argument, NULL, 'o' },
		{ "key", required_argument, NULL, 'k' },
		{ "key-hex", required_argument, NULL, 'K' },
		{ "auth", no_argument, NULL, 'A' },
		{ "start", required_argument, NULL, 'S' },
		{ "machines", required_argument, NULL, 'm' },
		{ "duration", required_argument, NULL, 'd' },
		{ "idle", required_argument, NULL, 'i' },
		{ "status-interval", required_argument, NULL, 'I' },
		{ "rcvbuf", required_argument, NULL, 'B' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct tvh_record_opts ro;
	int o;

	tvh_record_opts_init(&ro);
	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":l:o:qh", lo, NULL)) != -1) {
		int ret;

		if (o == 'h') {
			record_usage(stdout);
			return EXIT_OK;
		}
		if (o == ':')
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		if (o == '?')
			return usage_error("unknown option '%s'", argv[optind - 1]);
		ret = record_opt(o, optarg, &ro);
		if (ret > 0)
			return ret;
		if (ret)
			return usage_error("bad value '%s' for %s", optarg, argv[optind - 1]);
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if ((ro.start || ro.auth) && !ro.keylen) {
		msg("%s needs --key or --key-hex", ro.auth ? "--auth" : "--start");
		return EXIT_USAGE;
	}
	if (!ro.auth && !ro.quiet)
		msg("unauthenticated mode: anyone on the network can send datagrams as a "
		    "machine (docs/PROTOCOL.md, \"Threat model\"; --auth with a key)");
	return tvh_record_run(&ro) ? EXIT_ERR : EXIT_OK;
}
