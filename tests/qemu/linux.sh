#!/usr/bin/env bash
# qemu/linux.sh - a real Linux booted through tracevisor under QEMU TCG +
# OVMF with 2 CPUs: tracevisor (no VT-x under TCG) chainloads the bench's
# loader (loader = \EFI\linux\linuxload.efi), which starts Debian's kernel,
# twice: through the kernel's EFI stub (qemu-linux, the baseline) and as the
# uncompressed ELF through the 64-bit boot protocol (qemu-linux-direct, the
# fast path the Bochs tier uses).  The fixture's /init reports what Linux
# sees and powers off.  docs/LINUX-FIXTURE.md describes the fixture.
#
# LINUX_* come from build/linux/linux.env:
# shellcheck disable=SC2153
set -uo pipefail
# shellcheck source=../lib.sh source-path=SCRIPTDIR disable=SC1091
. "$(dirname "$0")/../lib.sh"
# shellcheck disable=SC2034 # read by tv_fail and tv_keep_log (tests/lib.sh)
TV_FAILED=0
name=qemu-linux
work=$TV_BUILD/test/$name
mkdir -p "$work"

if [ ! -f "$TV_BUILD/linuxload.efi" ]; then
	tv_skip "$name" "build/linuxload.efi not built (make linux-fixture)"
	exit 0
fi
# Cached after the first run (seconds); the kernel comes from Debian's archive.
fixture_rc=0
bash "$TV_ROOT/scripts/linux-fixture.sh" "$TV_BUILD/linux" >"$work/fixture.log" 2>&1 || fixture_rc=$?
if [ "$fixture_rc" = 75 ]; then
	tv_skip "$name" "the kernel could not be fetched: $(tail -n 1 "$work/fixture.log")"
	exit 0
elif [ "$fixture_rc" != 0 ]; then
	tv_fail "$name: fixture" "scripts/linux-fixture.sh failed: $(tail -n 1 "$work/fixture.log")"
	exit 0
fi
# shellcheck source=/dev/null
. "$TV_BUILD/linux/linux.env"

printf '%s\n' 'loader = \EFI\linux\linuxload.efi' >"$work/tracevisor.conf"

# linux_case NAME [DEST=SRC...] - boot the stick (tracevisor, linuxload,
# vmlinuz, initrd, cmdline, plus the extra files) and check the log.
linux_case() {
	local name=$1 log=$TV_LOGS/$1.serial.log rc=0 start secs uptime
	shift
	TV_IMAGE_MIB=64 tv_image "$work/$name.img" \
		EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
		EFI/linux/linuxload.efi="$TV_BUILD/linuxload.efi" \
		EFI/linux/vmlinuz="$LINUX_VMLINUZ" \
		EFI/linux/initrd.img="$LINUX_INITRD" \
		EFI/linux/cmdline.txt="$LINUX_CMDLINE_FILE" "$@"

	# Like tv_qemu, but 2 CPUs, room for Linux, and no second disk.
	rm -f "$log"
	start=$(date +%s.%N)
	timeout --kill-after=5 180 qemu-system-x86_64 -machine q35 -smp 2 -m 1024 -cpu max \
		-bios "$(tv_dep OVMF_FD)" -nographic -no-reboot \
		-device qemu-xhci \
		-drive if=none,id=stick,format=raw,file="$work/$name.img" \
		-device usb-storage,drive=stick,bootindex=0 \
		-net none -serial file:"$log" -monitor none -display none \
		</dev/null >"$log.stdout" 2>&1 || rc=$?
	secs=$(echo "$(date +%s.%N) - $start" | bc)
	rm -f "$work/$name.img"

	if [ "$rc" = 0 ]; then
		tv_ok "$name: clean power-off (${secs}s wall, $LINUX_ABI $LINUX_VERSION)"
	else
		tv_fail "$name: clean power-off" "qemu exit status $rc after ${secs}s (124 = timeout)"
	fi
	tv_expect "$name: tracevisor banner" "$log" 'tracevisor [0-9]+\.[0-9]+\.[0-9]+ \(.*\) - branch tracing hypervisor'
	tv_expect "$name: VT-x not available" "$log" 'VT-x not available'
	tv_expect "$name: linuxload started" "$log" 'linuxload: started'
	tv_expect "$name: firmware ACPI kept" "$log" 'linuxload: ACPI: firmware publishes ACPI 2\.0 tables, installing none'
	tv_expect "$name: linuxload saw 2 CPUs" "$log" 'linuxload: CPUs: 2 '
	if [ "$name" = qemu-linux-direct ]; then
		tv_expect "$name: vmlinux loaded" "$log" 'linuxload: vmlinux: [0-9]+ bytes loaded'
		tv_expect "$name: kernel started" "$log" 'linuxload: e820: [0-9]+ entries, starting Linux'
	else
		tv_expect "$name: kernel started" "$log" 'linuxload: starting \\EFI\\linux\\vmlinuz through its EFI stub'
	fi
	tv_expect "$name: init started" "$log" '^TVLINUX: init started'
	tv_expect "$name: 2 CPUs online (sysconf)" "$log" '^TVPROBE: cpus online \(sysconf\): 2\b'
	tv_expect "$name: 2 CPUs online (sysfs)" "$log" '^TVPROBE: cpus online \(sysfs\): 0-1\b'
	tv_expect "$name: smp brought up 2 CPUs" "$log" '^TVLINUX: .*smp: Brought up 1 node, 2 CPUs'
	tv_expect "$name: guest sees no VMX" "$log" '^TVPROBE: vmx \(CPUID\.1:ECX\[5\]\): 0'
	tv_expect "$name: no hypervisor under TCG" "$log" '^TVPROBE: hypervisor: none'
	tv_expect "$name: probe done" "$log" '^TVPROBE: done'
	tv_expect "$name: init reached power-off" "$log" '^TVLINUX: powering off'
	tv_reject "$name: no tracevisor errors" "$log" '\[err\]'
	tv_reject "$name: no kernel panic" "$log" 'Kernel panic'
	uptime=$(tr -d '\r' <"$log" | sed -n 's/^TVLINUX: uptime \([0-9.]*\) s.*/\1/p' | head -1)
	echo "# $name: ${secs}s wall from QEMU start to power-off; Linux uptime at /init ${uptime:-?}s"
	tv_keep_log "$log"
}

# The baseline: the kernel's EFI stub.
linux_case qemu-linux
# The bench's fast path (used under Bochs): the uncompressed ELF, direct.
if [ -n "$LINUX_VMLINUX" ]; then
	# shellcheck disable=SC2034 # the second log is kept for its own failures only
	TV_FAILED=0
	linux_case qemu-linux-direct EFI/linux/vmlinux="$LINUX_VMLINUX"
else
	tv_skip "qemu-linux-direct" "the fixture has no vmlinux"
fi
