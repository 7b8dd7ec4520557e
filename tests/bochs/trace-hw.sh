#!/usr/bin/env bash
# bochs/trace-hw.sh - the BTF+LBR and LBR backends in the running
# hypervisor, checked against ground truth on Bochs with our trace-hardware
# model (tests/bench/bochs-patches, docs/BOCHS-MODEL.md, `cpu: lbr=1`).
#
# The same payload window as bochs/trace-mtf.sh (tests/payload/traced.S,
# 64 iterations, interrupts off, on both CPUs), its branches computed from
# `nm` of build/payload.so and the load address the payload prints
# (tests/lib.sh tv_payload_expected), never from what tracevisor says:
#   - source = btf: one #DB exit per taken branch, `from` the LBR top;
#     every branch recorded, one for one and in order, with the kinds
#     tracevisor decodes, on both CPUs: the same list MTF must produce
#     (the window holds no interrupt or exception, the only events where
#     BTF and MTF see differently: docs/BACKENDS-LBR.md);
#   - source = lbr: the stack is read only at VM exits (the model has no
#     PMI); every record is a branch of the expected list, in order,
#     contiguous except right after a record flagged lbr-full (the stack
#     was full: older branches lost), the last record is the window's last
#     branch, and the counts the stop line reports (branches, reads, full
#     reads) agree with the records;
#   - source = lbr with pmi = on on the model with its counters (`cpu:
#     pmc=1`): the counter's PMI reads the frozen stack, so every expected
#     branch is recorded, one for one, none lost;
#   - stock Bochs (no model): source = btf is refused at boot with the
#     missing feature named, and no window opens.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
tv_model_bochs trace-hw || exit 0
model=$TV_MODEL
work=$TV_BUILD/test/bochs-trace-hw
mkdir -p "$work"
iterations=64   # TRACED_ITERATIONS in tests/payload/payload.c

# run SOURCE BOCHS EXTRA SECS NAME: boot tracevisor + payload with
# source=SOURCE under BOCHS; sets log to the serial log's path.
run() {
	log=$TV_LOGS/bochs-trace-hw-$5.serial.log
	tv_payload_run "trace-hw: $5" "$1" "$2" "$3" "$4" "$work/$5" "$log"
}

# from_serial NAME LOG TVT: the trace file from the serial log alone.
from_serial() {
	tv_from_serial_2cpu "trace-hw: $1" "$2" "$3"
}

common_checks() {
	local name=$1 log=$2 src=$3
	tv_expect "trace-hw: $name: source is $src" "$log" "\\[info\\] trace: source $src"
	tv_expect "trace-hw: $name: the model's LBR stack found" "$log" \
		'trace: cpu 0: LBR Skylake.*, format 5, 32 deep'
	tv_reject "trace-hw: $name: no errors" "$log" '\[err\]'
	for cpu in 0 1; do
		tv_expect "trace-hw: $name: cpu $cpu exported its window" "$log" \
			"trace: cpu $cpu: exported [0-9]+ records over serial .*, 0 gone before export"
	done
}

# --- btf -------------------------------------------------------------------
name=btf
run btf "$model" "cpu: lbr=1" 240 $name
common_checks $name "$log" btf
tvt=$work/$name/trace.tvt
from_serial $name "$log" "$tvt"
base=$(tv_payload_base "$log")
if [ -z "$base" ]; then
	tv_fail "trace-hw: btf: payload reported its window" "no 'traced window at' line"
	tv_keep_log "$log"
	exit 0
fi
expected=$work/expected.txt
tv_payload_expected "$base" "$iterations" >"$expected"
nexp=$(wc -l <"$expected")
for cpu in 0 1; do
	tv_payload_check_cpu "trace-hw: btf" "$tvt" "$cpu" "$expected" "$work/$name"
	# one #DB exit per branch; nothing filtered, reflected, or stray; every `from` known
	tv_expect "trace-hw: btf: cpu $cpu: $nexp #DB exits, nothing lost, every from known" "$log" \
		"trace: cpu $cpu: window 1 stopped \\(hypercall\\): $nexp branches, 0 filtered, 0 dropped, 0 undecodable, 0 from unknown, $nexp #DB exits, 0 reflected, 0 stray; ring lost 0 records"
done
tv_keep_log "$log"

# --- lbr -------------------------------------------------------------------
name=lbr
run lbr "$model" "cpu: lbr=1" 180 $name
common_checks $name "$log" lbr
tvt=$work/$name/trace.tvt
from_serial $name "$log" "$tvt"
for cpu in 0 1; do
	dump=$work/$name/cpu$cpu.dump
	"$TV_BUILD/tracevisor" dump -q --no-summary --cpu "$cpu" "$tvt" >"$dump" 2>&1
	got=$work/$name/cpu$cpu.txt
	awk '$3 == "LBR" { print $4, $6, ($0 ~ / lbr-full/) ? 1 : 0 }' "$dump" >"$got"
	n=$(wc -l <"$got")
	nfull=$(awk '$3 == 1' "$got" | wc -l)
	line=$(tr -d '\r' <"$log" | grep -E -m1 "trace: cpu $cpu: window 1 stopped \\(hypercall\\): ")
	# The records against the expected list, from the newest back: the
	# last is the window's last branch; each older one is the expected
	# branch right before, unless the newer one starts a full read (a gap
	# of lost branches, of any length: the older one is then the nearest
	# earlier occurrence of its pair).
	verdict=$(awk '
		FNR == NR { ef[NR] = $1; et[NR] = $2; ne = NR; next }
		{ rf[FNR] = $1; rt[FNR] = $2; full[FNR] = $3; nr = FNR }
		END {
			if (nr == 0) { print "no LBR records"; exit }
			j = ne; gaps = 0; lost = 0
			for (i = nr; i >= 1; i--) {
				if (i < nr && full[i + 1]) {
					k = j
					while (k >= 1 && !(ef[k] == rf[i] && et[k] == rt[i])) k--
					if (k < 1) { printf "record %d (%s -> %s) is no earlier expected branch\n", i, rf[i], rt[i]; exit }
					if (k < j) { gaps++; lost += j - k }
					j = k
				} else if (j < 1 || ef[j] != rf[i] || et[j] != rt[i]) {
					printf "record %d (%s -> %s) is not expected branch %d (%s -> %s)\n", i, rf[i], rt[i], j, ef[j], et[j]; exit
				}
				j--
			}
			if (j > 0 && !full[1]) { printf "%d branches lost before record 1, which is not flagged lbr-full\n", j; exit }
			lost += j
			printf "ok %d %d\n", gaps, lost
		}' "$expected" "$got")
	if [[ $verdict == ok* ]]; then
		read -r _ gaps lost <<<"$verdict"
		tv_ok "trace-hw: lbr: cpu $cpu: $n records, each an expected branch, in order, contiguous but for $gaps gap(s) after lbr-full ($lost of $nexp branches lost)"
	else
		tv_fail "trace-hw: lbr: cpu $cpu: records are expected branches in order, runs contiguous" "$verdict"
	fi
	# What the stop line says agrees with the records: the branch count,
	# one lbr-full record per full read, and a full read wherever a branch
	# was lost (no silent loss).
	reads=$(sed -n 's/.* \([0-9]*\) reads, .*/\1/p' <<<"$line")
	fulls=$(sed -n 's/.* \([0-9]*\) full reads (older branches lost).*/\1/p' <<<"$line")
	if [[ $line == *": $n branches, 0 filtered, 0 dropped, "*"; ring lost 0 records" ]] &&
		[ "${fulls:-x}" = "$nfull" ] && { [ "$n" = "$nexp" ] || [ "$nfull" -gt 0 ]; }; then
		tv_ok "trace-hw: lbr: cpu $cpu: stop line: $n branches, $reads reads, $fulls full reads = $nfull lbr-full records"
	else
		tv_fail "trace-hw: lbr: cpu $cpu: stop line agrees with the records" \
			"${line:-no stop line}; $n records, $nfull lbr-full"
	fi
	if [ "$(grep -c ' START .*trigger=hypercall' "$dump")" = 1 ] &&
		[ "$(grep -c ' STOP .*trigger=hypercall' "$dump")" = 1 ]; then
		tv_ok "trace-hw: lbr: cpu $cpu: one window, START and STOP by hypercall"
	else
		tv_fail "trace-hw: lbr: cpu $cpu: one window, START and STOP by hypercall" "see $dump"
	fi
done
tv_keep_log "$log"

# --- lbr with pmi: the counter's PMI reads the frozen stack ------------------------
# pmi = on, pmi_every = 24 (the default for 32 entries): PMC3 counts branch
# instructions retired and its overflow, an NMI through the LVT, exits;
# the stack is read frozen.  Every expected branch, one for one, no
# lbr-full, on both CPUs (with `cpu: pmc=1`, patch 0005).
name=lbr-pmi
if ! grep -q 'Model the general-purpose performance counters' "$model"; then
	tv_skip "trace-hw: lbr-pmi" "$model has no cpu: pmc option (patch 0005 not applied)"
else
	TV_PAYLOAD_CONF='pmi = on' run lbr "$model" $'cpu: lbr=1\ncpu: pmc=1' 180 $name
	common_checks $name "$log" lbr
	tvt=$work/$name/trace.tvt
	from_serial $name "$log" "$tvt"
	base=$(tv_payload_base "$log")
	tv_payload_expected "${base:-0}" "$iterations" | awk '{ print $1, $2 }' >"$work/expected-ft.txt"
	nexp=$(wc -l <"$work/expected-ft.txt")
	for cpu in 0 1; do
		dump=$work/$name/cpu$cpu.dump
		tv_records_equal "trace-hw: lbr-pmi" "$tvt" "$cpu" LBR "$work/expected-ft.txt" "$work/$name"
		if grep -q ' lbr-full' "$dump"; then
			tv_fail "trace-hw: lbr-pmi: cpu $cpu: none lost (no lbr-full)" "$(grep -c ' lbr-full' "$dump") lbr-full records"
		else
			tv_ok "trace-hw: lbr-pmi: cpu $cpu: none lost (no lbr-full)"
		fi
		tv_expect "trace-hw: lbr-pmi: cpu $cpu: stop line: $nexp branches, no full read" "$log" \
			"trace: cpu $cpu: window 1 stopped \\(hypercall\\): $nexp branches, 0 filtered, 0 dropped, [0-9]+ reads, 0 full reads"
		line=$(grep -a -m1 "trace: cpu $cpu: window 1 PMIs:" "$log")
		ours=$(sed -n 's/.*PMIs: \([0-9]*\) ours.*/\1/p' <<<"$line")
		if [ -n "$ours" ] && [ "$ours" -ge 10 ] && grep -q ' 0 NMIs reflected to the guest' <<<"$line"; then
			tv_ok "trace-hw: lbr-pmi: cpu $cpu: $ours counter PMIs taken as NMI exits, none reflected"
		else
			tv_fail "trace-hw: lbr-pmi: cpu $cpu: counter PMIs taken as NMI exits, none reflected" "${line:-no PMIs line}"
		fi
	done
	tv_keep_log "$log"
fi

# --- architectural LBR (patch 0006, `cpu: arch_lbr=1`) -------------------------
# btf and lbr with pmi on the arch LBR model: IA32_LBR_CTL in the VMCS
# (load on entry, clear on exit), entry 0 the newest, BR_TYPE kinds.
if ! grep -q 'Model architectural LBRs' "$model"; then
	tv_skip "trace-hw: arch" "$model has no cpu: arch_lbr option (patch 0006 not applied)"
else
	arch_checks() {
		local name=$1 src=$2
		tv_expect "trace-hw: $name: source is $src" "$log" "\\[info\\] trace: source $src"
		tv_expect "trace-hw: $name: the model's architectural LBR found" "$log" \
			'trace: cpu 0: architectural LBR, 32 deep, CPL filter, branch filter, mispredict, branch type'
		tv_reject "trace-hw: $name: no errors" "$log" '\[err\]'
		tvt=$work/$name/trace.tvt
		from_serial $name "$log" "$tvt"
		base=$(tv_payload_base "$log")
		tv_payload_expected "${base:-0}" "$iterations" >"$work/expected-arch.txt"
		nexp=$(wc -l <"$work/expected-arch.txt")
	}
	name=arch-btf
	run btf "$model" "cpu: arch_lbr=1" 240 $name
	arch_checks $name btf
	for cpu in 0 1; do
		tv_payload_check_cpu "trace-hw: $name" "$tvt" "$cpu" "$work/expected-arch.txt" "$work/$name"
		tv_expect "trace-hw: $name: cpu $cpu: $nexp #DB exits, every from from LBR entry 0" "$log" \
			"trace: cpu $cpu: window 1 stopped \\(hypercall\\): $nexp branches, 0 filtered, 0 dropped, 0 undecodable, 0 from unknown, $nexp #DB exits, 0 reflected, 0 stray; ring lost 0 records"
	done
	tv_keep_log "$log"

	name=arch-lbr-pmi
	TV_PAYLOAD_CONF='pmi = on' run lbr "$model" $'cpu: arch_lbr=1\ncpu: pmc=1' 180 $name
	arch_checks $name lbr
	for cpu in 0 1; do
		tv_records_equal "trace-hw: $name" "$tvt" "$cpu" LBR "$work/expected-arch.txt" "$work/$name" kind
		tv_expect "trace-hw: $name: cpu $cpu: stop line: $nexp branches, no full read" "$log" \
			"trace: cpu $cpu: window 1 stopped \\(hypercall\\): $nexp branches, 0 filtered, 0 dropped, [0-9]+ reads, 0 full reads"
		tv_expect "trace-hw: $name: cpu $cpu: counter PMIs taken as NMI exits, none reflected" "$log" \
			"trace: cpu $cpu: window 1 PMIs: [1-9][0-9]* ours \\(0 taken in VMX root\\), 0 NMIs reflected to the guest"
	done
	tv_keep_log "$log"
fi

# --- stock Bochs: btf is impossible, and says so -------------------------------
stock=$(tv_dep BOCHS)
if [ -z "$stock" ] || [ ! -x "$stock" ]; then
	tv_skip "trace-hw: stock" "stock Bochs not built"
	exit 0
fi
name=stock-btf
run btf "$stock" "" 180 $name
tv_expect "trace-hw: stock: source=btf refused at boot, the missing DEBUGCTL named" "$log" \
	'\[err\] trace: source=btf not possible on this CPU: btf: missing .*IA32_DEBUGCTL that keeps what is written'
tv_reject "trace-hw: stock: no window opened" "$log" 'trace: cpu [0-9]+: window [0-9]+ started'
# TV_HC_ENOSYS (-38) as the payload prints it
tv_expect "trace-hw: stock: the payload's start hypercall answered ENOSYS" "$log" \
	'TRACEVISOR-PAYLOAD: cpu 0: traced window at 0x[0-9a-f]+, 64 iterations: status 0xffffffffffffffda'
tv_keep_log "$log"
