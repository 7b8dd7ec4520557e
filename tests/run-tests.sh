#!/usr/bin/env bash
# run-tests.sh TIER... - run test tiers (unit, qemu, bochs) and print one
# summary line CI can read: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
pass=0 fail=0 skip=0
# BUILD=dir (as for make) tests another build tree.
build=${BUILD:-build}
export TV_BUILD=$PWD/$build
logs=$build/test-logs
mkdir -p "$logs"

run_unit() {
	local t name out p f k
	for t in "$build"/host/test_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		out=$logs/unit-$name.log
		echo "== unit: $name"
		# A unit test binary that hangs must not hold up the suite:
		# TV_UNIT_TIMEOUT seconds each (default 600), then it counts as failed.
		timeout "${TV_UNIT_TIMEOUT:-600}" "$t" >"$out" 2>&1
		local rc=$?
		[ "$rc" = 124 ] && echo "   $name: killed after ${TV_UNIT_TIMEOUT:-600} s" >>"$out"
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
		k=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
		p=${p:-0}; f=${f:-0}; k=${k:-0}
		if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
			f=1  # crashed (sanitizer, abort) before its summary
		fi
		pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + k))
		if [ "$f" != 0 ]; then
			grep -E '^\[  (FAILED|ERROR)|ERROR|runtime error|Sanitizer|killed after' "$out" | head -20
			echo "   $name: $p passed, $f failed (log: $out)"
		else
			if [ "$k" != 0 ]; then echo "   $name: $p passed, $k skipped"; else echo "   $name: $p passed"; fi
		fi
	done
}

run_scenarios() {
	local tier=$1 s line
	for s in tests/"$tier"/*.sh; do
		[ -f "$s" ] || continue
		echo "== $tier: $(basename "$s" .sh)"
		while IFS= read -r line; do
			echo "   $line"
			case "$line" in
			"ok "*) pass=$((pass + 1)) ;;
			"not ok "*) fail=$((fail + 1)) ;;
			"skip "*) skip=$((skip + 1)) ;;
			esac
		done < <(bash "$s" 2>&1)
	done
}

for tier in "$@"; do
	case "$tier" in
	unit) run_unit; run_scenarios build ;;
	qemu|bochs) run_scenarios "$tier" ;;
	*) echo "run-tests: unknown tier $tier" >&2; exit 2 ;;
	esac
done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
