#!/usr/bin/env bash
# bochs/pt-model.sh - the Bochs Intel PT model (tests/bench/bochs-patches
# 0003 and 0004, docs/BOCHS-MODEL.md) checked against ground truth,
# without tracevisor.
#
# build/pttest.efi (tests/payload/pttest.c + pt_code.S, VMX entry from the
# shared guest_vmx.h/guest_helpers.S) runs as OVMF's boot program on one
# CPU with `cpu: pt=1`, runs known code with PT on under several
# configurations and dumps each run's raw PT output.  Checked here,
# with our libipt-based decoder build/pt-flow (tests/bochs/pt_flow.c):
#   - CPUID.(7,0):EBX[25] and leaf 14H advertise exactly the modelled subset;
#     MSR accesses that must #GP do, and those that must not do not;
#   - single range, RET compression on (sr) and off (noretc): libipt's
#     instruction flow equals Bochs's own instruction trace of the region
#     (debugger `trace on` between the magic breakpoints) one for one;
#     packet level: PSB first, PSB+ again every 2 KiB with TSC/CBR/MODE/PIP
#     and a FUP, TIP.PGE at the instruction after the enabling WRMSR, FUP
#     at the disabling WRMSR + TIP.PGD without IP, TNT bits and TIPs
#     counted against the traced branches, no decode error;
#   - ToPA with an INT region and a STOP region: one PMI, Stopped, the
#     pointers on the full STOP region, Trace_ToPA_PMI and its clearing,
#     and the 8 KiB written byte-identical to the single-range stream of
#     the same configuration; a table entry with a reserved bit: Error;
#   - filters: CR3 match / mismatch, User only at CPL 0, one IP range
#     (flow = Bochs's trace restricted to the range);
#   - VMX (patch 0004): IA32_VMX_MISC[14] = 1, the load/clear IA32_RTIT_CTL
#     controls and GUEST_IA32_RTIT_CTL; VM entries to a 4-instruction guest:
#     the packets of the entry and the exit and libipt's flow of the guest,
#     a host tracing root up to the entry, the entry check, controls 0;
#   - the same program under the binary without the option: no PT.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
tv_model_bochs pt-model || exit 0
model=$TV_MODEL
flowbin=$TV_BUILD/pt-flow
if [ ! -x "$flowbin" ] || [ ! -f "$TV_BUILD/pttest.efi" ]; then
	tv_skip "pt-model" "no $flowbin or pttest.efi (make all; pt-flow needs libipt-dev)"
	exit 0
fi
if ! grep -q 'Model a subset of Intel Processor Trace' "$model"; then
	tv_skip "pt-model" "$model has no cpu: pt option (patch 0003 not applied)"
	exit 0
fi
work=$TV_BUILD/test/bochs-pt-model
rm -rf "$work"
mkdir -p "$work"
log=$TV_LOGS/bochs-pt-model.serial.log
tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/pttest.efi"

# One run under the debugger: Bochs's own instruction trace of runs 1 (sr)
# and 8 (ipf), each between ptt_run's two magic breakpoints; the serial
# output is the same as without the debugger (Bochs is deterministic).
nruns=9
traced=" 1 8 "
{
	echo c
	for r in $(seq $nruns); do
		case $traced in *" $r "*) echo 'trace on'; echo c; echo 'trace off' ;; *) echo c ;; esac
		echo c
	done
	echo c
	echo quit
} >"$work/dbg.cmds"
rc=$(TV_BOCHS_BIN=$model TV_BOCHS_ARGS="-dbg -rc $work/dbg.cmds" TV_BOCHS_EXTRA="cpu: pt=1
magic_break: enabled=1" tv_bochs "$log" 300 "$work/disk.img" 1)
if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "pt-model: finished by itself"; else tv_fail "pt-model: finished by itself" "timed out"; fi
tv_expect "pt-model: program ran to its end" "$log" '^PTTEST done'
out=$(tr -d '\r' <"$log")

# CPUID: leaf 14H max sub-leaf 1; EBX = CR3 filter | IP filter/TraceStop;
# ECX = ToPA | multi-entry ToPA | single range; 2 address ranges.
tv_expect "pt-model: CPUID.(7,0):EBX[25] = 1, leaf 14H = CR3 filter, IP filter, ToPA (multi-entry), single range, 2 ranges" "$log" \
	'^PTTEST cpuid pt 1 max 0x0000000000000001 ebx 0x0000000000000005 ecx 0x0000000000000007 ranges 2'

# MSR accesses: NAME and the #GPs it must raise (SDM "Enabling and
# Configuration MSRs": reserved bits and encodings, locked while TraceEn).
gp_fail=""
ngp=0
while read -r name want; do
	got=$(sed -n "s/^PTTEST gp $name \([0-9]*\)$/\1/p" <<<"$out")
	ngp=$((ngp + 1))
	[ "$got" = "$want" ] || gp_fail="$gp_fail $name(want $want got ${got:-none})"
done <<'EOF'
ctl-valid 0
ctl-cycen 1
ctl-mtcen 1
ctl-psbfreq 1
ctl-addr0-cfg3 1
ctl-addr2-cfg1 1
ctl-branchen0 1
status-reserved 1
cr3-match-low 1
base-low 1
addr0-noncanonical 1
addr0-valid 0
global-status-write 1
on-ctl-same 0
on-ctl-change 1
on-base 1
on-mask 1
on-status 1
on-cr3-match 1
on-addr0 1
on-read-ctl 0
off-ctl 0
off-base 0
EOF
if [ -z "$gp_fail" ]; then
	tv_ok "pt-model: MSRs: $ngp accesses, #GP exactly where the SDM says"
else
	tv_fail "pt-model: MSRs: $ngp accesses, #GP exactly where the SDM says" "$gp_fail"
fi

declare -A symtab
while read -r value _ name; do symtab[$name]=$((0x$value)); done < <(nm "$TV_BUILD/pttest.so")
at=$(sed -n 's/^PTTEST base ptt_run \(0x[0-9a-f]*\)$/\1/p' <<<"$out" | head -1)
if [ -z "$at" ] || [ -z "${symtab[ptt_run]:-}" ]; then
	tv_fail "pt-model: program reported its load address" "no 'PTTEST base' line"
	tv_keep_log "$log"
	exit 0
fi
base=$((at - symtab[ptt_run]))
addr() { printf '0x%016x' $((base + symtab[$1])); }
cr3=$(sed -n 's/^PTTEST cr3 \(0x[0-9a-f]*\)$/\1/p' <<<"$out")
alias=$(sed -n 's/^PTTEST alias \(0x[0-9a-f]*\)$/\1/p' <<<"$out")
alias_base=$(printf '0x%x' $((base + ${alias:-0})))

# runfield NAME FIELD: a field of the run's "PTTEST run" line
runfield() { awk -v n="$1" -v f="$2" '$1 == "PTTEST" && $2 == "run" && $3 == n { for (i = 4; i < NF; i++) if ($i == f) print $(i + 1) }' <<<"$out"; }
# extract NAME: the run's bytes to $work/NAME.bin; the packets to NAME.pkt
extract() {
	awk -v n="$1" '$1 == "PTTEST" && $2 == "data" && $3 == n { print $5 }' <<<"$out" | xxd -r -p >"$work/$1.bin"
	"$flowbin" packets "$work/$1.bin" >"$work/$1.pkt" 2>&1
}
count() { grep -c "$2" "$work/$1.pkt"; }
tntbits() { awk '$2 ~ /^tnt/ { split($3, a, "="); s += a[2] } END { print s + 0 }' "$work/$1.pkt"; }

for r in sr noretc topa topabad cr3hit cr3miss user ipf tstop; do
	extract $r
	want=$(runfield $r bytes)
	got=$(stat -c %s "$work/$r.bin")
	if [ -z "$want" ] || [ "$got" != "$want" ]; then
		tv_fail "pt-model: $r: output dumped whole" "${want:-no run line}, $got bytes read back"
	fi
done

# Bochs's trace: "(0).[icount] [0xADDR] sel:off (...): insn ; bytes", windows
# split at the magic breakpoints (xchg bx, bx ends a window).
awk '/^\(0\)\.\[[0-9]+\] \[0x/ { a = $3; sub(/^[0-9a-f]*:/, "0x", a); d = $0; sub(/^.*\): /, "", d); sub(/ *;.*$/, "", d);
	print w, a, d; if (d ~ /^xchg bx, bx/) w++ }' w=1 "$log.stdout" >"$work/bochs-trace.all"
on_next=$(printf '0x%016x' $((base + symtab[ptt_on] + 2)))	# wrmsr is 2 bytes
off_at=$(addr ptt_off)
# window W's instructions strictly between the enabling and the disabling WRMSR
window() {
	awk -v w="$1" -v on="$on_next" -v off="$off_at" '$1 == w {
		h = $2; sub(/^0x/, "", h); a = "0x" substr("0000000000000000", 1, 16 - length(h)) h; if (a == on) go = 1; if (a == off) go = 0; if (go) print a, $0 }' \
		"$work/bochs-trace.all" | cut -d' ' -f1,4-
}
window 1 >"$work/trace1.insn"
window 2 >"$work/trace8.insn"	# the ipf run's window (the second traced one)
# A faulting instruction does not complete: PT binds the #UD's FUP to it and
# the decoder never reports it as executed; Bochs's trace shows it once.
ud2_at=$(addr ptt_ud2)
awk -v u="$ud2_at" '$1 != u { print $1 }' "$work/trace1.insn" >"$work/trace1.ips"
ntr=$(wc -l <"$work/trace1.ips")

# flow NAME: libipt's instruction flow of the run (IPs only)
flow() {
	"$flowbin" flow "$work/$1.bin" "$TV_BUILD/pttest.so" "$base" "$alias_base" >"$work/$1.flow" 2>&1
	echo $? >"$work/$1.flow.rc"
	grep '^0x' "$work/$1.flow" >"$work/$1.ips"
}
check_flow() {
	local name=$1 exp=$2 what=$3 n
	flow "$name"
	n=$(wc -l <"$exp")
	if [ "$n" -gt 0 ] && [ "$(cat "$work/$name.flow.rc")" = 0 ] && diff -u "$exp" "$work/$name.ips" >"$work/$name.flow.diff"; then
		tv_ok "pt-model: $name: libipt flow = Bochs's instruction trace ($n instructions, 0 mismatches, no decode error)"
	else
		tv_fail "pt-model: $name: libipt flow = Bochs's instruction trace" \
			"$n traced, $(wc -l <"$work/$name.ips") decoded, rc $(cat "$work/$name.flow.rc"); $(grep -m1 '^# error' "$work/$name.flow"); first difference: $(grep -m2 '^[-+][^-+]' "$work/$name.flow.diff" | tr '\n' ' ')"
	fi
}
if [ "$rc" = 124 ] || [ "$rc" = 137 ] || [ "$ntr" -lt 100 ]; then
	tv_fail "pt-model: Bochs's instruction trace of run 1" "$ntr instructions traced (rc $rc)"
fi
check_flow sr "$work/trace1.ips" "single range, RET compression"
check_flow noretc "$work/trace1.ips" "single range, DisRETC"
ev_sr=$(grep -c "^# event async-disabled at $off_at" "$work/sr.flow")
ev_en=$(grep -c "^# event enabled $on_next" "$work/sr.flow")
ev_ud=$(grep -c "^# event async-branch $ud2_at -> $(addr ptt_ud)" "$work/sr.flow")
ev_pg=$(grep -c "^# event paging cr3 $(printf '0x%016x' $((cr3 & ~0xfff)))" "$work/sr.flow")
if [ "$ev_sr" = 1 ] && [ "$ev_en" = 1 ] && [ "$ev_ud" = 1 ] && [ "$ev_pg" -ge 1 ]; then
	tv_ok "pt-model: sr: libipt events: enabled at the WRMSR's next IP, #UD as async branch UD2 -> handler, paging (PIP) with CR3, async-disabled at the disabling WRMSR"
else
	tv_fail "pt-model: sr: libipt events" "enabled $ev_en, #UD $ev_ud, paging $ev_pg, async-disabled $ev_sr: $(grep -m6 '^# event' "$work/sr.flow" | tr '\n' ' ')"
fi

# Branch counts from Bochs's trace (intel syntax: jcc/loop, ret, indirect
# jmp/call through a register), against the packets.
ncond=$(awk '$2 ~ /^(j[a-z]+|loop[a-z]*|jrcxz)$/ && $2 != "jmp"' "$work/trace1.insn" | wc -l)
nret=$(awk '$2 ~ /^ret/' "$work/trace1.insn" | wc -l)
nind=$(awk '($2 == "jmp" || $2 == "call") && $3 !~ /^\.|^0x/' "$work/trace1.insn" | wc -l)
# events (the #UD: FUP + TIP) and far returns (IRETQ: TIP)
nev=$(awk -v u="$ud2_at" '$1 == u' "$work/trace1.insn" | wc -l)
niret=$(awk '$2 ~ /^iret/' "$work/trace1.insn" | wc -l)
ncr3=$(awk '$2 == "mov" && $3 ~ /^cr3,/' "$work/trace1.insn" | wc -l)
nfar=$((nev + niret))
nuncomp=$(awk -v a="$(addr ptt_odd_ret)" -v b="$(addr ptt_nest_ret)" '$1 == a || $1 == b' "$work/trace1.insn" | wc -l)
pkt_ok() {	# NAME TNTBITS TIPS WHAT
	local name=$1 wtnt=$2 wtip=$3 what=$4 gtnt gtip
	gtnt=$(tntbits "$name")
	gtip=$(count "$name" ' tip ipc')
	if [ "$gtnt" = "$wtnt" ] && [ "$gtip" = "$wtip" ] && [ "$ncond" -gt 0 ] && [ "$nret" -gt 0 ]; then
		tv_ok "pt-model: $name: $what: $gtnt TNT bits, $gtip TIPs"
	else
		tv_fail "pt-model: $name: $what" "TNT bits $gtnt (want $wtnt), TIPs $gtip (want $wtip)"
	fi
}
pkt_ok noretc "$ncond" $((nind + nret + nfar)) "DisRETC: a TNT bit per Jcc/LOOP ($ncond), a TIP per indirect jmp/call ($nind), RET ($nret), event ($nev) and IRET ($niret)"
# With RET compression every RET is one TNT bit or one TIP; the ones that do
# not return to their call site (ptt_odd's) and the ones after such a RET
# (ptt_nest's: the model empties its stack on an uncompressed RET) are
# TIPs; a PSB+ empties the stack too, so each PSB+ may cost one more TIP.
gtnt=$(tntbits sr)
gtip=$(count sr ' tip ipc')
npsb_sr=$(count sr ' psb$')
extra=$((gtip - nind - nuncomp - nfar))
if [ "$ncond" -gt 0 ] && [ $((gtnt + gtip)) = $((ncond + nret + nind + nfar)) ] && [ "$extra" -ge 0 ] && [ "$extra" -lt "$npsb_sr" ]; then
	tv_ok "pt-model: sr: RET compression: $gtnt TNT bits + $gtip TIPs for $ncond Jcc/LOOP, $nret RETs ($nuncomp never compressible), $nind indirect, $nfar far; $extra RETs uncompressed across the $((npsb_sr - 1)) later PSB+"
else
	tv_fail "pt-model: sr: RET compression" "TNT bits $gtnt + TIPs $gtip, want $((ncond + nret + nind + nfar)); $extra uncompressed beyond the $nuncomp expected, $npsb_sr PSBs"
fi

# Packet-level facts of sr: PSB first, PSB+ per 2 KiB, each later PSB+ with a
# FUP, TSC (TSCEn), CBR, MODE.Exec 64-bit, PIP = CR3; TIP.PGE first IP
# packet, FUP + TIP.PGD (no IP) last; short and long TNT; 16- and 32-bit IP
# compression; nothing libipt cannot decode.
srb=$(stat -c %s "$work/sr.bin")
npsb=$(count sr ' psb$')
npsbe=$(count sr ' psbend$')
psb_fups=$(awk '$2 == "psb" { inpsb = 1; n++ } $2 == "psbend" { inpsb = 0 } inpsb && $2 == "fup" { f++ } END { print f + 0 }' "$work/sr.pkt")
first_ip=$(awk '$2 ~ /^(tip|fup|tip.pge|tip.pgd)$/ { print $2, $3, $4; exit }' "$work/sr.pkt")
last2=$(grep -v '^#' "$work/sr.pkt" | tail -2 | cut -d' ' -f2,3 | tr '\n' ' ')
pip_cr3=$(awk '$2 == "pip" { print $3; exit }' "$work/sr.pkt")
facts=""
grep -q '^# first-sync 0x0$' "$work/sr.pkt" || facts="$facts psb-not-first"
[ "$npsb" -ge $((srb / 2048)) ] && [ "$npsb" -le $((srb / 2048 + 1)) ] && [ "$npsb" = "$npsbe" ] || facts="$facts psb-count($npsb/$npsbe for $srb bytes)"
[ "$psb_fups" = $((npsb - 1)) ] || facts="$facts psb-fups($psb_fups)"
# FUPs outside PSB+: one per event and the disabling WRMSR's; a PIP per
# PSB+ and per MOV to CR3
[ "$(count sr ' fup ')" = $((psb_fups + nev + 1)) ] || facts="$facts fups($(count sr ' fup '))"
[ "$nev" = 1 ] && [ "$ncr3" = 1 ] && [ "$(count sr ' pip ')" = $((npsb + ncr3)) ] || facts="$facts pips($(count sr ' pip '), $nev events, $ncr3 cr3)"
[ "$(count sr ' tsc ')" = "$npsb" ] || facts="$facts tsc"
[ "$(count sr ' cbr ratio=32')" = "$npsb" ] || facts="$facts cbr"
[ "$(count sr ' mode leaf=0 csl=1 csd=0')" -ge "$npsb" ] || facts="$facts mode"
[ "$pip_cr3" = "cr3=$(printf '0x%x' $((cr3 & ~0xfff)))" ] || facts="$facts pip($pip_cr3 vs $cr3)"
[ "$first_ip" = "tip.pge ipc=2 ip=$(printf '0x%x' $((on_next)))" ] || facts="$facts first-ip($first_ip)"
[ "$last2" = "fup ipc=1 tip.pgd ipc=0 " ] || facts="$facts last($last2)"
# short TNTs, and long ones carrying more than 32 bits (path 3's 44)
[ "$(count sr 'tnt.8')" -gt 0 ] && [ "$(awk '$2 == "tnt.64" { split($3, a, "="); if (a[2] > 32) n++ } END { print n + 0 }' "$work/sr.pkt")" -gt 0 ] ||
	facts="$facts tnt-kinds"
# 16-bit updates (near code), 32-bit (the TIP.PGE after the PSB, the one
# FUP after each later PSB), sign-extended 48 (payload bits 47:0) into
# ptt_far's upper-half alias and for the first TIP back in the low half)
[ "$(count sr 'ipc=1')" -gt 0 ] && [ "$(count sr 'ipc=2')" -gt 0 ] && [ "$(count sr ' tip ipc=3 ip=0x8000')" = 1 ] &&
	[ "$(count sr ' tip ipc=3 ')" = 2 ] && [ "$(count noretc ' tip ipc=3 ')" = 2 ] && [ "${alias:-0}" = 0xffff800000000000 ] || facts="$facts ipc($alias)"
grep -q '^# end packets [0-9]* errors 0$' "$work/sr.pkt" || facts="$facts decode-errors"
[ "$(count noretc ' tsc ')" = 0 ] || facts="$facts tsc-without-TSCEn"
if [ -z "$facts" ]; then
	tv_ok "pt-model: sr packets: PSB first, $npsb PSB+ in $srb bytes (FUP, TSC, CBR, MODE.Exec, PIP), TIP.PGE at start, FUP + TIP for the #UD, PIP for MOV CR3, FUP + TIP.PGD at end, short and long TNT, 16/32/sext-48-bit IP compression, no decode error"
else
	tv_fail "pt-model: sr packets" "$facts"
fi

# ToPA: INT region 0 then STOP region 1, both 4 KiB: 8192 bytes, one PMI
# (LVT perfmon masked by it), Trace_ToPA_PMI set then cleared, Stopped,
# MASK_PTRS at entry 1 offset 0x1000; the bytes = noretc's first 8192.
tstat=$(runfield topa status)
tmask=$(runfield topa mask)
topa=""
[ $(( tstat & 0x30 )) = $((0x20)) ] || topa="$topa status($tstat)"
[ "$tmask" = 0x00001000000000ff ] || topa="$topa mask($tmask)"
[ "$(runfield topa bytes)" = 8192 ] || topa="$topa bytes"
[ "$(runfield topa pmi)" = 1 ] || topa="$topa pmi($(runfield topa pmi))"
[ "$(runfield topa lvt)" = 0x00000000000100ee ] || topa="$topa lvt($(runfield topa lvt))"
[ "$(runfield topa gstat)" = 0x0080000000000000 ] || topa="$topa gstat($(runfield topa gstat))"
grep -q '^PTTEST gstat-after-clear topa 0x0000000000000000$' <<<"$out" || topa="$topa gstat-clear"
[ "$(stat -c %s "$work/noretc.bin")" -gt 8192 ] && cmp -s "$work/topa.bin" <(head -c 8192 "$work/noretc.bin") || topa="$topa bytes-differ"
if [ -z "$topa" ]; then
	tv_ok "pt-model: ToPA INT + STOP: 8192 bytes = the single-range stream's first 8192, one PMI, Trace_ToPA_PMI set and cleared, Stopped, pointers on the full STOP region"
else
	tv_fail "pt-model: ToPA INT + STOP" "$topa"
fi
bstat=$(runfield topabad status)
if [ -n "$bstat" ] && [ $(( bstat & 0x30 )) = $((0x10)) ] && [ "$(runfield topabad bytes)" = 0 ]; then
	tv_ok "pt-model: ToPA entry with a reserved bit: RTIT_STATUS.Error, nothing written"
else
	tv_fail "pt-model: ToPA entry with a reserved bit" "status ${bstat:-none}, $(runfield topabad bytes) bytes"
fi

# Filters.
nf() { echo "$(count "$1" 'tip.pge') $(count "$1" ' tip ipc') $(count "$1" 'tnt')"; }
if [ "$(nf cr3hit | cut -d' ' -f1)" = 1 ] && [ "$(nf cr3hit | cut -d' ' -f3)" -gt 0 ] &&
	[ "$(nf cr3miss)" = "0 0 0" ] && [ "$(count cr3miss ' psb$')" = 1 ]; then
	tv_ok "pt-model: CR3 filter: CR3_MATCH = CR3 traced, another CR3 only PSB+"
else
	tv_fail "pt-model: CR3 filter" "hit: $(nf cr3hit), miss: $(nf cr3miss)"
fi
if [ "$(nf user)" = "0 0 0" ] && [ "$(count user ' psb$')" = 1 ] && [ "$(count user ' pip ')" = 0 ]; then
	tv_ok "pt-model: CPL filter: User only, code at CPL 0: only PSB+ (no PIP without OS)"
else
	tv_fail "pt-model: CPL filter" "user: $(nf user), $(count user ' pip ') PIPs"
fi
lo=$(addr ptt_leaf) hi=$(addr ptt_leaf_end)
awk -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 < hi { print $1 }' "$work/trace8.insn" >"$work/trace8.ips"
check_flow ipf "$work/trace8.ips" "IP filter"
nentry=$(awk -v a="$(addr ptt_leaf)" '$1 == a' "$work/trace8.ips" | wc -l)
if [ "$nentry" -gt 0 ] && [ "$(count ipf 'tip.pge')" = "$nentry" ] && [ "$(count ipf 'tip.pgd')" = "$nentry" ]; then
	tv_ok "pt-model: IP filter: a TIP.PGE and a TIP.PGD for each of the $nentry entries into the range"
else
	tv_fail "pt-model: IP filter" "$nentry entries, $(count ipf 'tip.pge') TIP.PGE, $(count ipf 'tip.pgd') TIP.PGD"
fi
# TraceStop: ADDR0_CFG = 2 around ptt_leaf; the first call into it (the
# direct call of the loop's first iteration, path 0 for 8 iterations) ends
# the trace: TIP.PGD with the call's target, TraceStop, Stopped; libipt's
# flow ends with that call, its disabled event at ptt_leaf.
flow tstop
tlast2=$(grep -v '^#' "$work/tstop.pkt" | tail -2 | cut -d' ' -f2,3 | tr '\n' ' ')
tcall=$(awk '$2 == "call" && $3 ~ /^\./ { print $1; exit }' "$work/trace1.insn")
tstat=$(runfield tstop status)
if [ -n "$tstat" ] && [ $(( tstat & 0x30 )) = $((0x20)) ] && [[ "$tlast2" =~ ^tip.pgd\ ipc=[1-6]\ stop\ $ ]] &&
	[ "$(cat "$work/tstop.flow.rc")" = 0 ] && grep -q '^# event stop' "$work/tstop.flow" &&
	grep -q "^# event disabled $(addr ptt_leaf)" "$work/tstop.flow" &&
	[ "$(tail -n1 "$work/tstop.ips")" = "$tcall" ]; then
	tv_ok "pt-model: TraceStop: the call into the ADDR0_CFG = 2 range ends the trace (TIP.PGD(target), TraceStop, Stopped; libipt disabled + stop events, flow ends at the call)"
else
	tv_fail "pt-model: TraceStop" "status ${tstat:-none}, last packets '$tlast2', flow rc $(cat "$work/tstop.flow.rc"), last IP $(tail -n1 "$work/tstop.ips") (want $tcall)"
fi
# VMX (patch 0004): IA32_VMX_MISC[14] = 1, so VMXON keeps TraceEn and
# setting it in VMX root does not #GP; entry control 18 / exit control 25
# allowed; GUEST_IA32_RTIT_CTL (0x2814) reads back, 0x2815 its high half.
if grep -qx 'PTTEST vmx misc14 1 entry-load-rtit 1 exit-clear-rtit 1 vmxon 0 ctl-after-vmxon 0x0000000000002005 ctl-in-root 0x0000000000002005 field 0x0000000200002005 field-hi 0x0000000000000002' <<<"$out" &&
	grep -qx 'PTTEST gp vmx-root-traceen 0' <<<"$out" && grep -qx 'PTTEST gp after-vmxoff-traceen 0' <<<"$out"; then
	tv_ok "pt-model: VMX_MISC[14] = 1: VMXON keeps TraceEn, WRMSR TraceEn in VMX root allowed; load/clear IA32_RTIT_CTL allowed-1; GUEST_IA32_RTIT_CTL VMWRITE/VMREAD"
else
	tv_fail "pt-model: VMX_MISC[14] = 1" "$(grep -E '^PTTEST (vmx |gp vmx|gp after)' <<<"$out" | tr '\n' ' ')"
fi
# vmfield NAME FIELD: a field of the run's "PTTEST vmxrun" line
vmfield() { awk -v n="$1" -v f="$2" '$1 == "PTTEST" && $2 == "vmxrun" && $3 == n { for (i = 4; i < NF; i++) if ($i == f) print $(i + 1) }' <<<"$out"; }
# pktseq NAME: the run's packets, one word each (pip with its NR bit)
pktseq() { awk '$1 ~ /^0x/ { w = $2; if (w == "pip") w = w "/" $4; printf "%s ", w }' "$work/$1.pkt"; }
# the guest's instructions (CALL, RET, XOR, JZ) up to its VMCALL
# (guest_vmx_guest, tests/payload/guest_helpers.S)
guest_ips=$(printf '%s %s %s %s' "$(addr guest_vmx_guest)" "$(addr guest_vmx_guest_leaf)" \
	"$(addr guest_vmx_guest_ret)" "$(addr guest_vmx_guest_jz)")
# vm_guest_flow NAME: libipt's flow is the guest's 4 instructions, enabled
# at guest_vmx_guest, async-disabled at its VMCALL (the FUP of the VM exit)
vm_guest_flow() {
	flow "$1"
	[ "$(cat "$work/$1.flow.rc")" = 0 ] && [ "$(tr '\n' ' ' <"$work/$1.ips")" = "$guest_ips " ] &&
		grep -q "^# event enabled $(addr guest_vmx_guest)$" "$work/$1.flow" &&
		[ "$(grep '^# event async-disabled' "$work/$1.flow" | tail -1)" = "# event async-disabled at $(addr guest_vmx_guest_exit)" ]
}
for r in vmentry vmroot vmbad vmnoctl; do
	extract $r
	[ "$(stat -c %s "$work/$r.bin")" = "$(vmfield $r bytes)" ] || tv_fail "pt-model: $r: output dumped whole" "$(vmfield $r bytes) bytes"
done
# Entry with "load IA32_RTIT_CTL" = TraceEn|OS|BranchEn (host not tracing):
# the enabling packets of a WRMSR (PSB+, its PIP NR = 1 in the guest) and
# the entry's PIP NR = 1, TIP.PGE at the guest RIP; the guest's 2 TNT bits;
# exit (VMCALL) with "clear IA32_RTIT_CTL": FUP at the VMCALL + TIP.PGD, the
# field saved, IA32_RTIT_CTL 0 in VMX root.
seq=$(pktseq vmentry)
if [ "$(vmfield vmentry reason)" = 0x0000000000000012 ] && [ "$(vmfield vmentry ctl-after)" = 0x0000000000000000 ] &&
	[ "$(vmfield vmentry field)" = 0x0000000000002005 ] &&
	[ "$seq" = "psb cbr mode pip/nr=1 psbend pip/nr=1 tip.pge tnt.8 fup tip.pgd " ] && vm_guest_flow vmentry; then
	tv_ok "pt-model: VM entry loads IA32_RTIT_CTL (PSB+, PIP NR=1, TIP.PGE at the guest RIP), VM exit saves and clears it (FUP at the VMCALL, TIP.PGD); libipt flow = the guest's 4 instructions"
else
	tv_fail "pt-model: VM entry/exit with load/clear IA32_RTIT_CTL" "$(grep -m1 'vmxrun vmentry' <<<"$out"); packets: $seq; flow: $(grep -v '^# event type' "$work/vmentry.flow" | tr '\n' ' ')"
fi
# The host traced VMX root up to the VMLAUNCH: its trace ends there (FUP at
# the VMLAUNCH + TIP.PGD), then the guest's starts (no PSB: PacketByteCnt
# is not 0; CBR, PIP NR=1, TIP.PGE).
seq=$(pktseq vmroot)
if [ "$(vmfield vmroot reason)" = 0x0000000000000012 ] && [ "$(vmfield vmroot ctl-after)" = 0x0000000000000000 ] &&
	[ "$seq" = "psb cbr mode pip/nr=0 psbend tip.pge fup tip.pgd cbr pip/nr=1 tip.pge tnt.8 fup tip.pgd " ] &&
	vm_guest_flow vmroot && grep -q "^# event enabled $(addr guest_vmx_wrmsr_vmlaunch)$" "$work/vmroot.flow" &&
	grep -q "^# event async-disabled at $(addr guest_vmx_wrmsr_vmlaunch)$" "$work/vmroot.flow"; then
	tv_ok "pt-model: VM entry while the host traces root: FUP at the VMLAUNCH + TIP.PGD first, then the guest's trace"
else
	tv_fail "pt-model: VM entry while the host traces root" "$(grep -m1 'vmxrun vmroot' <<<"$out"); packets: $seq; flow: $(grep -v '^# event type' "$work/vmroot.flow" | tr '\n' ' ')"
fi
# A reserved bit (CYCEn) in GUEST_IA32_RTIT_CTL: VM entry fails for invalid
# guest state (exit reason 33 | bit 31), nothing written; without the two
# controls an entry/exit leaves IA32_RTIT_CTL, the field and the output alone.
if [ "$(vmfield vmbad reason)" = 0x0000000080000021 ] && [ "$(vmfield vmbad bytes)" = 0 ] &&
	[ "$(vmfield vmbad ctl-after)" = 0x0000000000000000 ] &&
	[ "$(vmfield vmnoctl reason)" = 0x0000000000000012 ] && [ "$(vmfield vmnoctl bytes)" = 0 ] &&
	[ "$(vmfield vmnoctl ctl-after)" = 0x0000000000000000 ] && [ "$(vmfield vmnoctl field)" = 0x0000000000002005 ]; then
	tv_ok "pt-model: GUEST_IA32_RTIT_CTL with a reserved bit: VM entry fails (0x80000021); controls 0: nothing loaded, traced or saved"
else
	tv_fail "pt-model: VM entry check / controls 0" "$(grep -E 'vmxrun vm(bad|noctl)' <<<"$out" | tr '\n' ' ')"
fi
tv_keep_log "$log"

# Stock behaviour: the same binary without the option: no PT in CPUID, no runs.
slog=$TV_LOGS/bochs-pt-model-stock.serial.log
TV_BOCHS_BIN=$model tv_bochs "$slog" 120 "$work/disk.img" 1 >/dev/null
sout=$(tr -d '\r' <"$slog")
if grep -q '^PTTEST done' <<<"$sout" && ! grep -q '^PTTEST run' <<<"$sout" &&
	grep -q '^PTTEST cpuid pt 0 max 0x0000000000000000 ebx 0x0000000000000000 ecx 0x0000000000000000 ranges 0' <<<"$sout"; then
	tv_ok "pt-model: without pt=1: stock (CPUID.(7,0):EBX[25] = 0, leaf 14H all 0)"
else
	tv_fail "pt-model: without pt=1: stock" "$(grep -m1 cpuid <<<"$sout")"
	TV_FAILED=1 tv_keep_log "$slog"
fi
