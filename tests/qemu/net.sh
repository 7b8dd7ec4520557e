#!/usr/bin/env bash
# qemu/net.sh - the link self-test through the export protocol, per NIC
# model (e1000 = 82540EM, e1000e = 82574L, virtio-net-pci = legacy virtio-net): tracevisor
# selects the NIC, disconnects OVMF from it, gets a DHCP lease from QEMU's
# slirp, fills a ring of its own with net_selftest deterministic branch
# records (trace_append_branch) and exports them with net/export.c through
# its own driver and lwIP to 10.0.2.2:PORT, which slirp delivers to
# `tracevisor record` on the host's 127.0.0.1:PORT; tracevisor waits until
# the receiver has acknowledged every record.  The capture is then checked
# record for record against the pattern computed here (docs/NET.md, "Link
# self-test"), not against anything tracevisor says: count, sequence
# numbers, from/to/kind of each, nothing lost; and the same session id at
# both ends.  The NIC is quiesced and the payload chainloaded (clean
# power-off).  No VT-x under TCG: this is the firmware-loaded image's
# network, the same code the resident copy runs (bochs/net-export.sh).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
RECORDS=${TV_NET_RECORDS:-5000}
work=$TV_BUILD/test/qemu-net
mkdir -p "$work"
trap 'tv_record_stop' EXIT

# The pattern (boot/net_boot.c, selftest_fill): record i is a branch from
# 0x100000 + 64 i to from + 16 + 8 (i mod 5), kind jcc/jmp/call/ret by i mod 4.
expected=$work/expected.txt
awk -v n="$RECORDS" 'BEGIN {
	split("jcc jmp call ret", k, " ")
	for (i = 0; i < n; i++) {
		from = 1048576 + 64 * i
		printf "%d 0x%x 0x%x %s\n", i, from, from + 16 + 8 * (i % 5), k[i % 4 + 1]
	}
}' >"$expected"

run_model() {
	local model=$1 log=$TV_LOGS/qemu-net-$1.serial.log dir=$work/$1 rc=0 cap session tvt
	rm -rf "$dir"
	mkdir -p "$dir"
	if ! tv_record_start "$dir/cap" --machines 1 --idle 3; then
		tv_fail "qemu-net-$model: receiver" "tracevisor record did not start: $(tail -n 2 "$dir/cap/record.stderr" 2>/dev/null)"
		return
	fi
	cat >"$dir/tracevisor.conf" <<CONF
# qemu/net.sh: link self-test over $model
nic = auto
net_ip = dhcp
receiver = 10.0.2.2:$TV_REC_PORT
net_selftest = $RECORDS
machine = qemu-$model
control_key = 000102030405060708090a0b0c0d0e0f
CONF
	tv_image "$dir/stick.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$dir/tracevisor.conf"
	tv_image "$dir/disk2.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/payload.efi"
	rm -f "$log"
	timeout --kill-after=5 120 qemu-system-x86_64 -machine q35 -m 256 -cpu max \
		-bios "$(tv_dep OVMF_FD)" -nographic -no-reboot \
		-device qemu-xhci \
		-drive if=none,id=stick,format=raw,file="$dir/stick.img" \
		-device usb-storage,drive=stick,bootindex=0 \
		-drive if=none,id=disk2,format=raw,file="$dir/disk2.img" \
		-device virtio-blk-pci,drive=disk2,bootindex=1 \
		-netdev user,id=n0 -device "$model",netdev=n0,romfile= \
		-serial file:"$log" -monitor none -display none \
		</dev/null >"$log.stdout" 2>&1 || rc=$?
	# --machines 1 --idle 3: the receiver closes the session and exits by itself.
	tv_record_stop 15

	if [ "$rc" = 0 ]; then tv_ok "qemu-net-$model: clean power-off"; else tv_fail "qemu-net-$model: clean power-off" "qemu exit status $rc (124 = timeout)"; fi
	if [ "$TV_REC_RC" = 0 ]; then tv_ok "qemu-net-$model: receiver closed the session and exited by itself"; else tv_fail "qemu-net-$model: receiver closed the session and exited by itself" "status $TV_REC_RC"; fi
	tv_expect "qemu-net-$model: NIC found" "$log" "net: .* at [0-9a-f]{2}:[0-9a-f]{2}\.[0-7], driver (e1000|virtio-net), MAC 52:54:00:12:34:56"
	case $model in
	e1000) tv_expect "qemu-net-$model: the 82540EM" "$log" 'net: 82540EM \(8086:100e\)' ;;
	e1000e) tv_expect "qemu-net-$model: the 82574L" "$log" 'net: 82574L \(8086:10d3\)' ;;
	esac
	tv_expect "qemu-net-$model: firmware disconnected" "$log" 'net: firmware drivers disconnected from'
	tv_expect "qemu-net-$model: DHCP lease" "$log" 'net: address 10\.0\.2\.[0-9]+ \(DHCP\)'
	tv_expect "qemu-net-$model: self-test ok: every record acknowledged (tracevisor)" "$log" \
		"net: self-test ok: $RECORDS records acknowledged by 10\.0\.2\.2:$TV_REC_PORT"
	tv_expect "qemu-net-$model: NIC quiesced" "$log" 'net: .* quiesced \(reset, bus mastering off\)'
	tv_reject "qemu-net-$model: no errors" "$log" '\[err\]'
	tv_expect "qemu-net-$model: payload ran after" "$log" 'TRACEVISOR-PAYLOAD-OK'

	# The capture: one session directory, named by the HELLO's machine and session.
	session=$(tr -d '\r' <"$log" | sed -n 's/.*net: self-test ok: .* session \([0-9a-f]\{16\}\),.*/\1/p' | head -1)
	cap=$dir/cap/qemu-$model-${session:-none}
	tvt=$cap/trace.tvt
	if [ -n "$session" ] && [ -f "$tvt" ] && [ "$(find "$dir/cap" -mindepth 1 -maxdepth 1 -type d | wc -l)" = 1 ]; then
		tv_ok "qemu-net-$model: one capture, same session at both ends ($session)"
	else
		tv_fail "qemu-net-$model: one capture, same session at both ends" "session '${session:-none}', dirs: $(ls "$dir/cap" | tr '\n' ' ')"
		tv_keep_log "$log"
		return
	fi
	"$TV_BUILD/tracevisor" dump -q --no-summary --cpu 0 "$tvt" >"$dir/dump.txt" 2>&1
	awk '$3 == "BRANCH" { print $1, $4, $6, $7 }' "$dir/dump.txt" >"$dir/got.txt"
	if diff -u "$expected" "$dir/got.txt" >"$dir/diff.txt"; then
		tv_ok "qemu-net-$model: capture: all $RECORDS records, sequence 0..$((RECORDS - 1)), every payload as generated"
	else
		tv_fail "qemu-net-$model: capture: all $RECORDS records as generated" \
			"$(grep -c . "$dir/got.txt") received; first difference: $(grep -m2 '^[-+][^-+]' "$dir/diff.txt" | tr '\n' ' ')"
	fi
	if [ "$(awk '$1 ~ /^[0-9]+$/ && $3 != "BRANCH"' "$dir/dump.txt" | wc -l)" = 0 ]; then
		tv_ok "qemu-net-$model: capture: nothing but the branches"
	else
		tv_fail "qemu-net-$model: capture: nothing but the branches" "$(awk '$1 ~ /^[0-9]+$/ && $3 != "BRANCH"' "$dir/dump.txt" | head -2 | tr '\n' ' ')"
	fi
	"$TV_BUILD/tracevisor" dump -q -s "$tvt" >"$dir/summary.txt" 2>&1
	if grep -q '^lost records: 0 ' "$dir/summary.txt" && grep -q '^malformed records: 0' "$dir/summary.txt"; then
		tv_ok "qemu-net-$model: capture: 0 lost, 0 malformed"
	else
		tv_fail "qemu-net-$model: capture: 0 lost, 0 malformed" "$(grep -E '^(lost|malformed)' "$dir/summary.txt" | tr '\n' ' ')"
	fi
	# The HELLO's CPU is the one the banner describes (CPUID.1 display values).
	cpuline=$(tr -d '\r' <"$log" | sed -n 's/.*\[info\] cpu: \([A-Za-z]*\) family \([0-9]*\) .* model \([0-9]*\) .* stepping \([0-9]*\).*/\1 \2 \3 \4/p' | head -1)
	if python3 - "$cap" "$RECORDS" "qemu-$model" "$cpuline" <<'PY'
import json, sys
d, n, machine = sys.argv[1], int(sys.argv[2]), sys.argv[3]
vendor, fam, model, step = sys.argv[4].split()
meta = json.load(open(d + "/meta.json"))
loss = json.load(open(d + "/losses.json"))
assert meta["complete"] is True and meta["hello_received"] is True, "meta: not complete"
assert meta["machine"] == machine, "meta: machine %r" % meta["machine"]
c = meta["cpu"]
assert (c["vendor"], c["family"], c["model"], c["stepping"]) == (vendor, int(fam), int(model), int(step)), "meta: cpu %r" % c
assert meta["cpu_count"] == 1 and meta["trace"]["overflow"] == "stop", "meta: trace %r" % meta["trace"]
assert meta["trace"]["control_key"] is True, "meta: the control key is not announced"
assert meta["tsc_hz"] > 0, "meta: tsc_hz"
assert meta["sender_version"].startswith("0."), "meta: sender_version"
assert len(loss["cpus"]) == 1, "losses: %d cpus" % len(loss["cpus"])
c0 = loss["cpus"][0]
want = {"records_received": n, "first_seq": 0, "next_seq": n, "declared_lost": 0,
        "missing_at_close": 0, "lost_records_in_stream": 0}
for k, v in want.items():
    assert c0[k] == v, "losses: %s = %r, not %r" % (k, c0[k], v)
assert loss["total"]["declared_lost"] == 0
PY
	then
		tv_ok "qemu-net-$model: meta.json: machine, CPU as CPUID says, control key; losses.json: $RECORDS received, 0 lost, 0 missing"
	else
		tv_fail "qemu-net-$model: meta.json and losses.json" "see $cap"
	fi
	tv_keep_log "$log"
}

run_model e1000
run_model virtio-net-pci
run_model e1000e   # 82574L
