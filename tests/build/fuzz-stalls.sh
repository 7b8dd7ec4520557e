#!/usr/bin/env bash
# build/fuzz-stalls.sh - fuzz.sh's classification of a libFuzzer timeout,
# against a stand-in target (a script that plays libFuzzer: it leaves a
# timeout-* artifact and exits 70 for its first FAKE_STALLS runs).  A
# timeout whose input reruns alone in under 10 s is a stall of the
# machine: counted, and the target goes on with the runs left; one that
# reruns slowly (FUZZ_STALL_MS, 500 ms here) is a failure with its reproducer; more stalls than
# FUZZ_STALLS_MAX end the target as a failure.  About 2 s.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
T=fuzz-stalls
d=$(mktemp -d /tmp/tv-fuzz-stalls.XXXXXX)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/fuzz"
printf '#!/bin/sh\nmkdir -p "$1"\n' >"$d/fuzz/seeds"
cat >"$d/fuzz/fuzz_fake" <<'FAKE'
#!/bin/bash
# One argument: the rerun of an artifact (FAKE_RERUN_S seconds).
if [ $# = 1 ]; then sleep "${FAKE_RERUN_S:-0}"; exit 0; fi
pre="" runs=0
for a; do case $a in -artifact_prefix=*) pre=${a#*=} ;; -runs=*) runs=${a#*=} ;; esac; done
n=$(($(cat "$FAKE_COUNT" 2>/dev/null || echo 0) + 1)); echo "$n" >"$FAKE_COUNT"
if [ "$n" -le "${FAKE_STALLS:-0}" ]; then
	echo "stat::number_of_executed_units: 1000"
	echo "==1== ERROR: libFuzzer: timeout after 61 seconds"
	echo "$n" >"${pre}timeout-$n"
	exit 70
fi
echo "stat::number_of_executed_units: $runs"
FAKE
chmod +x "$d/fuzz/seeds" "$d/fuzz/fuzz_fake"
export FAKE_COUNT=$d/count

# case NAME ENV...: fuzz.sh --long on the fake target; its result line.
run_case() {
	rm -rf "$d/test" "$d/count"
	env "$@" FUZZ_TARGETS=fake FUZZ_RUNS_LONG=8000 TV_BUILD="$d" \
		bash "$TV_ROOT/tests/build/fuzz.sh" --long 2>/dev/null | grep 'fuzz: fake'
}

r=$(run_case FAKE_STALLS=2)
if [[ "$r" == "ok fuzz: fake (8000 execs,"*", 2 stalls ("*", 0 crashes)" ]] &&
	[ "$(ls "$d/test/fuzz/stalls-fake" | wc -l)" = 2 ] && [ -z "$(ls "$d/test/fuzz/crash-fake")" ]; then
	tv_ok "$T: two timeouts that rerun fast are stalls; the target goes on to its 8000 runs"
else
	tv_fail "$T: two timeouts that rerun fast are stalls" "$r"
fi
r=$(run_case FAKE_STALLS=1 FAKE_RERUN_S=1 FUZZ_STALL_MS=500)
if [[ "$r" == "not ok fuzz: fake (1000 execs,"*"reproducer: $d/test/fuzz/crash-fake/timeout-1 "* ]]; then
	tv_ok "$T: a timeout whose input reruns slowly (1 s, FUZZ_STALL_MS=500) is a failure with its reproducer"
else
	tv_fail "$T: a timeout whose input reruns slowly is a failure" "$r"
fi
r=$(run_case FAKE_STALLS=9 FUZZ_STALLS_MAX=3)
if [[ "$r" == "not ok fuzz: fake (4000 execs,"*", 3 stalls ("* ]]; then
	tv_ok "$T: past FUZZ_STALLS_MAX stalls the target fails"
else
	tv_fail "$T: past FUZZ_STALLS_MAX stalls the target fails" "$r"
fi
exit "$TV_FAILED"
