#!/usr/bin/env bash
# run.sh [bochs|qemu] - the main job on the embedded default machine.
#
# bochs (default): Bochs 3.0 + OVMF with 2 VT-x CPUs boots the USB stick;
#   tracevisor virtualizes both CPUs and chainloads the test payload, whose
#   traced window (tests/payload/traced.S) it single-steps with MTF on each
#   CPU.  Each closed window goes out over COM1 as TVT1 lines; this script
#   is the receiving end: it shows the machine's log as it comes (TVT1
#   lines counted, not shown), then rebuilds the trace file from them and
#   prints the first branches, symbolized against the payload, and the
#   summary of what arrived and what was lost.
# qemu: QEMU TCG + OVMF, the stick as a USB mass-storage device and the
#   payload on a second disk: no VT-x, so tracevisor says so and chainloads
#   the next boot entry; nothing is traced.
#
# Outputs in build/run/: serial.log, trace.tvt, dump.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/lib.sh
emu=${1:-${EMU:-bochs}}
work=$TV_BUILD/run
mkdir -p "$work"
log=$work/serial.log
tvt=$work/trace.tvt
: >"$log"
rm -f "$tvt" "$work/dump.txt"

case "$emu" in
qemu)
	cp "$TV_BUILD/tracevisor-usb.img" "$work/stick.img"
	tv_image "$work/disk2.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/payload.efi"
	echo "run: QEMU TCG + OVMF, tracevisor-usb.img as a USB stick (no VT-x under TCG: nothing is traced); serial log: $log"
	tv_qemu "$log" 90 "$work/stick.img" "$work/disk2.img" >"$work/status" &
	;;
bochs)
	printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' \
		'source = mtf' 'trace_start = hypercall' >"$work/tracevisor.conf"
	tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
		EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
	echo "run: Bochs 3.0 + OVMF, 2 Skylake-X CPUs with VT-x, MTF tracing of the payload's window; serial log: $log"
	tv_bochs "$log" 300 "$work/disk.img" 2 >"$work/status" &
	;;
*)
	echo "run: unknown emulator '$emu' (bochs or qemu)" >&2
	exit 2
	;;
esac
emu_pid=$!
# The log as it comes; trace lines are data for the receiver, not for eyes.
tail -n +1 -f "$log" --pid="$emu_pid" | tr -d '\r' | awk '
	/TVT1 / { n++; if (n % 100 == 0) printf "run: ... %d trace lines received\n", n; fflush(); next }
	{ print; fflush() }
	END { if (n) printf "run: %d trace lines received\n", n }'
wait "$emu_pid" || true
status=$(cat "$work/status")
echo "run: emulator finished with status $status (0 or 1 = powered off; 124 = timeout)"
[ "$emu" = bochs ] || exit 0

if ! grep -q 'TVT1 ' "$log"; then
	echo "run: no trace lines in the serial log: nothing to decode (see the log above)" >&2
	exit 1
fi
"$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" --machine "bochs (make run)"
# Symbolize against the payload where it was loaded: its "traced window at"
# line minus tv_traced's offset in payload.so.
at=$(tr -d '\r' <"$log" | sed -n 's/.*TRACEVISOR-PAYLOAD: cpu 0: traced window at \(0x[0-9a-f]*\),.*/\1/p' | head -1)
off=$(nm "$TV_BUILD/payload.so" | awk '$3 == "tv_traced" { print "0x" $1 }')
elf=()
if [ -n "$at" ] && [ -n "$off" ]; then
	elf=(--elf "$(printf '%s@0x%x' "$TV_BUILD/payload.so" $(( at - off )))")
fi
"$TV_BUILD/tracevisor" dump -q "${elf[@]}" "$tvt" >"$work/dump.txt"
echo "run: first branches of CPU 0's window:"
awk '$2 == "cpu0" && ($3 == "START" || $3 == "BRANCH") && n++ < 12' "$work/dump.txt"
echo "run: summary:"
sed -n '/^# summary/,$p' "$work/dump.txt"
echo "run: trace file $tvt, full dump $work/dump.txt"
echo "run: more: build/tracevisor drcov|chrome|symbolize $tvt (build/tracevisor --help)"
