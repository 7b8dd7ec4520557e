#!/usr/bin/env bash
# bochs/bluepill.sh - the blue pill on 2 Skylake-X CPUs in Bochs 3.0:
# tracevisor virtualizes both CPUs, then the test payload (loader=) runs as
# a guest and sees what a guest should: VMX hidden, the tracevisor CPUID
# leaf, the VMCALL probe answered; then a clean power-off.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "bluepill" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
work=$TV_BUILD/test/bochs-bluepill
mkdir -p "$work"
log=$TV_LOGS/bochs-bluepill.serial.log

printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' >"$work/tracevisor.conf"
tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
	EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
	EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"

start=$(date +%s.%N)
rc=$(tv_bochs "$log" 240 "$work/disk.img" 2)
secs=$(echo "$(date +%s.%N) - $start" | bc)
if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "bluepill: finished by itself (status $rc, ${secs}s)"; else tv_fail "bluepill: finished by itself" "timed out"; fi
tv_expect "bluepill: memory reserved" "$log" 'vmx: reserved [0-9]+ KiB at 0x[0-9a-f]+ \(EfiReservedMemoryType\) for 2 CPUs'
tv_expect "bluepill: EPT built" "$log" 'vmx: EPT built \(EPTP 0x[0-9a-f]+\)'
tv_expect "bluepill: resident copy up" "$log" 'hv: resident copy initialised, 2 CPUs'
tv_expect "bluepill: AP launched" "$log" 'vmx: cpu 1 \(APIC [0-9]+\) now runs as a guest'
tv_expect "bluepill: all CPUs launched" "$log" 'vmx: all 2 CPUs run as guests of tracevisor'
tv_reject "bluepill: no errors" "$log" '\[err\]'
tv_expect "bluepill: guest sees VMX hidden" "$log" 'TRACEVISOR-PAYLOAD: CPUID.1:ECX.VMX=0'
tv_expect "bluepill: hypervisor leaf" "$log" 'TRACEVISOR-PAYLOAD: hypervisor leaf: tracevisor max 0x0*40000001'
tv_expect "bluepill: vmcall probe answered" "$log" "TRACEVISOR-PAYLOAD: vmcall probe: status 0x0+ magic 0x0*53565254 abi 0x0*$(sed -n 's/^#define TV_HC_ABI_VERSION \([0-9]*\).*/\1/p' "$TV_ROOT/vmm/exit/hypercall.h")"
tv_expect "bluepill: AP is a guest too" "$log" 'TRACEVISOR-PAYLOAD: cpu 1: VMX=0 hypervisor=tracevisor'
tv_expect "bluepill: boot-time hypercalls sealed" "$log" 'hypercall: sealed by cpu 0'
tv_expect "bluepill: payload ran as guest" "$log" 'TRACEVISOR-PAYLOAD-OK'
tv_keep_log "$log"
