#!/usr/bin/env bash
# build/net-hostile.sh - an attacker on the receiver's network (issue 20,
# docs/PROTOCOL.md "Threat model"), against `tracevisor record` (ASan) with
# the real exporter (fake_sender send) beside it; `fake_sender hostile`
# builds valid datagrams from docs/PROTOCOL.md:
#  1. lock-out: 8 made-up sessions' HEARTBEATs, refreshed, while a real
#     machine starts with --machines 1 --idle 1: the machine gets in, its
#     capture is whole, and the run ends with its session (not a forged one);
#     cpuN.pt of 4 x 256 PT streams under `ulimit -n 256` (fds bounded);
#  2. poisoning: with the real session id, from another port, a HELLO
#     naming "evil", a LOSS of 2^40 records and a forged CONTROL_REPLY:
#     the capture keeps its name, loses nothing, no reply is printed, the
#     forger hears nothing, `fake_sender verify` is quick;
#  3. reflection: what comes back to a source is at most 3x what it sent;
#  4. a machine name with terminal escapes is printed escaped.
# 127.0.0.1 or a namespace of its own; every process bounded by timeout.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: hostile"
net_need "$T"
net_work hostile
port=$(net_port 6543)
key=00112233445566778899aabbccddeeff

# ---- 1: lock-out and file descriptors ---------------------------------------------------
args=(--cpus 2 --records 4000 --seed 21 --session 5eed0000000001a1 --machine real --pt 20000)
(ulimit -n 256; exec "$TV_REC" record -l "127.0.0.1:$port" -o "$NET_WORK/out1" \
	--status-interval 1 --machines 1 --idle 1 >"$NET_WORK/rec1.log" 2>"$NET_WORK/rec1.log.err") &
NET_PIDS+=("$!")
NET_REC_PID=$!
if ! net_wait_file "$NET_WORK/rec1.log.err" 'listening on' 10; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
net_bg timeout 30 "$TV_FAKE" hostile --attack lockout --to "127.0.0.1:$port" --timeout 8 \
	>"$NET_WORK/lockout.log" 2>&1
timeout 20 "$TV_FAKE" hostile --attack ptfd --to "127.0.0.1:$port" >"$NET_WORK/ptfd.log" 2>&1
sleep 0.5
timeout 60 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" --rate 20000 \
	>"$NET_WORK/send1.log" 2>&1
src=$?
net_wait_pid "$NET_REC_PID" 30
rrc=$NET_RC
dir=$(sed -n 's/^capture: \(.*real-5eed0000000001a1\)$/\1/p' "$NET_WORK/rec1.log" | head -1)
if [ "$src" = 0 ] && [ -n "$dir" ] && [ "$rrc" = 0 ]; then
	tv_ok "$T: 8 forged sessions do not lock a machine out; --machines 1 ends with it"
else
	tv_fail "$T: 8 forged sessions do not lock a machine out" "sender exit $src, receiver exit $rrc, capture '$dir': $(grep -E '^(rejected|capture)' "$NET_WORK/rec1.log" | tr '\n' ';')"
fi
if [ -n "$dir" ] && timeout 60 "$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" \
	"${args[@]}" >"$NET_WORK/verify1.log" 2>&1 &&
	! grep -q 'capture write error' "$NET_WORK/rec1.log"; then
	tv_ok "$T: its capture is whole (records, PT) with 1,024 PT streams open elsewhere under ulimit -n 256"
else
	tv_fail "$T: its capture is whole under ulimit -n 256" "$(grep -E 'write error|missing|bad' "$NET_WORK/rec1.log" "$NET_WORK/verify1.log" 2>/dev/null | head -3 | tr '\n' ';')"
fi

# ---- 2: poisoning with the session id ------------------------------------------------------
args=(--cpus 1 --records 20000 --seed 22 --session 5eed0000000002b2 --machine good --key-hex "$key")
if ! net_receiver "$port" "$NET_WORK/out2" "$NET_WORK/rec2.log" --key-hex "$key" --start all; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
net_bg timeout 60 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" --rate 10000 \
	>"$NET_WORK/send2.log" 2>&1
sender=$NET_LAST
net_wait_file "$NET_WORK/rec2.log.err" 'new session 5eed0000000002b2' 10
sleep 0.3
timeout 20 "$TV_FAKE" hostile --attack poison --session 5eed0000000002b2 --to "127.0.0.1:$port" \
	>"$NET_WORK/poison.log" 2>&1
net_wait_pid "$sender" 60
src=$NET_RC
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
dir=$(sed -n 's/^capture: //p' "$NET_WORK/rec2.log" | head -1)
t0=$(date +%s)
timeout 60 "$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${args[@]}" \
	>"$NET_WORK/verify2.log" 2>&1
vrc=$?
t1=$(date +%s)
if [ "$src" = 0 ] && [ "$vrc" = 0 ] && [ "$(basename "$dir")" = good-5eed0000000002b2 ] &&
	grep -q '"declared_lost": 0,' "$dir/losses.json" && grep -q '"source": "mtf"' "$dir/meta.json"; then
	tv_ok "$T: a forged HELLO and LOSS 2^40 with the real id change nothing (name, source, records)"
else
	tv_fail "$T: forged HELLO and LOSS change nothing" "sender $src, verify $vrc, dir $dir: $(head -c 300 "$NET_WORK/verify2.log" | tr '\n' ';')"
fi
if ! grep -q 'counter 12345' "$NET_WORK/rec2.log.err" && grep -q 'poison sent 9 back 0$' "$NET_WORK/poison.log" &&
	grep -Eq 'foreign=[1-9]' "$NET_WORK/rec2.log"; then
	tv_ok "$T: the forged CONTROL_REPLY is not taken, the forger hears nothing ($(grep -o 'foreign=[0-9]*' "$NET_WORK/rec2.log"))"
else
	tv_fail "$T: the forged CONTROL_REPLY is not taken" "$(grep -h 'counter 12345\|poison\|^rejected' "$NET_WORK/rec2.log.err" "$NET_WORK/poison.log" "$NET_WORK/rec2.log" | tr '\n' ';')"
fi
if [ $((t1 - t0)) -le 30 ]; then
	tv_ok "$T: fake_sender verify of the attacked capture is bounded ($((t1 - t0)) s)"
else
	tv_fail "$T: fake_sender verify is bounded" "$((t1 - t0)) s"
fi

# ---- 3: reflection, 4: names -----------------------------------------------------------------
name=$'ev\e[2J\e]0;x\ail\rX'
if ! net_receiver "$port" "$NET_WORK/out3" "$NET_WORK/rec3.log" --key-hex "$key" --start all --idle 1; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
timeout 20 "$TV_FAKE" hostile --attack reflect --session a3a3 --to "127.0.0.1:$port" \
	>"$NET_WORK/reflect.log" 2>&1
read -r _ _ ds db _ hs hb <<<"$(sed -n 's/^reflect data sent \([0-9]*\) back \([0-9]*\) hello sent \([0-9]*\) back \([0-9]*\)$/x x \1 \2 x \3 \4/p' "$NET_WORK/reflect.log")"
if [ -n "${db:-}" ] && [ "$db" -gt 0 ] && [ "$db" -le $((3 * ds)) ] && [ "$hb" -le $((3 * hs)) ]; then
	tv_ok "$T: no amplification: DATA $ds bytes -> $db back, HELLO (with --start) $hs -> $hb"
else
	tv_fail "$T: no amplification" "$(cat "$NET_WORK/reflect.log")"
fi
timeout 60 "$TV_FAKE" send --to "127.0.0.1:$port" --cpus 1 --records 200 --session 5eed0000000003c3 \
	--machine "$name" >"$NET_WORK/send3.log" 2>&1
sleep 1.5
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
dir=$(sed -n 's/^capture: \(.*5eed0000000003c3\)$/\1/p' "$NET_WORK/rec3.log" | head -1)
if [ -n "$dir" ] && ! LC_ALL=C grep -q $'[\e\a\r]' "$NET_WORK/rec3.log" "$dir/losses.txt" &&
	grep -q 'machine "ev\\x1b\[2J' "$NET_WORK/rec3.log"; then
	tv_ok "$T: a machine name with ESC/BEL/CR is escaped in record's summary and losses.txt"
else
	tv_fail "$T: machine names escaped" "$(grep -a 'machine' "$NET_WORK/rec3.log" | head -2 | cat -v)"
fi
for f in "$NET_WORK"/rec*.log.err; do
	if grep -Eq 'ERROR: AddressSanitizer|runtime error' "$f"; then
		tv_fail "$T: no sanitizer report" "$(grep -Em1 'ERROR|runtime error' "$f")"
	fi
done
