/*
 * e1000e.h - the Intel 82574L (e1000e) driver: a bus-independent core (e1000e.c) that
 * reaches the device only through struct e1000e_bus (BAR0 registers, DMA memory, the
 * receive data-buffer memory, a delay), a thin PCI attach (e1000e_pci.c) and console
 * commands (e1000e_command.c). Polling only: e1000e_poll() receives within a budget,
 * reclaims transmit descriptors and watches the link.
 *
 * Receive runs in one of two modes:
 *   - packet split (RCTL.DTYP=01, RFCTL.EXTEN): 32-byte descriptors, buffer 0 = a header
 *     buffer in host DRAM, buffer 1 = a data buffer from the bus's data_alloc (device
 *     memory of a P2P provider, or DRAM when none is usable); buffers 2-3 unused. The
 *     data buffer is handed to the stack as a fragment whose token brings it back to the
 *     ring (netdev_frag_release) - the SO_DEVMEM_DONTNEED analogue;
 *   - plain: legacy 16-byte descriptors, one DRAM buffer per frame (the fallback).
 * Buffers are sized from the MTU so that no frame can overrun them (docs/platform.md: a
 * longer frame silently overwrites the next slot).
 */
#ifndef DRIVERS_NIC_E1000E_H
#define DRIVERS_NIC_E1000E_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../mm/dma.h"
#include "e1000e_regs.h"
#include "netdev.h"

#define E1000E_RX_RING 256u          /* RX descriptors */
#define E1000E_RX_SLOTS 2048u        /* RX buffers (header + data pairs): ring + held by the stack
				      * (NVMe/TCP writes hold theirs until the drive wrote them:
				      * nvmet.write_budget_kib, up to 2 MiB, is 1,437 of them at MSS
				      * 1460, and TCP still needs a window's worth besides) */
#define E1000E_TX_RING 256u          /* TX descriptors */
#define E1000E_TX_PARKED_MAX 128u    /* netbufs of frames xmit reclaimed, parked until the poll
				      * (tx_done_later): with a full ring, at most 255 frames'
				      * netbufs held between two polls, of a pool of 512 or 1,024 */
#define E1000E_HDR_BUF 256u          /* packet-split header buffer (BSIZE0 = 2 x 128) */
#define E1000E_RESET_TIMEOUT_NS (100ull * 1000000ull)
#define E1000E_EERD_TIMEOUT_NS (10ull * 1000000ull)
#define E1000E_LINK_POLL_NS (100ull * 1000000ull)
#define E1000E_TX_MAX_DESCS (2u + NETBUF_MAX_FRAGS) /* context + host part + fragments */
#define E1000E_TX_TRAIN_MAX NETBUF_MAX_FRAGS /* frames of a train: a context + two descriptors each */
#define E1000E_TX_POST_MAX (1u + 2u * E1000E_TX_TRAIN_MAX) /* descriptors of the largest netbuf, a full train */
#define E1000E_TX_BUF_MAX 16288u     /* largest buffer one data descriptor carries */
#define E1000E_TX_BOUNCE 32u         /* DRAM bounce buffers for frames the device cannot gather */
#define E1000E_TX_BOUNCE_SIZE 16384u
#define E1000E_TX_DEV_MAX_QEMU 4096u /* QEMU 7.2: one device-memory piece of <= 4 KiB per frame */
#define E1000E_TSO_MAX 65280u        /* TCP payload per TSO frame: the IPv4 datagram stays < 64 KiB */

struct e1000e_bus {
	uint32_t (*read32)(void *ctx, uint32_t off);
	void (*write32)(void *ctx, uint32_t off, uint32_t val);
	/* `bytes` of zeroed, 4 KiB aligned, contiguous host memory (*addr MEM_CLASS_HOST); NULL
	 * when out of memory. */
	void *(*dma_alloc)(void *ctx, size_t bytes, dma_addr_t *addr);
	void (*dma_free)(void *ctx, void *cpu, size_t bytes);
	/* Memory for the receive data buffers: device memory of the nearest P2P provider or,
	 * when none can be used, host memory with *why saying why. Fills *addr (tagged with its
	 * class), *cpu, *provider (NETDEV_PROVIDER_HOST for DRAM) and *offset (inside the
	 * provider). 0 or -ENOMEM. NULL hook: host memory through dma_alloc. */
	int (*data_alloc)(void *ctx, size_t bytes, dma_addr_t *addr, void **cpu, uint16_t *provider,
			  uint64_t *offset, const char **why);
	void (*data_free)(void *ctx, dma_addr_t addr, void *cpu, size_t bytes);
	/* Let about ns nanoseconds pass between two polls of the hardware (may be NULL). */
	void (*delay)(void *ctx, uint64_t ns);
	void *ctx;
};

enum e1000e_rx_mode {
	E1000E_RX_SPLIT = 0, /* packet split: headers in DRAM, payload in data buffers */
	E1000E_RX_PLAIN = 1, /* one DRAM buffer per frame */
};

/* Sizes and register values for one MTU and mode (e1000e_rx_sizes). */
struct e1000e_rx_sizes {
	unsigned frame_max;  /* longest frame accepted: MTU + Ethernet header + VLAN tag + FCS */
	unsigned hdr_size;   /* split: header buffer bytes (BSIZE0); plain: the frame buffer */
	unsigned data_size;  /* split: data buffer bytes (BSIZE1); plain: 0 */
	uint32_t psrctl;     /* split: PSRCTL value */
	uint32_t rctl;       /* RCTL bits for size: LPE, BSIZE/BSEX (plain) or DTYP (split) */
	unsigned desc_size;  /* 32 (split) or 16 (plain) */
};

/* Driver counters beyond the netdev's (those count frames and bytes by memory class). */
struct e1000e_counters {
	uint64_t rx_hdr_bytes;               /* bytes the NIC wrote into header buffers (DRAM); its data
					      * buffers' are the netdev's rx_bytes_* less these */
	uint64_t rx_errors;                  /* frames with CE/SE/SEQ/CXE/RXE */
	uint64_t rx_chained;                 /* frames spanning descriptors (must not happen): dropped */
	uint64_t rx_ring_empty;              /* refill found no free buffer */
	uint64_t rx_bad_release;             /* a token that was not out */
	uint64_t rx_units_mismatch;          /* RDH moved in other units than configured */
	uint64_t tx_ctx_reused;              /* frames sent under the context already in force */
	uint64_t tx_trains, tx_train_frames; /* frame trains posted (NETBUF_TX_TRAIN) and their frames */
	uint64_t tx_trains_mixed;            /* of them mixed trains (NETBUF_TX_TRAIN_MIXED: short runs) */
	uint64_t tx_ring_full;               /* xmit refused with -ENOBUFS */
	uint64_t tx_bad;                     /* xmit refused with -EINVAL (too many pieces, too long) */
	uint64_t tx_done, tx_ctx;            /* frames reclaimed; context descriptors written */
	uint64_t tx_bytes[MEM_CLASS_COUNT];  /* bytes the NIC read, by memory class */
	uint64_t tx_bounced, tx_bounce_bytes; /* frames whose fragments were copied to DRAM (tx_dev_max) */
	uint64_t tx_bounce_busy;             /* xmit refused: every bounce buffer in use */
	uint64_t tx_reclaimed_early;         /* frames reclaimed by xmit itself (ring or bounce buffers short) */
	uint64_t tx_parked_full;             /* xmit's reclaims cut short: E1000E_TX_PARKED_MAX netbufs parked */
	uint64_t link_changes;
	uint64_t irq_arms;                   /* receive interrupt re-armed before an idle halt */
};

struct e1000e_rx_slot {
	int32_t hdr;   /* header (split) or frame (plain) buffer index, -1 none */
	int32_t data;  /* data buffer index, -1 none */
};

struct e1000e_tx_slot {
	struct netbuf *nb;   /* on the frame's last descriptor */
	uint16_t last;       /* on the frame's first descriptor: index of its last */
	int16_t bounce;      /* on the frame's last descriptor: bounce buffer index, -1 none */
	bool first;
};

/* Where one receive buffer is. */
enum e1000e_buf_state {
	E1000E_BUF_FREE = 0, /* on the free stack */
	E1000E_BUF_RING,     /* posted to a receive descriptor */
	E1000E_BUF_OUT,      /* handed up as a fragment, until netdev_frag_release */
};

/* One receive buffer array (header/frame buffers or data buffers) with a free stack. */
struct e1000e_bufs {
	void *cpu;
	dma_addr_t dma;
	size_t bytes;        /* whole allocation */
	unsigned size;       /* one buffer */
	unsigned n;
	uint32_t *free;      /* stack of free indices */
	unsigned nfree;
	enum e1000e_buf_state *state; /* per buffer */
	uint16_t provider;   /* NETDEV_PROVIDER_HOST or the provider id */
	uint64_t offset;     /* of buffer 0 inside the provider */
	bool from_data_alloc;
};

#define E1000E_ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

struct e1000e {
	struct netdev ndev;
	struct e1000e_bus bus;
	char where[32];          /* "00:03.0" from the attach */
	enum e1000e_rx_mode mode_wanted;
	enum e1000e_rx_mode mode;
	const char *mode_why;    /* why data buffers are in DRAM (or plain mode), NULL if device memory */
	unsigned ps_units;       /* RDH/RDT units per 32-byte descriptor (QEMU 7.2: 2; datasheet: 1) */
	struct e1000e_rx_sizes sz;
	uint32_t rctl;
	bool loopback;
	bool ring_with_data;     /* wanted: packet-split receive ring behind the data buffers (nic.rx_ring) */
	bool rx_ring_with_data;  /* the receive ring is carved from dev->data (not dma_alloc'd) */
	/* RX */
	void *rx_ring;
	dma_addr_t rx_ring_dma;
	unsigned rx_n, rx_units, rx_ntu, rx_ntc;
	struct e1000e_rx_slot rx_sw[E1000E_RX_RING];
	struct e1000e_bufs hdr, data;
	/* One netbuf per header buffer (netbuf_rx_owned_init), lent to the stack with it: a
	 * received frame takes nothing from the netbuf pool. hdr.n of them, sizeof(struct
	 * netbuf) apart (raw memory: a struct with a flexible array member makes no array). */
	uint8_t *hdr_nbs;
	struct netdev_frag_owner hdr_owner, data_owner;
	bool rx_running;
	bool rx_discard;         /* dropping the rest of a frame that spanned descriptors */
	bool units_logged;
	/* TX */
	union e1000e_tx_desc *tx_ring;
	dma_addr_t tx_ring_dma;
	unsigned tx_n, tx_ntu, tx_ntc;
	struct e1000e_tx_desc_ctx tx_ctx_last; /* the context descriptor in force in the device */
	bool tx_ctx_valid;
	struct e1000e_tx_slot tx_sw[E1000E_TX_RING];
	/* Frames whose descriptors xmit reclaimed to make room: their netbuf_tx_done (which
	 * releases fragments to their owners, who may send again) waits for e1000e_poll, so that
	 * no owner's code runs inside xmit. */
	struct list_node tx_done_later;
	unsigned tx_parked;  /* netbufs on tx_done_later: at most E1000E_TX_PARKED_MAX */
	/* nic txreclaim poll [N]: xmit never reclaims, a full ring refuses at once, and at most
	 * N descriptors are in flight (0: the ring) - to exercise the stack's wait for ring room
	 * under QEMU, whose ring is otherwise never full for long. */
	bool tx_reclaim_poll_only;
	unsigned tx_limit;
	/* Largest device-memory gather per frame, in one piece (0: no limit). QEMU 7.2 maps
	 * MMIO for DMA through one 4 KiB bounce buffer, so a frame with a longer device piece,
	 * or two device pieces, is dropped silently; such frames are copied to DRAM here. */
	unsigned tx_dev_max;
	struct e1000e_bufs bounce;
	/* TCP segmentation offload: in use (NETDEV_F_TSO from the next rx_reconfigure) and why
	 * it is or is not (e1000e_tso_setup). */
	bool tso_on;
	const char *tso_why;
	bool tso_probe_pending;  /* nic.tso = auto found the link down: probe once it is up */
	/* link */
	uint64_t link_next_ns;
	/* receive interrupt as the idle loop's wake-up (e1000e_irq.c) */
	bool irq_on;
	struct e1000e_counters c;
};

/* --- pure helpers (unit-tested) --- */

/* Buffer sizes and register values for mtu (NETDEV_MTU_MIN..MAX) in mode. 0 or -EINVAL. */
int e1000e_rx_sizes(unsigned mtu, enum e1000e_rx_mode mode, struct e1000e_rx_sizes *out);

/* RDH/RDT value of descriptor index idx when the register counts `units` per descriptor. */
static inline uint32_t e1000e_ring_reg(unsigned idx, unsigned units)
{
	return (uint32_t)(idx * units);
}

/* Descriptor index of a RDH/RDT value (n descriptors, `units` per descriptor). */
static inline unsigned e1000e_ring_idx(uint32_t reg, unsigned units, unsigned n)
{
	return (unsigned)((reg / units) % n);
}

/* Descriptors free for software to post in a ring of n with next-to-use ntu and
 * next-to-clean ntc (one slot always stays empty). */
static inline unsigned e1000e_ring_space(unsigned ntu, unsigned ntc, unsigned n)
{
	return (ntc + n - ntu - 1) % n;
}

/* What a receive write-back says (e1000e_rx_parse_*). */
struct e1000e_rx_info {
	uint32_t staterr;
	unsigned len0;       /* bytes in buffer 0 (header buffer / frame buffer) */
	unsigned len1;       /* bytes in buffer 1 (data buffer) */
	unsigned hdr_len;    /* HDRLEN when split */
	bool done, eop, split, frame_error;
	uint32_t nb_flags;   /* NETBUF_RX_* */
};

/* Parse a packet-split write-back. */
void e1000e_rx_parse_ps(const struct e1000e_rx_desc_ps_wb *wb, struct e1000e_rx_info *out);
/* The same from write-back words 1 and 2 as loaded (host order): what rx_poll reads. */
void e1000e_rx_parse_ps_words(uint64_t w1, uint64_t w2, struct e1000e_rx_info *out);

/* Parse a legacy write-back. */
void e1000e_rx_parse_legacy(const struct e1000e_rx_desc_legacy *d, struct e1000e_rx_info *out);

/* NETBUF_RX_* checksum flags of a status_error word. */
uint32_t e1000e_rx_csum_flags(uint32_t staterr);

/* Build the transmit descriptors of nb into out[0..max): a TCP/IP context descriptor and
 * extended data descriptors with POPTS.TXSM when nb asks for NETBUF_TX_CSUM_PARTIAL, legacy
 * descriptors otherwise; the host part first, then each fragment; EOP and RS on the last.
 * NETBUF_TX_TSO adds segmentation to the context (TUCMD.TSE|IP, IPCSS/IPCSO/IPCSE, HDRLEN,
 * MSS = gso_size, PAYLEN) and DCMD.TSE, POPTS.IXSM to the data descriptors.
 * Returns the number of descriptors, -EINVAL (nothing to send, a piece too long, checksum
 * offsets out of range, a malformed TSO frame) or -ENOSPC (more than max). *ctx_used says
 * whether out[0] is a context descriptor. */
int e1000e_tx_build(const struct netbuf *nb, union e1000e_tx_desc *out, unsigned max, bool *ctx_used);

/* Transmit descriptors for a frame train (netdev.h NETBUF_TX_TRAIN): a context descriptor
 * with the checksum offsets every frame shares (TUCSS = csum_start, TUCSO, from each frame's
 * start), then per frame an extended data descriptor for its hdr_len header bytes and one
 * for its fragment (POPTS.TXSM on both), EOP on the fragment's; RS on the train's last only
 * (one completion). Returns the number of descriptors, -EINVAL (not a well-formed train of
 * at most E1000E_TX_TRAIN_MAX frames, a piece too long, a device-memory fragment beyond
 * tx_dev_max when set) or -ENOSPC (more than max). *ctx_used as e1000e_tx_build's.
 * A mixed train (NETBUF_TX_TRAIN_MIXED): the same context descriptor, then per frame one
 * data descriptor for its train_hlen[k] host bytes and one for each of its train_nfrags[k]
 * fragments, EOP on the frame's last, RS on the train's last (at most 1 + 2 * nfrags
 * descriptors); -EINVAL also for more than one device piece in a frame when tx_dev_max is
 * set (never bounced). */
int e1000e_tx_build_train(const struct netbuf *nb, union e1000e_tx_desc *out, unsigned max, unsigned tx_dev_max,
			  bool *ctx_used);

/* Frames a train may carry (the stack's tx_train_max): E1000E_TX_TRAIN_MAX, fewer under a
 * transmit limit (`nic txreclaim poll N`: at most N descriptors in flight), so that a train
 * always fits the room the senders are woken for (e1000e_tx_wake_room). */
unsigned e1000e_tx_train_max(const struct e1000e *dev);

/* Must nb's fragments be copied to DRAM before the device can gather them (tx_dev_max)? */
bool e1000e_tx_needs_bounce(const struct netbuf *nb, unsigned tx_dev_max);

/* --- receive interrupt as a wake-up (e1000e_irq.c) --- */

/* Route Receive Queue 0's cause to MSI-X entry `entry` (auto-cleared and self-masking
 * when it fires), masked until e1000e_irq_arm. The attach enabled MSI-X first. */
void e1000e_irq_setup(struct e1000e *dev, unsigned entry);

/* on: before an idle halt, clear the receive cause and unmask it, so the next frame raises
 * the interrupt (the caller polls once more: a frame may have come between its last poll
 * and the clear). off: mask it (the loop polls under load). 0, or -ENOTSUP when
 * e1000e_irq_setup did not run. */
int e1000e_irq_arm(struct e1000e *dev, bool on);

/* --- TCP segmentation offload (e1000e_tso.c) --- */

#define E1000E_TSO_PROBE_PAYLOAD 3000u  /* the probe frame's TCP payload */
#define E1000E_TSO_PROBE_MSS 1000u      /* its segment size: three segments back */
#define E1000E_TSO_PROBE_MAX 16u        /* frames the probe records */

/* nic.tso */
enum e1000e_tso_mode {
	E1000E_TSO_AUTO = 0, /* on when the loopback probe sees correct TCP segments */
	E1000E_TSO_ON = 1,   /* on without probing */
	E1000E_TSO_OFF = 2,
};

/* What the probe saw of one frame that came back. */
struct e1000e_tso_seen {
	uint16_t ip_len;     /* IPv4 total length */
	uint16_t frag;       /* IPv4 flags and fragment offset */
	bool ip_csum_ok;     /* the IPv4 header checksum verifies */
	bool has_tcp;        /* the frame starts with a TCP header (not a later fragment) */
	uint32_t seq;
	uint8_t tcp_flags;
	uint16_t tcp_hlen;
	uint16_t pay_len;    /* TCP payload bytes (when has_tcp and the lengths agree) */
	bool tcp_csum_ok;    /* the TCP checksum verifies over pseudo-header, header, payload */
	bool payload_ok;     /* the payload is the probe's bytes at that sequence number */
};

enum e1000e_tso_verdict {
	E1000E_TSO_SEGMENTS,     /* correct TCP segments: TSO is usable */
	E1000E_TSO_IP_FRAGMENTS, /* IPv4 fragments of one big segment (QEMU before 8.0) */
	E1000E_TSO_WRONG,        /* segments, but of the wrong number, length, sequence, checksum or bytes */
	E1000E_TSO_NOTHING,      /* nothing came back (or the probe could not run) */
};

/* Judge the n frames that came back from one TSO frame of `payload` bytes starting at
 * seq0 cut at mss (20-byte IPv4 and TCP headers); *why says what was wrong. */
enum e1000e_tso_verdict e1000e_tso_judge(const struct e1000e_tso_seen *seen, unsigned n, uint32_t seq0,
					 unsigned payload, unsigned mss, const char **why);

/* Send one TSO frame to the device itself in MAC loopback (receive handler borrowed, other
 * frames passed on to the stack) and judge what comes back. now_ns: the caller's clock,
 * for e1000e_poll. The link must be up and a netbuf pool must exist. */
enum e1000e_tso_verdict e1000e_tso_probe(struct e1000e *dev, uint64_t now_ns, const char **why);

/* Turn TSO on or off for the stack (NETDEV_F_TSO, tso_max); why is shown by `nic`. */
void e1000e_tso_set(struct e1000e *dev, bool on, const char *why);

/* Apply nic.tso: off, on, or auto (e1000e_tso_probe decides), logging the outcome. With
 * the link down, auto leaves TSO off and sets tso_probe_pending for the caller's poller. */
void e1000e_tso_setup(struct e1000e *dev, enum e1000e_tso_mode mode, uint64_t now_ns);

/* --- the device --- */

/* Bring the device up: reset, mask interrupts, read the MAC, set the link up, build the
 * rings for mode/mtu, enable RX and TX. dev->bus, where, mode_wanted, ps_units (0: 2) are
 * filled by the caller. Registers the netdev. 0 or negative errno (everything undone). */
int e1000e_init(struct e1000e *dev, unsigned mtu);

/* Stop the device, free rings and buffers, unregister. -EBUSY (nothing done) while the
 * stack still holds receive buffers. */
int e1000e_fini(struct e1000e *dev);

/* Receive up to budget frames, reclaim TX, watch the link (now_ns: the clock). Returns the
 * work done (frames received + reclaimed), 0 idle. */
int e1000e_poll(struct e1000e *dev, unsigned budget, uint64_t now_ns);

/* Rebuild the receive side for a mode/MTU (stop RX, free and reallocate buffers, start).
 * -EBUSY while the stack holds receive buffers. */
int e1000e_rx_reconfigure(struct e1000e *dev, enum e1000e_rx_mode mode, unsigned mtu);

/* MAC loopback (RCTL.LBM=01) on or off. */
void e1000e_set_loopback(struct e1000e *dev, bool on);

/* Receive buffers the stack holds now (header, data). */
void e1000e_rx_outstanding(const struct e1000e *dev, unsigned *hdr, unsigned *data);

/* The driver's netdev ops (xmit, set_mtu). */
extern const struct netdev_ops e1000e_netdev_ops;

#endif
