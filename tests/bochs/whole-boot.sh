#!/usr/bin/env bash
# bochs/whole-boot.sh - the headline job: one capture of a whole boot,
# firmware to user space, nothing lost (issue "Whole boot, nothing lost").
#
# Bochs 3.0 with the trace model (`cpu: pt=1`), 2 CPUs, the e1000 on
# slirp; tracevisor with source = pt, trace_start = boot, a receiver and
# the default overflow policy with a receiver (wait), streaming to
# `tracevisor record` on 127.0.0.1; Debian's Linux through its EFI stub
# (linuxload), to /init, the probe (user space) and ACPI power-off.
# Checked, with the capture and tools independent of the hypervisor's:
#   - each CPU's window opens at its first exit after launch (boot) and is
#     closed by the guest's power-off (trigger guest-power-off), and the
#     power-off waited until everything was acknowledged;
#   - the capture: 0 records and 0 PT bytes lost, per CPU (tracevisor info),
#     the PT stream files as long as the stop lines say;
#   - libipt (tracevisor pt-decode) over each CPU's stream with no file
#     at all: the code comes from the capture's code snapshots (the
#     hypervisor's EPT execute tracking, docs/SNAPSHOTS.md), every content
#     whole (tracevisor info); on CPU 0, in this order, linuxload's code,
#     the kernel's EFI stub (its base as linuxload logged it), startup_64
#     (0x1600000) and the call of start_kernel (its address as the running
#     kernel's /proc/kallsyms gives it, printed by the fixture's /init); on
#     some CPU the probe's code (user space, linked at 0x20000000 away from
#     busybox); per CPU the share of PT bytes decoded (the bytes skipped
#     from a decode error to the next PSB counted against it: >= 99%,
#     the issue's target; measured 99.96% and 99.99%, 2026-11-27);
#   - --system-map over vmlinux names the address the trace calls
#     start_kernel at (the running kernel's own kallsyms) start_kernel;
#   - `tracevisor report --phases` (what make run prints, fast decoder, no
#     file but vmlinux's symbols): branches in all four phases (firmware,
#     loader: the images ExitBootServices' rescan found, kernel, user),
#     instructions in each, >= 99% of them decoded, and
#     functions named in the firmware (its modules' IMAGE records), loader
#     and kernel sections.
# Prints the figures for docs/BENCHMARKS.md: PT bytes per CPU, emulated
# time, receiver goodput, stalls, snapshot counters, decode time.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
T=whole-boot
work=$TV_BUILD/test/bochs-$T
log=$TV_LOGS/bochs-$T.serial.log
rm -rf "$work"
mkdir -p "$work" "$TV_LOGS"
trap 'tv_record_stop' EXIT

tv_model_bochs "$T" || exit 0
model=$TV_MODEL
if ! grep -q 'Model a subset of Intel Processor Trace' "$model"; then
	tv_skip "$T" "$model has no cpu: pt option (patch 0003 not applied)"
	exit 0
fi
tv_linux_fixture "$T" || exit 0
if [ -z "${LINUX_PROBE:-}" ] || [ ! -f "$LINUX_PROBE" ]; then
	tv_skip "$T" "the fixture has no probe binary (make linux-fixture)"
	exit 0
fi
if ! tv_record_start "$work/cap" --machines 1 --idle 60; then
	tv_fail "$T: receiver" "tracevisor record did not start: $(tail -n 2 "$work/cap/record.stderr")"
	exit 0
fi
printf '%s\n' "$LINUX_CMDLINE tsc_early_khz=100000 nokaslr pci=noacpi" >"$work/cmdline.txt"
printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' 'source = pt' 'trace_start = boot' \
	"pt_buffer_kb = ${TV_WHOLE_BOOT_PT_KB:-65536}" 'nic = auto' 'net_ip = 10.0.2.15/24' 'net_gw = 10.0.2.2' \
	"receiver = 10.0.2.2:$TV_REC_PORT" 'machine = whole-boot' >"$work/tracevisor.conf"
tv_linux_stick "$work/disk.img" "$work/tracevisor.conf" "$work/cmdline.txt"
t0=$(date +%s.%N)
rc=$(TV_BOCHS_BIN=$model TV_BOCHS_MEGS=1024 \
	TV_BOCHS_EXTRA=$'cpu: pt=1\ne1000: enabled=1, mac=52:54:00:12:34:56, ethmod=slirp' \
	tv_bochs "$log" "${TV_WHOLE_BOOT_TIMEOUT:-1500}" "$work/disk.img" 2)
host_s=$(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
rm -f "$work/disk.img"
tv_record_stop 60
tv_linux_booted "$T" "$log" "$rc"
if [ "$TV_REC_RC" = 0 ]; then tv_ok "$T: receiver closed the session and exited by itself"; else tv_fail "$T: receiver closed the session and exited by itself" "status $TV_REC_RC"; fi
tv_expect "$T: overflow = wait, the default with a receiver" "$log" 'config: source=pt overflow=wait '
for cpu in 0 1; do
	tv_expect "$T: cpu $cpu: window opened at launch" "$log" "trace: cpu $cpu: window 1 started \(boot\)"
	tv_expect "$T: cpu $cpu: window closed by the guest's power-off, nothing lost" "$log" \
		"trace: cpu $cpu: window 1 stopped \(guest-power-off\): [0-9]+ PT bytes .* 0 stops, 0 errors, .* PT lost 0; ring lost 0 records"
done
tv_expect "$T: the power-off waited for everything to be acknowledged" "$log" \
	'trace: power-off on cpu [01]: every window closed, everything acknowledged'
tv_reject "$T: no tracevisor errors" "$log" '\[err\]'

session=$(tr -d '\r' <"$log" | sed -n 's/.*net: resident: .* session \([0-9a-f]\{16\}\), control.*/\1/p' | head -1)
cap=$work/cap/whole-boot-${session:-none}
if [ ! -f "$cap/trace.tvt" ]; then
	tv_fail "$T: capture of the session" "session '${session:-none}': $(ls "$work/cap" | tr '\n' ' ')"
	tv_keep_log "$log"
	exit 0
fi
"$TV_BUILD/tracevisor" info "$cap/trace.tvt" >"$work/info.txt" 2>&1
for cpu in 0 1; do
	bytes=$(tr -d '\r' <"$log" | sed -n "s/.*trace: cpu $cpu: window 1 stopped ([a-z-]*): \([0-9]*\) PT bytes.*/\1/p" | head -1)
	have=$(stat -c %s "$cap/cpu$cpu.pt" 2>/dev/null || echo 0)
	if grep -qE "^cpu$cpu: .*lost 0 \(gaps 0, before first chunk 0, LOST records 0\).*pt $bytes bytes \(lost 0 in gaps, 0 before first chunk, 0 per PT_SYNC\)" "$work/info.txt" &&
		[ -n "$bytes" ] && [ "$have" = "$bytes" ]; then
		tv_ok "$T: cpu $cpu: the capture holds every record and all $bytes PT bytes, nothing lost"
	else
		tv_fail "$T: cpu $cpu: the capture holds every record and all PT bytes, nothing lost" \
			"stop line ${bytes:-?} bytes, cpu$cpu.pt $have bytes; $(grep "^cpu$cpu:" "$work/info.txt")"
	fi
done

# Where the code lay: linuxload (chainload's line), the kernel's EFI stub
# (linuxload's line), vmlinux twice, the probe; the milestones' addresses.
lbase=$(tr -d '\r' <"$log" | sed -n 's/.*chainload: starting .*linuxload\.efi) at \(0x[0-9a-f]*\) .*/\1/p' | head -1)
sbase=$(tr -d '\r' <"$log" | sed -n 's/^linuxload: starting .* through its EFI stub ([0-9]* bytes at \(0x[0-9a-f]*\)).*/\1/p' | head -1)
ssize=$(tr -d '\r' <"$log" | sed -n 's/^linuxload: starting .* through its EFI stub (\([0-9]*\) bytes at .*/\1/p' | head -1)
send=$(printf '0x%x' $((${sbase:-0} + ${ssize:-0})))
ebs_ret=$(tr -d '\r' <"$log" | sed -n 's/.*trace: cpu 0: ExitBootServices called at 0x[0-9a-f]*, returns to \(0x[0-9a-f]*\).*/\1/p' | head -1)
start_kernel=$(tr -d '\r' <"$log" | sed -n 's/^TVLINUX: kallsyms: \([0-9a-f]*\) T start_kernel$/0x\1/p' | head -1)
read -r link_base phys_base _ < <(tv_vmlinux_bases "$LINUX_VMLINUX" 0x1600000)
# linuxload's end: its base plus the end of its last PT_LOAD segment.
lend=$(python3 -c 'import sys,struct; f=open(sys.argv[1],"rb").read(); ph,n=struct.unpack_from("<Q",f,0x20)[0],struct.unpack_from("<H",f,0x38)[0]; print(hex(int(sys.argv[2],16)+max(struct.unpack_from("<Q",f,ph+i*56+16)[0]+struct.unpack_from("<Q",f,ph+i*56+40)[0] for i in range(n) if struct.unpack_from("<I",f,ph+i*56)[0]==1)))' "$TV_BUILD/linuxload.so" "${lbase:-0}")
if [ -z "$lbase" ] || [ -z "$sbase" ] || [ -z "$ebs_ret" ] || [ -z "$start_kernel" ] || [ -z "$link_base" ]; then
	tv_fail "$T: the logs place the code" "linuxload ${lbase:-?}, stub ${sbase:-?}, EBS return ${ebs_ret:-?}, start_kernel ${start_kernel:-?}, vmlinux ${link_base:-?}"
	tv_keep_log "$log"
	exit 0
fi
tv_ok "$T: the logs place the code: linuxload at $lbase, the EFI stub at $sbase, ExitBootServices returns to $ebs_ret, start_kernel at $start_kernel"

# One pass over each CPU's taken transfers, decoded with no file at all:
# the code comes from the capture's code snapshots (issue "Decode with no
# files"; the instruction flow as text is ~20 GB for this boot: too slow
# for `make test`): the first position of each milestone, transfers in
# the probe's user-space code, decode errors before and after the
# kernel's entry, and the PT bytes an error made the decoder skip (from
# the error to the next PSB it synchronised at).  Milestones: a transfer
# in linuxload, then in the kernel's EFI stub (which calls
# ExitBootServices), then in the kernel's identity-mapped text at its
# physical load address (startup_64 at 0x1600000 onwards), then the call
# of start_kernel.  mawk has no 64-bit integers: addresses are compared as
# the decoder prints them (0x, lowercase, no leading zeros), equal
# strings, and ranges among strings of one length; stream offsets (below
# 2^53) are converted by hand.
decode_cpu() {
	"$TV_BUILD/tracevisor" pt-decode "$cap/trace.tvt" --cpu "$1" -q --no-symbols --branches 2>"$work/decode$1.err" |
		awk -v llo="$lbase" -v lhi="$lend" -v slo="$sbase" -v shi="$send" -v sk="$start_kernel" '
		# Strings, never numbers: doubles would merge 64-bit addresses.
		BEGIN { llo = llo ""; lhi = lhi ""; slo = slo ""; shi = shi ""; sk = sk ""; err_at = -1 }
		function hex(s,   i, v) {
			v = 0; s = tolower(s); sub(/^0x/, "", s)
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v
		}
		function first(k) { if (!(k in pos)) { pos[k] = n; order = order " " k } }
		function in_range(a, lo, hi) { return length(a) == length(lo) && a >= lo && a < hi }
		/^\[error at offset / {
			if ("startup_64" in pos) ek++; else ef++
			o = $4; sub(/[,:]$/, "", o); if (err_at < 0) err_at = hex(o)
			next
		}
		/^\[(sync|end of trace) at offset / {
			o = $NF; sub(/\]$/, "", o)
			if (err_at >= 0) { skipped += hex(o) - err_at; err_at = -1 }
			next
		}
		$2 != "->" { next }
		{
			f = $1 ""; t = $3 ""; n++
			if (in_range(f, llo, lhi)) first("linuxload")
			if (in_range(f, slo, shi)) first("efi_stub")
			if (length(f) == 9 && f >= "0x1600000" && f < "0x3000000") first("startup_64")
			if (t == sk) first("start_kernel")
			if (length(f) == 10 && f >= "0x20001000" && f < "0x20100000") user++
		}
		END { printf "branches %d user %d errors_before_kernel %d errors_kernel_user %d skipped %d order%s\n", n, user, ef, ek, skipped, order }'
}
d0=$(date +%s)
# Both CPUs at once (two processes: each decode is one thread).
decode_cpu 0 >"$work/cpu0.result" &
dpid=$!
decode_cpu 1 >"$work/cpu1.result"
wait "$dpid"
decode_s=$(($(date +%s) - d0))
r0=$(cat "$work/cpu0.result") r1=$(cat "$work/cpu1.result")
order=$(sed -n 's/.* order \(.*\)/\1/p' "$work/cpu0.result")
if [ "$order" = "linuxload efi_stub startup_64 start_kernel" ]; then
	tv_ok "$T: cpu 0 decodes, in order, linuxload, the kernel's EFI stub, startup_64's identity-mapped text and the call of start_kernel ($r0)"
else
	tv_fail "$T: cpu 0 decodes, in order, linuxload, the kernel's EFI stub, startup_64's identity-mapped text and the call of start_kernel" "got '$order': $r0"
fi
u0=$(sed -n 's/.* user \([0-9]*\) .*/\1/p' "$work/cpu0.result") u1=$(sed -n 's/.* user \([0-9]*\) .*/\1/p' "$work/cpu1.result")
if [ "${u0:-0}" -gt 0 ] || [ "${u1:-0}" -gt 0 ]; then
	tv_ok "$T: the probe's user-space code decodes (cpu 0: ${u0:-0}, cpu 1: ${u1:-0} taken transfers)"
else
	tv_fail "$T: the probe's user-space code decodes" "cpu 0: $r0; cpu 1: $r1"
fi

# Decoded with no file: per CPU the share of PT bytes the decoder did not
# have to skip after an error, the errors counted.  The issue's target is
# 99% (TV_WHOLE_BOOT_MIN_PCT).  Measured 87.7-97.8% until the snapshots
# followed self-writing pages (docs/SNAPSHOTS.md): Linux's alternatives
# code patches the page it runs from, which kept its stale snapshot; since
# then 99.96% (cpu 0) and 99.99% (cpu 1).
min_pct=${TV_WHOLE_BOOT_MIN_PCT:-99}
for cpu in 0 1; do
	total=$(stat -c %s "$cap/cpu$cpu.pt" 2>/dev/null || echo 0)
	read -r skipped errs < <(sed -n 's/.*errors_before_kernel \([0-9]*\) errors_kernel_user \([0-9]*\) skipped \([0-9]*\) .*/\3 \1 \2/p' "$work/cpu$cpu.result" |
		awk '{ print $1, $2 + $3 }')
	pct=$(awk -v t="$total" -v s="${skipped:-0}" 'BEGIN { if (t > 0) printf "%.3f", 100 * (t - s) / t; else print 0 }')
	if [ -n "$skipped" ] && awk -v p="$pct" -v m="$min_pct" 'BEGIN { exit !(p >= m) }'; then
		tv_ok "$T: cpu $cpu: decoded from the capture alone (code snapshots, no file): $pct% of $total PT bytes (>= $min_pct%, the issue's target), $errs decode errors"
	else
		tv_fail "$T: cpu $cpu: decoded from the capture alone (code snapshots, no file): >= $min_pct% of the PT bytes" \
			"$pct% of $total, skipped ${skipped:-?}, errors ${errs:-?}; $(head -c 300 "$work/decode$cpu.err")"
	fi
done
# The kernel's names from vmlinux (--system-map): the address the trace
# calls start_kernel at (the running kernel's own /proc/kallsyms, printed
# by the fixture's /init) is start_kernel to the host tools.
ksym=$("$TV_BUILD/tracevisor" symbolize --system-map "$LINUX_VMLINUX" "$start_kernel" 2>&1)
if [ "$ksym" = "$start_kernel start_kernel+0x0" ] && echo "$order" | grep -q 'start_kernel'; then
	tv_ok "$T: --system-map names the address the trace enters start_kernel at: $ksym"
else
	tv_fail "$T: --system-map names the address the trace enters start_kernel at" "symbolize: '$ksym'; cpu 0 order '$order'"
fi
# What `make run` prints: the boot by phase, decoded with no file (the
# fast decoder), names from the capture's IMAGE records and vmlinux.
rep0=$(date +%s)
"$TV_BUILD/tracevisor" report --phases --top 8 --system-map "$LINUX_VMLINUX" "$cap/trace.tvt" >"$work/report.txt" 2>"$work/report.err"
report_s=$(($(date +%s) - rep0))
phases=$(awk '$NF ~ /^(firmware|loader|kernel|user)$/ && NF == 4 { printf "%s%s %s", (n++ ? ", " : ""), $4, $1 }' "$work/report.txt")
if awk '$NF ~ /^(firmware|loader|kernel|user)$/ && NF == 4 && $1 > 0 { k++ } END { exit k != 4 }' "$work/report.txt"; then
	tv_ok "$T: report --phases: branches in all four phases ($phases; $report_s s)"
else
	tv_fail "$T: report --phases: branches in all four phases" "${phases:-no phase table}; $(head -c 300 "$work/report.err")"
fi
# Instructions per phase (the issue's "fraction of instructions decoded
# per phase"): each phase has instructions, and its decoded share (the
# undecoded part estimated from the PT bytes skipped after its errors, at
# the phase's instructions per PT byte) is >= 99%.  Measured on make run's
# capture, 2026-11-27: 99.99% / 100% / 99.97% / 100%.
insns=$(awk '$NF ~ /^(firmware|loader|kernel|user)$/ && NF == 6 { printf "%s%s %s insns %s", (n++ ? ", " : ""), $6, $1, $5 }' "$work/report.txt")
if awk '$NF ~ /^(firmware|loader|kernel|user)$/ && NF == 6 && $1 > 0 { p = $5; sub(/%$/, "", p); if (p + 0 >= 99) k++ } END { exit k != 4 }' "$work/report.txt"; then
	tv_ok "$T: report --phases: instructions in all four phases, each >= 99% decoded ($insns)"
else
	tv_fail "$T: report --phases: instructions in all four phases, each >= 99% decoded" "${insns:-no instruction table}"
fi
# Firmware code named by module (the firmware's IMAGE records: no file
# given), the loader's images by theirs, the kernel's by vmlinux's symbols.
fw_named=$(sed -n '/^# firmware: hottest functions/,/^#$/p' "$work/report.txt" | awk 'NF >= 4 && $4 !~ /^0x/ && $1 ~ /^[0-9]+$/' | head -3)
ld_named=$(sed -n '/^# loader: hottest functions/,/^#$/p' "$work/report.txt" | awk 'NF >= 4 && $4 !~ /^0x/ && $1 ~ /^[0-9]+$/' | head -3)
k_named=$(sed -n '/^# kernel: hottest functions/,/^#$/p' "$work/report.txt" | grep -c '(kernel)')
if [ -n "$fw_named" ] && [ -n "$ld_named" ] && [ "$k_named" -gt 0 ]; then
	tv_ok "$T: report names firmware functions by module ($(echo "$fw_named" | head -1 | awk '{ $1 = $2 = $3 = ""; print }' | sed 's/^ *//')), the loader's ($(echo "$ld_named" | head -1 | awk '{ $1 = $2 = $3 = ""; print }' | sed 's/^ *//')) and the kernel's from vmlinux"
else
	tv_fail "$T: report names firmware functions by module, the loader's and the kernel's" \
		"firmware: '$(echo "$fw_named" | head -1)', loader: '$(echo "$ld_named" | head -1)', kernel named: $k_named"
fi

# Snapshots against the kernel's file: CPU 1's instruction flow decoded
# from the snapshots alone and with vmlinux given (--elf: the file's bytes
# win where it has them) up to the file decode's first error in kernel
# text.  Where the kernel did not patch its code the two flows are the
# same instruction for instruction; where it did (alternatives, return
# thunks, paravirt calls: the snapshot's bytes at an address differ from
# the file's), the file's detour is skipped until the flows meet again;
# at the error the file's bytes are the unpatched ones and the snapshot
# flow decodes on (no error in the next 200,000 instructions).
"$TV_BUILD/tracevisor" pt-decode "$cap/trace.tvt" --cpu 1 -q --no-symbols 2>/dev/null | head -n 400000 >"$work/flow-snap.txt"
"$TV_BUILD/tracevisor" pt-decode "$cap/trace.tvt" --cpu 1 -q --no-symbols --elf "$LINUX_VMLINUX" 2>/dev/null | head -n 400000 >"$work/flow-file.txt"
cmpres=$(python3 - "$work/flow-snap.txt" "$work/flow-file.txt" <<'PY'
import sys
def load(p):
    out = []
    for l in open(p):
        l = l.rstrip("\n")
        if l.startswith("[error"):
            out.append(("E", l))
        elif l.startswith("[sync"):
            out.append(("S", l))
        elif l.startswith("0x"):
            f = l.split()
            out.append(("I", int(f[0], 16), " ".join(x for x in f[1:] if len(x) == 2 and all(c in "0123456789abcdef" for c in x))))
    return out
snap, file = load(sys.argv[1]), load(sys.argv[2])
K = 0xffff800000000000
i = j = same = patched = 0
sites = []
site = first = pos = None
while i < len(snap) and j < len(file):
    a, b = snap[i], file[j]
    if a == b:
        if a[0] == "I" and a[1] >= K:
            same += 1
        i += 1; j += 1
        continue
    if b[0] == "E" and "last ip 0xffffffff8" in b[1]:
        site = ("error", b[1].split("last ip ")[1].split(":")[0], "", "")
        break
    if a[0] == "I" and b[0] == "I" and a[1] == b[1] and a[1] >= K and a[2] != b[2]:
        # a patched site: the file's detour (a thunk) rejoins the snapshot's
        # flow within a few instructions, or the patch changed the path
        # (a static key): there the file's decode goes wrong.
        nxt = snap[i + 1] if i + 1 < len(snap) else None
        k = j + 1
        while k < min(len(file), j + 8) and file[k] != nxt:
            k += 1
        if nxt is not None and k < min(len(file), j + 8):
            patched += 1
            if len(sites) < 3: sites.append("%#x" % a[1])
            i += 1; j = k
            continue
        site = ("diverge", "%#x" % a[1], a[2], b[2])
        if same == 0 and first is None:
            # The stretch began at a patched site (a resync inside patched
            # code): the file's decode goes wrong there.  Note it, take up
            # the file's flow after its next sync and the snapshot's flow
            # where it reaches the same instruction, and compare on.
            first = site
            first_err = (any(x[0] == "E" for x in file[j:j + 200]),
                         sum(1 for x in snap[i:i + 200000] if x[0] == "E"))
            site = None
            if pos is None:
                pos = {}
                for n, x in enumerate(snap):
                    if x[0] == "I":
                        pos.setdefault(x, []).append(n)
            k = j + 1
            while k < len(file) and file[k][0] != "S":
                k += 1
            m = None
            for k in range(k, min(len(file), k + 20000)):
                if file[k][0] != "I" or file[k][1] < K:
                    continue
                m = next((n for n in pos.get(file[k], ()) if n > i), None)
                if m is not None:
                    break
            if m is None:
                break
            i, j = m, k
            continue
        break
    print("differ-unpatched at snapshot line %d: %s / %s" % (i, a, b)); sys.exit()
if site is None and first is not None:
    site, (file_err, snap_err) = first, first_err
    first = None
elif site is None:
    print("no-site"); sys.exit()
else:
    file_err = any(x[0] == "E" for x in file[j:j + 200])
    snap_err = sum(1 for x in snap[i:i + 200000] if x[0] == "E")
print("ok same %d patched %d (%s) site %s %s snapshot [%s] file [%s] file-error-after %s snapshot-errors-next-200000 %d%s" %
      (same, patched, ",".join(sites), site[0], site[1], site[2], site[3], "yes" if file_err else "no", snap_err,
       "" if first is None else " (first stretch began in patched code at %s)" % first[1]))
PY
)
if echo "$cmpres" | grep -qE '^ok same [1-9][0-9]* patched [0-9]+ .* site (diverge|error) .* file-error-after yes snapshot-errors-next-200000 0( \(first stretch began in patched code at 0x[0-9a-f]+\))?$'; then
	tv_ok "$T: cpu 1: snapshots vs vmlinux: the same instruction for instruction where unpatched, patched sites decoded from the snapshot, the file wrong where a patch changed the path ($cmpres)"
else
	tv_fail "$T: cpu 1: snapshots vs vmlinux: the same where unpatched, a patched site right from the snapshot and wrong from the file" "${cmpres:-no result}"
fi
rm -f "$work/flow-snap.txt" "$work/flow-file.txt"

# The snapshots themselves: every content arrived whole and checked.
snapline=$(grep '^code snapshots:' "$work/info.txt")
if echo "$snapline" | grep -qE 'code snapshots: [1-9][0-9]* .*bad hash 0, missing 0 \(chunks 0\), bad records 0'; then
	tv_ok "$T: the capture's code snapshots are whole ($snapline)"
else
	tv_fail "$T: the capture's code snapshots are whole" "${snapline:-no 'code snapshots:' line in tracevisor info}"
fi

# Figures (docs/BENCHMARKS.md).
tsc_hz=$(sed -n 's/.* ticks at \([0-9]*\) Hz.*/\1/p' "$work/info.txt" | head -1)
span=$(sed -n 's/^time span: \([0-9.]*\) s.*/\1/p' "$work/info.txt")
mb=$(sed -n 's/.*recording: .* \([0-9.]*\) MB (.*/\1/p' "$work/cap/record.stderr" | tail -1)
stalls=$(tr -d '\r' <"$log" | grep -E 'trace: cpu [01]: window 1 stalled' | sed 's/.*window 1 stalled /stalled /' | tr '\n' ';')
echo "# $T: cpu0 $(stat -c %s "$cap/cpu0.pt") PT bytes, cpu1 $(stat -c %s "$cap/cpu1.pt") PT bytes," \
	"${span:-?} s emulated (TSC at ${tsc_hz:-?} Hz), Bochs run $host_s s host, receiver ${mb:-?} MB," \
	"$(awk -v m="${mb:-0}" -v s="$host_s" 'BEGIN { if (s > 0) printf "%.2f", m / s; else print "?" }') MB/s over the run;" \
	"$stalls cpu0 decode: $r0; cpu1 decode: $r1;" \
	"$(tr -d '\r' <"$log" | grep -E 'snap: cpu [01]: snapshots' | tail -2 | sed 's/.*snap: /snap: /' | tr '\n' ';')" \
	"decode $decode_s s, report $report_s s"
tv_keep_log "$log"
# TV_KEEP_CAPTURE=1 keeps the capture (hundreds of MB) for a look by hand.
[ -n "${TV_KEEP_CAPTURE:-}" ] || rm -f "$cap/cpu0.pt" "$cap/cpu1.pt" "$cap/trace.tvt"
exit 0
