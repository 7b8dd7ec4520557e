#!/usr/bin/env bash
# build/net-sigint.sh - Ctrl-C in the middle of a stream: SIGINT to
# `tracevisor record` while the fake machine is still sending.  It exits
# 0, says where the capture is, and the capture is readable and
# consistent: every record in trace.tvt is the right one, meta.json says
# complete, losses.json exists, and `tracevisor dump` reads the file
# without damage.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: SIGINT mid-stream"
net_need "$T"
net_work sigint
port=$(net_port 6543)
args=(--cpus 2 --records 1000000 --seed 15 --session 5eed00000000c0c0)

if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log"; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
net_bg timeout 120 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" --rate 50000 \
	>"$NET_WORK/send.log" 2>&1
sender=$NET_LAST
# Wait until records are flowing (a status line with records > 0).
net_wait_file "$NET_WORK/rec.log.err" 'recording: 1 session, [1-9]' 30
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
rc=$NET_RC
kill "$sender" 2>/dev/null
if [ "$rc" = 0 ]; then tv_ok "$T: exit 0"; else tv_fail "$T: exit 0" "exit $rc"; fi
dir=$(sed -n 's/^capture: //p' "$NET_WORK/rec.log" | head -1)
if [ -n "$dir" ] && grep -q '"complete": true' "$dir/meta.json" && [ -s "$dir/losses.json" ]; then
	tv_ok "$T: capture closed (meta.json complete, losses.json written)"
else
	tv_fail "$T: capture closed" "capture line '$dir'"
fi
"$TV_FAKE" verify --tvt "$dir/trace.tvt" "${args[@]}" >"$NET_WORK/verify.log" 2>&1
got=$(sed -n 's/^cpu 0 produced [0-9]* records \([0-9]*\) .*/\1/p' "$NET_WORK/verify.log")
if grep -q 'damaged chunks 0' "$NET_WORK/verify.log" && [ "$(grep -c ' dup 0 bad 0 .* order 0$' "$NET_WORK/verify.log")" = 2 ] &&
	[ "${got:-0}" -gt 0 ]; then
	tv_ok "$T: the $got records of cpu0 on disk are the right ones, in order"
else
	tv_fail "$T: records on disk are the right ones" "$(tr '\n' ';' <"$NET_WORK/verify.log" | head -c 300)"
fi
"$TV_REC" dump --summary-only "$dir/trace.tvt" >"$NET_WORK/dump.log" 2>&1
drc=$?
if [ "$drc" = 0 ] && grep -q '^records: [1-9]' "$NET_WORK/dump.log"; then
	tv_ok "$T: tracevisor dump reads it undamaged"
else
	tv_fail "$T: tracevisor dump reads it undamaged" "exit $drc"
fi
