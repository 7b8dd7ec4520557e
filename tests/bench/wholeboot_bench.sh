#!/usr/bin/env bash
# tests/bench/wholeboot_bench.sh - what tracing the whole boot costs the
# traced machine, side by side in one run (docs/BENCHMARKS.md, "Whole boot
# traced vs untraced").  Not a test: `make bench` runs it (BENCH_WHOLEBOOT=0
# skips it).
#
# The boot of tests/bochs/whole-boot.sh (Debian's Linux through its EFI
# stub, Bochs 3.0 with the trace model and `cpu: pt=1`, 2 CPUs, the e1000
# on slirp streaming to `tracevisor record` on 127.0.0.1), three ways:
#   untraced  tracevisor with the NIC and the receiver, no trace source;
#   pt        source = pt, trace_start = boot, code_snapshots = off;
#   pt+snap   the same with code snapshots (the default with pt).
# Per boot: Bochs's emulated time at the ACPI power-off (its tick counter
# at ips = 100 MHz, also the guest's TSC), Linux's uptime at /init, the
# host's wall seconds, the PT bytes, the stall time and the snapshot
# counters the hypervisor logs.  Emulated time is what the guest lived
# through (stalls included: stall_tsc = keep); wall time also has the
# emulator's cost of the extra exits.  Host load is printed with each
# boot: other work on the machine changes the wall times, not the ticks.
set -uo pipefail
# shellcheck source=../lib.sh source-path=SCRIPTDIR disable=SC1091
. "$(dirname "$0")/../lib.sh"

work=$TV_BUILD/bench/wholeboot
mkdir -p "$work"
die() { echo "wholeboot_bench: $*" >&2; exit 1; }
model=$(tv_dep BOCHS_TRACE)
{ [ -n "$model" ] && [ -x "$model" ]; } || die "no Bochs with the trace model (BOCHS_TRACE)"
[ -f "$TV_BUILD/linux/linux.env" ] || die "the Linux fixture is not built (make linux-fixture)"
# shellcheck source=/dev/null
. "$TV_BUILD/linux/linux.env"
trap 'tv_record_stop' EXIT
printf '%s\n' "$LINUX_CMDLINE tsc_early_khz=100000 nokaslr pci=noacpi" >"$work/cmdline.txt"

# one NAME CONF-LINE... - one boot; prints its line.
one() {
	local name=$1 log cap start end rc ticks uptime pt stall snap load
	shift
	log=$work/$name.serial.log
	cap=$work/cap-$name
	rm -rf "$cap"
	tv_record_start "$cap" --machines 1 --idle 60 || die "tracevisor record did not start"
	printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'nic = auto' \
		'net_ip = 10.0.2.15/24' 'net_gw = 10.0.2.2' "receiver = 10.0.2.2:$TV_REC_PORT" \
		"machine = bench-$name" "$@" >"$work/$name.conf"
	tv_linux_stick "$work/$name.img" "$work/$name.conf" "$work/cmdline.txt" ||
		die "cannot build $work/$name.img"
	load=$(cut -d' ' -f1 /proc/loadavg)
	start=$(date +%s.%N)
	rc=$(TV_BOCHS_BIN=$model TV_BOCHS_MEGS=1024 \
		TV_BOCHS_EXTRA=$'cpu: pt=1\ne1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp' \
		tv_bochs "$log" "${BENCH_TIMEOUT:-1500}" "$work/$name.img" 2)
	end=$(date +%s.%N)
	rm -f "$work/$name.img"
	tv_record_stop 60
	ticks=$(sed -n 's/^\([0-9]*\)p\[ACPI *\] >>PANIC<< ACPI control: soft power off.*/\1/p' "$log.bochs" | head -1)
	uptime=$(tr -d '\r' <"$log" | sed -n 's/^TVLINUX: uptime \([0-9.]*\) s.*/\1/p' | head -1)
	pt=$(tr -d '\r' <"$log" | sed -n 's/.*trace: cpu \([01]\): window 1 stopped ([a-z-]*): \([0-9]*\) PT bytes.*/cpu\1 \2/p' | tr '\n' ' ')
	stall=$(tr -d '\r' <"$log" | sed -n 's/.*trace: cpu \([01]\): window 1 stalled \([0-9]*\) times for \([0-9]*\) us.*/cpu\1 \3 us (\2 stalls)/p' | tr '\n' ' ')
	snap=$(tr -d '\r' <"$log" | sed -n 's/.*snap: cpu \([01]\): snapshots \([0-9]*\), new [0-9]*, rearms \([0-9]*\), fetch exits \([0-9]*\), write exits \([0-9]*\), bytes \([0-9]*\).*/cpu\1 \4+\5 exits \6 bytes/p' | tr '\n' ' ')
	printf '%-9s rc %s  emulated %s s  uptime at /init %s s  wall %s s (load %s)  PT %s stalls %s snapshots %s\n' \
		"$name" "$rc" "$(awk -v t="${ticks:-0}" 'BEGIN { printf "%.2f", t / 1e8 }')" "${uptime:--}" \
		"$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" "$load" "${pt:--}" "${stall:--}" "${snap:--}"
	echo "WHOLEBOOT: $name ticks=${ticks:-0} wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" >>"$work/summary"
	rm -rf "$cap"
}

: >"$work/summary"
echo "wholeboot_bench: $(date -u +%Y-%m-%dT%H:%MZ), tracevisor $(git -C "$TV_ROOT" describe --always --dirty 2>/dev/null), Linux $LINUX_VERSION, Bochs trace model, 2 CPUs, e1000/slirp -> record on 127.0.0.1"
one untraced
one pt 'source = pt' 'trace_start = boot' 'pt_buffer_kb = 65536' 'code_snapshots = off'
one pt+snap 'source = pt' 'trace_start = boot' 'pt_buffer_kb = 65536'
awk '{ split($3, a, "="); split($4, w, "="); t[$2] = a[2]; h[$2] = w[2] }
	END {
		if (t["untraced"] > 0)
			printf "wholeboot_bench: emulated time vs untraced: pt %.2fx, pt+snap %.2fx; wall: pt %.2fx, pt+snap %.2fx\n",
				t["pt"] / t["untraced"], t["pt+snap"] / t["untraced"], h["pt"] / h["untraced"], h["pt+snap"] / h["untraced"]
	}' "$work/summary"
