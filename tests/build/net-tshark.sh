#!/usr/bin/env bash
# build/net-tshark.sh - the Wireshark dissector
# (host-tools/wireshark/tracevisor.lua) under tshark, on a pcap the test
# records itself: the impairment relay writes every datagram it delivers
# between the fake machine and `tracevisor record` (an overwriting ring
# and 10% drop, so LOSS and NACK ranges occur; --start with a key, so
# CONTROL and CONTROL_REPLY occur; 30000 PT bytes, about 24 PT datagrams,
# so a drop among them gives NACK ranges on every run).  Every message
# type the run produced is decoded with the right fields, the PT FIRST
# flag on the stream's first datagram, and every CRC checks out.
set -uo pipefail
. "$(dirname "$0")/../net/lib.sh"
net_enter "$@"
T="net: tshark dissector"
net_need "$T"
if ! command -v tshark >/dev/null; then
	tv_skip "$T" "tshark not installed"; exit 0
fi
net_work tshark
lua=$TV_ROOT/host-tools/wireshark/tracevisor.lua
port=$(net_port 6543)
rport=$(net_port 6544)
key=000102030405060708090a0b0c0d0e0f
args=(--cpus 2 --records 4000 --seed 16 --session 5eed0000000075a4 --ring-bytes 4096
	--overflow overwrite --burst 1500 --machine tshark-box)

if ! net_receiver "$port" "$NET_WORK/out" "$NET_WORK/rec.log" --key-hex "$key" --start all; then
	tv_fail "$T: receiver starts" "no 'listening on' line"; exit 0
fi
net_bg "$TV_RELAY" -l "127.0.0.1:$rport" -t "127.0.0.1:$port" --drop 10 --seed 3 \
	--pcap "$NET_WORK/run.pcap"
relay=$NET_LAST
sleep 0.2
# --linger 3: the receiver resends START every 0.5 s until the reply gets
# through the lossy relay; the machine must still be there to answer.
timeout 120 "$TV_FAKE" send --to "127.0.0.1:$rport" "${args[@]}" --key-hex "$key" --pt 30000 --linger 3 \
	--pause-ms 20 >"$NET_WORK/send.log" 2>&1
kill -INT "$relay"
net_wait_pid "$relay" 10
kill -INT "$NET_REC_PID"
net_wait_pid "$NET_REC_PID" 30

fields=(-e tracevisor.type -e tracevisor.session -e tracevisor.cpu -e tracevisor.crc_ok
	-e tracevisor.hello.machine -e tracevisor.data.first_seq -e tracevisor.data.count
	-e tracevisor.ack.cum -e tracevisor.ack.nranges -e tracevisor.hb.produced
	-e tracevisor.loss.count -e tracevisor.ctl.op -e tracevisor.reply.status
	-e tracevisor.hello_ack.seq -e tracevisor.pt.offset -e tracevisor.pt.first)
HOME=$NET_WORK timeout 120 tshark -n -X "lua_script:$lua" -r "$NET_WORK/run.pcap" -T fields \
	-E separator=/t -E occurrence=f "${fields[@]}" >"$NET_WORK/fields.txt" 2>"$NET_WORK/tshark.log"
trc=$?
total=$(wc -l <"$NET_WORK/fields.txt")
if [ "$trc" = 0 ] && [ "$total" -gt 0 ]; then
	tv_ok "$T: tshark reads the run's pcap ($total datagrams)"
else
	tv_fail "$T: tshark reads the run's pcap" "exit $trc: $(head -3 "$NET_WORK/tshark.log")"
	exit 0
fi
# Every line decoded: a type, our session, a good CRC.
bad=$(awk -F'\t' '$1 == "" || $2 != "0x5eed0000000075a4" || $4 != "1"' "$NET_WORK/fields.txt" | wc -l)
if [ "$bad" = 0 ]; then
	tv_ok "$T: every datagram decoded, session and CRC right"
else
	tv_fail "$T: every datagram decoded, session and CRC right" "$bad lines: $(awk -F'\t' '$4 != "1"' "$NET_WORK/fields.txt" | head -2 | tr '\t\n' ' ;')"
fi
# type -> the field that must be filled for it.
check() {   # NAME TYPE COLUMN REGEX
	local n
	n=$(awk -F'\t' -v t="$2" -v c="$3" -v re="$4" '$1 == t && $c ~ re' "$NET_WORK/fields.txt" | wc -l)
	if [ "$n" -gt 0 ]; then
		tv_ok "$T: $1 decoded ($n)"
	else
		tv_fail "$T: $1 decoded" "no type-$2 datagram with column $3 ~ /$4/"
	fi
}
check "HELLO with the machine name" 1 5 '^tshark-box$'
check "HELLO_ACK" 2 14 '^[0-9]+$'
check "DATA with cpu, first seq and count" 3 7 '^[1-9][0-9]*$'
check "ACK with a cumulative ack" 5 8 '^[0-9]+$'
check "ACK with NACK ranges" 5 9 '^[1-9]'
check "PT with its stream offset" 4 15 '^[0-9]+$'
# The PT stream's first datagram carries FIRST (the receiver acked the
# stream, so it came through the relay), and only that one.
n=$(awk -F'\t' '$1 == 4 && $16 == "1" { print $15 }' "$NET_WORK/fields.txt" | sort -u | tr '\n' ' ')
if [ "$n" = "0 " ]; then
	tv_ok "$T: PT FIRST flag decoded, on offset 0 only"
else
	tv_fail "$T: PT FIRST flag decoded, on offset 0 only" "offsets with FIRST: '$n'"
fi
check "HEARTBEAT with counters" 6 10 '^[0-9]+$'
check "LOSS with a count" 7 11 '^[1-9]'
check "CONTROL START" 8 12 '^1$'
check "CONTROL_REPLY status applied" 9 13 '^0$'
# DATA of both CPUs, and the first seq of CPU 1's DATA grows.
if [ "$(awk -F'\t' '$1 == 3 { print $3 }' "$NET_WORK/fields.txt" | sort -u | tr '\n' ' ')" = "0 1 " ]; then
	tv_ok "$T: DATA of cpu 0 and cpu 1"
else
	tv_fail "$T: DATA of cpu 0 and cpu 1" "cpus: $(awk -F'\t' '$1 == 3 { print $3 }' "$NET_WORK/fields.txt" | sort -u | tr '\n' ' ')"
fi
# The dissector's CRC check can fail: a datagram with one bit flipped.
HOME=$NET_WORK timeout 60 tshark -n -X "lua_script:$lua" -r "$NET_WORK/run.pcap" -c 1 -F pcap -w "$NET_WORK/one.pcap" 2>/dev/null
printf '\x55' | dd of="$NET_WORK/one.pcap" bs=1 seek=$((24 + 16 + 28 + 30)) conv=notrunc 2>/dev/null
ok=$(HOME=$NET_WORK timeout 60 tshark -n -X "lua_script:$lua" -r "$NET_WORK/one.pcap" -T fields -e tracevisor.crc_ok 2>/dev/null)
if [ "$ok" = 0 ]; then tv_ok "$T: a corrupted datagram shows a bad CRC"; else tv_fail "$T: a corrupted datagram shows a bad CRC" "crc_ok '$ok'"; fi
