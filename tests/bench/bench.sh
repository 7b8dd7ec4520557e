#!/usr/bin/env bash
# tests/bench/bench.sh - `make bench`: what the blue pill costs, measured side
# by side in one run (docs/BENCHMARKS.md).  Not a test: it checks nothing
# beyond "did the boot finish", and `make test` never runs it.
#
#  1. Debian's Linux (the fixture, docs/LINUX-FIXTURE.md) booted through its
#     EFI stub in Bochs 3.0 with 2 Skylake-X CPUs, as tests/bochs/linux.sh
#     does, with tracevisor `vmx = off` and `vmx = on`, alternating,
#     BENCH_REPEAT times each: wall seconds from Bochs start to the ACPI
#     power-off, Linux's uptime at /init, and Bochs's emulated time at the
#     power-off (its tick counter, which is also the guest's TSC).
#  2. One more `vmx = on` boot with `heartbeat_s = 1` and `log_level = debug`:
#     vmm/exit/periodic.c then logs every CPU's cumulative exit counts by reason
#     ("hbsum:" lines) each emulated second; the last set before the
#     power-off is the exit profile of the boot (tests/bench/exit-profile.awk).  Its own timings show what
#     the heartbeat itself costs.
#  3. build/bench/ring_bench (tests/bench/ring_bench.c, -O2): appends per
#     second of vmm/trace/ring.c against a memcpy of 24-byte records.
#  4. The test payload on one CPU: ticks (= instructions under Bochs) of
#     1000 CPUIDs with vmx off and on, and of its traced window untraced
#     and single-stepped with MTF: the hypervisor's instructions per exit
#     and the MTF slowdown.
#
# Environment: BENCH_REPEAT (boots per vmx setting, default 2),
# BENCH_TIMEOUT (seconds per boot, default 300), BENCH_HEARTBEAT=0 skips
# the exit-profile boot, BENCH_RING=0 skips the micro-benchmark,
# BENCH_LINUX=0 skips the Linux boots (1 and 2), BENCH_PAYLOAD=0 skips 4;
# BENCH_PTFAST=0 skips ptfast_bench.sh (fast PT decoder vs libipt);
# BENCH_HOST=0, BENCH_RECV=0, BENCH_NET=0 skip host_bench.sh, recv_bench.sh
# and net_bench.sh (export goodput vs the emulated NIC's raw frame rate);
# BENCH_EXPORT=0 skips export_bench.sh (the exporter on host loopback);
# BENCH_WHOLEBOOT=0 skips wholeboot_bench.sh (the whole boot untraced,
# with PT, with PT and code snapshots: emulated and wall time).
# Work files: build/bench/.  Prints a table and, last, one line
# "BENCH: key=value ..." for machines.
set -uo pipefail
# shellcheck source=../lib.sh source-path=SCRIPTDIR disable=SC1091
. "$(dirname "$0")/../lib.sh"

repeat=${BENCH_REPEAT:-2}
timeout_s=${BENCH_TIMEOUT:-300}
work=$TV_BUILD/bench
mkdir -p "$work"
cd "$TV_ROOT" || exit 1

die() { echo "bench: $*" >&2; exit 1; }
case $repeat in '' | *[!0-9]* | 0) die "BENCH_REPEAT must be a positive integer" ;; esac

bochs=$(tv_dep BOCHS)
{ [ -n "$bochs" ] && [ -x "$bochs" ]; } || die "Bochs 3.0 not built (build/deps.mk has no BOCHS; TRACEVISOR_SKIP_BOCHS?)"
[ -f "$TV_BUILD/tracevisor.efi" ] || die "build/tracevisor.efi missing: make all"
[ -f "$TV_BUILD/linuxload.efi" ] || die "build/linuxload.efi missing: make linux-fixture"
if [ ! -f "$TV_BUILD/linux/linux.env" ]; then
	bash scripts/linux-fixture.sh "$TV_BUILD/linux" >"$work/fixture.log" 2>&1 ||
		die "scripts/linux-fixture.sh failed: $(tail -n 1 "$work/fixture.log")"
fi
# shellcheck source=/dev/null
. "$TV_BUILD/linux/linux.env"

# The kernel command line of tests/bochs/linux.sh (tsc_early_khz: Bochs's
# TSC runs at ips, 100 MHz, not the 3.5 GHz CPUID claims).
printf '%s\n' "$LINUX_CMDLINE tsc_early_khz=100000" >"$work/cmdline.txt"

# mkstick NAME CONF-LINE... - build/bench/NAME.img with this tracevisor.conf.
mkstick() {
	local name=$1
	shift
	printf '%s\n' 'loader = \EFI\linux\linuxload.efi' 'console = off' "$@" >"$work/$name.conf"
	TV_IMAGE_MIB=64 tv_image "$work/$name.img" \
		EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$work/$name.conf" \
		EFI/linux/linuxload.efi="$TV_BUILD/linuxload.efi" \
		EFI/linux/vmlinuz="$LINUX_VMLINUZ" \
		EFI/linux/initrd.img="$LINUX_INITRD" \
		EFI/linux/cmdline.txt="$work/cmdline.txt" || die "cannot build $work/$name.img"
}

# boot NAME RUN - one Bochs boot of NAME.img (tv_bochs's machine with
# 1 GiB, as tests/bochs/linux.sh).  Bochs's "error" messages are not
# logged: a benchmark should not time log writes.  The CMOS clock starts
# at a fixed date (tv_bochs: the host's time) so that what the guest does
# is the same in every run.  Sets rc, wall, cpu (Bochs's user + system
# seconds, less disturbed than wall by other load on the host), uptime,
# ticks, load, ok; the serial log is build/bench/NAME-RUN.serial.log.
boot() {
	local name=$1 run=$2 log start end TIMEFORMAT='%U %S'
	log=$work/$name-$run.serial.log
	rm -f "$log" "$log.bochs" "$work/$name.img.lock"
	cat >"$log.bochsrc" <<RC
megs: 1024
romimage: file=$(tv_dep OVMF_FD)
vgaromimage: file=$(tv_dep VGABIOS)
cpu: model=corei7_skylake_x, count=2, ips=100000000, ignore_bad_msrs=1
pci: enabled=1, chipset=i440fx
display_library: nogui
com1: enabled=1, mode=file, dev=$log
boot: disk
clock: sync=none, time0=946681200
ata0-master: type=disk, path=$work/$name.img, mode=flat
log: $log.bochs
panic: action=fatal
error: action=ignore
info: action=ignore
debug: action=ignore
RC
	load=$(cut -d' ' -f1 /proc/loadavg)
	rc=0
	start=$(date +%s.%N)
	{ time (cd "$work" && timeout --kill-after=5 "$timeout_s" "$bochs" -q -f "$log.bochsrc" \
		</dev/null >"$log.stdout" 2>&1); } 2>"$log.time" || rc=$?
	end=$(date +%s.%N)
	cpu=$(awk 'NF == 2 { printf "%.1f", $1 + $2 }' "$log.time")
	rm -f "$work/$name.img.lock"
	wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	uptime=$(tr -d '\r' <"$log" | sed -n 's/^TVLINUX: uptime \([0-9.]*\) s.*/\1/p' | head -1)
	# The power-off is a Bochs "panic" line; its prefix is the tick count.
	ticks=$(sed -n 's/^\([0-9]*\)p\[ACPI *\] >>PANIC<< ACPI control: soft power off.*/\1/p' "$log.bochs" | head -1)
	ok=1
	[ -n "$ticks" ] && [ -n "$uptime" ] || ok=0
}

# stat3 VALUES... - "median min max" (empty input: "- - -").
stat3() {
	printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '
		{ v[NR] = $1 }
		END {
			if (!NR) { print "- - -"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f %.2f %.2f\n", m, v[1], v[NR]
		}'
}

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
# The cache directory names the version (scripts/deps.sh: bochs-VERSION-KEY).
bochs_ver=$(basename "$(dirname "$(dirname "$bochs")")")
built=$({ strings "$bochs" 2>/dev/null || true; } | grep '^Built from' | head -1)
bochs_ver="$bochs_ver (${built:-build date unknown})"
tv_rev=$(git -C "$TV_ROOT" describe --always --dirty 2>/dev/null || echo unknown)
echo "bench: $(date -u +%Y-%m-%dT%H:%MZ), host $(nproc) CPUs ($cpu_model), $bochs_ver"
echo "bench: tracevisor $tv_rev, Linux $LINUX_VERSION ($LINUX_ABI) through its EFI stub, Bochs 2 x corei7_skylake_x ips=100000000, BENCH_REPEAT=$repeat"

# The sticks are rebuilt every run (seconds); Bochs's lock files and the
# images go when the script ends, however it ends.  Bochs itself runs
# under timeout in the foreground: an interrupt reaches it too.
trap 'rm -f "$work"/off.img "$work"/on.img "$work"/hb.img "$work"/*.img.lock' EXIT
mkstick off 'vmx = off'
mkstick on 'vmx = on'
[ "${BENCH_HEARTBEAT:-1}" = 0 ] || mkstick hb 'vmx = on' 'heartbeat_s = 1' 'log_level = debug'

# --- 1. vmx off / on, alternating -------------------------------------------
declare -a W_off=() W_on=() C_off=() C_on=() U_off=() U_on=() E_off=() E_on=()
failed=0
linux_runs=$repeat
[ "${BENCH_LINUX:-1}" = 0 ] && linux_runs=0
[ "$linux_runs" = 0 ] ||
	printf '\n%-4s %-4s %8s %8s %10s %12s %6s  %s\n' run vmx wall_s cpu_s uptime_s emulated_s load1 status
for ((i = 1; i <= linux_runs; i++)); do
	for mode in off on; do
		boot "$mode" "$i"
		emu=-
		[ -n "$ticks" ] && emu=$(awk -v t="$ticks" 'BEGIN { printf "%.2f", t / 1e8 }')
		status=ok
		if [ "$ok" != 1 ]; then
			status="FAILED (bochs status $rc; log build/bench/$mode-$i.serial.log)"
			failed=1
		elif [ "$mode" = on ] && ! grep -q 'vmx: all 2 CPUs run as guests of tracevisor' "$work/$mode-$i.serial.log"; then
			status="FAILED (not virtualized; log build/bench/$mode-$i.serial.log)"
			failed=1
		fi
		printf '%-4s %-4s %8s %8s %10s %12s %6s  %s\n' "$i" "$mode" "$wall" "${cpu:--}" "${uptime:--}" "$emu" "$load" "$status"
		if [ "$ok" = 1 ]; then
			eval "W_$mode+=(\"\$wall\"); C_$mode+=(\"\$cpu\"); U_$mode+=(\"\$uptime\"); E_$mode+=(\"\$emu\")"
		fi
	done
done

read -r wm_off wl_off wh_off < <(stat3 "${W_off[@]}")
read -r wm_on wl_on wh_on < <(stat3 "${W_on[@]}")
read -r cm_off cl_off ch_off < <(stat3 "${C_off[@]}")
read -r cm_on cl_on ch_on < <(stat3 "${C_on[@]}")
read -r um_off ul_off uh_off < <(stat3 "${U_off[@]}")
read -r um_on ul_on uh_on < <(stat3 "${U_on[@]}")
read -r em_off el_off eh_off < <(stat3 "${E_off[@]}")
read -r em_on el_on eh_on < <(stat3 "${E_on[@]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b != "-") printf "%.3f", b / a; else printf "-" }'; }
r_wall=$(ratio "$wm_off" "$wm_on")
r_cpu=$(ratio "$cm_off" "$cm_on")
r_up=$(ratio "$um_off" "$um_on")
r_emu=$(ratio "$em_off" "$em_on")

[ "$linux_runs" = 0 ] || {
echo
echo "Linux boot, EFI stub, 2 CPUs (median [min-max] of $repeat; on/off = ratio of medians)"
printf '%-36s %-22s %-22s %s\n' metric 'vmx = off' 'vmx = on' on/off
printf '%-36s %-22s %-22s %s\n' 'wall s, Bochs start to power-off' \
	"$wm_off [$wl_off-$wh_off]" "$wm_on [$wl_on-$wh_on]" "$r_wall"
printf '%-36s %-22s %-22s %s\n' 'Bochs CPU s (user + system)' \
	"$cm_off [$cl_off-$ch_off]" "$cm_on [$cl_on-$ch_on]" "$r_cpu"
printf '%-36s %-22s %-22s %s\n' 'Linux uptime at /init, s' \
	"$um_off [$ul_off-$uh_off]" "$um_on [$ul_on-$uh_on]" "$r_up"
printf '%-36s %-22s %-22s %s\n' 'emulated s at power-off (ticks/1e8)' \
	"$em_off [$el_off-$eh_off]" "$em_on [$el_on-$eh_on]" "$r_emu"
}

# --- 2. exit profile ----------------------------------------------------------
hb_summary="hb=skipped"
if [ "${BENCH_HEARTBEAT:-1}" != 0 ] && [ "${BENCH_LINUX:-1}" != 0 ]; then
	boot hb 1
	hblog=$work/hb-1.serial.log
	hb_wall=$wall hb_cpu=${cpu:--} hb_up=${uptime:--} hb_emu=-
	[ -n "$ticks" ] && hb_emu=$(awk -v t="$ticks" 'BEGIN { printf "%.2f", t / 1e8 }')
	echo
	if [ "$ok" != 1 ]; then
		echo "exit profile: FAILED (bochs status $rc; log build/bench/hb-1.serial.log)"
		failed=1
		hb_summary="hb=failed"
	else
		echo "Exit profile: vmx = on, heartbeat_s = 1, log_level = debug (1 boot: ${hb_wall} s wall, ${hb_cpu} s CPU, uptime ${hb_up} s, emulated ${hb_emu} s)"
		# reason number -> name, from vmm/vmx/vmx_defs.h and vmm/exit/exit.c
		awk '
			FNR == NR { if (match($0, /EXIT_REASON_[A-Z0-9_]+ *= *[0-9]+/)) {
					split(substr($0, RSTART, RLENGTH), a, / *= */); num[a[1]] = a[2] }
				next }
			match($0, /\[EXIT_REASON_[A-Z0-9_]+\] = "[^"]*"/) {
				s = substr($0, RSTART, RLENGTH); k = s; sub(/^\[/, "", k); sub(/\].*/, "", k)
				n = s; sub(/^[^"]*"/, "", n); sub(/"$/, "", n)
				if (k in num) print num[k] "\t" n }' \
			vmm/vmx/vmx_defs.h vmm/exit/exit.c >"$work/reasons.tsv"
		tr -d '\r' <"$hblog" | grep -oE 'hbsum: cpu [0-9]+: tsc [0-9]+ exits [0-9]+:( [0-9]+=[0-9]+)*' >"$work/hbsum.txt"
		awk -v names="$work/reasons.tsv" -v mach="$work/hb.mach" -v off="${ticks:-0}" \
			-f tests/bench/exit-profile.awk "$work/hbsum.txt"
		hb_summary="$(cat "$work/hb.mach" 2>/dev/null) hb_wall=$hb_wall hb_cpu=$hb_cpu hb_uptime=$hb_up hb_emulated=$hb_emu"
		printf 'heartbeat run vs the median vmx = on boot: wall %s, CPU %s, emulated %s\n' \
			"$(ratio "$wm_on" "$hb_wall")" "$(ratio "$cm_on" "$hb_cpu")" "$(ratio "$em_on" "$hb_emu")"
	fi
fi

# --- 3. trace ring micro-benchmark ----------------------------------------
ring_summary="ring=skipped"
if [ "${BENCH_RING:-1}" != 0 ]; then
	echo
	if ${CC:-gcc} -std=gnu11 -O2 -I"$TV_ROOT" tests/bench/ring_bench.c vmm/trace/ring.c \
		-o "$work/ring_bench" 2>"$work/ring_bench.cc.log"; then
		echo "Trace ring producer (vmm/trace/ring.c, gcc -O2, host CPU; best of 5 x 8M appends, 1 MiB ring, OVERWRITE)"
		"$work/ring_bench" >"$work/ring.txt" || failed=1
		awk '
			BEGIN { printf "%-16s %9s %9s %10s %10s\n", "case", "ns/rec", "Mrec/s", "bytes/rec", "x memcpy" }
			{ printf "%-16s %9s %9s %10s %10s\n", $2, $6, $8, $10, $12 }' "$work/ring.txt"
		echo "bytes per branch: compact 16, full 24, full with TSC 32; raw BTS record (hardware) 24"
		ring_summary=$(awk '{ k = $2; gsub(/[^A-Za-z0-9]+/, "_", k); printf "%sring_%s_ns=%s", (NR > 1 ? " " : ""), k, $6 }' "$work/ring.txt")
	else
		echo "ring_bench: build failed (build/bench/ring_bench.cc.log)"
		failed=1
	fi
fi

# --- 4. cost per exit and MTF slowdown (the payload, 1 CPU) ------------------
# Bochs with one CPU advances the TSC by one tick per instruction, so the
# payload's rdtsc-timed loops count instructions, tracevisor's own in VMX
# root included: 1000 CPUIDs natively (vmx = off) vs. each a VM exit
# (vmx = on), and the traced window (tests/payload/traced.S, 64 iterations)
# untraced (vmx = on, trace_cpus = 1: CPU 0 has no ring, the START
# hypercall is refused) vs. single-stepped with MTF.  serial = off: the
# window's export over the UART would dominate the time.
pl_summary="payload=skipped"
if [ "${BENCH_PAYLOAD:-1}" != 0 ]; then
	echo
	declare -A PL_CPUID=() PL_WIN=()
	for mode in off untraced mtf; do
		case $mode in
		off) conf=('vmx = off') ;;
		untraced) conf=('vmx = on' 'serial = off' 'trace_cpus = 1') ;;
		mtf) conf=('vmx = on' 'serial = off' 'source = mtf') ;;
		esac
		printf '%s\n' 'loader = \EFI\tracevisor\payload.efi' 'console = off' "${conf[@]}" >"$work/pl-$mode.conf"
		tv_image "$work/pl-$mode.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
			EFI/tracevisor/tracevisor.conf="$work/pl-$mode.conf" \
			EFI/tracevisor/payload.efi="$TV_BUILD/payload.efi"
		TV_BOCHS_MEGS=512 tv_bochs "$work/pl-$mode.serial.log" 120 "$work/pl-$mode.img" 1 >/dev/null
		rm -f "$work/pl-$mode.img"
		PL_CPUID[$mode]=$(tr -d '\r' <"$work/pl-$mode.serial.log" | sed -n 's/.*timing: 1000 cpuid: \([0-9]*\) ticks.*/\1/p' | head -1)
		PL_WIN[$mode]=$(tr -d '\r' <"$work/pl-$mode.serial.log" | sed -n 's/.*timing: traced window: \([0-9]*\) ticks.*/\1/p' | head -1)
	done
	if [ -z "${PL_CPUID[off]}" ] || [ -z "${PL_CPUID[untraced]}" ] || [ -z "${PL_WIN[untraced]}" ] || [ -z "${PL_WIN[mtf]}" ]; then
		echo "payload timings: FAILED (logs build/bench/pl-*.serial.log)"
		failed=1
		pl_summary="payload=failed"
	else
		steps=$(grep -oE '[0-9]+ steps' "$work/pl-mtf.serial.log" | head -1 | cut -d' ' -f1)
		steps=${steps:-963}
		echo "Payload, 1 CPU, Bochs ticks (= instructions executed, tracevisor's included)"
		awk -v co="${PL_CPUID[off]}" -v cu="${PL_CPUID[untraced]}" -v wu="${PL_WIN[untraced]}" \
			-v wm="${PL_WIN[mtf]}" -v steps="$steps" -v mach="$work/pl.mach" 'BEGIN {
			printf "%-44s %12s %12s %8s\n", "", "baseline", "measured", "ratio"
			printf "%-44s %12d %12d %8.1f\n", "1000 CPUID (vmx off | on: each an exit)", co, cu, cu / co
			printf "%-44s %12d %12d %8.1f\n", "traced window (untraced | MTF-stepped)", wu, wm, wm / wu
			pe = (cu - co) / 1000; ps = (wm - wu) / steps
			printf "ticks per CPUID exit, beyond the instruction: %.0f\n", pe
			printf "ticks per MTF step (%d steps, 319 branch records), beyond the instruction: %.0f\n", steps, ps
			printf "payload_cpuid_ratio=%.2f payload_window_ratio=%.2f ticks_per_cpuid_exit=%.0f ticks_per_mtf_step=%.0f", cu / co, wm / wu, pe, ps > mach
		}'
		pl_summary=$(cat "$work/pl.mach")
	fi
fi

echo
[ "${BENCH_HOST:-1}" = 0 ] || BUILD="${BUILD:-build}" bash "$(dirname "$0")/host_bench.sh" || failed=1  # host tools (docs/BENCHMARKS.md); BENCH_HOST=0 skips
[ "${BENCH_PTFAST:-1}" = 0 ] || BUILD="${BUILD:-build}" bash "$(dirname "$0")/ptfast_bench.sh" || failed=1  # fast PT decoder vs libipt; BENCH_PTFAST=0 skips
[ "${BENCH_RECV:-1}" = 0 ] || BUILD="${BUILD:-build}" bash "$(dirname "$0")/recv_bench.sh" || failed=1  # receiver ingest vs socat (docs/BENCHMARKS.md); BENCH_RECV=0 skips
[ "${BENCH_NET:-1}" = 0 ] || BUILD="${BUILD:-build}" bash "$(dirname "$0")/net_bench.sh" || failed=1  # export goodput vs raw frame rate (docs/BENCHMARKS.md); BENCH_NET=0 skips
[ "${BENCH_EXPORT:-1}" = 0 ] || BUILD="${BUILD:-build}" bash "$(dirname "$0")/export_bench.sh" || failed=1  # the real exporter to tracevisor record on loopback, new vs fixed transport, clean and lossy (docs/BENCHMARKS.md); BENCH_EXPORT=0 skips
[ "${BENCH_WHOLEBOOT:-1}" = 0 ] || BUILD="${BUILD:-build}" bash "$(dirname "$0")/wholeboot_bench.sh" || failed=1  # the whole boot untraced / PT / PT + snapshots (docs/BENCHMARKS.md); BENCH_WHOLEBOOT=0 skips
echo "BENCH: repeat=$repeat wall_off=$wm_off wall_on=$wm_on wall_ratio=$r_wall cpu_off=$cm_off cpu_on=$cm_on cpu_ratio=$r_cpu uptime_off=$um_off uptime_on=$um_on uptime_ratio=$r_up emulated_off=$em_off emulated_on=$em_on emulated_ratio=$r_emu $hb_summary $ring_summary $pl_summary failed=$failed"
exit "$failed"
