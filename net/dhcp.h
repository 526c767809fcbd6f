/*
 * dhcp.h - DHCP client (RFC 2131, options of RFC 2132) for the stack's one interface.
 *
 * An explicit state machine (RFC 2131 4.4, figure 5) over the UDP API, driven by timers
 * of lib/timer.h's default queue (run by the poll loop):
 *
 *   INIT --DISCOVER--> SELECTING --OFFER/REQUEST--> REQUESTING --ACK--> BOUND
 *   BOUND --T1--> RENEWING (REQUEST unicast to the server) --T2--> REBINDING (broadcast)
 *   RENEWING/REBINDING --ACK--> BOUND; --NAK or lease expiry--> INIT (address dropped)
 *   REQUESTING --NAK or no answer--> INIT
 *   INIT/SELECTING/REQUESTING for longer than the fallback timeout, never bound --> FALLBACK
 *   (the static settings applied; DHCP stays off until the next boot)
 *
 * Until it is bound the interface has no address (0.0.0.0): requests go from 0.0.0.0 to
 * 255.255.255.255 with the BROADCAST flag set so that servers answer by broadcast too
 * (RFC 2131 4.1). Retransmissions wait 4 s doubling to 64 s, each randomised by
 * +-1 s (RFC 2131 4.1); in RENEWING/REBINDING half the time left to T2/expiry, at least
 * 60 s. Replies are accepted only with our xid and our MAC in chaddr, options are
 * parsed into locals with every length checked (dhcp_parse, fuzzed).
 * The lease sets address, subnet mask, router (when it is on the subnet) and, unless
 * the settings fix net.mtu, the interface MTU (option 26) within the NIC's range; the
 * DNS servers are kept and shown (the appliance has no resolver yet).
 */
#ifndef NET_DHCP_H
#define NET_DHCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../lib/timer.h"
#include "net.h"

#define DHCP_SERVER_PORT 67
#define DHCP_CLIENT_PORT 68
#define DHCP_FIXED_LEN 236          /* op .. file, before the magic cookie */
#define DHCP_MAGIC 0x63825363u      /* 99.130.83.99 */
#define DHCP_MSG_MAX 1472           /* what we accept and announce (option 57: + IP/UDP = 1500) */
#define DHCP_MAX_DNS 3
#define DHCP_LEASE_INFINITE 0xffffffffu

/* BOOTP/DHCP op and option 53 message types (RFC 2132 9.6) */
enum { DHCP_BOOTREQUEST = 1, DHCP_BOOTREPLY = 2 };
enum dhcp_msg_type {
	DHCPDISCOVER = 1, DHCPOFFER = 2, DHCPREQUEST = 3, DHCPDECLINE = 4,
	DHCPACK = 5, DHCPNAK = 6, DHCPRELEASE = 7, DHCPINFORM = 8,
};

/* A received message, parsed into host-order locals. has_* say which options came. */
struct dhcp_msg {
	uint8_t op, htype, hlen;
	uint32_t xid;
	uint16_t secs, flags;
	uint32_t ciaddr, yiaddr, siaddr, giaddr;
	uint8_t chaddr[16];
	uint8_t msg_type;                  /* option 53, 0 when absent */
	bool has_subnet_mask, has_router, has_lease, has_t1, has_t2, has_server_id, has_mtu;
	uint32_t subnet_mask;              /* option 1 */
	uint32_t router;                   /* option 3, the first one */
	unsigned ndns;
	uint32_t dns[DHCP_MAX_DNS];        /* option 6, the first three */
	uint16_t mtu;                      /* option 26 */
	uint32_t lease_s, t1_s, t2_s;      /* options 51, 58, 59 */
	uint32_t server_id;                /* option 54 */
};

/*
 * Parse a BOOTP/DHCP message (the UDP payload, len bytes): fixed header, magic cookie,
 * options (and the sname/file fields when option 52 overloads them). 0, or -EINVAL for
 * a short message, a bad cookie, an option running past its field, or a known option
 * with a wrong length. A repeated option keeps its first value.
 */
int dhcp_parse(const void *buf, size_t len, struct dhcp_msg *out);

enum dhcp_state {
	DHCP_OFF = 0,
	DHCP_INIT,        /* about to DISCOVER */
	DHCP_SELECTING,   /* DISCOVER sent, waiting for an OFFER */
	DHCP_REQUESTING,  /* REQUEST for an offer sent (broadcast), waiting for ACK/NAK */
	DHCP_BOUND,       /* lease in use */
	DHCP_RENEWING,    /* past T1: REQUEST unicast to the leasing server */
	DHCP_REBINDING,   /* past T2: REQUEST broadcast to any server */
	DHCP_FALLBACK,    /* no lease within the timeout: the static settings are in use */
	DHCP_STATE_COUNT
};

/* What the client needs from the settings. */
struct dhcp_params {
	struct net_config fallback;   /* applied when no lease came within timeout_ns */
	uint64_t timeout_ns;          /* 0: never fall back */
	bool mtu_fixed;               /* net.mtu is set: option 26 is ignored */
};

struct dhcp_lease {
	uint32_t addr, netmask, router, server_id;
	unsigned ndns;
	uint32_t dns[DHCP_MAX_DNS];
	uint16_t mtu;                 /* 0: none offered or not applied */
	uint32_t lease_s, t1_s, t2_s; /* lease_s == DHCP_LEASE_INFINITE: no timers */
	uint64_t start_ns;            /* when the REQUEST that got the ACK was sent (RFC 2131 4.4.1) */
};

struct dhcp_stats {
	uint64_t discovers, requests, retransmits, offers, acks, naks;
	uint64_t rx_bad, rx_ignored;  /* malformed; not ours (xid, chaddr, op, server) or unexpected */
	uint64_t leases, renewals, rebinds, expiries, fallbacks, tx_errors;
};

struct dhcp_client {
	enum dhcp_state state;
	struct dhcp_params params;
	struct udp_sock *sock;
	uint8_t mac[6];
	uint32_t xid;
	uint64_t rng;                 /* xorshift state: xid and jitter */
	uint64_t start_ns;            /* start of this acquisition (secs field, fallback) */
	uint64_t req_ns;              /* when the current REQUEST was first sent */
	unsigned tries;               /* transmissions of the current message */
	bool ever_bound;
	struct dhcp_msg offer;        /* the offer being requested */
	struct dhcp_lease lease;      /* valid in BOUND, RENEWING, REBINDING */
	struct timer tx_timer;        /* retransmission (and the INIT delay) */
	struct timer lease_timer;     /* T1, T2, expiry */
	struct timer fallback_timer;
	struct dhcp_stats st;
};

/*
 * Start the client on the stack's interface: bind UDP port 68, drop the interface's
 * address and DISCOVER. The client becomes the one `ip` shows. 0, -ENETDOWN without a
 * device, or the bind error.
 */
int dhcp_start(struct dhcp_client *c, const struct dhcp_params *p);

/* Stop: cancel the timers and unbind (the address in use stays). */
void dhcp_stop(struct dhcp_client *c);

/* The state's name ("BOUND"). */
const char *dhcp_state_name(enum dhcp_state s);

/* Print the active client's state and lease (the `ip` command); nothing without one. */
void dhcp_show(void);

#endif
