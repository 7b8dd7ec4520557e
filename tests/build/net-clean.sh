#!/usr/bin/env bash
# build/net-clean.sh - tracevisor record on a clean loopback: two CPUs of
# the fake machine (tests/net/fake_sender.c, the real net/export.c), every
# record arrives exactly once and in order, byte for byte, the capture
# directory is complete and `tracevisor dump` reads it with 0 lost.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: clean loopback"
net_need "$T"
net_work clean
port=$(net_port 6543)
args=(--cpus 2 --records 20000 --seed 11 --session 5eed00000000c1ea --machine "lab 7")

if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log"; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
timeout 120 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" --pt 50000 >"$NET_WORK/send.log" 2>&1
src=$?
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
if [ "$src" = 0 ] && grep -q '^done' "$NET_WORK/send.log"; then
	tv_ok "$T: sender saw every record acknowledged"
else
	tv_fail "$T: sender saw every record acknowledged" "fake_sender exit $src"
fi
if [ "$NET_RC" = 0 ]; then tv_ok "$T: receiver exits 0 on SIGINT"; else tv_fail "$T: receiver exits 0 on SIGINT" "exit $NET_RC"; fi
dir=$(sed -n 's/^capture: //p' "$NET_WORK/rec.log" | head -1)
case "$dir" in
*/lab_7-5eed00000000c1ea) tv_ok "$T: capture directory named machine-session" ;;
*) tv_fail "$T: capture directory named machine-session" "capture line: '$dir'" ;;
esac
for f in trace.tvt meta.json losses.json losses.txt; do
	[ -s "$dir/$f" ] || tv_fail "$T: capture has $f" "missing"
done
"$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${args[@]}" \
	>"$NET_WORK/verify.log" 2>&1
vrc=$?
if [ "$vrc" = 0 ] && [ "$(grep -c 'records 20000 dup 0 bad 0 missing 0 .* order 0$' "$NET_WORK/verify.log")" = 2 ]; then
	tv_ok "$T: every record once, in order, byte for byte"
else
	tv_fail "$T: every record once, in order, byte for byte" "$(tr '\n' ';' <"$NET_WORK/verify.log" | head -c 300)"
fi
"$TV_REC" dump --summary-only "$dir/trace.tvt" >"$NET_WORK/dump.log" 2>&1
drc=$?
if [ "$drc" = 0 ] && grep -q '^lost records: 0 ' "$NET_WORK/dump.log" &&
	grep -q '^records: 40000$' "$NET_WORK/dump.log"; then
	tv_ok "$T: tracevisor dump reads the capture, 0 lost"
else
	tv_fail "$T: tracevisor dump reads the capture, 0 lost" "exit $drc: $(grep -E 'lost|records' "$NET_WORK/dump.log" | head -3 | tr '\n' ';')"
fi
if grep -q '"complete": true' "$dir/meta.json" && grep -q '"machine": "lab 7"' "$dir/meta.json" &&
	[ "$(net_num "$dir/losses.json" declared_lost)" = 0 ]; then
	tv_ok "$T: meta.json complete, nothing declared lost"
else
	tv_fail "$T: meta.json complete, nothing declared lost" "$(head -c 300 "$dir/meta.json")"
fi
"$TV_FAKE" pt-pattern --pt 50000 >"$NET_WORK/pt.expected"
"$TV_REC" pt --cpu 0 -o "$NET_WORK/pt.from-tvt" "$dir/trace.tvt" >/dev/null 2>&1
if cmp -s "$NET_WORK/pt.expected" "$dir/cpu0.pt" && cmp -s "$NET_WORK/pt.expected" "$NET_WORK/pt.from-tvt" &&
	grep -q '"pt": \["cpu0.pt"\]' "$dir/meta.json"; then
	tv_ok "$T: PT bytes in cpu0.pt and in trace.tvt's PT chunks"
else
	tv_fail "$T: PT bytes in cpu0.pt and in trace.tvt's PT chunks" "$(ls -l "$dir" | tr '\n' ';')"
fi
