#!/usr/bin/env bash
# build/kallsyms-fixture.sh - `tracevisor ksyms` on the Linux fixture's
# vmlinux (no ELF symbols; Debian's /boot/System.map is a placeholder)
# recovers the kernel's own kallsyms table: the names and addresses the
# running kernel prints in /proc/kallsyms, 80k..200k symbols, sorted, in
# well under 2 s; --system-map given the vmlinux names start_kernel.
# Skipped when the fixture is not built (make linux-fixture).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
T=kallsyms-fixture
work=$TV_BUILD/test/kallsyms-fixture

env=$TV_BUILD/linux/linux.env
if [ ! -f "$env" ]; then
	tv_skip "$T" "the Linux fixture is not built (make linux-fixture)"
	exit 0
fi
# shellcheck source=/dev/null
. "$env"
if [ -z "${LINUX_VMLINUX:-}" ] || [ ! -f "$LINUX_VMLINUX" ]; then
	tv_skip "$T" "the fixture has no vmlinux (its bzImage payload was not unpacked)"
	exit 0
fi
# The optimized CLI when built (`make tools`), else the sanitized one the
# unit tier builds: slower, so a looser time limit.
tool=$TV_BUILD/tracevisor
limit_ms=2000
if [ ! -x "$tool" ]; then
	tool=$TV_BUILD/host/tracevisor-asan
	limit_ms=20000
fi
if [ ! -x "$tool" ]; then
	tv_skip "$T" "no host tool built ($TV_BUILD/tracevisor or host/tracevisor-asan)"
	exit 0
fi
rm -rf "$work"
mkdir -p "$work"

t0=$(date +%s%N)
"$tool" ksyms -o "$work/ksyms.txt" "$LINUX_VMLINUX" 2>"$work/ksyms.err"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$rc" != 0 ]; then
	tv_fail "$T: ksyms recovers the table" "exit $rc: $(head -3 "$work/ksyms.err")"
	exit 1
fi
n=$(wc -l <"$work/ksyms.txt")
tv_ok "$T: ksyms recovers the table ($n symbols in $ms ms, $(basename "$tool"); $(sed 's/.* symbols, //' "$work/ksyms.err"))"

if [ "$ms" -lt "$limit_ms" ]; then
	tv_ok "$T: in under $limit_ms ms ($ms ms)"
else
	tv_fail "$T: in under $limit_ms ms" "took $ms ms"
fi

# Debian 12's 6.1 kernel: 94,266 symbols in kallsyms_num_syms (the core
# kernel; /proc/kallsyms adds those of the loaded modules).
if [ "$n" -ge 80000 ] && [ "$n" -le 200000 ]; then
	tv_ok "$T: symbol count $n in 80000..200000"
else
	tv_fail "$T: symbol count in 80000..200000" "$n"
fi

bad=$(awk 'NF != 3 || length($1) != 16 || $1 !~ /^[0-9a-f]+$/ || $2 !~ /^[A-Za-z?]$/ {
		print NR ": " $0; exit }
	{ k = $1 ""; if (k < prev) { print NR ": unsorted: " $0; exit } prev = k }' "$work/ksyms.txt")
if [ -z "$bad" ]; then
	tv_ok "$T: every line is 'ADDR TYPE NAME', addresses sorted"
else
	tv_fail "$T: every line is 'ADDR TYPE NAME', addresses sorted" "$bad"
fi

# Ground truth from the running kernel: the fixture's /init
# (tests/linux/init.sh) greps these from /proc/kallsyms; Debian
# linux-image-6.1.0-56-amd64 6.1.192-2 booted with nokaslr under Bochs
# printed them as "TVLINUX: kallsyms: LINE" (build/test-logs/
# bochs-whole-boot.serial.log, 2026-11-27).
truth='ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff81000070 T secondary_startup_64
ffffffff810fb980 t do_idle
ffffffff81a49040 T rest_init
ffffffff81a49110 t kernel_init
ffffffff8307959c T x86_64_start_kernel
ffffffff83079e46 T start_kernel'
if [ "${LINUX_VERSION:-}" = 6.1.192-2 ]; then
	missing=$(grep -vxF -f "$work/ksyms.txt" <<<"$truth" | tr '\n' ';')
	if [ -z "$missing" ]; then
		tv_ok "$T: the 8 names /proc/kallsyms showed, at its addresses and types"
	else
		tv_fail "$T: the 8 names /proc/kallsyms showed, at its addresses and types" \
			"not in the output: $missing"
	fi
	want="0xffffffff83079e50 start_kernel+0xa"
else
	tv_skip "$T: the 8 names /proc/kallsyms showed" "the ground truth is of 6.1.192-2, the fixture has ${LINUX_VERSION:-?}"
	sk=$(awk '$3 == "start_kernel" { print $1; exit }' "$work/ksyms.txt")
	want=$(printf '0x%x start_kernel+0xa' $((0x${sk:-0} + 10)))
fi
# The same names from a capture of this boot, when the bochs tier left one.
log=$TV_LOGS/bochs-whole-boot.serial.log
if [ -f "$log" ] && grep -q "kernel ${LINUX_ABI#linux-image-}" "$log"; then
	live=$(tr -d '\r' <"$log" | sed -n 's/^TVLINUX: kallsyms: //p' | sort -u)
	missing=$(grep -vxF -f "$work/ksyms.txt" <<<"$live" | tr '\n' ';')
	if [ -n "$live" ] && [ -z "$missing" ]; then
		tv_ok "$T: every kallsyms line of the last bochs whole-boot log ($(wc -l <<<"$live"))"
	else
		tv_fail "$T: every kallsyms line of the last bochs whole-boot log" "missing: $missing"
	fi
fi

# The other commands take the vmlinux itself as the kernel's symbol file.
out=$("$tool" symbolize --system-map "$LINUX_VMLINUX" "${want%% *}" 2>&1)
if [ "$out" = "$want" ]; then
	tv_ok "$T: symbolize --system-map VMLINUX: $out"
else
	tv_fail "$T: symbolize --system-map VMLINUX" "got '$out', want '$want'"
fi
exit "$TV_FAILED"
