#!/usr/bin/env bash
# bench/ptfast_bench.sh - the fast PT decoder against libipt (docs/BENCHMARKS.md,
# "Fast PT decoding"), ratios from one run on the same stream and code:
#  1. build/bench/ptfast_bench: a generated stream (PTFAST_BENCH_MIB, default
#     64 MiB, libipt's encoder over random code layouts: tests/host/ptgen.c)
#     decoded by a plain libipt pt_insn_next loop and by ptfast's coverage,
#     flow and tools' flow modes, 1..PTFAST_BENCH_THREADS threads (default:
#     online processors);
#  2. when a whole-boot capture exists (PTFAST_BENCH_TVT, else the newest
#     $BUILD/test/bochs-whole-boot/cap/*/trace.tvt that tests/bochs/whole-boot.sh
#     left; code from its snapshots): `tracevisor report` with --decoder libipt
#     -j 1, fast -j 1 and fast -j N, wall seconds each, and whether their reports
#     are equal.  PTFAST_BENCH_REAL=0 skips it (libipt takes minutes).
# The load (uptime) is printed beside the figures.  Last line: PTFASTBENCH k=v...
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rel=${BUILD:-build}
mib=${PTFAST_BENCH_MIB:-64}
threads=${PTFAST_BENCH_THREADS:-$(nproc)}
# make with BUILD as given (relative to the tree): its dependency files
# name objects that way, so an absolute path would miss header changes.
(cd "$root" && make -s -f host-tools/host.mk BUILD="$rel" "$rel/bench/ptfast_bench" \
	"$rel/tracevisor") >/dev/null || { echo "ptfast bench: build failed"; exit 1; }
build=$rel
case "$build" in /*) ;; *) build=$root/$build ;; esac
work=$build/bench/ptfast
mkdir -p "$work"
load() { uptime | sed 's/.*load average: //'; }

echo "Fast PT decoding: ${mib} MiB generated stream, 1..$threads threads (load $(load))"
gen=$("$build/bench/ptfast_bench" "$mib" "$threads") || { echo "ptfast bench: $gen"; exit 1; }
echo "  $gen (load after $(load))"
line="PTFASTBENCH: $gen"

tvt=${PTFAST_BENCH_TVT:-$(ls -t "$build"/test/bochs-whole-boot/cap/*/trace.tvt 2>/dev/null | head -1)}
if [ "${PTFAST_BENCH_REAL:-1}" != 0 ] && [ -n "$tvt" ] && [ -f "$tvt" ]; then
	echo "Whole-boot capture $tvt: tracevisor report, code from its snapshots"
	real=""
	for d in "libipt -j 1" "fast -j 1" "fast -j $threads"; do
		key=$(echo "$d" | sed 's/ -j /_j/')
		l0=$(load)
		t0=$(date +%s.%N)
		"$build/tracevisor" report -q "$tvt" --decoder $d -o "$work/$key.report" ||
			{ echo "ptfast bench: report --decoder $d failed"; exit 1; }
		t1=$(date +%s.%N)
		s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
		echo "  --decoder $d: $s s (load $l0 -> $(load))"
		real="$real real_${key}_s=$s"
	done
	same=equal
	cmp -s "$work/libipt_j1.report" "$work/fast_j1.report" || same=DIFFERENT
	cmp -s "$work/fast_j1.report" "$work/fast_j$threads.report" || same=DIFFERENT
	echo "  reports: $same"
	line="$line$real real_reports=$same"
fi
echo "$line"
