#!/usr/bin/env bash
# build/fuzz.sh - the libFuzzer targets of tests/fuzz (one per decoder and
# file parser: datagram decoding, the receiver state machine, the .tvt
# reader and every command's walk over it, the record-stream reader, the
# serial TVT1 parser, the x86 decoder, both PT decode paths, code
# snapshots, symbol files), each started on its corpus (kept under
# $TV_BUILD/test/fuzz, it grows from run to run) and a seed corpus written
# by $TV_BUILD/fuzz/seeds (plus build/run's real capture and serial log
# when they exist).
#
#   fuzz.sh          FUZZ_RUNS executions each (default 3000, a few
#                    seconds: part of `make unit`)
#   fuzz.sh --long   FUZZ_RUNS_LONG executions each (default 10,000,000:
#                    `make fuzz`), one target at a time under nice
#
# Knobs (environment): FUZZ_TARGETS="tvt recv ..." runs only those;
# FUZZ_MAX_SECONDS caps each target's time (0: no cap, the default), for a
# target too slow to reach its runs; FUZZ_FORK=N runs N libFuzzer worker
# processes (-fork=N; 0, the default, is one in-process loop); FUZZ_NICE
# (default 19 with --long, 0 otherwise); FUZZ_MAX_LEN (default 65536);
# FUZZ_STALLS_MAX (default 5) and FUZZ_STALL_MS (default 10000): timeouts
# taken as stalls of the machine (below).
#
# Per target: one "ok"/"not ok" line with executions, exec/s, corpus size
# and wall time; a crash, leak, timeout or sanitizer report is "not ok"
# with the reproducer's path.  --long also appends one tab-separated line
# per target to $TV_BUILD/test/fuzz/figures.tsv and ends with the
# "N passed, N failed, N skipped" line of tests/run-tests.sh.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
long=0
[ "${1:-}" = --long ] && long=1
if [ "$long" = 1 ]; then
	runs=${FUZZ_RUNS_LONG:-10000000}
	nice_level=${FUZZ_NICE:-19}
else
	runs=${FUZZ_RUNS:-3000}
	nice_level=${FUZZ_NICE:-0}
fi
max_secs=${FUZZ_MAX_SECONDS:-0}
fork=${FUZZ_FORK:-0}
max_len=${FUZZ_MAX_LEN:-65536}
bin=$TV_BUILD/fuzz
work=$TV_BUILD/test/fuzz
all_targets=(tvt tvt_cmds trace_read serial x86 pt ptfast recv proto snap syms)
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"
npass=0 nfail=0 nskip=0

ok() { tv_ok "$1"; npass=$((npass + 1)); }
fail() { tv_fail "$1" "$2"; nfail=$((nfail + 1)); }
skip() { tv_skip "$1" "$2"; nskip=$((nskip + 1)); }
summary() {
	[ "$long" = 1 ] && echo "$npass passed, $nfail failed, $nskip skipped"
}

if [ ! -x "$bin/seeds" ]; then
	for t in "${targets[@]}"; do
		skip "fuzz: $t" "$bin/fuzz_$t not built (needs clang 14 with libFuzzer: make BUILD=$TV_BUILD fuzz-targets)"
	done
	summary
	exit 0
fi
rm -rf "$work/seeds"
mkdir -p "$work"
"$bin/seeds" "$work/seeds" || { fail "fuzz: seeds" "seeds generator failed"; summary; exit 1; }
# fuzz_ptfast runs on fuzz_pt's code image: the same seeds; fuzz_tvt_cmds
# reads what fuzz_tvt and fuzz_snap read.
rm -rf "$work/seeds/ptfast" && cp -r "$work/seeds/pt" "$work/seeds/ptfast"
rm -rf "$work/seeds/tvt_cmds" && mkdir -p "$work/seeds/tvt_cmds" &&
	cp "$work/seeds/tvt/"* "$work/seeds/snap/"* "$work/seeds/tvt_cmds/"
# Real inputs when a `make run` left them (small: a few KB).
real=$TV_ROOT/build/run
if [ -f "$real/trace.tvt" ]; then
	cp "$real/trace.tvt" "$work/seeds/tvt/make-run.tvt"
	cp "$real/trace.tvt" "$work/seeds/snap/make-run.tvt"
	cp "$real/trace.tvt" "$work/seeds/tvt_cmds/make-run.tvt"
fi
[ -f "$real/serial.log" ] && grep -a 'TVT1 ' "$real/serial.log" | head -40 >"$work/seeds/serial/make-run.log"
# PE images for fuzz_syms (reader byte 3): the small payloads, when built.
for e in payload.efi linuxload.efi; do
	for d in "$TV_BUILD" "$TV_ROOT/build"; do
		if [ -f "$d/$e" ]; then
			{ printf '\003'; cat "$d/$e"; } >"$work/seeds/syms/pe-$e"
			break
		fi
	done
done

# fz_stat KEY LOG - a libFuzzer final statistic (-print_final_stats=1).
fz_stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }

for t in "${targets[@]}"; do
	exe=$bin/fuzz_$t
	if [ ! -x "$exe" ]; then
		fail "fuzz: $t" "$exe missing"
		continue
	fi
	corpus=$work/corpus-$t
	crash=$work/crash-$t
	mkdir -p "$corpus" "$crash" "$work/seeds/$t"
	log=$work/$t.log
	# Crashes, leaks, timeouts, OOMs; not libFuzzer's "slow-unit-*" (over
	# 10 s once: on a loaded machine under nice that is starvation as often
	# as not; they are counted and kept for a rerun by hand).
	before=$(find "$crash" -type f ! -name 'slow-unit-*' | wc -l)
	slow0=$(find "$crash" -type f -name 'slow-unit-*' | wc -l)
	start=$(date +%s.%N)
	# Segments until the runs are done: libFuzzer stops at its first
	# timeout, and on a shared machine a stall of the whole machine (seen:
	# four targets at once, each input 1-8 ms when rerun) times out an
	# input that is not slow.  A timeout's input is rerun alone (not
	# niced, 60 s limit); when it finishes in under 10 s the timeout was
	# a stall: the input is moved to stalls-T/, counted, and the target
	# goes on with the runs left (at most FUZZ_STALLS_MAX times, default
	# 5).  Anything else ends the target as a failure.
	execs=0 stalls=0 rc=0 seg=0
	: >"$log"
	while :; do
		seg=$((seg + 1))
		left=$((runs - execs))
		opts=(-runs="$left" -max_len="$max_len" -timeout=60 -rss_limit_mb=4096
		      -artifact_prefix="$crash/" -print_final_stats=1)
		guard=()
		if [ "$max_secs" != 0 ]; then
			spent=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%d", b - a }')
			[ "$spent" -ge "$max_secs" ] && break
			opts+=(-max_total_time="$((max_secs - spent))")
			# A wall-clock guard well past any cap: a hang of libFuzzer itself.
			guard=(timeout $((max_secs - spent + 300)))
		elif [ "$long" = 0 ]; then
			guard=(timeout 600)
		fi
		[ "$fork" != 0 ] && opts+=(-fork="$fork" -ignore_crashes=0)
		# Corpus first (kept between runs: new inputs go there), then the seeds.
		"${guard[@]}" nice -n "$nice_level" "$exe" "${opts[@]}" "$corpus" "$work/seeds/$t" >"$log.seg" 2>&1
		rc=$?
		n=$(fz_stat number_of_executed_units "$log.seg")
		# Fork mode prints no final statistics: "fuzzed for N iterations", else
		# the last "#N:" status line.
		[ -n "$n" ] || n=$(sed -n 's/^INFO: fuzzed for \([0-9][0-9]*\) iterations.*/\1/p' "$log.seg" | tail -1)
		[ -n "$n" ] || n=$(sed -n 's/^#\([0-9][0-9]*\)[:[:space:]].*/\1/p' "$log.seg" | tail -1)
		execs=$((execs + ${n:-0}))
		{ echo "=== segment $seg: ${n:-0} executions, exit $rc"; cat "$log.seg"; } >>"$log"
		rm -f "$log.seg"
		[ "$rc" = 0 ] && break
		art=$(ls -t "$crash" 2>/dev/null | grep -v '^slow-unit-' | head -1)
		case "$art" in timeout-*) ;; *) break ;; esac
		[ "$stalls" -ge "${FUZZ_STALLS_MAX:-5}" ] && break
		r0=$(date +%s%N)
		timeout 60 "$exe" "$crash/$art" >>"$log" 2>&1 || break
		ms=$((($(date +%s%N) - r0) / 1000000))
		[ "$ms" -ge "${FUZZ_STALL_MS:-10000}" ] && break
		mkdir -p "$work/stalls-$t"
		mv "$crash/$art" "$work/stalls-$t/"
		stalls=$((stalls + 1))
		echo "=== stall $stalls: $art timed out at 60 s, reran alone in $ms ms: moved to $work/stalls-$t" >>"$log"
		[ "$execs" -ge "$runs" ] && { rc=0; break; }
	done
	end=$(date +%s.%N)
	wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	rate=$(awk -v n="$execs" -v s="$wall" 'BEGIN { printf "%.0f", (s > 0 ? n / s : n) }')
	ncorp=$(find "$corpus" -type f | wc -l)
	kb=$(find "$corpus" -type f -printf '%s\n' | awk '{ b += $1 } END { printf "%.0f", b / 1024 }')
	after=$(find "$crash" -type f ! -name 'slow-unit-*' | wc -l)
	slow=$(($(find "$crash" -type f -name 'slow-unit-*' | wc -l) - slow0))
	what="$execs execs, $rate exec/s, corpus $ncorp files $kb KB, ${wall} s"
	[ "$slow" != 0 ] && what="$what, $slow slow units kept in $crash"
	[ "$stalls" != 0 ] && what="$what, $stalls stalls (timeouts that reran in under 10 s: $work/stalls-$t)"
	if [ "$rc" = 0 ] && [ "$after" = "$before" ]; then
		crashes=0
		ok "fuzz: $t ($what, 0 crashes)"
	else
		art=$(ls -t "$crash" 2>/dev/null | grep -v '^slow-unit-' | head -1)
		crashes="$crash/$art"
		fail "fuzz: $t ($what)" "$(grep -v '^===' "$log" | grep -m1 -E 'ERROR|runtime error|deadly|timeout') reproducer: $crashes (rerun: $exe $crashes; log $log)"
	fi
	if [ "$long" = 1 ]; then
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$execs" "$rate" \
			"$wall" "$ncorp" "$kb" "$crashes" "runs=$runs max_secs=$max_secs fork=$fork nice=$nice_level stalls=$stalls segments=$seg" \
			>>"$work/figures.tsv"
	fi
done
summary
exit "$TV_FAILED"
