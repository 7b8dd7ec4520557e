#!/usr/bin/env bash
# bochs/trace-pt.sh - the Intel PT backend in the running hypervisor,
# checked against ground truth on Bochs with our trace-hardware model
# (tests/bench/bochs-patches 0003 + 0004, docs/BOCHS-MODEL.md "Intel PT",
# `cpu: pt=1`: PT usable in VMX operation, "load IA32_RTIT_CTL" on entry and
# "clear IA32_RTIT_CTL" on exit).
#
# The payload window of bochs/trace-bts.sh (tests/payload/traced.S, 64
# iterations, interrupts off, on both CPUs), its branches computed from
# `nm` of build/payload.so and the load address the payload prints
# (tests/lib.sh tv_payload_expected), never from what tracevisor says:
#   - source = pt: the CPU writes raw PT into the ToPA regions in reserved
#     memory only while the guest runs (TraceEn loaded on every entry of
#     the window, cleared on every exit), tracevisor drains them at every
#     exit into the CPU's PT stream, the serial exporter sends it as P
#     lines, `tracevisor from-serial` rebuilds the .tvt and libipt
#     (`tracevisor pt-decode --branches`) decodes it over payload.so: every
#     expected branch, one for one and in order, from, to and kind, on both
#     CPUs, no decode error, nothing lost (the stop line's counts, PT_SYNC);
#   - the same over the network (TV_TRACE_PT_NET=0 skips it): the model's
#     e1000 on slirp, the resident copy streaming both CPUs' PT streams
#     (docs/PROTOCOL.md, PT) to `tracevisor record` on 127.0.0.1; the raw
#     cpuN.pt files of the capture decode to the same branches, every byte
#     acknowledged, nothing missing;
#   - stock Bochs (no model): source = pt is refused at boot with the
#     missing feature named, and the payload's start hypercall says ENOSYS.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
tv_model_bochs trace-pt || exit 0
model=$TV_MODEL
if ! grep -q 'Model a subset of Intel Processor Trace' "$model"; then
	tv_skip "trace-pt" "$model has no cpu: pt option (patch 0003 not applied)"
	exit 0
fi
work=$TV_BUILD/test/bochs-trace-pt
mkdir -p "$work"
iterations=64   # TRACED_ITERATIONS in tests/payload/payload.c

# run BOCHS EXTRA SECS NAME: boot tracevisor + payload with source=pt
# under BOCHS; sets log to the serial log's path.
run() {
	log=$TV_LOGS/bochs-trace-pt-$4.serial.log
	tv_payload_run "trace-pt: $4" pt "$1" "$2" "$3" "$work/$4" "$log"
}

# --- pt on the model -------------------------------------------------------------
name=pt
run "$model" "cpu: pt=1" 180 $name
tv_expect "trace-pt: source is pt" "$log" '\[info\] trace: source pt'
tv_reject "trace-pt: no errors" "$log" '\[err\]'
tv_expect "trace-pt: PT areas reserved, hidden from the guest" "$log" \
	'vmx: PT area per CPU: [0-9]+ KiB \(4 x 64 KiB ToPA regions, 1024 KiB stream ring\) from 0x[0-9a-f]+, hidden from the guest'
for cpu in 0 1; do
	tv_expect "trace-pt: cpu $cpu: PT found (multi-entry ToPA)" "$log" \
		"trace: cpu $cpu: Intel PT, ToPA multi-entry, [0-9]+ address ranges"
	tv_expect "trace-pt: cpu $cpu: records and PT bytes exported over serial" "$log" \
		"trace: cpu $cpu: exported [1-9][0-9]* PT bytes over serial \\(stream offsets 0\\.\\."
	tv_expect "trace-pt: cpu $cpu: stop line: nothing stopped, refused or lost" "$log" \
		"trace: cpu $cpu: window 1 stopped \\(hypercall\\): [1-9][0-9]* PT bytes \\(stream at [0-9]+\\), [1-9][0-9]* drains, 0 stops, 0 errors, 0 bad pointers, 0 bytes refused, 0 drain failures, PT lost 0; ring lost 0 records"
done
tvt=$work/$name/trace.tvt
tv_from_serial_2cpu trace-pt "$log" "$tvt"
base=$(tv_payload_base "$log")
if [ -z "$base" ]; then
	tv_fail "trace-pt: payload reported its window" "no 'traced window at' line"
	tv_keep_log "$log"
	exit 0
fi
# libipt's instruction classes: direct and indirect jumps and calls alike.
expected=$work/expected.txt
tv_payload_expected "$base" "$iterations" |
	awk '{ k = $3; sub(/-ind$/, "", k); print $1, $2, k }' >"$expected"
nexp=$(wc -l <"$expected")
for cpu in 0 1; do
	out=$work/$name/cpu$cpu.branches
	got=$work/$name/cpu$cpu.txt
	"$TV_BUILD/tracevisor" pt-decode "$tvt" --cpu "$cpu" --elf "$TV_BUILD/payload.so@$base" \
		--branches --no-symbols >"$out" 2>"$out.err"
	awk '!/^\[/ && $2 == "->" { print $1, $3, $4 }' "$out" >"$got"
	n=$(wc -l <"$got")
	if [ "$n" -gt 0 ] && diff -u "$expected" "$got" >"$work/$name/cpu$cpu.diff"; then
		tv_ok "trace-pt: cpu $cpu: libipt decodes all $nexp branches as expected, in order, from, to and kind"
	else
		tv_fail "trace-pt: cpu $cpu: libipt decodes all $nexp branches as expected, in order, from, to and kind" \
			"$n decoded; first difference: $(grep -m2 '^[-+][^-+]' "$work/$name/cpu$cpu.diff" | tr '\n' ' ')"
	fi
	if grep -q '^\[error' "$out"; then
		tv_fail "trace-pt: cpu $cpu: no decode error" "$(grep -m1 '^\[error' "$out")"
	else
		tv_ok "trace-pt: cpu $cpu: no decode error"
	fi
	# The raw stream for libipt's own tools (tracevisor pt), decoded again.
	raw=$work/$name/cpu$cpu.pt
	if "$TV_BUILD/tracevisor" pt "$tvt" --cpu "$cpu" -o "$raw" 2>"$raw.err" &&
		"$TV_BUILD/tracevisor" pt-decode --raw "$raw" --elf "$TV_BUILD/payload.so@$base" \
			--branches --no-symbols 2>/dev/null |
		awk '!/^\[/ && $2 == "->" { print $1, $3, $4 }' | cmp -s - "$got" &&
		! grep -q '^gap' "$raw.err"; then
		tv_ok "trace-pt: cpu $cpu: tracevisor pt: one gap-free raw stream, decoding to the same branches"
	else
		tv_fail "trace-pt: cpu $cpu: tracevisor pt: one gap-free raw stream, decoding to the same branches" \
			"$(tr '\n' ' ' <"$raw.err")"
	fi
	dump=$work/$name/cpu$cpu.dump
	"$TV_BUILD/tracevisor" dump -q --no-summary --cpu "$cpu" "$tvt" >"$dump" 2>&1
	if [ "$(grep -c ' START .*trigger=hypercall' "$dump")" = 1 ] &&
		[ "$(grep -c ' STOP .*trigger=hypercall' "$dump")" = 1 ]; then
		tv_ok "trace-pt: cpu $cpu: one window, START and STOP by hypercall"
	else
		tv_fail "trace-pt: cpu $cpu: one window, START and STOP by hypercall" "see $dump"
	fi
	syncs=$(grep -c ' PT_SYNC ' "$dump")
	if [ "$syncs" -gt 0 ] && ! grep ' PT_SYNC ' "$dump" | grep -qv 'pt_lost=0\( \|$\)'; then
		tv_ok "trace-pt: cpu $cpu: $syncs PT_SYNC records, none with PT lost"
	else
		tv_fail "trace-pt: cpu $cpu: PT_SYNC records, none with PT lost" "$(grep -m2 ' PT_SYNC ' "$dump" | tr '\n' ' ')"
	fi
done
# The perf-style commands decode PT themselves when given the code (--image).
tv_payload_expected "$base" "$iterations" >"$work/expected-kinds.txt"
for cpu in 0 1; do
	"$TV_BUILD/tracevisor" script -q --no-symbols --cpu "$cpu" --image "$TV_BUILD/payload.so@$base" "$tvt" \
		2>"$work/$name/script$cpu.err" | awk '$5 == "=>" && / pt@/ { print $4, $6, $3 }' >"$work/$name/script$cpu.txt"
	if [ -s "$work/$name/script$cpu.txt" ] && cmp -s "$work/expected-kinds.txt" "$work/$name/script$cpu.txt"; then
		tv_ok "trace-pt: cpu $cpu: tracevisor script decodes the PT to all $nexp branches, kinds included (direct/indirect)"
	else
		tv_fail "trace-pt: cpu $cpu: tracevisor script decodes the PT to all $nexp branches" \
			"$(diff "$work/expected-kinds.txt" "$work/$name/script$cpu.txt" | head -3 | tr '\n' ' ') $(head -c 200 "$work/$name/script$cpu.err")"
	fi
done
if "$TV_BUILD/tracevisor" coverage -q --format modoff --image "$TV_BUILD/payload.so@$base" "$tvt" \
	-o "$work/$name/cov.txt" 2>"$work/$name/cov.err" &&
	leaf=$(nm "$TV_BUILD/payload.so" | awk '$3 == "tvt_leaf_a" { sub(/^0+/, "", $1); print $1 }') &&
	grep -qx "payload.so+$leaf" "$work/$name/cov.txt"; then
	tv_ok "trace-pt: tracevisor coverage from PT: payload.so blocks, tvt_leaf_a among them"
else
	tv_fail "trace-pt: tracevisor coverage from PT" "$(head -c 300 "$work/$name/cov.txt" "$work/$name/cov.err" | tr '\n' ' ')"
fi
if "$TV_BUILD/tracevisor" info "$tvt" >"$work/$name/info.txt" 2>&1 &&
	[ "$(grep -cE '^cpu[01]: .*pt [1-9][0-9]* bytes \(lost 0 in gaps, 0 before first chunk, 0 per PT_SYNC\)' "$work/$name/info.txt")" = 2 ]; then
	tv_ok "trace-pt: tracevisor info: both CPUs' PT streams, nothing lost"
else
	tv_fail "trace-pt: tracevisor info: both CPUs' PT streams, nothing lost" "$(tr '\n' ' ' <"$work/$name/info.txt")"
fi
tv_keep_log "$log"

# --- pt over the network ------------------------------------------------------------
net_case() {
	local dir=$work/net nlog=$TV_LOGS/bochs-trace-pt-net.serial.log rc session cap cpu got nbase nexpected
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! tv_record_start "$dir/cap" --machines 1 --idle 5; then
		tv_fail "trace-pt-net: receiver" "tracevisor record did not start: $(tail -n 2 "$dir/cap/record.stderr")"
		return
	fi
	printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' \
		'source = pt' 'overflow = stop' 'trace_start = hypercall' \
		'nic = auto' 'net_ip = 10.0.2.15/24' 'net_gw = 10.0.2.2' \
		"receiver = 10.0.2.2:$TV_REC_PORT" 'machine = bochs' >"$dir/tracevisor.conf"
	tv_image "$dir/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$dir/tracevisor.conf" \
		EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
	rc=$(TV_BOCHS_BIN=$model TV_BOCHS_EXTRA='cpu: pt=1
e1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp' tv_bochs "$nlog" 300 "$dir/disk.img" 2)
	tv_record_stop 15
	if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "trace-pt-net: finished by itself"; else tv_fail "trace-pt-net: finished by itself" "timed out"; fi
	tv_reject "trace-pt-net: no errors" "$nlog" '\[err\]'
	tv_expect "trace-pt-net: resident copy streams 2 rings and 2 PT streams" "$nlog" \
		'net: resident: .* exporting 2 CPU ring\(s\) and 2 PT stream\(s\) to 10\.0\.2\.2'
	tv_reject "trace-pt-net: nothing went over serial" "$nlog" 'over serial'
	for cpu in 0 1; do
		if tr -d '\r' <"$nlog" | grep -E "net: export window: cpu $cpu: PT stream: head [1-9][0-9]*, acked [0-9]+," |
			awk '{ for (i = 1; i < NF; i++) { if ($i == "head") h = $(i + 1); if ($i == "acked") a = $(i + 1) } } END { exit !(h != "" && h == a) }'; then
			tv_ok "trace-pt-net: cpu $cpu: every PT byte of the window acknowledged"
		else
			tv_fail "trace-pt-net: cpu $cpu: every PT byte of the window acknowledged" \
				"$(tr -d '\r' <"$nlog" | grep -m1 "cpu $cpu: PT stream")"
		fi
	done
	session=$(tr -d '\r' <"$nlog" | sed -n 's/.*net: resident: .* session \([0-9a-f]\{16\}\), control.*/\1/p' | head -1)
	cap=$dir/cap/bochs-${session:-none}
	# Where the payload ran in this boot (the NIC's DMA memory moves it).
	nbase=$(tv_payload_base "$nlog")
	nexpected=$dir/expected.txt
	if [ -n "$nbase" ]; then
		tv_payload_expected "$nbase" "$iterations" |
			awk '{ k = $3; sub(/-ind$/, "", k); print $1, $2, k }' >"$nexpected"
	else
		: >"$nexpected"
	fi
	for cpu in 0 1; do
		got=$dir/cpu$cpu.txt
		if [ -f "$cap/cpu$cpu.pt" ]; then
			"$TV_BUILD/tracevisor" pt-decode --raw "$cap/cpu$cpu.pt" --elf "$TV_BUILD/payload.so@${nbase:-0}" \
				--branches --no-symbols 2>"$got.err" | awk '!/^\[/ && $2 == "->" { print $1, $3, $4 }' >"$got"
		else
			: >"$got"
		fi
		if [ -s "$got" ] && [ -s "$nexpected" ] && diff -u "$nexpected" "$got" >"$got.diff"; then
			tv_ok "trace-pt-net: cpu $cpu: received cpu$cpu.pt decodes to all $nexp branches, in order"
		else
			tv_fail "trace-pt-net: cpu $cpu: received cpu$cpu.pt decodes to all $nexp branches, in order" \
				"$(wc -l <"$got") decoded; $(ls "$dir/cap" | tr '\n' ' '); $(grep -m2 '^[-+][^-+]' "$got.diff" 2>/dev/null | tr '\n' ' ')"
		fi
	done
	if python3 - "$cap" <<-'PY'
	import json, sys
	loss = json.load(open(sys.argv[1] + "/losses.json"))
	cpus = loss["cpus"]
	assert len(cpus) == 2, cpus
	for c in cpus:
	    assert c["missing_at_close"] == 0 and c["declared_lost"] == 0, c
	    for k, v in c.items():
	        if k.startswith("pt_") and ("gap" in k or "missing" in k or "lost" in k):
	            assert v == 0, (k, c)
	PY
	then
		tv_ok "trace-pt-net: losses.json: nothing missing or lost, records or PT"
	else
		tv_fail "trace-pt-net: losses.json: nothing missing or lost, records or PT" "see $cap/losses.json"
	fi
	tv_keep_log "$nlog"
}
if [ "${TV_TRACE_PT_NET:-1}" != 0 ]; then
	trap 'tv_record_stop' EXIT
	net_case
fi

# --- stock Bochs: pt is impossible, and says so -----------------------------------
stock=$(tv_dep BOCHS)
if [ -z "$stock" ] || [ ! -x "$stock" ]; then
	tv_skip "trace-pt: stock" "stock Bochs not built"
	exit 0
fi
name=stock
run "$stock" "" 180 $name
tv_expect "trace-pt: stock: source=pt refused at boot, Intel PT named" "$log" \
	'\[err\] trace: source=pt not possible on this CPU: .*Intel PT'
tv_reject "trace-pt: stock: no window opened" "$log" 'trace: cpu [0-9]+: window [0-9]+ started'
tv_reject "trace-pt: stock: no PT area reserved" "$log" 'PT area per CPU'
# TV_HC_ENOSYS (-38) as the payload prints it
tv_expect "trace-pt: stock: the payload's start hypercall answered ENOSYS" "$log" \
	'TRACEVISOR-PAYLOAD: cpu 0: traced window at 0x[0-9a-f]+, 64 iterations: status 0xffffffffffffffda'
tv_keep_log "$log"
