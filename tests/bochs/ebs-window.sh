#!/usr/bin/env bash
# bochs/ebs-window.sh - trace_start = exit_boot_services on Bochs with
# Linux as the guest (docs/CONFIG.md, docs/HYPERCALLS.md TV_HC_EVENT).
#
# Before handing over, tracevisor points the firmware's ExitBootServices at
# its own thunk (boot/ebs_hook.c: VMCALL TV_HC_EVENT, then `jmp [rip]` to
# the firmware's function).  Linux's EFI stub (started by linuxload, the
# bench's loader, docs/LINUX-FIXTURE.md) calls ExitBootServices; the
# VMCALL opens an MTF window there, which records N branches of the
# firmware's ExitBootServices and what follows, then closes (stop_after).
# Checks, against what the boot log says of the hook (not the trace):
#   - the window opened on CPU 0 by the event, trigger exit-boot-services,
#     at the thunk's VMCALL;
#   - its first branch is the thunk's jump (from its address) into the
#     firmware's own ExitBootServices (the table's value before the hook);
#   - N branches, nothing lost or undecodable;
#   - ExitBootServices still works: Linux boots to /init and powers off.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
N=${TV_EBS_WINDOW:-300}
work=$TV_BUILD/test/bochs-ebs-window
mkdir -p "$work"

if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "bochs-ebs-window" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
tv_linux_fixture bochs-ebs-window || exit 0

log=$TV_LOGS/bochs-ebs-window.serial.log
printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = mtf' \
	'trace_start = exit_boot_services' "trace_stop_after = $N" 'trace_buffer_kb = 64' \
	'overflow = stop' >"$work/tracevisor.conf"
tv_linux_disk "$work"
rc=$(TV_BOCHS_MEGS=1024 tv_bochs "$log" "${TV_LINUX_TIMEOUT:-900}" "$work/disk.img" 2)
rm -f "$work/disk.img"

hook=$(tr -d '\r' <"$log" | sed -n 's/.*trace: ExitBootServices hooked: thunk at \(0x[0-9a-f]*\) (jump at \(0x[0-9a-f]*\)), the firmware.s at \(0x[0-9a-f]*\).*/\1 \2 \3/p' | head -1)
read -r thunk jump fw <<<"$hook"
if [ -n "$hook" ]; then
	tv_ok "ebs-window: ExitBootServices hooked (thunk $thunk, firmware's $fw)"
else
	tv_fail "ebs-window: ExitBootServices hooked" "no hook line"
	tv_keep_log "$log"
	exit 0
fi
vmcall=$(printf '0x%x' $((thunk + 11)))
tv_expect "ebs-window: the loader's call reached the thunk's VMCALL on cpu 0" "$log" \
	"trace: cpu 0: ExitBootServices called at $vmcall"
tv_expect "ebs-window: window opened by the event" "$log" \
	"trace: cpu 0: window 1 started \\(exit-boot-services\\) at $vmcall"
# Events are interrupts delivered inside the window (a branch of kind
# interrupt, not a loss): the firmware's ExitBootServices restores the TPL
# with interrupts on, so whether a timer tick lands in these N branches
# depends on the emulated time the boot took so far (any change to the
# hypervisor's exit paths moves it).
tv_expect "ebs-window: window closed by the limit, $N branches, nothing lost or undecodable" "$log" \
	"trace: cpu 0: window 1 stopped \\(limit\\): $N branches, [0-9]+ events, 0 filtered, 0 dropped, 0 undecodable, [0-9]+ steps; ring lost 0 records"
tv_linux_booted ebs-window "$log" "$rc"
tv_reject "ebs-window: no tracevisor errors" "$log" '\[err\]'

tvt=$work/window.tvt
if "$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" 2>"$work/from-serial.err"; then
	"$TV_BUILD/tracevisor" dump -q --no-summary --cpu 0 "$tvt" >"$work/dump.txt" 2>&1
	# The window's first branch is the thunk's jump, unless a timer tick
	# was pending when the VMCALL returned (the hypervisor's work at the
	# event takes emulated time; since the loader-image rescan the
	# fresh-clone run had one): then the first is that interrupt,
	# delivered in the thunk (between its VMCALL and its jump), and the
	# jump, if the handler returns within the window, goes to the firmware.
	first=$(awk '$3 == "BRANCH" { print $4, $6, $7; exit }' "$work/dump.txt")
	jumpline=$(awk -v j="$(printf '0x%x' "$jump")" '$3 == "BRANCH" && $4 == j { print $4, $6; exit }' "$work/dump.txt")
	want=$(printf '0x%016x 0x%016x' "$jump" "$fw")
	read -r f t k <<<"$first"
	read -r jf jt <<<"$jumpline"
	got=$(printf '0x%016x 0x%016x' "${jf:-0}" "${jt:-0}")
	why=""
	if [ -z "$f" ]; then
		why="no branch"
	elif [ $((f)) = $((jump)) ]; then
		[ "$got" = "$want" ] || why="the jump went elsewhere"
	elif [ "${k:-}" = interrupt ] && [ $((f)) -ge $((vmcall)) ] && [ $((f)) -le $((jump)) ]; then
		[ -z "$jumpline" ] || [ "$got" = "$want" ] || why="after the interrupt, the jump went elsewhere"
	else
		why="neither the jump nor an interrupt in the thunk"
	fi
	if [ -z "$why" ]; then
		tv_ok "ebs-window: first branch: the thunk's jump into the firmware's ExitBootServices, or an interrupt delivered in the thunk before it (first: $first; the jump: ${jumpline:-not in the window})"
	else
		tv_fail "ebs-window: first branch: the thunk's jump into the firmware's ExitBootServices" \
			"$why: first '$first', the jump's '$jumpline', want '$want'"
	fi
	if [ "$(awk '$3 == "BRANCH"' "$work/dump.txt" | wc -l)" = "$N" ] &&
		[ "$(grep -c ' START .*trigger=exit-boot-services' "$work/dump.txt")" = 1 ]; then
		tv_ok "ebs-window: trace file: START by exit-boot-services and $N branches"
	else
		tv_fail "ebs-window: trace file: START by exit-boot-services and $N branches" "see $work/dump.txt"
	fi
else
	tv_fail "ebs-window: trace file from the serial export" "$(tail -n 1 "$work/from-serial.err")"
fi
tv_keep_log "$log"
