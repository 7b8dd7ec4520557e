#!/usr/bin/env bash
# bench/host_bench.sh - host tools throughput (docs/BENCHMARKS.md, "Host
# tools"): PT decode of a generated stream, a plain libipt pt_insn loop vs
# the host tools' decoder on one thread and in parallel (ratios from one
# run, best of 3), then branch records/s through `tracevisor script` and
# `report` with symbolization, 1 thread vs all.  Prints a HOSTBENCH line.
# HOST_BENCH_PT_MIB (default 2), HOST_BENCH_RECORDS (default 2000000),
# HOST_BENCH_THREADS (default: online processors).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case "$build" in /*) ;; *) build=$root/$build ;; esac
mib=${HOST_BENCH_PT_MIB:-2}
records=${HOST_BENCH_RECORDS:-2000000}
threads=${HOST_BENCH_THREADS:-$(nproc)}
work=$build/bench/host
mkdir -p "$work"
make -s -C "$root" BUILD="$build" "$build/bench/host_bench" "$build/tracevisor" >/dev/null || {
	echo "host bench: build failed"; exit 1; }
echo "Host tools: PT decode, ${mib} MiB generated stream, $threads threads"
pt=$("$build/bench/host_bench" pt "$mib" "$threads") || { echo "host bench: PT decode counts differ: $pt"; exit 1; }
echo "  $pt"
"$build/bench/host_bench" tvt "$work/branches.tvt" "$build/tracevisor" "$records" 4 || exit 1
rate() {  # command... -> records/s
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || return 1
	t1=$(date +%s.%N)
	awk -v n="$records" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }'
}
tv=$build/tracevisor
s1=$(rate "$tv" script -q -j 1 "$work/branches.tvt" --image "$tv" -o /dev/null)
sn=$(rate "$tv" script -q -j "$threads" "$work/branches.tvt" --image "$tv" -o /dev/null)
r1=$(rate "$tv" report -q -j 1 "$work/branches.tvt" --image "$tv" -o /dev/null)
rn=$(rate "$tv" report -q -j "$threads" "$work/branches.tvt" --image "$tv" -o /dev/null)
echo "Branch records/s, $records records on 4 CPUs, symbolized against build/tracevisor:"
echo "  script: $s1 (1 thread), $sn ($threads threads); report: $r1 (1 thread), $rn ($threads threads)"
echo "HOSTBENCH: $pt script_rps_1=$s1 script_rps_n=$sn report_rps_1=$r1 report_rps_n=$rn"
