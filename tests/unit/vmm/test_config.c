/* SPDX-License-Identifier: MIT */
/*
 * test_config.c - tracevisor.conf parsing (vmm/config.c, config_trace.c,
 * config_net.c): defaults, every key with good and bad values, the syntax
 * rules of docs/CONFIG.md, error line numbers, random input, and the
 * source keywords against TV_SOURCE_LIST.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/config.h"

static struct tv_config cfg;
static struct config_result res;

/* Parse a NUL-terminated text on top of the defaults. */
static uint32_t parse(const char *text)
{
	config_defaults(&cfg);
	return config_parse(&cfg, text, strlen(text), &res);
}

/* Parse exactly len bytes (the text may hold NULs). */
static uint32_t parse_n(const char *text, size_t len)
{
	config_defaults(&cfg);
	return config_parse(&cfg, text, len, &res);
}

static void assert_defaults(const struct tv_config *c)
{
	assert_string_equal(c->loader, "");
	assert_int_equal(c->log_level, LOG_INFO);
	assert_int_equal(c->serial_port, 0x3f8);
	assert_true(c->console);
	assert_int_equal(c->log_ring_kb, 256);
	assert_true(c->vmx);
	assert_int_equal(c->heartbeat_s, 0);
	assert_int_equal(c->trace_source, TV_SOURCE_NONE);
	assert_int_equal(c->trace_overflow, TV_OVERFLOW_OVERWRITE);
	assert_int_equal(c->trace_start, TV_TRIG_HYPERCALL);
	assert_int_equal(c->trace_start_address, 0);
	assert_int_equal(c->trace_buffer_kb, 1024);
	assert_int_equal(c->trace_stop_after, 0);
	assert_int_equal(c->trace_filter.cpl, TRACE_CPL_ALL);
	assert_int_equal(c->trace_filter.cr3, 0);
	assert_int_equal(c->trace_filter.nranges, 0);
	assert_true(c->trace_all_cpus);
	assert_true(config_trace_cpu(c, 0));
	assert_true(config_trace_cpu(c, 255));
}

/* Exactly one error, on line, whose message contains needle. */
static void assert_one_error(uint32_t line, const char *needle)
{
	assert_int_equal(res.nerrors, 1);
	assert_int_equal(res.errors[0].line, line);
	if (!strstr(res.errors[0].msg, needle))
		fail_msg("error message \"%s\" lacks \"%s\"", res.errors[0].msg, needle);
}

/* --- defaults and good input ------------------------------------------------ */

static void test_defaults(void **state)
{
	(void)state;
	memset(&cfg, 0xa5, sizeof(cfg));
	config_defaults(&cfg);
	assert_defaults(&cfg);
}

static void test_empty_file(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(res.nerrors, 0);
	assert_defaults(&cfg);
	/* A NULL text of length 0 is an empty file too. */
	config_defaults(&cfg);
	assert_int_equal(config_parse(&cfg, NULL, 0, &res), 0);
	assert_defaults(&cfg);
}

static void test_only_comments_and_blank_lines(void **state)
{
	(void)state;
	assert_int_equal(parse("# tracevisor.conf\n"
			       "; another comment style\n"
			       "\n"
			       "   \t  \n"
			       "   # indented comment with key = value inside\n"
			       "\t; serial = com2\n"), 0);
	assert_defaults(&cfg);
}

static void test_every_key_good(void **state)
{
	(void)state;
	assert_int_equal(parse("loader = \\EFI\\debian\\grubx64.efi\n"
			       "log_level = debug\n"
			       "serial = com2\n"
			       "console = off\n"
			       "log_ring_kb = 1024\n"
			       "vmx = off\n"), 0);
	assert_string_equal(cfg.loader, "\\EFI\\debian\\grubx64.efi");
	assert_int_equal(cfg.log_level, LOG_DEBUG);
	assert_int_equal(cfg.serial_port, 0x2f8);
	assert_false(cfg.console);
	assert_int_equal(cfg.log_ring_kb, 1024);
	assert_false(cfg.vmx);
}

static void test_loader_slashes_become_backslashes(void **state)
{
	(void)state;
	assert_int_equal(parse("loader=/EFI/Microsoft/Boot/bootmgfw.efi\n"), 0);
	assert_string_equal(cfg.loader, "\\EFI\\Microsoft\\Boot\\bootmgfw.efi");
	/* Mixed separators, spaces inside the path kept. */
	assert_int_equal(parse("loader = /EFI\\my os/boot.efi   \n"), 0);
	assert_string_equal(cfg.loader, "\\EFI\\my os\\boot.efi");
}

static void test_loader_length_limits(void **state)
{
	char text[CONFIG_PATH_MAX + 32];
	char path[CONFIG_PATH_MAX + 1];

	(void)state;
	/* 255 characters fit (CONFIG_PATH_MAX - 1). */
	memset(path, 'a', sizeof(path));
	path[0] = '\\';
	path[CONFIG_PATH_MAX - 1] = '\0';
	snprintf(text, sizeof(text), "loader = %s\n", path);
	assert_int_equal(parse(text), 0);
	assert_int_equal(strlen(cfg.loader), CONFIG_PATH_MAX - 1);
	/* 256 do not. */
	path[CONFIG_PATH_MAX - 1] = 'a';
	path[CONFIG_PATH_MAX] = '\0';
	snprintf(text, sizeof(text), "loader = %s\n", path);
	assert_int_equal(parse(text), 1);
	assert_one_error(1, "1..255 characters");
	assert_string_equal(cfg.loader, "");
}

static void test_log_levels(void **state)
{
	static const struct { const char *v; enum log_level l; } t[] = {
		{ "err", LOG_ERR }, { "warn", LOG_WARN }, { "info", LOG_INFO }, { "debug", LOG_DEBUG },
	};
	char text[64];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "log_level = %s\n", t[i].v);
		assert_int_equal(parse(text), 0);
		assert_int_equal(cfg.log_level, t[i].l);
	}
}

static void test_serial_values(void **state)
{
	static const struct { const char *v; uint16_t port; } t[] = {
		{ "off", 0 }, { "none", 0 }, { "com1", 0x3f8 }, { "com2", 0x2f8 },
		{ "com3", 0x3e8 }, { "com4", 0x2e8 }, { "0x3F8", 0x3f8 }, { "0X2f8", 0x2f8 },
		{ "1016", 0x3f8 }, { "0x1", 1 }, { "0xfff8", 0xfff8 }, { "65528", 0xfff8 },
	};
	char text[64];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "serial = %s\n", t[i].v);
		assert_int_equal(parse(text), 0);
		assert_int_equal(cfg.serial_port, t[i].port);
	}
}

static void test_bool_spellings(void **state)
{
	static const struct { const char *v; bool b; } t[] = {
		{ "on", true }, { "yes", true }, { "true", true }, { "1", true },
		{ "off", false }, { "no", false }, { "false", false }, { "0", false },
	};
	char text[64];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "console = %s\nvmx = %s\n", t[i].v, t[i].v);
		assert_int_equal(parse(text), 0);
		assert_int_equal(cfg.console, t[i].b);
		assert_int_equal(cfg.vmx, t[i].b);
	}
}

static void test_log_ring_kb_powers_of_two(void **state)
{
	char text[64];

	(void)state;
	for (uint32_t kb = 4; kb <= 4096; kb *= 2) {
		snprintf(text, sizeof(text), "log_ring_kb = %u\n", kb);
		assert_int_equal(parse(text), 0);
		assert_int_equal(cfg.log_ring_kb, kb);
	}
	assert_int_equal(parse("log_ring_kb = 0x400\n"), 0);
	assert_int_equal(cfg.log_ring_kb, 1024);
}

static void test_heartbeat_values(void **state)
{
	(void)state;
	assert_int_equal(parse("heartbeat_s = 5\n"), 0);
	assert_int_equal(cfg.heartbeat_s, 5);
	assert_int_equal(parse("heartbeat_s = 3600\n"), 0);
	assert_int_equal(cfg.heartbeat_s, 3600);
	assert_int_equal(parse("heartbeat_s = off\n"), 0);
	assert_int_equal(cfg.heartbeat_s, 0);
	assert_int_equal(parse("heartbeat_s = 0\n"), 0);
	assert_int_equal(cfg.heartbeat_s, 0);
}

static void test_quotes_and_trailing_comments(void **state)
{
	(void)state;
	assert_int_equal(parse("loader = \"\\EFI\\a#b;c\\x.efi\"   # quoted: # kept\n"
			       "serial = com2   # the debug header\n"
			       "log_level = warn\t; semicolon comment after a tab\n"
			       "console = \"off\"\n"
			       "vmx=\"on\";comment right after the quote\n"), 0);
	assert_string_equal(cfg.loader, "\\EFI\\a#b;c\\x.efi");
	assert_int_equal(cfg.serial_port, 0x2f8);
	assert_int_equal(cfg.log_level, LOG_WARN);
	assert_false(cfg.console);
	assert_true(cfg.vmx);
}

static void test_hash_without_space_is_part_of_value(void **state)
{
	(void)state;
	/* '#' only starts a comment after whitespace. */
	assert_int_equal(parse("loader = \\EFI\\c#sharp.efi\n"), 0);
	assert_string_equal(cfg.loader, "\\EFI\\c#sharp.efi");
	assert_int_equal(parse("serial = com1#x\n"), 1);
	assert_one_error(1, "serial must be");
}

static void test_crlf_bom_tabs(void **state)
{
	(void)state;
	assert_int_equal(parse("\xef\xbb\xbf"
			       "\tlog_level\t=\tdebug\t\r\n"
			       "serial = com3\r\n"
			       "  loader = /boot.efi  \r\n"
			       "\r\n"
			       "# c\r\n"), 0);
	assert_int_equal(cfg.log_level, LOG_DEBUG);
	assert_int_equal(cfg.serial_port, 0x3e8);
	assert_string_equal(cfg.loader, "\\boot.efi");
}

static void test_bom_only_at_start(void **state)
{
	(void)state;
	/* A BOM on line 2 is not skipped: its bytes make a bad key. */
	assert_int_equal(parse("vmx = off\n\xef\xbb\xbfserial = com2\n"), 1);
	assert_one_error(2, "bad character in key");
	assert_false(cfg.vmx);
	assert_int_equal(cfg.serial_port, 0x3f8);
	/* A lone BOM is an empty file. */
	assert_int_equal(parse("\xef\xbb\xbf"), 0);
	assert_defaults(&cfg);
}

static void test_no_trailing_newline(void **state)
{
	(void)state;
	assert_int_equal(parse("console = off\nlog_ring_kb = 64"), 0);
	assert_false(cfg.console);
	assert_int_equal(cfg.log_ring_kb, 64);
	/* and an error on that last line gets its number */
	assert_int_equal(parse("console = off\n\nlog_ring_kb = 65"), 1);
	assert_one_error(3, "log_ring_kb");
	assert_int_equal(cfg.log_ring_kb, 256);
}

static void test_applies_on_top_of_existing_config(void **state)
{
	(void)state;
	config_defaults(&cfg);
	cfg.serial_port = 0x2e8;
	cfg.log_ring_kb = 8;
	assert_int_equal(config_parse(&cfg, "vmx = off\n", 10, &res), 0);
	assert_int_equal(cfg.serial_port, 0x2e8);
	assert_int_equal(cfg.log_ring_kb, 8);
	assert_false(cfg.vmx);
}

static void test_len_bounds_the_text(void **state)
{
	const char text[] = "vmx = off\nserial = com2\n";

	(void)state;
	/* Only the first line is inside len; the rest must not be read. */
	assert_int_equal(parse_n(text, 10), 0);
	assert_false(cfg.vmx);
	assert_int_equal(cfg.serial_port, 0x3f8);
	/* Cut in the middle of a value: "ser" is a line without '='. */
	assert_int_equal(parse_n(text, 13), 1);
	assert_one_error(2, "expected `key = value`");
}


/* --- tracing keys ---------------------------------------------------------------- */

static void test_trace_source_and_overflow(void **state)
{
	static const struct { const char *v; enum tv_source s; } t[] = {
		{ "auto", TV_SOURCE_NONE }, { "mtf", TV_SOURCE_MTF }, { "btf", TV_SOURCE_BTF },
		{ "lbr", TV_SOURCE_LBR }, { "bts", TV_SOURCE_BTS }, { "pt", TV_SOURCE_PT },
	};
	char text[64];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "source = %s\n", t[i].v);
		assert_int_equal(parse(text), 0);
		assert_int_equal(cfg.trace_source, t[i].s);
	}
	assert_int_equal(parse("overflow = stop\n"), 0);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_STOP);
	assert_int_equal(parse("overflow = overwrite\n"), 0);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_OVERWRITE);
}

static void test_trace_buffer_kb(void **state)
{
	char text[64];

	(void)state;
	for (uint32_t kb = CONFIG_TRACE_BUFFER_KB_MIN; kb <= CONFIG_TRACE_BUFFER_KB_MAX; kb *= 2) {
		snprintf(text, sizeof(text), "trace_buffer_kb = %u\n", kb);
		assert_int_equal(parse(text), 0);
		assert_int_equal(cfg.trace_buffer_kb, kb);
	}
	assert_int_equal(parse("trace_buffer_kb = 0x100000\n"), 0);
	assert_int_equal(cfg.trace_buffer_kb, 1024 * 1024);
}

static void test_trace_start(void **state)
{
	(void)state;
	assert_int_equal(parse("trace_start = boot\n"), 0);
	assert_int_equal(cfg.trace_start, TV_TRIG_BOOT);
	assert_int_equal(parse("trace_start = hypercall\n"), 0);
	assert_int_equal(cfg.trace_start, TV_TRIG_HYPERCALL);
	assert_int_equal(parse("trace_start = exit_boot_services\n"), 0);
	assert_int_equal(cfg.trace_start, TV_TRIG_EXIT_BOOT_SERVICES);
	assert_int_equal(parse("trace_start = kernel_entry\n"), 0);
	assert_int_equal(cfg.trace_start, TV_TRIG_KERNEL_ENTRY);
	assert_int_equal(parse("trace_start = address:0xffffffff81000000\n"), 0);
	assert_int_equal(cfg.trace_start, TV_TRIG_ADDRESS);
	assert_int_equal(cfg.trace_start_address, 0xffffffff81000000ull);
	assert_int_equal(parse("trace_start = address:0x7ffffffff000\n"), 0);
	assert_int_equal(cfg.trace_start_address, 0x7ffffffff000ull);
	/* the address is dropped when another trigger is set */
	config_defaults(&cfg);
	assert_int_equal(config_parse(&cfg, "trace_start = address:0x1000\n", 29, &res), 0);
	assert_int_equal(config_parse(&cfg, "trace_start = boot\n", 19, &res), 0);
	assert_int_equal(cfg.trace_start_address, 0);
}

/* pt_options: the list, each item's range, a bad item named, the default. */
static void test_pt_options(void **state)
{
	static const char *const bad[] = {
		"pt_options = mtc\n", "pt_options = mtc=16\n", "pt_options = cyc=x\n",
		"pt_options = psb=123\n", "pt_options = tsc,,retc\n", "pt_options = tsc,\n",
		"pt_options = fast\n", "pt_options = mtc=-1\n",
	};

	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(cfg.trace_pt.tsc, 1);
	assert_int_equal(cfg.trace_pt.dis_retc + cfg.trace_pt.mtc + cfg.trace_pt.cyc + cfg.trace_pt.psb_freq, 0);
	assert_int_equal(parse("pt_options = notsc,noretc,mtc=3,cyc=0,psb=15\n"), 0);
	assert_int_equal(cfg.trace_pt.tsc, 0);
	assert_int_equal(cfg.trace_pt.dis_retc, 1);
	assert_int_equal(cfg.trace_pt.mtc, 1);
	assert_int_equal(cfg.trace_pt.mtc_freq, 3);
	assert_int_equal(cfg.trace_pt.cyc, 1);
	assert_int_equal(cfg.trace_pt.cyc_thresh, 0);
	assert_int_equal(cfg.trace_pt.psb_freq, 15);
	assert_int_equal(parse("pt_options = mtc=9,default,retc\n"), 0);
	assert_int_equal(cfg.trace_pt.tsc, 1);
	assert_int_equal(cfg.trace_pt.mtc, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i]), 1);
		assert_one_error(1, "pt_options:");
		assert_int_equal(cfg.trace_pt.tsc, 1);    /* left at the default */
	}
	assert_int_equal(parse("pt_options = fast\n"), 1);
	assert_one_error(1, "'fast' is not");
	/* pt_drain_us: the default (auto: 1000 at the default pt_topa_kb), 0 = off, the poll_us bounds otherwise */
	assert_int_equal(parse(""), 0);
	assert_int_equal(config_pt_drain_us(&cfg), 1000);
	assert_int_equal(cfg.pt_drain_us, CONFIG_PT_DRAIN_US_AUTO);
	assert_int_equal(parse("pt_drain_us = 0\n"), 0);
	assert_int_equal(cfg.pt_drain_us, 0);
	assert_int_equal(config_pt_drain_us(&cfg), 0);
	assert_int_equal(parse("pt_drain_us = 250\n"), 0);
	assert_int_equal(cfg.pt_drain_us, 250);
	assert_int_equal(config_pt_drain_us(&cfg), 250);
	assert_int_equal(parse("pt_drain_us = 5\n"), 1);
	assert_one_error(1, "pt_drain_us must be auto, 0 (off) or 10..");
	assert_int_equal(parse("pt_drain_us = 2000000\n"), 1);
}

/*
 * The buffers: pt_buffer_kb (unset: trace_buffer_kb, at least 1 MiB),
 * pt_topa_kb (unset: a quarter of it, 16 KiB..256 MiB), bts_buffer_kb,
 * and pt_drain_us = auto from the ToPA output (256 KiB per ms).
 */
static void test_buffer_keys(void **state)
{
	static const struct { const char *text; uint32_t ring, topa, drain, bts; } t[] = {
		{ "", 1024, 256, 1000, 64 },                                   /* today's */
		{ "trace_buffer_kb = 65536\n", 65536, 16384, 64000, 64 },      /* the user's 64 MiB applies */
		{ "trace_buffer_kb = 64\n", 1024, 256, 1000, 64 },             /* never below 1 MiB */
		{ "trace_buffer_kb = 8\npt_buffer_kb = 262144\n", 262144, 65536, 256000, 64 },
		{ "pt_buffer_kb = 4194304\n", 4194304, 262144, 1000000, 64 },  /* capped: 64 x 4 MiB, 1 s */
		{ "pt_buffer_kb = 16\n", 16, 16, 62, 64 },
		{ "pt_buffer_kb = 64\npt_topa_kb = 64\n", 64, 64, 250, 64 },
		{ "pt_topa_kb = 1024\n", 1024, 1024, 4000, 64 },
		{ "pt_topa_kb = 16\n", 1024, 16, 62, 64 },
		{ "pt_topa_kb = 16384\npt_buffer_kb = 16384\npt_drain_us = 500\n", 16384, 16384, 500, 64 },
		{ "pt_drain_us = auto\npt_buffer_kb = 2048\n", 2048, 512, 2000, 64 },
		{ "bts_buffer_kb = 1024\n", 1024, 256, 1000, 1024 },
		{ "bts_buffer_kb = 8\n", 1024, 256, 1000, 8 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (parse(t[i].text))
			fail_msg("\"%s\": %s", t[i].text, res.errors[0].msg);
		assert_int_equal(config_pt_buffer_kb(&cfg), t[i].ring);
		assert_int_equal(config_pt_topa_kb(&cfg), t[i].topa);
		assert_int_equal(config_pt_drain_us(&cfg), t[i].drain);
		assert_int_equal(cfg.bts_buffer_kb, t[i].bts);
	}
}

static void test_buffer_keys_errors(void **state)
{
	static const struct { const char *line, *msg; } t[] = {
		{ "pt_buffer_kb = 8", "pt_buffer_kb must be a power of two from 16 to 4194304" },
		{ "pt_buffer_kb = 3072", "pt_buffer_kb must be a power of two from 16 to 4194304" },
		{ "pt_buffer_kb = 8388608", "pt_buffer_kb must be a power of two from 16 to 4194304" },
		{ "pt_buffer_kb = 1m", "pt_buffer_kb must be a power of two" },
		{ "pt_buffer_kb = 18446744073709551616", "pt_buffer_kb must be a power of two" },
		{ "pt_topa_kb = 8", "pt_topa_kb must be a power of two from 16 to 262144" },
		{ "pt_topa_kb = 100", "pt_topa_kb must be a power of two from 16 to 262144" },
		{ "pt_topa_kb = 524288", "pt_topa_kb must be a power of two from 16 to 262144" },
		{ "bts_buffer_kb = 4", "bts_buffer_kb must be a power of two from 8 to 4096" },
		{ "bts_buffer_kb = 96", "bts_buffer_kb must be a power of two from 8 to 4096" },
		{ "bts_buffer_kb = 8192", "bts_buffer_kb must be a power of two from 8 to 4096" },
		{ "pt_drain_us = automatic", "pt_drain_us must be auto, 0 (off)" },
	};
	char text[128];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "\n%s\n", t[i].line);
		if (parse(text) != 1)
			fail_msg("\"%s\" gave %u errors", t[i].line, res.nerrors);
		assert_one_error(2, t[i].msg);
		assert_defaults(&cfg);
		assert_int_equal(cfg.pt_buffer_kb, 0);
		assert_int_equal(cfg.pt_topa_kb, 0);
		assert_int_equal(cfg.bts_buffer_kb, 64);
		assert_int_equal(cfg.pt_drain_us, CONFIG_PT_DRAIN_US_AUTO);
	}
	/* more output than the ring holds: named with both keys, the derived size used */
	assert_int_equal(parse("pt_topa_kb = 4096\n"), 1);
	assert_one_error(1, "pt_topa_kb 4096 > the PT ring's pt_buffer_kb 1024 (from trace_buffer_kb): 256 used");
	assert_int_equal(config_pt_topa_kb(&cfg), 256);
	assert_int_equal(config_pt_drain_us(&cfg), 1000);
	assert_int_equal(parse("pt_buffer_kb = 2048\n# x\npt_topa_kb = 4096\n"), 1);
	assert_one_error(3, "pt_topa_kb 4096 > the PT ring's pt_buffer_kb 2048: 512 used");
	assert_int_equal(parse("trace_buffer_kb = 4096\npt_topa_kb = 4096\n"), 0);   /* 4 MiB ring: fits */
	assert_int_equal(config_pt_topa_kb(&cfg), 4096);
}

/* pmi and pmi_every, alone and against the source. */
static void test_pmi_keys(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_false(cfg.trace_pmi);
	assert_int_equal(cfg.trace_pmi_every, 0);
	assert_int_equal(parse("source = bts\npmi = on\npmi_every = 100\n"), 0);
	assert_true(cfg.trace_pmi);
	assert_int_equal(cfg.trace_pmi_every, 100);
	assert_int_equal(parse("source = pt\npmi = on\n"), 0);
	assert_int_equal(parse("pmi = on\n"), 0);                /* auto: decided at boot */
	assert_int_equal(parse("source = lbr\npmi = off\n"), 0);
	assert_false(cfg.trace_pmi);
	assert_int_equal(parse("pmi = yes\n"), 1);
	assert_one_error(1, "pmi must be on or off");
	assert_int_equal(parse("pmi = on\npmi_every = 0\n"), 1);
	assert_one_error(2, "pmi_every must be 1..1000000 records");
	assert_int_equal(parse("pmi = on\npmi_every = 1000001\n"), 1);
	assert_one_error(2, "pmi_every must be 1..");
	/* impossible combinations, at the line of the key that cannot apply */
	assert_int_equal(parse("source = mtf\n\npmi = on\n"), 1);
	assert_one_error(3, "pmi = on applies to lbr, bts and pt: source = mtf takes no PMI");
	assert_int_equal(parse("pmi = on\nsource = btf\n"), 1);
	assert_one_error(1, "source = btf takes no PMI");
	assert_int_equal(parse("source = bts\npmi_every = 10\n"), 1);
	assert_one_error(2, "pmi_every needs pmi = on");
	assert_int_equal(parse("source = pt\npmi = on\npmi_every = 10\n"), 1);
	assert_one_error(3, "pt's PMI comes at a ToPA region's end");
}

static void test_trace_stop_after_cpl_cr3(void **state)
{
	(void)state;
	assert_int_equal(parse("trace_stop_after = 1000000\n"), 0);
	assert_int_equal(cfg.trace_stop_after, 1000000);
	assert_int_equal(parse("trace_stop_after = 0\n"), 0);
	assert_int_equal(cfg.trace_stop_after, 0);
	assert_int_equal(parse("trace_stop_after = 0xffffffffffffffff\n"), 0);
	assert_int_equal(cfg.trace_stop_after, UINT64_MAX);
	assert_int_equal(parse("trace_cpl = kernel\n"), 0);
	assert_int_equal(cfg.trace_filter.cpl, TRACE_CPL_KERNEL);
	assert_int_equal(parse("trace_cpl = user\n"), 0);
	assert_int_equal(cfg.trace_filter.cpl, TRACE_CPL_USER);
	assert_int_equal(parse("trace_cpl = all\n"), 0);
	assert_int_equal(cfg.trace_filter.cpl, TRACE_CPL_ALL);
	assert_int_equal(parse("trace_cr3 = 0x1a2b000\n"), 0);
	assert_int_equal(cfg.trace_filter.cr3, 0x1a2b000);
	assert_int_equal(parse("trace_cr3 = any\n"), 0);
	assert_int_equal(cfg.trace_filter.cr3, 0);
}

static void test_trace_ip_ranges(void **state)
{
	(void)state;
	assert_int_equal(parse("trace_ip = 0x1000-0x1fff\n"), 0);
	assert_int_equal(cfg.trace_filter.nranges, 1);
	assert_int_equal(cfg.trace_filter.ranges[0].lo, 0x1000);
	assert_int_equal(cfg.trace_filter.ranges[0].hi, 0x1fff);
	/* four ranges, spaces around commas, a one-byte range (lo == hi) */
	assert_int_equal(parse("trace_ip = 0x1-0x2, 0x10-0x10 ,0xffffffff81000000-0xffffffff82000000,"
			       "0x400000-0x500000\n"), 0);
	assert_int_equal(cfg.trace_filter.nranges, TRACE_MAX_RANGES);
	assert_int_equal(cfg.trace_filter.ranges[1].lo, 0x10);
	assert_int_equal(cfg.trace_filter.ranges[1].hi, 0x10);
	assert_int_equal(cfg.trace_filter.ranges[2].lo, 0xffffffff81000000ull);
	assert_int_equal(cfg.trace_filter.ranges[3].hi, 0x500000);
	assert_true(trace_filter_ip(&cfg.trace_filter, 0x10, 0));
	assert_false(trace_filter_ip(&cfg.trace_filter, 0x11, 0x3));
}

static void test_trace_cpus(void **state)
{
	(void)state;
	assert_int_equal(parse("trace_cpus = 0,2, 255\n"), 0);
	assert_false(cfg.trace_all_cpus);
	assert_true(config_trace_cpu(&cfg, 0));
	assert_false(config_trace_cpu(&cfg, 1));
	assert_true(config_trace_cpu(&cfg, 2));
	assert_true(config_trace_cpu(&cfg, 255));
	assert_false(config_trace_cpu(&cfg, 256));
	assert_int_equal(parse("trace_cpus = 7\n"), 0);
	assert_true(config_trace_cpu(&cfg, 7));
	assert_false(config_trace_cpu(&cfg, 0));
	assert_int_equal(parse("trace_cpus = all\n"), 0);
	assert_true(cfg.trace_all_cpus);
	assert_true(config_trace_cpu(&cfg, 100));
}

static void test_trace_keys_bad_values(void **state)
{
	static const struct { const char *line, *msg; } t[] = {
		{ "source = PT", "source must be" },
		{ "source = none", "source must be" },
		{ "source = pt,bts", "source must be" },
		{ "overflow = wrap", "overflow must be" },
		{ "trace_buffer_kb = 4", "power of two from 8 to 1048576" },
		{ "trace_buffer_kb = 1000", "power of two from 8 to 1048576" },
		{ "trace_buffer_kb = 2097152", "power of two from 8 to 1048576" },
		{ "trace_buffer_kb = 1M", "power of two from 8 to 1048576" },
		{ "trace_start = now", "trace_start must be" },
		{ "trace_start = address:", "canonical" },
		{ "trace_start = address:1000", "canonical" },
		{ "trace_start = address:0x800000000000", "canonical" },
		{ "trace_start = address:0xg", "canonical" },
		{ "trace_stop_after = -1", "trace_stop_after must be" },
		{ "trace_stop_after = 18446744073709551616", "trace_stop_after must be" },
		{ "trace_cpl = ring0", "trace_cpl must be" },
		{ "trace_cr3 = 0", "trace_cr3 must be" },
		{ "trace_cr3 = 0x0", "trace_cr3 must be" },
		{ "trace_cr3 = 12345", "trace_cr3 must be" },
		{ "trace_cr3 = 0x10000000000000", "trace_cr3 must be" },
		{ "trace_ip = 0x2000-0x1000", "start above end" },
		{ "trace_ip = 0x1000", "trace_ip must be" },
		{ "trace_ip = 4096-8192", "trace_ip must be" },
		{ "trace_ip = 0x1-0x2,", "trace_ip must be" },
		{ "trace_ip = 0x1-0x2-0x3", "trace_ip must be" },
		{ "trace_ip = 0x1-0x2,0x3-0x4,0x5-0x6,0x7-0x8,0x9-0xa", "at most 4 ranges" },
		{ "trace_cpus = 256", "trace_cpus must be" },
		{ "trace_cpus = 0,,1", "trace_cpus must be" },
		{ "trace_cpus = 1-3", "trace_cpus must be" },
		{ "trace_cpus = none", "trace_cpus must be" },
		{ "trace_cpus = 00001", "trace_cpus must be" },
	};
	char text[128];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "\n%s\n", t[i].line);
		if (parse(text) != 1)
			fail_msg("\"%s\" gave %u errors", t[i].line, res.nerrors);
		assert_one_error(2, t[i].msg);
		assert_defaults(&cfg);
	}
}

static void test_trace_keys_line_numbers(void **state)
{
	(void)state;
	assert_int_equal(parse("# tracing\n"
			       "source = bts\n"
			       "trace_ip = 0x10-0x1\n"        /* 3: lo > hi */
			       "trace_cpus = 1,2\n"
			       "source = pt\n"                /* 5: duplicate */
			       "trace_cpl = kernel\n"), 2);
	assert_int_equal(res.errors[0].line, 3);
	assert_int_equal(res.errors[1].line, 5);
	assert_non_null(strstr(res.errors[1].msg, "first set on line 2"));
	assert_int_equal(cfg.trace_source, TV_SOURCE_BTS);
	assert_int_equal(cfg.trace_filter.nranges, 0);
	assert_true(config_trace_cpu(&cfg, 2));
	assert_false(config_trace_cpu(&cfg, 0));
	assert_int_equal(cfg.trace_filter.cpl, TRACE_CPL_KERNEL);
}

/* --- malformed input ---------------------------------------------------------- */

static void test_unknown_key(void **state)
{
	(void)state;
	assert_int_equal(parse("# c\nvmx = off\nverbosity = 3\n"), 1);
	assert_one_error(3, "unknown key 'verbosity'");
	assert_false(cfg.vmx);
}

static void test_missing_equals(void **state)
{
	(void)state;
	assert_int_equal(parse("\n\nserial com2\n"), 1);
	assert_one_error(3, "expected `key = value`");
	assert_int_equal(cfg.serial_port, 0x3f8);
}

static void test_empty_key(void **state)
{
	(void)state;
	assert_int_equal(parse("= com2\n"), 1);
	assert_one_error(1, "missing key");
	assert_int_equal(parse("x=1\n \t = 1\n"), 2);
	assert_int_equal(res.errors[1].line, 2);
	assert_non_null(strstr(res.errors[1].msg, "missing key"));
}

static void test_bad_key_chars(void **state)
{
	static const char *const bad[] = {
		"Serial = com2\n", "log-level = info\n", "log level = info\n",
		"vmx! = on\n", "se\xc3\xa9rial = com2\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i]), 1);
		assert_one_error(1, "bad character in key");
		assert_defaults(&cfg);
	}
}

static void test_empty_value(void **state)
{
	static const char *const keys[] = {
		"loader", "log_level", "serial", "console", "log_ring_kb", "vmx", "heartbeat_s",
		"source", "overflow", "trace_buffer_kb", "trace_start", "trace_stop_after",
		"trace_cpl", "trace_cr3", "trace_ip", "trace_cpus",
	};
	char text[64];

	(void)state;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(text, sizeof(text), "%s =   \n", keys[i]);
		assert_int_equal(parse(text), 1);
		assert_one_error(1, "empty value");
		assert_defaults(&cfg);
		/* quoted empty value */
		snprintf(text, sizeof(text), "%s = \"\"\n", keys[i]);
		assert_int_equal(parse(text), 1);
		assert_one_error(1, "empty value");
		assert_defaults(&cfg);
		/* only a comment after '=': still empty, not the comment text */
		snprintf(text, sizeof(text), "%s = # later\n", keys[i]);
		assert_int_equal(parse(text), 1);
		assert_one_error(1, "empty value");
		assert_defaults(&cfg);
		snprintf(text, sizeof(text), "%s =\t; later\n", keys[i]);
		assert_int_equal(parse(text), 1);
		assert_one_error(1, "empty value");
		assert_defaults(&cfg);
	}
}

static void test_duplicate_key_names_first_line(void **state)
{
	(void)state;
	assert_int_equal(parse("# header\n"
			       "serial = com2\n"
			       "vmx = off\n"
			       "serial = com3\n"), 1);
	assert_one_error(4, "duplicate key 'serial' (first set on line 2)");
	assert_int_equal(cfg.serial_port, 0x2f8);  /* the first value stays */
	assert_false(cfg.vmx);
}

static void test_bad_first_value_does_not_count_as_set(void **state)
{
	(void)state;
	/* The failed line 1 did not set serial, so line 2 is no duplicate. */
	assert_int_equal(parse("serial = com9\nserial = com4\n"), 1);
	assert_one_error(1, "serial must be");
	assert_int_equal(cfg.serial_port, 0x2e8);
}

static void test_invalid_values_per_key(void **state)
{
	static const struct { const char *line, *msg; } t[] = {
		{ "loader = EFI\\x.efi", "must be absolute" },
		{ "loader = C:\\x.efi", "must be absolute" },
		{ "loader = \\EFI\\caf\xc3\xa9.efi", "printable ASCII" },
		{ "log_level = verbose", "log_level must be" },
		{ "log_level = INFO", "log_level must be" },
		{ "log_level = 2", "log_level must be" },
		{ "serial = com0", "serial must be" },
		{ "serial = com5", "serial must be" },
		{ "serial = COM1", "serial must be" },
		{ "serial = 0", "serial must be" },
		{ "serial = 0x0", "serial must be" },
		{ "serial = 0xfff9", "serial must be" },
		{ "serial = 65529", "serial must be" },
		{ "serial = 0x", "serial must be" },
		{ "serial = -1", "serial must be" },
		{ "serial = 0x3f8g", "serial must be" },
		{ "serial = 99999999999999999999999", "serial must be" },
		{ "console = maybe", "console must be" },
		{ "console = ON", "console must be" },
		{ "console = 2", "console must be" },
		{ "log_ring_kb = 2", "power of two from 4 to 4096" },
		{ "log_ring_kb = 0", "power of two from 4 to 4096" },
		{ "log_ring_kb = 100", "power of two from 4 to 4096" },
		{ "log_ring_kb = 8192", "power of two from 4 to 4096" },
		{ "log_ring_kb = 4k", "power of two from 4 to 4096" },
		{ "log_ring_kb = 18446744073709551616", "power of two from 4 to 4096" },
		{ "vmx = enabled", "vmx must be" },
		{ "heartbeat_s = 3601", "heartbeat_s must be" },
		{ "heartbeat_s = -1", "heartbeat_s must be" },
		{ "heartbeat_s = 1s", "heartbeat_s must be" },
	};
	char text[128];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "\n%s\n", t[i].line);
		if (parse(text) != 1)
			fail_msg("\"%s\" gave %u errors", t[i].line, res.nerrors);
		assert_one_error(2, t[i].msg);
		assert_defaults(&cfg);
	}
}

static void test_bad_line_keeps_earlier_value(void **state)
{
	(void)state;
	config_defaults(&cfg);
	cfg.log_ring_kb = 16;  /* an earlier good value (e.g. a previous file) */
	assert_int_equal(config_parse(&cfg, "log_ring_kb = 3\n", 16, &res), 1);
	assert_int_equal(cfg.log_ring_kb, 16);
}

static void test_unterminated_quote(void **state)
{
	(void)state;
	assert_int_equal(parse("vmx = off\nloader = \"\\EFI\\x.efi\n"), 1);
	assert_one_error(2, "unterminated quote in value of loader");
	assert_string_equal(cfg.loader, "");
}

static void test_text_after_quote(void **state)
{
	(void)state;
	assert_int_equal(parse("loader = \"\\a.efi\" \\b.efi\n"), 1);
	assert_one_error(1, "text after closing quote in value of loader");
	assert_string_equal(cfg.loader, "");
	assert_int_equal(parse("serial = \"com2\"x\n"), 1);
	assert_one_error(1, "text after closing quote");
	assert_int_equal(cfg.serial_port, 0x3f8);
}

static void test_overlong_line(void **state)
{
	static char text[3 * CONFIG_LINE_MAX];
	size_t n = 0;

	(void)state;
	/* Line 1: exactly CONFIG_LINE_MAX bytes, a comment: fine. */
	text[n++] = '#';
	memset(text + n, 'x', CONFIG_LINE_MAX - 1);
	n += CONFIG_LINE_MAX - 1;
	/* CR of a CRLF does not count toward the limit. */
	text[n++] = '\r';
	text[n++] = '\n';
	/* Line 2: CONFIG_LINE_MAX + 1 bytes, a valid key otherwise. */
	memcpy(text + n, "vmx = off", 9);
	memset(text + n + 9, ' ', CONFIG_LINE_MAX + 1 - 9);
	n += CONFIG_LINE_MAX + 1;
	text[n++] = '\n';
	memcpy(text + n, "serial = com2\n", 14);
	n += 14;

	assert_int_equal(parse_n(text, n), 1);
	assert_one_error(2, "line longer than 1024 characters");
	assert_true(cfg.vmx);                    /* the over-long line was ignored */
	assert_int_equal(cfg.serial_port, 0x2f8); /* and line 3 still counted as 3 */
}

static void test_nul_and_control_bytes(void **state)
{
	static const char text[] = "vmx = off\n"
				   "serial = com2\0x\n"
				   "console = o\x01n\n"
				   "log_level = debug\x7f\n"
				   "loader = \\a\x1b.efi\n"
				   "log_ring_kb = 8\n";

	(void)state;
	assert_int_equal(parse_n(text, sizeof(text) - 1), 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(res.errors[i].line, i + 2);
		assert_non_null(strstr(res.errors[i].msg, "control character"));
	}
	assert_false(cfg.vmx);
	assert_int_equal(cfg.serial_port, 0x3f8);
	assert_true(cfg.console);
	assert_int_equal(cfg.log_level, LOG_INFO);
	assert_string_equal(cfg.loader, "");
	assert_int_equal(cfg.log_ring_kb, 8);
}

static void test_more_errors_than_recorded(void **state)
{
	char text[40 * 16];
	size_t n = 0;

	(void)state;
	/* 20 bad lines interleaved with good ones: 40 lines in all. */
	for (int i = 0; i < 20; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "bogus%d = 1\n# ok\n", i);
	assert_int_equal(parse_n(text, n), 20);
	assert_int_equal(res.nerrors, 20);
	for (uint32_t i = 0; i < CONFIG_MAX_ERRORS; i++) {
		char want[32];

		assert_int_equal(res.errors[i].line, 2 * i + 1);
		snprintf(want, sizeof(want), "'bogus%u'", i);
		assert_non_null(strstr(res.errors[i].msg, want));
	}
}

static void test_result_is_cleared(void **state)
{
	(void)state;
	assert_int_equal(parse("a = 1\nb = 2\n"), 2);
	assert_int_equal(parse("vmx = on\n"), 0);
	assert_int_equal(res.nerrors, 0);
}

static void test_line_numbers_mixed(void **state)
{
	(void)state;
	assert_int_equal(parse("\xef\xbb\xbf# tracevisor.conf\r\n"
			       "\r\n"
			       "loader = /EFI/debian/grubx64.efi\r\n"
			       "log_level = loud\r\n"          /* 4: bad value */
			       "serial com1\r\n"              /* 5: no '=' */
			       "console = off\r\n"
			       "console = on\r\n"             /* 7: duplicate of 6 */
			       "log_ring_kb = \"512\"\r\n"
			       "vmx = \"on\r\n"),             /* 9: unterminated */
			 4);
	assert_int_equal(res.errors[0].line, 4);
	assert_int_equal(res.errors[1].line, 5);
	assert_int_equal(res.errors[2].line, 7);
	assert_non_null(strstr(res.errors[2].msg, "first set on line 6"));
	assert_int_equal(res.errors[3].line, 9);
	assert_string_equal(cfg.loader, "\\EFI\\debian\\grubx64.efi");
	assert_int_equal(cfg.log_level, LOG_INFO);
	assert_false(cfg.console);
	assert_int_equal(cfg.log_ring_kb, 512);
	assert_true(cfg.vmx);
}

static void test_unknown_key_message_is_bounded(void **state)
{
	char text[CONFIG_LINE_MAX];

	(void)state;
	memset(text, 'k', 900);
	memcpy(text + 900, " = 1\n", 6);
	assert_int_equal(parse(text), 1);
	assert_int_equal(res.errors[0].line, 1);
	assert_true(strlen(res.errors[0].msg) < sizeof(res.errors[0].msg));
	assert_non_null(strstr(res.errors[0].msg, "unknown key"));
}

/* --- random input --------------------------------------------------------------- */

static uint64_t rng_state;

static uint32_t rnd(void)
{
	/* xorshift64*: a fixed sequence on every host. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static void test_random_input(void **state)
{
	static const char alphabet[] = "=#;\"\\/ \t\r\n\nabcdeglnorsvx_0123456789";
	static const char *const fragments[] = {
		"loader", "log_level", "serial", "console", "log_ring_kb", "vmx",
		" = ", "\"", "# c", "com2", "0x3f8", "on", "off", "debug", "\r\n", "\n",
		"\xef\xbb\xbf", "/EFI/x.efi",
		"source", "pt", "trace_ip", "0x10-0x20", ",", "trace_cpus", "trace_buffer_kb",
		"trace_start", "address:0x", "trace_cr3",
	};
	static char text[4096];

	(void)state;
	rng_state = 0x7261636576697372ull;  /* fixed seed */
	for (int iter = 0; iter < 400; iter++) {
		size_t len = rnd() % (iter < 300 ? 300 : sizeof(text));
		uint32_t lines = 0, nerr;

		for (size_t i = 0; i < len;) {
			uint32_t r = rnd();

			if (r % 4 == 0) {
				/* raw byte, any value */
				text[i++] = (char)(r >> 8);
			} else if (r % 4 == 1) {
				const char *f = fragments[(r >> 8) % (sizeof(fragments) / sizeof(fragments[0]))];
				size_t fl = strlen(f);

				if (fl > len - i)
					fl = len - i;
				memcpy(text + i, f, fl);
				i += fl;
			} else {
				text[i++] = alphabet[(r >> 8) % (sizeof(alphabet) - 1)];
			}
		}
		for (size_t i = 0; i < len; i++)
			lines += text[i] == '\n';
		if (len && text[len - 1] != '\n')
			lines++;

		nerr = parse_n(text, len);
		assert_int_equal(nerr, res.nerrors);
		assert_true(nerr <= lines);
		for (uint32_t e = 0; e < nerr && e < CONFIG_MAX_ERRORS; e++) {
			assert_in_range(res.errors[e].line, 1, lines);
			if (e)
				assert_true(res.errors[e].line > res.errors[e - 1].line);
			assert_non_null(memchr(res.errors[e].msg, '\0', sizeof(res.errors[e].msg)));
			assert_true(res.errors[e].msg[0] != '\0');
		}
		/* Whatever was accepted is a valid configuration. */
		assert_in_range(cfg.log_level, LOG_ERR, LOG_DEBUG);
		assert_in_range(cfg.log_ring_kb, 4, 4096);
		assert_int_equal(cfg.log_ring_kb & (cfg.log_ring_kb - 1), 0);
		assert_true(cfg.serial_port <= 0xfff8);
		assert_non_null(memchr(cfg.loader, '\0', sizeof(cfg.loader)));
		for (const char *p = cfg.loader; *p; p++) {
			assert_in_range((unsigned char)*p, 0x20, 0x7e);
			assert_true(*p != '/');
		}
		if (cfg.loader[0])
			assert_int_equal(cfg.loader[0], '\\');
		assert_true(cfg.trace_source <= TV_SOURCE_MAX);
		assert_true(cfg.trace_filter.nranges <= TRACE_MAX_RANGES);
		for (uint32_t r = 0; r < cfg.trace_filter.nranges; r++)
			assert_true(cfg.trace_filter.ranges[r].lo <= cfg.trace_filter.ranges[r].hi);
		assert_in_range(cfg.trace_buffer_kb, CONFIG_TRACE_BUFFER_KB_MIN, CONFIG_TRACE_BUFFER_KB_MAX);
		assert_int_equal(cfg.trace_buffer_kb & (cfg.trace_buffer_kb - 1), 0);
	}
}

/* --- network keys ------------------------------------------------------------ */

static void test_net_defaults_and_good_values(void **state)
{
	(void)state;
	config_defaults(&cfg);
	assert_int_equal(cfg.nic, CONFIG_NIC_AUTO);
	assert_true(cfg.net_dhcp);
	assert_int_equal(cfg.receiver_ip, 0x0a000202);   /* 10.0.2.2, slirp's host */
	assert_int_equal(cfg.receiver_port, 6543);
	assert_false(cfg.receiver_set);
	assert_int_equal(cfg.net_selftest, 0);
	assert_int_equal(cfg.net_bench, 0);

	assert_int_equal(parse("nic = 00:1f.6\n"
			       "net_ip = 192.168.1.77/24\n"
			       "net_gw = 192.168.1.1\n"
			       "receiver = 192.168.1.2:40000\n"
			       "net_selftest = 5000\n"
			       "net_bench = 20000\n"), 0);
	assert_int_equal(cfg.nic, CONFIG_NIC_PCI);
	assert_int_equal(cfg.nic_pci[0], 0x00);
	assert_int_equal(cfg.nic_pci[1], 0x1f);
	assert_int_equal(cfg.nic_pci[2], 6);
	assert_false(cfg.net_dhcp);
	assert_int_equal(cfg.net_ip, 0xc0a8014d);
	assert_int_equal(cfg.net_prefix, 24);
	assert_int_equal(cfg.net_gw, 0xc0a80101);
	assert_int_equal(cfg.receiver_ip, 0xc0a80102);
	assert_int_equal(cfg.receiver_port, 40000);
	assert_true(cfg.receiver_set);
	assert_int_equal(cfg.net_selftest, 5000);
	assert_int_equal(cfg.net_bench, 20000);

	assert_int_equal(parse("nic = 0000:3A:00.1\n"), 0);
	assert_int_equal(cfg.nic, CONFIG_NIC_PCI);
	assert_int_equal(cfg.nic_pci[0], 0x3a);
	assert_int_equal(cfg.nic_pci[1], 0);
	assert_int_equal(cfg.nic_pci[2], 1);

	assert_int_equal(parse("nic = 52:54:00:AB:cd:0f\nnet_ip = dhcp\nnet_gw = none\n"
			       "net_selftest = off\nnet_bench = off\n"), 0);
	assert_int_equal(cfg.nic, CONFIG_NIC_MAC);
	assert_memory_equal(cfg.nic_mac, ((uint8_t[]){ 0x52, 0x54, 0, 0xab, 0xcd, 0x0f }), 6);
	assert_true(cfg.net_dhcp);
	assert_int_equal(cfg.net_gw, 0);
	assert_int_equal(cfg.net_selftest, 0);
	assert_int_equal(cfg.net_bench, 0);

	assert_int_equal(parse("nic = off\n"), 0);
	assert_int_equal(cfg.nic, CONFIG_NIC_OFF);
}

static void test_net_bad_values(void **state)
{
	static const struct { const char *line, *msg; } t[] = {
		{ "nic = 0:1f.6", "nic must be" },          /* two hex digits for the bus */
		{ "nic = 00:20.0", "nic must be" },         /* device 0..1f */
		{ "nic = 00:1f.8", "nic must be" },         /* function 0..7 */
		{ "nic = 0001:00:03.0", "nic must be" },    /* only segment 0 */
		{ "nic = 00:03.0x", "nic must be" },
		{ "nic = 01:00:5e:00:00:01", "nic must be" }, /* multicast MAC */
		{ "nic = 52:54:00:12:34", "nic must be" },
		{ "nic = 52:54:00:12:34:5g", "nic must be" },
		{ "nic = e1000", "nic must be" },
		{ "net_ip = 10.0.2.15", "net_ip must be" },
		{ "net_ip = 10.0.2.15/33", "net_ip must be" },
		{ "net_ip = 10.0.2.15/0", "net_ip must be" },
		{ "net_ip = 10.0.2.256/24", "net_ip must be" },
		{ "net_ip = 10.0.2/24", "net_ip must be" },
		{ "net_ip = 0.0.0.0/8", "net_ip must be" },
		{ "net_ip = 10.0.2.15/24x", "net_ip must be" },
		{ "net_gw = 10.0.2", "net_gw must be" },
		{ "net_gw = 10.0.2.2.1", "net_gw must be" },
		{ "receiver = 10.0.2.2", "receiver must be" },
		{ "receiver = 10.0.2.2:0", "receiver must be" },
		{ "receiver = 10.0.2.2:65536", "receiver must be" },
		{ "receiver = 10.0.2.2:0x10", "receiver must be" },
		{ "receiver = host:6543", "receiver must be" },
		{ "net_selftest = 1000001", "net_selftest must be" },
		{ "net_selftest = many", "net_selftest must be" },
		{ "net_bench = 1000001", "net_bench must be" },
		{ "net_bench = -1", "net_bench must be" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(parse(t[i].line), 1);
		assert_one_error(1, t[i].msg);
		assert_int_equal(cfg.nic, CONFIG_NIC_AUTO);
		assert_true(cfg.net_dhcp);
		assert_int_equal(cfg.receiver_port, 6543);
		assert_false(cfg.receiver_set);
		assert_int_equal(cfg.net_gw, 0);
		assert_int_equal(cfg.net_selftest, 0);
	}
}

static void test_control_key_and_machine(void **state)
{
	static const struct { const char *line, *msg; } bad[] = {
		{ "control_key = 0", "control_key must be" },
		{ "control_key = abc", "control_key must be" },        /* odd count */
		{ "control_key = 0g", "control_key must be" },
		{ "control_key = 0x00", "control_key must be" },
		{ "control_key = ", "empty value" },
		{ "machine = lab 7", "machine must be" },
		{ "machine = lab/7", "machine must be" },
		{ "machine = 0123456789012345678901234567890123456789012345678901234567890123",
		  "machine must be" },                                  /* 64 characters */
	};
	char key129[160] = "control_key = ";

	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(cfg.control_key_len, 0);
	assert_string_equal(cfg.machine, "tracevisor");
	assert_int_equal(parse("control_key = 00ff7A\nmachine = lab-7.rack_2\n"), 0);
	assert_int_equal(cfg.control_key_len, 3);
	assert_memory_equal(cfg.control_key, ((uint8_t[]){ 0x00, 0xff, 0x7a, 0 }), 4);
	assert_string_equal(cfg.machine, "lab-7.rack_2");
	assert_int_equal(parse("control_key = none\n"), 0);
	assert_int_equal(cfg.control_key_len, 0);
	/* 64 bytes is the most (EXPORT_KEY_MAX); 65 is refused. */
	for (int i = 0; i < 128; i++)
		key129[14 + i] = "0123456789abcdef"[i % 16];
	assert_int_equal(parse(key129), 0);
	assert_int_equal(cfg.control_key_len, 64);
	assert_int_equal(cfg.control_key[63], 0xef);
	key129[14 + 128] = 'a';
	key129[14 + 129] = 'b';
	assert_int_equal(parse(key129), 1);
	assert_one_error(1, "control_key must be");
	assert_int_equal(cfg.control_key_len, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].line), 1);
		assert_one_error(1, bad[i].msg);
		assert_int_equal(cfg.control_key_len, 0);
		assert_string_equal(cfg.machine, "tracevisor");
	}
}

/* data_key: none, control (the control key seals, whichever line comes first), or its own. */
static void test_data_key(void **state)
{
	const uint8_t *k = NULL;

	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(config_data_key(&cfg, &k), 0);
	assert_int_equal(parse("control_key = 00ff7a\n"), 0);
	assert_int_equal(config_data_key(&cfg, &k), 0);   /* a control key alone seals nothing */
	assert_int_equal(parse("data_key = control\ncontrol_key = 00ff7a\n"), 0);
	assert_int_equal(config_data_key(&cfg, &k), 3);
	assert_memory_equal(k, ((uint8_t[]){ 0x00, 0xff, 0x7a }), 3);
	assert_int_equal(parse("data_key = control\n"), 0);
	assert_int_equal(config_data_key(&cfg, &k), 0);   /* no control key: unsealed */
	assert_int_equal(parse("control_key = 00ff7a\ndata_key = 0102030405\n"), 0);
	assert_int_equal(config_data_key(&cfg, &k), 5);
	assert_memory_equal(k, ((uint8_t[]){ 1, 2, 3, 4, 5 }), 5);
	assert_int_equal(parse("data_key = none\n"), 0);
	assert_int_equal(config_data_key(&cfg, &k), 0);
	assert_int_equal(parse("data_key = 012\n"), 1);
	assert_one_error(1, "data_key must be none, control or");
	assert_int_equal(config_data_key(&cfg, &k), 0);
	assert_int_equal(parse("data_key = controls\n"), 1);
	assert_one_error(1, "data_key must be");
}

static void test_poll_us_and_pci_hide(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(cfg.poll_us, 1000);
	assert_int_equal(cfg.npci_hide, 0);
	assert_int_equal(parse("poll_us = 250\npci_hide = 00:03.0, 0000:3a:1f.7,ff:00.1\n"), 0);
	assert_int_equal(cfg.poll_us, 250);
	assert_int_equal(cfg.npci_hide, 3);
	assert_int_equal(cfg.pci_hide[0].bus, 0);
	assert_int_equal(cfg.pci_hide[0].dev, 3);
	assert_int_equal(cfg.pci_hide[0].fn, 0);
	assert_int_equal(cfg.pci_hide[1].bus, 0x3a);
	assert_int_equal(cfg.pci_hide[1].dev, 0x1f);
	assert_int_equal(cfg.pci_hide[1].fn, 7);
	assert_int_equal(cfg.pci_hide[2].bus, 0xff);
	assert_int_equal(cfg.pci_hide[2].fn, 1);
	assert_int_equal(parse("poll_us = 10\n"), 0);
	assert_int_equal(cfg.poll_us, 10);
	assert_int_equal(parse("poll_us = 1000000\n"), 0);
	assert_int_equal(cfg.poll_us, 1000000);
}

static void test_poll_us_and_pci_hide_bad_values(void **state)
{
	static const struct { const char *line, *msg; } t[] = {
		{ "poll_us = 9", "poll_us must be 10..1000000" },
		{ "poll_us = 1000001", "poll_us must be" },
		{ "poll_us = 1ms", "poll_us must be" },
		{ "pci_hide = 00:20.0", "pci_hide must be BB:DD.F" },
		{ "pci_hide = 00:03.8", "pci_hide must be" },
		{ "pci_hide = 0:3.0", "pci_hide must be" },
		{ "pci_hide = 00:03.0,", "pci_hide must be" },
		{ "pci_hide = 0001:00:03.0", "pci_hide must be" },
		{ "pci_hide = 00:01.0,00:02.0,00:03.0,00:04.0,00:05.0,00:06.0,00:07.0,00:08.0,00:09.0",
		  "pci_hide takes at most 8" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(parse(t[i].line), 1);
		assert_one_error(1, t[i].msg);
		assert_int_equal(cfg.poll_us, 1000);
		assert_int_equal(cfg.npci_hide, 0);
	}
}

/* --- the source list (TV_SOURCE_LIST, vmm/trace/format.h) --------------------- */

/* source = takes "auto" and exactly the listed names, each to its value. */
static void test_source_takes_exactly_the_list(void **state)
{
	static const char *const near[] = {
		"none", "NONE", "Auto", "MTF", "Pt", "ptx", "p", "0", "1", "5",
		"mtf,btf", "lbr bts", "intel_pt", "bts_", "\"pt\"x", "?",
	};
	char text[64];
	unsigned listed = 0;

	(void)state;
	assert_int_equal(parse("source = auto\n"), 0);
	assert_int_equal(cfg.trace_source, TV_SOURCE_NONE);
	for (unsigned s = 0; s < 256; s++) {
		const char *name = tv_source_name(s);

		if (!name)
			continue;
		listed++;
		snprintf(text, sizeof(text), "source = %s\n", name);
		assert_int_equal(parse(text), 0);
		assert_int_equal(cfg.trace_source, s);
	}
	assert_int_equal(listed, TV_SOURCE_MAX);
	for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
		snprintf(text, sizeof(text), "source = %s\n", near[i]);
		assert_int_equal(parse(text), 1);
		assert_int_equal(cfg.trace_source, TV_SOURCE_NONE);
	}
	/* The message lists the sources from the list. */
	assert_int_equal(parse("source = x\n"), 1);
	assert_string_equal(res.errors[0].msg, "source must be auto, mtf, btf, lbr, bts or pt");
}

/* pmi = on is refused exactly for the sources the list says take no PMI. */
static void test_pmi_follows_the_list(void **state)
{
	char text[64];

	(void)state;
	for (unsigned s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX; s++) {
		snprintf(text, sizeof(text), "source = %s\npmi = on\n", tv_source_name(s));
		assert_int_equal(parse(text), tv_source_takes_pmi(s) ? 0 : 1);
		if (!tv_source_takes_pmi(s)) {
			assert_one_error(2, "pmi = on applies to lbr, bts and pt: source = ");
			assert_one_error(2, tv_source_name(s));
		}
	}
	assert_int_equal(parse("source = auto\npmi = on\n"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_poll_us_and_pci_hide),
		cmocka_unit_test(test_poll_us_and_pci_hide_bad_values),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_only_comments_and_blank_lines),
		cmocka_unit_test(test_every_key_good),
		cmocka_unit_test(test_loader_slashes_become_backslashes),
		cmocka_unit_test(test_loader_length_limits),
		cmocka_unit_test(test_log_levels),
		cmocka_unit_test(test_serial_values),
		cmocka_unit_test(test_bool_spellings),
		cmocka_unit_test(test_log_ring_kb_powers_of_two),
		cmocka_unit_test(test_heartbeat_values),
		cmocka_unit_test(test_quotes_and_trailing_comments),
		cmocka_unit_test(test_hash_without_space_is_part_of_value),
		cmocka_unit_test(test_crlf_bom_tabs),
		cmocka_unit_test(test_bom_only_at_start),
		cmocka_unit_test(test_no_trailing_newline),
		cmocka_unit_test(test_applies_on_top_of_existing_config),
		cmocka_unit_test(test_len_bounds_the_text),
		cmocka_unit_test(test_trace_source_and_overflow),
		cmocka_unit_test(test_trace_buffer_kb),
		cmocka_unit_test(test_trace_start),
		cmocka_unit_test(test_pmi_keys),
		cmocka_unit_test(test_buffer_keys),
		cmocka_unit_test(test_buffer_keys_errors),
		cmocka_unit_test(test_trace_stop_after_cpl_cr3),
		cmocka_unit_test(test_pt_options),
		cmocka_unit_test(test_trace_ip_ranges),
		cmocka_unit_test(test_trace_cpus),
		cmocka_unit_test(test_trace_keys_bad_values),
		cmocka_unit_test(test_trace_keys_line_numbers),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_missing_equals),
		cmocka_unit_test(test_empty_key),
		cmocka_unit_test(test_bad_key_chars),
		cmocka_unit_test(test_empty_value),
		cmocka_unit_test(test_duplicate_key_names_first_line),
		cmocka_unit_test(test_bad_first_value_does_not_count_as_set),
		cmocka_unit_test(test_invalid_values_per_key),
		cmocka_unit_test(test_bad_line_keeps_earlier_value),
		cmocka_unit_test(test_unterminated_quote),
		cmocka_unit_test(test_text_after_quote),
		cmocka_unit_test(test_overlong_line),
		cmocka_unit_test(test_nul_and_control_bytes),
		cmocka_unit_test(test_more_errors_than_recorded),
		cmocka_unit_test(test_result_is_cleared),
		cmocka_unit_test(test_line_numbers_mixed),
		cmocka_unit_test(test_unknown_key_message_is_bounded),
		cmocka_unit_test(test_random_input),
		cmocka_unit_test(test_net_defaults_and_good_values),
		cmocka_unit_test(test_net_bad_values),
		cmocka_unit_test(test_control_key_and_machine),
		cmocka_unit_test(test_data_key),
		cmocka_unit_test(test_source_takes_exactly_the_list),
		cmocka_unit_test(test_pmi_follows_the_list),
	};

	return cmocka_run_group_tests_name("test_config", tests, NULL, NULL);
}
