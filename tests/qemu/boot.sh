#!/usr/bin/env bash
# qemu/boot.sh - the product image from a USB stick under QEMU TCG + OVMF:
# banner, "VT-x not available" (TCG has no VMX), the sample config read
# without errors, the next BootOrder entry (a second disk with the test
# payload) chainloaded by tracevisor itself, clean power-off.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
work=$TV_BUILD/test/qemu-boot
mkdir -p "$work"
log=$TV_LOGS/qemu-boot.serial.log

cp "$TV_BUILD/tracevisor-usb.img" "$work/stick.img"
tv_image "$work/disk2.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/payload.efi"

start=$(date +%s.%N)
rc=$(tv_qemu "$log" 60 "$work/stick.img" "$work/disk2.img")
secs=$(echo "$(date +%s.%N) - $start" | bc)

if [ "$rc" = 0 ]; then tv_ok "qemu-boot: clean power-off (${secs}s)"; else tv_fail "qemu-boot: clean power-off" "qemu exit status $rc (124 = timeout)"; fi
tv_expect "qemu-boot: banner" "$log" 'tracevisor [0-9]+\.[0-9]+\.[0-9]+ \(.*\) - branch tracing hypervisor'
tv_expect "qemu-boot: cpu line" "$log" '\[info\] cpu: [A-Za-z]+ family [0-9]+'
tv_expect "qemu-boot: capabilities" "$log" '\[info\] caps: VMX no, .*DS/BTS'
tv_expect "qemu-boot: intel pt line" "$log" '\[info\] caps: Intel PT (no|yes)'
tv_expect "qemu-boot: VT-x not available" "$log" 'VT-x not available: CPUID.1:ECX.VMX\[bit 5\] is 0'
tv_expect "qemu-boot: config read" "$log" 'config: read \\EFI\\tracevisor\\tracevisor.conf'
tv_reject "qemu-boot: no errors" "$log" '\[err\]'
tv_expect "qemu-boot: memory map" "$log" '\[info\] memory: [0-9]+ descriptors, [0-9]+ MiB usable'
tv_expect "qemu-boot: lwIP up" "$log" 'net: lwIP 2\.1\.3 initialised'
tv_expect "qemu-boot: chainload" "$log" 'chainload: starting Boot[0-9A-F]{4} .*handing over'
tv_expect "qemu-boot: payload ran" "$log" 'TRACEVISOR-PAYLOAD-OK'
read -r tvh parent < <(tv_handles "$log")
if [ "$tvh" != 0000000000000000 ] && [ "$tvh" = "$parent" ]; then
	tv_ok "qemu-boot: payload started by tracevisor (parent $parent)"
else
	tv_fail "qemu-boot: payload started by tracevisor" "tracevisor handle $tvh, payload parent $parent"
fi
tv_keep_log "$log"
