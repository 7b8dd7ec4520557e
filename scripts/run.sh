#!/usr/bin/env bash
# run.sh [qemu|bochs] - boot the USB image in an emulator and show the traced
# machine's serial log as it comes.  The image is attached as the first
# disk, a second disk holds the test payload (a stand-in OS loader), so
# tracevisor's chainload of the next boot entry is visible end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/lib.sh
emu=${1:-${EMU:-qemu}}
work=$TV_BUILD/run
mkdir -p "$work"
log=$work/serial.log
: >"$log"

case "$emu" in
qemu)
	cp "$TV_BUILD/tracevisor-usb.img" "$work/stick.img"
	tv_image "$work/disk2.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/payload.efi"
	echo "run: QEMU TCG + OVMF, tracevisor-usb.img as a USB stick (no VT-x under TCG); serial log: $log"
	tv_qemu "$log" 90 "$work/stick.img" "$work/disk2.img" >"$work/status" &
	;;
bochs)
	printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' >"$work/tracevisor.conf"
	tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
		EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
	echo "run: Bochs 3.0 + OVMF, 2 Skylake-X CPUs with VT-x; serial log: $log"
	tv_bochs "$log" 300 "$work/disk.img" 2 >"$work/status" &
	;;
*)
	echo "run: unknown emulator '$emu' (qemu or bochs)" >&2
	exit 2
	;;
esac
emu_pid=$!
tail -n +1 -f "$log" --pid="$emu_pid" | tr -d '\r'
wait "$emu_pid" || true
echo "run: emulator finished with status $(cat "$work/status") (0 or 1 = powered off; 124 = timeout)"
