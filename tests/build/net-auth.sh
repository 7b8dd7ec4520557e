#!/usr/bin/env bash
# build/net-auth.sh - the authenticated data path end to end
# (docs/PROTOCOL.md, "With a key"): the fake machine (the real
# net/export.c with a data key, tests/net/fake_sender.c) sealing every
# datagram to `tracevisor record --auth --key-hex`, while an attacker on
# the path (--tamper 7: every 7th datagram each way) replays it, forges
# it (a byte changed, the CRC made right again) and sends it unsealed.
# Every record and PT byte arrives once, in order, byte for byte; the
# receiver counts exactly what was added (replayed, bad-tag, unsealed) and
# the machine exactly what was added on its side; nothing else changed.
# A machine with another key, and one unsealed, open no session at all;
# `tracevisor control` (unsealed, its HMAC) still steers a sealed machine.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: sealed data path"
net_need "$T"
net_work auth
port=$(net_port 6543)
key=5ec2e75ec2e75ec2e75ec2e75ec2e7aa
# Paced (--rate): the exact counts below need every datagram delivered.
args=(--cpus 2 --records 20000 --seed 21 --session 5eed000000005ea1 --rate 40000)

if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log" --auth --key-hex "$key"; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
drops0=$(net_udp_drops)
timeout 120 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" --pt 50000 --pt-ring-bytes 8192 \
	--key-hex "$key" --data-key-hex "$key" --tamper 7 >"$NET_WORK/send.log" 2>&1
src=$?
# Another key, then no key at all: neither may open a session.
timeout 20 "$TV_FAKE" send --to "127.0.0.1:$port" --cpus 1 --records 100 --session 5eed00000000bad1 \
	--data-key-hex 00112233445566778899aabbccddeeff --timeout 2.5 >"$NET_WORK/wrong.log" 2>&1
wrc=$?
timeout 20 "$TV_FAKE" send --to "127.0.0.1:$port" --cpus 1 --records 100 --session 5eed00000000bad2 \
	--timeout 1.5 >"$NET_WORK/plain.log" 2>&1
prc=$?
# A sealed machine steered by `tracevisor control` from elsewhere: its CONTROL
# has no trailer (no session key there), its HMAC is the check; the reply
# goes sealed to the receiver.
cargs=(--cpus 2 --records 45000 --seed 22 --session 5eed00000000c7a1 --rate 15000)
net_bg timeout 60 "$TV_FAKE" send --to "127.0.0.1:$port" "${cargs[@]}" --key-hex "$key" \
	--data-key-hex "$key" >"$NET_WORK/ctl-send.log" 2>&1
csender=$NET_LAST
cdir=$NET_WORK/out/fake-5eed00000000c7a1
for _ in $(seq 100); do [ -s "$cdir/meta.json" ] && break; sleep 0.1; done
"$TV_REC" control --capture "$cdir" --key-hex "$key" marker 0x5ea1 "sealed machine" \
	>"$NET_WORK/control.log" 2>&1
crc=$?
net_wait_pid "$csender" 60
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
drops=$(( $(net_udp_drops) - drops0 ))
dir=$NET_WORK/out/fake-5eed000000005ea1
if [ "$src" = 0 ] && grep -q '^done' "$NET_WORK/send.log" && grep -q '^sealed: verified 1 ' "$NET_WORK/send.log"; then
	tv_ok "$T: the receiver proved the key (HELLO_ACK verified), every record and PT byte acknowledged"
else
	tv_fail "$T: handshake and every record acknowledged" "exit $src: $(grep -E '^(sealed|done|timeout)' "$NET_WORK/send.log" | tr '\n' ';')"
fi
"$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${args[@]}" --pt 50000 \
	>"$NET_WORK/verify.log" 2>&1
vrc=$?
if [ "$vrc" = 0 ] && [ "$(grep -c 'records 20000 dup 0 bad 0 missing 0 .* order 0$' "$NET_WORK/verify.log")" = 2 ] &&
	grep -q '^pt cpu 0 bytes 50000 dup 0 bad 0 missing 0$' "$NET_WORK/verify.log" &&
	cmp -s <("$TV_FAKE" pt-pattern --pt 50000) "$dir/cpu0.pt"; then
	tv_ok "$T: forged and replayed datagrams changed nothing: every record once, in order, byte for byte; PT intact"
else
	tv_fail "$T: the capture is exactly what was sent" "$(tr '\n' ';' <"$NET_WORK/verify.log" | head -c 300)"
fi
# What the attacker added towards the receiver, and what the receiver counted.
out=$(sed -n 's/.*tampered out replayed \([0-9]*\) forged \([0-9]*\) unsealed \([0-9]*\);.*/\1 \2 \3/p' "$NET_WORK/send.log")
read -r t_rep t_forged t_uns <<<"${out:-x x x}"
summary=$(grep '^authenticated data path:' "$NET_WORK/rec.log")
# The wrong-key machine's HELLOs are bad tags too, every datagram of the unsealed one unsealed.
n_wrong=$(sed -n 's/^datagrams \([0-9]*\) .*/\1/p' "$NET_WORK/wrong.log")
n_plain=$(sed -n 's/^datagrams \([0-9]*\) .*/\1/p' "$NET_WORK/plain.log")
if [ "$drops" != 0 ]; then
	tv_skip "$T: receiver counted exactly what was added" "the kernel dropped $drops datagrams: counts cannot be exact"
elif [ "${t_rep:-0}" -ge 50 ] && [ "${n_wrong:-0}" -gt 0 ] && [ "${n_plain:-0}" -gt 0 ] &&
	[ "$summary" = "authenticated data path: unsealed=$((t_uns + n_plain)) bad-tag=$((t_forged + n_wrong)) replayed=$t_rep" ]; then
	tv_ok "$T: receiver counted exactly what was added: $t_rep replayed, $t_forged forged (+ $n_wrong HELLOs under another key), $t_uns unsealed (+ $n_plain of the unsealed machine)"
else
	tv_fail "$T: receiver counted exactly what was added" "added $t_rep/$t_forged/$t_uns, other machines $n_wrong/$n_plain; '$summary'"
fi
out=$(sed -n 's/^sealed: verified 1 bad_tag \([0-9]*\) replay \([0-9]*\) unsealed \([0-9]*\); .*tampered in \([0-9]*\): refused replayed \([0-9]*\) forged \([0-9]*\) unsealed \([0-9]*\)$/\1 \2 \3 \4 \5 \6 \7/p' "$NET_WORK/send.log")
read -r m_bad m_rep m_uns i_n i_rep i_forged i_uns <<<"${out:-x x x y y y y}"
# Each of i_n ACKs replayed, forged and unsealed: all 3 i_n refused, each counted once.
if [ "${i_n:-0}" -gt 0 ] && [ "$i_rep" = "$i_n" ] && [ "$i_forged" = "$i_n" ] && [ "$i_uns" = "$i_n" ] &&
	[ "$m_rep" = "$i_n" ] && [ "$m_bad" = "$i_n" ] && [ "$m_uns" = "$i_n" ] &&
	grep -q " ctl_bad_auth $i_n\$" "$NET_WORK/send.log"; then
	tv_ok "$T: the machine refused and counted each of $i_n ACKs replayed, forged and unsealed (heartbeat's ctl_bad_auth $i_n)"
else
	tv_fail "$T: the machine refused and counted every tampered ACK" "$(grep -E '^(sealed|datagrams)' "$NET_WORK/send.log" | tr '\n' ';')"
fi
# The other key's machine never got an answer it could verify; the unsealed one none at all.
if [ "$wrc" != 0 ] && grep -q '^sealed: verified 0 ' "$NET_WORK/wrong.log" && [ "$prc" != 0 ] &&
	[ ! -e "$NET_WORK/out/fake-5eed00000000bad1" ] && [ ! -e "$NET_WORK/out/fake-5eed00000000bad2" ] &&
	! grep -q 'new session 5eed00000000bad' "$NET_WORK/rec.log.err"; then
	tv_ok "$T: a machine with another key, and an unsealed one, open no session"
else
	tv_fail "$T: another key or no key opens no session" "exit $wrc/$prc; $(ls "$NET_WORK/out" | tr '\n' ' ')"
fi
"$TV_REC" dump "$cdir/trace.tvt" >"$NET_WORK/ctl-dump.log" 2>&1
if [ "$crc" = 0 ] && grep -q 'control_applied 1 ctl_bad_auth 0$' "$NET_WORK/ctl-send.log" &&
	grep -q '^done' "$NET_WORK/ctl-send.log" &&
	grep -q 'control marker (counter [0-9]*) applied' "$NET_WORK/rec.log.err" &&
	[ "$(grep -c 'MARKER.*0x5ea1.*sealed machine' "$NET_WORK/ctl-dump.log")" = 2 ]; then
	tv_ok "$T: tracevisor control (unsealed, its HMAC) steers a sealed machine; the sealed reply reaches record"
else
	tv_fail "$T: tracevisor control steers a sealed machine" "exit $crc: $(grep -E '^(datagrams|done|timeout)' "$NET_WORK/ctl-send.log" | tr '\n' ';') $(grep -c 'MARKER.*0x5ea1' "$NET_WORK/ctl-dump.log") markers"
fi
exit 0
