#!/usr/bin/env bash
# bochs/trace-bts.sh - the BTS backend in the running hypervisor, checked
# against ground truth on Bochs with our trace-hardware model
# (tests/bench/bochs-patches, docs/BOCHS-MODEL.md "BTS", `cpu: bts=1`).
#
# The payload window of bochs/trace-hw.sh (tests/payload/traced.S, 64
# iterations, interrupts off, on both CPUs), its branches computed from
# `nm` of build/payload.so and the load address the payload prints
# (tests/lib.sh tv_payload_expected), never from what tracevisor says:
#   - source = bts: the hardware stores every branch into the CPU's BTS
#     buffer (reserved memory, mapped read/write for the guest in EPT,
#     IA32_DS_AREA written by tracevisor), drained at every VM exit of the
#     window and at its stop; every expected branch recorded, one for one
#     and in order (from and to: a BTS record has no kind), on both CPUs,
#     with no loss note, and the stop line's counts agree (no wrap, nothing
#     filtered, dropped, bad or corrupt, no entry with the buffer unmapped);
#   - the same with pmi = on and pmi_every = 40 (BTINT: the DS interrupt
#     every 40 records, an NMI through the LVT that exits and is drained
#     by tracevisor, vmm/trace/engine.c trace_nmi_exit): again every branch
#     one for one, PMIs that were ours and none reflected to the guest;
#   - stock Bochs (no model): source = bts is refused at boot with the
#     missing feature named, and no window opens.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
tv_model_bochs trace-bts || exit 0
model=$TV_MODEL
work=$TV_BUILD/test/bochs-trace-bts
mkdir -p "$work"
iterations=64   # TRACED_ITERATIONS in tests/payload/payload.c

# run BOCHS EXTRA SECS NAME: boot tracevisor + payload with source=bts
# under BOCHS; sets log to the serial log's path.
run() {
	log=$TV_LOGS/bochs-trace-bts-$4.serial.log
	tv_payload_run "trace-bts: $4" bts "$1" "$2" "$3" "$work/$4" "$log"
}

# --- bts on the model, without and with the PMI ----------------------------------
# check NAME: the checks of one run on the model (log, work/NAME).
check() {
	local name=$1 t="trace-bts: $1"
	tv_expect "$t: source is bts" "$log" '\[info\] trace: source bts'
	tv_reject "$t: no errors" "$log" '\[err\]'
	for cpu in 0 1; do
		tv_expect "$t: cpu $cpu: BTS found, its area mapped for the guest" "$log" \
			"vmx: cpu $cpu: BTS area at 0x[0-9a-f]+ \\(68 KiB\\), guest read/write in EPT"
		tv_expect "$t: cpu $cpu: BTS probed (64-bit DS area, DS-CPL)" "$log" \
			"trace: cpu $cpu: BTS, 64-bit DS area, DS-CPL"
		tv_expect "$t: cpu $cpu exported its window" "$log" \
			"trace: cpu $cpu: exported [0-9]+ records over serial .*, 0 gone before export"
	done
	tvt=$work/$name/trace.tvt
	tv_from_serial_2cpu "$t" "$log" "$tvt"
	base=$(tv_payload_base "$log")
	if [ -z "$base" ]; then
		tv_fail "$t: payload reported its window" "no 'traced window at' line"
		tv_keep_log "$log"
		return
	fi
	expected=$work/expected.txt
	tv_payload_expected "$base" "$iterations" | awk '{ print $1, $2 }' >"$expected"
	nexp=$(wc -l <"$expected")
	for cpu in 0 1; do
		dump=$work/$name/cpu$cpu.dump
		tv_records_equal "$t" "$tvt" "$cpu" 'BRANCH|BRANCH_COMPACT' "$expected" "$work/$name"
		if [ "$(grep -c ' START .*trigger=hypercall' "$dump")" = 1 ] &&
			[ "$(grep -c ' STOP .*trigger=hypercall' "$dump")" = 1 ]; then
			tv_ok "$t: cpu $cpu: one window, START and STOP by hypercall"
		else
			tv_fail "$t: cpu $cpu: one window, START and STOP by hypercall" "see $dump"
		fi
		if grep -q ' LOG .*bts:' "$dump"; then
			tv_fail "$t: cpu $cpu: no loss note in the trace" "$(grep -m1 ' LOG .*bts:' "$dump")"
		else
			tv_ok "$t: cpu $cpu: no loss note in the trace"
		fi
		tv_expect "$t: cpu $cpu: stop line: $nexp branches, no wrap, nothing filtered, dropped, bad or corrupt" "$log" \
			"trace: cpu $cpu: window 1 stopped \\(hypercall\\): $nexp branches, 0 filtered, 0 dropped, [1-9][0-9]* drains, 0 wraps \\(at least 0 branches lost\\), 0 bad, 0 corrupt, 0 entries unmapped; ring lost 0 records"
	done
}

name=bts
run "$model" "cpu: bts=1" 180 $name
check $name
tv_reject "trace-bts: bts: no PMI machinery without pmi" "$log" 'PMIs:|pmi:'
tv_keep_log "$log"

name=bts-pmi
TV_PAYLOAD_CONF=$'pmi = on\npmi_every = 40' run "$model" "cpu: bts=1" 180 $name
check $name
for cpu in 0 1; do
	tv_expect "trace-bts: bts-pmi: cpu $cpu: the LVT entry became NMI delivery" "$log" \
		"trace: cpu $cpu: pmi: LVT performance-counter entry 0x[0-9a-f]+ -> 0x400 \\(NMI\\), NMIs exit"
	line=$(grep -a -m1 "trace: cpu $cpu: window 1 PMIs:" "$log")
	ours=$(sed -n 's/.*PMIs: \([0-9]*\) ours.*/\1/p' <<<"$line")
	if [ -n "$ours" ] && [ "$ours" -ge 1 ] &&
		grep -q ' 0 NMIs reflected to the guest, LVT retaken 0 times' <<<"$line"; then
		tv_ok "trace-bts: bts-pmi: cpu $cpu: $ours DS interrupts taken as NMI exits, none reflected, LVT kept"
	else
		tv_fail "trace-bts: bts-pmi: cpu $cpu: DS interrupts taken as NMI exits, none reflected, LVT kept" \
			"${line:-no PMIs line}"
	fi
done
tv_keep_log "$log"

# --- stock Bochs: bts is impossible, and says so ---------------------------------
stock=$(tv_dep BOCHS)
if [ -z "$stock" ] || [ ! -x "$stock" ]; then
	tv_skip "trace-bts: stock" "stock Bochs not built"
	exit 0
fi
name=stock
run "$stock" "" 180 $name
# Stock Bochs reports DS and DTES64 (corei7_skylake_x) but drops DEBUGCTL writes.
tv_expect "trace-bts: stock: source=bts refused at boot, the missing DEBUGCTL named" "$log" \
	'\[err\] trace: source=bts not possible on this CPU: bts: missing .*IA32_DEBUGCTL that keeps what is written'
tv_reject "trace-bts: stock: no window opened" "$log" 'trace: cpu [0-9]+: window [0-9]+ started'
tv_reject "trace-bts: stock: no BTS area reserved" "$log" 'BTS area at'
# TV_HC_ENOSYS (-38) as the payload prints it
tv_expect "trace-bts: stock: the payload's start hypercall answered ENOSYS" "$log" \
	'TRACEVISOR-PAYLOAD: cpu 0: traced window at 0x[0-9a-f]+, 64 iterations: status 0xffffffffffffffda'
tv_keep_log "$log"
