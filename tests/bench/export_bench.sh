#!/usr/bin/env bash
# tests/bench/export_bench.sh - the real exporter (net/export.c, inside
# tests/net/fake_sender.c) to `tracevisor record` over 127.0.0.1 in a
# network namespace of its own: goodput (payload bytes acknowledged per
# second), bytes re-sent / bytes sent, and loss, for the congestion-
# controlled transport and the first version's (--fixed-timers), with no
# injected loss and with EXPORT_BENCH_DROP% dropped each way by the
# sender (docs/BENCHMARKS.md, "Exporter on loopback").  All runs in one
# go, so the ratios compare like with like.  Not a test: it checks only
# that every run finished with nothing lost (the sender saw every byte
# acknowledged, which the receiver does only for what it delivered).
#
# The load: CPU 0's PT stream of EXPORT_BENCH_PT bytes (default 200 MB)
# through a 4 MiB PT byte ring, and 1000 records per CPU on 2 CPUs.
# Environment: EXPORT_BENCH_PT, EXPORT_BENCH_DROP (default 5),
# EXPORT_BENCH_MODES (default "cc fixed"; "sealed": cc on the authenticated
# data path, a data key and `record --auth`), BUILD (default build).
# Prints a table and "EXPORT_BENCH:" lines for machines.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
build=${BUILD:-build}
pt=${EXPORT_BENCH_PT:-200000000}
drop=${EXPORT_BENCH_DROP:-5}
modes=${EXPORT_BENCH_MODES:-cc fixed}

if [ -z "${TV_BENCH_NS:-}" ]; then
	make -s BUILD="$build" -j2 "$build/tracevisor" "$build/tests/net/fake_sender" >/dev/null ||
		{ echo "export_bench: build failed" >&2; exit 1; }
	if unshare -rn true 2>/dev/null; then
		TV_BENCH_NS=1 BUILD=$build exec unshare -rn bash "$0" "$@"
	fi
	echo "export_bench: no private network namespace; using the host's loopback" >&2
	TV_BENCH_NS=host
fi
[ "$TV_BENCH_NS" = 1 ] && ip link set lo up
work=$PWD/$build/bench/export
rm -rf "$work"
mkdir -p "$work"
out=$work/captures
[ -d /dev/shm ] && out=$(mktemp -d /dev/shm/tv-export-bench.XXXXXX)
rec_pid=""
cleanup() {
	[ -n "$rec_pid" ] && kill "$rec_pid" 2>/dev/null
	[ "$out" != "$work/captures" ] && rm -rf "$out"
}
trap cleanup EXIT
port=$((30000 + RANDOM % 10000))
failed=0

# run MODE DROP: prints "goodput_mbs resent_pct lost"
run() {
	local mode=$1 d=$2 log=$work/$1-$2 extra=() rextra=() lost
	local key=5ec2e75ec2e75ec2e75ec2e75ec2e7aa
	[ "$mode" = fixed ] && extra+=(--fixed-timers)
	if [ "$mode" = sealed ]; then
		extra+=(--key-hex "$key" --data-key-hex "$key")
		rextra+=(--auth --key-hex "$key")
	fi
	port=$((port + 1))
	"$build/tracevisor" record -l "127.0.0.1:$port" -o "$out" -q "${rextra[@]}" >"$log.rec" 2>&1 &
	rec_pid=$!
	sleep 0.3
	timeout 300 "$build/tests/net/fake_sender" send --to "127.0.0.1:$port" --cpus 2 \
		--records 1000 --burst 4096 --ring-bytes 16777216 --pt "$pt" \
		--pt-ring-bytes 4194304 --linger 0.1 --drop "$d" --seed 3 \
		--session "$(printf '%x' $((RANDOM + 1)))" "${extra[@]}" >"$log.send" 2>&1
	local rc=$?
	kill -INT "$rec_pid"
	wait "$rec_pid" 2>/dev/null
	rec_pid=""
	# "done": every record and PT byte acknowledged, and the receiver
	# acknowledges only what it delivered in order: nothing lost.
	lost=0
	grep -q '^done' "$log.send" && [ "$rc" = 0 ] || { lost=fail; failed=1; }
	sed -n 's/^transport: [a-z]* goodput \([0-9.]*\) MB\/s.*(\([0-9.]*\)%).*/\1 \2/p' "$log.send" |
		tr '\n' ' '
	echo "$lost"
}

printf '%-6s %6s %14s %10s %6s\n' mode "drop%" "goodput MB/s" "resent %" lost
declare -A good
for mode in $modes; do
	for d in 0 "$drop"; do
		read -r g r l < <(run "$mode" "$d")
		good[$mode-$d]=$g
		printf '%-6s %6s %14s %10s %6s\n' "$mode" "$d" "${g:-?}" "${r:-?}" "$l"
		echo "EXPORT_BENCH: mode=$mode drop=$d goodput_mbs=${g:-0} resent_pct=${r:-0} lost=$l pt_bytes=$pt" >>"$work/machine"
	done
	awk -v m="$mode" -v a="${good[$mode-0]:-0}" -v b="${good[$mode-$drop]:-0}" -v d="$drop" \
		'BEGIN { printf "EXPORT_BENCH: mode=%s drop%d_vs_clean=%.2f\n", m, d, (a > 0 ? b / a : 0) }' >>"$work/machine"
done
[ -n "${good[sealed-0]:-}" ] && [ -n "${good[cc-0]:-}" ] &&
	awk -v a="${good[cc-0]}" -v b="${good[sealed-0]}" \
		'BEGIN { printf "EXPORT_BENCH: sealed_vs_cc=%.3f\n", (a > 0 ? b / a : 0) }' >>"$work/machine"
cat "$work/machine"
exit "$failed"
