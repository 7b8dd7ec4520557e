#!/usr/bin/env bash
# bochs/bts-model.sh - the Bochs BTS / DS save area model
# (tests/bench/bochs-patches/0002-bts-ds-model.patch, docs/BOCHS-MODEL.md)
# checked against ground truth, without tracevisor.
#
# build/btstest.efi (tests/payload/btstest.c + bts_branches.S, which runs
# lbr_branches.S's sequence as btst_*) runs as OVMF's boot program on one
# CPU with `cpu: bts=1` (and no lbr=1: the options are independent) and
# prints the DS save area after each run.  Checked here:
#   - TR+BTS: the buffer against the branches the sequence must take,
#     computed from `nm` of build/btstest.so and the load address the
#     program prints, one 24-byte record per branch, in order, with the
#     predicted bit (bit 4 of the third quadword) the inverse of the
#     model's documented MISPRED, nothing else written; the index advanced
#     by 24 per record;
#   - the same records against Bochs's own instruction trace of the
#     sequence (debugger `trace on` between two magic breakpoints);
#   - TR without BTS, BTS without TR, BTS_OFF_OS (all of it is ring 0):
#     nothing stored, index unchanged; BTS_OFF_USR: everything stored;
#   - BTINT=0 with 4 slots: circular, the last 4 records in place, the
#     index wrapped, no PMI requested even with the threshold inside the
#     buffer;
#   - BTINT=1 with 6 slots, threshold at the 3rd: one PMI through the LVT
#     performance monitoring entry (pending in the IRR after the run, then
#     taken in the STI window after it, at its address; the delivery sets
#     the entry's mask bit), IA32_PERF_GLOBAL_STATUS.OvfBuffer set and cleared
#     through bit 62 of 0x390, records 1-6 stored, nothing past the
#     absolute maximum, index at the absolute maximum;
#   - CPUID.1 DS/DTES64/DS-CPL, IA32_MISC_ENABLE bit 11 = 0 and bit 12 = 1,
#     IA32_DS_AREA read back and #GP on a non-canonical write;
#   - the same program without the option (stock): nothing of it.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
tv_model_bochs bts-model || exit 0
model=$TV_MODEL
if ! grep -q 'Model BTS and the DS save area' "$model"; then
	tv_skip "bts-model" "$model has no cpu: bts option (patch 0002 not in its series)"
	exit 0
fi
work=$TV_BUILD/test/bochs-bts-model
mkdir -p "$work"
log=$TV_LOGS/bochs-bts-model.serial.log
tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/btstest.efi"

rc=$(TV_BOCHS_BIN=$model TV_BOCHS_EXTRA="cpu: bts=1" tv_bochs "$log" 120 "$work/disk.img" 1)
if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "bts-model: finished by itself"; else tv_fail "bts-model: finished by itself" "timed out"; fi
tv_expect "bts-model: program ran to its end" "$log" '^BTSTEST done'

declare -A symtab
while read -r value _ name; do symtab[$name]=0x$value; done < <(nm "$TV_BUILD/btstest.so")
out=$(tr -d '\r' <"$log")
at=$(sed -n 's/^BTSTEST base btst_run \(0x[0-9a-f]*\)$/\1/p' <<<"$out" | head -1)
if [ -z "$at" ] || [ -z "${symtab[btst_run]:-}" ]; then
	tv_fail "bts-model: program reported its load address" "no 'BTSTEST base' line"
	tv_keep_log "$log"
	exit 0
fi
base=$(( at - ${symtab[btst_run]} ))
addr() { printf '0x%016x' $(( base + ${symtab[$1]} )); }
FILL=0x5a5a5a5a5a5a5a5a

# expected IND: the sequence's 9 taken branches (lbr_branches.S header),
# oldest first, "FROM TO FLAGS"; FLAGS bit 4 = predicted = not MISPRED of
# the model's predictor (forward Jcc mispredicted, an indirect branch only
# the first time its address is seen: IND=1 on the first run).
expected() {
	local ind=$1 pi=0x0000000000000010
	[ "$ind" = 1 ] && pi=0x0000000000000000
	local p=0x0000000000000010 m=0x0000000000000000
	echo "$(addr btst_jmp) $(addr btst_t1) $p"
	echo "$(addr btst_jz) $(addr btst_t2) $m"
	echo "$(addr btst_jnz) $(addr btst_loop) $p"
	echo "$(addr btst_jnz) $(addr btst_loop) $p"
	echo "$(addr btst_jmpi) $(addr btst_t3) $pi"
	echo "$(addr btst_call) $(addr btst_leaf) $p"
	echo "$(addr btst_leaf) $(addr btst_after) $p"
	echo "$(addr btst_calli) $(addr btst_leaf2) $pi"
	echo "$(addr btst_ret2) $(addr btst_after2) $p"
}
fill() { local i; for ((i = 0; i < $1; i++)); do echo "$FILL $FILL $FILL"; done; }

# slots NAME: every printed slot of that run, slot order, "FROM TO FLAGS".
slots() { awk -v n="$1" '$1 == "BTSTEST" && $2 == "rec" && $3 == n { print $5, $6, $7 }' <<<"$out"; }
# runline NAME FIELD: a field of the run's summary line.
runline() { awk -v n="$1" -v f="$2" '$1 == "BTSTEST" && $2 == "run" && $3 == n { for (i = 4; i < NF; i++) if ($i == f) print $(i + 1) }' <<<"$out"; }

# check_run NAME EXPECTED_FILE INDEX_RECORDS PMI WHAT: the slots, the index
# (base + 24 * INDEX_RECORDS), the PMI vector pending in the IRR after the
# run (interrupts off) and taken after it (PMI: 0 or 1 for both).
check_run() {
	local name=$1 exp=$2 nidx=$3 pmi=$4 what=$5 got=$work/$1.got b idx want
	slots "$name" >"$got"
	b=$(runline "$name" base)
	idx=$(runline "$name" index)
	if [ -z "$b" ]; then
		tv_fail "bts-model: $what" "no 'BTSTEST run $name' line"
		return
	fi
	want=$(printf '0x%016x' $(( b + 24 * nidx )))
	if ! diff -u "$exp" "$got" >"$work/$name.diff"; then
		tv_fail "bts-model: $what" "first difference: $(grep -m2 '^[-+][^-+]' "$work/$name.diff" | tr '\n' ' ')"
	elif [ "$idx" != "$want" ]; then
		tv_fail "bts-model: $what" "BTS index $idx, expected $want (base + $nidx records)"
	elif [ "$(runline "$name" pending)" != "$pmi" ] || [ "$(runline "$name" pmi)" != "$pmi" ]; then
		tv_fail "bts-model: $what" "PMI pending $(runline "$name" pending), taken $(runline "$name" pmi), expected $pmi"
	else
		tv_ok "bts-model: $what"
	fi
}

# TR+BTS into 32 slots (+2 printed past the end): 9 records, index + 9*24.
{ expected 1; fill 25; } >"$work/all.exp"
check_run all "$work/all.exp" 9 0 "TR+BTS: 9 records, one per taken branch, predicted bits, index advanced by 9 x 24"
fill 34 >"$work/none.exp"
check_run tronly "$work/none.exp" 0 0 "TR without BTS: branch trace messages only, nothing stored"
check_run btsonly "$work/none.exp" 0 0 "BTS without TR: nothing stored"
check_run offos "$work/none.exp" 0 0 "BTS_OFF_OS: ring-0 branches not stored"
{ expected 0; fill 25; } >"$work/offusr.exp"
check_run offusr "$work/offusr.exp" 9 0 "BTS_OFF_USR: ring-0 branches stored"

# circular, 4 slots: records 9, 6, 7, 8 in slots 0-3, the 2 past the end
# untouched, the index wrapped to base + 1 record; BTINT=0: no PMI.
expected 0 >"$work/seq0"
{ sed -n 9p "$work/seq0"; sed -n 6,8p "$work/seq0"; fill 2; } >"$work/circ.exp"
check_run circ "$work/circ.exp" 1 0 "BTINT=0: circular buffer of 4 wraps (last 4 records, index base + 24), no PMI"
if [ "$(runline circ status)" = 0x0000000000000000 ]; then
	tv_ok "bts-model: BTINT=0: IA32_PERF_GLOBAL_STATUS.OvfBuffer stays clear"
else
	tv_fail "bts-model: BTINT=0: IA32_PERF_GLOBAL_STATUS.OvfBuffer stays clear" "status $(runline circ status)"
fi

# BTINT=1, 6 slots, threshold at record 3: records 1-6, nothing past the
# absolute maximum, index = absolute maximum, exactly one PMI.
{ sed -n 1,6p "$work/seq0"; fill 2; } >"$work/int.exp"
check_run int "$work/int.exp" 6 1 "BTINT=1: one PMI, records stop at the absolute maximum (6 of 9 stored, index at the end)"
pmi_at=$(addr btst_sti_window)
pmi_at=$(printf '0x%016x' $((pmi_at + 2)))
if grep -qx "BTSTEST pmi rip $pmi_at status 0x4000000000000000 after-reset 0x0000000000000000 lvt 0x00000000000100e5" <<<"$out" &&
	[ "$(runline int status)" = 0x4000000000000000 ]; then
	tv_ok "bts-model: BTINT=1: the PMI is the LVT perfmon vector, taken after STI, masks the entry; OvfBuffer (bit 62) set, cleared by 0x390"
else
	tv_fail "bts-model: BTINT=1: the PMI is the LVT perfmon vector, taken after STI, masks the entry; OvfBuffer (bit 62) set, cleared by 0x390" \
		"run status $(runline int status); $(grep -m1 '^BTSTEST pmi' <<<"$out") (PMI expected at $pmi_at)"
fi

tv_expect "bts-model: CPUID.1 DS, DTES64, DS-CPL; IA32_MISC_ENABLE BTS available (11 = 0), PEBS unavailable (12 = 1)" "$log" \
	'^BTSTEST cpuid ds 1 dtes64 1 dscpl 1 misc 0x0000000000001000'
tv_expect "bts-model: IA32_DS_AREA reads back; a non-canonical write raises #GP and changes nothing" "$log" \
	'^BTSTEST dsarea 0x0000000000001000 gp 1'
tv_keep_log "$log"

# Bochs's own record of what ran: the debugger traces the sequence between
# btst_run's two magic breakpoints (first run only).
dlog=$TV_LOGS/bochs-bts-model-dbg.serial.log
printf '%s\n' c 'trace on' c 'trace off' c c c c c c c c c c c c c c quit >"$work/dbg.cmds"
rc=$(TV_BOCHS_BIN=$model TV_BOCHS_ARGS="-dbg -rc $work/dbg.cmds" TV_BOCHS_EXTRA="cpu: bts=1
magic_break: enabled=1" tv_bochs "$dlog" 180 "$work/disk.img" 1)
tv_bochs_trace_branches "$dlog.stdout" "$work/bochs-trace.branches"
grep -v "^$FILL" "$work/all.got" | cut -d' ' -f1,2 >"$work/all.got.addrs"
ntr=$(wc -l <"$work/bochs-trace.branches")
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	tv_fail "bts-model: BTS records = Bochs's instruction trace" "debugger run timed out"
elif [ "$ntr" -gt 0 ] && diff -u "$work/bochs-trace.branches" "$work/all.got.addrs" >"$work/trace.diff"; then
	tv_ok "bts-model: BTS records = Bochs's instruction trace ($ntr taken branches)"
else
	tv_fail "bts-model: BTS records = Bochs's instruction trace" \
		"$ntr traced; first difference: $(grep -m2 '^[-+][^-+]' "$work/trace.diff" 2>/dev/null | tr '\n' ' ')"
fi

# Stock behaviour: the same binary without the option is Bochs as shipped:
# IA32_DS_AREA, IA32_MISC_ENABLE and IA32_PERF_GLOBAL_STATUS unknown (read
# as 0, writes dropped, no #GP, ignore_bad_msrs), nothing stored, no PMI.
# (CPUID.1:EDX.DS is set by corei7_skylake_x itself, stock or not.)
slog=$TV_LOGS/bochs-bts-model-stock.serial.log
TV_BOCHS_BIN=$model tv_bochs "$slog" 120 "$work/disk.img" 1 >/dev/null
sout=$(tr -d '\r' <"$slog")
nrec=$(awk '$1 == "BTSTEST" && $2 == "rec"' <<<"$sout" | grep -vc " $FILL $FILL $FILL\$")
npmi=$(awk '$1 == "BTSTEST" && $2 == "run" && $0 !~ / pending 0 pmi 0 status 0x0+$/' <<<"$sout" | wc -l)
moved=$(awk '$1 == "BTSTEST" && $2 == "run" { for (i = 4; i < NF; i++) { if ($i == "base") b = $(i + 1); if ($i == "index") x = $(i + 1) } if (b != x) n++ } END { print n + 0 }' <<<"$sout")
if grep -q '^BTSTEST done' <<<"$sout" && [ "$nrec" = 0 ] && [ "$npmi" = 0 ] && [ "$moved" = 0 ] &&
	grep -q '^BTSTEST dsarea 0x0000000000000000 gp 0' <<<"$sout" &&
	grep -q '^BTSTEST cpuid ds 1 dtes64 1 dscpl 1 misc 0x0000000000000000' <<<"$sout"; then
	tv_ok "bts-model: without bts=1: stock (IA32_DS_AREA/MISC_ENABLE read 0, no #GP, no records, index never moves, no PMI)"
else
	tv_fail "bts-model: without bts=1: stock" "$nrec records, $npmi runs with a PMI or status, $moved indexes moved; $(grep -m1 dsarea <<<"$sout"); $(grep -m1 cpuid <<<"$sout")"
	TV_FAILED=1 tv_keep_log "$slog"
fi
