#!/usr/bin/env bash
# build/net-garbage.sh - bad datagrams at the receiver (random bytes,
# short, bad magic, bad CRC, wrong version, truncated, oversized, session
# 0, bad record tiling, and ACK / HELLO_ACK / forged CONTROL that only a
# receiver sends) while a real session streams: the receiver (built with
# ASan + UBSan) keeps running, counts every one of them, opens no session
# for them, and the real capture is intact.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: garbage datagrams"
net_need "$T"
net_work garbage
port=$(net_port 6543)
args=(--cpus 1 --records 20000 --seed 14 --session 5eed00000000ba0d)
n=600

if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log"; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
net_bg timeout 120 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" --rate 20000 \
	>"$NET_WORK/send.log" 2>&1
sender=$NET_LAST
timeout 60 "$TV_FAKE" garbage --to "127.0.0.1:$port" --count "$n" --seed 5 >"$NET_WORK/garbage.log" 2>&1
grc=$?
net_wait_pid "$sender" 120
src=$NET_RC
if kill -0 "$NET_REC_PID" 2>/dev/null; then
	tv_ok "$T: receiver still running after $n bad datagrams"
else
	tv_fail "$T: receiver still running after $n bad datagrams" "it exited"
fi
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
[ "$NET_RC" = 0 ] || tv_fail "$T: receiver exits 0" "exit $NET_RC"
[ "$grc" = 0 ] || tv_fail "$T: garbage sent" "fake_sender garbage exit $grc"
rej=$(sed -n 's/^rejected: \([0-9]*\).*/\1/p' "$NET_WORK/rec.log")
if [ "$rej" = "$n" ]; then
	tv_ok "$T: every one counted ($(sed -n 's/^rejected: //p' "$NET_WORK/rec.log"))"
else
	tv_fail "$T: every one counted" "sent $n, receiver says '$rej': $(grep -E '^(rejected|receiver)' "$NET_WORK/rec.log" | tr '\n' ';')"
fi
ndirs=$(find "$NET_WORK/out" -mindepth 1 -maxdepth 1 -type d | wc -l)
if [ "$ndirs" = 1 ] && grep -q 'receiver: .* 1 session,' "$NET_WORK/rec.log"; then
	tv_ok "$T: no session opened for them"
else
	tv_fail "$T: no session opened for them" "$ndirs capture directories"
fi
dir=$(sed -n 's/^capture: //p' "$NET_WORK/rec.log" | head -1)
"$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${args[@]}" \
	>"$NET_WORK/verify.log" 2>&1
if [ "$src" = 0 ] && grep -q 'records 20000 dup 0 bad 0 missing 0 .* order 0$' "$NET_WORK/verify.log"; then
	tv_ok "$T: the real session's capture is intact"
else
	tv_fail "$T: the real session's capture is intact" "sender exit $src; $(tr '\n' ';' <"$NET_WORK/verify.log" | head -c 300)"
fi
if grep -Eq 'ERROR: AddressSanitizer|runtime error' "$NET_WORK/rec.log.err"; then
	tv_fail "$T: no sanitizer report" "$(grep -Em1 'ERROR|runtime error' "$NET_WORK/rec.log.err")"
fi
