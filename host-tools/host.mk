# SPDX-License-Identifier: MIT
#
# host-tools/host.mk - the host-side trace tools and their tests.
# Included by the top-level Makefile; stand-alone:
#   make -f Makefile -f host-tools/host.mk tools host-tool-tests
#
#   tools             build/tracevisor (the CLI, -O2)
#   host-tool-tests   build/host/test_host_* (cmocka, ASan + UBSan) and the
#                     sanitized CLI they drive, build/host/tracevisor-asan
#
# Variables for the top-level Makefile:
#   HOST_TOOL         build/tracevisor
#   HOST_TOOL_TESTS   the test executables (tests/run-tests.sh runs every
#                     build/host/test_*), to add to `unit` and `test`
#
# Needs libdw-dev, libelf-dev, libipt-dev, libcmocka-dev and pkg-config
# (all in scripts/deps.sh PACKAGES); the tests also run gcc at run time
# (TVH_TEST_CC overrides) to build tiny ELF files.

BUILD ?= build
Q ?= @
HOST_CC ?= $(CC)

HOST_TOOLS_WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes
HOST_TOOLS_PKG_CFLAGS := $(shell pkg-config --cflags libdw libelf 2>/dev/null)
HOST_TOOLS_PKG_LIBS := $(or $(shell pkg-config --libs libdw libelf 2>/dev/null),-ldw -lelf)
HOST_TOOLS_LIBS := $(HOST_TOOLS_PKG_LIBS) -lipt -pthread
HOST_TOOLS_CFLAGS := -std=gnu11 -O2 -g $(HOST_TOOLS_WARN) -I. $(HOST_TOOLS_PKG_CFLAGS)
HOST_TOOLS_ASAN_CFLAGS := -std=gnu11 -O1 -g $(HOST_TOOLS_WARN) -I. \
	$(HOST_TOOLS_PKG_CFLAGS) -fsanitize=address,undefined \
	-fno-sanitize-recover=all -fno-omit-frame-pointer

# host-tools/lib: the library (libtvh.a); host-tools/cli: the thin CLI on top.
HOST_TOOLS_LIB_SRCS := $(sort $(wildcard host-tools/lib/*.c)) \
	vmm/trace/read.c vmm/trace/ring.c vmm/trace/serial_enc.c vmm/lib/x86_decode.c
# tracevisor record: the export protocol's pure cores (encode/decode, HMAC, receiver)
HOST_TOOLS_LIB_SRCS += net/proto.c net/sha256.c net/recv.c net/export.c net/siphash.c net/dauth.c
HOST_TOOLS_LIB_SRCS += vmm/lib/pe_debug.c
# The CLI beside main.c (cli.h): not library code.
HOST_TOOLS_CLI_SRCS := $(sort $(filter-out host-tools/cli/main.c,$(wildcard host-tools/cli/*.c)))
HOST_TOOLS_OBJS := $(patsubst %.c,$(BUILD)/host-tools/%.o,$(HOST_TOOLS_LIB_SRCS))
HOST_TOOLS_ASAN_OBJS := $(patsubst %.c,$(BUILD)/host-tools-asan/%.o,$(HOST_TOOLS_LIB_SRCS))
HOST_TOOLS_LIB := $(BUILD)/host-tools/libtvh.a
HOST_TOOLS_ASAN_LIB := $(BUILD)/host-tools-asan/libtvh.a

HOST_TOOL := $(BUILD)/tracevisor
HOST_TOOL_ASAN := $(BUILD)/host/tracevisor-asan

HOST_TEST_SUPPORT_SRCS := $(sort $(filter-out tests/host/test_%.c,$(wildcard tests/host/*.c)))
HOST_TEST_SUPPORT_OBJS := $(patsubst %.c,$(BUILD)/host-tools-asan/%.o,$(HOST_TEST_SUPPORT_SRCS))
HOST_TOOL_TESTS := $(patsubst tests/host/%.c,$(BUILD)/host/%,$(sort $(wildcard tests/host/test_host_*.c)))

.PHONY: tools host-tool-tests
tools: $(HOST_TOOL)
host-tool-tests: $(HOST_TOOL_TESTS) $(HOST_TOOL_ASAN)

$(BUILD)/host-tools/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  HOSTCC  $<"
	$(Q)$(HOST_CC) $(HOST_TOOLS_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/host-tools-asan/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  HOSTCC  $< (asan)"
	$(Q)$(HOST_CC) $(HOST_TOOLS_ASAN_CFLAGS) -MMD -MP -c $< -o $@

$(HOST_TOOLS_LIB): $(HOST_TOOLS_OBJS)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(HOST_TOOLS_ASAN_LIB): $(HOST_TOOLS_ASAN_OBJS)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(HOST_TOOL): $(BUILD)/host-tools/host-tools/cli/main.o \
		$(patsubst %.c,$(BUILD)/host-tools/%.o,$(HOST_TOOLS_CLI_SRCS)) $(HOST_TOOLS_LIB)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) -o $@ $^ $(HOST_TOOLS_LIBS)

$(HOST_TOOL_ASAN): $(BUILD)/host-tools-asan/host-tools/cli/main.o \
		$(patsubst %.c,$(BUILD)/host-tools-asan/%.o,$(HOST_TOOLS_CLI_SRCS)) $(HOST_TOOLS_ASAN_LIB)
	@mkdir -p $(dir $@)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) $(HOST_TOOLS_ASAN_CFLAGS) -o $@ $^ $(HOST_TOOLS_LIBS)

# Static pattern: wins over the top Makefile's build/host/test_% rule.
$(HOST_TOOL_TESTS): $(BUILD)/host/%: $(BUILD)/host-tools-asan/tests/host/%.o \
		$(HOST_TEST_SUPPORT_OBJS) $(HOST_TOOLS_ASAN_LIB)
	@mkdir -p $(dir $@)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) $(HOST_TOOLS_ASAN_CFLAGS) -o $@ $^ $(HOST_TOOLS_LIBS) -lcmocka

# The CLI test drives the sanitized CLI next to it (test_host_snap too).
$(BUILD)/host/test_host_cli: | $(HOST_TOOL_ASAN)
$(BUILD)/host/test_host_snap: | $(HOST_TOOL_ASAN)
$(BUILD)/host/test_host_ptfast: | $(HOST_TOOL_ASAN)
$(BUILD)/host/test_host_mem: | $(HOST_TOOL_ASAN)
$(BUILD)/host/test_host_phases: | $(HOST_TOOL_ASAN)

-include $(HOST_TOOLS_OBJS:.o=.d) $(HOST_TOOLS_ASAN_OBJS:.o=.d) \
	$(BUILD)/host-tools/host-tools/cli/main.d $(BUILD)/host-tools-asan/host-tools/cli/main.d \
	$(patsubst %.c,$(BUILD)/host-tools/%.d,$(HOST_TOOLS_CLI_SRCS)) \
	$(patsubst %.c,$(BUILD)/host-tools-asan/%.d,$(HOST_TOOLS_CLI_SRCS)) \
	$(patsubst %.c,$(BUILD)/host-tools-asan/%.d,$(wildcard tests/host/*.c))

# --- fuzzing (tests/fuzz): libFuzzer targets, one per decoder and file parser.
#   fuzz-targets   $(BUILD)/fuzz/fuzz_* (clang, -fsanitize=fuzzer,address,undefined)
#                  and $(BUILD)/fuzz/seeds (writes the seed corpora)
# tests/build/fuzz.sh runs each for FUZZ_RUNS iterations (part of `make unit`)
# or, with --long, for FUZZ_RUNS_LONG executions each (`make fuzz`).  Without clang the
# targets are not built and the scenario says skip.
FUZZ_CC ?= clang
FUZZ_CFLAGS := -std=gnu11 -g -O1 -I. $(HOST_TOOLS_PKG_CFLAGS) \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_LIB := $(BUILD)/fuzz/libtvh-fuzz.a
FUZZ_LIB_OBJS := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(HOST_TOOLS_LIB_SRCS))
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_SEEDS := $(BUILD)/fuzz/seeds

.PHONY: fuzz-targets
fuzz-targets: $(FUZZ_TARGETS) $(FUZZ_SEEDS)

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(FUZZ_TARGETS): $(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB)
	@echo "  FUZZLD  $@"
	$(Q)$(FUZZ_CC) $(subst fuzzer-no-link,fuzzer,$(FUZZ_CFLAGS)) -o $@ $< \
		$(FUZZ_LIB) $(HOST_TOOLS_LIBS)

$(FUZZ_SEEDS): tests/fuzz/seeds.c $(HOST_TOOLS_LIB)
	@mkdir -p $(dir $@)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) $(HOST_TOOLS_CFLAGS) -o $@ $< $(HOST_TOOLS_LIB) $(HOST_TOOLS_LIBS)

ifneq ($(shell command -v $(FUZZ_CC) 2>/dev/null),)
HOST_TOOL_TESTS += $(FUZZ_TARGETS) $(FUZZ_SEEDS)
endif

-include $(FUZZ_LIB_OBJS:.o=.d)

# tracevisor record's end-to-end tests (tests/build/net-*.sh) and benchmark
# (tests/bench/recv_bench.sh): a fake traced machine around the real
# net/export.c, and a UDP impairment relay.  Built by `unit` (through
# HOST_TOOL_TESTS; run-tests.sh only runs build/host/test_*).
NET_TEST_TOOLS := $(BUILD)/tests/net/fake_sender $(BUILD)/tests/net/udp_relay
NET_FAKE_SRCS := tests/net/fake_sender.c net/export.c net/proto.c net/sha256.c net/siphash.c net/dauth.c \
	vmm/trace/ring.c vmm/trace/serial_enc.c host-tools/lib/tvt.c host-tools/lib/error.c \
	host-tools/lib/text.c tests/host/json_check.c
$(BUILD)/tests/net/fake_sender: $(NET_FAKE_SRCS) $(wildcard net/*.h vmm/trace/*.h vmm/trace/backend/*.h host-tools/lib/tvt.h)
	@mkdir -p $(dir $@)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) $(HOST_TOOLS_CFLAGS) -o $@ $(NET_FAKE_SRCS)
$(BUILD)/tests/net/udp_relay: tests/net/udp_relay.c
	@mkdir -p $(dir $@)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) $(HOST_TOOLS_CFLAGS) -o $@ $<
HOST_TOOL_TESTS += $(NET_TEST_TOOLS)

# tests/bench/ptfast_bench.sh (make bench): the fast PT decoder vs libipt.
$(BUILD)/bench/ptfast_bench: tests/bench/ptfast_bench.c tests/host/ptgen.c $(HOST_TOOLS_LIB)
	@mkdir -p $(dir $@)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) $(HOST_TOOLS_CFLAGS) -o $@ tests/bench/ptfast_bench.c tests/host/ptgen.c \
		$(HOST_TOOLS_LIB) $(HOST_TOOLS_LIBS)

# tests/bench/host_bench.sh (make bench): PT decode and record throughput.
$(BUILD)/bench/host_bench: tests/bench/host_bench.c $(HOST_TOOLS_LIB)
	@mkdir -p $(dir $@)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) $(HOST_TOOLS_CFLAGS) -o $@ $< $(HOST_TOOLS_LIB) $(HOST_TOOLS_LIBS)
