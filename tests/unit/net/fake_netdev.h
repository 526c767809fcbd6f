/*
 * fake_netdev.h - a netdev for host tests and fuzzing: captures transmitted frames
 * (applying TX checksum offload and TCP segmentation offload the way a NIC would: a TSO
 * frame is captured as its segments) and injects received frames split
 * the way QEMU 7.2's e1000e packet split does (docs/platform.md): headers into a host
 * "header buffer", the rest into "device memory" data buffers that come back through
 * fragment tokens. Also a minimal peer: builders and parsers for crafted frames.
 */
#ifndef TESTS_UNIT_NET_FAKE_NETDEV_H
#define TESTS_UNIT_NET_FAKE_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "drivers/nic/netdev.h"

#define FAKE_TX_MAX 256
#define FAKE_FRAME_MAX 9100
#define FAKE_HDR_BUFS 64
#define FAKE_HDR_SIZE 256            /* BSIZE0 */
#define FAKE_DATA_BUFS 512
#define FAKE_DATA_SIZE 2048          /* BSIZE1..3 */
#define FAKE_NETDEV_PLAIN (1u << 31) /* setup: e1000e's plain receive mode (nic.rx_mode = plain) */

struct fake_frame {
	size_t len;
	uint8_t b[FAKE_FRAME_MAX];
};

struct fake_netdev {
	struct netdev dev;
	struct netdev_frag_owner hdr_owner, data_owner, plain_owner;
	unsigned ntx;
	struct fake_frame tx[FAKE_TX_MAX];
	uint64_t tx_dropped;             /* captures beyond FAKE_TX_MAX */
	uint64_t tx_over_limit;          /* frames beyond dev.tx_dev_frags/tx_dev_bytes (a NIC would bounce) */
	unsigned tx_refuse;              /* refuse this many more frames with -ENOBUFS (a full TX ring,
					  * stopped: netdev_tx_wake when it has room again) */
	uint64_t tx_refused;
	uint64_t tso_frames;             /* NETBUF_TX_TSO frames, captured as the segments the NIC cuts */
	uint64_t tx_trains;              /* NETBUF_TX_TRAIN netbufs, captured as their frames */
	uint64_t tx_train_dev_frames;    /* frames of trains whose payload is in device memory */
	uint64_t tx_trains_mixed;        /* of the trains NETBUF_TX_TRAIN_MIXED ones (short runs) */
	bool split;                      /* split like e1000e (default true) */
	bool plain;                      /* e1000e's plain mode: the whole frame in one host buffer
					  * (a data buffer lent as the netbuf's header buffer), no
					  * fragments, rx_bufs 0 (the stack copies the payload) */
	bool rx_csum;                    /* report L3/L4 checksum OK after verifying (NIC offload) */
	bool tx_late;                    /* a transmit ring that completes late: frames are captured
					  * at once but their netbufs (and the fragments' references)
					  * kept until fake_netdev_tx_complete */
	unsigned nlate;
	struct netbuf *late[FAKE_TX_MAX];
	/* A transmit ring of tx_ring descriptors (0: none), as e1000e's: a frame takes one per
	 * piece (host part and fragments) plus a context descriptor when it asks for checksum
	 * offload or TSO; frames are captured at once but hold their descriptors (and netbufs)
	 * until fake_netdev_tx_reclaim. A frame that does not fit is refused (-ENOBUFS) and the
	 * device stopped (netdev_tx_stop); the reclaim wakes it (netdev_tx_wake) once the
	 * largest frame fits again. */
	unsigned tx_ring, ring_used;
	uint8_t late_descs[FAKE_TX_MAX];
	bool rx_csum_trust;              /* report checksums OK without verifying (fuzzing) */
	bool rx_pool;                    /* hand frames up in netbufs from the pool
					  * (netbuf_alloc_rx) instead of the header buffers' own
					  * (netbuf_rx_owned_get, as e1000e does) */
	bool rx_open;                    /* frames injected since the last fake_netdev_rx_end */
	bool rx_batch;                   /* injected frames form one receive batch until the test
					  * calls tcp_rx_batch_end (default: each frame ends one) */
	unsigned hdr_out, data_out;      /* buffers lent to the stack */
	bool hdr_used[FAKE_HDR_BUFS];
	bool data_used[FAKE_DATA_BUFS];
	uint8_t hdr_buf[FAKE_HDR_BUFS][FAKE_HDR_SIZE];
	/* the header buffers' netbufs (netbuf_rx_owned_init), as raw memory: a struct with a
	 * flexible array member makes no array */
	_Alignas(16) uint8_t hdr_nb[FAKE_HDR_BUFS][sizeof(struct netbuf)];
	uint8_t data_buf[FAKE_DATA_BUFS][FAKE_DATA_SIZE];
};

extern const uint8_t fake_our_mac[6];
extern const uint8_t fake_peer_mac[6];

/* Register fd (name "fake0", our MAC, MTU 1500, link up) with features (NETDEV_F_*, and
 * FAKE_NETDEV_PLAIN for e1000e's plain receive mode); NETDEV_F_TX_CSUM brings
 * NETDEV_F_TX_TRAIN, as the e1000e offers both (a test clears it for the lone-frame path). */
void fake_netdev_setup(struct fake_netdev *fd, uint32_t features);

/* Unregister fd. Returns the number of RX buffers still lent to the stack. */
unsigned fake_netdev_teardown(struct fake_netdev *fd);

/* Deliver one frame; returns 0 or -ENOBUFS (no free receive buffer). */
/* The end of a receive batch of injected frames (rx_batch mode), as the e1000e's poll
 * ends one (netdev_rx_end): the stack delivers what it gathered. */
void fake_netdev_rx_end(struct fake_netdev *fd);
int fake_netdev_inject(struct fake_netdev *fd, const void *frame, size_t len);

/* Forget the captured frames. */
void fake_netdev_clear(struct fake_netdev *fd);

/* tx_late: the device is done with every frame it still holds (descriptor done). Returns how many. */
unsigned fake_netdev_tx_complete(struct fake_netdev *fd);

/* The largest frame's descriptors (context + host part + NETBUF_MAX_FRAGS): a stopped ring
 * wakes once this many are free, or a whole train's (a context and two a frame) when the
 * device offers trains, as e1000e's (a ring too small for FAKE_TX_TRAIN_MAX frames cuts
 * dev.tx_train_max to what fits it, as e1000e's transmit limit does). */
#define FAKE_TX_FRAME_DESCS_MAX (2u + NETBUF_MAX_FRAGS)
/* Frames a train carries at most, as e1000e's. */
#define FAKE_TX_TRAIN_MAX NETBUF_MAX_FRAGS

/* tx_ring: the device is done with the n oldest frames it holds; their descriptors are free
 * again (waking a stopped device when the largest frame's or train's are). Returns how many. */
unsigned fake_netdev_tx_reclaim(struct fake_netdev *fd, unsigned n);

/* --- peer side ------------------------------------------------------------------------ */

struct fake_tcp {
	uint32_t src, dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t wnd;
	const uint8_t *opts;
	size_t optlen;
	const void *payload;
	size_t len;
	bool bad_csum;
};

/* Build an Ethernet/IPv4/TCP frame from the peer to us; returns its length. */
size_t fake_build_tcp(uint8_t *out, const struct fake_tcp *t);

/* Build an Ethernet/IPv4 frame with the given protocol payload (already complete). */
size_t fake_build_ipv4(uint8_t *out, uint32_t src, uint32_t dst, uint8_t proto, const void *l4, size_t len,
		       uint16_t flags_fragoff);

/* Build a UDP datagram frame (checksum filled). */
size_t fake_build_udp(uint8_t *out, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, const void *data,
		      size_t len);

/* Build an ARP frame from the peer. */
size_t fake_build_arp(uint8_t *out, uint16_t oper, const uint8_t sha[6], uint32_t spa, const uint8_t tha[6],
		      uint32_t tpa, const uint8_t dst_mac[6]);

struct fake_parsed_tcp {
	uint32_t src, dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t wnd;
	int mss, ws;             /* -1 when absent */
	bool sack_perm;          /* SACK-permitted option present */
	unsigned nsack;          /* SACK blocks (RFC 2018), in option order */
	uint32_t sack[4][2];
	size_t hlen;             /* TCP header length with options */
	const uint8_t *payload;
	size_t len;
};

/* Parse a captured frame as TCP, checking the IPv4 and TCP checksums; false otherwise. */
bool fake_parse_tcp(const struct fake_frame *f, struct fake_parsed_tcp *out);

/* Internet checksum helper. */
uint16_t fake_csum(const void *p, size_t len, uint32_t init);

#endif
