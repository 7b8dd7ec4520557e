#!/usr/bin/env bash
# build/net-overwrite.sh - the ring overwrites records before they are
# acknowledged (OVERWRITE policy, a 4 KiB ring, bursts of 3000 records per
# CPU between two rounds of the exporter, and a receiver stopped for a
# second with SIGSTOP).  The capture's loss report must be exact:
#  1. on the plain loopback, where no datagram is lost, the records the
#     receiver can never get are exactly those the sender never sent at
#     all; the fake machine counts those itself ("unsent", from the DATA
#     datagrams it hands to the network), and losses.json must say the
#     same per CPU, and `tracevisor dump` the same total;
#  2. in both runs (the second behind a relay dropping 3%), every record
#     is either in trace.tvt or in one of losses.json's ranges, never both
#     and never neither (fake_sender verify --losses).
# The sender's own lost_overwrite may be higher: it also counts records
# that had been sent, and arrived, but were overwritten before their ACK.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: ring overwrite"
net_need "$T"
net_work overwrite
port=$(net_port 6543)
rport=$(net_port 6544)
args=(--cpus 2 --records 30000 --ring-bytes 4096 --overflow overwrite --burst 3000)

# run NAME TO EXTRA_ARGS... : sender to TO, receiver SIGSTOPped for 1 s.
run() {
	local name=$1 to=$2
	shift 2
	mkdir -p "$NET_WORK/$name"
	if ! net_receiver "$port" "$NET_WORK/$name/out" "$NET_WORK/$name-rec.log"; then
		tv_fail "$T ($name): receiver starts" "no 'listening on' line"; return 1
	fi
	net_bg timeout 180 "$TV_FAKE" send --to "$to" "${args[@]}" "$@" --pause-ms 5 \
		>"$NET_WORK/$name-send.log" 2>&1
	local sender=$NET_LAST
	sleep 0.3
	kill -STOP "$NET_REC_PID"     # nothing is acknowledged: the ring goes round
	sleep 1
	kill -CONT "$NET_REC_PID"
	net_wait_pid "$sender" 180
	local src=$NET_RC
	kill -INT "$NET_REC_PID"
	net_wait_pid "$NET_REC_PID" 30
	[ "$NET_RC" = 0 ] || tv_fail "$T ($name): receiver exits 0" "exit $NET_RC"
	if [ "$src" = 0 ] && grep -q '^done' "$NET_WORK/$name-send.log"; then
		tv_ok "$T ($name): sender finished, every record acknowledged or declared lost"
	else
		tv_fail "$T ($name): sender finished" "fake_sender exit $src"
	fi
	dir=$(sed -n 's/^capture: //p' "$NET_WORK/$name-rec.log" | head -1)
	"$TV_FAKE" verify --tvt "$dir/trace.tvt" --losses "$dir/losses.json" "${args[@]}" "$@" \
		>"$NET_WORK/$name-verify.log" 2>&1
	if grep -q '^losses match$' "$NET_WORK/$name-verify.log" &&
		[ "$(grep -c ' dup 0 bad 0 .* order 0$' "$NET_WORK/$name-verify.log")" = 2 ]; then
		tv_ok "$T ($name): loss ranges are exactly the records missing from trace.tvt"
	else
		tv_fail "$T ($name): loss ranges are exactly the records missing from trace.tvt" \
			"$(tr '\n' ';' <"$NET_WORK/$name-verify.log" | head -c 400)"
	fi
}

drops0=$(net_udp_drops)
run direct "127.0.0.1:$port" --seed 13 --session 5eed0000000000f1
drops=$(( $(net_udp_drops) - drops0 ))
# The sender's own count, per CPU: "cpu N ... unsent U".
sent=$(sed -n 's/^cpu \([0-9]*\) produced .* unsent \([0-9]*\)$/\1:\2/p' "$NET_WORK/direct-send.log" | sort | tr '\n' ' ')
got=$(net_declared_lost "$dir/losses.json" | sort | tr '\n' ' ')
total=$(sed -n 's/^cpu [0-9]* produced .* unsent \([0-9]*\)$/\1/p' "$NET_WORK/direct-send.log" | awk '{ s += $1 } END { print s + 0 }')
if [ -n "$sent" ] && [ "$sent" = "$got" ] && [ "$total" -gt 0 ]; then
	tv_ok "$T (direct): declared lost per CPU = the sender's own count ($sent)"
elif [ "$drops" != 0 ]; then
	# A datagram the kernel dropped and the ring then overwrote is lost
	# although it was sent: the sender's count no longer covers it.
	tv_skip "$T (direct): declared lost per CPU = the sender's own count" "the kernel dropped $drops datagrams (small socket buffers?)"
else
	tv_fail "$T (direct): declared lost per CPU = the sender's own count" "sender '$sent', losses.json '$got'"
fi
if [ "$(net_num "$dir/losses.json" missing_at_close)" = 0 ] &&
	grep -q 'lost (overwritten before ack): seq' "$dir/losses.txt"; then
	tv_ok "$T (direct): losses.txt lists the ranges, nothing missing at close"
else
	tv_fail "$T (direct): losses.txt lists the ranges, nothing missing at close" "$(head -c 300 "$dir/losses.txt")"
fi
"$TV_REC" dump --summary-only "$dir/trace.tvt" >"$NET_WORK/direct-dump.log" 2>&1
dl=$(sed -n 's/^lost records: \([0-9]*\) .*/\1/p' "$NET_WORK/direct-dump.log")
declared=$(net_num "$dir/losses.json" declared_lost)     # the total comes first
if [ -n "$dl" ] && [ "$dl" = "$declared" ]; then
	tv_ok "$T (direct): tracevisor dump counts the same $dl lost records"
else
	tv_fail "$T (direct): tracevisor dump counts the same lost records" "dump says '$dl', losses.json '$declared'"
fi

net_bg "$TV_RELAY" -l "127.0.0.1:$rport" -t "127.0.0.1:$port" --drop 3 --seed 9
sleep 0.2
run lossy "127.0.0.1:$rport" --seed 14 --session 5eed0000000000f2
lost=$(net_num "$dir/losses.json" declared_lost)
if [ "${lost:-0}" -gt 0 ]; then tv_ok "$T (lossy): records were lost ($lost)"; else tv_fail "$T (lossy): records were lost" "declared_lost '$lost'"; fi
