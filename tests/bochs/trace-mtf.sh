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
tv_from_serial_2cpu trace-mtf "$log" "$tvt"

# Where the payload ran, and the branches its window must take.
base=$(tv_payload_base "$log")
if [ -z "$base" ]; then
	tv_fail "trace-mtf: payload reported its window" "no 'traced window at' line"
	tv_keep_log "$log"
	exit 0
fi
expected=$work/expected.txt
tv_payload_expected "$base" "$iterations" >"$expected"
nexp=$(wc -l <"$expected")

for cpu in 0 1; do
	tv_payload_check_cpu trace-mtf "$tvt" "$cpu" "$expected" "$work"
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
