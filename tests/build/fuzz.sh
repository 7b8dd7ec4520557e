#!/usr/bin/env bash
# build/fuzz.sh - the libFuzzer targets of tests/fuzz (one per decoder and
# file parser: .tvt reader, record-stream reader, serial TVT1 parser, x86
# decoder, PT decode path), each started on a seed corpus written by
# $TV_BUILD/fuzz/seeds (plus build/run's real capture and serial log when
# they exist).  Default: FUZZ_RUNS iterations each (a few seconds, part of
# `make unit`); --long: FUZZ_SECONDS each (`make fuzz`).  A crash, leak or
# sanitizer report is "not ok" with the reproducer's path.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
runs=${FUZZ_RUNS:-3000}
secs=${FUZZ_SECONDS:-60}
long=0
[ "${1:-}" = --long ] && long=1
bin=$TV_BUILD/fuzz
work=$TV_BUILD/test/fuzz
targets=(tvt trace_read serial x86 pt ptfast recv)

if [ ! -x "$bin/seeds" ]; then
	for t in "${targets[@]}"; do
		tv_skip "fuzz: $t" "$bin/fuzz_$t not built (needs clang 14 with libFuzzer: make BUILD=$TV_BUILD fuzz-targets)"
	done
	exit 0
fi
rm -rf "$work/seeds"
mkdir -p "$work"
"$bin/seeds" "$work/seeds" || { tv_fail "fuzz: seeds" "seeds generator failed"; exit 1; }
# fuzz_ptfast runs on fuzz_pt's code image: the same seeds.
rm -rf "$work/seeds/ptfast" && cp -r "$work/seeds/pt" "$work/seeds/ptfast"
# Real inputs when a `make run` left them (small: a few KB).
real=$TV_ROOT/build/run
[ -f "$real/trace.tvt" ] && cp "$real/trace.tvt" "$work/seeds/tvt/make-run.tvt"
[ -f "$real/serial.log" ] && grep -a 'TVT1 ' "$real/serial.log" | head -40 >"$work/seeds/serial/make-run.log"

for t in "${targets[@]}"; do
	exe=$bin/fuzz_$t
	if [ ! -x "$exe" ]; then
		tv_fail "fuzz: $t" "$exe missing"
		continue
	fi
	corpus=$work/corpus-$t
	mkdir -p "$corpus" "$work/crash-$t"
	if [ "$long" = 1 ]; then
		limit=(-max_total_time="$secs")
		what="$secs s"
	else
		limit=(-runs="$runs")
		what="$runs runs"
	fi
	log=$work/$t.log
	# Corpus first (kept between runs, it grows), then the seeds to read.
	if timeout $((secs + 120)) "$exe" "${limit[@]}" -max_len=65536 \
		-artifact_prefix="$work/crash-$t/" -print_final_stats=1 \
		"$corpus" "$work/seeds/$t" >"$log" 2>&1; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
		tv_ok "fuzz: $t ($what, ${execs:-?} inputs, no crash)"
	else
		art=$(ls -t "$work/crash-$t" 2>/dev/null | head -1)
		tv_fail "fuzz: $t ($what)" "$(grep -m1 -E 'ERROR|runtime error|deadly' "$log") reproducer: $work/crash-$t/$art (log $log)"
	fi
done
exit "$TV_FAILED"
