# tests/bench/exit-profile.awk - the exit profile of a heartbeat boot
# (tests/bench/bench.sh, docs/BENCHMARKS.md) from vmm/exit/periodic.c's
# "hbsum: cpu C: tsc T exits E: R=N ..." lines, one per input line.
#   awk -v names=REASONS.TSV -v mach=OUT -v off=POWEROFF_TICKS -f exit-profile.awk HBSUM
# names: "number<TAB>name" per exit reason; mach: file for the key=value
# summary; off: Bochs's tick count at the power-off (TSC, 100 MHz).
# Prints the table of each CPU's last counts and the rates.
BEGIN { FS = " "; while ((getline l < names) > 0) { split(l, a, "\t"); nm[a[1]] = a[2] } }
{
	cpu = $3; sub(/:$/, "", cpu); tsc = $5; ex = $7; sub(/:$/, "", ex)
	cpus[cpu] = 1
	if (!(cpu in first) || tsc < first[cpu]) { first[cpu] = tsc; firstx[cpu] = ex }
	if (tsc >= last[cpu]) {
		if (tsc > last[cpu]) for (r in cnt) if (index(r, cpu SUBSEP) == 1) delete cnt[r]
		last[cpu] = tsc; lastx[cpu] = ex
		for (i = 8; i <= NF; i++) { split($i, p, "="); cnt[cpu, p[1]] = p[2]; reasons[p[1]] = 1 }
	}
	# per-beat deltas for the peak rate (one hbsum set per beat)
	if (!((cpu, tsc) in seen)) {
		seen[cpu, tsc] = 1
		if (cpu in prevt && tsc > prevt[cpu]) {
			rate = (ex - prevx[cpu]) / ((tsc - prevt[cpu]) / 1e8)
			if (rate > peak) { peak = rate; peakcpu = cpu; peakt = tsc }
		}
		prevt[cpu] = tsc; prevx[cpu] = ex; beats[cpu]++
	}
}
END {
	nc = 0
	for (c in cpus) clist[nc++] = c
	for (i = 0; i < nc; i++) for (j = i + 1; j < nc; j++) if (clist[j] < clist[i]) { t = clist[i]; clist[i] = clist[j]; clist[j] = t }
	if (!nc) { print "no hbsum lines in the serial log"; print "hb=nodata" > mach; exit }
	# reasons sorted by total, descending
	nr = 0
	for (r in reasons) { tot[r] = 0; for (i = 0; i < nc; i++) tot[r] += cnt[clist[i], r]; rl[nr++] = r }
	for (i = 0; i < nr; i++) for (j = i + 1; j < nr; j++) if (tot[rl[j]] > tot[rl[i]]) { t = rl[i]; rl[i] = rl[j]; rl[j] = t }
	hdr = sprintf("%-4s %-30s", "#", "exit reason")
	for (i = 0; i < nc; i++) hdr = hdr sprintf(" %10s", "cpu " clist[i])
	print hdr sprintf(" %10s %7s", "total", "share")
	all = 0
	for (i = 0; i < nc; i++) all += lastx[clist[i]]
	sum = 0
	for (k = 0; k < nr; k++) {
		r = rl[k]; line = sprintf("%-4s %-30s", r, (r in nm) ? nm[r] : "reason " r)
		for (i = 0; i < nc; i++) line = line sprintf(" %10d", cnt[clist[i], r])
		print line sprintf(" %10d %6.1f%%", tot[r], all ? 100 * tot[r] / all : 0)
		sum += tot[r]
	}
	line = sprintf("%-4s %-30s", "", "all exits")
	for (i = 0; i < nc; i++) line = line sprintf(" %10d", lastx[clist[i]])
	print line sprintf(" %10d", all)
	span = 0; spanx = 0
	for (i = 0; i < nc; i++) { c = clist[i]; span += (last[c] - first[c]) / 1e8; spanx += lastx[c] - firstx[c] }
	mean = span > 0 ? spanx / span : 0
	# launch: one period before the earliest first beat (vmm/vmx/vmx.c arms it then)
	launch = first[clist[0]]
	for (i = 1; i < nc; i++) if (first[clist[i]] < launch) launch = first[clist[i]]
	launch -= 1e8
	virt = (off - launch) / 1e8
	printf "tracevisor launched at ~%.1f emulated s; Linux and its firmware ran virtualized for the last %.1f s (of %.1f)\n", launch / 1e8, virt, off / 1e8
	printf "exits per emulated second, whole machine: %.0f (all exits / virtualized time)\n", (virt > 0 ? all / virt : 0)
	printf "counts at each CPU's last heartbeat (%d beats on cpu %s); the last <1 s before the power-off is not in them\n", beats[clist[0]], clist[0]
	printf "exits per emulated second per CPU: mean %.0f (from first to last beat), peak %.0f (cpu %s, 1 s ending at TSC %.1f s)\n", mean, peak, peakcpu, peakt / 1e8
	if (sum != all) printf "note: the reasons add up to %d, the exit counters to %d (reasons >= EXIT_REASON_MAX are not itemised)\n", sum, all
	m = "exits=" all " virtualized_s=" sprintf("%.1f", virt) " exits_per_s=" sprintf("%.0f", virt > 0 ? all / virt : 0) " exit_rate_cpu_mean=" sprintf("%.0f", mean) " exit_rate_cpu_peak=" sprintf("%.0f", peak)
	for (k = 0; k < nr && k < 5; k++) { n = (rl[k] in nm) ? nm[rl[k]] : "r" rl[k]; gsub(/[^A-Za-z0-9]+/, "_", n); m = m " exits_" n "=" tot[rl[k]] }
	print m > mach
}
