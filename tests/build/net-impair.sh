#!/usr/bin/env bash
# build/net-impair.sh - tracevisor record behind the impairment relay
# (tests/net/udp_relay.c: 5% drop, 2% duplicate, 5% reorder, both ways,
# seeded): zero records lost, every one once and in order, and the
# receiver did ask for retransmissions.  CPU 0's PT stream (300000 bytes
# through a 16 KiB PT byte ring) comes through the same relay: resent,
# acknowledged, and cpu0.pt is the pattern byte for byte.  The relay
# stands in for netem, which build/net-netem.sh uses where the qdisc
# exists.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: 5% drop, 2% dup, reorder"
net_need "$T"
net_work impair
port=$(net_port 6543)
rport=$(net_port 6544)
args=(--cpus 2 --records 20000 --seed 12 --session 5eed00000000d0d0)

if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log"; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
net_bg "$TV_RELAY" -l "127.0.0.1:$rport" -t "127.0.0.1:$port" --drop 5 --dup 2 --reorder 5 \
	--seed 7 --stats "$NET_WORK/relay.stats" --pcap "$NET_WORK/relay.pcap"
relay=$NET_LAST
sleep 0.2
timeout 180 "$TV_FAKE" send --to "127.0.0.1:$rport" "${args[@]}" --pt 300000 --pt-ring-bytes 16384 \
	>"$NET_WORK/send.log" 2>&1
src=$?
kill -INT "$relay"
net_wait_pid "$relay" 10
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
if [ "$src" = 0 ] && grep -q '^done' "$NET_WORK/send.log"; then
	tv_ok "$T: sender saw every record acknowledged"
else
	tv_fail "$T: sender saw every record acknowledged" "fake_sender exit $src"
fi
[ "$NET_RC" = 0 ] || tv_fail "$T: receiver exits 0" "exit $NET_RC"
read -r _ _ _ _ up_drop _ up_dup _ up_re <"$NET_WORK/relay.stats" || true
if [ "${up_drop:-0}" -gt 0 ] && [ "${up_dup:-0}" -gt 0 ] && [ "${up_re:-0}" -gt 0 ]; then
	tv_ok "$T: the relay dropped, duplicated and reordered ($(head -1 "$NET_WORK/relay.stats"))"
else
	tv_fail "$T: the relay dropped, duplicated and reordered" "$(tr '\n' ';' <"$NET_WORK/relay.stats")"
fi
dir=$(sed -n 's/^capture: //p' "$NET_WORK/rec.log" | head -1)
"$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${args[@]}" --pt 300000 \
	>"$NET_WORK/verify.log" 2>&1
vrc=$?
if [ "$vrc" = 0 ] && [ "$(grep -c 'records 20000 dup 0 bad 0 missing 0 .* order 0$' "$NET_WORK/verify.log")" = 2 ]; then
	tv_ok "$T: zero records lost, each once, in order"
else
	tv_fail "$T: zero records lost, each once, in order" "$(tr '\n' ';' <"$NET_WORK/verify.log" | head -c 300)"
fi
nacks=$(net_num "$dir/losses.json" retransmit_requests)
dups=$(tr -d "\n" <"$dir/losses.json" | grep -o "\"duplicates\": [0-9]*" | awk "{ s += \$2 } END { print s + 0 }")
if [ "${nacks:-0}" -gt 0 ] && [ "$(net_num "$dir/losses.json" declared_lost)" = 0 ]; then
	tv_ok "$T: retransmit requests > 0 (cpu0 $nacks, duplicates seen $dups), nothing declared lost"
else
	tv_fail "$T: retransmit requests > 0, nothing declared lost" "$(head -c 400 "$dir/losses.txt")"
fi
"$TV_REC" dump --summary-only "$dir/trace.tvt" >"$NET_WORK/dump.log" 2>&1
if grep -q '^lost records: 0 ' "$NET_WORK/dump.log"; then
	tv_ok "$T: tracevisor dump: 0 lost"
else
	tv_fail "$T: tracevisor dump: 0 lost" "$(grep lost "$NET_WORK/dump.log" | head -2)"
fi
"$TV_FAKE" pt-pattern --pt 300000 >"$NET_WORK/pt.expected"
if cmp -s "$NET_WORK/pt.expected" "$dir/cpu0.pt" &&
	grep -q '^pt cpu 0 bytes 300000 dup 0 bad 0 missing 0$' "$NET_WORK/verify.log" &&
	grep -Eq '^pt cpu 0 produced 300000 sent 300000 retransmitted [1-9][0-9]* acked 300000 .* gone 0$' \
		"$NET_WORK/send.log"; then
	tv_ok "$T: PT stream resent and acknowledged, cpu0.pt and the PT chunks are the pattern ($(grep '^pt ' "$NET_WORK/send.log" | cut -d' ' -f8-9))"
else
	tv_fail "$T: PT stream resent and acknowledged, cpu0.pt and the PT chunks are the pattern" \
		"$(grep '^pt ' "$NET_WORK/send.log"); $(grep '^pt ' "$NET_WORK/verify.log"); $(ls -l "$dir/cpu0.pt" 2>&1)"
fi
