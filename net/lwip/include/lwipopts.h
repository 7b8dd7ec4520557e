/*
 * lwIP 2.1.3 configuration for tracevisor.
 *
 * Bare metal, one thread, no OS: NO_SYS=1 and the raw (callback) API only.
 * The main loop feeds received frames to netif->input and calls
 * sys_check_timeouts(); nothing calls lwIP from interrupt context, so no
 * locking is needed (SYS_LIGHTWEIGHT_PROT=0).
 *
 * The port must provide (in net/):
 *   u32_t sys_now(void)            - milliseconds, monotonic (lwIP timers).
 *   tv_rand32, tv_lwip_diag, tv_lwip_assert - see arch/cc.h.
 *
 * This file is compiled into the cached liblwip.a (scripts/deps.sh keys the
 * cache on a hash of net/lwip/include/), so any change here needs a
 * `make deps` to rebuild the library with the same settings the code sees.
 *
 * Memory: MEM_SIZE for the heap plus the memp pools below are static
 * arrays in lwIP's .bss (about 256 KiB + 110 KiB).
 */
#ifndef TV_LWIPOPTS_H
#define TV_LWIPOPTS_H

/* ---- platform ---------------------------------------------------------- */
#define NO_SYS                  1
#define SYS_LIGHTWEIGHT_PROT    0
#define LWIP_TIMERS             1
#define MEM_LIBC_MALLOC         0
#define MEMP_MEM_MALLOC         0
#define MEM_ALIGNMENT           8

/* ---- APIs: raw only ---------------------------------------------------- */
#define LWIP_SOCKET             0
#define LWIP_NETCONN            0
#define LWIP_NETIF_API          0
#define LWIP_ALTCP              0
#define LWIP_RAW                0

/* ---- protocols --------------------------------------------------------- */
#define LWIP_IPV4               1
#define LWIP_IPV6               0
#define LWIP_ARP                1
#define LWIP_ETHERNET           1
#define LWIP_ICMP               1
#define LWIP_UDP                1
#define LWIP_TCP                1
#define LWIP_DHCP               1
#define LWIP_AUTOIP             0
#define LWIP_IGMP               0
#define LWIP_DNS                0
/*
 * The DHCP ARP probe of the offered address costs about a second per boot
 * and guards against a conflict that the test benches (QEMU and Bochs
 * slirp) cannot produce.
 */
#define DHCP_DOES_ARP_CHECK     0
#define ARP_QUEUEING            1
#define ETH_PAD_SIZE            0
#define IP_REASSEMBLY           1
#define IP_FRAG                 1

/* ---- memory ------------------------------------------------------------ */
#define MEM_SIZE                (256 * 1024)
#define PBUF_POOL_SIZE          64
#define MEMP_NUM_PBUF           32
#define MEMP_NUM_UDP_PCB        8
#define MEMP_NUM_TCP_PCB        8
#define MEMP_NUM_TCP_PCB_LISTEN 4
#define MEMP_NUM_REASSDATA      4
#define MEMP_NUM_FRAG_PBUF      16
#define MEMP_NUM_ARP_QUEUE      16

/* ---- TCP --------------------------------------------------------------- */
#define TCP_MSS                 1460
#define TCP_WND                 (16 * TCP_MSS)
#define TCP_SND_BUF             (16 * TCP_MSS)
/* init.c sanity checks: TCP_SND_QUEUELEN >= 2 * TCP_SND_BUF / TCP_MSS and
 * MEMP_NUM_TCP_SEG >= TCP_SND_QUEUELEN. */
#define TCP_SND_QUEUELEN        (4 * TCP_SND_BUF / TCP_MSS)
#define MEMP_NUM_TCP_SEG        (TCP_SND_QUEUELEN + 16)
#define TCP_QUEUE_OOSEQ         1
#define LWIP_TCP_KEEPALIVE      1

/* ---- netif ------------------------------------------------------------- */
#define LWIP_NETIF_STATUS_CALLBACK 1
#define LWIP_NETIF_LINK_CALLBACK   1
#define LWIP_NETIF_HOSTNAME        1
#define LWIP_NETIF_LOOPBACK        0
#define LWIP_HAVE_LOOPIF           0

/* ---- checksums: all in software ---------------------------------------- */
#define LWIP_CHECKSUM_ON_COPY   0

/* ---- statistics and debugging ------------------------------------------ */
#define LWIP_STATS              0
#define LWIP_STATS_DISPLAY      0
#define MEMP_OVERFLOW_CHECK     0
#define MEM_SANITY_CHECK        0
/* LWIP_DEBUG stays undefined: LWIP_DEBUGF() compiles to nothing. */

#endif /* TV_LWIPOPTS_H */
