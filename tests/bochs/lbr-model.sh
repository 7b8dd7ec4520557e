#!/usr/bin/env bash
# bochs/lbr-model.sh - the Bochs trace-hardware model (tests/bench/bochs-patches,
# docs/BOCHS-MODEL.md) checked against ground truth, without tracevisor.
#
# build/lbrtest.efi (tests/payload/lbrtest.c + lbr_branches.S) runs as
# OVMF's boot program on one CPU with `cpu: lbr=1` and prints what the
# modelled hardware recorded.  Checked here:
#   - the LBR stack against the branches lbr_branches.S must take, computed
#     from `nm` of build/lbrtest.so and the load address the program prints,
#     one for one and in order, with the MISPRED bit of the model's
#     documented predictor and nothing else in the 32 entries;
#   - the same stack against Bochs's own instruction trace of the sequence
#     (the debugger's `trace on` between two magic breakpoints): every
#     instruction whose successor is not the next one in memory is a taken
#     branch;
#   - LBR_SELECT: JCC suppressed, CPL_EQ_0 (nothing, all code is ring 0),
#     CPL_NEQ_0 (everything);
#   - BTF: one #DB per taken branch, at its target, the newest LBR FROM its
#     source, DEBUGCTL.LBR/BTF cleared by the #DB delivery;
#   - CPUID.1:ECX.PDCM and IA32_PERF_CAPABILITIES LBR format 5;
#   - the same program under stock Bochs (no option) sees none of it.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
tv_model_bochs lbr-model || exit 0
model=$TV_MODEL
work=$TV_BUILD/test/bochs-lbr-model
mkdir -p "$work"
log=$TV_LOGS/bochs-lbr-model.serial.log
tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/lbrtest.efi"

rc=$(TV_BOCHS_BIN=$model TV_BOCHS_EXTRA="cpu: lbr=1" tv_bochs "$log" 120 "$work/disk.img" 1)
if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "lbr-model: finished by itself"; else tv_fail "lbr-model: finished by itself" "timed out"; fi
tv_expect "lbr-model: program ran to its end" "$log" '^LBRTEST done'
tv_expect "lbr-model: CPUID.1:ECX.PDCM = 1, IA32_PERF_CAPABILITIES LBR format 5" "$log" \
	'^LBRTEST cpuid pdcm 1 perfcap 0x0000000000000005'

declare -A symtab
while read -r value _ name; do symtab[$name]=0x$value; done < <(nm "$TV_BUILD/lbrtest.so")
out=$(tr -d '\r' <"$log")
at=$(sed -n 's/^LBRTEST base lbrt_run \(0x[0-9a-f]*\)$/\1/p' <<<"$out" | head -1)
if [ -z "$at" ] || [ -z "${symtab[lbrt_run]:-}" ]; then
	tv_fail "lbr-model: program reported its load address" "no 'LBRTEST base' line"
	tv_keep_log "$log"
	exit 0
fi
base=$(( at - ${symtab[lbrt_run]} ))
addr() { printf '0x%016x' $(( base + ${symtab[$1]} )); }

# expected P MISPRED_JZ MISPRED_IND SKIP_JCC: the sequence's taken branches
# (lbr_branches.S header), oldest first, "FROM TO MISPRED".  The model's
# predictor: forward Jcc mispredicted, backward Jcc not, an indirect
# branch mispredicted only the first time its address is seen.
expected() {
	local p=$1 ind=$2 nojcc=${3:-0}
	echo "$(addr "${p}_jmp") $(addr "${p}_t1") 0"
	[ "$nojcc" = 1 ] || {
		echo "$(addr "${p}_jz") $(addr "${p}_t2") 1"
		echo "$(addr "${p}_jnz") $(addr "${p}_loop") 0"
		echo "$(addr "${p}_jnz") $(addr "${p}_loop") 0"
	}
	echo "$(addr "${p}_jmpi") $(addr "${p}_t3") $ind"
	echo "$(addr "${p}_call") $(addr "${p}_leaf") 0"
	echo "$(addr "${p}_leaf") $(addr "${p}_after") 0"
	echo "$(addr "${p}_calli") $(addr "${p}_leaf2") $ind"
	echo "$(addr "${p}_ret2") $(addr "${p}_after2") 0"
}

# recorded NAME: the run's non-empty entries oldest first, "FROM TO MISPRED".
recorded() {
	awk -v n="$1" '$1 == "LBRTEST" && $2 == "lbr" && $3 == n && !($5 ~ /^0x0+$/ && $6 ~ /^0x0+$/) {
		mis = (substr($7, 3, 1) ~ /[89a-f]/) ? 1 : 0
		line[$4] = $5 " " $6 " " mis; if ($4 + 0 > max) max = $4 + 0; any = 1
	} END { if (any) for (i = max; i >= 0; i--) if (i in line) print line[i] }' <<<"$out"
}

# check_run NAME EXPECTED_FILE WHAT
check_run() {
	local name=$1 exp=$2 what=$3 got=$work/$1.got n
	recorded "$name" >"$got"
	n=$(wc -l <"$exp")
	if diff -u "$exp" "$got" >"$work/$name.diff"; then
		tv_ok "lbr-model: $what: $n records, one for one"
	else
		tv_fail "lbr-model: $what: $n records, one for one" \
			"$(wc -l <"$got") recorded; first difference: $(grep -m2 '^[-+][^-+]' "$work/$name.diff" | tr '\n' ' ')"
	fi
}

expected lbrt 1 >"$work/all.exp"
check_run all "$work/all.exp" "LBR, no filter: the taken branches of the sequence"
if grep -qx 'LBRTEST run all select 0x0* tos 9' <<<"$out"; then
	tv_ok "lbr-model: TOS after 9 records from 0 is 9"
else
	tv_fail "lbr-model: TOS after 9 records from 0 is 9" "$(grep -m1 '^LBRTEST run all' <<<"$out")"
fi
expected lbrt 0 1 >"$work/nojcc.exp"
check_run nojcc "$work/nojcc.exp" "LBR_SELECT JCC: conditional branches suppressed"
: >"$work/notring0.exp"
check_run notring0 "$work/notring0.exp" "LBR_SELECT CPL_EQ_0: ring-0 branches suppressed"
expected lbrt 0 >"$work/notuser.exp"
check_run notuser "$work/notuser.exp" "LBR_SELECT CPL_NEQ_0: ring-0 branches kept"

# BTF: "#DB RIP, newest LBR FROM, DEBUGCTL seen in the handler" per #DB;
# expected: each taken branch's target and source, DEBUGCTL 0.
expected btft 0 | awk '{ print $2, $1, "0x0000000000000000" }' >"$work/btf.exp"
awk '$1 == "LBRTEST" && $2 == "btf" && $3 ~ /^[0-9]+$/ { print $4, $5, $6 }' <<<"$out" >"$work/btf.got"
nbtf=$(wc -l <"$work/btf.exp")
if diff -u "$work/btf.exp" "$work/btf.got" >"$work/btf.diff" &&
	grep -qx "LBRTEST btf count $nbtf" <<<"$out"; then
	tv_ok "lbr-model: BTF: $nbtf #DBs, one per taken branch, at its target, LBR FROM its source, LBR/BTF cleared by delivery"
else
	tv_fail "lbr-model: BTF: $nbtf #DBs, one per taken branch, at its target, LBR FROM its source, LBR/BTF cleared by delivery" \
		"$(grep -m1 '^LBRTEST btf count' <<<"$out"); first difference: $(grep -m2 '^[-+][^-+]' "$work/btf.diff" | tr '\n' ' ')"
fi
tv_keep_log "$log"

# Bochs's own record of what ran: the debugger traces the sequence between
# lbrt_run's two magic breakpoints (first run only).
dlog=$TV_LOGS/bochs-lbr-model-dbg.serial.log
printf '%s\n' c 'trace on' c 'trace off' c c c c c c c c c c quit >"$work/dbg.cmds"
rc=$(TV_BOCHS_BIN=$model TV_BOCHS_ARGS="-dbg -rc $work/dbg.cmds" TV_BOCHS_EXTRA="cpu: lbr=1
magic_break: enabled=1" tv_bochs "$dlog" 180 "$work/disk.img" 1)
tv_bochs_trace_branches "$dlog.stdout" "$work/bochs-trace.branches"
cut -d' ' -f1,2 "$work/all.got" >"$work/all.got.addrs"
ntr=$(wc -l <"$work/bochs-trace.branches")
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	tv_fail "lbr-model: LBR stack = Bochs's instruction trace" "debugger run timed out"
elif [ "$ntr" -gt 0 ] && diff -u "$work/bochs-trace.branches" "$work/all.got.addrs" >"$work/trace.diff"; then
	tv_ok "lbr-model: LBR stack = Bochs's instruction trace ($ntr taken branches)"
else
	tv_fail "lbr-model: LBR stack = Bochs's instruction trace" \
		"$ntr traced; first difference: $(grep -m2 '^[-+][^-+]' "$work/trace.diff" 2>/dev/null | tr '\n' ' ')"
fi

# Stock behaviour: the same binary without the option is Bochs as shipped:
# DEBUGCTL and the LBR MSRs unknown (read as 0, ignore_bad_msrs), so no
# records, IA32_PERF_CAPABILITIES 0, and TF steps every instruction.
slog=$TV_LOGS/bochs-lbr-model-stock.serial.log
TV_BOCHS_BIN=$model tv_bochs "$slog" 120 "$work/disk.img" 1 >/dev/null
sout=$(tr -d '\r' <"$slog")
nrec=$(grep -E '^LBRTEST lbr ' <<<"$sout" | grep -vcE ' 0x0+ 0x0+ 0x0+$')
nstep=$(sed -n 's/^LBRTEST btf count \([0-9]*\)$/\1/p' <<<"$sout")
if grep -q '^LBRTEST done' <<<"$sout" && [ "$nrec" = 0 ] && [ "${nstep:-0}" -gt "$nbtf" ] &&
	grep -q '^LBRTEST cpuid pdcm 1 perfcap 0x0000000000000000' <<<"$sout"; then
	tv_ok "lbr-model: without lbr=1: stock (no records, PERF_CAPABILITIES 0, TF steps all $nstep instructions)"
else
	tv_fail "lbr-model: without lbr=1: stock" "$nrec records, ${nstep:-no} #DBs, $(grep -m1 cpuid <<<"$sout")"
	TV_FAILED=1 tv_keep_log "$slog"
fi
