#!/usr/bin/env bash
# bochs/pci-hide.sh - a PCI function hidden by tracevisor is invisible to
# Linux: Bochs 3.0 with an e1000 (8086:100e) boots the Linux fixture
# twice under tracevisor, first without pci_hide (Linux lists the e1000:
# the control case, and where it sits), then with pci_hide = its address
# (Linux must not list it; the host bridge and the other functions stay).
# Under i440FX there is no MCFG, so this is configuration mechanism #1
# (0xCF8/0xCFC) through the I/O bitmaps; ECAM is covered by the unit
# tests (tests/unit/vmm/exit/test_pci_hide.c).  docs/PCI-HIDE.md.
#
# TV_LINUX_TIMEOUT (seconds per boot, default 600).
#
# LINUX_* come from build/linux/linux.env:
# shellcheck disable=SC2153
set -uo pipefail
# shellcheck source=../lib.sh source-path=SCRIPTDIR disable=SC1091
. "$(dirname "$0")/../lib.sh"
# shellcheck disable=SC2034 # read by tv_fail and tv_keep_log (tests/lib.sh)
TV_FAILED=0
work=$TV_BUILD/test/bochs-pci-hide
mkdir -p "$work"

if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "bochs-pci-hide" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
if [ ! -f "$TV_BUILD/linuxload.efi" ]; then
	tv_skip "bochs-pci-hide" "build/linuxload.efi not built (make linux-fixture)"
	exit 0
fi
fixture_rc=0
bash "$TV_ROOT/scripts/linux-fixture.sh" "$TV_BUILD/linux" >"$work/fixture.log" 2>&1 || fixture_rc=$?
if [ "$fixture_rc" = 75 ]; then
	tv_skip "bochs-pci-hide" "the kernel could not be fetched: $(tail -n 1 "$work/fixture.log")"
	exit 0
elif [ "$fixture_rc" != 0 ]; then
	tv_fail "bochs-pci-hide: fixture" "scripts/linux-fixture.sh failed: $(tail -n 1 "$work/fixture.log")"
	exit 0
fi
# shellcheck source=/dev/null
. "$TV_BUILD/linux/linux.env"
# linuxload's DSDT has no PCI root bridge: with ACPI, Linux would scan no
# PCI bus at all; pci=noacpi makes it probe bus 0 through mechanism #1.
printf '%s\n' "$LINUX_CMDLINE tsc_early_khz=100000 pci=noacpi" >"$work/cmdline.txt"

# The e1000 on Bochs's PCI bus; ethmod=null drops what it sends.
E1000='e1000: enabled=1, mac=52:54:00:12:34:56, ethmod=null'

# boot NAME [CONF-LINE] - Linux under tracevisor in Bochs with the e1000.
boot() {
	local name=$1 log=$TV_LOGS/$1.serial.log rc
	printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' ${2:+"$2"} >"$work/$name.conf"
	TV_IMAGE_MIB=64 tv_image "$work/$name.img" \
		EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/$name.conf" \
		EFI/linux/linuxload.efi="$TV_BUILD/linuxload.efi" \
		EFI/linux/vmlinuz="$LINUX_VMLINUZ" \
		EFI/linux/initrd.img="$LINUX_INITRD" \
		EFI/linux/cmdline.txt="$work/cmdline.txt"
	rc=$(TV_BOCHS_MEGS=1024 TV_BOCHS_EXTRA=$E1000 tv_bochs "$log" "${TV_LINUX_TIMEOUT:-600}" "$work/$name.img" 2)
	rm -f "$work/$name.img"
	if grep -q 'ACPI control: soft power off' "$log.stdout" "$log.bochs" 2>/dev/null; then
		tv_ok "$name: clean ACPI power-off"
	else
		tv_fail "$name: clean ACPI power-off" "bochs status $rc (124 = timeout), no soft power-off"
	fi
	tv_expect "$name: all CPUs launched" "$log" 'vmx: all 2 CPUs run as guests of tracevisor'
	tv_expect "$name: Linux listed its PCI functions" "$log" '^TVPCI: done'
	tv_expect "$name: the host bridge is listed" "$log" '^TVPCI: 0000:00:00\.0 0x8086:0x1237'
	tv_reject "$name: no tracevisor errors" "$log" '\[err\]'
	tv_reject "$name: no unhandled exits" "$log" 'unhandled exit reason'
	tv_reject "$name: no kernel panic" "$log" 'Kernel panic'
}

# 1. Control: nothing hidden, Linux lists the e1000; learn its address.
boot bochs-pci-visible
log=$TV_LOGS/bochs-pci-visible.serial.log
tv_expect "bochs-pci-visible: Linux lists the e1000 (8086:100e)" "$log" '^TVPCI: 0000:[0-9a-f:.]+ 0x8086:0x100e'
tv_reject "bochs-pci-visible: no I/O bitmaps without pci_hide" "$log" 'hidden from the guest'
addr=$(tr -d '\r' <"$log" | sed -n 's/^TVPCI: 0000:\([0-9a-f:.]*\) 0x8086:0x100e.*/\1/p' | head -1)
visible=$(tr -d '\r' <"$log" | grep -c '^TVPCI: 0000:')
tv_keep_log "$log"
if [ -z "$addr" ]; then
	tv_fail "bochs-pci-hidden" "no e1000 address from the control boot: not run"
	exit 0
fi

# 2. pci_hide = that address: Linux must not list it, the rest stays.
boot bochs-pci-hidden "pci_hide = $addr"
log=$TV_LOGS/bochs-pci-hidden.serial.log
tv_expect "bochs-pci-hidden: tracevisor hides $addr" "$log" "pci: $addr hidden from the guest"
tv_expect "bochs-pci-hidden: no MCFG under i440FX, 0xCF8/0xCFC only" "$log" 'pci: no ECAM .*hidden through 0xCF8/0xCFC only'
tv_reject "bochs-pci-hidden: Linux does not list 8086:100e" "$log" '^TVPCI: .* 0x8086:0x100e'
tv_reject "bochs-pci-hidden: Linux does not list $addr" "$log" "^TVPCI: 0000:$addr "
hidden=$(tr -d '\r' <"$log" | grep -c '^TVPCI: 0000:')
if [ "$hidden" = $((visible - 1)) ]; then
	tv_ok "bochs-pci-hidden: one function fewer than the control ($hidden of $visible)"
else
	tv_fail "bochs-pci-hidden: one function fewer than the control" "$hidden listed, control $visible"
fi
tv_keep_log "$log"
