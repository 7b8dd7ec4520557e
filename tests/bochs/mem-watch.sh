#!/usr/bin/env bash
# bochs/mem-watch.sh - memory-access tracing (issue "Memory-access
# tracing", docs/MEMTRACE.md) against ground truth on Bochs with the trace
# model, 2 CPUs.
#
# build/memtest.efi (tests/payload/memtest.c + mem_code.S) runs as the OS
# loader under tracevisor (source = pt, windows by the payload's
# hypercalls, serial export).  It arms a watch on 256 bytes of a buffer
# by hypercall (a linear range, translated by tracevisor through the
# firmware's page tables, label "tvm_buf"), then both CPUs run tvm_run:
# phase A at the same time (32 x: a store and a load of each CPU's own
# word of line 0 - false sharing -, a LOCK XADD on line 1's counter - true
# sharing -, a store outside the range on the same page - collateral),
# phase B turn by turn (8 steps each: store 4, load 4, load 1 of the other
# CPU's word, store 1, all on line 2).  Every expected access is computed
# here from mem_code.S's construction, `nm` of build/memtest.so and the
# addresses the payload prints - never from what tracevisor says:
#   - each CPU's recorded accesses equal the expected ones one for one, in
#     order: instruction address, read/write/locked, size, linear and
#     physical address (identity-mapped firmware), the values written and
#     read where the payload's construction fixes them; none missing while
#     the other CPU steps (phase A runs on both at once);
#   - the XADDs' old values over both CPUs are 0 .. 63, each once (the
#     counter's atomic sequence), and the payload's counter ends at 64;
#   - phase B over both CPUs in the turn order (the records' TSCs);
#   - the hypervisor's counters: 32 collateral steps per CPU, nothing
#     undecoded, nothing lost;
#   - the sharing report (tracevisor c2c) names line 0 false-sharing with
#     offsets +0x0 and +0x8 and both code sites, line 1 true-sharing;
#   - with mem_filter = sharing: in phase B exactly the accesses mtrace's
#     rule keeps, computed here over the known order; in phase A, per CPU,
#     recorded + filtered = the 96 accesses.
# The model's binary: TV_BOCHS_BIN, else BOCHS_TRACE from build/deps.mk.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
TV_FAILED=0
T=mem-watch
tv_model_bochs "$T" || exit 0
model=$TV_MODEL
if ! grep -q 'Model a subset of Intel Processor Trace' "$model"; then
	tv_skip "$T" "$model has no cpu: pt option (patch 0003 not applied)"
	exit 0
fi
if [ ! -f "$TV_BUILD/memtest.efi" ]; then
	tv_skip "$T" "no $TV_BUILD/memtest.efi (make all)"
	exit 0
fi
work=$TV_BUILD/test/bochs-$T
rm -rf "$work"
mkdir -p "$work" "$TV_LOGS"
A=32 B=8   # TVM_A_ITERS, TVM_B_STEPS in tests/payload/memtest.c

declare -A sym
while read -r value _ name; do sym[$name]=$((0x$value)); done < <(nm "$TV_BUILD/memtest.so")

# run NAME [CONFIG-LINE...]: boot tracevisor + memtest.efi; sets log, tvt.
run() {
	local name=$1 dir=$work/$1 rc
	shift
	mkdir -p "$dir"
	log=$TV_LOGS/bochs-$T-$name.serial.log
	tvt=$dir/trace.tvt
	printf '%s\n' 'loader = \EFI\tracevisor\memtest.efi' 'console = off' 'source = pt' \
		'trace_start = hypercall' "$@" >"$dir/tracevisor.conf"
	tv_image "$dir/disk.img" EFI/BOOT/BOOTX64.EFI="$TV_BUILD/tracevisor.efi" \
		EFI/tracevisor/tracevisor.conf="$dir/tracevisor.conf" \
		EFI/tracevisor/memtest.efi="$TV_BUILD/memtest.efi"
	rc=$(TV_BOCHS_BIN=$model TV_BOCHS_EXTRA='cpu: pt=1' tv_bochs "$log" "${TV_MEM_WATCH_TIMEOUT:-400}" "$dir/disk.img" 2)
	rm -f "$dir/disk.img"
	if [ "$rc" != 124 ] && [ "$rc" != 137 ] && grep -q 'TVM-OK' "$log"; then
		tv_ok "$T: $name: the payload ran on both CPUs and powered off"
	else
		tv_fail "$T: $name: the payload ran on both CPUs and powered off" "status $rc; $(grep -a 'TVM' "$log" | tr -d '\r' | tr '\n' ' ' | head -c 300)"
	fi
	tv_reject "$T: $name: no tracevisor errors" "$log" '\[err\]'
	"$TV_BUILD/tracevisor" from-serial "$log" -o "$tvt" 2>"$dir/from-serial.err" ||
		tv_fail "$T: $name: from-serial" "$(tail -n 3 "$dir/from-serial.err" | tr '\n' ' ')"
}

# The payload's addresses: its code base (tvm_run as printed minus nm's),
# the watched buffer.
addresses() {
	local at
	at=$(tr -d '\r' <"$log" | sed -n 's/^TVM: cpu 0: run at \(0x[0-9a-f]*\) .*/\1/p' | head -1)
	buf=$(tr -d '\r' <"$log" | sed -n 's/^TVM: watch id [0-9]* status [0-9a-fx]* buf \(0x[0-9a-f]*\).*/\1/p' | head -1)
	base=$(( ${at:-0} - ${sym[tvm_run]} ))
	[ -n "$at" ] && [ -n "$buf" ]
}
rip() { printf '0x%x' $(( base + ${sym[$1]} )); }
hx() { printf '0x%x' "$1"; }

# expected CPU: "rip kind size gla value" per access, in program order
# (value: new= of a write, old= of a read, '-' where the construction
# does not fix it: the XADDs, and the turn loads of phase B's first step).
expected() {
	local c=$1 o=$((1 - $1)) i s r2
	for (( i = 0; i < A; i++ )); do
		echo "$(rip tvm_a_store) w 8 $(hx $((buf + 8 * c))) new=$(hx $(( (c << 32) | i )))"
		echo "$(rip tvm_a_load) r 8 $(hx $((buf + 8 * c))) old=$(hx $(( (c << 32) | i )))"
		echo "$(rip tvm_a_xadd) rw+lock 8 $(hx $((buf + 64))) -"
	done
	for (( s = 0; s < B; s++ )); do
		echo "$(rip tvm_b_w1) w 4 $(hx $((buf + 128 + 4 * c))) new=$(hx $(( (c << 16) | s )))"
		echo "$(rip tvm_b_r1) r 4 $(hx $((buf + 128 + 4 * c))) old=$(hx $(( (c << 16) | s )))"
		# the other CPU's low byte: CPU 1 reads CPU 0's step s, CPU 0 its step s-1
		if (( c == 1 )); then r2=$s; elif (( s > 0 )); then r2=$((s - 1)); else r2=0; fi
		echo "$(rip tvm_b_r2) r 1 $(hx $((buf + 128 + 4 * o))) old=$(hx $r2)"
		echo "$(rip tvm_b_w2) w 1 $(hx $((buf + 129 + 4 * c))) new=$(hx $s)"
	done
}

# got FILE CPU: tracevisor mem's lines of CPU as "rip kind size gla value"
# (the XADD's value '-': checked apart), and the check gla == gpa.
got() {
	awk -v cpu="cpu$2" -v xadd="$(rip tvm_a_xadd)" '
		$1 != cpu { next }
		{
			gla = ""; gpa = ""; old = ""; nw = ""
			# cpuN TSC RIP SYMBOL KIND SIZE gla= gpa= [old=] [new=] ...
			for (i = 7; i <= NF; i++) {
				if ($i ~ /^gla=/) gla = substr($i, 5)
				if ($i ~ /^gpa=/) gpa = substr($i, 5)
				if ($i ~ /^old=/) old = $i
				if ($i ~ /^new=/) nw = $i
			}
			if (gla != gpa) { print "gla " gla " != gpa " gpa; next }
			v = ($5 ~ /^r/ && $5 !~ /^rw/) ? old : nw
			if ($3 == xadd) v = "-"
			print $3, $5, $6, gla, (v == "" ? "none" : v)
		}' "$1"
}

# --- unfiltered ---------------------------------------------------------------------
run plain
if addresses; then
	"$TV_BUILD/tracevisor" mem "$tvt" --no-symbols >"$work/plain.mem" 2>"$work/plain.mem.err"
	for c in 0 1; do
		expected "$c" >"$work/expected$c"
		got "$work/plain.mem" "$c" >"$work/got$c"
		n=$(wc -l <"$work/expected$c")
		if diff -u "$work/expected$c" "$work/got$c" >"$work/diff$c"; then
			tv_ok "$T: cpu $c: all $n accesses recorded as the payload made them, in order (address, kind, size, linear = physical, values)"
		else
			tv_fail "$T: cpu $c: all $n accesses recorded as the payload made them, in order" \
				"$(wc -l <"$work/got$c") recorded; first difference: $(grep -m3 '^[-+][^-+]' "$work/diff$c" | tr '\n' ' ')"
		fi
	done
	olds=$(awk -v x="$(rip tvm_a_xadd)" '$3 == x { for (i = 7; i <= NF; i++) if ($i ~ /^old=/) print substr($i, 5) }' "$work/plain.mem" |
		while read -r v; do echo $((v)); done | sort -n | tr '\n' ' ')
	want=$(seq 0 $((2 * A - 1)) | tr '\n' ' ')
	if [ "$olds" = "$want" ]; then
		tv_ok "$T: the locked XADDs read 0 .. $((2 * A - 1)) over both CPUs, each once"
	else
		tv_fail "$T: the locked XADDs read 0 .. $((2 * A - 1)) over both CPUs, each once" "got: $(echo "$olds" | head -c 300)"
	fi
	tv_expect "$T: the payload's counter ends at $((2 * A))" "$log" "^TVM: counter $((2 * A))"
	# Phase B in the turn order over both CPUs (TSC order of the listing).
	awk -v w1="$(rip tvm_b_w1)" -v r1="$(rip tvm_b_r1)" -v r2="$(rip tvm_b_r2)" -v w2="$(rip tvm_b_w2)" \
		'$3 == w1 || $3 == r1 || $3 == r2 || $3 == w2 { print $1, $3 }' "$work/plain.mem" >"$work/order.got"
	for (( s = 0; s < B; s++ )); do
		for c in 0 1; do
			for l in tvm_b_w1 tvm_b_r1 tvm_b_r2 tvm_b_w2; do echo "cpu$c $(rip $l)"; done
		done
	done >"$work/order.want"
	if cmp -s "$work/order.want" "$work/order.got"; then
		tv_ok "$T: phase B over both CPUs in the turn order ($((8 * B)) accesses by TSC)"
	else
		tv_fail "$T: phase B over both CPUs in the turn order" "$(diff "$work/order.want" "$work/order.got" | head -4 | tr '\n' ' ')"
	fi
	for c in 0 1; do
		if grep -qE "^# cpu$c: recorded $((3 * A + 4 * B)), filtered 0, collateral $A, .*undecoded 0" "$work/plain.mem"; then
			tv_ok "$T: cpu $c: the hypervisor counts $((3 * A + 4 * B)) recorded, $A collateral steps, nothing undecoded"
		else
			tv_fail "$T: cpu $c: the hypervisor counts $((3 * A + 4 * B)) recorded, $A collateral steps, nothing undecoded" \
				"$(grep "^# cpu$c:" "$work/plain.mem")"
		fi
	done
	if grep -qE '^# lost records: 0; malformed records: 0' "$work/plain.mem"; then
		tv_ok "$T: nothing lost or malformed"
	else
		tv_fail "$T: nothing lost or malformed" "$(grep '^# lost' "$work/plain.mem")"
	fi
	# The sharing report, symbolized over memtest.so at its base.
	"$TV_BUILD/tracevisor" c2c "$tvt" --image "$TV_BUILD/memtest.so@$(hx $base)" >"$work/c2c.txt" 2>"$work/c2c.err"
	l0=$(grep -E "^line $(hx "$buf") " "$work/c2c.txt")
	if echo "$l0" | grep -q 'cpus 0,1 .* false-sharing offsets +0x0,+0x8' &&
		grep -A2 -E "^line $(hx "$buf") " "$work/c2c.txt" | grep -qE "^  \+0x0 .*cpus 0 .*$(rip tvm_a_store) tvm_run\+.*$(rip tvm_a_load) tvm_run\+" &&
		grep -A2 -E "^line $(hx "$buf") " "$work/c2c.txt" | grep -qE "^  \+0x8 .*cpus 1 .*$(rip tvm_a_store) tvm_run\+.*$(rip tvm_a_load) tvm_run\+"; then
		tv_ok "$T: c2c: line $(hx "$buf") false-sharing between CPUs 0 and 1 at +0x0 (cpu 0) and +0x8 (cpu 1), each with both code sites (tvm_a_store, tvm_a_load) symbolized"
	else
		tv_fail "$T: c2c: the false-shared line named with both code sites" "${l0:-no row}; $(head -c 300 "$work/c2c.err")"
	fi
	if grep -qE "^line $(hx $((buf + 64))) .*cpus 0,1 .*true-sharing" "$work/c2c.txt"; then
		tv_ok "$T: c2c: line $(hx $((buf + 64))) (the counter) true-sharing"
	else
		tv_fail "$T: c2c: the counter's line true-sharing" "$(grep -E "^line $(hx $((buf + 64)))" "$work/c2c.txt")"
	fi
	# Figures (docs/BENCHMARKS.md): Bochs runs 1 instruction per TSC tick
	# (ips = TSC rate), the hypervisor's included, so the ticks between two
	# records of one CPU are what handling a watched access costs.  Phase
	# B's w1 -> r1 (adjacent instructions, the other CPU spinning outside
	# the watch): one recorded access.  Phase A's xadd -> next store: one
	# recorded access, the collateral step and ~6 guest instructions (the
	# minimum over the iterations: the other CPU's steps serialise with it).
	awk -v w1="$(rip tvm_b_w1)" -v r1="$(rip tvm_b_r1)" -v xa="$(rip tvm_a_xadd)" -v st="$(rip tvm_a_store)" '
		/^cpu/ {
			c = $1
			if ($3 == r1 && prev[c] == w1) { d = $2 - pt[c]; rec[nrec++] = d }
			if ($3 == st && prev[c] == xa) { d = $2 - pt[c]; if (!(c in mn) || d < mn[c]) mn[c] = d }
			prev[c] = $3; pt[c] = $2
		}
		END {
			for (i = 0; i < nrec; i++) for (j = i + 1; j < nrec; j++) if (rec[j] < rec[i]) { t = rec[i]; rec[i] = rec[j]; rec[j] = t }
			m = nrec ? rec[int(nrec / 2)] : 0
			coll = 1e18; for (c in mn) if (mn[c] < coll) coll = mn[c]
			printf "# mem-watch: ticks (= Bochs instructions) per recorded access: median %d over %d (phase B w1 -> r1); per recorded + collateral access + ~6 guest instructions: min %d (phase A xadd -> store), so ~%d per collateral step\n", m, nrec, coll, coll - m - 6
		}' "$work/plain.mem"
else
	tv_fail "$T: plain: the payload printed its addresses" "$(grep -a 'TVM' "$log" | tr -d '\r' | head -c 300)"
fi
tv_keep_log "$log"

# --- mem_filter = sharing -------------------------------------------------------------
run sharing 'mem_filter = sharing'
if addresses; then
	"$TV_BUILD/tracevisor" mem "$tvt" --no-symbols >"$work/sharing.mem" 2>"$work/sharing.mem.err"
	# mtrace's rule over phase B's known order (line 2 only): a read is kept
	# if another CPU wrote the line since this CPU last read it (or it never
	# read it), a write if another CPU touched it since this CPU last wrote.
	for (( s = 0; s < B; s++ )); do
		for c in 0 1; do
			echo "$c w $(rip tvm_b_w1)"; echo "$c r $(rip tvm_b_r1)"
			echo "$c r $(rip tvm_b_r2)"; echo "$c w $(rip tvm_b_w2)"
		done
	done | awk '
		BEGIN { rq[0] = rq[1] = 0; wq[0] = wq[1] = 0 }
		{
			c = $1; o = 1 - c
			if ($2 == "r") { keep = !rq[c]; rq[c] = 1; wq[o] = 0 }
			else { keep = !wq[c]; wq[c] = 1; wq[o] = 0; rq[o] = 0 }
			if (keep) print "cpu" c, $3
		}' >"$work/filter.want"
	awk -v w1="$(rip tvm_b_w1)" -v r1="$(rip tvm_b_r1)" -v r2="$(rip tvm_b_r2)" -v w2="$(rip tvm_b_w2)" \
		'$3 == w1 || $3 == r1 || $3 == r2 || $3 == w2 { print $1, $3 }' "$work/sharing.mem" >"$work/filter.got"
	nk=$(wc -l <"$work/filter.want")
	if cmp -s "$work/filter.want" "$work/filter.got"; then
		tv_ok "$T: sharing filter: phase B keeps exactly mtrace's $nk of $((8 * B)) accesses, in order"
	else
		tv_fail "$T: sharing filter: phase B keeps exactly mtrace's $nk of $((8 * B)) accesses" \
			"$(diff "$work/filter.want" "$work/filter.got" | head -4 | tr '\n' ' ')"
	fi
	for c in 0 1; do
		rec=$(sed -n "s/^# cpu$c: recorded \([0-9]*\), filtered \([0-9]*\),.*/\1 \2/p" "$work/sharing.mem")
		read -r r f <<<"${rec:-x x}"
		fb=$(awk -v c="cpu$c" '$1 == c' "$work/filter.want" | wc -l)
		if [ "$r" != x ] && [ $((r + f)) = $((3 * A + 4 * B)) ] && [ "$f" -ge $((4 * B - fb)) ]; then
			tv_ok "$T: sharing filter: cpu $c: recorded $r + filtered $f = the $((3 * A + 4 * B)) accesses"
		else
			tv_fail "$T: sharing filter: cpu $c: recorded + filtered = the $((3 * A + 4 * B)) accesses" "$(grep "^# cpu$c:" "$work/sharing.mem")"
		fi
	done
else
	tv_fail "$T: sharing: the payload printed its addresses" "$(grep -a 'TVM' "$log" | tr -d '\r' | head -c 300)"
fi
tv_keep_log "$log"
exit 0
