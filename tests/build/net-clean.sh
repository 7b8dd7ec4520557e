#!/usr/bin/env bash
# build/net-clean.sh - tracevisor record on a clean loopback: two CPUs of
# the fake machine (tests/net/fake_sender.c, the real net/export.c), every
# record arrives exactly once and in order, byte for byte, the capture
# directory is complete and `tracevisor dump` reads it with 0 lost.  CPU 0
# also has a PT stream (50000 bytes through an 8 KiB PT byte ring the
# exporter consumes, so the ring wraps and its space comes back only with
# the receiver's acks): every byte acknowledged and in cpu0.pt while the
# session is still open, not at close.
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
timeout 120 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" --pt 50000 --pt-ring-bytes 8192 \
	>"$NET_WORK/send.log" 2>&1
src=$?
# Before the receiver closes: what recv_close would deliver late is not there yet.
pt_open=$(stat -c %s "$NET_WORK/out/lab_7-5eed00000000c1ea/cpu0.pt" 2>/dev/null || echo none)
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
"$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${args[@]}" --pt 50000 \
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
if grep -Eq '^pt cpu 0 produced 50000 sent 50000 retransmitted [0-9]+ acked 50000 head 50000 tail 50000 gone 0$' \
	"$NET_WORK/send.log" && [ "$pt_open" = 50000 ]; then
	tv_ok "$T: PT bytes acknowledged and in cpu0.pt before the session closes"
else
	tv_fail "$T: PT bytes acknowledged and in cpu0.pt before the session closes" \
		"cpu0.pt before close: $pt_open; $(grep '^pt ' "$NET_WORK/send.log")"
fi
if grep -q '^pt cpu 0 bytes 50000 dup 0 bad 0 missing 0$' "$NET_WORK/verify.log" &&
	grep -q '^cpu0  pt: 50000 bytes in order (offsets 0\.\.50000), .* 0 dups, .* 0 missing-close$' \
		"$NET_WORK/rec.log"; then
	tv_ok "$T: PT chunks at their offsets, each byte once, none missing at close"
else
	tv_fail "$T: PT chunks at their offsets, each byte once, none missing at close" \
		"$(grep '^pt ' "$NET_WORK/verify.log"); $(grep ' pt: ' "$NET_WORK/rec.log")"
fi
