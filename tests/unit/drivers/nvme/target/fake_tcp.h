/*
 * fake_tcp.h - a fake net/tcp under the real NVMe/TCP transport (nvmet_tcp.c), linked
 * instead of net/tcp/ by host tests and fuzzers (their `// sources:` line chooses it):
 * it implements the functions of net/tcp/tcp.h the transport calls, plus net.h's
 * net_config_get (the appliance's address is FTCP_LOCAL_ADDR).
 *
 * One listener and FTCP_CONNS connections. The bytes a host sends are handed to the
 * transport as fragments of a chosen size (DRAM, or "device memory" of provider 1 when
 * dev_frags is set), what the transport sends is kept for the test to parse with
 * nvme_tcp_host.h, and zero-copy sends stay held until the host acknowledges them.
 * Every fragment handed out must come back exactly once. Contract violations (use after
 * close, double release, double close, a second listener) call ftcp_violation(), which
 * prints and aborts (a crash in Criterion, a finding in a fuzzer).
 */
#ifndef TESTS_UNIT_DRIVERS_NVME_TARGET_FAKE_TCP_H
#define TESTS_UNIT_DRIVERS_NVME_TARGET_FAKE_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "drivers/nic/netdev.h"
#include "drivers/nvme/target/nvmet.h"
#include "drivers/nvme/target/nvmet_config.h"
#include "drivers/nvme/target/nvmet_tcp.h"
#include "net/tcp/tcp.h"
#include "nvme_tcp_host.h"

#define FTCP_CONNS (NVMET_TCP_MAX_CONNS + 8) /* beyond the transport's pool (its limits) */
#define FTCP_RX_MAX (4 * 1024 * 1024) /* a queue depth of writes past NVMET_TCP_WRITE_HELD_MAX */
#define FTCP_TX_MAX (6 * 1024 * 1024)
#define FTCP_TOKENS 65536
#define FTCP_HELD 1024
#define FTCP_LOCAL_ADDR 0x0a000001u  /* 10.0.0.1: the appliance, the port's traddr */
#define FTCP_PEER_ADDR 0x0a000002u   /* 10.0.0.2: the host */
#define FTCP_PEER_PORT 40000         /* + connection index */
#define FTCP_LIVE_ADDR 0x0a000003u   /* 10.0.0.3: the host of ftcp_liveness() */

struct tcp_sock {
	bool listener, closed, aborted, eof, accepted;
	uint16_t port;
	uint32_t laddr;            /* the local address the host connected to */
	uint32_t raddr;            /* the host's address (FTCP_PEER_ADDR unless chosen) */
	bool authorised;           /* tcp_set_authorised() was called */
	uint64_t keepalive_idle_ns; /* tcp_set_keepalive()'s idle time, 0 none */
	bool sent_when_owed;       /* tcp_set_sent_when_owed() was called */
	const struct tcp_ops *ops;
	void *ctx;
	uint8_t *rx;               /* the byte stream from the host (FTCP_RX_MAX bytes, allocated
				    * at the socket's first use and kept) */
	size_t rx_len, rx_off;     /* queued, handed out */
	size_t frag_size;          /* cut into fragments of this size */
	bool dev_frags;            /* hand them out as device memory (a CMB) of provider 1 */
	unsigned dev_mix;          /* with dev_frags, every second fragment (odd token) is of
				    * provider 2 (1) or in DRAM (2; 3: DRAM marked with provider 1)
				    * instead; 0: all alike */
	uint8_t *tx;               /* what the transport sent, FTCP_TX_MAX bytes (ftcp_tx_drop()
				    * forgets it) */
	size_t tx_len, tx_read;
	size_t space;              /* send space left */
	unsigned flushes;
	unsigned ack_holds;        /* tcp_ack_hold() calls (an answer promised) */
	struct netdev_frag held[FTCP_HELD]; /* zero-copy sends not yet acknowledged */
	unsigned nheld;
	unsigned frag_room;        /* when not 0: fragments tcp_send_frags() takes now (the real
				    * socket's share of send entries running short) */
	uint64_t frag_bytes[MEM_CLASS_COUNT]; /* zero-copy bytes sent, by memory class */
};

extern struct tcp_sock ftcp_listener;
extern struct tcp_sock ftcp_conns[FTCP_CONNS];
extern unsigned ftcp_handed, ftcp_released;  /* fragments given to the transport, and back */

/* The target and its NVMe/TCP transport up over this fake: sockets and counts reset,
 * NIC buffer pool, json parsed into cfg, the core started with open_fn, the transport
 * with mops (NULL: no device memory). 0, or the failing step's rc (err says why). */
int ftcp_start(const char *json, struct nvmet_config *cfg, nvmet_bdev_open_fn open_fn,
	       const struct nvmet_tcp_mem_ops *mops, char *err, size_t cap);
/* Everything down: transport stopped, its connections reaped, the core stopped. 0 when
 * every connection, queue, controller and listener is gone, every fragment handed out
 * came back exactly once and the NIC buffer pool is empty; else -1 and why. */
int ftcp_stop(char *why, size_t cap);

/* Liveness (fuzzers, hostile tests): another host (FTCP_LIVE_ADDR) connects a new
 * controller of subnqn on the last two sockets, writes 512 bytes in the capsule at LBA 0
 * of nsid 1, reads them back and leaves, whatever the other connections hold. 0, or -1
 * with why (a refused connection, a command without an answer or with a status). */
int ftcp_liveness(const char *hostnqn, const char *subnqn, char *why, size_t cap);

/* Print what and abort. */
void ftcp_violation(const char *what) __attribute__((noreturn));

/* Forget every socket and fragment count (call before nvmet_tcp_start). */
void ftcp_reset(void);
/* Connection i arrives on the listener, made to local address laddr, its bytes cut into
 * fragments of frag_size; whatever the transport does with it. */
struct tcp_sock *ftcp_arrive(unsigned i, size_t frag_size, uint32_t laddr);
/* ftcp_arrive() to FTCP_LOCAL_ADDR from the host address raddr. */
struct tcp_sock *ftcp_arrive_from(unsigned i, size_t frag_size, uint32_t raddr);
/* ftcp_arrive() to FTCP_LOCAL_ADDR; the transport must take the connection. */
struct tcp_sock *ftcp_connect(unsigned i, size_t frag_size);
/* The host sends len bytes on s: TCP_EV_RECV, then nvmet_tcp_poll() passes until the
 * transport took them all (it receives from the poll loop); nothing when s is closed,
 * bytes beyond the buffer are dropped. */
void ftcp_send(struct tcp_sock *s, const void *buf, size_t len);
/* The timers due now (core/loop.c runs them after each pass), then a pass of
 * nvmet_tcp_poll(): what the loop does once the clock moved (a timeout's pass). */
void ftcp_pass(void);
/* The host's FIN (delivered as ftcp_send() delivers bytes). */
void ftcp_eof(struct tcp_sock *s);
/* The host acknowledged everything: held fragments released, send space whole (TCP_EV_SENT). */
void ftcp_ack(struct tcp_sock *s);
/* Forget what the host has read of what was sent (long fuzz runs). */
void ftcp_tx_drop(struct tcp_sock *s);
/* Is s still open (neither closed nor aborted)? */
bool ftcp_open(const struct tcp_sock *s);

/* The host sends an ICReq, a CapsuleCmd or an H2CData PDU on s (nvme_tcp_host.h's
 * builders; in-capsule data up to 64 KiB, H2CData up to 256 KiB). */
void ftcp_icreq(struct tcp_sock *s, uint16_t pfv, uint8_t hpda, uint8_t dgst);
void ftcp_capsule(struct tcp_sock *s, bool hdgst, bool ddgst, const struct nvme_sqe *sqe, const void *data,
		  uint32_t len);
void ftcp_h2c(struct tcp_sock *s, bool hdgst, bool ddgst, uint16_t cccid, uint16_t ttag, uint32_t datao,
	      const void *data, uint32_t len, bool last);

/* The next PDU the transport sent on s: 1 (consumed), 0 when no whole PDU is there,
 * -EBADMSG when the bytes are not a valid PDU (nth_parse). */
int ftcp_next_pdu(struct tcp_sock *s, struct nth_pdu *p);

/* Feed the PDUs sent on s to r until its command completes: 1, 0 when the PDUs ran out
 * first, or the parser's / collector's error. */
int ftcp_resp(struct tcp_sock *s, struct nth_resp *r);

#endif
