#!/usr/bin/env bash
# tests/bench/net_bench.sh - export goodput through an emulated NIC vs the
# same emulator's raw frame rate, measured in one boot (docs/BENCHMARKS.md,
# "Export goodput vs raw frame rate").  Not a test: `make bench` runs it.
#
# Per emulated NIC (QEMU TCG e1000 and virtio-net, Bochs 3.0 e1000, all
# behind slirp): tracevisor's boot-time link self-test exports NET_BENCH_RECORDS
# generated branch records through its driver, lwIP and the export protocol
# to `tracevisor record` on 127.0.0.1 and waits for every ACK; then
# (net_bench = NET_BENCH_FRAMES) the same driver sends that many full-size
# UDP frames built once by hand (net/rawframe.c: 1472-byte payload, no lwIP,
# no protocol) to the receiver's port + 1, where socat sinks them.  The
# hypervisor logs both rates from its TSC; this script adds what arrived at
# the sink (slirp may drop a burst) and prints one line per NIC and a
# "NETBENCH:" line for machines.
#
# Environment: NET_BENCH_RECORDS (default 20000), NET_BENCH_FRAMES (default
# 3000), NET_BENCH_MODELS (default "qemu-e1000 qemu-virtio bochs-e1000").
set -uo pipefail
# shellcheck source=../lib.sh source-path=SCRIPTDIR disable=SC1091
. "$(dirname "$0")/../lib.sh"

records=${NET_BENCH_RECORDS:-20000}
frames=${NET_BENCH_FRAMES:-3000}
models=${NET_BENCH_MODELS:-qemu-e1000 qemu-virtio bochs-e1000}
work=$TV_BUILD/bench/net
mkdir -p "$work"
failed=0
summary=""
sink_pid=""

die() { echo "net_bench: $*" >&2; exit 1; }
[ -f "$TV_BUILD/tracevisor.efi" ] || die "build/tracevisor.efi missing: make all"
command -v socat >/dev/null || die "socat missing (scripts/deps.sh installs it)"

cleanup() {
	[ -n "$sink_pid" ] && kill "$sink_pid" 2>/dev/null && wait "$sink_pid" 2>/dev/null
	tv_record_stop
}
trap cleanup EXIT

printf '%-12s %10s %10s %10s %9s %10s %s\n' "NIC" "raw KB/s" "frames/s" "goodput" "ratio" "delivered" "(KB/s of payload, emulated time)"
for m in $models; do
	dir=$work/$m
	log=$dir/serial.log
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! tv_record_start "$dir/cap" --machines 1 --idle 3; then
		echo "$m: receiver did not start"
		failed=1
		continue
	fi
	: >"$dir/sink.bin"
	socat -u "UDP-RECV:$((TV_REC_PORT + 1)),bind=127.0.0.1" "OPEN:$dir/sink.bin,append" &
	sink_pid=$!
	cat >"$dir/tracevisor.conf" <<CONF
nic = auto
net_ip = 10.0.2.15/24
net_gw = 10.0.2.2
receiver = 10.0.2.2:$TV_REC_PORT
net_selftest = $records
net_bench = $frames
machine = bench-$m
vmx = off
loader = \\EFI\\tracevisor\\payload.efi
CONF
	tv_image "$dir/stick.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$dir/tracevisor.conf" \
		EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
	case $m in
	qemu-e1000 | qemu-virtio)
		dev=e1000
		[ "$m" = qemu-virtio ] && dev=virtio-net-pci
		timeout --kill-after=5 180 qemu-system-x86_64 -machine q35 -m 256 -cpu max \
			-bios "$(tv_dep OVMF_FD)" -nographic -no-reboot -device qemu-xhci \
			-drive if=none,id=stick,format=raw,file="$dir/stick.img" \
			-device usb-storage,drive=stick,bootindex=0 \
			-netdev user,id=n0 -device "$dev",netdev=n0,romfile= \
			-serial file:"$log" -monitor none -display none </dev/null >"$log.stdout" 2>&1
		;;
	bochs-e1000)
		TV_BOCHS_EXTRA='e1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp' \
			tv_bochs "$log" 300 "$dir/stick.img" 1 >/dev/null
		;;
	*) die "unknown model $m" ;;
	esac
	tv_record_stop 10
	sleep 1
	kill "$sink_pid" 2>/dev/null
	wait "$sink_pid" 2>/dev/null
	sink_pid=""
	line=$(tr -d '\r' <"$log" | grep -m1 'net: raw transmit:' || true)
	gline=$(tr -d '\r' <"$log" | grep -m1 'net: export goodput:' || true)
	if [ -z "$line" ]; then
		echo "$m: no benchmark line in $log ($(tr -d '\r' <"$log" | grep -m1 -E 'self-test FAILED|\[err\]' || echo 'see the log'))"
		failed=1
		summary="$summary $m=failed"
		continue
	fi
	raw=$(sed -n 's/.* us: \([0-9]*\) KB\/s, .*/\1/p' <<<"$line")
	fps=$(sed -n 's/.* KB\/s, \([0-9]*\) frames\/s.*/\1/p' <<<"$line")
	good=$(sed -n 's/.* last ACK: \([0-9]*\) KB\/s.*/\1/p' <<<"$gline")
	got=$(( $(stat -c %s "$dir/sink.bin") / 1472 ))
	awk -v m="$m" -v raw="$raw" -v fps="$fps" -v good="$good" -v got="$got" -v n="$frames" -v mach="$dir/mach" 'BEGIN {
		r = raw ? good / raw : 0
		printf "%-12s %10d %10d %10d %9.3f %4d/%-5d\n", m, raw, fps, good, r, got, n
		printf "%s_raw_kbs=%d %s_goodput_kbs=%d %s_ratio=%.3f %s_delivered=%d/%d", m, raw, m, good, m, r, m, got, n > mach
	}'
	summary="$summary $(cat "$dir/mach")"
done
echo "NETBENCH: records=$records frames=$frames$summary failed=$failed"
exit "$failed"
