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

tv_vmlinux_check linux-window "$work" "$work/branches.txt" "$((entry - elf_entry))" "$N"
tv_keep_log "$log"
