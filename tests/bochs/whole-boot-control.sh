#!/usr/bin/env bash
# bochs/whole-boot-control.sh - the whole-boot capture steered and hurt on
# purpose (issue "Whole boot, nothing lost"): CONTROL against the running
# hypervisor, and a receiver that stops answering for longer than wait_ms.
#
# The boot of whole-boot.sh (Debian's Linux through its EFI stub in Bochs
# with the PT model, 2 CPUs, source = pt, trace_start = boot, the default
# overflow policy: wait), with small buffers (1 MiB of PT per CPU) so that
# a paused receiver fills them, wait_ms = 500 and a control key.  While it
# boots, from this machine:
#   1. `tracevisor control marker` then `stop all` then `start all`: the
#      receiver prints each reply, and the capture shows on every CPU, in
#      its record stream, in order: the marker (value and label), the stop
#      of window 1 (trigger receiver), the start of window 2 (trigger
#      receiver), and at the end window 2 closed by the guest's power-off;
#   2. the receiver is stopped (SIGSTOP) for several seconds, then goes on
#      (SIGCONT): the hypervisor gives it up after wait_ms without
#      progress, drops what does not fit, counted, and waits again once it
#      answers.  The loss is exact: per CPU, the PT bytes and records the
#      capture misses (tracevisor info) are the ones the hypervisor's stop
#      lines count, and the stream goes on to the power-off.
# Linux boots to its power-off with no watchdog or clocksource complaint.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
T=whole-boot-control
work=$TV_BUILD/test/bochs-$T
log=$TV_LOGS/bochs-$T.serial.log
rm -rf "$work"
mkdir -p "$work" "$TV_LOGS"
bochs_pid=
cleanup() {
	[ -n "${TV_REC_PID:-}" ] && kill -CONT "$TV_REC_PID" 2>/dev/null
	[ -n "$bochs_pid" ] && kill "$bochs_pid" 2>/dev/null && wait "$bochs_pid" 2>/dev/null
	tv_record_stop
}
trap cleanup EXIT

tv_model_bochs "$T" || exit 0
model=$TV_MODEL
if ! grep -q 'Model a subset of Intel Processor Trace' "$model"; then
	tv_skip "$T" "$model has no cpu: pt option (patch 0003 not applied)"
	exit 0
fi
tv_linux_fixture "$T" || exit 0
if ! tv_record_start "$work/cap" --machines 1 --idle 60; then
	tv_fail "$T: receiver" "tracevisor record did not start: $(tail -n 2 "$work/cap/record.stderr")"
	exit 0
fi
key=7e57c0de7e57c0de7e57c0de7e57c0de
printf '%s\n' "$LINUX_CMDLINE tsc_early_khz=100000 nokaslr pci=noacpi" >"$work/cmdline.txt"
printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = pt' 'trace_start = boot' \
	'pt_buffer_kb = 1024' 'wait_ms = 500' "control_key = $key" \
	'nic = auto' 'net_ip = 10.0.2.15/24' 'net_gw = 10.0.2.2' \
	"receiver = 10.0.2.2:$TV_REC_PORT" 'machine = control' >"$work/tracevisor.conf"
tv_linux_stick "$work/disk.img" "$work/tracevisor.conf" "$work/cmdline.txt"
(TV_BOCHS_BIN=$model TV_BOCHS_MEGS=1024 \
	TV_BOCHS_EXTRA=$'cpu: pt=1\ne1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp' \
	tv_bochs "$log" "${TV_WHOLE_BOOT_TIMEOUT:-1500}" "$work/disk.img" 2 >"$work/bochs.rc") &
bochs_pid=$!

# The session's capture directory (meta.json: the machine's address and
# session id, which `control --capture` reads).
cap=
for _ in $(seq 600); do
	cap=$(ls -d "$work"/cap/control-*/ 2>/dev/null | head -1)
	[ -n "$cap" ] && [ -f "$cap/meta.json" ] && break
	kill -0 "$bochs_pid" 2>/dev/null || break
	sleep 0.5
done
cap=${cap%/}
ctl() {
	"$TV_BUILD/tracevisor" control --capture "$cap" --key-hex "$key" --repeat 3 "$@" >>"$work/control.out" 2>&1
}
# Wait for one reply line in the receiver's output (each command is
# repeated: the machine applies it once and answers every copy).
replied() {
	for _ in $(seq 240); do
		grep -q "control $1 (counter [0-9]*) applied" "$TV_REC_ERR" && return 0
		sleep 0.5
	done
	return 1
}
steered=0
if [ -n "$cap" ] && [ -f "$cap/meta.json" ]; then
	ctl marker 0x5eed "mid-boot marker" && replied marker &&
		ctl stop all && replied stop && sleep 2 &&
		ctl start all && replied start && steered=1
fi
if [ "$steered" = 1 ]; then
	tv_ok "$T: marker, stop and start sent to the booting machine, each applied (the receiver printed the replies)"
else
	tv_fail "$T: marker, stop and start sent to the booting machine, each applied" \
		"capture '${cap:-none}'; $(tail -n 3 "$work/control.out" 2>/dev/null | tr '\n' ' '); $(grep -c 'control' "$TV_REC_ERR") control lines from record"
fi
# The receiver away for longer than wait_ms (in emulated time, slower
# than the host's): the buffers fill, the hypervisor gives it up.
sleep 3
kill -STOP "$TV_REC_PID" 2>/dev/null
sleep "${TV_CONTROL_PAUSE_S:-20}"
kill -CONT "$TV_REC_PID" 2>/dev/null
wait "$bochs_pid"
bochs_pid=
rc=$(cat "$work/bochs.rc" 2>/dev/null || echo "?")
rm -f "$work/disk.img"
tv_record_stop 60
tv_linux_booted "$T" "$log" "$rc"
if [ "$TV_REC_RC" = 0 ]; then tv_ok "$T: receiver closed the session and exited by itself"; else tv_fail "$T: receiver closed the session and exited by itself" "status $TV_REC_RC"; fi
tv_expect "$T: the receiver was given up after wait_ms without progress" "$log" \
	'trace: cpu [01]: no room for [0-9]+ ms \(wait_ms 500\): the receiver is taken as gone'
tv_expect "$T: the receiver answered again and waiting resumed" "$log" \
	'trace: the receiver answers again: overflow = wait waits again'
tv_reject "$T: Linux: no watchdog or clocksource complaint" "$log" \
	'soft lockup|hard LOCKUP|rcu_sched self-detected|rcu: INFO|clocksource.*unstable|Marking clocksource|TSC.*unstable|watchdog: BUG'
tv_reject "$T: no tracevisor errors" "$log" '\[err\]'
for cpu in 0 1; do
	tv_expect "$T: cpu $cpu: window 1 closed by the receiver's stop" "$log" "trace: cpu $cpu: window 1 stopped \(receiver\)"
	tv_expect "$T: cpu $cpu: window 2 opened by the receiver's start" "$log" "trace: cpu $cpu: window 2 started \(receiver\)"
	tv_expect "$T: cpu $cpu: window 2 closed by the guest's power-off" "$log" "trace: cpu $cpu: window 2 stopped \(guest-power-off\)"
done
if [ ! -f "$cap/trace.tvt" ]; then
	tv_fail "$T: capture of the session" "'${cap:-none}': $(ls "$work/cap" | tr '\n' ' ')"
	tv_keep_log "$log"
	exit 0
fi

# 1. The control's records, in order, in every CPU's stream.
"$TV_BUILD/tracevisor" dump -q --no-summary "$cap/trace.tvt" >"$work/dump.txt" 2>"$work/dump.err"
for cpu in 0 1; do
	seq=$(awk -v c="cpu$cpu" '
		$2 != c { next }
		/MARKER/ && /value=0x5eed/ && /mid-boot marker/ { s = s " marker"; next }
		/STOP/ && /trigger=receiver/ { s = s " stop-receiver"; next }
		/START/ && /trigger=receiver/ { s = s " start-receiver"; next }
		/STOP/ && /trigger=guest-power-off/ { s = s " stop-power-off"; next }
		END { print substr(s, 2) }' "$work/dump.txt")
	if [ "$seq" = "marker stop-receiver start-receiver stop-power-off" ]; then
		tv_ok "$T: cpu $cpu: the capture shows the marker, then the stop and the start the receiver asked for, then the power-off"
	else
		tv_fail "$T: cpu $cpu: the capture shows the marker, then the stop and the start the receiver asked for, then the power-off" \
			"got '$seq'; $(grep -m3 "cpu$cpu" "$work/dump.txt" | tr '\n' ' ')"
	fi
done

# 2. The loss is exact: the hypervisor's counts (sum over both windows'
# stop lines) against what the capture misses.
"$TV_BUILD/tracevisor" info "$cap/trace.tvt" >"$work/info.txt" 2>&1
any_loss=0
for cpu in 0 1; do
	read -r hv_pt hv_rec hv_bytes < <(tr -d '\r' <"$log" | awk -v c="$cpu" '
		$0 ~ "trace: cpu " c ": window [0-9]+ stopped" {
			if (match($0, /PT lost [0-9]+/)) pt += substr($0, RSTART + 8, RLENGTH - 8)
			if (match($0, /ring lost [0-9]+/)) rec = substr($0, RSTART + 10, RLENGTH - 10)
			if (match($0, /: [0-9]+ PT bytes/)) b += substr($0, RSTART + 2, RLENGTH - 11)
		}
		END { printf "%d %d %d\n", pt, rec, b }')
	line=$(grep -E "^cpu$cpu: " "$work/info.txt" | head -1)
	cap_rec=$(echo "$line" | sed -n 's/.* lost \([0-9]*\) (gaps.*/\1/p')
	cap_pt=$(echo "$line" | sed -n 's/.*pt [0-9]* bytes (lost \([0-9]*\) in gaps, \([0-9]*\) before first chunk, \([0-9]*\) per PT_SYNC).*/\1 \2 \3/p' |
		awk '{ print $1 + $2 + $3 }')
	have=$(stat -c %s "$cap/cpu$cpu.pt" 2>/dev/null || echo 0)
	[ "${hv_pt:-0}" -gt 0 ] || [ "${hv_rec:-0}" -gt 0 ] && any_loss=1
	if [ -n "$cap_rec" ] && [ -n "$cap_pt" ] && [ "$cap_rec" = "$hv_rec" ] && [ "$cap_pt" = "$hv_pt" ] &&
		[ "$have" = "$hv_bytes" ]; then
		tv_ok "$T: cpu $cpu: the loss is counted exactly: $hv_pt PT bytes and $hv_rec records lost as the hypervisor says, $have PT bytes kept"
	else
		tv_fail "$T: cpu $cpu: the loss is counted exactly" \
			"hypervisor: PT lost ${hv_pt:-?}, ring lost ${hv_rec:-?}, PT bytes ${hv_bytes:-?}; capture: records lost ${cap_rec:-?}, PT lost ${cap_pt:-?}, cpu$cpu.pt $have bytes; $line"
	fi
done
if [ "$any_loss" = 1 ]; then
	tv_ok "$T: the pause did lose data (the scenario tests something)"
else
	tv_fail "$T: the pause did lose data (the scenario tests something)" "no PT or record loss in any stop line: lengthen TV_CONTROL_PAUSE_S"
fi
tv_keep_log "$log"
# TV_KEEP_CAPTURE=1 keeps the capture (hundreds of MB) for a look by hand.
[ -n "${TV_KEEP_CAPTURE:-}" ] || rm -f "$cap/cpu0.pt" "$cap/cpu1.pt" "$cap/trace.tvt"
exit 0
