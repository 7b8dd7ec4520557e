#!/usr/bin/env bash
# bochs/linux-window-pt.sh - the Linux boot window of bochs/linux-window.sh
# traced with Intel PT on the Bochs trace-hardware model (`cpu: pt=1`,
# docs/BOCHS-MODEL.md "Intel PT"), decoded with libipt over vmlinux and
# checked against objdump and against the MTF window.
#
# linuxload starts Debian's kernel through its EFI stub with nokaslr; it
# enters startup_64 at guest-physical 0x1600000 in this bench
# (TV_LINUX_WINDOW_ENTRY overrides), where tracevisor's address trigger
# opens the window (source = pt, serial export).  PT ignores
# trace_stop_after (the hypervisor does not decode PT), so the window runs
# until the CPU's 1 MiB PT stream ring is full ("stopped (full)") and
# Linux boots on, untraced, to /init and power-off.  Then, with tools
# independent of tracevisor's own decoder:
#   - `tracevisor from-serial` rebuilds the .tvt, nothing missing;
#   - libipt (`tracevisor pt-decode`) decodes CPU 0's stream over vmlinux
#     mapped twice, at its link address and at the physical load offset
#     (ENTRY - the ELF entry: startup_64 runs identity-mapped until the
#     jump to the kernel mapping), with no decode error; the first
#     instruction is startup_64 at ENTRY;
#   - every decoded instruction address is an instruction start in
#     objdump's linear disassembly of the vmlinux segments (physical
#     addresses mapped to link addresses as linux-window.sh does);
#   - the first N taken transfers (TV_LINUX_WINDOW_PT_CMP, default 590)
#     equal the N branches of the MTF window (linux-window.sh's
#     branches.txt, from a run with at least N records: its kept output
#     when it is newer than tracevisor.efi, else linux-window.sh is run
#     here first), from, to and kind (direct and indirect alike);
#   - every loss counted and nothing else lost: the stop line's counts
#     (PT lost = ToPA stops + bytes refused), the last PT_SYNC, `tracevisor
#     info`, and `tracevisor pt`'s cuts are exactly the PT_SYNC losses.
#     With the drain tick (pt_drain_us, default 1 ms: an exit at least that
#     often while the window is open) the ToPA regions never fill: 0 stops,
#     and the only loss is the last drain the full ring refused, at the
#     stream's end; without it (pt_drain_us = 0) Linux, which rarely exits,
#     overran the 256 KiB of regions 267 KB in (4 stops in 1 MiB).
# With TV_LINUX_PT_PMI=1 (tests/bochs/linux-window-pt-pmi.sh) the same
# window runs with pmi = on and pt_drain_us = 0: no drain tick, the ToPA
# PMI (INT on the third of four regions, an NMI through the LVT that
# exits) is what drains; checked as well: 0 ToPA stops, PMIs taken as
# ours and none reflected to Linux.
# Prints the figures for docs/BENCHMARKS.md: PT bytes, taken branches,
# PT bytes per taken branch, the window's emulated time (TSC of its START
# and STOP records at 100 MHz) and the host time of the whole run.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
pmi=${TV_LINUX_PT_PMI:-}
T=linux-window-pt${pmi:+-pmi}
NCMP=${TV_LINUX_WINDOW_PT_CMP:-590}
work=$TV_BUILD/test/bochs-$T
mkdir -p "$work"

tv_model_bochs "$T" || exit 0
model=$TV_MODEL
if ! grep -q 'Model a subset of Intel Processor Trace' "$model"; then
	tv_skip "$T" "$model has no cpu: pt option (patch 0003 not applied)"
	exit 0
fi
tv_linux_fixture "$T" || exit 0

entry=${TV_LINUX_WINDOW_ENTRY:-0x1600000}
log=$TV_LOGS/bochs-$T.serial.log
# code_snapshots off (TV_LINUX_WINDOW_PT_SNAP=on to try them): this window
# is checked against vmlinux and the MTF window, which have no snapshots;
# with them on (the default with pt) the 1 MiB ring also carries the
# snapshot records (15-20 records lost at the window's end), and each
# kernel page's first fetch is a VM exit inside the window.  The decoders
# dropped a direct call or jmp whose target's fetch exited (FUP + TIP.PGD
# at the target: the call 0x1600835 -> 0x1601b60 missing against MTF);
# fixed 2026-11-27 (tests/host/test_host_pt.c test_vm_exit_at_branch_target).
# The far return 0xffffffff81000158 -> 0xffffffff8307959c into
# x86_64_start_kernel, whose target's first fetch exits too (TIP, then FUP
# + TIP.PGD at the target), was dropped the same way; fixed for every
# transfer kind (test_event_at_indirect_and_ret_target): with them on the
# first 590 transfers now equal MTF's (checked on a kept capture,
# 2026-11-27); the ring losses above remain, so the default stays off.
printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = pt' \
	"trace_start = address:$entry" 'overflow = stop' "code_snapshots = ${TV_LINUX_WINDOW_PT_SNAP:-off}" >"$work/tracevisor.conf"
[ -z "$pmi" ] || printf '%s\n' 'pmi = on' 'pt_drain_us = 0' >>"$work/tracevisor.conf"
tv_linux_disk "$work"
if [ -n "${TV_LINUX_WINDOW_PT_REUSE:-}" ] && [ -s "$log" ]; then
	host_s="? (reused $log)" rc=reused
else
	t0=$(date +%s.%N)
	rc=$(TV_BOCHS_BIN=$model TV_BOCHS_EXTRA='cpu: pt=1' TV_BOCHS_MEGS=1024 \
		tv_bochs "$log" "${TV_LINUX_TIMEOUT:-900}" "$work/disk.img" 2)
	host_s=$(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
fi
rm -f "$work/disk.img"

tv_expect "$T: source is pt" "$log" '\[info\] trace: source pt'
tv_expect "$T: trigger armed at the kernel's entry $entry" "$log" \
	"trace: window opens when a CPU executes guest-physical $entry"
tv_expect "$T: linuxload started the kernel's EFI stub" "$log" 'linuxload: starting \\EFI\\linux\\vmlinuz through its EFI stub'
tv_expect "$T: window opened at the entry on cpu 0" "$log" "trace: cpu 0: window 1 started \(address\) at $entry"
stop_re="trace: cpu 0: window 1 stopped \(([a-z]+)\): ([0-9]+) PT bytes \(stream at ([0-9]+)\), ([0-9]+) drains, ([0-9]+) stops, ([0-9]+) errors, ([0-9]+) bad pointers, ([0-9]+) bytes refused, ([0-9]+) drain failures, PT lost ([0-9]+); ring lost ([0-9]+) records"
stop_line=$(tr -d '\r' <"$log" | grep -Em1 -- "$stop_re")
# why PT_BYTES STOPS ERRORS BADPTR REFUSED DRAINFAIL LOST RINGLOST
read -r s_why s_bytes s_stops s_errors s_badptr s_refused s_dfail < <(
	sed -E -n "s/.*$stop_re.*/\1 \2 \5 \6 \7 \8 \9/p" <<<"$stop_line")
# (sed counts \1..\9 only: PT lost and ring lost by awk)
read -r s_lost s_ringlost < <(awk '{ for (i = 1; i <= NF; i++) { if ($i == "lost" && $(i - 1) == "PT") l = $(i + 1); if ($i == "ring") r = $(i + 2) } sub(/;$/, "", l); print l, r }' <<<"$stop_line")
if [ "${s_why:-}" = full ] && [ "${s_bytes:-0}" = 1048576 ] && [ "$s_errors" = 0 ] && [ "$s_badptr" = 0 ] &&
	[ "$s_dfail" = 0 ] && [ "$s_ringlost" = 0 ] && [ "$s_lost" = $((s_stops + s_refused)) ]; then
	tv_ok "$T: window closed with the 1 MiB stream ring full, every loss counted (PT lost $s_lost = $s_stops ToPA stops + $s_refused bytes refused), no error"
else
	tv_fail "$T: window closed with the 1 MiB stream ring full, every loss counted, no error" "${stop_line:-no stop line}"
fi
if [ -n "$pmi" ]; then
	pmi_line=$(tr -d '\r' <"$log" | grep -m1 'trace: cpu 0: window 1 PMIs:')
	ours=$(sed -n 's/.*PMIs: \([0-9]*\) ours.*/\1/p' <<<"$pmi_line")
	if [ "${s_stops:-x}" = 0 ] && [ -n "$ours" ] && [ "$ours" -ge 1 ] &&
		grep -q ' 0 NMIs reflected to the guest' <<<"$pmi_line"; then
		tv_ok "$T: no drain tick, $ours ToPA PMIs drained the regions: 0 ToPA stops, no NMI reflected to Linux"
	else
		tv_fail "$T: no drain tick, ToPA PMIs drained the regions: 0 ToPA stops, no NMI reflected to Linux" \
			"stops ${s_stops:-?}; ${pmi_line:-no PMIs line}"
	fi
fi
tv_expect "$T: cpu 0: PT bytes exported over serial" "$log" \
	"trace: cpu 0: exported [1-9][0-9]* PT bytes over serial \\(stream offsets 0\\.\\."
tv_linux_booted "$T" "$log" "$rc"
tv_reject "$T: no tracevisor errors" "$log" '\[err\]'

tvt=$work/window.tvt
if ! "$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" 2>"$work/from-serial.err"; then
	tv_fail "$T: trace file from the serial export" "$(tail -n 1 "$work/from-serial.err")"
	tv_keep_log "$log"
	exit 0
fi
if grep -q ', 0 bad CRC, 0 malformed' "$work/from-serial.err" &&
	! grep -q 'warning:' "$work/from-serial.err" &&
	! grep 'missing:' "$work/from-serial.err" | grep -qv 'missing: 0 lines, 0 records'; then
	tv_ok "$T: trace file from the serial export, nothing bad or missing"
else
	tv_fail "$T: trace file from the serial export, nothing bad or missing" "$(tr '\n' ' ' <"$work/from-serial.err")"
fi
"$TV_BUILD/tracevisor" dump -q --no-summary --cpu 0 "$tvt" >"$work/dump.txt" 2>&1
# The gap-free prefix: up to the first PT_SYNC that counts PT lost (a
# ToPA STOP, the guest having written more than the 256 KiB of regions
# between two drains; or the drain the full ring refused, at the end).
gap=$(awk '$3 == "PT_SYNC" { for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } if (v["pt_lost"] != 0) { print v["pt_offset"]; exit } }' "$work/dump.txt")
last_lost=$(awk '$3 == "PT_SYNC" { for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "pt_lost") l = kv[2] } } END { print l + 0 }' "$work/dump.txt")
"$TV_BUILD/tracevisor" info "$tvt" >"$work/info.txt" 2>&1
if grep -qE "^cpu0: .*pt 1048576 bytes \(lost 0 in gaps, 0 before first chunk, $s_lost per PT_SYNC\)" "$work/info.txt" &&
	[ "$last_lost" = "$s_lost" ]; then
	tv_ok "$T: PT_SYNC records and tracevisor info agree with the stop line: 1048576 bytes, no byte gap, PT lost $s_lost"
else
	tv_fail "$T: PT_SYNC records and tracevisor info agree with the stop line" \
		"last PT_SYNC pt_lost $last_lost; $(grep '^cpu0:' "$work/info.txt")"
fi
if [ -n "$gap" ] || [ "$s_lost" = 0 ]; then
	gap=${gap:-1048576}
	tv_ok "$T: gap-free prefix: stream offsets 0..$gap"
else
	tv_fail "$T: gap-free prefix" "PT lost $s_lost but no PT_SYNC counts it"
	gap=0
fi
raw=$work/cpu0.pt
"$TV_BUILD/tracevisor" pt "$tvt" --cpu 0 -o "$raw" 2>"$raw.err"
head -c "$gap" "$raw" >"$work/prefix.pt"
# The raw stream is one run; the cuts tracevisor pt lists are exactly the
# PT_SYNC losses (a ToPA STOP, or bytes the full ring refused at its end).
cuts=$(grep -c '^gap' "$raw.err")
syncs_lost=$(awk '$3 == "PT_SYNC" { for (i = 4; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } if (v["pt_lost"] != prev) { n++; prev = v["pt_lost"] } } END { print n + 0 }' "$work/dump.txt")
if [ -s "$raw" ] && [ "$cuts" = "$syncs_lost" ] &&
	[ "$(stat -c %s "$raw")" = 1048576 ]; then
	tv_ok "$T: tracevisor pt: the raw stream's 1048576 bytes, its $cuts cut(s) exactly the PT_SYNC losses"
else
	tv_fail "$T: tracevisor pt: the raw stream's 1048576 bytes, its cuts exactly the PT_SYNC losses" \
		"$syncs_lost PT_SYNC losses; $(tr '\n' ' ' <"$raw.err")"
fi

# vmlinux twice: at its link address and at the physical load offset.
# @BASE places the module's lowest PT_LOAD address (vmlinux's per-CPU
# segment at 0) at BASE, so BASE - that address is the bias; for the
# physical copy the bias takes the segment holding the ELF entry to
# ENTRY (arithmetic modulo 2^64, as the decoder's).
read -r link_base phys_base elf_entry < <(tv_vmlinux_bases "$LINUX_VMLINUX" "$entry")
delta=$((entry - elf_entry))
decode() {
	"$TV_BUILD/tracevisor" pt-decode --raw "$1" --elf "$LINUX_VMLINUX@$link_base" \
		--elf "$LINUX_VMLINUX@$phys_base" --no-symbols "${@:2}"
}
# The prefix: taken transfers, and every instruction (only the count, the
# first and the distinct addresses are kept).
decode "$work/prefix.pt" --branches >"$work/pt-branches.txt" 2>"$work/pt-branches.err"
awk '!/^\[/ && $2 == "->" { print $1, $3, $4 }' "$work/pt-branches.txt" >"$work/pt-taken.txt"
decode "$work/prefix.pt" 2>"$work/pt-insns.err" |
	awk -v out="$work/pt-first.txt" '!/^\[/ && $1 ~ /^0x/ { if (!n++) print $1 >out; print $1 }' |
	sort -u >"$work/pt-ips.txt"
if grep -q '^\[error' "$work/pt-branches.txt" || [ ! -s "$work/pt-taken.txt" ]; then
	tv_fail "$T: libipt decodes the gap-free prefix with no decode error" \
		"$(grep -c '^\[error' "$work/pt-branches.txt") errors, first: $(grep -m1 '^\[error' "$work/pt-branches.txt"); $(tr '\n' ' ' <"$work/pt-branches.err")"
else
	tv_ok "$T: libipt decodes the gap-free prefix with no decode error ($(wc -l <"$work/pt-taken.txt") taken transfers)"
fi
first=$(cat "$work/pt-first.txt" 2>/dev/null)
if [ -n "$first" ] && [ $((first)) = $((entry)) ]; then
	tv_ok "$T: the first decoded instruction is startup_64 at $entry"
else
	tv_fail "$T: the first decoded instruction is startup_64 at $entry" "first: ${first:-none}"
fi

# objdump's linear disassembly of every executable segment, at its virtual
# address (as linux-window.sh), and each decoded address checked in it.
tv_vmlinux_insns "$LINUX_VMLINUX" "$work"
python3 - "$work/segments.txt" "$work/insns.txt" "$work/pt-ips.txt" "$delta" <<'PY' >"$work/check.txt"
import sys
delta = int(sys.argv[4])
segs = []
for line in open(sys.argv[1]):
    _, v, p, sz, _ = line.split()
    segs.append((int(v, 16), int(p, 16), int(sz, 16)))

def virt(x):
    """A decoded address as a vmlinux virtual address (None: outside)."""
    for v, p, sz in segs:
        if v <= x < v + sz:
            return x
        if p <= x - delta < p + sz:
            return x - delta - p + v
    return None

ips = [int(l, 16) for l in open(sys.argv[3]) if l.strip()]
want = set(filter(None, (virt(a) for a in ips)))
starts = set()
for line in open(sys.argv[2]):
    a = int(line.split()[0], 16)
    if a in want:
        starts.add(a)
bad = [a for a in ips if virt(a) is None or virt(a) not in starts]
print("addresses %d bad %d" % (len(ips), len(bad)))
for a in bad[:5]:
    print("no instruction start at %#x (vmlinux %s)" % (a, hex(virt(a)) if virt(a) is not None else "outside"))
PY
if grep -qE '^addresses [1-9][0-9]* bad 0$' "$work/check.txt"; then
	tv_ok "$T: every decoded instruction address is an instruction start in vmlinux (objdump; $(head -1 "$work/check.txt" | cut -d' ' -f2) distinct)"
else
	tv_fail "$T: every decoded instruction address is an instruction start in vmlinux (objdump)" "$(head -3 "$work/check.txt" | tr '\n' ' ')"
fi

# The first NCMP taken transfers against the MTF window's records.
mtf=$TV_BUILD/test/bochs-linux-window/branches.txt
if [ ! -s "$mtf" ] || [ "$mtf" -ot "$TV_BUILD/tracevisor.efi" ] || [ "$(wc -l <"$mtf")" -lt "$NCMP" ]; then
	TV_LINUX_WINDOW=$NCMP bash "$TV_ROOT/tests/bochs/linux-window.sh" >"$work/linux-window.out" 2>&1
	if grep -q '^not ok' "$work/linux-window.out"; then
		tv_fail "$T: MTF reference run (linux-window.sh)" "$(grep -m2 '^not ok' "$work/linux-window.out" | tr '\n' ' ')"
	else
		tv_ok "$T: MTF reference run (linux-window.sh: $(grep -c '^ok' "$work/linux-window.out") ok)"
	fi
fi
# Kinds as libipt's classes: direct and indirect alike, far-* as far.
norm() { awk -v n="$2" 'NR <= n { k = $3; sub(/-ind$/, "", k); sub(/^far.*/, "far", k); print $1, $2, k }' "$1"; }
norm "$mtf" "$NCMP" >"$work/cmp-mtf.txt" 2>/dev/null
norm "$work/pt-taken.txt" "$NCMP" >"$work/cmp-pt.txt"
if [ "$(wc -l <"$work/cmp-mtf.txt")" = "$NCMP" ] && diff -u "$work/cmp-mtf.txt" "$work/cmp-pt.txt" >"$work/cmp.diff"; then
	tv_ok "$T: the first $NCMP taken transfers equal the MTF window's $NCMP branches (from, to, kind)"
else
	tv_fail "$T: the first $NCMP taken transfers equal the MTF window's $NCMP branches (from, to, kind)" \
		"$(wc -l <"$work/cmp-mtf.txt") MTF, $(wc -l <"$work/cmp-pt.txt") PT; first difference: $(grep -m2 '^[-+][^-+]' "$work/cmp.diff" 2>/dev/null | tr '\n' ' ')"
fi

# The whole stream over the same image: the first decode error may come
# no earlier than the first gap (past it Linux runs code it patched at
# boot, which the vmlinux file does not hold: counted, not judged).
decode "$raw" --branches 2>"$work/all.err" | grep '^\[error' >"$work/all-errors.txt"
first_err=$(sed -n '1s/^\[error at offset \(0x[0-9a-f]*\),.*/\1/p' "$work/all-errors.txt")
if [ -z "$first_err" ] || [ $((first_err)) -ge "$gap" ]; then
	tv_ok "$T: whole stream: no decode error before the first gap at $gap ($(wc -l <"$work/all-errors.txt") after it)"
else
	tv_fail "$T: whole stream: no decode error before the first gap at $gap" "$(head -1 "$work/all-errors.txt")"
fi

# Figures (docs/BENCHMARKS.md): the prefix, bytes per taken transfer and
# its emulated time (START's TSC to the first gap's PT_SYNC, 100 MHz).
nbr=$(wc -l <"$work/pt-taken.txt")
ninsn=$(sed -n 's/.* \([0-9]*\) instructions.*/\1/p' "$work/pt-insns.err" | head -1)
tsc_of() { awk -v w="$1" -v off="$2" '$3 == w && (off == "" || index($0, "pt_offset=" off " ")) { for (i = 4; i <= NF; i++) if ($i ~ /^tsc=/) { sub(/^tsc=/, "", $i); print $i; exit } }' "$work/dump.txt"; }
t_start=$(tsc_of START "") t_gap=$(tsc_of PT_SYNC "$gap") t_stop=$(tsc_of STOP "")
echo "# $T: prefix $gap PT bytes, $nbr taken transfers, ${ninsn:-?} instructions," \
	"$(awk -v b="$gap" -v n="$nbr" 'BEGIN { if (n) printf "%.3f", b / n; else print "?" }') PT bytes per taken transfer," \
	"$(awk -v a="${t_start:-0}" -v b="${t_gap:-0}" 'BEGIN { printf "%.3f", (b - a) / 1e8 }') s emulated;" \
	"window: $s_bytes PT bytes kept, $s_stops ToPA stops, $s_refused bytes refused," \
	"$(awk -v a="${t_start:-0}" -v b="${t_stop:-0}" 'BEGIN { printf "%.3f", (b - a) / 1e8 }') s emulated," \
	"$(wc -l <"$work/all-errors.txt") decode errors past the first gap; Bochs run $host_s s host"
tv_keep_log "$log"
