#!/usr/bin/env bash
# bochs/net-export.sh - a trace streamed live from VMX root over the
# network, end to end: Bochs 3.0 with 2 VT-x CPUs and its e1000 on slirp
# (the guest's 10.0.2.2 is the host's 127.0.0.1, as under QEMU).  The
# firmware-loaded image first runs the link self-test with lwIP (so the
# resident copy must start from pristine lwIP state, docs/ARCHITECTURE.md),
# then hides the e1000 from the guest; the resident copy drives it from
# the poll hook on the boot CPU and streams both CPUs' rings with the
# export protocol while the payload's traced window (tests/payload/
# traced.S) runs under MTF on each CPU, exactly as bochs/trace-mtf.sh does
# it - but the trace is received by `tracevisor record`, not read from the
# serial log.  The expected branches come from nm of build/payload.so and
# the load address the payload prints; the capture must hold every one of
# them on both CPUs, in order, with nothing lost.  This case runs on the
# authenticated data path (data_key = control, `record --auth`): the
# self-test and the resident exporter seal every datagram, the receiver
# opens each session only for a HELLO under the key (docs/PROTOCOL.md,
# "With a key"); the Linux case below stays on the unauthenticated path.
#
# Second case (TV_NET_EXPORT_LINUX=0 skips it; it needs the Linux
# fixture): SMP Linux boots as the guest while the trace streams.  A
# window opens at launch on each CPU (trace_start = boot) and closes after
# 2000 branches; Linux then boots with the export NIC hidden (its PCI
# listing must not show 8086:100e) while the poll hook keeps the session
# alive (~1000 preemption-timer exits per emulated second on CPU 0); the
# capture must hold both windows complete, 0 lost, and Linux must power
# off without a panic.  Until Bochs's SMP loop was fixed
# (tests/bench/patches/0001-smp-commit-prev-rip-after-longjmp.patch) a
# timer exit right after a user-mode #PF's delivery saved the faulting RIP
# with the handler's stack and Linux panicked ~7 s in; this case is the
# regression test for that fix.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
if [ -z "$(tv_dep BOCHS)" ]; then
	tv_skip "net-export" "Bochs not built (TRACEVISOR_SKIP_BOCHS set)"
	exit 0
fi
work=$TV_BUILD/test/bochs-net-export
rm -rf "$work"
mkdir -p "$work"
log=$TV_LOGS/bochs-net-export.serial.log
iterations=64   # TRACED_ITERATIONS in tests/payload/payload.c
selftest=200
trap 'tv_record_stop' EXIT

payload_case() {
	# Two sessions: the boot-time self-test and the resident exporter.
	if ! tv_record_start "$work/cap" --machines 2 --idle 5 --auth --key-hex 5ec7e7; then
		tv_fail "net-export: receiver" "tracevisor record did not start: $(tail -n 2 "$work/cap/record.stderr")"
		return
	fi
	printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' \
		'source = mtf' 'overflow = stop' 'trace_start = hypercall' \
		'nic = auto' 'net_ip = 10.0.2.15/24' 'net_gw = 10.0.2.2' \
		"receiver = 10.0.2.2:$TV_REC_PORT" "net_selftest = $selftest" 'machine = bochs' \
		'control_key = 5ec7e7' 'data_key = control' >"$work/tracevisor.conf"
	tv_image "$work/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/tracevisor.conf" \
		EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"

	rc=$(TV_BOCHS_EXTRA='e1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp' \
		tv_bochs "$log" "${TV_BOCHS_TIMEOUT:-300}" "$work/disk.img" 2)
	tv_record_stop 15
	if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then tv_ok "net-export: finished by itself"; else tv_fail "net-export: finished by itself" "timed out"; fi
	if [ "$TV_REC_RC" = 0 ]; then tv_ok "net-export: receiver closed both sessions and exited by itself"; else tv_fail "net-export: receiver closed both sessions and exited by itself" "status $TV_REC_RC"; fi
	tv_expect "net-export: source is mtf" "$log" '\[info\] trace: source mtf'
	tv_reject "net-export: no errors" "$log" '\[err\]'
	tv_expect "net-export: boot self-test over the protocol (lwIP used before the copy)" "$log" \
		"net: self-test ok: $selftest records acknowledged by 10\.0\.2\.2:$TV_REC_PORT"
	tv_expect "net-export: the e1000 hidden from the guest" "$log" 'pci: 00:[0-9a-f]{2}\.0 hidden from the guest'
	tv_expect "net-export: resident copy took the NIC" "$log" \
		'net: resident: .* at 00:[0-9a-f]{2}\.0, MAC 52:54:00:12:34:56, DMA at 0x[0-9a-f]+ \(reserved\); static address; exporting 2 CPU ring\(s\) and 0 PT stream\(s\) to 10\.0\.2\.2'
	tv_expect "net-export: network exporter in the copy" "$log" 'hv: resident copy initialised, 2 CPUs, exporter network'
	tv_expect "net-export: the data path is sealed (data_key = control)" "$log" 'net: export: authenticated data path: every datagram sealed'
	tv_reject "net-export: never unauthenticated" "$log" 'UNAUTHENTICATED'
	tv_expect "net-export: receiver reached from VMX root" "$log" 'net: export: receiver 10\.0\.2\.2:[0-9]+ reachable, streaming'
	tv_reject "net-export: nothing went over serial" "$log" 'exported [0-9]+ records over serial'
	for cpu in 0 1; do
		tv_expect "net-export: cpu $cpu: window streamed, all acknowledged, nothing lost" "$log" \
			"trace: cpu $cpu: window streamed: head [0-9]+, acked [0-9]+, sent [0-9]+, resent [0-9]+, lost 0 \(overwritten\) \+ 0 \(ring dropped\), all acknowledged"
	done

	session=$(tr -d '\r' <"$log" | sed -n 's/.*net: resident: .* session \([0-9a-f]\{16\}\), control.*/\1/p' | head -1)
	cap=$work/cap/bochs-${session:-none}
	tvt=$cap/trace.tvt
	if [ -n "$session" ] && [ -f "$tvt" ]; then
		tv_ok "net-export: capture of the resident session ($session)"
	else
		tv_fail "net-export: capture of the resident session" "session '${session:-none}', dirs: $(ls "$work/cap" | tr '\n' ' ')"
		tv_keep_log "$log"
		return
	fi

	# Where the payload ran, and the branches its window must take.
	base=$(tv_payload_base "$log")
	if [ -z "$base" ]; then
		tv_fail "net-export: payload reported its window" "no 'traced window at' line"
		tv_keep_log "$log"
		return
	fi
	expected=$work/expected.txt
	tv_payload_expected "$base" "$iterations" >"$expected"
	nexp=$(wc -l <"$expected")

	for cpu in 0 1; do
		tv_payload_check_cpu net-export "$tvt" "$cpu" "$expected" "$work"
		tv_expect "net-export: cpu $cpu: the window's engine lost nothing" "$log" \
			"trace: cpu $cpu: window 1 stopped .*: $nexp branches, 0 events, 0 filtered, 0 dropped, 0 undecodable, [0-9]+ steps; ring lost 0 records"
	done
	"$TV_BUILD/tracevisor" dump -q -s "$tvt" >"$work/summary.txt" 2>&1
	if grep -q '^lost records: 0 ' "$work/summary.txt" && grep -q '^malformed records: 0' "$work/summary.txt"; then
		tv_ok "net-export: capture: no lost or malformed records"
	else
		tv_fail "net-export: capture: no lost or malformed records" "$(grep -E '^(lost|malformed)' "$work/summary.txt" | tr '\n' ' ')"
	fi
	if python3 - "$cap" <<-'PY'
	import json, sys
	d = sys.argv[1]
	meta = json.load(open(d + "/meta.json"))
	loss = json.load(open(d + "/losses.json"))
	assert meta["complete"] is True and meta["machine"] == "bochs", meta
	assert meta["cpu_count"] == 2 and meta["trace"]["source"] == "mtf", meta["trace"]
	assert meta["cpu"]["vendor"] == "GenuineIntel", meta["cpu"]
	assert len(loss["cpus"]) == 2, loss["cpus"]
	for c in loss["cpus"]:
	    assert c["first_seq"] == 0 and c["records_received"] == c["next_seq"] > 0, c
	    assert c["declared_lost"] == 0 and c["missing_at_close"] == 0 and c["lost_records_in_stream"] == 0, c
	PY
	then
		tv_ok "net-export: meta.json (bochs, 2 CPUs, mtf, Intel) and losses.json: both streams complete from 0, 0 lost, 0 missing"
	else
		tv_fail "net-export: meta.json and losses.json" "see $cap"
	fi

	# Every perf-style command on the capture directory, each output
	# checked for what it must hold (JSON parsed back, drcov header).
	img=(--image "$(printf '%s@0x%x' "$TV_BUILD/payload.so" "$base")")
	tvcli() { "$TV_BUILD/tracevisor" "$@" 2>"$work/cli.err"; }
	if tvcli info "$cap" >"$work/info.txt" && grep -q '^cpus: 2' "$work/info.txt" &&
		[ "$(grep -c 'source mtf, .* 319 branches, 1 trace windows, .* Hz); lost 0 records' "$work/info.txt")" = 2 ]; then
		tv_ok "net-export: tracevisor info on the capture: 2 CPUs, mtf, 319 branches each, TSC rate known, 0 lost"
	else
		tv_fail "net-export: tracevisor info on the capture" "$(head -c 300 "$work/info.txt" "$work/cli.err" | tr '\n' ' ')"
	fi
	if tvcli script -q "${img[@]}" "$cap" >"$work/script.txt" &&
		[ "$(grep -c 'tv_traced+0x\|tvt_' "$work/script.txt")" -ge "$((2 * nexp))" ]; then
		tv_ok "net-export: tracevisor script: every branch of both CPUs symbolized against payload.so"
	else
		tv_fail "net-export: tracevisor script" "$(wc -l <"$work/script.txt") lines; $(head -c 200 "$work/cli.err")"
	fi
	if tvcli report -q --top 3 "${img[@]}" "$cap" >"$work/report.txt" && grep -q 'tv_traced' "$work/report.txt"; then
		tv_ok "net-export: tracevisor report: tv_traced among the hottest functions"
	else
		tv_fail "net-export: tracevisor report" "$(head -c 300 "$work/report.txt" "$work/cli.err" | tr '\n' ' ')"
	fi
	if tvcli coverage -q "${img[@]}" "$cap" -o "$work/cov.drcov" && head -c 40 "$work/cov.drcov" | grep -q '^DRCOV VERSION: 2' &&
		tvcli coverage -q --format modoff "${img[@]}" "$cap" -o "$work/cov.txt" && grep -q '^payload.so+[0-9a-f]' "$work/cov.txt"; then
		tv_ok "net-export: tracevisor coverage: drcov header and payload.so+offset blocks"
	else
		tv_fail "net-export: tracevisor coverage" "$(head -c 200 "$work/cli.err")"
	fi
	if tvcli timeline -q "${img[@]}" "$cap" -o "$work/timeline.json" &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ev=d["traceEvents"] if isinstance(d,dict) else d; assert len(ev) > 0' "$work/timeline.json"; then
		tv_ok "net-export: tracevisor timeline: valid trace-event JSON"
	else
		tv_fail "net-export: tracevisor timeline" "$(head -c 200 "$work/cli.err")"
	fi
	tv_keep_log "$log"
}

# SMP Linux as the guest while the trace streams (see the header).
linux_case() {
	local lw=$work/linux llog=$TV_LOGS/bochs-net-export-linux.serial.log rc limit=2000 lsession lcap
	if [ "${TV_NET_EXPORT_LINUX:-1}" = 0 ]; then
		tv_skip "net-export-linux" "TV_NET_EXPORT_LINUX=0"
		return
	fi
	if [ ! -f "$TV_BUILD/linuxload.efi" ] || [ ! -f "$TV_BUILD/linux/linux.env" ]; then
		tv_skip "net-export-linux" "the Linux fixture is not built (make linux-fixture)"
		return
	fi
	# shellcheck source=/dev/null
	. "$TV_BUILD/linux/linux.env"
	mkdir -p "$lw"
	if ! tv_record_start "$lw/cap" --machines 1 --idle 10; then
		tv_fail "net-export-linux: receiver" "tracevisor record did not start"
		return
	fi
	# pci=noacpi: linuxload's DSDT has no PCI root bridge (bochs/pci-hide.sh).
	printf '%s\n' "$LINUX_CMDLINE tsc_early_khz=100000 pci=noacpi" >"$lw/cmdline.txt"
	printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' \
		'source = mtf' 'overflow = stop' 'trace_start = boot' "trace_stop_after = $limit" \
		'nic = auto' 'net_ip = 10.0.2.15/24' 'net_gw = 10.0.2.2' 'heartbeat_s = 10' \
		"receiver = 10.0.2.2:$TV_REC_PORT" 'machine = bochs-linux' >"$lw/tracevisor.conf"
	TV_IMAGE_MIB=64 tv_image "$lw/disk.img" \
		EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$lw/tracevisor.conf" \
		EFI/linux/linuxload.efi="$TV_BUILD/linuxload.efi" \
		EFI/linux/vmlinuz="$LINUX_VMLINUZ" \
		EFI/linux/initrd.img="$LINUX_INITRD" \
		EFI/linux/cmdline.txt="$lw/cmdline.txt"
	rc=$(TV_BOCHS_MEGS=1024 TV_BOCHS_EXTRA='e1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp' \
		tv_bochs "$llog" "${TV_LINUX_TIMEOUT:-600}" "$lw/disk.img" 2)
	rm -f "$lw/disk.img"
	tv_record_stop 20
	if grep -q 'ACPI control: soft power off' "$llog.stdout" "$llog.bochs" 2>/dev/null; then
		tv_ok "net-export-linux: Linux booted and powered off (ACPI)"
	else
		tv_fail "net-export-linux: Linux booted and powered off (ACPI)" "bochs status $rc (124 = timeout)"
	fi
	if [ "$TV_REC_RC" = 0 ]; then tv_ok "net-export-linux: receiver closed the session and exited by itself"; else tv_fail "net-export-linux: receiver closed the session and exited by itself" "status $TV_REC_RC"; fi
	# (not 'vmx: all 2 CPUs run as guests': the copy's first poll may log into that line)
	tv_expect "net-export-linux: the AP launched" "$llog" 'vmx: cpu 1 \(APIC [0-9]+\) now runs as a guest'
	tv_expect "net-export-linux: network exporter in the copy" "$llog" 'hv: resident copy initialised, 2 CPUs, exporter network'
	tv_reject "net-export-linux: no tracevisor errors" "$llog" '\[err\]'
	tv_reject "net-export-linux: no kernel panic" "$llog" 'Kernel panic'
	tv_expect "net-export-linux: Linux listed its PCI functions" "$llog" '^TVPCI: done'
	tv_reject "net-export-linux: Linux does not see the export NIC (8086:100e)" "$llog" '^TVPCI: .* 0x8086:0x100e'
	for cpu in 0 1; do
		# The AP's window may close before the boot CPU launches and polls:
		# then it is acknowledged later, which the capture shows below.
		tv_expect "net-export-linux: cpu $cpu: window streamed, nothing lost" "$llog" \
			"trace: cpu $cpu: window streamed: .* lost 0 \(overwritten\) \+ 0 \(ring dropped\)"
	done
	tv_expect "net-export-linux: exporter status in the heartbeat period" "$llog" 'net: export status: hello acked'
	lsession=$(tr -d '\r' <"$llog" | sed -n 's/.*net: resident: .* session \([0-9a-f]\{16\}\), control.*/\1/p' | head -1)
	lcap=$lw/cap/bochs-linux-${lsession:-none}
	if [ ! -f "$lcap/trace.tvt" ]; then
		tv_fail "net-export-linux: capture of the session" "session '${lsession:-none}': $(ls "$lw/cap" | tr '\n' ' ')"
		tv_keep_log "$llog"
		return
	fi
	for cpu in 0 1; do
		"$TV_BUILD/tracevisor" dump -q --no-summary --cpu "$cpu" "$lcap/trace.tvt" >"$lw/cpu$cpu.dump" 2>&1
		if [ "$(awk '$3 == "BRANCH"' "$lw/cpu$cpu.dump" | wc -l)" = "$limit" ] &&
			[ "$(grep -c ' START .*trigger=boot' "$lw/cpu$cpu.dump")" = 1 ] &&
			[ "$(grep -c ' STOP ' "$lw/cpu$cpu.dump")" = 1 ]; then
			tv_ok "net-export-linux: cpu $cpu: one window from launch, $limit branches received"
		else
			tv_fail "net-export-linux: cpu $cpu: one window from launch, $limit branches received" \
				"$(awk '$3 == "BRANCH"' "$lw/cpu$cpu.dump" | wc -l) branches; see $lw/cpu$cpu.dump"
		fi
	done
	"$TV_BUILD/tracevisor" dump -q -s "$lcap/trace.tvt" >"$lw/summary.txt" 2>&1
	if grep -q '^lost records: 0 ' "$lw/summary.txt" && grep -q '^malformed records: 0' "$lw/summary.txt"; then
		tv_ok "net-export-linux: capture: no lost or malformed records"
	else
		tv_fail "net-export-linux: capture: no lost or malformed records" "$(grep -E '^(lost|malformed)' "$lw/summary.txt" | tr '\n' ' ')"
	fi
	tv_keep_log "$llog"
}

payload_case
linux_case
