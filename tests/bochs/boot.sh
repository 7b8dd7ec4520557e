#!/usr/bin/env bash
# bochs/boot.sh - the same image under Bochs 3.0 + OVMF with 2 Skylake-X
# CPUs: the banner must report VT-x as available (launching it is the
# blue-pill issue, tests/bochs/bluepill.sh), then with `vmx = off` the
# payload on the same disk is chainloaded (loader=) unvirtualized and
# powers the machine off.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "bochs-boot" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
work=$TV_BUILD/test/bochs-boot
mkdir -p "$work"
log=$TV_LOGS/bochs-boot.serial.log

printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' 'vmx = off' >"$work/tracevisor.conf"
tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
	EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
	EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"

start=$(date +%s.%N)
rc=$(tv_bochs "$log" 240 "$work/disk.img" 2)
secs=$(echo "$(date +%s.%N) - $start" | bc)
if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "bochs-boot: finished by itself (status $rc, ${secs}s)"; else tv_fail "bochs-boot: finished by itself" "timed out"; fi
tv_expect "bochs-boot: banner" "$log" 'tracevisor [0-9]+\.[0-9]+\.[0-9]+ \(.*\) - branch tracing hypervisor'
tv_expect "bochs-boot: Intel CPU" "$log" 'cpu: GenuineIntel family 6'
tv_expect "bochs-boot: VT-x available" "$log" 'VT-x available: CPUID.1:ECX.VMX=1, IA32_FEATURE_CONTROL=0x[0-9a-f]+'
tv_expect "bochs-boot: vmx=off honoured" "$log" 'vmx: off in tracevisor.conf; booting unvirtualized'
tv_reject "bochs-boot: no errors" "$log" '\[err\]'
tv_expect "bochs-boot: payload ran" "$log" 'TRACEVISOR-PAYLOAD-OK'
read -r tvh parent < <(tv_handles "$log")
if [ "$tvh" != 0000000000000000 ] && [ "$tvh" = "$parent" ]; then
	tv_ok "bochs-boot: payload started by tracevisor"
else
	tv_fail "bochs-boot: payload started by tracevisor" "tracevisor handle $tvh, payload parent $parent"
fi
tv_keep_log "$log"
