#!/usr/bin/env bash
# bochs/pmc-model.sh - the Bochs performance-counter model
# (tests/bench/bochs-patches/0005-pmc-branch-counter.patch, docs/BOCHS-MODEL.md)
# checked against ground truth, without tracevisor.
#
# build/pmctest.efi (tests/payload/pmctest.c + pmc_code.S, which runs
# lbr_branches.S's sequence as pmct_* followed by INT n, IRETQ and LRETQ)
# runs as OVMF's boot program on one CPU, ring 0, interrupts off, with
# `cpu: lbr=1, pmc=1`.  Checked here:
#   - the counts against the sequence's branch instructions, known from
#     the code (13, 9 of them near taken) and counted independently in
#     Bochs's own instruction trace of it (debugger `trace on` between two
#     magic breakpoints: every instruction with a branch mnemonic; near
#     taken = not far and its successor not the next one in memory):
#     C4/00 counts all, C4/20 the near taken ones, INV/CMASK ignored, an
#     unmodelled unit mask and event (C0) count nothing;
#   - USR only counts nothing (all of it is ring 0), OS only everything,
#     EN = 0 nothing; IA32_PERF_GLOBAL_CTRL bit 0 clear stops PMC0 only;
#   - overflow (count past 2^48 - 1): with INT = 0, IA32_PERF_GLOBAL_STATUS
#     bit 0, no PMI, no freeze; with INT = 1 (preset by a legacy 32-bit
#     write, sign-extended) on the 7th branch and FREEZE_LBRS_ON_PMI: bit 0
#     and LBR_Frz (58), the PMI pending then taken once in an STI window at
#     its address, masking the LVT entry; the LBR stack frozen with the
#     first 6 taken branches (the 7th branch, a CALL, newest), DEBUGCTL.LBR
#     still 1, TOS and entries unchanged by a whole further run, recording
#     again after 0x390 clears bit 58; the LBR records against `nm`;
#   - FREEZE_PERFMON_ON_PMI: CTR_Frz (59) stops all counters at the
#     overflow (PMC0 at 0, PMC1 at 7), counting again after 0x390;
#   - IA32_PERF_GLOBAL_STATUS_SET/_RESET with bits 0-3, 58, 59; legacy
#     counter writes sign-extended from bit 31 to 48 bits, IA32_A_PMC0
#     full width; #GP on reserved bits of PERFEVTSEL, GLOBAL_CTRL (4, 35),
#     A_PMC (48) and on writes to GLOBAL_STATUS and PERF_CAPABILITIES;
#     RDPMC = RDMSR, RDPMC of a fixed counter 0, of PMC4 #GP;
#   - CPUID.0AH as the CPU model has it (v4, 4 x 48 bits),
#     IA32_PERF_CAPABILITIES FW_WRITE | LBR format 5,
#     IA32_PERF_GLOBAL_CTRL = 0xF after reset;
#   - VMX: "load IA32_PERF_GLOBAL_CTRL" entry (13) and exit (12) controls
#     and "save" (exit 30): the guest counts its 3 branches under the
#     guest field's value, the exit loads the host field's, saves the
#     guest's; a reserved bit in the guest field fails the entry (host
#     value still loaded), in the host field fails VMLAUNCH (error 8);
#   - the same program without pmc=1 (stock counters): none of it.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
tv_model_bochs pmc-model || exit 0
model=$TV_MODEL
if ! grep -q 'Model the general-purpose performance counters' "$model"; then
	tv_skip "pmc-model" "$model has no cpu: pmc option (patch 0005 not in its series)"
	exit 0
fi
work=$TV_BUILD/test/bochs-pmc-model
mkdir -p "$work"
log=$TV_LOGS/bochs-pmc-model.serial.log
tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/pmctest.efi"

rc=$(TV_BOCHS_BIN=$model TV_BOCHS_EXTRA="cpu: lbr=1, pmc=1" tv_bochs "$log" 120 "$work/disk.img" 1)
if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "pmc-model: finished by itself"; else tv_fail "pmc-model: finished by itself" "timed out"; fi
tv_expect "pmc-model: program ran to its end" "$log" '^PMCTEST done'

declare -A symtab
while read -r value _ name; do symtab[$name]=0x$value; done < <(nm "$TV_BUILD/pmctest.so")
out=$(tr -d '\r' <"$log")
at=$(sed -n 's/^PMCTEST base pmct_run \(0x[0-9a-f]*\)$/\1/p' <<<"$out" | head -1)
if [ -z "$at" ] || [ -z "${symtab[pmct_run]:-}" ]; then
	tv_fail "pmc-model: program reported its load address" "no 'PMCTEST base' line"
	tv_keep_log "$log"
	exit 0
fi
base=$(( at - ${symtab[pmct_run]} ))
addr() { printf '0x%016x' $(( base + ${symtab[$1]} )); }
h() { printf '0x%016x' "$1"; }

# The sequence's branch instructions in order (pmc_code.S header):
# "FROM TO KIND", KIND n = near taken, t = not taken, f = far; TO "-" for
# the not-taken JNZ.  Everything expected below derives from this table.
cat >"$work/seq" <<EOF
pmct_jmp pmct_t1 n
pmct_jz pmct_t2 n
pmct_jnz pmct_loop n
pmct_jnz pmct_loop n
pmct_jnz - t
pmct_jmpi pmct_t3 n
pmct_call pmct_leaf n
pmct_leaf pmct_after n
pmct_calli pmct_leaf2 n
pmct_ret2 pmct_after2 n
pmct_int pmct_int_handler f
pmct_iret pmct_int_ret f
pmct_lret pmct_lret_to f
EOF
n_all=$(wc -l <"$work/seq")
n_taken=$(grep -c ' n$' "$work/seq")
K=7   # pmctest.c presets PMC0 to -7 for the PMI runs
# lbr_records [FIRST_N]: the LBR records (taken branches, as addresses) of
# the first FIRST_N branch instructions of the sequence (all by default).
lbr_records() {
	head -n "${1:-$n_all}" "$work/seq" | awk '$2 != "-" { print $1, $2 }' |
		while read -r f t; do echo "$(addr "$f") $(addr "$t")"; done
}
n_rec=$(lbr_records | wc -l)

# runline NAME FIELD: a field of "PMCTEST run NAME ..." (pmc: the 4 counters).
runline() {
	awk -v n="$1" -v f="$2" '$1 == "PMCTEST" && $2 == "run" && $3 == n {
		for (i = 4; i < NF; i++) if ($i == f) {
			if (f == "pmc") print $(i+1), $(i+2), $(i+3), $(i+4); else print $(i+1)
			exit
		}
	}' <<<"$out"
}
# recorded NAME: the run's non-empty LBR entries, oldest first, "FROM TO".
recorded() {
	awk -v n="$1" '$1 == "PMCTEST" && $2 == "lbr" && $3 == n && !($5 ~ /^0x0+$/ && $6 ~ /^0x0+$/) { print $5, $6 }' <<<"$out"
}
# check NAME GOT WANT
check() {
	if [ "$2" = "$3" ]; then tv_ok "pmc-model: $1"; else tv_fail "pmc-model: $1" "got '$2', want '$3'"; fi
}
# check_lbr NAME EXPECTED_FILE WHAT
check_lbr() {
	recorded "$1" >"$work/$1.got"
	if diff -u "$2" "$work/$1.got" >"$work/$1.diff"; then
		tv_ok "pmc-model: $3"
	else
		tv_fail "pmc-model: $3" "$(wc -l <"$work/$1.got") recorded; first difference: $(grep -m2 '^[-+][^-+]' "$work/$1.diff" | tr '\n' ' ')"
	fi
}

z=$(h 0)
check "CPUID.0AH v4, 4 counters x 48 bits; PERF_CAPABILITIES FW_WRITE | LBR format 5; GLOBAL_CTRL 0xF after reset" \
	"$(grep -m1 '^PMCTEST cpuid' <<<"$out")" \
	"PMCTEST cpuid 0ah eax 0x0000000007300404 perfcap 0x0000000000002005 gctl-reset 0x000000000000000f"

# counting: all from the table; the trace cross-check is below
check "C4/00 counts the $n_all branch instructions, C4/20 the $n_taken near taken, INV/CMASK ignored, C4/01 nothing" \
	"$(runline all pmc) status $(runline all status)" "$(h "$n_all") $(h "$n_taken") $(h "$n_all") $z status $z"
check "USR only: 0 (ring 0 code), OS only: $n_all, EN = 0: 0, event C0: 0" \
	"$(runline sel pmc)" "$z $(h "$n_all") $z $z"
check "IA32_PERF_GLOBAL_CTRL bit 0 clear: PMC0 stops, PMC1-3 count $n_all" \
	"$(runline gctl pmc)" "$z $(h "$n_all") $(h "$n_all") $(h "$n_all")"

# overflow, INT = 0: preset 2^48 - 5, no PMI, no freeze
lbr_records >"$work/full.exp"
check "overflow with INT=0 (preset 2^48-5): PMC0 wraps to $((n_all - 5)), status bit 0, no PMI, no LBR freeze (TOS $n_rec)" \
	"$(runline poll pmc) status $(runline poll status) pending $(runline poll pending) tos $(runline poll tos)" \
	"$(h $((n_all - 5))) $z $z $z status 0x0000000000000001 pending 0 tos $n_rec"
check_lbr poll "$work/full.exp" "overflow with INT=0: the LBR stack holds all $n_rec records of the sequence"

# overflow, INT = 1, FREEZE_LBRS_ON_PMI: frozen at the K-th branch
n_frz=$(lbr_records $K | wc -l)
check "PMI on overflow at branch $K: status bit 0 + LBR_Frz (58), PMI pending, TOS $n_frz, DEBUGCTL.LBR stays 1, PMC0 counts on to $((n_all - K))" \
	"$(runline freeze pmc) status $(runline freeze status) pending $(runline freeze pending) tos $(runline freeze tos) debugctl $(runline freeze debugctl)" \
	"$(h $((n_all - K))) $z $z $z status 0x0400000000000001 pending 1 tos $n_frz debugctl 0x0000000000000801"
lbr_records $K >"$work/freeze.exp"
check_lbr freeze "$work/freeze.exp" "frozen LBR stack: the $n_frz taken branches up to the overflowing one ($(sed -n ${K}p "$work/seq" | cut -d' ' -f1)), nothing after"
pmi_at=$(h $(( $(addr pmct_sti_window) + 2 )))
check "the PMI: LVT perfmon vector, taken once after STI, masks the entry; LBR_Frz stays, TOS unchanged" \
	"$(grep -m1 '^PMCTEST pmi freeze' <<<"$out")" \
	"PMCTEST pmi freeze count 1 rip $pmi_at lvt 0x00000000000100e5 status 0x0400000000000001 tos $n_frz"
check "still frozen: a whole further run with DEBUGCTL.LBR = 1 changes neither TOS nor status (PMC0 counts $n_all)" \
	"$(runline frozen pmc) status $(runline frozen status) tos $(runline frozen tos) debugctl $(runline frozen debugctl)" \
	"$(h "$n_all") $z $z $z status 0x0400000000000001 tos $n_frz debugctl 0x0000000000000801"
check_lbr frozen "$work/freeze.exp" "still frozen: the LBR entries are those of the freeze, unchanged"
{ cat "$work/freeze.exp" "$work/full.exp"; } >"$work/thawed.exp"
check "0x390 bit 58 unfreezes: status 0, TOS $n_frz + $n_rec" \
	"status $(runline thawed status) tos $(runline thawed tos)" "status $z tos $((n_frz + n_rec))"
check_lbr thawed "$work/thawed.exp" "after 0x390 bit 58: the frozen records, then the $n_rec of the next run"

# FREEZE_PERFMON_ON_PMI
check "FREEZE_PERFMON_ON_PMI: CTR_Frz (59) stops PMC0 at 0 and PMC1 at $K, PMI pending" \
	"$(runline ctrfrz pmc) status $(runline ctrfrz status) pending $(runline ctrfrz pending)" \
	"$z $(h $K) $z $z status 0x0800000000000001 pending 1"
check "FREEZE_PERFMON_ON_PMI: one PMI; 0x390 bit 59 lets both count $n_all again" \
	"$(grep -m1 '^PMCTEST pmi ctrfrz' <<<"$out" | cut -d' ' -f4,5) $(runline ctrthaw pmc) status $(runline ctrthaw status)" \
	"count 1 $(h "$n_all") $(h "$n_all") $z $z status $z"

check "IA32_PERF_GLOBAL_STATUS_SET sets bits 0-3, 58, 59; _RESET clears them" \
	"$(grep -m1 '^PMCTEST status' <<<"$out")" "PMCTEST status set 0x0c0000000000000f reset $z"
check "legacy PMC writes sign-extend bit 31 to 48 bits, IA32_A_PMC0 full width, 6 invalid writes #GP" \
	"$(grep -m1 '^PMCTEST msr' <<<"$out")" \
	"PMCTEST msr legacy 0x0000ffff80000000 0x000000007fffffff full 0x0000123456789abc gp 6"
check "RDPMC 0 = IA32_PMC0, RDPMC of fixed counter 0 = 0, RDPMC 4 #GP" \
	"$(grep -m1 '^PMCTEST rdpmc' <<<"$out")" \
	"PMCTEST rdpmc 0x0000123456789abc msr 0x0000123456789abc fixed $z gp 1"

# VMX
vmx() { grep -m1 "^PMCTEST vmx $1 " <<<"$out" | cut -d' ' -f4-; }
check "VMX: entry control 13, exit controls 12 and 30 allowed" "$(vmx caps)" "entry13 1 exit12 1 exit30 1"
check "VMX load: the guest counts its 3 branches under GUEST_IA32_PERF_GLOBAL_CTRL (1), the exit loads the host's (2) and saves the guest's" \
	"$(vmx load)" "launch 0 reason 0x0000000000000012 err 0 pmc0 0x0000000000000003 gctl-after 0x0000000000000002 field 0x0000000000000001"
check "VMX save alone: nothing loaded, root's 0 saved over the field" \
	"$(vmx save)" "launch 0 reason 0x0000000000000012 err 0 pmc0 $z gctl-after $z field $z"
check "VMX no controls: nothing loaded or saved" \
	"$(vmx none)" "launch 0 reason 0x0000000000000012 err 0 pmc0 $z gctl-after $z field 0x0000000000000001"
check "VMX reserved bit in the guest field: entry fails (invalid guest state), the host value is loaded" \
	"$(vmx badguest)" "launch 0 reason 0x0000000080000021 err 0 pmc0 $z gctl-after 0x0000000000000002 field 0x0000000000000010"
check "VMX reserved bit in the host field: VMLAUNCH fails with error 8" \
	"$(vmx badhost | cut -d' ' -f1-10)" "launch 1 reason 0xffffffffffffffff err 8 pmc0 $z gctl-after $z"
tv_keep_log "$log"

# Bochs's own record of what ran: the debugger traces the "all" run's
# sequence (the first pmct_run) between its two magic breakpoints.
dlog=$TV_LOGS/bochs-pmc-model-dbg.serial.log
{ printf '%s\n' c 'trace on' c 'trace off'; for _ in $(seq 40); do echo c; done; echo quit; } >"$work/dbg.cmds"
rc=$(TV_BOCHS_BIN=$model TV_BOCHS_ARGS="-dbg -rc $work/dbg.cmds" TV_BOCHS_EXTRA="cpu: lbr=1, pmc=1
magic_break: enabled=1" tv_bochs "$dlog" 180 "$work/disk.img" 1)
# "MNEMONIC 0xADDR LEN" per traced instruction up to the closing breakpoint
awk '/^\(0\)\.\[[0-9]+\] \[0x/ {
	a = $2; gsub(/[][]/, "", a); m = $0; sub(/.*\): /, "", m); split(m, w, " ")
	print w[1] (w[2] == "far" ? "-far" : ""), a, length($NF) / 2; if (/xchg bx, bx/) exit
}' "$dlog.stdout" >"$work/trace.insns"
# branch instructions; near taken: not far, successor not at address + length
tr_all=0 tr_taken=0 pm="" pa=0 pl=0
while read -r m a l; do
	if [[ $pm =~ ^(j[a-z]+|call|ret|retf|iret[dq]?|int[13o]?|loop[a-z]*|sys(call|ret|enter|exit))(-far)?$ ]]; then
		tr_all=$((tr_all + 1))
		if ! [[ $pm =~ ^(retf|iret[dq]?|int[13o]?|sys.*)$|-far$ ]] && [ $((a)) != $((pa + pl)) ]; then
			tr_taken=$((tr_taken + 1))
		fi
	fi
	pm=$m pa=$((a)) pl=$l
done <"$work/trace.insns"
tv_bochs_trace_branches "$dlog.stdout" "$work/trace.branches"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	tv_fail "pmc-model: counts = Bochs's instruction trace" "debugger run timed out"
elif [ "$tr_all" -gt 0 ] && [ "$(runline all pmc | cut -d' ' -f1,2)" = "$(h "$tr_all") $(h "$tr_taken")" ]; then
	tv_ok "pmc-model: counts = Bochs's instruction trace ($tr_all branch instructions, $tr_taken near taken)"
else
	tv_fail "pmc-model: counts = Bochs's instruction trace" \
		"trace: $tr_all branch instructions, $tr_taken near taken; counted: $(runline all pmc | cut -d' ' -f1,2)"
fi
if [ -s "$work/trace.branches" ] && diff -u "$work/trace.branches" "$work/poll.got" >"$work/trace.diff"; then
	tv_ok "pmc-model: LBR records of the sequence = Bochs's instruction trace ($(wc -l <"$work/trace.branches") taken, far ones included)"
else
	tv_fail "pmc-model: LBR records of the sequence = Bochs's instruction trace" \
		"first difference: $(grep -m2 '^[-+][^-+]' "$work/trace.diff" 2>/dev/null | tr '\n' ' ')"
fi

# Stock behaviour: the same binary with lbr=1 but without pmc=1: the
# counter MSRs unknown (read as 0, ignore_bad_msrs), no status, no PMI,
# no freeze (the "freeze" run keeps recording), the VMX controls load
# nothing.
slog=$TV_LOGS/bochs-pmc-model-stock.serial.log
TV_BOCHS_BIN=$model TV_BOCHS_EXTRA="cpu: lbr=1" tv_bochs "$slog" 120 "$work/disk.img" 1 >/dev/null
sout=$(tr -d '\r' <"$slog")
bad=$(awk -v z="$z" '
	$1 == "PMCTEST" && $2 == "run" { for (i = 4; i <= NF; i++) if (($i == "pmc" && ($(i+1) != z || $(i+2) != z || $(i+3) != z || $(i+4) != z)) ||
		($i == "status" && $(i+1) != z) || ($i == "pending" && $(i+1) != 0)) { print $3; next } }
	$1 == "PMCTEST" && $2 == "pmi" && $5 != 0 { print "pmi-" $3 }
	$1 == "PMCTEST" && $2 == "vmx" && $3 != "caps" && ($11 != z || $13 != z) { print "vmx-" $3 }' <<<"$sout" | tr '\n' ' ')
if grep -q '^PMCTEST done' <<<"$sout" && [ -z "$bad" ] &&
	grep -q '^PMCTEST cpuid 0ah eax 0x0000000007300404 perfcap 0x0000000000000005 gctl-reset 0x0000000000000000' <<<"$sout" &&
	grep -Eq "^PMCTEST run freeze .* tos $n_rec " <<<"$sout"; then
	tv_ok "pmc-model: without pmc=1: stock (counters read 0, no status, no PMI, no LBR freeze, VMX loads nothing)"
else
	tv_fail "pmc-model: without pmc=1: stock" "runs with counts/status/PMIs: ${bad:-none}; $(grep -m1 '^PMCTEST cpuid' <<<"$sout"); $(grep -m1 '^PMCTEST run freeze' <<<"$sout")"
	TV_FAILED=1 tv_keep_log "$slog"
fi
