#!/usr/bin/env bash
# bochs/broken-vmcs.sh - a deliberately broken VMCS field (guest CS access
# rights without the "accessed" type bit, SDM 3C 27.3.1.2) must be caught
# and named, and the machine must still boot, unvirtualized:
#  - by tracevisor's own pre-launch check, which names the SDM rule;
#  - with that check compiled out, by the CPU itself: the VM entry fails
#    with exit reason 33 and tracevisor unwinds the launch;
#  - broken on the boot CPU only (launched last): the AP already runs as a
#    guest and must leave VMX again, so no CPU stays virtualized.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "broken-vmcs" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
work=$TV_BUILD/test/bochs-broken-vmcs
mkdir -p "$work"
printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' >"$work/tracevisor.conf"
fault='-DTV_FAULT_VMCS_FIELD=0x4816 -DTV_FAULT_VMCS_VALUE=0xa09a'

for variant in check hardware bsp; do
	b=$work/build-$variant
	extra=$fault
	[ "$variant" = hardware ] && extra="$fault -DTV_FAULT_SKIP_CHECK"
	[ "$variant" = bsp ] && extra="$fault -DTV_FAULT_CPU=0"
	if ! make -C "$TV_ROOT" -s BUILD="$b" EXTRA_CFLAGS="$extra" "$b/tracevisor.efi" >"$work/make-$variant.log" 2>&1; then
		tv_fail "broken-vmcs ($variant): build" "see $work/make-$variant.log"
		continue
	fi
	log=$TV_LOGS/bochs-broken-vmcs-$variant.serial.log
	tv_image "$work/disk-$variant.img" EFI/BOOT/BOOTX64.EFI="$b/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
		EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
	rc=$(tv_bochs "$log" 240 "$work/disk-$variant.img" 2)
	if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "broken-vmcs ($variant): finished by itself"; else tv_fail "broken-vmcs ($variant): finished by itself" "timed out"; fi
	if [ "$variant" = check ]; then
		tv_expect "broken-vmcs (check): rule named" "$log" 'VMCS check failed, not launching: SDM 27.3.1.2: guest CS access rights 0xa09a: type 10 not accessed'
	elif [ "$variant" = bsp ]; then
		tv_expect "broken-vmcs (bsp): AP launched first" "$log" 'vmx: cpu 1 \(APIC [0-9]+\) now runs as a guest'
		tv_expect "broken-vmcs (bsp): boot CPU refused by name" "$log" 'vmx: cpu 0: VMCS check failed, not launching: SDM 27.3.1.2'
		tv_expect "broken-vmcs (bsp): AP left VMX" "$log" 'hypercall: cpu 1 leaves VMX \(devirtualized\)'
		tv_expect "broken-vmcs (bsp): all unvirtualized" "$log" 'vmx: every CPU is unvirtualized again'
		tv_expect "broken-vmcs (bsp): AP sees plain hardware" "$log" 'TRACEVISOR-PAYLOAD: cpu 1: VMX=1 hypervisor=none'
	else
		tv_expect "broken-vmcs (hardware): entry failure reported" "$log" 'VM entry failed: invalid guest state \(exit reason 0x80000021'
		tv_expect "broken-vmcs (hardware): VMCS dumped" "$log" 'GUEST_CS_AR=0xa09a'
	fi
	tv_expect "broken-vmcs ($variant): falls back" "$log" 'vmx: booting unvirtualized'
	tv_expect "broken-vmcs ($variant): no hypervisor left" "$log" 'TRACEVISOR-PAYLOAD: hypervisor: none'
	tv_expect "broken-vmcs ($variant): machine boots on" "$log" 'TRACEVISOR-PAYLOAD-OK'
	tv_keep_log "$log"
	TV_FAILED=0
done
