/*
 * net_config.c - the settings file's network keys, applied to net/ at INIT_LEVEL_NET
 * (net/ does not include core/: core reads the keys and calls net_configure):
 *   net.address = 10.10.0.10     net.netmask = 255.255.255.0
 *   net.gateway = 10.10.0.1      net.mtu = 1500..9000
 *   net.services = on | off      discard/echo/chargen on TCP ports 9/7/19 (default off: test
 *                                services, anyone may fill their send buffers)
 * A bad value is reported and the default kept.
 */
#include <string.h>
#include "../lib/log.h"
#include "../lib/poller.h"
#include "../net/net.h"
#include "../net/tcp/tcp.h"
#include "config.h"

LOG_MODULE_USE(kernel);

static void get_addr(struct config *cfg, const char *key, uint32_t *out)
{
	const char *v = config_get(cfg, key);
	uint32_t a;
	if (!v)
		return;
	if (net_parse_ipv4(v, &a))
		log_err("config: %s '%s' is not a dotted-quad IPv4 address (default kept)", key, v);
	else
		*out = a;
}

static int net_config_apply(void)
{
	struct config *cfg = config_global();
	struct net_config c, def;
	uint64_t mtu;
	bool services;
	int rc;

	if ((rc = net_init())) {
		log_err("net: init failed (%d)", rc);
		return rc;
	}
	net_config_default(&c);
	get_addr(cfg, "net.address", &c.addr);
	get_addr(cfg, "net.netmask", &c.netmask);
	get_addr(cfg, "net.gateway", &c.gateway);
	if (config_get_u64(cfg, "net.mtu", 0, &mtu) || (mtu && (mtu < NETDEV_MTU_MIN || mtu > NETDEV_MTU_MAX)))
		log_err("config: net.mtu must be %u..%u (device default kept)", NETDEV_MTU_MIN, NETDEV_MTU_MAX);
	else
		c.mtu = (unsigned)mtu;
	if ((rc = net_configure(&c))) {
		log_err("config: network settings rejected (%d): using 10.10.0.10/24", rc);
		net_config_default(&def);
		net_configure(&def);
	}
	if (config_get_bool(cfg, "net.services", false, &services)) {
		log_err("config: net.services is not a boolean (off used)");
		services = false;
	}
	if (services && (rc = tcp_services_start()))
		log_err("net: discard/echo/chargen services failed to start (%d)", rc);
	return 0;
}
INITCALL(net_config, INIT_LEVEL_NET, net_config_apply);
