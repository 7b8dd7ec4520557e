#!/usr/bin/env bash
# build/net-multi.sh - several traced machines at once: three fake
# machines (different session ids and names, one of them behind a lossy
# relay) stream to one `tracevisor record --machines 3 --idle 2`, which
# writes three capture directories, each complete and exact, and exits by
# itself once the three sessions have gone quiet.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: three machines"
net_need "$T"
net_work multi
port=$(net_port 6543)
rport=$(net_port 6544)
common=(--cpus 2 --records 15000)

if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log" --machines 3 --idle 2; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
net_bg "$TV_RELAY" -l "127.0.0.1:$rport" -t "127.0.0.1:$port" --drop 5 --seed 4
pids=()
for m in 1 2 3; do
	to=127.0.0.1:$port
	[ "$m" = 3 ] && to=127.0.0.1:$rport
	net_bg timeout 120 "$TV_FAKE" send --to "$to" "${common[@]}" --seed "2$m" \
		--session "5eed00000000aa0$m" --machine "box-$m" >"$NET_WORK/send-$m.log" 2>&1
	pids+=("$NET_LAST")
done
ok=0
for p in "${pids[@]}"; do
	net_wait_pid "$p" 120
	[ "$NET_RC" = 0 ] && ok=$((ok + 1))
done
if [ "$ok" = 3 ]; then tv_ok "$T: every sender saw all its records acknowledged"; else tv_fail "$T: every sender saw all its records acknowledged" "$ok of 3"; fi
# No signal: the receiver stops by itself after the three sessions idled.
if net_wait_pid "$NET_REC_PID" 30 && [ "$NET_RC" = 0 ]; then
	tv_ok "$T: receiver exits by itself (--machines 3 --idle 2)"
else
	tv_fail "$T: receiver exits by itself (--machines 3 --idle 2)" "exit $NET_RC"
fi
for m in 1 2 3; do
	dir=$NET_WORK/out/box-$m-5eed00000000aa0$m
	"$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${common[@]}" \
		--seed "2$m" >"$NET_WORK/verify-$m.log" 2>&1
	if [ "$(grep -c 'records 15000 dup 0 bad 0 missing 0 .* order 0$' "$NET_WORK/verify-$m.log")" = 2 ] &&
		grep -q '"complete": true' "$dir/meta.json"; then
		tv_ok "$T: box-$m's capture is complete and exact"
	else
		tv_fail "$T: box-$m's capture is complete and exact" "$(tr '\n' ';' <"$NET_WORK/verify-$m.log" | head -c 200)"
	fi
done
n=$(grep -c '^capture: ' "$NET_WORK/rec.log")
[ "$n" = 3 ] || tv_fail "$T: three capture lines" "$n"
