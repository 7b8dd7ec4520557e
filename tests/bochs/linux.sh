#!/usr/bin/env bash
# bochs/linux.sh - a real SMP Linux as tracevisor's guest: Bochs 3.0 with 2
# Skylake-X CPUs boots the stick, tracevisor virtualizes both CPUs, then
# chainloads the bench's loader (loader = \EFI\linux\linuxload.efi), which
# installs the ACPI tables OVMF under Bochs lacks and starts Debian's kernel
# through its EFI stub (the way a distribution kernel boots).  The initramfs'
# /init reports what Linux sees and powers off.  docs/LINUX-FIXTURE.md.
#
# TV_LINUX_PATHS picks the cases: "stub" (default: the kernel's EFI stub,
# EFI runtime services live) and/or "direct" (the fixture's fast path, no
# EFI runtime), e.g. TV_LINUX_PATHS="stub direct".  Debugging knobs:
# TV_CONF_EXTRA (one more tracevisor.conf line), TV_LINUX_CMDLINE (below),
# TV_LINUX_TIMEOUT (seconds, default 300).
#
# LINUX_* come from build/linux/linux.env:
# shellcheck disable=SC2153
set -uo pipefail
# shellcheck source=../lib.sh source-path=SCRIPTDIR disable=SC1091
. "$(dirname "$0")/../lib.sh"
# shellcheck disable=SC2034 # read by tv_fail and tv_keep_log (tests/lib.sh)
TV_FAILED=0
work=$TV_BUILD/test/bochs-linux
mkdir -p "$work"

if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "bochs-linux" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
if [ ! -f "$TV_BUILD/linuxload.efi" ]; then
	tv_skip "bochs-linux" "build/linuxload.efi not built (make linux-fixture)"
	exit 0
fi
fixture_rc=0
bash "$TV_ROOT/scripts/linux-fixture.sh" "$TV_BUILD/linux" >"$work/fixture.log" 2>&1 || fixture_rc=$?
if [ "$fixture_rc" = 75 ]; then
	tv_skip "bochs-linux" "the kernel could not be fetched: $(tail -n 1 "$work/fixture.log")"
	exit 0
elif [ "$fixture_rc" != 0 ]; then
	tv_fail "bochs-linux: fixture" "scripts/linux-fixture.sh failed: $(tail -n 1 "$work/fixture.log")"
	exit 0
fi
# shellcheck source=/dev/null
. "$TV_BUILD/linux/linux.env"

printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' ${TV_CONF_EXTRA:+"$TV_CONF_EXTRA"} >"$work/tracevisor.conf"
# Bochs's Skylake-X model reports a 3.5 GHz base frequency (CPUID 0x16),
# from which Linux derives its TSC rate, but Bochs's TSC counts emulated
# instructions: 100 MHz at tv_bochs's ips=100000000.  Linux is told the
# real rate (tsc_early_khz; it then refines it against the PM timer), so
# the uptimes it prints are true emulated seconds (it boots without it too).
# TV_LINUX_CMDLINE replaces the whole command line (debugging: e.g. drop
# "quiet"); the initrd= argument must stay.
printf '%s\n' "${TV_LINUX_CMDLINE:-$LINUX_CMDLINE tsc_early_khz=100000}" >"$work/cmdline.txt"
LINUX_CMDLINE_FILE=$work/cmdline.txt

# linux_case NAME [DEST=SRC...] - boot the stick under Bochs, check the log.
linux_case() {
	local name=$1 log=$TV_LOGS/$1.serial.log rc start secs uptime
	shift
	TV_IMAGE_MIB=64 tv_image "$work/$name.img" \
		EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
		EFI/linux/linuxload.efi="$TV_BUILD/linuxload.efi" \
		EFI/linux/vmlinuz="$LINUX_VMLINUZ" \
		EFI/linux/initrd.img="$LINUX_INITRD" \
		EFI/linux/cmdline.txt="$LINUX_CMDLINE_FILE" "$@"

	start=$(date +%s.%N)
	rc=$(TV_BOCHS_MEGS=1024 tv_bochs "$log" "${TV_LINUX_TIMEOUT:-300}" "$work/$name.img" 2)
	secs=$(echo "$(date +%s.%N) - $start" | bc)
	rm -f "$work/$name.img"

	# Bochs exits 1 after the ACPI soft power-off; 124/137 is the timeout.
	if grep -q 'ACPI control: soft power off' "$log.stdout" "$log.bochs" 2>/dev/null; then
		tv_ok "$name: clean ACPI power-off (${secs}s wall, $LINUX_ABI $LINUX_VERSION)"
	else
		tv_fail "$name: clean ACPI power-off" "bochs status $rc after ${secs}s (124 = timeout), no soft power-off"
	fi
	tv_expect "$name: tracevisor banner" "$log" 'tracevisor [0-9]+\.[0-9]+\.[0-9]+ \(.*\) - branch tracing hypervisor'
	tv_expect "$name: all CPUs launched" "$log" 'vmx: all 2 CPUs run as guests of tracevisor'
	tv_expect "$name: linuxload started" "$log" 'linuxload: started'
	tv_expect "$name: ACPI tables installed" "$log" 'linuxload: ACPI: installed RSDP at '
	tv_expect "$name: linuxload saw 2 CPUs" "$log" 'linuxload: CPUs: 2 '
	if [ "$name" = bochs-linux-direct ]; then
		tv_expect "$name: kernel started" "$log" 'linuxload: e820: [0-9]+ entries, starting Linux'
	else
		tv_expect "$name: kernel started" "$log" 'linuxload: starting \\EFI\\linux\\vmlinuz through its EFI stub'
	fi
	tv_expect "$name: init started" "$log" '^TVLINUX: init started'
	tv_expect "$name: 2 CPUs online (sysconf)" "$log" '^TVPROBE: cpus online \(sysconf\): 2\b'
	tv_expect "$name: 2 CPUs online (sysfs)" "$log" '^TVPROBE: cpus online \(sysfs\): 0-1\b'
	tv_expect "$name: smp brought up 2 CPUs" "$log" '^TVLINUX: .*smp: Brought up 1 node, 2 CPUs'
	tv_expect "$name: guest sees no VMX" "$log" '^TVPROBE: vmx \(CPUID\.1:ECX\[5\]\): 0'
	tv_expect "$name: hypervisor leaf is tracevisor" "$log" '^TVPROBE: hypervisor: tracevisor \(max hypervisor leaf 0x40000001\)'
	tv_expect "$name: probe answered (CPL3 VMCALL refused with #UD)" "$log" '^TVPROBE: vmcall from CPL3: SIGILL \(expected\)'
	tv_expect "$name: probe done" "$log" '^TVPROBE: done'
	tv_expect "$name: init reached power-off" "$log" '^TVLINUX: powering off'
	tv_reject "$name: no tracevisor errors" "$log" '\[err\]'
	tv_reject "$name: no unhandled exits" "$log" 'unhandled exit reason'
	tv_reject "$name: no kernel panic" "$log" 'Kernel panic|RCU.*stall'
	uptime=$(tr -d '\r' <"$log" | sed -n 's/^TVLINUX: uptime \([0-9.]*\) s.*/\1/p' | head -1)
	echo "# $name: ${secs}s wall from Bochs start to power-off; Linux uptime at /init ${uptime:-?}s"
	tv_keep_log "$log"
}

for path in ${TV_LINUX_PATHS:-stub}; do
	case $path in
	stub)
		linux_case bochs-linux ;;
	direct)
		if [ -n "$LINUX_VMLINUX" ]; then
			linux_case bochs-linux-direct EFI/linux/vmlinux="$LINUX_VMLINUX"
		else
			tv_skip "bochs-linux-direct" "the fixture has no vmlinux"
		fi ;;
	*)
		tv_fail "bochs-linux" "TV_LINUX_PATHS: unknown path '$path' (stub, direct)" ;;
	esac
done
