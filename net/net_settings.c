/*
 * net_settings.c - the interface's settings, applied when the stack starts
 * (INIT_LEVEL_NET; core stores the file's values before any initcall runs):
 *   net.address = dhcp | A.B.C.D            DHCP (net/dhcp.h, the default) or a static address
 *   net.netmask, net.gateway                static IPv4 configuration (also DHCP's fallback)
 *   net.fallback_address = 10.10.0.10       the address used when DHCP got no lease within
 *   net.dhcp_timeout = 15                   this many seconds (0: keep discovering, no fallback)
 *   net.mtu = 1500..9000                    the interface MTU (jumbo frames)
 *   net.tcp_ack_every = 2..64               in-order full-sized segments per ACK at most; a receive
 *                                           batch's segments share one ACK (tcp_rx_batch_end)
 *   net.tcp_ack_hold_us = 0..40000          how long that ACK may wait for an answer its user
 *                                           promised (tcp_ack_hold; 0: never waits)
 *   net.services = on | off                 discard/echo/chargen on TCP ports 9/7/19 (default off:
 *                                           test services, anyone may fill their send buffers)
 * Settings net_configure() refuses are reported and 10.10.0.10/24 used.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../lib/clock.h"
#include "../lib/config_key.h"
#include "../lib/ipv4_text.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "dhcp.h"
#include "net.h"
#include "tcp/tcp.h"

LOG_MODULE_USE(net);

static struct net_config net_settings = { NET_DEFAULT_ADDR, NET_DEFAULT_NETMASK, NET_DEFAULT_GATEWAY, NETDEV_MTU_MIN };
static bool net_services;
static bool net_use_dhcp = true;
static uint32_t net_fallback_addr = NET_DEFAULT_ADDR;
static unsigned net_dhcp_timeout_s = 15;
static struct dhcp_client net_dhcp;  /* the interface's client, driven by the poll loop's timers */

static int parse_address(const struct config_key *k, const char *name, const char *text, char *why, size_t whylen)
{
	uint32_t a;
	(void)k;
	if (!strcmp(text, "dhcp")) {
		net_use_dhcp = true;
		return 0;
	}
	if (ipv4_parse(text, &a)) {
		snprintf(why, whylen, "%s: '%s' is neither dhcp nor a dotted-quad IPv4 address", name, text);
		return -EINVAL;
	}
	net_use_dhcp = false;
	net_settings.addr = a;
	return 0;
}
CONFIG_CUSTOM(net_address, "net.address", parse_address, "dhcp or A.B.C.D", "dhcp", NULL,
	      "the interface's IPv4 address, or dhcp (RFC 2131 client; net.fallback_address after net.dhcp_timeout)");
CONFIG_IPV4(net_fallback_address, "net.fallback_address", &net_fallback_addr, "10.10.0.10", NULL,
	    "the static address DHCP falls back to (with net.netmask, net.gateway) when no lease came");
CONFIG_UINT(net_dhcp_timeout, "net.dhcp_timeout", &net_dhcp_timeout_s, 0, 3600, "15", NULL,
	    "seconds without a lease before the fallback address (0: never fall back)");
CONFIG_IPV4(net_netmask, "net.netmask", &net_settings.netmask, "255.255.255.0", NULL, "its netmask");
CONFIG_IPV4(net_gateway, "net.gateway", &net_settings.gateway, "", NULL, "the default route (empty: none)");
CONFIG_UINT(net_mtu, "net.mtu", &net_settings.mtu, NETDEV_MTU_MIN, NETDEV_MTU_MAX, "1500", NULL,
	    "interface MTU (jumbo frames above 1500)");
static unsigned net_tcp_ack_every = TCP_ACK_EVERY_DEFAULT;
static int ack_every_apply(void)
{
	tcp_set_ack_every(net_tcp_ack_every);
	return 0;
}
CONFIG_UINT(net_tcp_ack_every, "net.tcp_ack_every", &net_tcp_ack_every, 2, 64, "32", ack_every_apply,
	    "ACK in-order data at least every this many full-sized segments; those of one receive batch share "
	    "one ACK at its end (2: every second segment, as RFC 5681 4.2)");
static unsigned net_tcp_ack_hold_us = TCP_ACK_HOLD_US_DEFAULT;
static int ack_hold_apply(void)
{
	tcp_set_ack_hold_us(net_tcp_ack_hold_us);
	return 0;
}
CONFIG_UINT(net_tcp_ack_hold_us, "net.tcp_ack_hold_us", &net_tcp_ack_hold_us, 0, TCP_ACK_HOLD_US_MAX, "200",
	    ack_hold_apply,
	    "microseconds the ACK a receive batch owes may wait for an answer the application promised "
	    "(NVMe/TCP: a command's response), which then carries it (0: never waits)");
CONFIG_BOOL(net_services, "net.services", &net_services, "off", NULL,
	    "TCP discard/echo/chargen on ports 9/7/19 (tests, diagnosis)");

static int net_settings_apply(void)
{
	struct net_config def;
	int rc;

	if ((rc = net_init())) {
		log_err("init failed (%d)", rc);
		return rc;
	}
	if (net_use_dhcp)
		net_settings.addr = net_fallback_addr;
	if ((rc = net_configure(&net_settings))) {
		log_err("config: network settings rejected (%d): using 10.10.0.10/24", rc);
		net_config_default(&def);
		net_configure(&def);
		net_config_get(&net_settings);
	}
	if (net_use_dhcp) {
		struct dhcp_params p;
		char a[16];
		memset(&p, 0, sizeof(p));
		p.fallback = net_settings;
		p.fallback.mtu = 0;  /* already applied */
		p.mtu_fixed = config_key_net_mtu.state->origin != CONFIG_ORIGIN_DEFAULT;
		p.timeout_ns = (uint64_t)net_dhcp_timeout_s * NSEC_PER_SEC;
		if ((rc = dhcp_start(&net_dhcp, &p)))
			log_err("DHCP not started (%d): static address kept", rc);
		else
			log_info("DHCP discovering (static %s after %u s without a lease)",
				 net_format_ipv4(net_settings.addr, a), net_dhcp_timeout_s);
	}
	if (net_services && (rc = tcp_services_start()))
		log_err("discard/echo/chargen services failed to start (%d)", rc);
	return 0;
}
INITCALL(net_settings, INIT_LEVEL_NET, net_settings_apply);
