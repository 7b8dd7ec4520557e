#!/usr/bin/env bash
# qemu/net.sh - the link self-test end to end, per NIC model (e1000 =
# 82540EM, virtio-net-pci = legacy virtio-net): tracevisor selects the NIC,
# disconnects OVMF from it, gets a DHCP lease from QEMU's slirp, streams
# net_selftest records through its own driver and lwIP to 10.0.2.2:PORT,
# which slirp delivers to a listener on the host's 127.0.0.1:PORT; the
# listener checks every record (count, order, payload, CRC); the NIC is
# quiesced and the payload chainloaded (clean power-off).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
RECORDS=${TV_NET_RECORDS:-5000}
work=$TV_BUILD/test/qemu-net
mkdir -p "$work"

cat >"$work/listen.py" <<'PY'
# Receives the self-test datagrams (net/selftest.h) and checks each record.
import socket, struct, sys, time, zlib

portfile, resultfile, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("127.0.0.1", 0))
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(portfile + ".tmp", portfile)

def payload(seq):
    x = (seq * 2654435761 + 1) & 0xFFFFFFFF
    out = b""
    for _ in range(5):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out += struct.pack("<I", x)
    return out

session = None
expect = 0
total = None
bad = order = dgrams = 0
end = None
first_err = ""
deadline = time.time() + limit
while time.time() < deadline and end is None:
    s.settimeout(max(0.1, deadline - time.time()))
    try:
        d = s.recv(65536)
    except socket.timeout:
        break
    if len(d) < 16:
        bad += 1; first_err = first_err or "short datagram"; continue
    magic, sess, first, cnt, rsz = struct.unpack_from("<IIIHH", d)
    if magic != 0x54535654 or rsz != 32 or len(d) != 16 + 32 * cnt:
        bad += 1; first_err = first_err or "bad header"; continue
    if session is None:
        session = sess
    elif sess != session:
        bad += 1; first_err = first_err or "session changed"; continue
    if cnt == 0:
        end = first
        break
    dgrams += 1
    for i in range(cnt):
        r = d[16 + 32 * i: 48 + 32 * i]
        seq, tot = struct.unpack_from("<II", r)
        crc, = struct.unpack_from("<I", r, 28)
        if zlib.crc32(r[:28]) != crc or r[8:28] != payload(seq):
            bad += 1; first_err = first_err or "record %d damaged" % seq; continue
        if total is None:
            total = tot
        if tot != total:
            bad += 1; first_err = first_err or "total changed at %d" % seq
        if seq != expect or seq != first + i:
            order += 1; first_err = first_err or "record %d where %d was due" % (seq, expect)
        expect = seq + 1
with open(resultfile, "w") as f:
    f.write("end=%s received=%d total=%s bad=%d order=%d datagrams=%d session=%s first_error=%s\n" %
            (end, expect, total, bad, order, dgrams,
             "%08x" % session if session is not None else None, first_err or "none"))
PY

run_model() {
	local model=$1 log=$TV_LOGS/qemu-net-$1.serial.log dir=$work/$1 port pid rc=0 res
	mkdir -p "$dir"
	rm -f "$dir/port" "$dir/result"
	python3 "$work/listen.py" "$dir/port" "$dir/result" 90 &
	pid=$!
	for _ in $(seq 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
	port=$(cat "$dir/port" 2>/dev/null)
	if [ -z "$port" ]; then
		tv_fail "qemu-net-$model: listener" "no port"; kill "$pid" 2>/dev/null; return
	fi
	cat >"$dir/tracevisor.conf" <<CONF
# qemu/net.sh: link self-test over $model
nic = auto
net_ip = dhcp
receiver = 10.0.2.2:$port
net_selftest = $RECORDS
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
	# The listener stops at the end marker or its own deadline; never outlive the test.
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	res=$(cat "$dir/result" 2>/dev/null)

	if [ "$rc" = 0 ]; then tv_ok "qemu-net-$model: clean power-off"; else tv_fail "qemu-net-$model: clean power-off" "qemu exit status $rc (124 = timeout)"; fi
	tv_expect "qemu-net-$model: NIC found" "$log" "net: .* at [0-9a-f]{2}:[0-9a-f]{2}\.[0-7], driver (e1000|virtio-net), MAC 52:54:00:12:34:56"
	tv_expect "qemu-net-$model: firmware disconnected" "$log" 'net: firmware drivers disconnected from'
	tv_expect "qemu-net-$model: DHCP lease" "$log" 'net: address 10\.0\.2\.[0-9]+ \(DHCP\)'
	tv_expect "qemu-net-$model: self-test ok (tracevisor)" "$log" "net: self-test ok: $RECORDS records"
	tv_expect "qemu-net-$model: NIC quiesced" "$log" 'net: .* quiesced \(reset, bus mastering off\)'
	tv_reject "qemu-net-$model: no errors" "$log" '\[err\]'
	tv_expect "qemu-net-$model: payload ran after" "$log" 'TRACEVISOR-PAYLOAD-OK'
	if [[ "$res" == "end=$RECORDS received=$RECORDS total=$RECORDS bad=0 order=0 "* ]]; then
		tv_ok "qemu-net-$model: listener verified $RECORDS records ($res)"
	else
		tv_fail "qemu-net-$model: listener verified $RECORDS records" "${res:-no result}"
	fi
	session=$(sed -n 's/.*session=\([0-9a-f]*\).*/\1/p' <<<"$res")
	tv_expect "qemu-net-$model: same session both ends" "$log" "session ${session:-none}"
	tv_keep_log "$log"
}

run_model e1000
run_model virtio-net-pci
