/*
 * fake_nvmet_sock.h - a fake socket layer under the real NVMe/TCP transport (nvmet_tcp.c), for
 * host tests and fuzzers that play a hostile host: the bytes a host sends are handed to
 * the transport as fragments of a chosen size (host memory), what the transport sends is
 * kept for the test to parse, and every fragment handed out must come back exactly once.
 * Contract violations (use after close, double release, double close) call
 * fsk_violation(), which the test defines (Criterion assertion or abort() in a fuzzer).
 * No device memory: the transport runs with mem ops NULL (every payload in DRAM).
 */
#ifndef TESTS_UNIT_DRIVERS_NVME_TARGET_FAKE_NVMET_SOCK_H
#define TESTS_UNIT_DRIVERS_NVME_TARGET_FAKE_NVMET_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "drivers/nvme/target/nvmet_tcp.h"

#define FSK_CONNS 4
#define FSK_RX_MAX (512 * 1024)
#define FSK_TX_MAX (1024 * 1024)
#define FSK_TOKENS 65536
#define FSK_HELD 512
#define FSK_LOCAL_ADDR 0x0a000001u  /* 10.0.0.1: the port's traddr */
#define FSK_PEER_ADDR 0x0a000002u   /* 10.0.0.2: the host */

struct tcp_sock {
	bool listener, closed, aborted, eof, accepted;
	uint16_t port;
	const struct tcp_ops *ops;
	void *ctx;
	uint8_t rx[FSK_RX_MAX];    /* the byte stream from the host */
	size_t rx_len, rx_off;     /* queued, handed out */
	size_t frag_size;          /* cut into fragments of this size */
	uint8_t tx[FSK_TX_MAX];    /* what the transport sent (fsk_tx_drop() forgets it) */
	size_t tx_len, tx_read;
	size_t space;              /* send space left */
	struct netdev_frag held[FSK_HELD]; /* zero-copy sends not yet acknowledged */
	unsigned nheld;
};

/* Called on a contract violation, with a message. Defined by the test. */
void fsk_violation(const char *what);

extern const struct nvmet_tcp_sock_ops fsk_ops;
extern struct tcp_sock fsk_listener;
extern struct tcp_sock fsk_conns[FSK_CONNS];
extern unsigned fsk_handed, fsk_released;  /* fragments given to the transport, and back */

/* Forget every socket and fragment count (call before nvmet_tcp_start). */
void fsk_reset(void);
/* Connection i arrives on the listener, cut into fragments of frag_size bytes. */
struct tcp_sock *fsk_connect(unsigned i, size_t frag_size);
/* The host sends len bytes on s (TCP_EV_RECV); beyond the buffer they are dropped. */
void fsk_send(struct tcp_sock *s, const void *buf, size_t len);
/* The host's FIN. */
void fsk_eof(struct tcp_sock *s);
/* The host acknowledged everything: held fragments released, send space whole (TCP_EV_SENT). */
void fsk_ack(struct tcp_sock *s);
/* Forget what was sent so far (long fuzz runs). */
void fsk_tx_drop(struct tcp_sock *s);
/* Is s still open (neither closed nor aborted)? */
bool fsk_open(const struct tcp_sock *s);

/* The next PDU the transport sent on s, whole: its bytes (header first) in *pdu and its
 * length; false when no whole PDU is there (yet). */
bool fsk_next_pdu(struct tcp_sock *s, const uint8_t **pdu, uint32_t *plen);

#endif
