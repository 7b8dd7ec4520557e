#!/usr/bin/env bash
# bochs/kernel-entry.sh - trace_start = kernel_entry on Bochs with Linux
# as the guest (docs/CONFIG.md).
#
# tracevisor hooks ExitBootServices (boot/ebs_hook.c).  At the loader's
# call it finds the PE image the call came from (the OS loader: here the
# kernel's own EFI stub, in the bzImage linuxload started) and traps the
# return address; when ExitBootServices has returned, it steps the CPU
# (MTF) until it executes outside that image: the kernel's entry, where
# an MTF window of N branches opens (trace_stop_after).  Debian's 6.1
# EFI stub decompresses the kernel itself and jumps to vmlinux's
# startup_64 (at 0x1600000 in this bench, as linux-window.sh's address
# trigger).  Checks, independent of tracevisor's own decoder:
#   - the hook, the loader's image and the return address inside it;
#   - the entry outside the image, and the window opened there by
#     trigger kernel-entry, N branches, nothing lost or undecodable;
#   - the entry is vmlinux's startup_64: the window's N branches, placed
#     by entry - the ELF entry, pass tv_vmlinux_check against objdump of
#     vmlinux (instruction starts, kinds, straight code between them);
#   - Linux still boots to /init and powers off.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
N=${TV_KERNEL_ENTRY_WINDOW:-100}
T=kernel-entry
work=$TV_BUILD/test/bochs-$T
mkdir -p "$work"

if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "bochs-$T" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
tv_linux_fixture "bochs-$T" || exit 0

log=$TV_LOGS/bochs-$T.serial.log
printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = mtf' \
	'trace_start = kernel_entry' "trace_stop_after = $N" 'trace_buffer_kb = 64' \
	'overflow = stop' >"$work/tracevisor.conf"
tv_linux_disk "$work"
rc=$(TV_BOCHS_MEGS=1024 tv_bochs "$log" "${TV_LINUX_TIMEOUT:-900}" "$work/disk.img" 2)
rm -f "$work/disk.img"

tv_expect "$T: armed at boot" "$log" \
	"trace: window opens at the kernel's entry: the first instruction outside the OS loader's image after ExitBootServices returns"
img=$(tr -d '\r' <"$log" | sed -n 's/.*trace: cpu 0: kernel_entry: the OS loader.s image is \(0x[0-9a-f]*\)-\(0x[0-9a-f]*\), ExitBootServices returns to \(0x[0-9a-f]*\).*/\1 \2 \3/p' | head -1)
read -r lo hi ret <<<"$img"
if [ -n "$img" ] && [ $((ret)) -ge $((lo)) ] && [ $((ret)) -le $((hi)) ]; then
	tv_ok "$T: the loader's image $lo-$hi holds the return address $ret"
else
	tv_fail "$T: the loader's image holds the return address" "${img:-no kernel_entry line}"
	tv_keep_log "$log"
	exit 0
fi
tv_expect "$T: ExitBootServices returned to the trap" "$log" \
	"trace: cpu 0: ExitBootServices returned to $ret: stepping to the kernel's entry"
left=$(tr -d '\r' <"$log" | sed -n "s/.*trace: cpu 0: kernel_entry: left the loader's image at \(0x[0-9a-f]*\) after \([0-9]*\) steps.*/\1 \2/p" | head -1)
read -r entry steps <<<"$left"
if [ -n "$left" ] && { [ $((entry)) -lt $((lo)) ] || [ $((entry)) -gt $((hi)) ]; }; then
	tv_ok "$T: left the loader's image at $entry after $steps steps"
else
	tv_fail "$T: left the loader's image" "${left:-no line}"
	tv_keep_log "$log"
	exit 0
fi
tv_expect "$T: window opened there by the trigger" "$log" \
	"trace: cpu 0: window 1 started \\(kernel-entry\\) at $entry"
tv_expect "$T: window closed by the limit, $N branches, nothing lost or undecodable" "$log" \
	"trace: cpu 0: window 1 stopped \\(limit\\): $N branches, 0 events, 0 filtered, 0 dropped, 0 undecodable, [0-9]+ steps; ring lost 0 records"
tv_linux_booted "$T" "$log" "$rc"
tv_reject "$T: no tracevisor errors" "$log" '\[err\]'

# The entry is vmlinux's startup_64 (the ELF entry; the EFI stub of this
# kernel decompresses it before ExitBootServices): the window's branches,
# placed by entry - ELF entry, checked against objdump of vmlinux.
tvt=$work/window.tvt
if ! "$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" 2>"$work/from-serial.err"; then
	tv_fail "$T: trace file from the serial export" "$(tail -n 1 "$work/from-serial.err")"
	tv_keep_log "$log"
	exit 0
fi
"$TV_BUILD/tracevisor" dump -q --no-summary --cpu 0 "$tvt" >"$work/dump.txt" 2>&1
awk '$3 == "BRANCH" { print $4, $6, $7 }' "$work/dump.txt" >"$work/branches.txt"
elf_entry=$(readelf -h "$LINUX_VMLINUX" | sed -n 's/.*Entry point address: *\(0x[0-9a-f]*\).*/\1/p')
tv_vmlinux_check "$T" "$work" "$work/branches.txt" "$((entry - elf_entry))" "$N"
tv_keep_log "$log"
