# shellcheck shell=bash
# tests/net/lib.sh - shared by the receiver scenarios tests/build/net-*.sh.
#
# Each scenario runs in a network namespace of its own (unshare -rn, made
# and thrown away by the scenario), so its UDP ports, its loopback and its
# /proc/net/snmp counters are private; where unshare is refused it runs on
# the host's 127.0.0.1 with ports from the ephemeral range.  Every process
# it starts is killed by the EXIT trap; every wait has a timeout.

. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
TV_FAILED=0

# net_enter "$@" - first line of a scenario: re-run it in a new namespace.
net_enter() {
	if [ -z "${TV_NET_NS:-}" ]; then
		if unshare -rn true 2>/dev/null; then
			TV_NET_NS=1 exec unshare -rn bash "$0" "$@"
		fi
		TV_NET_NS=host
	fi
	if [ "$TV_NET_NS" = 1 ]; then
		ip link set lo up 2>/dev/null || true
	fi
}

# Tools; net_need NAME prints a skip line and exits when one is missing.
TV_REC=$TV_BUILD/host/tracevisor-asan
[ -x "$TV_REC" ] || TV_REC=$TV_BUILD/tracevisor
TV_FAKE=$TV_BUILD/tests/net/fake_sender
TV_RELAY=$TV_BUILD/tests/net/udp_relay
net_need() {
	local t
	for t in "$TV_REC" "$TV_FAKE" "$TV_RELAY"; do
		if [ ! -x "$t" ]; then
			tv_skip "$1" "$(basename "$t") not built (make BUILD=... unit)"
			exit 0
		fi
	done
}

# A scratch directory per scenario, emptied first.
net_work() {
	NET_WORK=$TV_BUILD/test/net/$1
	rm -rf "$NET_WORK"
	mkdir -p "$NET_WORK"
}

# Ports: fixed inside our own namespace; random high ones on the host.
net_port() {
	if [ "$TV_NET_NS" = 1 ]; then
		echo "$1"
	else
		echo $((20000 + RANDOM % 20000))
	fi
}

NET_PIDS=()
net_cleanup() {
	local p
	for p in "${NET_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${NET_PIDS[@]}"; do
		# A process that ignores SIGTERM gets SIGKILL after 5 s.
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	if [ "${TV_FAILED:-0}" != 0 ] && [ -n "${NET_WORK:-}" ]; then
		echo "---- logs kept in $NET_WORK ----"
		for p in "$NET_WORK"/*.log; do
			[ -f "$p" ] || continue
			echo "---- tail of $(basename "$p") ----"
			tail -n 15 "$p" | sed 's/^/| /'
		done
	fi
}
trap net_cleanup EXIT

# net_bg CMD... - start a process in the background, remember its pid.
net_bg() {
	"$@" &
	NET_PIDS+=("$!")
	NET_LAST=$!
}

# net_wait_file FILE REGEX SECONDS - until FILE has a line matching REGEX.
net_wait_file() {
	local i
	for i in $(seq $((${3} * 10))); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# net_wait_pid PID SECONDS - until PID exits; its status in NET_RC (124: still running).
net_wait_pid() {
	local i
	for i in $(seq $((${2} * 10))); do
		if ! kill -0 "$1" 2>/dev/null; then
			wait "$1"
			NET_RC=$?
			return 0
		fi
		sleep 0.1
	done
	NET_RC=124
	return 1
}

# net_receiver PORT OUTDIR LOG [ARGS] - start `tracevisor record`, wait until it listens.
net_receiver() {
	local port=$1 out=$2 log=$3
	shift 3
	net_bg "$TV_REC" record -l "127.0.0.1:$port" -o "$out" --status-interval 1 "$@" \
		>"$log" 2>"$log.err"
	NET_REC_PID=$NET_LAST
	net_wait_file "$log.err" 'listening on' 10
}

# net_num FILE KEY - the first number after "KEY": in a JSON file we wrote.
net_num() {
	tr -d '\n' <"$1" | grep -o "\"$2\": [0-9]*" | head -1 | sed 's/.*: //'
}

# net_declared_lost LOSSES_JSON - "cpu:declared_lost" per CPU, one a line.
net_declared_lost() {
	tr -d '\n' <"$1" | grep -o '"cpu": [0-9]*, "records_received"[^}]*"declared_lost": [0-9]*' |
		sed 's/"cpu": \([0-9]*\),.*"declared_lost": \([0-9]*\)$/\1:\2/'
}

# net_udp_drops - the namespace's UDP RcvbufErrors (datagrams the kernel
# dropped because a socket's buffer was full).
net_udp_drops() {
	awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) n[$i] = i; h = 1 } else print $n["RcvbufErrors"] }' /proc/net/snmp
}
