#!/usr/bin/env bash
# bochs/trace-mtf.sh - MTF branch tracing checked against ground truth.
#
# The payload's traced window (tests/payload/traced.S) runs on both CPUs as
# tracevisor's guest; its branches follow from the code alone.  tracevisor
# steps it with the monitor trap flag and sends each CPU's ring over COM1
# (TVT1 lines); the host tools turn the log into a trace file and dump it.
# The expected branches are computed here from the payload's symbol table
# (nm of build/payload.so) and the load address the payload prints, not
# from anything tracevisor says, and compared record for record.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "trace-mtf" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
work=$TV_BUILD/test/bochs-trace-mtf
mkdir -p "$work"
log=$TV_LOGS/bochs-trace-mtf.serial.log
iterations=64   # TRACED_ITERATIONS in tests/payload/payload.c

printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' \
	'source = mtf' 'overflow = stop' 'trace_start = hypercall' >"$work/tracevisor.conf"
tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
	EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
	EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"

rc=$(tv_bochs "$log" 240 "$work/disk.img" 2)
if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "trace-mtf: finished by itself"; else tv_fail "trace-mtf: finished by itself" "timed out"; fi
tv_expect "trace-mtf: source is mtf" "$log" '\[info\] trace: source mtf'
tv_reject "trace-mtf: no errors" "$log" '\[err\]'
for cpu in 0 1; do
	tv_expect "trace-mtf: cpu $cpu exported its window" "$log" \
		"trace: cpu $cpu: exported [0-9]+ records over serial .*, 0 gone before export"
done

# The trace file, from the serial log alone.
tvt=$work/trace.tvt
if "$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" 2>"$work/from-serial.err" &&
	grep -q ', 0 bad CRC, 0 malformed' "$work/from-serial.err" &&
	[ "$(grep -c 'missing: 0 lines, 0 records' "$work/from-serial.err")" = 2 ]; then
	tv_ok "trace-mtf: from-serial: both CPUs, no bad or missing lines"
else
	tv_fail "trace-mtf: from-serial: both CPUs, no bad or missing lines" "$(tr '\n' ' ' <"$work/from-serial.err")"
fi

# Where the payload ran: "cpu N: traced window at 0xADDR" minus tv_traced's
# offset in payload.so is the load base.
declare -A symtab
while read -r value _ name; do symtab[$name]=0x$value; done < <(nm "$TV_BUILD/payload.so")
sym() { echo "${symtab[$1]:-0}"; }
at=$(tr -d '\r' <"$log" | sed -n 's/.*TRACEVISOR-PAYLOAD: cpu 0: traced window at \(0x[0-9a-f]*\),.*/\1/p' | head -1)
if [ -z "$at" ]; then
	tv_fail "trace-mtf: payload reported its window" "no 'traced window at' line"
	tv_keep_log "$log"
	exit 0
fi
base=$(( at - $(sym tv_traced) ))
addr() { printf '0x%x' $(( base + ${symtab[$1]} )); }

# The ground truth, from traced.S's structure (its header comment).
expected=$work/expected.txt
: >"$expected"
for (( i = 0; i < iterations; i++ )); do
	if (( i % 2 == 0 )); then
		echo "$(addr tvt_jmp_ind) $(addr tvt_case0) jmp-ind"
		echo "$(addr tvt_call_a) $(addr tvt_leaf_a) call"
		echo "$(addr tvt_ret_a) $(addr tvt_after_a) ret"
		echo "$(addr tvt_jmp_next) $(addr tvt_next) jmp"
	else
		echo "$(addr tvt_jmp_ind) $(addr tvt_case1) jmp-ind"
		echo "$(addr tvt_call_b) $(addr tvt_leaf_b) call-ind"
		echo "$(addr tvt_ret_b) $(addr tvt_next) ret"
	fi
	(( i & 2 )) && echo "$(addr tvt_jnz) $(addr tvt_skip) jcc"
	(( i < iterations - 1 )) && echo "$(addr tvt_jcc) $(addr tvt_loop) jcc"
done >>"$expected"
nexp=$(wc -l <"$expected")

for cpu in 0 1; do
	got=$work/cpu$cpu.txt
	"$TV_BUILD/tracevisor" dump -q --no-summary --cpu "$cpu" "$tvt" >"$work/cpu$cpu.dump" 2>&1
	awk '$3 == "BRANCH" { print $4, $6, $7 }' "$work/cpu$cpu.dump" >"$got"
	if diff -u "$expected" "$got" >"$work/cpu$cpu.diff"; then
		tv_ok "trace-mtf: cpu $cpu: all $nexp branches as expected, in order"
	else
		tv_fail "trace-mtf: cpu $cpu: all $nexp branches as expected, in order" \
			"$(wc -l <"$got") recorded; first difference: $(grep -m2 '^[-+][^-+]' "$work/cpu$cpu.diff" | tr '\n' ' ')"
	fi
	# Exactly one window, opened and closed by the payload's hypercalls.
	if [ "$(grep -c ' START .*trigger=hypercall' "$work/cpu$cpu.dump")" = 1 ] &&
		[ "$(grep -c ' STOP .*trigger=hypercall' "$work/cpu$cpu.dump")" = 1 ]; then
		tv_ok "trace-mtf: cpu $cpu: one window, START and STOP by hypercall"
	else
		tv_fail "trace-mtf: cpu $cpu: one window, START and STOP by hypercall" "see $work/cpu$cpu.dump"
	fi
	tv_expect "trace-mtf: cpu $cpu: nothing lost, nothing undecodable" "$log" \
		"trace: cpu $cpu: window 1 stopped .*: $nexp branches, 0 events, 0 filtered, 0 dropped, 0 undecodable, [0-9]+ steps; ring lost 0 records"
done
"$TV_BUILD/tracevisor" dump -q -s "$tvt" >"$work/summary.txt" 2>&1
if grep -q '^lost records: 0 ' "$work/summary.txt" && grep -q '^malformed records: 0' "$work/summary.txt"; then
	tv_ok "trace-mtf: trace file: no lost or malformed records"
else
	tv_fail "trace-mtf: trace file: no lost or malformed records" "$(grep -E '^(lost|malformed)' "$work/summary.txt" | tr '\n' ' ')"
fi
tv_keep_log "$log"
