#!/usr/bin/env bash
# build/net-control.sh - `tracevisor control` against the fake machine
# (the real net/export.c with a control key): a MARKER sent with the right
# key is applied once (the machine's MARKER record shows up in the
# capture, the reply in record's output), the same command repeated is not
# applied again, and one with a wrong key changes nothing and gets no
# reply (the machine counts it as ctl_bad_auth); a memory watch armed by
# CONTROL shows in the capture ('tracevisor mem').
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: tracevisor control"
net_need "$T"
net_work control
port=$(net_port 6543)
key=5ec2e75ec2e75ec2e75ec2e75ec2e7aa
args=(--cpus 2 --records 60000 --seed 18 --session 5eed00000000c7a1 --rate 15000)

if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log"; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
net_bg timeout 120 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" --key-hex "$key" \
	>"$NET_WORK/send.log" 2>&1
sender=$NET_LAST
dir=$NET_WORK/out/fake-5eed00000000c7a1
for _ in $(seq 100); do [ -s "$dir/meta.json" ] && break; sleep 0.1; done
"$TV_REC" control --capture "$dir" --key-hex "$key" --repeat 3 marker 0x4242 "from the host" \
	>"$NET_WORK/control.log" 2>&1
crc=$?
"$TV_REC" control --capture "$dir" --key-hex 00112233 marker 0x6666 forged >>"$NET_WORK/control.log" 2>&1
"$TV_REC" control --capture "$dir" --key-hex "$key" watch 0x10000-0x11000:w net-buf \
	>>"$NET_WORK/control.log" 2>&1
wrc=$?
net_wait_pid "$sender" 120
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
if [ "$crc" = 0 ] && grep -q '^sent marker (counter [0-9]*) to 127.0.0.1:[0-9]*, session 5eed00000000c7a1' "$NET_WORK/control.log"; then
	tv_ok "$T: sent to the peer and session of the capture's meta.json"
else
	tv_fail "$T: sent to the peer and session of the capture's meta.json" "exit $crc: $(head -3 "$NET_WORK/control.log" | tr '\n' ';')"
fi
if grep -q 'control_applied 2 ctl_bad_auth 1$' "$NET_WORK/send.log"; then
	tv_ok "$T: applied once for 3 repeats (and the watch: 2), the forged one refused (ctl_bad_auth 1)"
else
	tv_fail "$T: applied once, the forged one refused" "$(grep control_applied "$NET_WORK/send.log")"
fi
n=$(grep -c 'control marker (counter [0-9]*) applied' "$NET_WORK/rec.log.err")
if [ "$n" -ge 1 ]; then tv_ok "$T: record prints the machine's reply"; else tv_fail "$T: record prints the machine's reply" "no reply line"; fi
"$TV_REC" dump "$dir/trace.tvt" >"$NET_WORK/dump.log" 2>&1
"$TV_REC" mem "$dir" >"$NET_WORK/mem.log" 2>&1
if [ "$wrc" = 0 ] && grep -q '^# watch 1 armed 0x10000-0x11000 w by control on cpu0 tsc [0-9]* "net-buf"$' "$NET_WORK/mem.log" &&
	grep -q 'control mem-watch (counter [0-9]*) applied' "$NET_WORK/rec.log.err"; then
	tv_ok "$T: watch: the MEM_WATCH record in the capture ('mem' lists it), the reply printed"
else
	tv_fail "$T: watch: the MEM_WATCH record in the capture, the reply printed" \
		"exit $wrc: $(grep -m2 '# watch' "$NET_WORK/mem.log" | tr '\n' ';') $(grep -m1 mem-watch "$NET_WORK/rec.log.err")"
fi
m=$(grep -c 'MARKER.*0x4242.*from the host' "$NET_WORK/dump.log")
f=$(grep -c 'MARKER.*0x6666' "$NET_WORK/dump.log")
if [ "$m" = 2 ] && [ "$f" = 0 ]; then
	tv_ok "$T: the MARKER is in both CPUs' streams, the forged one nowhere"
else
	tv_fail "$T: the MARKER is in both CPUs' streams, the forged one nowhere" "$m good, $f forged: $(grep -m2 MARKER "$NET_WORK/dump.log" | tr '\n' ';')"
fi
