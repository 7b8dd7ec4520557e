# SPDX-License-Identifier: MIT
#
# tests/linux/linux.mk - the Linux guest fixture of the test bench
# (docs/LINUX-FIXTURE.md).  Included by the top-level Makefile; uses its
# BUILD, LD, Q, EFI_LDFLAGS, EFI_CRT0, EFI_LIBS and its pattern rules
# $(BUILD)/efi/%.o: %.c and $(BUILD)/%.efi: $(BUILD)/%.so.
#
#   make build/linuxload.efi   the bench's Linux loader (an EFI application)
#   make linux-fixture         the loader, plus build/linux/: initrd.img,
#                              cmdline.txt, linux.env (the kernel is fetched
#                              once with apt-get download and cached in
#                              $(TRACEVISOR_CACHE)/linux-<version>/)

LINUXLOAD_SRCS := tests/linux/linuxload.c vmm/hw/hw_x86.c
LINUXLOAD_OBJS := $(patsubst %.c,$(BUILD)/efi/%.o,$(LINUXLOAD_SRCS))

$(BUILD)/linuxload.so: $(LINUXLOAD_OBJS) linker.ld
	@echo "  LD      $@"
	$(Q)$(LD) $(EFI_LDFLAGS) $(EFI_CRT0) $(LINUXLOAD_OBJS) $(EFI_LIBS) -o $@

# The script is idempotent and cached (seconds); it rewrites its outputs
# only when their bytes change, so it runs every time.
.PHONY: linux-fixture
linux-fixture: $(BUILD)/linuxload.efi
	$(Q)bash scripts/linux-fixture.sh $(BUILD)/linux

-include $(LINUXLOAD_OBJS:.o=.d)
