/* SPDX-License-Identifier: MIT */
/*
 * seeds.c - writes the fuzz targets' seed corpora (tests/build/fuzz.sh
 * runs it): small valid inputs of each format, made with the project's
 * own writers and libipt's encoder, so the fuzzers start inside the
 * formats instead of at random bytes.
 *
 *   seeds DIR   ->  DIR/{tvt,trace_read,serial,x86,pt,recv,proto,snap,syms}/NAME
 */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host-tools/lib/le.h"
#include "host-tools/lib/tvt.h"
#include "net/proto.h"
#include "vmm/trace/format.h"

static const char *dir;

static void put(const char *sub, const char *name, const void *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

/* A record stream: START, branches full and compact, IMAGE, MEM_WATCH, MEM, MEM_STATS, LOST, STOP. */
static size_t records(uint8_t *b)
{
	size_t n = 0;

#define HDR(type, info, aux, size) do { \
	b[n] = (type); b[n + 1] = (info); tvh_put_le16(b + n + 2, (size)); \
	tvh_put_le32(b + n + 4, (aux)); } while (0)
	HDR(TV_REC_START, 0, TV_TRIG_HYPERCALL, 32);
	tvh_put_le64(b + n + 8, 1000);
	tvh_put_le64(b + n + 16, 0x1000);
	tvh_put_le64(b + n + 24, 0);
	n += 32;
	HDR(TV_REC_BRANCH, TV_BR_CALL, TV_BRF_TSC, TV_REC_BRANCH_TSC_SIZE);
	tvh_put_le64(b + n + 8, 0x1004);
	tvh_put_le64(b + n + 16, 0x2000);
	tvh_put_le64(b + n + 24, 2000);
	n += TV_REC_BRANCH_TSC_SIZE;
	HDR(TV_REC_BRANCH_COMPACT, TV_BR_RET, 0x10, 16);
	tvh_put_le64(b + n + 8, 0x1009);
	n += 16;
	HDR(TV_REC_IMAGE, TV_IMG_FIRMWARE, 7, 40);
	tvh_put_le64(b + n + 8, 3000);
	tvh_put_le64(b + n + 16, 0x1000);
	tvh_put_le64(b + n + 24, 0x2000);
	memcpy(b + n + 32, "Dxe.dll\0", 8);
	n += 40;
	/* memory-access tracing: a watch with its label, two CPUs' worth of accesses, the counters */
	HDR(TV_REC_MEM_WATCH, TV_MEMW_ARM, 1u | TV_MEMW_MODE_RW << 16 | TV_MEMW_FROM_CONFIG << 24, 56);
	tvh_put_le64(b + n + 8, 3100);
	tvh_put_le64(b + n + 16, 0x10000);
	tvh_put_le64(b + n + 24, 0x11000);
	tvh_put_le64(b + n + 32, 0);
	tvh_put_le64(b + n + 40, 0);
	memcpy(b + n + 48, "buf\0\0\0\0\0", 8);
	n += 56;
	for (unsigned k = 0; k < 2; k++) {
		HDR(TV_REC_MEM, 4, TV_MEMF_WRITE | TV_MEMF_NEW | TV_MEMF_LINEAR |
		    (k ? TV_MEMF_READ | TV_MEMF_LOCK | TV_MEMF_OLD : 0) | 1u << TV_MEMF_ID_SHIFT, 72);
		tvh_put_le64(b + n + 8, 3200 + k);
		tvh_put_le64(b + n + 16, 0x1004);
		tvh_put_le64(b + n + 24, 0x3000);
		tvh_put_le64(b + n + 32, 0x7000010000ull + 8 * k);
		tvh_put_le64(b + n + 40, 0x10000 + 8 * k);
		tvh_put_le64(b + n + 48, 0);
		tvh_put_le64(b + n + 56, k);
		tvh_put_le64(b + n + 64, k + 1);
		n += 72;
	}
	HDR(TV_REC_MEM_STATS, 0, 0, 64);
	for (unsigned k = 0; k < 7; k++)
		tvh_put_le64(b + n + 8 + 8 * k, 3300 + k);
	n += 64;
	HDR(TV_REC_LOST, 0, 0, 24);
	tvh_put_le64(b + n + 8, 4000);
	tvh_put_le64(b + n + 16, 3);
	n += 24;
	HDR(TV_REC_STOP, 0, TV_TRIG_HYPERCALL, 32);
	tvh_put_le64(b + n + 8, 5000);
	tvh_put_le64(b + n + 16, 0x1009);
	tvh_put_le64(b + n + 24, 0);
	n += 32;
#undef HDR
	return n;
}

static void pt_seed(void)
{
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p;
	uint8_t buf[256];
	uint64_t off;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + sizeof(buf);
	e = pt_alloc_encoder(&cfg);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psb;
	pt_enc_next(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	pt_enc_next(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psbend;
	pt_enc_next(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tip_pge;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = 0x1000;
	pt_enc_next(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = 3;
	p.payload.tnt.payload = 0x6;    /* taken, taken, not taken */
	pt_enc_next(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tip_pgd;
	p.payload.ip.ipc = pt_ipc_suppressed;
	pt_enc_next(e, &p);
	pt_enc_get_offset(e, &off);
	pt_free_encoder(e);
	put("pt", "loop", buf, (size_t)off);
}

/* fuzz_recv: [source, length LE16, datagram]... : a HELLO, DATA out of order, a LOSS, a PT. */
static void recv_seed(const uint8_t *recs, size_t nrec)
{
	static uint8_t in[8192];
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_hello h = { .cpu_count = 2, .source = TV_SOURCE_MTF, .tsc_hz = 1000 };
	struct tvp_data d = { .count = 0 };
	struct tvp_loss l = { .first_seq = 40, .count = 3, .total = 3 };
	size_t n = 0, rl = 0;
	int len;

	memcpy(h.machine, "seed", 4);
	/* the first record only (a START): one whole record per DATA */
	rl = tvh_le16(recs + 2);
	(void)nrec;
	for (int k = 0; k < 6; k++) {
		uint16_t flags = 0;

		switch (k) {
		case 0:
			len = proto_encode_hello(b, sizeof(b), 0x5eed, &h);
			break;
		case 1: case 2: case 3:
			d.first_seq = (uint64_t)(3 - k) * 2;   /* 4, 2, 0: out of order */
			d.count = 1;
			flags = d.first_seq ? 0 : TVP_DATA_F_FIRST;
			len = proto_encode_data(b, sizeof(b), 0x5eed, 0, flags, &d, recs, rl);
			break;
		case 4:
			len = proto_encode_loss(b, sizeof(b), 0x5eed, 1, TVP_LOSS_F_FIRST, &l);
			break;
		default:
			len = proto_encode_pt_flags(b, sizeof(b), 0x5eed, 0, TVP_PT_F_FIRST, 0,
						    "\x02\x82\x02\x82", 4);
			break;
		}
		if (len <= 0 || n + 3 + (size_t)len > sizeof(in))
			continue;
		in[n] = (uint8_t)(4 | (k & 3));
		tvh_put_le16(in + n + 1, (uint16_t)len);
		memcpy(in + n + 3, b, (size_t)len);
		n += 3 + (size_t)len;
	}
	put("recv", "session", in, n);
}

/* fuzz_proto: [flags, datagram]: one of each type, CONTROL with each op; a sealed-path sequence. */
static void proto_seed(const uint8_t *recs)
{
	static const char *const names[] = {
		"hello", "hello-ack", "data", "pt", "ack", "heartbeat", "loss", "control-reply",
		"control-nop", "control-start", "control-stop", "control-filters",
		"control-marker", "control-mem-watch",
	};
	static const uint8_t key[] = "seed-key";
	uint8_t b[1 + TVP_MAX_DATAGRAM], args[TVP_CTL_ARGS_MAX];
	struct tvp_hello h = { .cpu_count = 2, .source = TV_SOURCE_PT, .tsc_hz = 1000 };
	struct tvp_data d = { .first_seq = 0, .count = 1 };
	struct tvp_ack a = { .cum = 3, .highest = 9, .nranges = 2 };  /* missing: [3,5) [6,8) */
	struct tvp_range rg[2] = { { 3, 5 }, { 6, 8 } };
	struct tvp_heartbeat hb = { .tsc = 77, .ncpus = 2 };
	struct tvp_hb_cpu hc[2] = { { .cpu = 0, .produced = 9, .sent = 9 }, { .cpu = 1 } };
	struct tvp_loss l = { .first_seq = 40, .count = 3, .total = 3 };
	struct tvp_control_reply cr = { .counter = 4, .op = TVP_CTL_MARKER, .status = 0 };
	struct tvp_control c = { .counter = 1 };
	struct tvp_ctl_cpus cpus = { .mask = { 3 } };
	struct tvp_ctl_filter fl = { .cpl = 9 /* TRACE_CPL_ALL */, .nranges = 1, .ranges = { { 0x1000, 0x1fff } } };
	struct tvp_ctl_marker mk = { .value = 42, .cpu = TVP_CPU_ALL, .label_len = 5 };
	struct tvp_ctl_mem_watch mw = { .lo = 0x10000, .hi = 0x11000, .op = TV_MEMW_ARM,
					.mode = TV_MEMW_MODE_RW, .label_len = 3 };
	uint8_t *o = b + 1;
	size_t cap = TVP_MAX_DATAGRAM;

	memcpy(h.machine, "seed", 4);
	for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		int len;

		c.counter = k;
		switch (k) {
		case 0: len = proto_encode_hello(o, cap, 0x5eed, &h); break;
		case 1: len = proto_encode_hello_ack(o, cap, 0x5eed, 1); break;
		case 2: len = proto_encode_data(o, cap, 0x5eed, 0, TVP_DATA_F_FIRST, &d, recs,
						tvh_le16(recs + 2)); break;
		case 3: len = proto_encode_pt_flags(o, cap, 0x5eed, 1, TVP_PT_F_FIRST, 0,
						    "\x02\x82\x02\x82", 4); break;
		case 4: len = proto_encode_ack(o, cap, 0x5eed, 0, &a, rg); break;
		case 5: len = proto_encode_heartbeat(o, cap, 0x5eed, &hb, hc); break;
		case 6: len = proto_encode_loss(o, cap, 0x5eed, 1, TVP_LOSS_F_FIRST, &l); break;
		case 7: len = proto_encode_control_reply(o, cap, 0x5eed, &cr); break;
		case 8:
			c.op = TVP_CTL_NOP;
			c.arg_len = 0;
			len = proto_encode_control(o, cap, 0x5eed, &c, args, key, sizeof(key) - 1);
			break;
		case 9: case 10:
			c.op = k == 9 ? TVP_CTL_START : TVP_CTL_STOP;
			c.arg_len = sizeof(cpus);
			memcpy(args, &cpus, sizeof(cpus));
			len = proto_encode_control(o, cap, 0x5eed, &c, args, key, sizeof(key) - 1);
			break;
		case 11:
			c.op = TVP_CTL_FILTERS;
			c.arg_len = sizeof(fl);
			memcpy(args, &fl, sizeof(fl));
			len = proto_encode_control(o, cap, 0x5eed, &c, args, key, sizeof(key) - 1);
			break;
		case 12:
			c.op = TVP_CTL_MARKER;
			c.arg_len = sizeof(mk) + mk.label_len;
			memcpy(args, &mk, sizeof(mk));
			memcpy(args + sizeof(mk), "phase", 5);
			len = proto_encode_control(o, cap, 0x5eed, &c, args, key, sizeof(key) - 1);
			break;
		default:
			c.op = TVP_CTL_MEM_WATCH;
			c.arg_len = sizeof(mw) + mw.label_len;
			memcpy(args, &mw, sizeof(mw));
			memcpy(args + sizeof(mw), "buf", 3);
			len = proto_encode_control(o, cap, 0x5eed, &c, args, key, sizeof(key) - 1);
			break;
		}
		if (len <= 0) {
			fprintf(stderr, "seeds: proto %s: encoder error %d\n", names[k], len);
			exit(1);
		}
		b[0] = 0;
		put("proto", names[k], b, 1 + (size_t)len);
	}
	{
		/* Flag 2: the sealed path's packet numbers [op, v16]: 1, 1 again,
		 * 5, a damaged one, a jump of 2^40, one just below the top. */
		static const uint8_t sealed[] = {
			2, 0x80, 1, 0, 0x80, 1, 0, 0x80, 5, 0, 0x20 | 3, 7, 0,
			0x40, 1, 0, 0, 0xff, 0xff,
		};

		put("proto", "sealed-window", sealed, sizeof(sealed));
	}
}

/* fuzz_snap: a .tvt whose CPU 0 executed one code page, sent whole (8 chunks with the right hash), and a second page whose last chunk never came. */
static void snap_seed(void)
{
	static uint8_t page[TV_CODE_PAGE], recs[2 * (48 + 8 * 528)];
	struct tvt_file_info info = { .trace_version = TV_TRACE_VERSION,
				      .machine = "seed", .session_id = 2 };
	struct tvt_writer w;
	char *tvt = NULL;
	size_t tlen = 0, n = 0;
	FILE *f;

	for (unsigned i = 0; i < TV_CODE_PAGE; i++)
		page[i] = (uint8_t)(i % 7 == 0 ? 0xc3 : 0x90);
	for (unsigned p = 0; p < 2; p++) {
		uint64_t hash = tv_code_hash(page) + p;

		recs[n] = TV_REC_CODE;
		recs[n + 1] = 0;
		tvh_put_le16(recs + n + 2, 48);
		tvh_put_le32(recs + n + 4, 0);
		tvh_put_le64(recs + n + 8, 1000 + p);
		tvh_put_le64(recs + n + 16, 0x200000 + 0x1000 * p);
		tvh_put_le64(recs + n + 24, 0xffffffff81000000ull + 0x1000 * p);
		tvh_put_le64(recs + n + 32, 0x3000);
		tvh_put_le64(recs + n + 40, hash);
		n += 48;
		for (unsigned k = 0; k < 8 - p; k++) {
			recs[n] = TV_REC_CODE_DATA;
			recs[n + 1] = 0;
			tvh_put_le16(recs + n + 2, 528);
			tvh_put_le32(recs + n + 4, k);
			tvh_put_le64(recs + n + 8, hash);
			memcpy(recs + n + 16, page + k * TV_CODE_CHUNK, TV_CODE_CHUNK);
			n += 528;
		}
	}
	f = open_memstream(&tvt, &tlen);
	tvt_writer_init(&w, f, &info);
	tvt_write_chunk(&w, 0, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, recs, n);
	tvt_writer_finish(&w);
	fclose(f);
	/* Probes (fuzz_snap reads its last 256 bytes as cr3, ip, tsc): the page's own. */
	put("snap", "two-pages", tvt, tlen);
	free(tvt);
}

/* fuzz_syms: [reader, file]: /proc/kallsyms and System.map lines. */
static void syms_seed(void)
{
	static const char ks[] =
		"\0ffffffff81000000 T _text\n"
		"ffffffff81000000 T startup_64\n"
		"ffffffff81001000 t helper\n"
		"ffffffff81a00000 D some_data\n"
		"ffffffff81b00000 B bss_thing\n"
		"ffffffff81c00000 T _etext\n"
		"ffffffffc0000000 t mod_fn\t[e1000]\n";
	static const char sm[] =
		"\1ffffffff81000000 T _text\n"
		"ffffffff81000040 T secondary_startup_64\n"
		"ffffffff81200000 r rodata_x\n"
		"ffffffff81c00000 T _etext\n";

	put("syms", "kallsyms", ks, sizeof(ks) - 1);
	put("syms", "system-map", sm, sizeof(sm) - 1);
}

int main(int argc, char **argv)
{
	static uint8_t recs[1024];
	size_t nrec;
	struct tvt_file_info info = { .trace_version = TV_TRACE_VERSION,
				      .machine = "seed", .session_id = 1 };
	struct tvt_writer w;
	char *tvt = NULL;
	size_t tlen = 0;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	mkdir(dir, 0755);
	nrec = records(recs);
	put("trace_read", "records", recs, nrec);

	f = open_memstream(&tvt, &tlen);
	tvt_writer_init(&w, f, &info);
	tvt_write_chunk(&w, 0, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, recs, nrec);
	tvt_write_chunk(&w, 1, TVT_KIND_RECORDS, 0, 5, recs, nrec);
	tvt_write_chunk(&w, 0, TVT_KIND_PT, 0, 0, "\x02\x82\x02\x82", 4);
	tvt_writer_finish(&w);
	fclose(f);
	put("tvt", "two-cpus", tvt, tlen);
	free(tvt);

	/* Serial: text around TVT1 lines made by the hypervisor's encoder. */
	{
		static const char log[] =
			"BdsDxe: loading Boot0001\r\n"
			"TVT1 R 0 0 0 deadbeef AAAA\r\n"
			"[info] trace: cpu 0: window 1 started\n";
		put("serial", "noise", log, sizeof(log) - 1);
	}
	{
		static const uint8_t x86[][8] = {
			{ 0x74, 0xfe }, { 0xe8, 1, 0, 0, 0 }, { 0xc3 }, { 0xff, 0xe0 },
			{ 0x66, 0x0f, 0x84, 1, 0 }, { 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0 },
			{ 0x0f, 0x05 }, { 0xcd, 0x80 },
		};
		static const size_t lens[] = { 2, 5, 1, 2, 5, 8, 2, 2 };
		char name[16];

		for (unsigned i = 0; i < 8; i++) {
			snprintf(name, sizeof(name), "insn%u", i);
			put("x86", name, x86[i], lens[i]);
		}
	}
	pt_seed();
	recv_seed(recs, nrec);
	proto_seed(recs);
	snap_seed();
	syms_seed();
	return 0;
}
