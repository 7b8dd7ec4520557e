#!/usr/bin/env bash
# bochs/mem-linux.sh - memory-access tracing under an unmodified Linux
# (issue "Memory-access tracing", docs/MEMTRACE.md): Debian's kernel
# through linuxload with nokaslr, tracevisor watching the writes to the 8
# bytes of `jiffies` (its guest-physical address from the kernel image's
# own symbol table, `tracevisor ksyms`, and the load offset: startup_64
# at 0x1600000) from the kernel's entry (trace_start = kernel_entry) to
# the power-off.  source = lbr with an IP filter no code matches (the
# branch trace is not the point here: no PT stream, no branch records),
# serial export.
# Checked against the kernel image, not against tracevisor's decoder:
#   - writes were recorded, the window held nothing undecoded, nothing was
#     lost or malformed, and Linux booted on to /init and power-off;
#   - every recorded access is a write (or read-modify-write) of jiffies'
#     address, and each one makes jiffies larger (new > old: it only
#     counts up);
#   - every recorded RIP is an instruction start in objdump's linear
#     disassembly of the vmlinux segments, and that instruction accesses
#     memory (a memory operand, or an implicit one);
#   - symbolized over vmlinux (--system-map), the writers include the
#     timer code (do_timer or tick_do_update_jiffies64);
#   - the writes to the rest of jiffies' page were stepped and counted
#     (collateral), not recorded.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
T=mem-linux
work=$TV_BUILD/test/bochs-$T
log=$TV_LOGS/bochs-$T.serial.log
rm -rf "$work"
mkdir -p "$work" "$TV_LOGS"

tv_model_bochs "$T" || exit 0
model=$TV_MODEL
tv_linux_fixture "$T" || exit 0

entry=0x1600000   # startup_64's guest-physical address in this bench (nokaslr)
elf_entry=$(readelf -h "$LINUX_VMLINUX" | sed -n 's/.*Entry point address: *\(0x[0-9a-f]*\).*/\1/p')
"$TV_BUILD/tracevisor" ksyms -q -o "$work/kallsyms" "$LINUX_VMLINUX"
jv=$(awk '$3 == "jiffies" { print "0x" $1; exit }' "$work/kallsyms")
# The kernel's physical address: its ELF program header's, moved by the
# load offset (the entry runs at $entry, not at the ELF entry).
jp=$(python3 - "$LINUX_VMLINUX" "${jv:-0}" "$((entry - elf_entry))" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb").read()
v, delta = int(sys.argv[2], 16), int(sys.argv[3])
phoff, = struct.unpack_from("<Q", f, 0x20)
phentsize, phnum = struct.unpack_from("<HH", f, 0x36)
for i in range(phnum):
    t, _, _, vaddr, paddr, _, memsz, _ = struct.unpack_from("<IIQQQQQQ", f, phoff + i * phentsize)
    if t == 1 and vaddr <= v < vaddr + memsz:
        print(hex(paddr + (v - vaddr) + delta))
PY
)
if [ -z "$jv" ] || [ -z "$jp" ]; then
	tv_fail "$T: jiffies in the kernel image" "virtual ${jv:-?}, physical ${jp:-?}"
	exit 0
fi
jend=$(printf '0x%x' $((jp + 8)))
printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = lbr' \
	'trace_start = kernel_entry' 'trace_ip = 0x1000-0x1000' \
	"mem_watch = $jp-$jend:w" >"$work/tracevisor.conf"
tv_linux_disk "$work"
rc=$(TV_BOCHS_BIN=$model TV_BOCHS_MEGS=1024 TV_BOCHS_EXTRA='cpu: lbr=1' \
	tv_bochs "$log" "${TV_MEM_LINUX_TIMEOUT:-900}" "$work/disk.img" 2)
rm -f "$work/disk.img"
tv_linux_booted "$T" "$log" "$rc"
tv_reject "$T: no tracevisor errors" "$log" '\[err\]'
tv_expect "$T: the watch on jiffies ($jv at guest-physical $jp) configured" "$log" "config: mem_watch=$jp-$jend:w"

tvt=$work/trace.tvt
if ! "$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" 2>"$work/from-serial.err"; then
	tv_fail "$T: trace file from the serial export" "$(tail -n 1 "$work/from-serial.err")"
	tv_keep_log "$log"
	exit 0
fi
"$TV_BUILD/tracevisor" mem "$tvt" --system-map "$LINUX_VMLINUX" >"$work/mem.txt" 2>"$work/mem.err"
n=$(grep -c '^cpu' "$work/mem.txt")
# cpuN TSC RIP SYMBOL KIND SIZE gla= gpa= [old=] [new=] ...
others=$(awk -v g="gpa=$jp" '/^cpu/ && ($5 !~ /^r?w(\+lock)?$/ || $8 != g)' "$work/mem.txt" | head -3)
if [ "$n" -gt 0 ] && [ -z "$others" ]; then
	tv_ok "$T: $n writes recorded, every one a write of jiffies ($jp)"
else
	tv_fail "$T: writes recorded, every one a write of jiffies" "$n recorded; others: $others"
fi
# jiffies only counts up: each write's new value above its old one
# (both as the hypervisor read them around the step).
notup=$(awk '/^cpu/ { o = ""; v = ""; for (i = 9; i <= NF; i++) { if ($i ~ /^old=/) o = substr($i, 5); if ($i ~ /^new=/) v = substr($i, 5) } print o, v }' "$work/mem.txt" |
	while read -r o v; do
		if [ -z "$o" ] || [ -z "$v" ] || [ $((v - o)) -le 0 ] || [ $((v - o)) -gt 100000 ]; then echo "old=$o new=$v"; fi
	done | head -3)
if [ "$n" -gt 0 ] && [ -z "$notup" ]; then
	tv_ok "$T: every recorded write makes jiffies larger (old and new values recorded)"
else
	tv_fail "$T: every recorded write makes jiffies larger" "${notup:-nothing recorded}"
fi
if grep -qE '^# lost records: 0; malformed records: 0' "$work/mem.txt" &&
	grep -qE '^# cpu0: recorded [1-9][0-9]*, .*undecoded 0' "$work/mem.txt"; then
	tv_ok "$T: nothing lost, malformed or undecoded ($(grep '^# cpu0:' "$work/mem.txt"))"
else
	tv_fail "$T: nothing lost, malformed or undecoded" "$(grep '^# ' "$work/mem.txt" | tr '\n' ' ')"
fi
if grep -qE '^# cpu[01]: .*collateral [1-9]' "$work/mem.txt"; then
	tv_ok "$T: the rest of jiffies' page stepped and counted as collateral, not recorded"
else
	tv_fail "$T: the rest of jiffies' page stepped and counted as collateral" "$(grep '^# cpu' "$work/mem.txt" | tr '\n' ' ')"
fi

# Every RIP: an instruction start of vmlinux that accesses memory.
awk '/^cpu/ { print $3 }' "$work/mem.txt" | sort -u >"$work/rips.txt"
tv_vmlinux_insns "$LINUX_VMLINUX" "$work" full
bad=$(python3 - "$work/insns_full.txt" "$work/rips.txt" <<'PY'
import sys
insns = {}
for line in open(sys.argv[1]):
    a, _, text = line.rstrip("\n").partition(" ")
    insns[int(a, 16)] = text
implicit = ("push", "pop", "call", "ret", "movs", "stos", "lods", "scas", "cmps", "movabs", "xchg", "cmpxchg")
for line in open(sys.argv[2]):
    rip = int(line, 16)
    text = insns.get(rip)
    if text is None:
        print("%#x: not an instruction start" % rip)
    elif "(" not in text and not text.split()[0].startswith(implicit):
        print("%#x: %s has no memory operand" % (rip, text))
PY
)
nr=$(wc -l <"$work/rips.txt")
if [ "$nr" -gt 0 ] && [ -z "$bad" ]; then
	tv_ok "$T: all $nr distinct RIPs are instruction starts in vmlinux that access memory"
else
	tv_fail "$T: every RIP an instruction start in vmlinux that accesses memory" "$nr RIPs; $(echo "$bad" | head -3 | tr '\n' ' ')"
fi
writers=$(awk '/^cpu/ { s = $4; sub(/\+.*/, "", s); print s }' "$work/mem.txt" | sort | uniq -c | sort -rn | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
if echo "$writers" | grep -qE '(^|, )(do_timer|tick_do_update_jiffies64) x'; then
	tv_ok "$T: the writers include the timer code ($writers)"
else
	tv_fail "$T: the writers include the timer code" "writers: ${writers:-none}"
fi
tv_keep_log "$log"
exit 0
