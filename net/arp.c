/*
 * arp.c - ARP (RFC 826) for IPv4 over Ethernet: a bounded cache with expiry and a
 * bounded queue of frames waiting for a resolution.
 *
 * Entries are INCOMPLETE (request sent, frames queued, retried every second up to
 * ARP_RETRIES times, then the queue is dropped and counted) or REACHABLE (for
 * ARP_REACHABLE_NS, then forgotten; the next frame resolves again). A request or reply
 * naming us as target refreshes/creates the sender's entry (RFC 826 merge). When the
 * table is full the oldest entry that has no frames queued is replaced.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../lib/clock.h"
#include "../lib/log.h"
#include "../lib/timer.h"
#include "net_internal.h"

LOG_MODULE_USE(net);

#define ARP_ENTRIES 32
#define ARP_QUEUE_MAX 8                    /* frames waiting per entry */
#define ARP_RETRIES 3
#define ARP_RETRY_NS (1 * NSEC_PER_SEC)
#define ARP_REACHABLE_NS (60 * NSEC_PER_SEC)

enum arp_state { ARP_FREE = 0, ARP_INCOMPLETE, ARP_REACHABLE };

struct arp_entry {
	enum arp_state state;
	uint32_t ip;
	uint8_t mac[ETH_ALEN];
	unsigned tries;
	uint64_t updated_ns;
	struct timer timer;             /* retry (INCOMPLETE) or expiry (REACHABLE) */
	struct list_node queue;         /* netbufs, data at the IPv4 header */
	unsigned queued;
};

static struct arp_entry arp_table[ARP_ENTRIES];
static struct arp_entry *arp_last;         /* the entry arp_output used last: tried first */
static const uint8_t mac_zero[ETH_ALEN];
static const uint8_t mac_bcast[ETH_ALEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void arp_flush_queue(struct arp_entry *e)
{
	struct list_node *it, *tmp;
	list_for_each_safe(&e->queue, it, tmp) {
		list_del(it);
		netbuf_free(container_of(it, struct netbuf, node));
	}
	e->queued = 0;
}

static void arp_entry_clear(struct arp_entry *e)
{
	if (e->state == ARP_REACHABLE)
		net_route_changed(); /* routes through it are stale (expired, replaced) */
	timer_cancel(&timer_default_queue, &e->timer);
	arp_flush_queue(e);
	e->state = ARP_FREE;
	e->ip = 0;
}

static int arp_send(uint16_t oper, uint32_t tpa, const uint8_t tha[ETH_ALEN], const uint8_t dst[ETH_ALEN])
{
	struct netbuf *nb = netbuf_alloc(NETBUF_HEADROOM);
	struct arp_pkt *p;
	int rc;

	if (!nb || !net_if0.dev) {
		net_counters.ip_tx_nobuf++;
		netbuf_free(nb);
		return -ENOBUFS;
	}
	p = netbuf_put(nb, sizeof(*p));
	p->htype = be16_make(ARP_HTYPE_ETHER);
	p->ptype = be16_make(ETH_TYPE_IPV4);
	p->hlen = ETH_ALEN;
	p->plen = 4;
	p->oper = be16_make(oper);
	memcpy(p->sha, net_if0.dev->mac, ETH_ALEN);
	p->spa = be32_make(net_if0.addr);
	memcpy(p->tha, tha, ETH_ALEN);
	p->tpa = be32_make(tpa);
	/* Pad to the 60-byte Ethernet minimum. */
	memset(netbuf_put(nb, 60 - ETH_HLEN - sizeof(*p)), 0, 60 - ETH_HLEN - sizeof(*p));
	if ((rc = eth_output(nb, dst, ETH_TYPE_ARP))) {
		netbuf_free(nb);
		return rc;
	}
	if (oper == ARP_OP_REQUEST)
		net_counters.arp_requests_tx++;
	else
		net_counters.arp_replies_tx++;
	return 0;
}

static void arp_timer_fn(struct timer *t, void *arg)
{
	struct arp_entry *e = arg;
	char a[16];
	(void)t;

	if (e->state == ARP_REACHABLE) {
		net_counters.arp_expired++;
		arp_entry_clear(e);
		return;
	}
	if (e->state != ARP_INCOMPLETE)
		return;
	if (e->tries >= ARP_RETRIES) {
		log_debug("arp: %s did not answer", net_format_ipv4(e->ip, a));
		net_counters.arp_resolve_failed++;
		arp_entry_clear(e);
		return;
	}
	e->tries++;
	arp_send(ARP_OP_REQUEST, e->ip, mac_zero, mac_bcast);
	timer_arm(&timer_default_queue, &e->timer, clock_now_ns() + ARP_RETRY_NS);
}

static struct arp_entry *arp_find(uint32_t ip)
{
	for (unsigned i = 0; i < ARP_ENTRIES; i++)
		if (arp_table[i].state != ARP_FREE && arp_table[i].ip == ip)
			return &arp_table[i];
	return NULL;
}

/* A free entry, or the oldest one without queued frames; NULL when none. */
static struct arp_entry *arp_new(uint32_t ip)
{
	struct arp_entry *e = NULL;
	for (unsigned i = 0; i < ARP_ENTRIES; i++) {
		struct arp_entry *c = &arp_table[i];
		if (c->state == ARP_FREE) {
			e = c;
			break;
		}
		if (c->queued == 0 && (!e || c->updated_ns < e->updated_ns))
			e = c;
	}
	if (!e) {
		net_counters.arp_table_full++;
		return NULL;
	}
	arp_entry_clear(e);
	e->ip = ip;
	e->tries = 0;
	e->updated_ns = clock_now_ns();
	return e;
}

static void arp_set_reachable(struct arp_entry *e, const uint8_t mac[ETH_ALEN])
{
	struct list_node *it, *tmp;

	memcpy(e->mac, mac, ETH_ALEN);
	e->state = ARP_REACHABLE;
	net_route_changed(); /* resolved, refreshed or moved: routes rebuild from the table */
	e->updated_ns = clock_now_ns();
	timer_arm(&timer_default_queue, &e->timer, e->updated_ns + ARP_REACHABLE_NS);
	list_for_each_safe(&e->queue, it, tmp) {
		struct netbuf *nb = container_of(it, struct netbuf, node);
		list_del(it);
		e->queued--;
		if (eth_output(nb, e->mac, ETH_TYPE_IPV4))
			netbuf_free(nb);
	}
}

void arp_rx(struct netbuf *nb)
{
	struct arp_pkt p;
	struct arp_entry *e;
	uint32_t spa, tpa;
	uint16_t oper;

	net_counters.arp_rx++;
	if (netbuf_copy_out(nb, 0, &p, sizeof(p)) || be16_get(p.htype) != ARP_HTYPE_ETHER ||
	    be16_get(p.ptype) != ETH_TYPE_IPV4 || p.hlen != ETH_ALEN || p.plen != 4) {
		net_counters.arp_bad++;
		goto out;
	}
	oper = be16_get(p.oper);
	spa = be32_get(p.spa);
	tpa = be32_get(p.tpa);
	if (oper != ARP_OP_REQUEST && oper != ARP_OP_REPLY) {
		net_counters.arp_bad++;
		goto out;
	}
	if (oper == ARP_OP_REQUEST)
		net_counters.arp_requests_rx++;
	else
		net_counters.arp_replies_rx++;
	/* Never learn broadcast/multicast hardware or nonsense protocol addresses. */
	if ((p.sha[0] & 1) || spa == 0 || net_addr_is_broadcast(spa) || spa == net_if0.addr)
		goto out;
	e = arp_find(spa);
	if (e)
		arp_set_reachable(e, p.sha);
	if (tpa != net_if0.addr)
		goto out;
	if (!e && (e = arp_new(spa)))
		arp_set_reachable(e, p.sha);
	if (oper == ARP_OP_REQUEST)
		arp_send(ARP_OP_REPLY, spa, p.sha, p.sha);
out:
	netbuf_free(nb);
}

int arp_output(struct netbuf *nb, uint32_t next_hop)
{
	struct arp_entry *e;
	int rc;

	if (net_addr_is_broadcast(next_hop)) {
		if ((rc = eth_output(nb, mac_bcast, ETH_TYPE_IPV4)))
			goto drop;
		return 0;
	}
	/* A connection's frames come in runs to one next hop: the last entry first (its ip
	 * and state say whether it still is that hop's, resolved). */
	e = arp_last && arp_last->ip == next_hop && arp_last->state == ARP_REACHABLE ? arp_last : arp_find(next_hop);
	if (e && e->state == ARP_REACHABLE) {
		arp_last = e;
		if ((rc = eth_output(nb, e->mac, ETH_TYPE_IPV4)))
			goto drop;
		return 0;
	}
	if (!e) {
		if (!(e = arp_new(next_hop))) {
			rc = -ENOBUFS;
			goto drop;
		}
		e->state = ARP_INCOMPLETE;
		e->tries = 1;
		arp_send(ARP_OP_REQUEST, next_hop, mac_zero, mac_bcast);
		timer_arm(&timer_default_queue, &e->timer, clock_now_ns() + ARP_RETRY_NS);
	}
	if (e->queued >= ARP_QUEUE_MAX) {
		net_counters.arp_queue_full++;
		rc = -ENOBUFS;
		goto drop;
	}
	list_add_tail(&e->queue, &nb->node);
	e->queued++;
	net_counters.arp_queued++;
	return 0;

drop:
	netbuf_free(nb);
	return rc;
}

bool arp_lookup(uint32_t ip, uint8_t mac[ETH_ALEN])
{
	struct arp_entry *e = arp_find(ip);
	if (!e || e->state != ARP_REACHABLE)
		return false;
	memcpy(mac, e->mac, ETH_ALEN);
	return true;
}

int arp_init(void)
{
	arp_last = NULL;
	for (unsigned i = 0; i < ARP_ENTRIES; i++) {
		memset(&arp_table[i], 0, sizeof(arp_table[i]));
		list_init(&arp_table[i].queue);
		timer_init(&arp_table[i].timer, "arp", arp_timer_fn, &arp_table[i]);
	}
	return 0;
}

void arp_shutdown(void)
{
	for (unsigned i = 0; i < ARP_ENTRIES; i++)
		arp_entry_clear(&arp_table[i]);
}

void arp_show(void)
{
	uint64_t now = clock_now_ns();
	char a[16];
	printf("arp table (%u entries max):\n", ARP_ENTRIES);
	for (unsigned i = 0; i < ARP_ENTRIES; i++) {
		struct arp_entry *e = &arp_table[i];
		if (e->state == ARP_FREE)
			continue;
		if (e->state == ARP_REACHABLE)
			printf("  %-15s %02x:%02x:%02x:%02x:%02x:%02x  reachable, age %llu s\n", net_format_ipv4(e->ip, a),
			       e->mac[0], e->mac[1], e->mac[2], e->mac[3], e->mac[4], e->mac[5],
			       (unsigned long long)((now - e->updated_ns) / NSEC_PER_SEC));
		else
			printf("  %-15s (incomplete)       tries %u, %u frames queued\n", net_format_ipv4(e->ip, a),
			       e->tries, e->queued);
	}
}
