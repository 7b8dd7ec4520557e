#!/usr/bin/env bash
# bochs/linux-window.sh - the Linux boot window from the kernel's entry,
# MTF-traced, checked against the kernel image with an independent decoder.
#
# linuxload (the bench's loader, docs/LINUX-FIXTURE.md) starts Debian's
# kernel through its EFI stub with nokaslr, which decompresses it and
# enters startup_64 at guest-physical 0x1600000 in this bench (Bochs, 1 GiB;
# TV_LINUX_WINDOW_ENTRY overrides).  tracevisor arms its address trigger
# there (trace_start = address:ENTRY) and records TV_LINUX_WINDOW branches
# (default 590: startup_64, verify_cpu, __startup_64's page-table fix-ups,
# the switch to the kernel mapping, up to the far return into
# x86_64_start_kernel; the branches after that start with clear_bss, whose
# `rep stos` alone costs ~18 million MTF steps), then the window closes
# (trace_stop_after) and Linux boots on, untraced, to /init
# and power-off.  The serial export is turned back into a trace file and
# every record is checked against objdump's linear disassembly of the
# vmlinux segments (not against tracevisor's own decoder):
#   - `from` and `to` are instruction starts in vmlinux (identity-mapped
#     physical addresses before the switch to the kernel mapping are
#     moved by the load offset, ENTRY - the ELF entry, then mapped through
#     the ELF program headers);
#   - the instruction at `from` is a branch of the recorded kind (jcc,
#     jmp, jmp-ind, call, call-ind, ret, far);
#   - between one record's `to` and the next record's `from` the code runs
#     straight: ascending addresses in one segment, and no unconditional
#     transfer (jmp, call, ret, far, iret) in between; a conditional jump
#     in between is one that was not taken.
# Plus: nothing lost or undecodable, no events, the window opened by the
# trigger at the entry and closed by the limit, and Linux still booted.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
N=${TV_LINUX_WINDOW:-590}
work=$TV_BUILD/test/bochs-linux-window
mkdir -p "$work"

if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "bochs-linux-window" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
tv_linux_fixture bochs-linux-window || exit 0

elf_entry=$(readelf -h "$LINUX_VMLINUX" | sed -n 's/.*Entry point address: *\(0x[0-9a-f]*\).*/\1/p')
entry=${TV_LINUX_WINDOW_ENTRY:-0x1600000}
log=$TV_LOGS/bochs-linux-window.serial.log
printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = mtf' \
	"trace_start = address:$entry" "trace_stop_after = $N" 'trace_buffer_kb = 64' \
	'overflow = stop' >"$work/tracevisor.conf"
tv_linux_disk "$work"
rc=$(TV_BOCHS_MEGS=1024 tv_bochs "$log" "${TV_LINUX_TIMEOUT:-900}" "$work/disk.img" 2)
rm -f "$work/disk.img"

tv_expect "linux-window: trigger armed at the kernel's entry $entry" "$log" \
	"trace: window opens when a CPU executes guest-physical $entry"
tv_expect "linux-window: linuxload started the kernel's EFI stub" "$log" 'linuxload: starting \\EFI\\linux\\vmlinuz through its EFI stub'
tv_expect "linux-window: window opened at the entry" "$log" "trace: cpu [01]: window 1 started \(address\) at $entry"
tv_expect "linux-window: window closed by the limit, $N branches, nothing lost or undecodable" "$log" \
	"trace: cpu [01]: window 1 stopped \(limit\): $N branches, 0 events, 0 filtered, 0 dropped, 0 undecodable, [0-9]+ steps; ring lost 0 records"
tv_linux_booted linux-window "$log" "$rc"
tv_reject "linux-window: no tracevisor errors" "$log" '\[err\]'

tvt=$work/window.tvt
if ! "$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" 2>"$work/from-serial.err"; then
	tv_fail "linux-window: trace file from the serial export" "$(tail -n 1 "$work/from-serial.err")"
	tv_keep_log "$log"
	exit 0
fi
tv_ok "linux-window: trace file from the serial export"
"$TV_BUILD/tracevisor" dump -q --no-summary "$tvt" >"$work/dump.txt" 2>&1
awk '$3 == "BRANCH" { print $4, $6, $7 }' "$work/dump.txt" >"$work/branches.txt"
if [ "$(wc -l <"$work/branches.txt")" = "$N" ]; then
	tv_ok "linux-window: $N branch records in the trace file"
else
	tv_fail "linux-window: $N branch records in the trace file" "$(wc -l <"$work/branches.txt") found"
fi

# objdump's linear disassembly of every executable segment, at its virtual
# address, one "ADDR MNEMONIC" line per instruction.
tv_vmlinux_insns "$LINUX_VMLINUX" "$work"

python3 - "$work/segments.txt" "$work/insns.txt" "$work/branches.txt" "$((entry - elf_entry))" <<'PY' >"$work/check.txt"
import bisect, sys
delta = int(sys.argv[4])
segs = []
for line in open(sys.argv[1]):
    _, v, p, sz, _ = line.split()
    segs.append((int(v, 16), int(p, 16), int(sz, 16)))

def virt(x):
    """A recorded address as a vmlinux virtual address (None: outside)."""
    for v, p, sz in segs:
        if v <= x < v + sz:
            return x
        if p <= x - delta < p + sz:
            return x - delta - p + v
    return None

def seg_of(x):
    for v, p, sz in segs:
        if v <= x < v + sz:
            return v
    return None

recs = []
for l in open(sys.argv[3]):
    frm, to, kind = l.split()
    recs.append((frm, to, kind, virt(int(frm, 16)), virt(int(to, 16))))
# Only the instructions the checks look at: each from and to, and the
# straight runs between one record's to and the next one's from.
want = []
prev = None
for _, _, _, f, t in recs:
    for a in (f, t):
        if a is not None:
            want.append((a, a))
    if prev is not None and f is not None and prev <= f and f - prev < (1 << 20):
        want.append((prev, f))
    prev = t
want.sort()
merged = []
for lo, hi in want:
    if merged and lo <= merged[-1][1] + 16:
        merged[-1][1] = max(merged[-1][1], hi)
    else:
        merged.append([lo, hi])
starts = [m[0] for m in merged]
mn = {}
for line in open(sys.argv[2]):
    a, m = line.split()
    a = int(a, 16)
    k = bisect.bisect_right(starts, a) - 1
    if k >= 0 and a <= merged[k][1]:
        mn[a] = m
order = sorted(mn)
index = {a: i for i, a in enumerate(order)}

kinds = {
    "jcc": lambda m: (m.startswith("j") and m not in ("jmp", "jmpq")) or m.startswith("loop"),
    "jmp": lambda m: m in ("jmp", "jmpq"),
    "jmp-ind": lambda m: m in ("jmp", "jmpq"),
    "call": lambda m: m in ("call", "callq"),
    "call-ind": lambda m: m in ("call", "callq"),
    "ret": lambda m: m in ("ret", "retq"),
    "far": lambda m: m in ("lret", "lretq", "ljmp", "lcall", "ljmpq", "lcallq"),
}
uncond = ("jmp", "jmpq", "call", "callq", "ret", "retq", "lret", "lretq", "ljmp", "lcall",
          "iret", "iretq", "sysret", "sysretq", "ud2")
bad = {"from": 0, "to": 0, "kind": 0, "gap": 0}
first_bad = []
prev_to = None
for n, (frm, to, kind, f, t) in enumerate(recs):
    if f is None or f not in mn:
        bad["from"] += 1
        first_bad.append("record %d: from %s is no instruction start" % (n, frm))
        prev_to = t if t in mn else None
        continue
    if t is None or t not in mn:
        bad["to"] += 1
        first_bad.append("record %d: to %s is no instruction start" % (n, to))
    if kind not in kinds or not kinds[kind](mn[f]):
        bad["kind"] += 1
        first_bad.append("record %d: %s at %s is not a %s" % (n, mn[f], frm, kind))
    if prev_to is not None:
        if seg_of(prev_to) != seg_of(f) or f < prev_to:
            bad["gap"] += 1
            first_bad.append("record %d: from %#x does not follow the previous to %#x in straight code" % (n, f, prev_to))
        else:
            for a in order[index[prev_to]:index[f]]:
                if mn[a] in uncond:
                    bad["gap"] += 1
                    first_bad.append("record %d: %s at %#x between %#x and %#x" % (n, mn[a], a, prev_to, f))
                    break
    prev_to = t if t in mn else None
print("records %d from_bad %d to_bad %d kind_bad %d gap_bad %d" % (len(recs), bad["from"], bad["to"], bad["kind"], bad["gap"]))
for l in first_bad[:5]:
    print(l)
PY
summary=$(head -1 "$work/check.txt")
for what in from to kind gap; do
	case $what in
	from) title="every 'from' is an instruction start in vmlinux" ;;
	to) title="every 'to' is an instruction start in vmlinux" ;;
	kind) title="the instruction at every 'from' is a branch of the recorded kind (objdump)" ;;
	gap) title="between records the code runs straight (no unconditional transfer skipped)" ;;
	esac
	if grep -q " ${what}_bad 0\b" <<<"$summary" && grep -q "^records $N " <<<"$summary"; then
		tv_ok "linux-window: $title"
	else
		tv_fail "linux-window: $title" "$summary; $(sed -n 2,3p "$work/check.txt" | tr '\n' ' ')"
	fi
done
tv_keep_log "$log"
