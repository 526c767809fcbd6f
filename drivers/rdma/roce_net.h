/*
 * roce_net.h - a RoCE v2 device on the IPv4/UDP stack: the receive path of UDP port
 * 4791 (headers parsed from bounded reads, the ICRC checked over the host part and the
 * device-memory fragments through the counted accessor, dispatch by DestQP) and the
 * send path (headers, payload, pad and ICRC over the IPv4/UDP headers the stack will put
 * in front). The GSI QP's MADs go to the CM; RC requests from a QP's peer go to the
 * responder (roce_resp.h), RC responses to the completer (roce_req.h); what each role has
 * to send goes out partly at once and the rest from the poller, which also runs the
 * requesters' timers and sends what was posted.
 */
#ifndef DRIVERS_RDMA_ROCE_NET_H
#define DRIVERS_RDMA_ROCE_NET_H

#include <stdint.h>
#include "../../net/net.h"
#include "roce_cm.h"
#include "roce_mad.h"
#include "roce_verbs.h"
#include "roce_wire.h"

struct roce_net_stats {
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes, tx_errors;
	uint64_t rx_parse[ROCE_PARSE_PAD + 1];  /* by enum roce_parse_err (ok counts good packets) */
	uint64_t rx_no_ip_hdr;       /* the IPv4 header in front of UDP not found or with options */
	uint64_t rx_icrc_bad, rx_no_qp, rx_bad_pkey, rx_bad_qkey, rx_no_transport;
	uint64_t rx_bad_src;         /* an RC request from another address than the QP's peer */
	uint64_t req_tx;             /* requester packets sent (retransmissions included) */
	uint64_t resp_tx;            /* responder packets sent: ACK/NAK/RNR NAK, READ responses, atomic ACKs */
	uint64_t gsi_rx, gsi_bad_mad, cm_req, cm_other, cm_rej_tx;
	uint64_t tx_zc, tx_zc_bytes;  /* packets sent with their payload gathered by the NIC from device memory */
	uint64_t tx_zc_inline;       /* ... of which with pad and ICRC in the room behind the payload */
	uint64_t tx_zc_no_trailer;   /* ... copied instead: every trailer slot in use */
	uint64_t tx_gathered;        /* packets larger than a copied datagram, their DRAM payload gathered by the NIC */
	uint64_t tx_held;            /* gathered pieces that held their MR's memory until the NIC was done */
};

#define ROCE_NET_TRAILERS 256        /* pad + ICRC slots of zero-copy packets the NIC still holds */
#define ROCE_NET_TRAILER_LEN 8       /* pad (0-3) + ICRC (4) */

struct roce_net {
	struct roce_dev *dev;
	struct udp_sock *sock;
	struct roce_qp *gsi;         /* QP 1 */
	struct roce_pd *gsi_pd;
	struct roce_cq *gsi_cq;
	uint32_t gsi_psn;            /* PSN of the next UD packet QP 1 sends */
	struct roce_net_stats st;
	struct roce_cm cm;           /* the communication manager on QP 1 */
	unsigned poll_next;          /* the QP slot roce_net_poll's sends start from */
	/* Zero-copy send of a payload in device memory: the frame is the headers (host part),
	 * the payload (referenced where it is) and a trailer slot here (host DRAM) with the
	 * pad and the ICRC, given back when the NIC is done with the frame. */
	uint8_t trailer[ROCE_NET_TRAILERS][ROCE_NET_TRAILER_LEN];
	uint8_t trailer_busy[ROCE_NET_TRAILERS];
	unsigned trailers_used;
	struct netdev_frag_owner trailer_owner;
};

/* Bind UDP 4791 for dev and create its GSI QP (in RTS). 0 or errno (nothing held then). */
int roce_net_start(struct roce_net *rn, struct roce_dev *dev);

/* Unbind and destroy the GSI QP. */
void roce_net_stop(struct roce_net *rn);

/* Send one UD packet from QP srcqp to dst_ip's QP p->destqp: p names the opcode and BTH/
 * DETH fields, payload (len bytes, host memory) follows the headers. 0 or errno. */
int roce_net_send_ud(struct roce_net *rn, uint32_t dst_ip, struct roce_pkt *p, const void *payload, size_t len);

/* Send one packet: p names the opcode and header fields (PSN included), payload (len
 * bytes, host memory) follows the headers. 0 or errno. */
int roce_net_xmit(struct roce_net *rn, uint32_t dst_ip, struct roce_pkt *p, const void *payload, size_t len);

/* Send one RC packet: the payload is gathered from tx's pieces of registered memory (CPU
 * reads counted by memory class). A payload that is one piece of device memory the NIC
 * may gather from goes without a copy (the CPU reads it only for the ICRC): the memory
 * must stay as it is until the peer acknowledged the packet, which the RC layer's
 * completion rule (a WR completes only when ACKed) gives its user. 0 or errno. */
struct roce_tx;
int roce_net_tx(struct roce_net *rn, uint32_t dst_ip, struct roce_tx *tx);

/* The poller's work, up to budget packets: every RC QP's retransmit/RNR timers, then what
 * their responders still owe (READ responses beyond what a request may send at once,
 * packets the NIC refused) and their requesters' packets (posted WRs, retransmissions),
 * QP by QP from the one after where the last pass's budget ran out (no QP starves the
 * ones after it). Returns the packets sent plus timer events. */
int roce_net_poll(struct roce_net *rn, unsigned budget);

/* The appliance's boot device rxe0 on the stack (roce_boot.c), NULL when it did not start:
 * what the NVMe/RDMA target listens on. */
struct roce_net *roce_boot_net_get(void);

/* Receive entry (the UDP callback; public for tests): one datagram of UDP 4791, nb->data
 * at the BTH. Does not free nb. */
void roce_net_rx(struct roce_net *rn, const struct udp_meta *m, struct netbuf *nb);

#endif
