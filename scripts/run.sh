#!/usr/bin/env bash
# run.sh [bochs|qemu] - the main job on the embedded default machine.
#
# bochs (default): Bochs 3.0 + OVMF with 2 VT-x CPUs and an e1000 on
#   Bochs's user-mode network boots the USB stick; tracevisor virtualizes
#   both CPUs, takes the e1000 for itself (hidden from the guest), and
#   chainloads the test payload, whose traced window (tests/payload/
#   traced.S) it single-steps with MTF on each CPU.  The records stream
#   from VMX root over the e1000 and lwIP to `tracevisor record`, started
#   here on 127.0.0.1 (the guest's 10.0.2.2), which writes a capture
#   directory.  Then: what the capture holds (tracevisor info) and the
#   first branches, symbolized against the payload (tracevisor script).
#   With RUN_TRANSPORT=serial the trace goes over COM1 as TVT1 lines
#   instead and `tracevisor from-serial` rebuilds it.
# qemu: QEMU TCG + OVMF, the stick as a USB mass-storage device and the
#   payload on a second disk: no VT-x, so tracevisor says so and chainloads
#   the next boot entry; nothing is traced.
#
# Outputs in build/run/: serial.log, cap/<machine>-<session>/ (network) or
# trace.tvt (serial), script.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. tests/lib.sh
emu=${1:-${EMU:-bochs}}
work=$TV_BUILD/run
mkdir -p "$work"
log=$work/serial.log
tvt=$work/trace.tvt
: >"$log"
rm -rf "$tvt" "$work/dump.txt" "$work/script.txt" "$work/cap"
transport=${RUN_TRANSPORT:-net}
trap 'tv_record_stop' EXIT

case "$emu" in
qemu)
	cp "$TV_BUILD/tracevisor-usb.img" "$work/stick.img"
	tv_image "$work/disk2.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/payload.efi"
	echo "run: QEMU TCG + OVMF, tracevisor-usb.img as a USB stick (no VT-x under TCG: nothing is traced); serial log: $log"
	tv_qemu "$log" 90 "$work/stick.img" "$work/disk2.img" >"$work/status" &
	;;
bochs)
	net=()
	bochs_nic=
	if [ "$transport" = net ]; then
		if ! tv_record_start "$work/cap" --machines 1 --idle 5; then
			echo "run: tracevisor record did not start: $(tail -n 2 "$work/cap/record.stderr")" >&2
			exit 1
		fi
		echo "run: receiver: tracevisor record on 127.0.0.1:$TV_REC_PORT, captures in $work/cap"
		net=('nic = auto' 'net_ip = 10.0.2.15/24' 'net_gw = 10.0.2.2'
			"receiver = 10.0.2.2:$TV_REC_PORT" 'machine = bochs-run')
		bochs_nic='e1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp'
	fi
	printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' \
		'source = mtf' 'trace_start = hypercall' ${net[@]+"${net[@]}"} >"$work/tracevisor.conf"
	tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
		EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
	echo "run: Bochs 3.0 + OVMF, 2 Skylake-X CPUs with VT-x, MTF tracing of the payload's window, export over ${transport/net/the e1000 + UDP}; serial log: $log"
	TV_BOCHS_EXTRA=$bochs_nic tv_bochs "$log" 300 "$work/disk.img" 2 >"$work/status" &
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

# Symbolize against the payload where it was loaded (tests/lib.sh).
base=$(tv_payload_base "$log")
img=()
[ -z "$base" ] || img=(--image "$TV_BUILD/payload.so@$base")

if [ "$transport" = net ]; then
	tv_record_stop 10
	echo "run: receiver finished (status $TV_REC_RC)"
	src=$(find "$work/cap" -mindepth 1 -maxdepth 1 -type d -name 'bochs-run-*' | head -1)
	if [ -z "$src" ] || [ ! -f "$src/trace.tvt" ]; then
		echo "run: no capture arrived (receiver log: $work/cap/record.stderr; serial log above)" >&2
		exit 1
	fi
	sed -n '/loss/,$p' "$work/cap/record.stderr" | tail -n 8
else
	if ! grep -q 'TVT1 ' "$log"; then
		echo "run: no trace lines in the serial log: nothing to decode (see the log above)" >&2
		exit 1
	fi
	"$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" --machine "bochs (make run)"
	src=$tvt
fi
echo "run: tracevisor info $src"
"$TV_BUILD/tracevisor" info "$src"
"$TV_BUILD/tracevisor" script -q "${img[@]}" "$src" >"$work/script.txt"
echo "run: first branches (tracevisor script ${img[*]} $src | head):"
head -n 12 "$work/script.txt"
echo "run: capture $src; all branches in $work/script.txt"
echo "run: more: build/tracevisor report|coverage|timeline ${img[*]} $src (build/tracevisor --help)"
