# shellcheck shell=bash
# tests/lib.sh - shared helpers for the emulator scenarios.
#
# A scenario prints one line per check: "ok NAME", "not ok NAME: why" or
# "skip NAME: why"; tests/run-tests.sh counts them.  Logs of failed runs
# are kept under build/test-logs/ and their tail is printed.

TV_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TV_BUILD=${TV_BUILD:-$TV_ROOT/build}
TV_LOGS=$TV_BUILD/test-logs
mkdir -p "$TV_LOGS"

# tv_dep KEY - a value from build/deps.mk ("KEY := value").
tv_dep() {
	awk -v k="$1" '$1 == k && $2 == ":=" { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' \
		"$TV_BUILD/deps.mk"
}

tv_ok() { echo "ok $1"; }
tv_fail() { echo "not ok $1: $2"; TV_FAILED=1; }
tv_skip() { echo "skip $1: $2"; }

# tv_expect NAME LOG REGEX - the log contains a line matching REGEX.
tv_expect() {
	if grep -Eq -- "$3" "$2"; then tv_ok "$1"; else tv_fail "$1" "no line matching /$3/ in $(basename "$2")"; fi
}

# tv_reject NAME LOG REGEX - no line matches REGEX.
tv_reject() {
	local hit
	hit=$(grep -Em1 -- "$3" "$2" || true)
	if [ -z "$hit" ]; then tv_ok "$1"; else tv_fail "$1" "unexpected: $hit"; fi
}

# tv_keep_log LOG - on failure: print the tail, say where the log is.
tv_keep_log() {
	if [ "${TV_FAILED:-0}" != 0 ]; then
		echo "---- last 40 lines of $1 ----"
		tail -n 40 "$1" | tr -d '\r' | sed 's/^/| /'
		echo "---- full log kept at $1 ----"
	fi
}

# tv_handles LOG - "TVHANDLE PARENT": tracevisor's image handle and the
# payload's parent handle, both as 16-digit hex, from a serial log.
tv_handles() {
	local tv parent
	tv=$(tr -d '\r' <"$1" | sed -n 's/.*image handle 0x\([0-9a-f]*\),.*/\1/p' | head -1)
	parent=$(tr -d '\r' <"$1" | sed -n 's/.*TRACEVISOR-PAYLOAD: image 0x[0-9a-f]* parent 0x\([0-9a-f]*\).*/\1/p' | head -1)
	printf '%016x %016x\n' "0x${tv:-0}" "0x${parent:-0}"
}

# tv_image OUT DEST=SRC... - a test disk image (GPT + FAT32 ESP).
tv_image() {
	TV_IMAGE_MIB=${TV_IMAGE_MIB:-40} bash "$TV_ROOT/scripts/mkimage.sh" "$@" >/dev/null
}

# tv_linux_stick OUT CONF CMDLINE - a 64 MiB stick that boots Debian's
# Linux (the fixture: LINUX_VMLINUZ, LINUX_INITRD from linux.env) through
# linuxload under tracevisor with config file CONF and kernel command
# line file CMDLINE (the whole-boot scenarios and benchmarks).
tv_linux_stick() {
	TV_IMAGE_MIB=64 tv_image "$1" \
		EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$2" \
		EFI/linux/linuxload.efi="$TV_BUILD/linuxload.efi" \
		EFI/linux/vmlinuz="$LINUX_VMLINUZ" \
		EFI/linux/initrd.img="$LINUX_INITRD" \
		EFI/linux/cmdline.txt="$3"
}

# tv_qemu LOG SECONDS STICK DISK2 - boot OVMF under QEMU TCG with STICK as a
# USB mass-storage device (first in boot order) and DISK2 as a second
# (virtio) disk.  No network, no VMX (TCG has none).  Echoes QEMU's status.
tv_qemu() {
	local log=$1 secs=$2 stick=$3 disk2=$4 rc=0
	rm -f "$log"
	timeout --kill-after=5 "$secs" qemu-system-x86_64 -machine q35 -m 256 -cpu max \
		-bios "$(tv_dep OVMF_FD)" -nographic -no-reboot \
		-device qemu-xhci \
		-drive if=none,id=stick,format=raw,file="$stick" \
		-device usb-storage,drive=stick,bootindex=0 \
		-drive if=none,id=disk2,format=raw,file="$disk2" \
		-device virtio-blk-pci,drive=disk2,bootindex=1 \
		-net none -serial file:"$log" -monitor none -display none \
		</dev/null >"$log.stdout" 2>&1 || rc=$?
	echo "$rc"
}

# tv_bochs LOG SECONDS DISK [CPUS] - boot OVMF under Bochs 3.0 (VMX, EPT,
# MTF) with DISK as the first ATA disk, Skylake-X CPUs.  Echoes Bochs's
# exit status.  A killed Bochs leaves DISK.lock behind: removed first.
# TV_BOCHS_BIN runs another Bochs binary (e.g. the trace-hardware model,
# deps.mk BOCHS_TRACE; docs/BOCHS-MODEL.md), TV_BOCHS_EXTRA adds bochsrc
# lines (a second `cpu: lbr=1` line turns the model on), TV_BOCHS_ARGS adds
# command-line arguments (e.g. `-rc FILE`: debugger commands).
tv_bochs() {
	local log=$1 secs=$2 disk=$3 cpus=${4:-2} rc=0 rc_file
	local bochs
	bochs=${TV_BOCHS_BIN:-$(tv_dep BOCHS)}
	rc_file=$log.bochsrc
	rm -f "$log" "$disk.lock"
	cat >"$rc_file" <<RC
megs: ${TV_BOCHS_MEGS:-512}
romimage: file=$(tv_dep OVMF_FD)
vgaromimage: file=$(tv_dep VGABIOS)
cpu: model=corei7_skylake_x, count=$cpus, ips=100000000, ignore_bad_msrs=1
pci: enabled=1, chipset=i440fx
display_library: nogui
com1: enabled=1, mode=file, dev=$log
boot: disk
ata0-master: type=disk, path=$disk, mode=flat
log: $log.bochs
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
${TV_BOCHS_EXTRA:-}
RC
	(cd "$(dirname "$log")" && timeout --kill-after=5 "$secs" "$bochs" -q -f "$rc_file" ${TV_BOCHS_ARGS:-} \
		</dev/null >"$log.stdout" 2>&1) || rc=$?
	rm -f "$disk.lock"
	echo "$rc"
}

# tv_record_start DIR [ARGS...] - start `tracevisor record` listening on
# 127.0.0.1 (QEMU's and Bochs's slirp deliver the guest's 10.0.2.2:PORT
# there), captures under DIR, with ARGS (e.g. --machines 1 --idle 3).
# Sets TV_REC_PID, TV_REC_PORT and TV_REC_ERR (its stderr); returns 1 when
# no port could be bound.  The caller kills it in a trap (tv_record_stop).
tv_record_start() {
	local dir=$1 try
	shift
	mkdir -p "$dir"
	TV_REC_ERR=$dir/record.stderr
	for try in 1 2 3 4 5; do
		TV_REC_PORT=$((20000 + RANDOM % 20000))
		: >"$TV_REC_ERR"
		"$TV_BUILD/tracevisor" record -l "127.0.0.1:$TV_REC_PORT" -o "$dir" "$@" \
			>"$dir/record.stdout" 2>"$TV_REC_ERR" &
		TV_REC_PID=$!
		for _ in $(seq 50); do
			grep -q 'listening on udp' "$TV_REC_ERR" && return 0
			kill -0 "$TV_REC_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$TV_REC_PID" 2>/dev/null
		wait "$TV_REC_PID" 2>/dev/null
	done
	TV_REC_PID=
	return 1
}

# tv_record_stop [SECONDS] - wait up to SECONDS (default 0) for the
# receiver to exit by itself (--machines/--idle), then SIGINT (it writes
# what it has and exits), then SIGKILL.  Sets TV_REC_RC to its exit
# status, "killed", or "none" when none was running.  Call it from the
# shell that started it (not in $(...)): it waits for its child.
tv_record_stop() {
	local secs=${1:-0}
	TV_REC_RC=none
	[ -n "${TV_REC_PID:-}" ] || return 0
	for _ in $(seq $((secs * 10))); do kill -0 "$TV_REC_PID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$TV_REC_PID" 2>/dev/null; then
		kill -INT "$TV_REC_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$TV_REC_PID" 2>/dev/null || break; sleep 0.1; done
	fi
	if kill -0 "$TV_REC_PID" 2>/dev/null; then
		kill -9 "$TV_REC_PID" 2>/dev/null
		wait "$TV_REC_PID" 2>/dev/null
		TV_REC_RC=killed
	else
		wait "$TV_REC_PID" 2>/dev/null
		TV_REC_RC=$?
	fi
	TV_REC_PID=
}

# --- the test payload's traced window (tests/payload/traced.S) ----------------

# tv_payload_base LOG - print the payload's load base: its "cpu 0: traced
# window at 0xADDR" line minus tv_traced's offset in payload.so; nothing
# when the line is missing.
tv_payload_base() {
	local at off
	at=$(tr -d '\r' <"$1" | sed -n 's/.*TRACEVISOR-PAYLOAD: cpu 0: traced window at \(0x[0-9a-f]*\),.*/\1/p' | head -1)
	off=$(nm "$TV_BUILD/payload.so" | awk '$3 == "tv_traced" { print "0x" $1 }')
	[ -n "$at" ] && [ -n "$off" ] && printf '0x%x\n' $(( at - off ))
}

# tv_payload_expected BASE ITERATIONS - print the branches the window must
# take, "FROM TO KIND" per line, from traced.S's structure (its header
# comment) and payload.so's symbols: the ground truth the scenarios diff
# the recorded branches against.
tv_payload_expected() {
	local base=$1 n=$2 i value name
	local -A symtab
	while read -r value _ name; do symtab[$name]=0x$value; done < <(nm "$TV_BUILD/payload.so")
	addr() { printf '0x%x' $(( base + ${symtab[$1]} )); }
	for (( i = 0; i < n; i++ )); do
		if (( i % 2 == 0 )); then
			echo "$(addr tvt_jmp_ind) $(addr tvt_case0) jmp-ind"
			echo "$(addr tvt_call_a) $(addr tvt_leaf_a) call"
			echo "$(addr tvt_ret_a) $(addr tvt_after_a) ret"
			echo "$(addr tvt_jmp_next) $(addr tvt_next) jmp"
		else
			echo "$(addr tvt_jmp_ind) $(addr tvt_case1) jmp-ind"
			echo "$(addr tvt_call_b) $(addr tvt_leaf_b) call-ind"
			echo "$(addr tvt_ret_b) $(addr tvt_next) ret"
		fi
		(( i & 2 )) && echo "$(addr tvt_jnz) $(addr tvt_skip) jcc"
		(( i < n - 1 )) && echo "$(addr tvt_jcc) $(addr tvt_loop) jcc"
	done
	return 0
}

# tv_payload_check_cpu NAME TVT CPU EXPECTED WORK - CPU's branches in TVT
# equal EXPECTED line for line, and it holds exactly one window opened and
# closed by the payload's hypercalls.  Leaves WORK/cpuN.dump and .diff.
tv_payload_check_cpu() {
	local name=$1 tvt=$2 cpu=$3 expected=$4 work=$5 got nexp
	got=$work/cpu$cpu.txt
	nexp=$(wc -l <"$expected")
	"$TV_BUILD/tracevisor" dump -q --no-summary --cpu "$cpu" "$tvt" >"$work/cpu$cpu.dump" 2>&1
	awk '$3 == "BRANCH" { print $4, $6, $7 }' "$work/cpu$cpu.dump" >"$got"
	if diff -u "$expected" "$got" >"$work/cpu$cpu.diff"; then
		tv_ok "$name: cpu $cpu: all $nexp branches as expected, in order"
	else
		tv_fail "$name: cpu $cpu: all $nexp branches as expected, in order" \
			"$(wc -l <"$got") recorded; first difference: $(grep -m2 '^[-+][^-+]' "$work/cpu$cpu.diff" | tr '\n' ' ')"
	fi
	if [ "$(grep -c ' START .*trigger=hypercall' "$work/cpu$cpu.dump")" = 1 ] &&
		[ "$(grep -c ' STOP .*trigger=hypercall' "$work/cpu$cpu.dump")" = 1 ]; then
		tv_ok "$name: cpu $cpu: one window, START and STOP by hypercall"
	else
		tv_fail "$name: cpu $cpu: one window, START and STOP by hypercall" "see $work/cpu$cpu.dump"
	fi
}

# tv_model_bochs TEST - the Bochs with the trace-hardware model
# (TV_BOCHS_BIN, else BOCHS_TRACE from deps.mk) in TV_MODEL; prints TEST's
# skip line and returns 1 when there is none.
tv_model_bochs() {
	TV_MODEL=${TV_BOCHS_BIN:-$(tv_dep BOCHS_TRACE)}
	if [ -z "$TV_MODEL" ] || [ ! -x "$TV_MODEL" ]; then
		tv_skip "$1" "no Bochs with the trace-hardware model (BOCHS_TRACE in $TV_BUILD/deps.mk; make deps)"
		return 1
	fi
}

# tv_payload_run TEST SOURCE BOCHS EXTRA SECS DIR LOG - boot tracevisor
# (source = SOURCE, windows by the payload's hypercalls, overflow stop,
# serial export) with the payload on 2 CPUs under BOCHS with bochsrc line
# EXTRA; checks that it finished by itself.
tv_payload_run() {
	local test=$1 src=$2 bin=$3 extra=$4 secs=$5 dir=$6 log=$7 rc
	mkdir -p "$dir"
	printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' \
		"source = $src" 'overflow = stop' 'trace_start = hypercall' >"$dir/tracevisor.conf"
	# TV_PAYLOAD_CONF: more config lines (one per line)
	[ -z "${TV_PAYLOAD_CONF:-}" ] || printf '%s\n' "$TV_PAYLOAD_CONF" >>"$dir/tracevisor.conf"
	tv_image "$dir/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$dir/tracevisor.conf" \
		EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
	rc=$(TV_BOCHS_BIN=$bin TV_BOCHS_EXTRA="$extra" tv_bochs "$log" "$secs" "$dir/disk.img" 2)
	if [ "$rc" != 124 ] && [ "$rc" != 137 ]; then
		tv_ok "$test: finished by itself"
	else
		tv_fail "$test: finished by itself" "timed out"
	fi
}

# tv_from_serial_2cpu TEST LOG TVT - the trace file from the serial log
# alone: both CPUs' streams, no bad CRC, nothing malformed or missing.
tv_from_serial_2cpu() {
	local test=$1 log=$2 tvt=$3 err=$3.from-serial.err
	if "$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" 2>"$err" &&
		grep -q ', 0 bad CRC, 0 malformed' "$err" &&
		[ "$(grep -c 'missing: 0 lines, 0 records' "$err")" = 2 ]; then
		tv_ok "$test: from-serial: both CPUs, no bad or missing lines"
	else
		tv_fail "$test: from-serial: both CPUs, no bad or missing lines" "$(tr '\n' ' ' <"$err")"
	fi
}

# tv_bochs_trace_branches STDOUT OUT - the taken branches in a Bochs
# debugger `trace on` log (CPU 0's lines "(0).[icount] [0xLINEAR] sel:off
# (...): insn ; bytes", up to the closing magic breakpoint `xchg bx, bx`)
# as "0xFROM 0xTO" lines in OUT: an instruction whose successor is not at
# its address + length took a branch.
tv_bochs_trace_branches() {
	local prev="" next_a="" lin bytes a
	: >"$2"
	while read -r lin bytes; do
		a=$((lin))
		[ -n "$prev" ] && [ "$a" != "$next_a" ] && printf '0x%016x 0x%016x\n' "$prev" "$a" >>"$2"
		prev=$a next_a=$((a + ${#bytes} / 2))
	done < <(awk '/^\(0\)\.\[[0-9]+\] \[0x/ { a = $2; gsub(/[][]/, "", a); print a, $NF; if (/xchg bx, bx/) exit }' "$1")
}

# --- the Linux fixture (docs/LINUX-FIXTURE.md) ---------------------------------

# tv_linux_fixture NAME - the fixture's linuxload.efi and linux.env (sourced
# here: LINUX_VMLINUZ, LINUX_INITRD, LINUX_CMDLINE, LINUX_VMLINUX) and
# vmlinux; a skip line and status 1 when something is missing.
tv_linux_fixture() {
	if [ ! -f "$TV_BUILD/linuxload.efi" ] || [ ! -f "$TV_BUILD/linux/linux.env" ]; then
		tv_skip "$1" "the Linux fixture is not built (make linux-fixture)"
		return 1
	fi
	# shellcheck source=/dev/null
	. "$TV_BUILD/linux/linux.env"
	if [ -z "${LINUX_VMLINUX:-}" ] || [ ! -f "$LINUX_VMLINUX" ]; then
		tv_skip "$1" "the fixture has no vmlinux"
		return 1
	fi
	command -v python3 >/dev/null || { tv_skip "$1" "python3 missing"; return 1; }
}

# tv_linux_disk WORK - WORK/disk.img: tracevisor with WORK/tracevisor.conf,
# linuxload, the fixture's kernel and initrd, its command line plus
# tsc_early_khz=100000 nokaslr (the bench's entry addresses need nokaslr).
tv_linux_disk() {
	printf '%s\n' "$LINUX_CMDLINE tsc_early_khz=100000 nokaslr" >"$1/cmdline.txt"
	tv_linux_stick "$1/disk.img" "$1/tracevisor.conf" "$1/cmdline.txt"
}

# tv_linux_booted NAME LOG RC - Linux reached /init and Bochs saw the ACPI
# power-off (RC: tv_bochs's status, for the message).
tv_linux_booted() {
	tv_expect "$1: Linux reached /init after the window" "$2" '^TVLINUX: init started'
	if grep -q 'ACPI control: soft power off' "$2.stdout" "$2.bochs" 2>/dev/null; then
		tv_ok "$1: clean ACPI power-off"
	else
		tv_fail "$1: clean ACPI power-off" "bochs status $3 (124 = timeout)"
	fi
}

# tv_vmlinux_bases VMLINUX ENTRY - print "LINK_BASE PHYS_BASE ELF_ENTRY":
# the @BASE values that place VMLINUX for the decoder at its link address
# and at its physical load address, where its entry runs at ENTRY (the
# decoder's @BASE puts the lowest PT_LOAD address, vmlinux's per-CPU
# segment at 0, at BASE; arithmetic modulo 2^64, as the decoder's).
tv_vmlinux_bases() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb").read()
entry = int(sys.argv[2], 16)
e_entry, phoff = struct.unpack_from("<QQ", f, 0x18)
phentsize, phnum = struct.unpack_from("<HH", f, 0x36)
lo, bias = None, None
for i in range(phnum):
    p_type, _, _, vaddr, paddr, _, memsz, _ = struct.unpack_from("<IIQQQQQQ", f, phoff + i * phentsize)
    if p_type != 1:
        continue
    lo = vaddr if lo is None else min(lo, vaddr)
    if paddr <= e_entry < paddr + memsz:
        bias = (paddr - vaddr + entry - e_entry) % (1 << 64)
print(hex(lo), hex((lo + bias) % (1 << 64)), hex(e_entry))
PY
}

# tv_vmlinux_insns VMLINUX WORK [full] - objdump's linear disassembly of
# every executable PT_LOAD segment of VMLINUX at its virtual address:
# WORK/segments.txt ("INDEX VADDR PADDR FILESZ FILE" a line) and
# WORK/insns.txt ("ADDR MNEMONIC" an instruction, addresses in hex); with
# `full`, WORK/insns_full.txt instead ("ADDR MNEMONIC OPERANDS", AT&T).
tv_vmlinux_insns() {
	local _i vaddr _p _s bin out=$2/insns.txt keep='m = $3; sub(/ .*/, "", m)'
	if [ "${3:-}" = full ]; then
		out=$2/insns_full.txt keep='m = $3'
	fi
	python3 - "$1" "$2" <<'PY' >"$2/segments.txt"
import struct, sys
f = open(sys.argv[1], "rb").read()
phoff, = struct.unpack_from("<Q", f, 0x20)
phentsize, phnum = struct.unpack_from("<HH", f, 0x36)
for i in range(phnum):
    p_type, p_flags, off, vaddr, paddr, filesz, memsz, align = struct.unpack_from("<IIQQQQQQ", f, phoff + i * phentsize)
    if p_type == 1 and p_flags & 1:
        name = "%s/seg%d.bin" % (sys.argv[2], i)
        open(name, "wb").write(f[off:off + filesz])
        print(i, hex(vaddr), hex(paddr), hex(filesz), name)
PY
	: >"$out"
	while read -r _i vaddr _p _s bin; do
		objdump -D -b binary -m i386:x86-64 --adjust-vma="$vaddr" "$bin" |
			awk -F'\t' '/^ *[0-9a-f]+:\t/ && NF >= 3 { a = $1; sub(/^ */, "", a); sub(/:$/, "", a); '"$keep"'; print a, m }' \
				>>"$out"
		rm -f "$bin"
	done <"$2/segments.txt"
}

# tv_vmlinux_check TEST WORK BRANCHES DELTA N - MTF branch records
# ("FROM TO KIND" lines) checked against objdump's linear disassembly of
# the vmlinux segments (tv_vmlinux_insns into WORK), not against
# tracevisor's decoder: every from and to an instruction start, the
# instruction at from a branch of the recorded kind, straight code
# between records (no unconditional transfer skipped), N records.
# Identity-mapped physical addresses are moved by DELTA (where the entry
# ran minus the ELF entry) and mapped through the program headers.
tv_vmlinux_check() {
	local _t=$1 _w=$2 _b=$3 _d=$4 _n=$5 _summary what title
	tv_vmlinux_insns "$LINUX_VMLINUX" "$_w"
python3 - "$_w/segments.txt" "$_w/insns.txt" "$_b" "$_d" <<'PY' >"$_w/check.txt"
import bisect, sys
delta = int(sys.argv[4])
segs = []
for line in open(sys.argv[1]):
    _, v, p, sz, _ = line.split()
    segs.append((int(v, 16), int(p, 16), int(sz, 16)))

def virt(x):
    """A recorded address as a vmlinux virtual address (None: outside)."""
    for v, p, sz in segs:
        if v <= x < v + sz:
            return x
        if p <= x - delta < p + sz:
            return x - delta - p + v
    return None

def seg_of(x):
    for v, p, sz in segs:
        if v <= x < v + sz:
            return v
    return None

recs = []
for l in open(sys.argv[3]):
    frm, to, kind = l.split()
    recs.append((frm, to, kind, virt(int(frm, 16)), virt(int(to, 16))))
# Only the instructions the checks look at: each from and to, and the
# straight runs between one record's to and the next one's from.
want = []
prev = None
for _, _, _, f, t in recs:
    for a in (f, t):
        if a is not None:
            want.append((a, a))
    if prev is not None and f is not None and prev <= f and f - prev < (1 << 20):
        want.append((prev, f))
    prev = t
want.sort()
merged = []
for lo, hi in want:
    if merged and lo <= merged[-1][1] + 16:
        merged[-1][1] = max(merged[-1][1], hi)
    else:
        merged.append([lo, hi])
starts = [m[0] for m in merged]
mn = {}
for line in open(sys.argv[2]):
    a, m = line.split()
    a = int(a, 16)
    k = bisect.bisect_right(starts, a) - 1
    if k >= 0 and a <= merged[k][1]:
        mn[a] = m
order = sorted(mn)
index = {a: i for i, a in enumerate(order)}

kinds = {
    "jcc": lambda m: (m.startswith("j") and m not in ("jmp", "jmpq")) or m.startswith("loop"),
    "jmp": lambda m: m in ("jmp", "jmpq"),
    "jmp-ind": lambda m: m in ("jmp", "jmpq"),
    "call": lambda m: m in ("call", "callq"),
    "call-ind": lambda m: m in ("call", "callq"),
    "ret": lambda m: m in ("ret", "retq"),
    "far": lambda m: m in ("lret", "lretq", "ljmp", "lcall", "ljmpq", "lcallq"),
}
uncond = ("jmp", "jmpq", "call", "callq", "ret", "retq", "lret", "lretq", "ljmp", "lcall",
          "iret", "iretq", "sysret", "sysretq", "ud2")
bad = {"from": 0, "to": 0, "kind": 0, "gap": 0}
first_bad = []
prev_to = None
for n, (frm, to, kind, f, t) in enumerate(recs):
    if f is None or f not in mn:
        bad["from"] += 1
        first_bad.append("record %d: from %s is no instruction start" % (n, frm))
        prev_to = t if t in mn else None
        continue
    if t is None or t not in mn:
        bad["to"] += 1
        first_bad.append("record %d: to %s is no instruction start" % (n, to))
    if kind not in kinds or not kinds[kind](mn[f]):
        bad["kind"] += 1
        first_bad.append("record %d: %s at %s is not a %s" % (n, mn[f], frm, kind))
    if prev_to is not None:
        if seg_of(prev_to) != seg_of(f) or f < prev_to:
            bad["gap"] += 1
            first_bad.append("record %d: from %#x does not follow the previous to %#x in straight code" % (n, f, prev_to))
        else:
            for a in order[index[prev_to]:index[f]]:
                if mn[a] in uncond:
                    bad["gap"] += 1
                    first_bad.append("record %d: %s at %#x between %#x and %#x" % (n, mn[a], a, prev_to, f))
                    break
    prev_to = t if t in mn else None
print("records %d from_bad %d to_bad %d kind_bad %d gap_bad %d" % (len(recs), bad["from"], bad["to"], bad["kind"], bad["gap"]))
for l in first_bad[:5]:
    print(l)
PY
_summary=$(head -1 "$_w/check.txt")
for what in from to kind gap; do
	case $what in
	from) title="every 'from' is an instruction start in vmlinux" ;;
	to) title="every 'to' is an instruction start in vmlinux" ;;
	kind) title="the instruction at every 'from' is a branch of the recorded kind (objdump)" ;;
	gap) title="between records the code runs straight (no unconditional transfer skipped)" ;;
	esac
	if grep -q " ${what}_bad 0\b" <<<"$_summary" && grep -q "^records $_n " <<<"$_summary"; then
		tv_ok "$_t: $title"
	else
		tv_fail "$_t: $title" "$_summary; $(sed -n 2,3p "$_w/check.txt" | tr '\n' ' ')"
	fi
done
}

# tv_records_equal TEST TVT CPU TYPES EXPECTED DIR [kind] - the CPU's
# records whose type matches TYPES (e.g. BRANCH|BRANCH_COMPACT, or LBR), as
# "from to" lines (with `kind`: "from to kind"), equal EXPECTED one for one
# and in order.  Leaves DIR/cpuN.dump (tracevisor dump of that CPU),
# cpuN.txt and cpuN.diff.
tv_records_equal() {
	local t=$1 tvt=$2 cpu=$3 types=$4 exp=$5 dir=$6 k=${7:-} n what="from and to"
	[ -z "$k" ] || what="from, to and kind"
	"$TV_BUILD/tracevisor" dump -q --no-summary --cpu "$cpu" "$tvt" >"$dir/cpu$cpu.dump" 2>&1
	awk -v re="^($types)\$" -v k="$k" '$3 ~ re { if (k != "") print $4, $6, $7; else print $4, $6 }' \
		"$dir/cpu$cpu.dump" >"$dir/cpu$cpu.txt"
	n=$(wc -l <"$dir/cpu$cpu.txt")
	if [ "$n" -gt 0 ] && diff -u "$exp" "$dir/cpu$cpu.txt" >"$dir/cpu$cpu.diff"; then
		tv_ok "$t: cpu $cpu: all $(wc -l <"$exp") branches as expected, in order, $what"
	else
		tv_fail "$t: cpu $cpu: all $(wc -l <"$exp") branches as expected, in order, $what" \
			"$n recorded; first difference: $(grep -m2 '^[-+][^-+]' "$dir/cpu$cpu.diff" | tr '\n' ' ')"
	fi
}
