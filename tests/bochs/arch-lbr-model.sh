#!/usr/bin/env bash
# bochs/arch-lbr-model.sh - the Bochs architectural-LBR model
# (tests/bench/bochs-patches/0006-arch-lbr-model.patch, docs/BOCHS-MODEL.md)
# checked against ground truth, without tracevisor.
#
# build/archlbrtest.efi (tests/payload/archlbrtest.c + archlbr_code.S,
# which runs lbr_branches.S's sequence as albt_* followed by INT n, IRETQ
# and LRETQ: 12 taken branches) runs as OVMF's boot program on one CPU,
# ring 0, interrupts off, with `cpu: arch_lbr=1, pmc=1`.  Checked here:
#   - CPUID: highest basic leaf 1CH, (7,0):EDX[19], leaf 1CH EAX 0x0F
#     (depths 8-32, no deep-C reset, effective IPs) EBX 0x3 (CPL and
#     branch filtering, no call stack) ECX 0x5 (mispredict, branch type, no
#     timed LBRs); PDCM; IA32_PERF_CAPABILITIES LBR_FMT 3FH (with pmc=1's
#     FW_WRITE: 0x203F); IA32_LBR_CTL 0 and IA32_LBR_DEPTH 32 after reset;
#   - the records of the sequence one for one against the sequence's table
#     (below, from the code and `nm`), entry 0 the newest, with BR_TYPE and
#     MISPRED (the lbr=1 model's documented stand-in predictor: forward Jcc
#     and a first-seen indirect target mispredicted), and nothing else;
#   - the same records against Bochs's own instruction trace (debugger
#     `trace on` between two magic breakpoints), BR_TYPE derived from the
#     traced mnemonics;
#   - a second run on top (entries 12-23 the first run's), a write of
#     IA32_LBR_DEPTH emptying all records, depth 8 keeping the 8 newest;
#   - each branch-type filter bit alone, JCC off, the CPL filter (OS only:
#     all, USR only / neither: none; all of it is ring 0), LBREn 0: none,
#     IA32_DEBUGCTL.LBR: no effect, reads 0;
#   - freeze: PMC0 overflows with INT on the 7th branch instruction with
#     FREEZE_LBRS_ON_PMI: LBR_Frz, the 6 records up to that CALL, unchanged
#     by a further run, recording again after 0x390;
#   - the legacy LBR MSRs gone; #GP for reserved IA32_LBR_CTL bits (CALL_STACK
#     included), unsupported depths, records at or beyond the depth;
#   - VMX: entry control 21 and exit control 26 allowed-1, GUEST_IA32_LBR_CTL
#     (0x2816) written and read; with both the guest's 3 branches recorded
#     under the field's value and nothing after the exit; load without
#     clear: the guest's value stays on in VMX root; no control: the exit
#     saves root's value into the field; clear alone: saved, then cleared;
#     CALL_STACK in the field: the entry fails, the field unchanged, the
#     MSR cleared;
#   - the same binary under stock Bochs and with `lbr=1` alone: no
#     architectural LBR at all.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
tv_model_bochs arch-lbr-model || exit 0
model=$TV_MODEL
if ! grep -q 'Model architectural LBRs' "$model"; then
	tv_skip "arch-lbr-model" "$model has no cpu: arch_lbr option (patch 0006 not in its series)"
	exit 0
fi
work=$TV_BUILD/test/bochs-arch-lbr-model
mkdir -p "$work"
log=$TV_LOGS/bochs-arch-lbr-model.serial.log
tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/archlbrtest.efi"

rc=$(TV_BOCHS_BIN=$model TV_BOCHS_EXTRA="cpu: arch_lbr=1, pmc=1" tv_bochs "$log" 120 "$work/disk.img" 1)
if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "arch-lbr-model: finished by itself"; else tv_fail "arch-lbr-model: finished by itself" "timed out"; fi
tv_expect "arch-lbr-model: program ran to its end" "$log" '^ALBTEST done'

declare -A symtab
while read -r value _ name; do symtab[$name]=0x$value; done < <(nm "$TV_BUILD/archlbrtest.so")
out=$(tr -d '\r' <"$log")
at=$(sed -n 's/^ALBTEST base albt_run \(0x[0-9a-f]*\)$/\1/p' <<<"$out" | head -1)
if [ -z "$at" ] || [ -z "${symtab[albt_run]:-}" ]; then
	tv_fail "arch-lbr-model: program reported its load address" "no 'ALBTEST base' line"
	tv_keep_log "$log"
	exit 0
fi
base=$(( at - ${symtab[albt_run]} ))
addr() { printf '0x%016x' $(( base + ${symtab[$1]} )); }
h() { printf '0x%016x' "$1"; }
z=$(h 0)

# The sequence's taken branches, oldest first (archlbr_code.S header):
# "FROM TO BR_TYPE MISPRED", BR_TYPE the IA32_LBR_x_INFO[59:56] encoding
# (0 Jcc, 1 near indirect JMP, 2 near relative JMP, 3 near indirect CALL,
# 4 near relative CALL, 5 near RET, 8 other), MISPRED 1 for the forward
# JZ, "I" for the indirect ones (mispredicted the first time their target
# is seen).  Everything expected below derives from this table.
cat >"$work/seq" <<EOF
albt_jmp albt_t1 2 0
albt_jz albt_t2 0 1
albt_jnz albt_loop 0 0
albt_jnz albt_loop 0 0
albt_jmpi albt_t3 1 I
albt_call albt_leaf 4 0
albt_leaf albt_after 5 0
albt_calli albt_leaf2 3 I
albt_ret2 albt_after2 5 0
albt_int albt_int_handler 8 0
albt_iret albt_int_ret 8 0
albt_lret albt_lret_to 8 0
EOF
n_rec=$(wc -l <"$work/seq")
# records IND TYPES [FIRST_N]: "FROM TO INFO" of the sequence's records
# whose BR_TYPE is in TYPES (a regex), of its first FIRST_N records,
# newest first; IND: the MISPRED bit of the indirect ones.
records() {
	head -n "${3:-$n_rec}" "$work/seq" | awk -v t="^($2)\$" '$3 ~ t' | tac |
		while read -r f to ty m; do
			[ "$m" = I ] && m=$1
			echo "$(addr "$f") $(addr "$to") $(h $(( (m << 63) | (ty << 56) )))"
		done
}
# got NAME: the run's records as "I FROM TO INFO" (entry I, 0 = newest).
got() {
	awk -v n="$1" '$1 == "ALBTEST" && $2 == "lbr" && $3 == n { print $4, $5, $6, $7 }' <<<"$out"
}
# runline NAME FIELD: a field of "ALBTEST run NAME ...".
runline() {
	awk -v n="$1" -v f="$2" '$1 == "ALBTEST" && $2 == "run" && $3 == n {
		for (i = 4; i < NF; i++) if ($i == f) { print $(i+1); exit } }' <<<"$out"
}
# check NAME GOT WANT
check() {
	if [ "$2" = "$3" ]; then tv_ok "arch-lbr-model: $1"; else tv_fail "arch-lbr-model: $1" "got '$2', want '$3'"; fi
}
# check_run NAME EXPECTED_FILE WHAT: the records entry for entry, entries
# 0..n-1 and nothing else, and the run's count.
check_run() {
	nl -v0 -w1 -s' ' "$2" >"$work/$1.exp"
	got "$1" >"$work/$1.got"
	if diff -u "$work/$1.exp" "$work/$1.got" >"$work/$1.diff" && [ "$(runline "$1" n)" = "$(wc -l <"$2")" ]; then
		tv_ok "arch-lbr-model: $3"
	else
		tv_fail "arch-lbr-model: $3" "$(runline "$1" n) recorded; first difference: $(grep -m2 '^[-+][^-+]' "$work/$1.diff" | tr '\n' ' ')"
	fi
}
ALL='0|1|2|3|4|5|8'

check "CPUID max leaf 1CH, (7,0):EDX[19], leaf 1CH 0xF/0x3/0x5/0; PDCM; PERF_CAPABILITIES LBR_FMT 3FH (| FW_WRITE)" \
	"$(grep -m1 '^ALBTEST cpuid' <<<"$out")" \
	"ALBTEST cpuid max 0x000000000000001c edx7 0x0000000000080000 1c 0x000000000000000f 0x0000000000000003 0x0000000000000005 $z pdcm 1 perfcap 0x000000000000203f"
check "after reset: IA32_LBR_CTL 0, IA32_LBR_DEPTH 32" "$(grep -m1 '^ALBTEST reset' <<<"$out")" "ALBTEST reset ctl $z depth 32"

records 1 "$ALL" >"$work/all.rec"
check_run all "$work/all.rec" "all branch types: the $n_rec records of the sequence one for one, entry 0 the newest, BR_TYPE and MISPRED"
{ records 0 "$ALL"; cat "$work/all.rec"; } >"$work/twice.rec"
check_run twice "$work/twice.rec" "a second run on top: entries 0-$((n_rec - 1)) its records, $n_rec-$((2 * n_rec - 1)) the first run's"
check "a write of IA32_LBR_DEPTH empties every record" "$(grep -m1 '^ALBTEST depthreset' <<<"$out")" \
	"ALBTEST depthreset before $((2 * n_rec)) after 0"
records 0 "$ALL" | head -8 >"$work/depth8.rec"
check_run depth8 "$work/depth8.rec" "IA32_LBR_DEPTH 8: the 8 newest records, the oldest $((n_rec - 8)) shifted out"
for f in "jcc 0" "reljmp 2" "indjmp 1" "relcall 4" "indcall 3" "ret 5" "other 8"; do
	read -r fname ftype <<<"$f"
	records 0 "$ftype" >"$work/$fname.rec"
	check_run "$fname" "$work/$fname.rec" "filter bit $fname alone: its $(wc -l <"$work/$fname.rec") record(s) (BR_TYPE $ftype)"
done
records 0 '1|2|3|4|5|8' >"$work/nojcc.rec"
check_run nojcc "$work/nojcc.rec" "all types but JCC: $(wc -l <"$work/nojcc.rec") records"
records 0 "$ALL" >"$work/osonly.rec"
check_run osonly "$work/osonly.rec" "CPL filter OS only: all $n_rec (ring 0)"
check "CPL filter USR only, neither OS nor USR, LBREn 0, IA32_DEBUGCTL.LBR without LBR_CTL: nothing; DEBUGCTL.LBR reads 0" \
	"$(runline usronly n) $(runline nocpl n) $(runline off n) $(runline debugctl n) $(runline debugctl debugctl)" "0 0 0 0 $z"

# freeze (pmc=1): PMC0 from -7 counts branch instructions; the 7th (the
# CALL, after a not-taken JNZ) overflows it: its records are the first 6
K=6
records 0 "$ALL" "$K" >"$work/freeze.rec"
check "counter PMI with FREEZE_LBRS_ON_PMI: IA32_PERF_GLOBAL_STATUS bit 0 + LBR_Frz (58)" \
	"$(runline freeze status) $(runline frozen status)" "0x0400000000000001 0x0400000000000001"
check_run freeze "$work/freeze.rec" "frozen at the overflowing CALL: $K records, entry 0 the CALL"
check_run frozen "$work/freeze.rec" "still frozen: a whole further run changes nothing"
{ records 0 "$ALL"; cat "$work/freeze.rec"; } >"$work/thawed.rec"
check_run thawed "$work/thawed.rec" "after 0x390 bit 58: recording again, the $n_rec new records on the $K frozen ones"

check "legacy LBR MSRs absent (TOS, LBR_SELECT, LASTBRANCH_0_FROM read 0 after writes), DEBUGCTL.LBR dropped, FREEZE_LBRS_ON_PMI kept" \
	"$(grep -m1 '^ALBTEST legacy' <<<"$out")" "ALBTEST legacy tos $z select $z from0 $z debugctl 0x0000000000000800"
gp=$(awk '$1 == "ALBTEST" && $2 == "gp" { printf "%s=%s ", $3, $4 }' <<<"$out")
check "#GP: IA32_LBR_CTL CALL_STACK/bit 4/15/23/63, DEPTH 0/7/40/64, entries 16+ at depth 16; none for valid accesses" "$gp" \
	"ctl-callstack=1 ctl-bit4=1 ctl-bit15=1 ctl-bit23=1 ctl-bit63=1 ctl-valid=0 depth-0=1 depth-7=1 depth-40=1 depth-64=1 depth-24=0 rd-from-15=0 wr-info-15=0 rd-from-16=1 wr-to-16=1 rd-info-31=1 "
check "IA32_LBR_DEPTH 24 read back, IA32_LBR_15_INFO written and read back" \
	"$(grep -m1 '^ALBTEST msr' <<<"$out")" "ALBTEST msr depth 0x0000000000000018 info15 0x0000000000000123"

# VMX
vmx() { grep -m1 "^ALBTEST vmx $1 " <<<"$out" | cut -d' ' -f4-; }
ctl_all=0x00000000007f0007 ctl_root=0x00000000007f0006
check "VMX: entry control 21 (load guest IA32_LBR_CTL), exit control 26 (clear IA32_LBR_CTL) allowed-1" "$(vmx caps)" "entry21 1 exit26 1"
{
	echo "$(addr guest_vmx_guest_jz) $(addr guest_vmx_guest_exit) $(h $(( (1 << 63) | (0 << 56) )))"
	echo "$(addr guest_vmx_guest_leaf) $(addr guest_vmx_guest_ret) $(h $(( 5 << 56 )))"
	echo "$(addr guest_vmx_guest) $(addr guest_vmx_guest_leaf) $(h $(( 4 << 56 )))"
} >"$work/guest.rec"
nl -v0 -w1 -s' ' "$work/guest.rec" >"$work/vmx-load.exp"
got vmx-load >"$work/vmx-load.got"
check "VMX load+clear: GUEST_IA32_LBR_CTL written, exit 18, IA32_LBR_CTL 0 after the exit, the field saved ($ctl_all)" \
	"$(vmx load)" "launch 0 reason 0x0000000000000012 wr 0 ctl-after $z field $ctl_all"
if diff -u "$work/vmx-load.exp" "$work/vmx-load.got" >"$work/vmx-load.diff"; then
	tv_ok "arch-lbr-model: VMX load+clear: exactly the guest's 3 branches (CALL, RET, JZ), nothing of VMX root"
else
	tv_fail "arch-lbr-model: VMX load+clear: exactly the guest's 3 branches" "$(grep -m2 '^[-+][^-+]' "$work/vmx-load.diff" | tr '\n' ' ')"
fi
got vmx-noclear | cut -d' ' -f2- >"$work/vmx-noclear.got"
nroot=$(( $(wc -l <"$work/vmx-noclear.got") - 3 ))
if [ "$(vmx noclear)" = "launch 0 reason 0x0000000000000012 wr 0 ctl-after $ctl_all field $ctl_all" ] &&
	[ "$nroot" -ge 1 ] && [ "$(tail -3 "$work/vmx-noclear.got")" = "$(cat "$work/guest.rec")" ]; then
	tv_ok "arch-lbr-model: VMX load without clear: the guest's value stays on after the exit ($nroot VMX-root records on the guest's 3)"
else
	tv_fail "arch-lbr-model: VMX load without clear" "$(vmx noclear); $nroot root records; oldest 3: $(tail -3 "$work/vmx-noclear.got" | tr '\n' ' ')"
fi
check "VMX no LBR_CTL control: nothing loaded (no record), the exit saves root's value into the field" \
	"$(vmx none) records $(got vmx-none | wc -l)" "launch 0 reason 0x0000000000000012 wr 0 ctl-after $ctl_root field $ctl_root records 0"
check "VMX clear alone: the field gets root's value, then IA32_LBR_CTL is cleared" \
	"$(vmx clear) records $(got vmx-clear | wc -l)" "launch 0 reason 0x0000000000000012 wr 0 ctl-after $z field $ctl_root records 0"
check "VMX CALL_STACK in the field: entry fails (0x80000021), field not saved, IA32_LBR_CTL cleared by the exit" \
	"$(vmx badguest) records $(got vmx-badguest | wc -l)" "launch 0 reason 0x0000000080000021 wr 0 ctl-after $z field 0x00000000007f000f records 0"
tv_keep_log "$log"

# Bochs's own record of what ran: the debugger traces the "all" run's
# sequence (the first albt_run) between its two magic breakpoints.  Each
# taken branch (successor not at address + length) with a BR_TYPE from its
# mnemonic, as offsets from albt_run (the two runs may load the image at
# different addresses).
dlog=$TV_LOGS/bochs-arch-lbr-model-dbg.serial.log
{ printf '%s\n' c 'trace on' c 'trace off'; for _ in $(seq 80); do echo c; done; echo quit; } >"$work/dbg.cmds"
rc=$(TV_BOCHS_BIN=$model TV_BOCHS_ARGS="-dbg -rc $work/dbg.cmds" TV_BOCHS_EXTRA="cpu: arch_lbr=1
magic_break: enabled=1" tv_bochs "$dlog" 180 "$work/disk.img" 1)
dat=$(tr -d '\r' <"$dlog" | sed -n 's/^ALBTEST base albt_run \(0x[0-9a-f]*\)$/\1/p' | head -1)
awk '/^\(0\)\.\[[0-9]+\] \[0x/ {
	a = $2; gsub(/[][]/, "", a); m = $0; sub(/.*\): /, "", m); sub(/ *;.*/, "", m); print a, length($NF) / 2, m
	if (/xchg bx, bx/) exit
}' "$dlog.stdout" >"$work/trace.insns"
# BR_TYPE of a traced mnemonic: Jcc/LOOP/JrCXZ 0, "jmp .+n" 2, other jmp
# 1, "call .+n" 4, other call 3, ret 5, anything else (int, iret, retf,
# far jmp/call, sys*) 8
: >"$work/trace.rec"
prev="" pnext=0
while read -r a l m; do
	a=$((a))
	if [ -n "$prev" ] && [ "$a" != "$pnext" ]; then
		case $pm in
		jmp\ .[-+]*) t=2 ;; jmp\ far* | jmpf*) t=8 ;; jmp\ *) t=1 ;;
		call\ .[-+]*) t=4 ;; call\ far* | callf*) t=8 ;; call\ *) t=3 ;;
		ret | ret\ *) t=5 ;;
		j* | loop*) t=0 ;;
		*) t=8 ;;
		esac
		printf '0x%x 0x%x %d\n' $((prev - dat)) $((a - dat)) "$t" >>"$work/trace.rec"
	fi
	prev=$a pnext=$((a + l)) pm=$m
done <"$work/trace.insns"
got all | awk -v b="$at" '{ print $2, $3, $4 }' | tac | while read -r f t i; do
	printf '0x%x 0x%x %d\n' $((f - at)) $((t - at)) $(( (i >> 56) & 0xf ))
done >"$work/all.trace-cmp"
if [ "$rc" = 124 ] || [ "$rc" = 137 ] || [ -z "$dat" ]; then
	tv_fail "arch-lbr-model: records = Bochs's instruction trace" "debugger run timed out or printed no base"
elif [ -s "$work/trace.rec" ] && diff -u "$work/trace.rec" "$work/all.trace-cmp" >"$work/trace.diff"; then
	tv_ok "arch-lbr-model: records = Bochs's instruction trace ($(wc -l <"$work/trace.rec") taken branches, BR_TYPE from the traced mnemonics)"
else
	tv_fail "arch-lbr-model: records = Bochs's instruction trace" \
		"$(wc -l <"$work/trace.rec") traced; first difference: $(grep -m2 '^[-+][^-+]' "$work/trace.diff" 2>/dev/null | tr '\n' ' ')"
fi

# Stock behaviour, and lbr=1 alone: the same binary sees no architectural
# LBR (CPUID as the CPU model has it, the MSRs unknown: read 0, no #GP with
# ignore_bad_msrs, no records, the VMX controls not allowed and the field
# not writable); lbr=1 has its legacy stack and format 5 instead.
for mode in stock lbr; do
	slog=$TV_LOGS/bochs-arch-lbr-model-$mode.serial.log
	extra=""
	[ "$mode" = lbr ] && extra="cpu: lbr=1"
	TV_BOCHS_BIN=$model TV_BOCHS_EXTRA="$extra" tv_bochs "$slog" 120 "$work/disk.img" 1 >/dev/null
	sout=$(tr -d '\r' <"$slog")
	if [ "$mode" = stock ]; then
		perfcap=$z legacy="tos $z select $z from0 $z debugctl $z"
	else
		perfcap=0x0000000000000005 legacy="tos 0x0000000000000005 select 0x0000000000000003 from0 0x[0-9a-f]{16} debugctl 0x0000000000000801"
	fi
	bad=$(awk '$1 == "ALBTEST" && ($2 == "lbr" || ($2 == "gp" && $4 != 0) ||
		($2 == "vmx" && $3 != "caps" && ($9 != 1 || $11 != "0x0000000000000000"))) { print $2 "-" $3 }' <<<"$sout" | sort -u | tr '\n' ' ')
	cpuid=$(grep -m1 '^ALBTEST cpuid' <<<"$sout" | awk '{ print $4, $6, $NF }')
	if grep -q '^ALBTEST done' <<<"$sout" && [ -z "$bad" ] &&
		[ "$cpuid" = "0x0000000000000016 0x0000000000000000 $perfcap" ] &&
		grep -Eq "^ALBTEST legacy $legacy\$" <<<"$sout" &&
		grep -q '^ALBTEST vmx caps entry21 0 exit26 0$' <<<"$sout"; then
		tv_ok "arch-lbr-model: ${extra:-stock Bochs}: no architectural LBR (CPUID max 0x16, EDX[19] 0, PERF_CAPABILITIES $perfcap, no record, no #GP, no VMX controls or field)"
	else
		tv_fail "arch-lbr-model: ${extra:-stock Bochs}: no architectural LBR" "cpuid/perfcap: $cpuid; unexpected: ${bad:-none}; $(grep -m1 '^ALBTEST legacy' <<<"$sout"); $(grep -m1 '^ALBTEST vmx caps' <<<"$sout")"
		TV_FAILED=1 tv_keep_log "$slog"
	fi
done
