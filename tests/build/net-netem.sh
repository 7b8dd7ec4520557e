#!/usr/bin/env bash
# build/net-netem.sh - the impairment scenario again, with the kernel's
# netem qdisc on the namespace's loopback instead of the user-space relay
# (5% loss, 2% duplication, reordering): zero records lost.  Skipped where
# the sch_netem module is missing ("Specified qdisc kind is unknown").
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: netem 5% loss, 2% dup, reorder"
net_need "$T"
if [ "$TV_NET_NS" != 1 ]; then
	tv_skip "$T" "no private network namespace (unshare -rn refused)"; exit 0
fi
if ! command -v tc >/dev/null; then
	tv_skip "$T" "tc not installed"; exit 0
fi
if ! err=$(tc qdisc add dev lo root netem loss 5% duplicate 2% delay 2ms reorder 25% 50% 2>&1); then
	tv_skip "$T" "netem qdisc unavailable ($err)"; exit 0
fi
net_work netem
port=$(net_port 6543)
args=(--cpus 2 --records 20000 --seed 17 --session 5eed00000000e7e3)
if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log"; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
timeout 180 "$TV_FAKE" send --to "127.0.0.1:$port" "${args[@]}" >"$NET_WORK/send.log" 2>&1
src=$?
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30
dir=$(sed -n 's/^capture: //p' "$NET_WORK/rec.log" | head -1)
"$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${args[@]}" \
	>"$NET_WORK/verify.log" 2>&1
if [ "$src" = 0 ] && [ "$(grep -c 'records 20000 dup 0 bad 0 missing 0 .* order 0$' "$NET_WORK/verify.log")" = 2 ]; then
	tv_ok "$T: zero records lost"
else
	tv_fail "$T: zero records lost" "sender exit $src; $(tr '\n' ';' <"$NET_WORK/verify.log" | head -c 300)"
fi
nacks=$(net_num "$dir/losses.json" retransmit_requests)
if [ "${nacks:-0}" -gt 0 ]; then tv_ok "$T: retransmit requests > 0"; else tv_fail "$T: retransmit requests > 0" "$nacks"; fi
