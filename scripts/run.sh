#!/usr/bin/env bash
# run.sh [bochs|qemu] - the main job on the embedded default machine.
#
# bochs (default): Bochs 3.0 + OVMF with 2 VT-x CPUs and an e1000 on
#   Bochs's user-mode network boots the USB stick; tracevisor virtualizes
#   both CPUs, takes the e1000 for itself (hidden from the guest) and
#   chainloads the guest.  The records stream from VMX root over the e1000
#   and lwIP to `tracevisor record`, started here on 127.0.0.1 (the
#   guest's 10.0.2.2), which writes a capture directory.  Then: what the
#   capture holds (tracevisor info) and the first branches (tracevisor
#   script).  With RUN_TRANSPORT=serial the trace goes over COM1 as TVT1
#   lines instead and `tracevisor from-serial` rebuilds it.
#   RUN_GUEST=linux (default, ~4 min): Debian's Linux (the bench's
#   fixture, docs/LINUX-FIXTURE.md, through its EFI stub with nokaslr),
#   the whole boot with Intel PT (the Bochs model), both CPUs from the
#   launch to the guest's ACPI power-off, nothing lost (overflow = wait),
#   with the code snapshots the hypervisor takes (docs/SNAPSHOTS.md).
#   Then, decoded from the capture alone (no binary from the user): per
#   boot phase (firmware, loader, kernel, user) the branches and blocks
#   and the hottest functions (`tracevisor report --phases`; firmware
#   modules by their IMAGE records, kernel functions from the symbol
#   table inside the fixture's vmlinux, `--system-map VMLINUX`), and a
#   Perfetto timeline.  With RUN_TRANSPORT=serial (a PT boot is far too
#   much for a serial line) the MTF window of the kernel's first 590
#   branches from its entry instead (tests/bochs/linux-window.sh).
#   RUN_GUEST=payload (~12 s): the test payload, whose traced window
#   (tests/payload/traced.S) is single-stepped on each CPU, symbolized
#   against payload.so.
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
guest=${RUN_GUEST:-linux}
case $guest in payload | linux) ;; *) echo "run: RUN_GUEST must be payload or linux" >&2; exit 2 ;; esac
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
		if ! tv_record_start "$work/cap" --machines 1 --idle 60; then
			echo "run: tracevisor record did not start: $(tail -n 2 "$work/cap/record.stderr")" >&2
			exit 1
		fi
		echo "run: receiver: tracevisor record on 127.0.0.1:$TV_REC_PORT, captures in $work/cap"
		net=('nic = auto' 'net_ip = 10.0.2.15/24' 'net_gw = 10.0.2.2'
			"receiver = 10.0.2.2:$TV_REC_PORT" 'machine = bochs-run')
		bochs_nic='e1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp'
	fi
	if [ "$guest" = linux ]; then
		[ -f "$TV_BUILD/linux/linux.env" ] && [ -f "$TV_BUILD/linuxload.efi" ] ||
			{ echo "run: the Linux fixture is not built (make linux-fixture)" >&2; exit 1; }
		. "$TV_BUILD/linux/linux.env"
		printf '%s\n' "$LINUX_CMDLINE tsc_early_khz=100000 nokaslr" >"$work/cmdline.txt"
		if [ "$transport" = net ]; then
			printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = pt' \
				'trace_start = boot' 'pt_buffer_kb = 65536' \
				"${net[@]}" >"$work/tracevisor.conf"
			what="the whole boot with Intel PT and code snapshots, both CPUs, from the launch to the power-off"
		else
			printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = mtf' \
				'trace_start = address:0x1600000' 'trace_stop_after = 590' 'trace_buffer_kb = 64' \
				>"$work/tracevisor.conf"
			what="MTF tracing of its first 590 branches from the kernel's entry"
		fi
		TV_IMAGE_MIB=64 tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
			EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
			EFI/linux/linuxload.efi="$TV_BUILD/linuxload.efi" EFI/linux/vmlinuz="$LINUX_VMLINUZ" \
			EFI/linux/initrd.img="$LINUX_INITRD" EFI/linux/cmdline.txt="$work/cmdline.txt"
		echo "run: Bochs 3.0 + OVMF, 2 Skylake-X CPUs with VT-x, Linux $LINUX_VERSION: $what, export over ${transport/net/the e1000 + UDP}; serial log: $log"
		if [ "$transport" = net ]; then
			# The PT model is in the trace build of Bochs (docs/BOCHS-MODEL.md).
			bochs_bin=$(tv_dep BOCHS_TRACE)
			[ -n "$bochs_bin" ] && [ -x "$bochs_bin" ] ||
				{ echo "run: no Bochs with the trace-hardware model (BOCHS_TRACE in $TV_BUILD/deps.mk)" >&2; exit 1; }
			TV_BOCHS_MEGS=1024 TV_BOCHS_BIN=$bochs_bin TV_BOCHS_EXTRA=$'cpu: pt=1\n'"$bochs_nic" \
				tv_bochs "$log" 1200 "$work/disk.img" 2 >"$work/status" &
		else
			TV_BOCHS_MEGS=1024 TV_BOCHS_EXTRA=$bochs_nic tv_bochs "$log" 600 "$work/disk.img" 2 >"$work/status" &
		fi
	else
		printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' \
			'source = mtf' 'trace_start = hypercall' ${net[@]+"${net[@]}"} >"$work/tracevisor.conf"
		tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
			EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
			EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
		echo "run: Bochs 3.0 + OVMF, 2 Skylake-X CPUs with VT-x, MTF tracing of the payload's window, export over ${transport/net/the e1000 + UDP}; serial log: $log"
		TV_BOCHS_EXTRA=$bochs_nic tv_bochs "$log" 300 "$work/disk.img" 2 >"$work/status" &
	fi
	;;
*)
	echo "run: unknown emulator '$emu' (bochs or qemu)" >&2
	exit 2
	;;
esac
emu_pid=$!
# The log as it comes; trace lines are data for the receiver, not for eyes.
# Only a view: whatever status it ends with (tail's, on a log the emulator
# recreates), the run goes on to the capture.
tail -n +1 -F "$log" --pid="$emu_pid" 2>/dev/null | tr -d '\r' | awk '
	/TVT1 / { n++; if (n % 100 == 0) printf "run: ... %d trace lines received\n", n; fflush(); next }
	{ print; fflush() }
	END { if (n) printf "run: %d trace lines received\n", n }' || true
wait "$emu_pid" || true
status=$(cat "$work/status")
echo "run: emulator finished with status $status (0 or 1 = powered off; 124 = timeout)"
[ "$emu" = bochs ] || exit 0

# Symbolize against the payload where it was loaded (tests/lib.sh).
img=()
if [ "$guest" = payload ]; then
	base=$(tv_payload_base "$log")
	[ -z "$base" ] || img=(--image "$TV_BUILD/payload.so@$base")
fi

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
if [ "$guest" = linux ] && [ "$transport" = net ]; then
	# The whole boot, decoded from the capture alone: the code from its
	# snapshots, kernel names from the symbol table inside vmlinux.
	echo "run: the boot by phase (tracevisor report --phases --top 8 --system-map vmlinux $src):"
	t0=$(date +%s)
	"$TV_BUILD/tracevisor" report --phases --top 8 --system-map "$LINUX_VMLINUX" "$src" \
		>"$work/report.txt" 2>"$work/report.err" || true
	sed -n '1,/^# .*functions (all CPUs)/p' "$work/report.txt" | head -n 80
	echo "run: decoded in $(($(date +%s) - t0)) s; the whole report: $work/report.txt ($(grep -c . "$work/report.txt") lines)"
	echo "run: capture $src (trace.tvt, cpuN.pt)"
	echo "run: more: build/tracevisor script|coverage|timeline|pt-decode $src (no --image needed: the capture has its code; build/tracevisor --help)"
	exit 0
fi
"$TV_BUILD/tracevisor" script -q "${img[@]}" "$src" >"$work/script.txt"
echo "run: first branches (tracevisor script ${img[*]} $src | head):"
head -n 12 "$work/script.txt"
echo "run: capture $src; all branches in $work/script.txt"
echo "run: more: build/tracevisor report|coverage|timeline ${img[*]} $src (build/tracevisor --help)"
