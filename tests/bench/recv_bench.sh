#!/usr/bin/env bash
# tests/bench/recv_bench.sh - ingest of `tracevisor record` against a plain
# UDP sink (socat -u UDP-RECV:port /dev/null) at the same offered load, on
# the loopback of a network namespace of its own (docs/BENCHMARKS.md,
# "Receiver ingest").  Not a test: it checks nothing.
#
# The load: `fake_sender blast` (tests/net/fake_sender.c) sends a HELLO
# and then BENCH_RECV_DGRAMS DATA datagrams of 58 branch records (1452
# bytes each, the protocol's largest) at BENCH_RECV_RATE datagrams/s
# (0: as fast as it can), ignoring ACKs, so both sinks see exactly the
# same datagrams at the same pace.  Each sink gets one run per rate.
#
# Measured per sink: datagrams it received (record: its own count; socat:
# sent minus the namespace's UDP receive-buffer drops), loss (the
# kernel's RcvbufErrors in /proc/net/snmp: datagrams dropped because the
# sink did not read them in time; the namespace is private, so nothing
# else counts there), ingest MB/s over the sender's sending time, and the
# sink's CPU time (utime + stime from /proc/PID/stat just before it is
# stopped) per MB received.  record also writes the capture (to a tmpfs
# if /dev/shm exists) and sends an ACK per datagram.
#
# Environment: BENCH_RECV_DGRAMS (default 200000), BENCH_RECV_RATES
# (default "20000 0"), BUILD (default build-recv-bench: -O2 tools built
# here).  Prints a table and "BENCH_RECV: key=value ..." lines.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
build=${BUILD:-build-recv-bench}
dgrams=${BENCH_RECV_DGRAMS:-200000}
rates=${BENCH_RECV_RATES:-20000 0}

if [ -z "${TV_BENCH_NS:-}" ]; then
	command -v socat >/dev/null || { echo "recv_bench: socat not installed (scripts/deps.sh)" >&2; exit 1; }
	make -s BUILD="$build" -j2 "$build/tracevisor" "$build/tests/net/fake_sender" >/dev/null ||
		{ echo "recv_bench: build failed" >&2; exit 1; }
	if unshare -rn true 2>/dev/null; then
		TV_BENCH_NS=1 BUILD=$build exec unshare -rn bash "$0" "$@"
	fi
	echo "recv_bench: no private network namespace; using the host's loopback (loss counts are shared)" >&2
	TV_BENCH_NS=host
fi
[ "$TV_BENCH_NS" = 1 ] && ip link set lo up
work=$root/$build/bench/recv
rm -rf "$work"
mkdir -p "$work"
out=$work/captures
[ -d /dev/shm ] && out=$(mktemp -d /dev/shm/tv-recv-bench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ "$out" != "$work/captures" ] && rm -rf "$out"
}
trap cleanup EXIT
port=$((30000 + RANDOM % 10000))
hz=$(getconf CLK_TCK)

rcvbuf_errors() {
	awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) n[$i] = i; h = 1 } else print $n["RcvbufErrors"] }' /proc/net/snmp
}
cpu_s() {   # PID: utime + stime in seconds
	awk -v hz="$hz" '{ sub(/.*\) /, ""); printf "%.3f", ($12 + $13) / hz }' "/proc/$1/stat"
}

# run SINK RATE: prints "received bytes loss cpu_s seconds"
run() {
	local sink=$1 rate=$2 port=$3 pid e0 e1 cpu recv bytes secs log=$work/$1-$2
	if [ "$sink" = record ]; then
		"$build/tracevisor" record -l "127.0.0.1:$port" -o "$out" --rcvbuf 4194304 \
			>"$log.out" 2>"$log.err" &
	else
		socat -u "UDP-RECV:$port,bind=127.0.0.1,rcvbuf=4194304" /dev/null 2>"$log.err" &
	fi
	pid=$!
	trap "kill $pid 2>/dev/null" EXIT   # run is a subshell: its own trap
	sleep 0.5
	e0=$(rcvbuf_errors)
	timeout 300 "$build/tests/net/fake_sender" blast --to "127.0.0.1:$port" --datagrams "$dgrams" \
		--rate "$rate" --session "$(printf '%x' $((RANDOM + 1)))" >"$log.send" 2>&1
	sleep 1    # let the sink drain its buffer
	e1=$(rcvbuf_errors)
	cpu=$(cpu_s "$pid")
	kill -INT "$pid"
	wait "$pid" 2>/dev/null
	secs=$(sed -n 's/.* seconds \([0-9.]*\) .*/\1/p' "$log.send")
	bytes=$(sed -n 's/.* bytes \([0-9]*\) seconds.*/\1/p' "$log.send")
	if [ "$sink" = record ]; then
		# Its own count; the kernel's drop counter also counts the ACKs
		# the blaster never reads.
		recv=$(sed -n 's/^receiver: \([0-9]*\) datagrams.*/\1/p' "$log.out")
		recv=$((recv - 1))   # the HELLO
	else
		recv=$((dgrams - (e1 - e0)))
	fi
	echo "$recv $((bytes / dgrams)) $((dgrams - recv)) $cpu $secs $(sed -n 's/.* rate \([0-9]*\) dgram.*/\1/p' "$log.send")"
}

printf '%-8s %10s %10s %10s %12s %8s %8s %10s\n' sink "rate/s" "sent/s" received "ingest MB/s" "loss %" "cpu s" "cpu s/MB"
declare -A res
for rate in $rates; do
	for sink in socat record; do
		port=$((port + 1))
		read -r recv per loss cpu secs offered < <(run "$sink" "$rate" "$port")
		mb=$(awk -v r="$recv" -v p="$per" 'BEGIN { printf "%.1f", r * p / 1e6 }')
		mbs=$(awk -v m="$mb" -v s="$secs" 'BEGIN { printf "%.1f", (s > 0 ? m / s : 0) }')
		lossp=$(awk -v l="$loss" -v d="$dgrams" 'BEGIN { printf "%.2f", 100 * l / d }')
		cpmb=$(awk -v c="$cpu" -v m="$mb" 'BEGIN { printf "%.4f", (m > 0 ? c / m : 0) }')
		printf '%-8s %10s %10s %10s %12s %8s %8s %10s\n' "$sink" "${rate/#0/max}" "$offered" "$recv" "$mbs" "$lossp" "$cpu" "$cpmb"
		res[$sink-$rate]="ingest_mbs=$mbs sent_per_s=$offered received=$recv loss_pct=$lossp cpu_s=$cpu cpu_s_per_mb=$cpmb"
	done
	r=$(awk -v a="${res[record-$rate]#*ingest_mbs=}" -v b="${res[socat-$rate]#*ingest_mbs=}" \
		'BEGIN { split(a, x, " "); split(b, y, " "); printf "%.2f", (y[1] > 0 ? x[1] / y[1] : 0) }')
	echo "BENCH_RECV: rate=${rate/#0/max} datagrams=$dgrams record_vs_socat_ingest=$r record ${res[record-$rate]} socat ${res[socat-$rate]}"
done
