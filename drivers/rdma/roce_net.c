/*
 * roce_net.c - RoCE v2 on UDP 4791: receive (bounded header read, parse, ICRC, P_Key,
 * dispatch by DestQP) and UD send with the ICRC. See roce_net.h.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/log.h"
#include "../../net/wire.h"
#include "roce_icrc.h"
#include "roce_internal.h"
#include "roce_net.h"
#include "roce_req.h"
#include "roce_resp.h"
#include "../../lib/clock.h"

LOG_MODULE_USE(rdma);

#define ROCE_ICRC_CHUNK 256          /* bytes read per step while summing a packet */
#define ROCE_UD_MAX 4096             /* the largest payload of one packet (path MTU 4096) */
#define ROCE_NET_RX_TX_BUDGET 16     /* packets a received request may send at once; the poller sends the rest */

static void roce_net_udp_rx(struct udp_sock *s, void *ctx, const struct udp_meta *m, struct netbuf *nb)
{
	(void)s;
	roce_net_rx(ctx, m, nb);
}

/* The NIC is done with a zero-copy frame: its trailer slot is free again. */
static void roce_net_trailer_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct roce_net *rn = container_of(o, struct roce_net, trailer_owner);
	if (token < ROCE_NET_TRAILERS && rn->trailer_busy[token]) {
		rn->trailer_busy[token] = 0;
		rn->trailers_used--;
	}
}

/* A free trailer slot, or -1. */
static int roce_net_trailer_get(struct roce_net *rn)
{
	for (unsigned i = 0; i < ROCE_NET_TRAILERS && rn->trailers_used < ROCE_NET_TRAILERS; i++)
		if (!rn->trailer_busy[i]) {
			rn->trailer_busy[i] = 1;
			rn->trailers_used++;
			return (int)i;
		}
	return -1;
}

int roce_net_start(struct roce_net *rn, struct roce_dev *dev)
{
	struct roce_qp_init_attr init = { .qp_type = ROCE_QPT_UD,
					  .cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct roce_qp_attr a = { .port_num = 1, .qkey = ROCE_GSI_QKEY };
	int rc;

	memset(rn, 0, sizeof(*rn));
	rn->dev = dev;
	rn->trailer_owner.name = "roce-trailer";
	rn->trailer_owner.release = roce_net_trailer_release;
	if ((rc = roce_alloc_pd(dev, &rn->gsi_pd)))
		return rc;
	if ((rc = roce_create_cq(dev, 32, NULL, NULL, &rn->gsi_cq)))
		goto fail_pd;
	init.send_cq = init.recv_cq = rn->gsi_cq;
	if ((rc = roce_create_gsi_qp(rn->gsi_pd, &init, &rn->gsi)))
		goto fail_cq;
	a.qp_state = ROCE_QPS_INIT;
	if ((rc = roce_modify_qp(rn->gsi, &a, ROCE_QP_STATE | ROCE_QP_PKEY_INDEX | ROCE_QP_PORT | ROCE_QP_QKEY)))
		goto fail_qp;
	a.qp_state = ROCE_QPS_RTR;
	if ((rc = roce_modify_qp(rn->gsi, &a, ROCE_QP_STATE)))
		goto fail_qp;
	a.qp_state = ROCE_QPS_RTS;
	if ((rc = roce_modify_qp(rn->gsi, &a, ROCE_QP_STATE | ROCE_QP_SQ_PSN)))
		goto fail_qp;
	if ((rc = udp_bind(ROCE_UDP_PORT, roce_net_udp_rx, rn, &rn->sock)))
		goto fail_qp;
	return 0;

fail_qp:
	roce_destroy_qp(rn->gsi);
fail_cq:
	roce_destroy_cq(rn->gsi_cq);
fail_pd:
	roce_dealloc_pd(rn->gsi_pd);
	rn->gsi = NULL;
	return rc;
}

void roce_net_stop(struct roce_net *rn)
{
	if (!rn->gsi)
		return;
	udp_close(rn->sock);
	roce_destroy_qp(rn->gsi);
	roce_destroy_cq(rn->gsi_cq);
	roce_dealloc_pd(rn->gsi_pd);
	rn->gsi = NULL;
}

/* The IPv4 and UDP headers the stack left in front of nb->data (the host part keeps
 * the pulled headers): found only for a 20-byte IPv4 header matching m (RoCE v2 peers
 * send no IP options). 0 or -ENOENT. */
static int roce_net_l3l4(const struct netbuf *nb, const struct udp_meta *m, struct ipv4_hdr *ip,
			 struct udp_hdr *uh)
{
	if ((size_t)(nb->data - nb->head) < sizeof(*ip) + sizeof(*uh))
		return -ENOENT;
	memcpy(ip, nb->data - sizeof(*uh) - sizeof(*ip), sizeof(*ip));
	memcpy(uh, nb->data - sizeof(*uh), sizeof(*uh));
	if (ip->ver_ihl != 0x45 || ip->protocol != IP_PROTO_UDP || be32_get(ip->src) != m->src_addr ||
	    be32_get(ip->dst) != m->dst_addr || be16_get(uh->dst_port) != m->dst_port ||
	    be16_get(uh->src_port) != m->src_port)
		return -ENOENT;
	return 0;
}

/* The ICRC over the whole packet (len bytes at nb->data, the last 4 the ICRC itself),
 * reading the payload in bounded chunks through netbuf_copy_out (device-memory bytes are
 * counted there). Returns the computed value; *stored gets the packet's. -EINVAL if short. */
static int roce_net_icrc(const struct netbuf *nb, const struct ipv4_hdr *ip, const struct udp_hdr *uh,
			 const uint8_t *bth, size_t len, uint32_t *computed, uint32_t *stored)
{
	uint8_t chunk[ROCE_ICRC_CHUNK];
	uint32_t crc = roce_icrc_start(ip, uh, bth);
	size_t off = sizeof(struct roce_bth), end = len - ROCE_ICRC_LEN;

	while (off < end) {
		size_t n = end - off < sizeof(chunk) ? end - off : sizeof(chunk);
		if (netbuf_copy_out(nb, off, chunk, n))
			return -EINVAL;
		crc = roce_icrc_update(crc, chunk, n);
		off += n;
	}
	if (netbuf_copy_out(nb, end, chunk, ROCE_ICRC_LEN))
		return -EINVAL;
	*stored = roce_icrc_get(chunk);
	*computed = crc;
	return 0;
}

static void roce_net_gsi_rx(struct roce_net *rn, const struct udp_meta *m, const struct roce_pkt *p,
			    const struct netbuf *nb)
{
	uint8_t mad_buf[ROCE_MAD_LEN];
	struct roce_mad mad;

	rn->st.gsi_rx++;
	if (!(p->flags & ROCE_F_UD) || p->qkey != ROCE_GSI_QKEY) {
		rn->st.rx_bad_qkey++;
		return;
	}
	if (p->payload_len != ROCE_MAD_LEN || netbuf_copy_out(nb, p->hdr_len, mad_buf, ROCE_MAD_LEN) ||
	    roce_mad_parse(mad_buf, ROCE_MAD_LEN, &mad) != ROCE_MAD_OK) {
		rn->st.gsi_bad_mad++;
		return;
	}
	if (mad.mgmt_class != MAD_CLASS_CM) {
		rn->st.gsi_bad_mad++;
		return;
	}
	if (mad.attr_id == CM_ATTR_REQ)
		rn->st.cm_req++;
	else
		rn->st.cm_other++;
	roce_cm_rx(rn, m->src_addr, mad_buf, &mad);
}

/* Send up to budget of the packets qp's responder owes its peer. Returns how many went out. */
static unsigned roce_net_resp_flush(struct roce_net *rn, struct roce_qp *qp, unsigned budget)
{
	struct roce_tx tx;
	unsigned n = 0;
	uint32_t peer;

	if (roce_gid_to_ipv4(&qp->attr.ah_attr.dgid, &peer))
		return 0;
	while (n < budget && roce_resp_tx_next(qp, &tx)) {
		if (roce_net_tx(rn, peer, &tx))
			break;  /* the NIC is full: offered again on the next pass */
		roce_resp_tx_done(qp, &tx);
		rn->st.resp_tx++;
		n++;
	}
	return n;
}

/* Send up to budget of qp's request packets. Returns how many went out. */
static unsigned roce_net_req_flush(struct roce_net *rn, struct roce_qp *qp, uint64_t now, unsigned budget)
{
	struct roce_tx tx;
	unsigned n = 0;
	uint32_t peer;

	if (roce_gid_to_ipv4(&qp->attr.ah_attr.dgid, &peer))
		return 0;
	while (n < budget && roce_req_tx_next(qp, now, &tx)) {
		if (roce_net_tx(rn, peer, &tx))
			break;  /* the NIC is full: offered again on the next pass */
		roce_req_tx_done(qp, now, &tx);
		rn->st.req_tx++;
		n++;
	}
	return n;
}

/* An RC packet: only from the QP's peer (its path's address). A request goes to the
 * responder, a response (ACK, NAK, READ response, atomic ACK) to the completer; then what
 * the QP owes its peer goes out (a bounded part at once, the rest from the poller). */
static void roce_net_rc_rx(struct roce_net *rn, struct roce_qp *qp, const struct udp_meta *m,
			   const struct roce_pkt *p, struct netbuf *nb)
{
	uint64_t now = clock_now_ns();
	uint32_t peer;

	if (roce_gid_to_ipv4(&qp->attr.ah_attr.dgid, &peer) || peer != m->src_addr) {
		rn->st.rx_bad_src++;
		return;
	}
	if (p->flags & ROCE_F_REQUEST) {
		roce_resp_rx(qp, p, nb);
		roce_net_resp_flush(rn, qp, ROCE_NET_RX_TX_BUDGET);
		return;
	}
	roce_comp_rx(qp, p, nb, now);
	roce_net_req_flush(rn, qp, now, ROCE_NET_RX_TX_BUDGET);
}

int roce_net_poll(struct roce_net *rn, unsigned budget)
{
	struct roce_dev *dev = rn->dev;
	uint64_t now = clock_now_ns();
	unsigned done = 0, start = rn->poll_next;

	if (!dev)
		return 0;
	done += (unsigned)roce_cm_poll(rn, now);
	/* Every RC QP's timers each pass, whatever the budget: a retransmission or an RNR
	 * wait is never late because other QPs had packets to send. */
	for (unsigned i = 0; i < ROCE_MAX_QP; i++) {
		struct roce_qp *qp = dev->qps[i];
		if (qp && qp->type == ROCE_QPT_RC && roce_req_tick(qp, now))
			done++;
	}
	/* The sends from where the last pass's budget ran out: a QP that always has packets
	 * (a large READ response, a long send queue) does not keep the QPs after it waiting. */
	for (unsigned k = 0; k < ROCE_MAX_QP && done < budget; k++) {
		unsigned i = (start + k) % ROCE_MAX_QP;
		struct roce_qp *qp = dev->qps[i];
		if (!qp || qp->type != ROCE_QPT_RC)
			continue;
		done += roce_net_resp_flush(rn, qp, budget - done);
		if (done < budget)
			done += roce_net_req_flush(rn, qp, now, budget - done);
		if (done >= budget)
			rn->poll_next = (i + 1) % ROCE_MAX_QP;
	}
	return (int)done;
}

void roce_net_rx(struct roce_net *rn, const struct udp_meta *m, struct netbuf *nb)
{
	size_t len = netbuf_host_len(nb) + netbuf_frag_len(nb);
	uint8_t hdr[ROCE_HDR_MAX];
	size_t hdr_n = len < sizeof(hdr) ? len : sizeof(hdr);
	struct ipv4_hdr ip;
	struct udp_hdr uh;
	struct roce_pkt p;
	enum roce_parse_err pe;
	uint32_t computed, stored;
	struct roce_qp *qp;

	rn->st.rx_pkts++;
	rn->st.rx_bytes += len;
	if (roce_net_l3l4(nb, m, &ip, &uh)) {
		rn->st.rx_no_ip_hdr++;
		return;
	}
	if (netbuf_copy_out(nb, 0, hdr, hdr_n)) {
		rn->st.rx_parse[ROCE_PARSE_SHORT]++;
		return;
	}
	pe = roce_parse(hdr, hdr_n, len, &p);
	rn->st.rx_parse[pe]++;
	if (pe != ROCE_PARSE_OK)
		return;
	if (roce_net_icrc(nb, &ip, &uh, hdr, len, &computed, &stored) || computed != stored) {
		rn->st.rx_icrc_bad++;
		return;
	}
	if (p.pkey != ROCE_PKEY_DEFAULT) {
		rn->st.rx_bad_pkey++;
		return;
	}
	if (!(qp = roce_qp_lookup(rn->dev, p.destqp))) {
		rn->st.rx_no_qp++;
		return;
	}
	if (qp == rn->gsi) {
		roce_net_gsi_rx(rn, m, &p, nb);
		return;
	}
	if (qp->type == ROCE_QPT_RC && !(p.flags & ROCE_F_UD)) {
		roce_net_rc_rx(rn, qp, m, &p, nb);
		return;
	}
	rn->st.rx_no_transport++;
}

int roce_net_send_ud(struct roce_net *rn, uint32_t dst_ip, struct roce_pkt *p, const void *payload, size_t len)
{
	int rc;
	p->psn = rn->gsi_psn;
	if ((rc = roce_net_xmit(rn, dst_ip, p, payload, len)) == 0)
		rn->gsi_psn = (rn->gsi_psn + 1) & ROCE_PSN_MASK;
	return rc;
}

/* May the NIC gather this payload from where it is? One non-empty piece of device memory
 * within what the NIC gathers from device memory in one frame. */
static bool roce_net_zc_ok(const struct roce_tx_seg *seg, unsigned nseg, size_t len)
{
	const struct netdev *nd = netdev_first();
	unsigned n = 0;
	const struct roce_tx_seg *d = NULL;

	for (unsigned i = 0; i < nseg; i++)
		if (seg[i].len) {
			n++;
			d = &seg[i];
		}
	return n == 1 && d->mem.cls == MEM_CLASS_DEVICE && nd && (nd->features & NETDEV_F_TX_GATHER_DEV) &&
	       (!nd->tx_dev_bytes || len <= nd->tx_dev_bytes);
}

/* A piece the NIC gathers where it is: when its MR has a transmit owner, the piece holds the
 * memory until the NIC is done with the frame (the fragment's owner and token). */
static void roce_net_tx_hold(struct roce_net *rn, const struct roce_tx_seg *seg, struct netdev_frag *f)
{
	if (!seg->txo)
		return;
	seg->txo->hold(seg->txo, seg->tx_token);
	f->owner = seg->txo->owner;
	f->token = seg->tx_token;
	rn->st.tx_held++;
}

/* The ICRC of a packet whose headers (hlen bytes) are at pkt and whose payload is the
 * pieces seg (read by the CPU in bounded chunks, counted by memory class) followed by pad
 * zero bytes; ip and uh are the IPv4 and UDP headers the stack will write. */
static uint32_t roce_net_tx_icrc(const struct ipv4_hdr *ip, const struct udp_hdr *uh, const uint8_t *pkt,
				 size_t hlen, const struct roce_tx_seg *seg, unsigned nseg, unsigned pad)
{
	static const uint8_t zero[4];
	uint8_t chunk[ROCE_ICRC_CHUNK];
	uint32_t crc = roce_icrc_update(roce_icrc_start(ip, uh, pkt), pkt + sizeof(struct roce_bth),
					hlen - sizeof(struct roce_bth));

	for (unsigned i = 0; i < nseg; i++) {
		for (uint32_t off = 0; off < seg[i].len;) {
			uint32_t n = seg[i].len - off < sizeof(chunk) ? seg[i].len - off : (uint32_t)sizeof(chunk);
			memcpy(chunk, (const void *)(uintptr_t)(seg[i].mem.bus + off), n);
			crc = roce_icrc_update(crc, chunk, n);
			off += n;
		}
		dma_account_cpu(seg[i].mem.cls, seg[i].len);
	}
	return roce_icrc_update(crc, zero, pad);
}

/* The IPv4 and UDP headers the stack will write for total bytes of RoCE packet to dst_ip
 * (the ICRC covers them, variant fields masked). */
static void roce_net_l3l4_out(struct roce_net *rn, uint32_t dst_ip, size_t total, struct ipv4_hdr *ip,
			      struct udp_hdr *uh)
{
	struct net_config cfg;

	net_config_get(&cfg);
	memset(ip, 0, sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->total_length = be16_make((uint16_t)(sizeof(*ip) + sizeof(*uh) + total));
	ip->identification = be16_make(ipv4_next_ident());
	ip->flags_fragoff = be16_make(IPV4_FLAG_DF);
	ip->protocol = IP_PROTO_UDP;
	ip->src = be32_make(cfg.addr);
	ip->dst = be32_make(dst_ip);
	uh->src_port = be16_make(udp_local_port(rn->sock));
	uh->dst_port = be16_make(ROCE_UDP_PORT);
	uh->length = be16_make((uint16_t)(sizeof(*uh) + total));
	uh->checksum = be16_make(0);
}

/* Send a packet whose headers are pkt[0, hlen) and whose payload (len bytes) is the pieces
 * seg, without copying them: the NIC gathers them where they are (a piece in device memory
 * the NIC reaches, or a packet larger than the stack's copied datagrams). The pad and ICRC
 * go right behind a single piece when it has that much room (a strided MR's gap): the NIC
 * then gathers payload and trailer as one piece, and when that piece would be longer than
 * the NIC gathers from device memory at once, the first few payload bytes go with the
 * headers (pkt has room behind them). Else the pad and ICRC go in a trailer slot. -ENOSPC
 * when no slot is free. */
static int roce_net_emit_zc(struct roce_net *rn, uint32_t dst_ip, uint8_t *pkt, size_t hlen,
			    const struct roce_tx_seg *seg, unsigned nseg, size_t len)
{
	const struct netdev *nd = netdev_first();
	unsigned pad = roce_pad((uint32_t)len);
	size_t total = hlen + len + pad + ROCE_ICRC_LEN;
	struct netdev_frag f[ROCE_MAX_SGE + 1];
	const struct roce_tx_seg *d = NULL;
	struct ipv4_hdr ip;
	struct udp_hdr uh;
	unsigned n = 0;
	bool dev = false;
	int slot, rc;

	memset(f, 0, sizeof(f));
	for (unsigned i = 0; i < nseg && n < ROCE_MAX_SGE; i++)
		if (seg[i].len) {
			d = &seg[i];
			dev |= d->mem.cls == MEM_CLASS_DEVICE;
			f[n].addr = d->mem;
			f[n++].len = d->len;
		}
	size_t piece = len + pad + ROCE_ICRC_LEN, head = 0;
	if (nd && nd->tx_dev_bytes && piece > nd->tx_dev_bytes)
		head = piece - nd->tx_dev_bytes; /* payload bytes that go with the headers */
	if (n == 1 && d->room >= pad + ROCE_ICRC_LEN && nd && head <= ROCE_NET_TRAILER_LEN && head < len) {
		uint8_t tail[ROCE_NET_TRAILER_LEN];
		roce_net_l3l4_out(rn, dst_ip, total, &ip, &uh);
		memset(tail, 0, pad);
		roce_icrc_put(tail + pad, roce_net_tx_icrc(&ip, &uh, pkt, hlen, seg, nseg, pad));
		memcpy((void *)(uintptr_t)(d->mem.bus + d->len), tail, pad + ROCE_ICRC_LEN);
		dma_account_cpu(d->mem.cls, pad + ROCE_ICRC_LEN);
		memcpy(pkt + hlen, (const void *)(uintptr_t)d->mem.bus, head);
		dma_account_cpu(d->mem.cls, head);
		f[0].addr = dma_addr_add(d->mem, head);
		f[0].len = (uint32_t)(piece - head);
		roce_net_tx_hold(rn, d, &f[0]);
		/* consumes f: the piece's hold goes back when the NIC is done, also on failure */
		if ((rc = udp_sendto_frags(rn->sock, dst_ip, ROCE_UDP_PORT, pkt, hlen + head, f, 1)))
			return rc;
		rn->st.tx_zc_inline++;
		goto sent;
	}
	if ((slot = roce_net_trailer_get(rn)) < 0) {
		rn->st.tx_zc_no_trailer++;
		return -ENOSPC;
	}
	roce_net_l3l4_out(rn, dst_ip, total, &ip, &uh);
	memset(rn->trailer[slot], 0, pad);
	roce_icrc_put(rn->trailer[slot] + pad, roce_net_tx_icrc(&ip, &uh, pkt, hlen, seg, nseg, pad));
	for (unsigned i = 0, k = 0; i < nseg && k < n; i++)
		if (seg[i].len)
			roce_net_tx_hold(rn, &seg[i], &f[k++]);
	f[n].addr = dma_addr_host(rn->trailer[slot]);
	f[n].len = pad + ROCE_ICRC_LEN;
	f[n].provider = NETDEV_PROVIDER_HOST;
	f[n].token = (uint64_t)slot;
	f[n].owner = &rn->trailer_owner;
	/* consumes f: the trailer slot comes back through its owner, also on failure */
	if ((rc = udp_sendto_frags(rn->sock, dst_ip, ROCE_UDP_PORT, pkt, hlen, f, n + 1)))
		return rc;
sent:
	if (!dev) {
		rn->st.tx_gathered++;
		return 0;
	}
	rn->st.tx_zc++;
	rn->st.tx_zc_bytes += len;
	return 0;
}

/* Build and send one packet: headers from p, payload gathered from nseg pieces (counted as
 * CPU reads of their memory class when account), pad, ICRC. A payload in device memory the
 * NIC may gather from is not copied (roce_net_emit_zc). */
static int roce_net_emit(struct roce_net *rn, uint32_t dst_ip, struct roce_pkt *p, const struct roce_tx_seg *seg,
			 unsigned nseg, bool account)
{
	static const uint8_t zero[4];
	uint8_t pkt[ROCE_HDR_MAX + ROCE_UD_MAX + 8];
	size_t len = 0;
	struct ipv4_hdr ip;
	struct udp_hdr uh;
	size_t n, total;
	bool big;
	int hlen, rc;

	for (unsigned i = 0; i < nseg; i++)
		len += seg[i].len;
	if (len > ROCE_UD_MAX) {
		rc = -EMSGSIZE;
		goto fail;
	}
	p->payload_len = (uint32_t)len;
	if ((hlen = roce_build(p, pkt, ROCE_HDR_MAX)) < 0) {
		rc = hlen;
		goto fail;
	}
	big = (size_t)hlen + len + roce_pad((uint32_t)len) + ROCE_ICRC_LEN > NETBUF_HOST_SIZE - NETBUF_HEADROOM;
	if (account && (big || roce_net_zc_ok(seg, nseg, len))) {
		rc = roce_net_emit_zc(rn, dst_ip, pkt, (size_t)hlen, seg, nseg, len);
		if (rc == 0)
			goto sent;
		if (rc == -ENOSPC && big)
			rc = -ENOBUFS; /* too large to copy: offered again once trailer slots came back */
		if (rc != -ENOSPC)
			goto fail; /* the NIC refused the frame: offered again later */
	}
	n = (size_t)hlen;
	for (unsigned i = 0; i < nseg; i++) {
		if (!seg[i].len)
			continue;
		memcpy(pkt + n, (const void *)(uintptr_t)seg[i].mem.bus, seg[i].len);
		if (account)
			dma_account_cpu(seg[i].mem.cls, seg[i].len);
		n += seg[i].len;
	}
	memcpy(pkt + n, zero, roce_pad((uint32_t)len));
	n += roce_pad((uint32_t)len);
	total = n + ROCE_ICRC_LEN;
	roce_net_l3l4_out(rn, dst_ip, total, &ip, &uh);
	roce_icrc_put(pkt + n, roce_icrc_update(roce_icrc_start(&ip, &uh, pkt), pkt + sizeof(struct roce_bth),
						  n - sizeof(struct roce_bth)));
	if ((rc = udp_sendto(rn->sock, dst_ip, ROCE_UDP_PORT, pkt, total)))
		goto fail;
sent:
	rn->st.tx_pkts++;
	rn->st.tx_bytes += (size_t)hlen + len + roce_pad((uint32_t)len) + ROCE_ICRC_LEN;
	return 0;
fail:
	rn->st.tx_errors++;
	return rc;
}

int roce_net_xmit(struct roce_net *rn, uint32_t dst_ip, struct roce_pkt *p, const void *payload, size_t len)
{
	struct roce_tx_seg seg = { .mem = dma_addr_host(payload), .len = (uint32_t)len };
	if (len > ROCE_UD_MAX) {
		rn->st.tx_errors++;
		return -EMSGSIZE;
	}
	return roce_net_emit(rn, dst_ip, p, &seg, len ? 1 : 0, false);
}

int roce_net_tx(struct roce_net *rn, uint32_t dst_ip, struct roce_tx *tx)
{
	return roce_net_emit(rn, dst_ip, &tx->pkt, tx->seg, tx->nseg, true);
}
