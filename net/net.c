/* SPDX-License-Identifier: MIT */
/*
 * net.c - lwIP bring-up, the export link (exporter + UDP socket), and the
 * resident copy's network: NIC, lwIP and exporter set up again in reserved
 * memory, driven by the VMX-root poll hook.
 */
#include "net/net.h"

#include <string.h>

#include "drivers/nic.h"
#include "drivers/pci.h"
#include "lwip/init.h"
#include "net/lwip_port.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/exit/pci_hide.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/memwatch.h"
#include "vmm/trace/stall.h"
#include "vmm/vmx/vcpu.h"
#include "vmm/version.h"

static int net_ready;

int net_init(uint64_t tsc_hz)
{
	if (net_ready || tsc_hz == 0)
		return -1;
	lwip_port_set_clock(tsc_hz);
	lwip_init();
	net_ready = 1;
	log_info("net: lwIP %s initialised (NO_SYS, raw API)", LWIP_VERSION_STRING);
	return 0;
}

/* --- the export link ------------------------------------------------------ */

/* splitmix64 (Steele, Lea, Flood 2014): spreads a TSC value over 64 bits. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * 64 random bits: RDRAND where CPUID.01H:ECX[30] says it exists (SDM 2B
 * RDRAND: it may have none ready, so up to ten tries), else the jitter of
 * the TSC over short pause loops, mixed (on real machines and in QEMU it
 * differs from boot to boot; Bochs without RDRAND is deterministic, and
 * so is this), with the APIC ID.
 */
static uint64_t rand64(void)
{
	struct hw_cpuid_regs r;
	uint64_t v, prev;

	hw_cpuid(1, 0, &r);
	if (r.ecx & (1u << 30))
		for (int i = 0; i < 10; i++)
			if (hw_rdrand64(&v))
				return v;
	v = (uint64_t)(r.ebx >> 24) << 56;
	prev = hw_rdtsc();
	for (unsigned i = 0; i < 64; i++) {
		uint64_t now;

		for (uint64_t k = 0; k <= (prev & 15); k++)
			hw_pause();
		now = hw_rdtsc();
		v = mix64(v ^ (now - prev) ^ now);
		prev = now;
	}
	return v;
}

/* A session id per boot, never 0 (docs/PROTOCOL.md, "Sessions"). */
static uint64_t new_session(void)
{
	uint64_t s = rand64();

	return s ? s : 1;
}

/* Vendor, family, model, stepping as CPUID.01H displays them (SDM 2A, CPUID). */
static void hello_cpu(struct tvp_hello *h)
{
	struct hw_cpuid_regs r;
	uint32_t fam, model;

	hw_cpuid(0, 0, &r);
	memcpy(h->vendor, &r.ebx, 4);
	memcpy(h->vendor + 4, &r.edx, 4);
	memcpy(h->vendor + 8, &r.ecx, 4);
	h->vendor_id = !memcmp(h->vendor, "GenuineIntel", 12) ? TVP_VENDOR_INTEL :
		       !memcmp(h->vendor, "AuthenticAMD", 12) ? TVP_VENDOR_AMD : TVP_VENDOR_OTHER;
	hw_cpuid(1, 0, &r);
	fam = (r.eax >> 8) & 0xf;
	model = (r.eax >> 4) & 0xf;
	if (fam == 0xf)
		fam += (r.eax >> 20) & 0xff;
	if (fam == 6 || fam >= 0xf)
		model |= ((r.eax >> 16) & 0xf) << 4;
	h->family = (uint16_t)fam;
	h->model = (uint16_t)model;
	h->stepping = (uint8_t)(r.eax & 0xf);
}

/* NUL-padded copy that always leaves a NUL (the HELLO's text fields). */
static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t i = 0;

	for (; i + 1 < cap && src[i]; i++)
		dst[i] = src[i];
	memset(dst + i, 0, cap - i);
}

static int link_send(void *ctx, const void *buf, size_t len)
{
	struct net_link *l = ctx;

	/* No net_poll here: that would feed export_input from inside export_poll. */
	return net_udp_send(&l->udp, buf, len);
}

/*
 * From the receiver (its address and port): everything, and it is alive.
 * From anywhere else only a CONTROL goes on (`tracevisor control` sends
 * from a port of its own; export_input checks its tag, session and
 * counter): anything else is dropped, counted as ignored, and nothing from
 * elsewhere counts as the receiver answering.
 */
static void link_recv(void *ctx, const void *data, size_t len, bool from_peer)
{
	struct net_link *l = ctx;
	uint64_t now = hw_rdtsc();

	if (!from_peer) {
		if (len < 6 || ((const uint8_t *)data)[5] != TVP_CONTROL) {
			l->ex->st.ignored++;
			return;
		}
	} else {
		__atomic_store_n(&l->last_rx_tsc, now ? now : 1, __ATOMIC_RELEASE);
	}
	export_input(l->ex, data, len, now);
}

int net_link_start(struct net_link *l, struct exporter *ex, const struct net_link_cfg *c,
		   struct tv_trace_ring *const *rings, uint32_t nrings, uint64_t now)
{
	struct export_config ec;
	uint64_t ring_bytes = 0;
	int rc;

	if (!l || !ex || !c || !rings || nrings == 0 || nrings > EXPORT_MAX_CPUS)
		return PROTO_ERR_INVAL;
	memset(l, 0, sizeof(*l));
	l->ex = ex;
	l->receiver_ip = c->receiver_ip;
	l->receiver_port = c->receiver_port;
	l->nrings = nrings;
	for (uint32_t i = 0; i < nrings; i++) {
		l->rings[i] = rings[i];
		if (rings[i] && !ring_bytes)
			ring_bytes = rings[i]->data_size;
	}
	l->session = new_session();

	memset(&ec, 0, sizeof(ec));
	ec.session = l->session;
	ec.tsc_hz = c->tsc_hz;
	ec.key = c->key;
	ec.keylen = c->keylen;
	ec.data_key = c->data_keylen ? c->data_key : NULL;
	ec.data_keylen = c->data_keylen;
	if (c->data_keylen) {
		uint64_t a = rand64(), b = rand64();

		memcpy(ec.nonce_m, &a, 8);
		memcpy(ec.nonce_m + 8, &b, 8);
	}
	ec.send = link_send;
	ec.send_ctx = l;
	ec.ops = c->ops;
	ec.ops_ctx = c->ops_ctx;
	hello_cpu(&ec.hello);
	ec.hello.cpu_count = (uint16_t)nrings;
	ec.hello.source = c->source;
	ec.hello.overflow = c->overflow;
	ec.hello.caps = c->caps | (c->keylen ? TVP_CAP_CONTROL : 0);
	ec.hello.tsc_hz = c->tsc_hz;
	ec.hello.boot_tsc = now;
	ec.hello.ring_bytes = ring_bytes;
	copy_str(ec.hello.sw_version, TVP_SWVER_LEN, TV_VERSION "-" TV_GIT);
	copy_str(ec.hello.machine, TVP_MACHINE_LEN, c->machine ? c->machine : "tracevisor");
	rc = export_init(ex, &ec, nrings, now);
	if (rc)
		return rc;
	/* Say it on every boot, loudly when anyone on the LAN could forge the trace. */
	if (c->data_keylen)
		log_info("net: export: authenticated data path: every datagram sealed (SipHash-2-4 under a per-session key from data_key), HELLO only until the receiver proves the key (tracevisor record --auth --key)");
	else
		log_warn("net: export: UNAUTHENTICATED data path (protocol version 1): anyone on the receiver's network can forge or replay trace datagrams and ACKs; set data_key in tracevisor.conf (docs/CONFIG.md) and run tracevisor record --auth");
	for (uint32_t i = 0; i < nrings; i++) {
		if (!rings[i])
			continue;
		/* BUSY: the producer kept moving the tail (OVERWRITE); it settles. */
		for (int tries = 0; tries < 1000; tries++) {
			rc = export_attach(ex, i, rings[i]);
			if (rc != TRACE_ERR_BUSY)
				break;
			hw_pause();
		}
		if (rc)
			return rc;
	}
	l->state = NET_LINK_WAIT_ADDR;
	return 0;
}

void net_link_step(struct net_link *l, uint64_t now)
{
	net_poll();
	switch (l->state) {
	case NET_LINK_WAIT_ADDR:
		if (!net_if_address())
			return;
		l->state = NET_LINK_WAIT_ARP;
		/* fall through */
	case NET_LINK_WAIT_ARP:
		if (!net_resolve(l->receiver_ip))
			return;
		if (net_udp_open(&l->udp, l->receiver_ip, l->receiver_port) ||
		    net_udp_set_recv(&l->udp, link_recv, l)) {
			if (l->open_errors++ == 0)
				log_err("net: export: cannot open the UDP socket to the receiver");
			net_udp_close(&l->udp);
			return;
		}
		l->state = NET_LINK_UP;
		log_info("net: export: receiver %u.%u.%u.%u:%u reachable, streaming (session %016llx)",
			 l->receiver_ip >> 24, (l->receiver_ip >> 16) & 255,
			 (l->receiver_ip >> 8) & 255, l->receiver_ip & 255, l->receiver_port,
			 (unsigned long long)l->session);
		/* fall through */
	case NET_LINK_UP:
		export_poll(l->ex, now);
		break;
	}
}

bool net_link_drained(const struct net_link *l, uint32_t cpu)
{
	const struct export_stream *s;

	if (!l->ex || cpu >= l->nrings || !l->rings[cpu])
		return true;
	s = &l->ex->s[cpu];
	return __atomic_load_n(&s->acked, __ATOMIC_ACQUIRE) ==
	       __atomic_load_n(&l->rings[cpu]->next_seq, __ATOMIC_ACQUIRE);
}

void net_link_stop(struct net_link *l)
{
	net_udp_close(&l->udp);
	l->state = NET_LINK_WAIT_ADDR;
}

/* --- the resident copy ---------------------------------------------------- */

/*
 * How long a CPU whose window closed waits in VMX root for the receiver to
 * acknowledge the window (the guest on that CPU waits too): long enough
 * for retransmissions, short enough that a missing receiver costs the
 * guest only this much per window.
 */
#define NET_WINDOW_DRAIN_MS 5000u
#define NET_LOSS_CHECK_MS   1000u

static struct {
	bool ready;
	const struct hv_net *cfg;
	struct per_cpu *cpus;
	uint32_t ncpus;
	struct nic nic;
	struct net_link link;
	uint64_t tsc_per_ms;
	uint64_t next_loss_check, next_status;
	uint64_t lost_logged;         /* overwritten + dropped records already reported */
	int busy;                     /* the link's CPU is inside a step */
} res;

/*
 * Configuration space from VMX root: through pci_hide's mechanism #1 under
 * its lock, so the guest's CONFIG_ADDRESS latch is put back in the
 * hardware before the guest's next data access (docs/PCI-HIDE.md).  Byte
 * and word accesses are done on the dword; a write to the command register
 * writes 0 to the status half (its error bits are write-one-to-clear, PCI
 * 3.0 6.2.3), as a word write at 0x04 would leave it.
 */
static uint32_t root_cfg_read(void *ctx, struct pci_addr a, uint16_t off, int width)
{
	uint32_t v = pci_cfg_read32(a.bus, a.dev, a.fn, (uint8_t)(off & 0xfc));

	(void)ctx;
	v >>= 8 * (off & 3);
	return width == 1 ? (v & 0xff) : width == 2 ? (v & 0xffff) : v;
}

static void root_cfg_write(void *ctx, struct pci_addr a, uint16_t off, int width, uint32_t v)
{
	uint8_t reg = (uint8_t)(off & 0xfc);
	unsigned sh = 8 * (off & 3);
	uint32_t mask, old;

	(void)ctx;
	if (width == 4) {
		pci_cfg_write32(a.bus, a.dev, a.fn, reg, v);
		return;
	}
	mask = (width == 1 ? 0xffu : 0xffffu) << sh;
	old = pci_cfg_read32(a.bus, a.dev, a.fn, reg);
	if (reg == PCI_COMMAND)
		old &= 0x0000ffffu;   /* never clear status bits by writing them back */
	pci_cfg_write32(a.bus, a.dev, a.fn, reg, (old & ~mask) | ((v << sh) & mask));
}

static const struct pci_cfg root_cfg = { root_cfg_read, root_cfg_write, 0 };

static uint64_t ms_ticks(uint64_t ms)
{
	return ms * res.tsc_per_ms;
}

/* Records of every stream lost so far: overwritten before acked, or dropped. */
static uint64_t lost_total(void)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < res.link.nrings; i++) {
		const struct export_stream *s = &res.link.ex->s[i];

		if (!s->ring)
			continue;
		n += s->c.lost_overwrite + __atomic_load_n(&s->ring->lost_records, __ATOMIC_RELAXED);
	}
	return n;
}

/*
 * Has the receiver acknowledged every PT byte cpu's drains have put in
 * its byte ring?  True without a PT stream.  Any CPU may ask.
 */
static bool res_pt_drained(uint32_t cpu)
{
	const struct export_pt_stream *p = &res.link.ex->pt[cpu];

	if (!p->ring)
		return true;
	return __atomic_load_n(&p->acked, __ATOMIC_ACQUIRE) == byte_ring_head(p->ring);
}

/* One line for cpu's PT stream, when it has one. */
static void log_pt(const char *why, uint32_t cpu)
{
	const struct export_pt_stream *p = &res.link.ex->pt[cpu];

	if (!p->ring)
		return;
	log_info("net: export %s: cpu %u: PT stream: head %llu, acked %llu, sent %llu, resent %llu bytes",
		 why, cpu, (unsigned long long)byte_ring_head(p->ring),
		 (unsigned long long)__atomic_load_n(&p->acked, __ATOMIC_ACQUIRE),
		 (unsigned long long)p->c.sent, (unsigned long long)p->c.retransmitted);
}

static void log_status(const char *why)
{
	const struct export_stats *st = &res.link.ex->st;

	log_info("net: export %s: hello %s, %llu datagrams, %llu acks, %llu nack ranges, %u send errors; nic tx %llu rx %llu drops %llu/%llu",
		 why, res.link.ex->hello_acked ? "acked" : "not acked",
		 (unsigned long long)st->datagrams, (unsigned long long)st->acks,
		 (unsigned long long)st->nack_ranges, st->tx_errors,
		 (unsigned long long)res.nic.stats.tx_frames,
		 (unsigned long long)res.nic.stats.rx_frames,
		 (unsigned long long)res.nic.stats.tx_drops,
		 (unsigned long long)res.nic.stats.rx_drops);
	{
		/* The transport (net/export.h): round trip, timer, congestion window. */
		const struct export_cc *k = &res.link.ex->cc;
		uint64_t per_us = res.tsc_per_ms / 1000 ? res.tsc_per_ms / 1000 : 1;

		log_info("net: export %s: transport: srtt %llu us, rto %llu us (%llu samples), cwnd %u ssthresh %u, %llu timeouts, %llu decreases, %llu partial datagrams",
			 why, (unsigned long long)((k->srtt8 >> 3) / per_us),
			 (unsigned long long)(k->rto / per_us), (unsigned long long)k->samples,
			 k->cwnd, k->ssthresh, (unsigned long long)k->timeouts,
			 (unsigned long long)k->decreases, (unsigned long long)st->partial);
	}
	for (uint32_t i = 0; i < res.link.nrings; i++) {
		const struct export_stream *s = &res.link.ex->s[i];
		struct tv_trace_ring *r = s->ring;

		if (!r)
			continue;
		log_info("net: export %s: cpu %u: head %llu acked %llu sent %llu resent %llu lost %llu (overwritten) + %llu (ring dropped)",
			 why, i, (unsigned long long)__atomic_load_n(&r->next_seq, __ATOMIC_ACQUIRE),
			 (unsigned long long)__atomic_load_n(&s->acked, __ATOMIC_ACQUIRE),
			 (unsigned long long)s->c.sent, (unsigned long long)s->c.retransmitted,
			 (unsigned long long)s->c.lost_overwrite,
			 (unsigned long long)__atomic_load_n(&r->lost_records, __ATOMIC_RELAXED));
		log_pt(why, i);
	}
}

/* One step of the link on its CPU; re-entry (a window closing inside a step) is skipped. */
static void res_step(uint64_t now)
{
	if (__atomic_exchange_n(&res.busy, 1, __ATOMIC_ACQUIRE))
		return;
	net_link_step(&res.link, now);
	if ((int64_t)(now - res.next_loss_check) >= 0) {
		uint64_t lost = lost_total();

		res.next_loss_check = now + ms_ticks(NET_LOSS_CHECK_MS);
		/* Losses are never silent: every new one is reported within a second. */
		if (lost != res.lost_logged) {
			log_warn("net: export: %llu records lost so far (%llu new): ring overwritten before the receiver acknowledged, or full",
				 (unsigned long long)lost, (unsigned long long)(lost - res.lost_logged));
			res.lost_logged = lost;
		}
	}
	if (res.cfg->heartbeat_s && (int64_t)(now - res.next_status) >= 0) {
		res.next_status = now + ms_ticks(1000ull * res.cfg->heartbeat_s);
		log_status("status");
	}
	__atomic_store_n(&res.busy, 0, __ATOMIC_RELEASE);
}

void net_resident_poll(void *ctx)
{
	(void)ctx;
	if (!res.ready)
		return;
	res_step(hw_rdtsc());
}

/*
 * The receiver's CONTROL messages, from the link's CPU: each becomes a
 * request the named CPUs apply themselves before their next VM entry
 * (trace_request, vmm/trace/engine.h).  The reply's "applied" means
 * queued for every named CPU; the START/STOP records (trigger receiver)
 * and MARKER records in the streams say when each took effect.  A mask
 * with every bit set means every CPU that traces; any other mask naming
 * no CPU or one past the last, or a CPU that does not trace, is refused
 * before anything is queued.  FILTERS goes to every CPU that
 * traces (each takes its own copy at its next entry); a malformed filter
 * is refused whole.
 */
/* Every bit set: "all", the CPUs that trace (`tracevisor control ... all`). */
static bool ctl_cpus_all(const struct tvp_ctl_cpus *c)
{
	for (uint32_t w = 0; w < TVP_CTL_CPU_WORDS; w++)
		if (c->mask[w] != UINT64_MAX)
			return false;
	return true;
}

static int ctl_cpus_check(const struct tvp_ctl_cpus *c)
{
	bool any = false;

	if (ctl_cpus_all(c)) {
		for (uint32_t i = 0; i < res.ncpus; i++)
			if (trace_cpu_ring(&res.cpus[i]))
				return 0;
		return -1;
	}
	for (uint32_t w = 0; w < TVP_CTL_CPU_WORDS; w++) {
		for (uint32_t b = 0; b < 64; b++) {
			uint32_t i = w * 64 + b;

			if (!(c->mask[w] >> b & 1))
				continue;
			if (i >= res.ncpus || !trace_cpu_ring(&res.cpus[i]))
				return -1;
			any = true;
		}
	}
	return any ? 0 : -1;
}

static int ctl_window(const struct tvp_ctl_cpus *c, uint32_t req)
{
	bool all = ctl_cpus_all(c);
	int rc = 0;

	if (ctl_cpus_check(c))
		return -1;
	for (uint32_t i = 0; i < res.ncpus; i++)
		if (all ? trace_cpu_ring(&res.cpus[i]) != NULL : (c->mask[i / 64] >> (i % 64) & 1))
			rc |= trace_request(&res.cpus[i], req, 0, NULL, 0);
	return rc ? -1 : 0;
}

static int ctl_start(void *ctx, const struct tvp_ctl_cpus *c)
{
	(void)ctx;
	return ctl_window(c, TRACE_REQ_START);
}

static int ctl_stop(void *ctx, const struct tvp_ctl_cpus *c)
{
	(void)ctx;
	return ctl_window(c, TRACE_REQ_STOP);
}

/* Labels longer than a ring's MARKER label (16 bytes) are cut. */
static int ctl_marker(void *ctx, const struct tvp_ctl_marker *m, const char *label)
{
	uint32_t first = m->cpu, last = m->cpu;
	int rc = 0;

	(void)ctx;
	if (m->cpu == TVP_CPU_ALL) {
		first = 0;
		last = res.ncpus - 1;
	} else if (m->cpu >= res.ncpus || !trace_cpu_ring(&res.cpus[m->cpu])) {
		return -1;
	}
	for (uint32_t i = first; i <= last; i++)
		if (trace_cpu_ring(&res.cpus[i]))
			rc |= trace_request(&res.cpus[i], TRACE_REQ_MARKER, m->value, label,
					    m->label_len);
	return rc ? -1 : 0;
}

static int ctl_filters(void *ctx, const struct tvp_ctl_filter *in)
{
	struct trace_filter f;
	int rc = 0;

	(void)ctx;
	_Static_assert(TVP_CTL_RANGES == TRACE_MAX_RANGES, "one range count");
	if (in->nranges > TRACE_MAX_RANGES)
		return -1;
	memset(&f, 0, sizeof(f));
	f.cpl = in->cpl;
	f.cr3 = in->cr3;
	f.nranges = in->nranges;
	for (uint32_t i = 0; i < in->nranges; i++) {
		f.ranges[i].lo = in->ranges[i].lo;
		f.ranges[i].hi = in->ranges[i].hi;
	}
	for (uint32_t i = 0; i < res.ncpus; i++)
		if (trace_cpu_ring(&res.cpus[i]))
			rc |= trace_request_filter(&res.cpus[i], &f);
	return rc ? -1 : 0;
}

/*
 * MEM_WATCH is applied at once, here on the link's CPU (memwatch_control:
 * the EPT edit is shared, every CPU re-reads its EPT before its next
 * entry); the watch's MEM_WATCH record goes to this CPU's ring when it
 * traces, else nowhere.  Refused (-2) when memory tracing is off or the
 * range, id or mode is refused.
 */
static int ctl_mem_watch(void *ctx, const struct tvp_ctl_mem_watch *w, const char *label)
{
	struct per_cpu *cpu = res.cfg->cpu < res.ncpus ? &res.cpus[res.cfg->cpu] : NULL;

	(void)ctx;
	if (cpu && !trace_cpu_ring(cpu))
		cpu = NULL;
	return memwatch_control(cpu, w->op, w->id, w->lo, w->hi, w->mode, label,
				w->label_len) < 0 ? -1 : 0;
}

static const struct export_ops res_ctl_ops = {
	ctl_start, ctl_stop, ctl_filters, ctl_marker, ctl_mem_watch,
};

/*
 * overflow = wait (vmm/trace/stall.h): a CPU whose buffer is full waits
 * in VMX root.  On the NIC's CPU the wait runs the exporter itself, one
 * step (the poll hook's work) per call, as fast as it can; another CPU
 * only pauses, the NIC's CPU exporting from its own exits.
 */
static void res_pump(void *ctx, uint32_t cpu)
{
	(void)ctx;
	if (res.ready && cpu == res.cfg->cpu)
		res_step(hw_rdtsc());
}

/* The receiver's last word: any datagram (ACK, HELLO_ACK, CONTROL). */
static uint64_t res_heard(void *ctx)
{
	(void)ctx;
	return __atomic_load_n(&res.link.last_rx_tsc, __ATOMIC_ACQUIRE);
}

static int res_start(const struct hv_net *n, struct per_cpu *cpus, uint32_t ncpus)
{
	struct tv_trace_ring *rings[EXPORT_MAX_CPUS];
	const struct trace_setup *ts = trace_engine_setup();
	struct net_ipcfg ipc = { n->dhcp, n->ip, n->prefix, n->gw };
	struct net_link_cfg lc;
	struct pci_addr nic_addr = { n->nic.addr.bus, n->nic.addr.dev, n->nic.addr.fn };
	struct pci_dev d;
	uint32_t npt = 0;
	char mac[18];
	int rc;

	memset(&res, 0, sizeof(res));
	res.cfg = n;
	res.cpus = cpus;
	res.ncpus = ncpus;
	res.tsc_per_ms = n->tsc_hz / 1000 ? n->tsc_hz / 1000 : 1;
	if (ncpus == 0 || ncpus > EXPORT_MAX_CPUS) {
		log_err("net: resident: %u CPUs, the exporter takes 1..%u", ncpus, EXPORT_MAX_CPUS);
		return -1;
	}
	if (pci_probe(&root_cfg, nic_addr, &d) || d.vendor != n->nic.vendor ||
	    d.device != n->nic.device) {
		log_err("net: resident: the NIC %04x:%04x at %02x:%02x.%u is gone", n->nic.vendor,
			n->nic.device, n->nic.addr.bus, n->nic.addr.dev, n->nic.addr.fn);
		return -1;
	}
	rc = nic_attach(&res.nic, &root_cfg, &d);
	if (rc == 0)
		rc = nic_init(&res.nic, n->dma, NIC_DMA_BYTES);
	if (rc) {
		log_err("net: resident: %s: %s", res.nic.model ? res.nic.model : "NIC",
			nic_strerror(rc));
		nic_stop(&res.nic, &root_cfg);
		return -1;
	}
	if (net_init(n->tsc_hz)) {
		log_err("net: resident: lwIP initialised twice (its state was not pristine)");
		return -1;
	}
	rc = net_if_up(&res.nic, &ipc);
	if (rc) {
		log_err("net: resident: lwIP interface not added (%d)", rc);
		nic_stop(&res.nic, &root_cfg);
		return -1;
	}
	for (uint32_t i = 0; i < ncpus; i++) {
		rings[i] = trace_cpu_ring(&cpus[i]);
		npt += trace_cpu_pt_stream(&cpus[i]) != NULL;
	}
	memset(&lc, 0, sizeof(lc));
	lc.receiver_ip = n->receiver_ip;
	lc.receiver_port = n->receiver_port;
	lc.key = n->key;
	lc.keylen = n->keylen;
	lc.data_key = n->data_key;
	lc.data_keylen = n->data_keylen;
	lc.machine = n->machine;
	lc.caps = n->caps | (npt ? TVP_CAP_PT_STREAM : 0);
	lc.source = ts->source;
	/* the rings' policy: wait is a STOP ring whose producer waits */
	lc.overflow = ts->overflow == TV_OVERFLOW_WAIT ? TV_OVERFLOW_STOP : ts->overflow;
	lc.tsc_hz = n->tsc_hz;
	lc.ops = &res_ctl_ops;
	rc = net_link_start(&res.link, n->ex, &lc, rings, ncpus, hw_rdtsc());
	/*
	 * pt: each tracing CPU's PT byte ring becomes its PT stream (the
	 * exporter its only consumer from now on), before the first HELLO.
	 */
	for (uint32_t i = 0; i < ncpus && rc == 0; i++)
		if (trace_cpu_pt_stream(&cpus[i]))
			rc = export_attach_pt(n->ex, i, trace_cpu_pt_stream(&cpus[i]));
	if (rc) {
		log_err("net: resident: exporter not started: %s", proto_strerror(rc));
		net_if_down();
		nic_stop(&res.nic, &root_cfg);
		return -1;
	}
	nic_format_mac(mac, res.nic.mac);
	log_info("net: resident: %s at %02x:%02x.%u, MAC %s, DMA at %#llx (reserved); %s; exporting %u CPU ring(s) and %u PT stream(s) to %u.%u.%u.%u:%u from cpu %u, session %016llx, control %s",
		 res.nic.model, d.addr.bus, d.addr.dev, d.addr.fn, mac,
		 (unsigned long long)(uintptr_t)n->dma, n->dhcp ? "DHCP" : "static address", ncpus, npt,
		 n->receiver_ip >> 24, (n->receiver_ip >> 16) & 255, (n->receiver_ip >> 8) & 255,
		 n->receiver_ip & 255, n->receiver_port, n->cpu,
		 (unsigned long long)res.link.session, n->keylen ? "keyed" : "off");
	res.next_loss_check = hw_rdtsc();
	res.next_status = res.next_loss_check + ms_ticks(1000ull * n->heartbeat_s);
	res.ready = true;
	{
		struct trace_stall_ops so = { res_pump, res_heard, NULL, cpus, ncpus };

		trace_stall_set_ops(&so);
	}
	return 0;
}

/*
 * A window closed on cpu: its records (and, with pt, the PT bytes its
 * drains put in the byte ring, the last of them at the window's stop)
 * have been streaming since they were written; wait (bounded) until the
 * receiver has acknowledged all of them, so that a guest that powers off
 * right after its window loses nothing, then say what became of them.
 * On the link's CPU the wait drives the link itself; another CPU waits
 * for the link's CPU, which keeps polling from its preemption timer.
 */
static void res_window(struct per_cpu *cpu)
{
	uint64_t t0 = hw_rdtsc(), deadline = t0 + ms_ticks(NET_WINDOW_DRAIN_MS), now = t0;
	const struct export_stream *s;
	struct tv_trace_ring *r;
	bool done;

	if (!res.ready || cpu->index >= res.link.nrings)
		return;
	while (!(done = net_link_drained(&res.link, cpu->index) && res_pt_drained(cpu->index)) &&
	       (int64_t)(now - deadline) < 0) {
		if (cpu->index == res.cfg->cpu) {
			res_step(now);
		} else if (__atomic_load_n(&res.link.state, __ATOMIC_ACQUIRE) != NET_LINK_UP) {
			/*
			 * Nobody drives the link yet (the NIC's CPU has not
			 * launched, or there is no address or receiver): do not
			 * hold this CPU - an AP that overstays its MP-services
			 * call would be reset by the firmware.
			 */
			break;
		} else {
			hw_pause();
		}
		now = hw_rdtsc();
	}
	s = &res.link.ex->s[cpu->index];
	r = s->ring;
	log_info("trace: cpu %u: window streamed: head %llu, acked %llu, sent %llu, resent %llu, lost %llu (overwritten) + %llu (ring dropped), %s after %llu ms",
		 cpu->index, (unsigned long long)__atomic_load_n(&r->next_seq, __ATOMIC_ACQUIRE),
		 (unsigned long long)__atomic_load_n(&s->acked, __ATOMIC_ACQUIRE),
		 (unsigned long long)s->c.sent, (unsigned long long)s->c.retransmitted,
		 (unsigned long long)s->c.lost_overwrite,
		 (unsigned long long)__atomic_load_n(&r->lost_records, __ATOMIC_RELAXED),
		 done ? "all acknowledged" : "NOT all acknowledged (they go on streaming)",
		 (unsigned long long)((now - t0) / res.tsc_per_ms));
	log_pt("window", cpu->index);
	if (!done)
		log_warn("trace: cpu %u: the receiver has not acknowledged the window within %u ms (link %s)",
			 cpu->index, NET_WINDOW_DRAIN_MS,
			 res.link.state == NET_LINK_UP ? "up" :
			 res.link.state == NET_LINK_WAIT_ARP ? "waiting for ARP" : "waiting for an address");
}

/*
 * The guest powers off (vmm/trace/poweroff.h): one export step - the
 * overflow = wait stall's pump, the link run once on the NIC's CPU - or a
 * pause elsewhere, then has the receiver acknowledged every record and PT
 * byte of every CPU?  Any CPU may ask.
 */
static bool res_poweroff_pump(struct per_cpu *cpu)
{
	if (!res.ready)
		return true;
	if (cpu->index == res.cfg->cpu)
		res_pump(NULL, cpu->index);
	else
		hw_pause();
	for (uint32_t i = 0; i < res.link.nrings; i++)
		if (!net_link_drained(&res.link, i) || !res_pt_drained(i))
			return false;
	return true;
}

const struct hv_net_ops net_resident_ops = { res_start, res_window, res_poweroff_pump };
