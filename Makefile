# SPDX-License-Identifier: MIT
#
# tracevisor - top-level build.
#
#   make            dependencies (cached), build/tracevisor.efi and the test payload
#   make usb        build/tracevisor-usb.img, a GPT disk with an EFI system partition
#   make test       unit + qemu + bochs tiers; final line "N passed, N failed, N skipped"
#   make unit       host unit tests only (ASan + UBSan)
#   make test-qemu  / make test-bochs   one emulator tier
#   make run        trace the payload in Bochs 3.0 (VT-x), receive and decode it (EMU=qemu: QEMU, no VT-x)
#   make bench      benchmarks (docs/BENCHMARKS.md), never part of make test
#   make clean
#
# Third-party code (newlib, lwIP, Bochs) is built by scripts/deps.sh into
# $(TRACEVISOR_CACHE) (default ~/.cache/tracevisor), never into the tree.

BUILD := build
# V=1 shows full command lines.
V ?= 0
Q := $(if $(filter 1,$(V)),,@)
export TRACEVISOR_CACHE ?= $(HOME)/.cache/tracevisor

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SUFFIXES:

# --- dependencies --------------------------------------------------------
# deps.sh rewrites deps.mk only when its contents change, so make restarts
# only then; it runs on every invocation so a wiped cache is rebuilt.
ifeq ($(filter clean help,$(MAKECMDGOALS)),)
include $(BUILD)/deps.mk
endif
$(BUILD)/deps.mk: FORCE
	@mkdir -p $(BUILD)
	@bash scripts/deps.sh $@

.PHONY: deps FORCE
deps: $(BUILD)/deps.mk
FORCE:

# --- toolchain -----------------------------------------------------------
CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif
LD := ld
OBJCOPY := objcopy
GIT_REV := $(shell git describe --always --dirty 2>/dev/null || echo unknown)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter
EFI_INC := /usr/include/efi
CC_INC := $(shell $(CC) -print-file-name=include)

# Freestanding, no SSE/x87 anywhere (code in VMX root must not touch the
# guest's FPU/vector state), no red zone (exit handlers run on our stack),
# position independent (the firmware loads us anywhere).
EFI_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -fno-stack-protector \
	-fno-stack-check -fshort-wchar -mno-red-zone -fPIC -mgeneral-regs-only \
	-fno-strict-aliasing -fno-asynchronous-unwind-tables -fno-omit-frame-pointer \
	-DGNU_EFI_USE_MS_ABI -DTV_GIT='"$(GIT_REV)"' $(WARN) \
	-nostdinc -isystem $(NEWLIB_DIR)/include -isystem $(CC_INC) \
	-isystem $(EFI_INC) -isystem $(EFI_INC)/x86_64 \
	-I. -Inet/lwip/include -isystem $(LWIP_INC) $(EXTRA_CFLAGS)

EFI_LDFLAGS := -nostdlib --no-undefined -znocombreloc -z noexecstack \
	-T linker.ld -shared -Bsymbolic
EFI_CRT0 := /usr/lib/crt0-efi-x86_64.o
EFI_LIBS := --start-group $(NEWLIB_DIR)/lib/libc.a /usr/lib/libgnuefi.a \
	$(LWIP_DIR)/lib/liblwip.a --end-group
EFI_SECTIONS := -j .text -j .sdata -j .data -j .dynamic -j .dynsym \
	-j .rel -j .rela -j .rel.* -j .rela.* -j .reloc

# --- tracevisor.efi --------------------------------------------------------
# vmm/ outside vmm/hw is hardware-free (host-testable); the seam's target side and the
# assembly live in vmm/hw/.
# Layers (docs/ARCHITECTURE.md): vmm/lib, vmm/vmx, vmm/exit, vmm/trace and
# vmm/trace/backend; vmm/*.c is the top (config, resident init).
VMM_DIRS := vmm vmm/lib vmm/vmx vmm/exit vmm/trace vmm/trace/backend
VMM_SRCS := $(sort $(foreach d,$(VMM_DIRS),$(wildcard $(d)/*.c)))
TV_SRCS := $(sort $(wildcard boot/*.c)) $(VMM_SRCS) vmm/hw/hw_x86.c vmm/hw/vmx_entry.S \
	$(sort $(wildcard drivers/*.c)) net/net.c net/lwip_port.c net/netif.c net/selftest.c net/rawframe.c
# The export protocol (docs/PROTOCOL.md): pure, also in the unit tests and host tools.
NET_PROTO_SRCS := net/sha256.c net/siphash.c net/dauth.c net/proto.c net/export.c net/recv.c
TV_SRCS += $(NET_PROTO_SRCS)
TV_OBJS := $(patsubst %.S,$(BUILD)/efi/%.o,$(patsubst %.c,$(BUILD)/efi/%.o,$(TV_SRCS)))

$(BUILD)/efi/%.o: %.c | $(BUILD)/deps.mk
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(EFI_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/efi/%.o: %.S | $(BUILD)/deps.mk
	@mkdir -p $(dir $@)
	@echo "  AS      $<"
	$(Q)$(CC) $(EFI_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/tracevisor.so: $(TV_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(TV_OBJS) $(EFI_LIBS) -o $@

# The build refuses an image with SSE/x87 code or non-RELATIVE relocations.
$(BUILD)/%.efi: $(BUILD)/%.so scripts/check-efi.sh
	$(Q)bash scripts/check-efi.sh $<
	@echo "  EFI     $@"
	$(Q)$(OBJCOPY) $(EFI_SECTIONS) --target efi-app-x86_64 $< $@

# --- test payload: a stand-in OS loader ------------------------------------
PAYLOAD_SRCS := tests/payload/payload.c tests/payload/traced.S vmm/hw/hw_x86.c
PAYLOAD_OBJS := $(patsubst %.S,$(BUILD)/efi/%.o,$(patsubst %.c,$(BUILD)/efi/%.o,$(PAYLOAD_SRCS)))
$(BUILD)/payload.so: $(PAYLOAD_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(PAYLOAD_OBJS) $(EFI_LIBS) -o $@

# --- guest of the memory-access tracing scenario (tests/bochs/mem-watch.sh) ---
MEMTEST_SRCS := tests/payload/memtest.c tests/payload/mem_code.S vmm/hw/hw_x86.c
MEMTEST_OBJS := $(patsubst %.S,$(BUILD)/efi/%.o,$(patsubst %.c,$(BUILD)/efi/%.o,$(MEMTEST_SRCS)))
$(BUILD)/memtest.so: $(MEMTEST_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(MEMTEST_OBJS) $(EFI_LIBS) -o $@
all: $(BUILD)/memtest.efi
-include $(MEMTEST_OBJS:.o=.d)

# --- guest program of the Bochs trace-hardware model test (docs/BOCHS-MODEL.md)
LBRTEST_SRCS := tests/payload/lbrtest.c tests/payload/lbr_branches.S vmm/hw/hw_x86.c
LBRTEST_OBJS := $(patsubst %.S,$(BUILD)/efi/%.o,$(patsubst %.c,$(BUILD)/efi/%.o,$(LBRTEST_SRCS)))
$(BUILD)/lbrtest.so: $(LBRTEST_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(LBRTEST_OBJS) $(EFI_LIBS) -o $@
all: $(BUILD)/lbrtest.efi

# --- guest program of the Bochs BTS model test (docs/BOCHS-MODEL.md) ----------
BTSTEST_SRCS := tests/payload/btstest.c tests/payload/bts_branches.S tests/payload/guest_helpers.S vmm/hw/hw_x86.c
BTSTEST_OBJS := $(patsubst %.S,$(BUILD)/efi/%.o,$(patsubst %.c,$(BUILD)/efi/%.o,$(BTSTEST_SRCS)))
$(BUILD)/btstest.so: $(BTSTEST_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(BTSTEST_OBJS) $(EFI_LIBS) -o $@
all: $(BUILD)/btstest.efi
-include $(BTSTEST_OBJS:.o=.d)

# --- guest program of the Bochs performance-counter model test (docs/BOCHS-MODEL.md)
PMCTEST_SRCS := tests/payload/pmctest.c tests/payload/pmc_code.S tests/payload/guest_helpers.S vmm/hw/hw_x86.c
PMCTEST_OBJS := $(patsubst %.S,$(BUILD)/efi/%.o,$(patsubst %.c,$(BUILD)/efi/%.o,$(PMCTEST_SRCS)))
$(BUILD)/pmctest.so: $(PMCTEST_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(PMCTEST_OBJS) $(EFI_LIBS) -o $@
all: $(BUILD)/pmctest.efi
-include $(PMCTEST_OBJS:.o=.d)

# --- guest program of the Bochs architectural-LBR model test (docs/BOCHS-MODEL.md)
ARCHLBRTEST_SRCS := tests/payload/archlbrtest.c tests/payload/archlbr_code.S tests/payload/guest_helpers.S vmm/hw/hw_x86.c
ARCHLBRTEST_OBJS := $(patsubst %.S,$(BUILD)/efi/%.o,$(patsubst %.c,$(BUILD)/efi/%.o,$(ARCHLBRTEST_SRCS)))
$(BUILD)/archlbrtest.so: $(ARCHLBRTEST_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(ARCHLBRTEST_OBJS) $(EFI_LIBS) -o $@
all: $(BUILD)/archlbrtest.efi
-include $(ARCHLBRTEST_OBJS:.o=.d)

.PHONY: all
all: $(BUILD)/tracevisor.efi $(BUILD)/payload.efi tools

# --- Intel PT model test (tests/bochs/pt-model.sh, docs/BOCHS-MODEL.md): the
# guest program and the host-side libipt decoder (built where libipt-dev is)
PTTEST_SRCS := tests/payload/pttest.c tests/payload/pt_code.S tests/payload/guest_helpers.S vmm/hw/hw_x86.c
PTTEST_OBJS := $(patsubst %.S,$(BUILD)/efi/%.o,$(patsubst %.c,$(BUILD)/efi/%.o,$(PTTEST_SRCS)))
$(BUILD)/pttest.so: $(PTTEST_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(PTTEST_OBJS) $(EFI_LIBS) -o $@
all: $(BUILD)/pttest.efi
-include $(PTTEST_OBJS:.o=.d)
$(BUILD)/pt-flow: tests/bochs/pt_flow.c
	@mkdir -p $(dir $@)
	@echo "  HOSTCC  $<"
	$(Q)$(HOST_CC) -std=gnu11 -g -O1 $(WARN) $< $(shell pkg-config --libs libipt 2>/dev/null || echo -lipt) -o $@
ifneq ($(wildcard /usr/include/intel-pt.h),)
all: $(BUILD)/pt-flow
endif

# --- the Linux guest fixture (docs/LINUX-FIXTURE.md) ---------------------------
include tests/linux/linux.mk

# --- USB image -------------------------------------------------------------
.PHONY: usb
usb: $(BUILD)/tracevisor-usb.img
$(BUILD)/tracevisor-usb.img: $(BUILD)/tracevisor.efi docs/tracevisor.conf.sample scripts/mkimage.sh
	$(Q)bash scripts/mkimage.sh $@ EFI/BOOT/BOOTX64.EFI=$(BUILD)/tracevisor.efi \
		EFI/tracevisor/tracevisor.conf=docs/tracevisor.conf.sample

# --- host unit tests ----------------------------------------------------------
HOST_CC ?= $(CC)
HOST_CFLAGS := -std=gnu11 -g -O1 $(WARN) -fsanitize=address,undefined \
	-fno-sanitize-recover=all -fno-omit-frame-pointer -I. -Itests/fakes
UNIT_LIB_SRCS := $(VMM_SRCS) boot/load_option.c drivers/serial.c tests/fakes/hw_fake.c
UNIT_LIB_SRCS += $(NET_PROTO_SRCS)
UNIT_LIB_SRCS += drivers/devio.c drivers/pci.c drivers/nic.c drivers/e1000.c drivers/virtio_net.c net/selftest.c net/rawframe.c
UNIT_LIB_SRCS += boot/acpi.c
# Unit tests follow the code's layout: tests/unit/<dir>/test_*.c tests <dir>.
UNIT_TEST_SRCS := $(shell find tests/unit -name 'test_*.c' | sort)
UNIT_TESTS := $(addprefix $(BUILD)/host/,$(basename $(notdir $(UNIT_TEST_SRCS))))
# Test names are unique across directories (one binary per name).
vpath test_%.c $(sort $(dir $(UNIT_TEST_SRCS)))

# The code under test is compiled once into an archive (each object with
# its own header dependencies); every test links against it.
UNIT_LIB_OBJS := $(patsubst %.c,$(BUILD)/host/lib/%.o,$(UNIT_LIB_SRCS))
UNIT_LIB := $(BUILD)/host/libtvunit.a

$(BUILD)/host/lib/%.o: %.c | $(BUILD)/deps.mk
	@mkdir -p $(dir $@)
	@echo "  HOSTCC  $<"
	$(Q)$(HOST_CC) $(HOST_CFLAGS) -MMD -MP -c $< -o $@

$(UNIT_LIB): $(UNIT_LIB_OBJS)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/host/unit/%.o: %.c | $(BUILD)/deps.mk
	@mkdir -p $(dir $@)
	@echo "  HOSTCC  $<"
	$(Q)$(HOST_CC) $(HOST_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/host/test_%: $(BUILD)/host/unit/test_%.o $(UNIT_LIB)
	@mkdir -p $(dir $@)
	@echo "  HOSTLD  $@"
	$(Q)$(HOST_CC) $(HOST_CFLAGS) $< $(UNIT_LIB) -lcmocka -o $@

.PRECIOUS: $(BUILD)/host/unit/%.o
-include $(UNIT_LIB_OBJS:.o=.d) $(patsubst $(BUILD)/host/%,$(BUILD)/host/unit/%.d,$(UNIT_TESTS))

# --- host tools (build/tracevisor) and their tests ------------------------------
include host-tools/host.mk

.PHONY: unit test test-qemu test-bochs
unit: $(UNIT_TESTS) $(HOST_TOOL_TESTS) $(BUILD)/tracevisor.so
	@BUILD=$(BUILD) bash tests/run-tests.sh unit

test-qemu: all $(BUILD)/tracevisor-usb.img linux-fixture
	@BUILD=$(BUILD) bash tests/run-tests.sh qemu

test-bochs: all $(BUILD)/tracevisor-usb.img linux-fixture
	@BUILD=$(BUILD) bash tests/run-tests.sh bochs

test: all $(BUILD)/tracevisor-usb.img $(UNIT_TESTS) $(HOST_TOOL_TESTS) linux-fixture
	@BUILD=$(BUILD) bash tests/run-tests.sh unit qemu bochs

.PHONY: run
run: all $(BUILD)/tracevisor-usb.img $(if $(filter payload,$(RUN_GUEST)),,linux-fixture)
	bash scripts/run.sh $(EMU)

# Benchmarks, never part of `make test`: Linux in Bochs with vmx off vs on,
# the exit profile, the trace ring's producer (docs/BENCHMARKS.md).
# BENCH_REPEAT=N boots per setting (default 2).
.PHONY: bench
bench: all $(BUILD)/tracevisor-usb.img linux-fixture
	@bash tests/bench/bench.sh

.PHONY: clean
clean:
	rm -rf $(BUILD)

-include $(TV_OBJS:.o=.d) $(PAYLOAD_OBJS:.o=.d) $(LBRTEST_OBJS:.o=.d)

# Fuzzing at scale, beyond the short fixed run in `make unit`: every
# target for FUZZ_RUNS_LONG executions (default 10,000,000), one at a
# time under nice, its corpus kept in $(BUILD)/test/fuzz/corpus-TARGET;
# FUZZ_TARGETS, FUZZ_MAX_SECONDS, FUZZ_FORK: see tests/build/fuzz.sh,
# figures in docs/FUZZING.md.
.PHONY: fuzz
fuzz: fuzz-targets
	@TV_BUILD=$(abspath $(BUILD)) bash tests/build/fuzz.sh --long
