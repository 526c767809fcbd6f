/*
 * net_settings.c - the interface's settings, applied when the stack starts
 * (INIT_LEVEL_NET; core stores the file's values before any initcall runs):
 *   net.address, net.netmask, net.gateway   static IPv4 configuration
 *   net.mtu = 1500..9000                    the interface MTU (jumbo frames)
 *   net.services = on | off                 discard/echo/chargen on TCP ports 9/7/19 (default off:
 *                                           test services, anyone may fill their send buffers)
 * Settings net_configure() refuses are reported and 10.10.0.10/24 used.
 */
#include "../lib/config_key.h"
#include "../lib/log.h"
#include "../lib/poller.h"
#include "net.h"
#include "tcp/tcp.h"

LOG_MODULE_USE(net);

static struct net_config net_settings = { NET_DEFAULT_ADDR, NET_DEFAULT_NETMASK, NET_DEFAULT_GATEWAY, NETDEV_MTU_MIN };
static bool net_services;

CONFIG_IPV4(net_address, "net.address", &net_settings.addr, "10.10.0.10", NULL, "the interface's IPv4 address");
CONFIG_IPV4(net_netmask, "net.netmask", &net_settings.netmask, "255.255.255.0", NULL, "its netmask");
CONFIG_IPV4(net_gateway, "net.gateway", &net_settings.gateway, "", NULL, "the default route (empty: none)");
CONFIG_UINT(net_mtu, "net.mtu", &net_settings.mtu, NETDEV_MTU_MIN, NETDEV_MTU_MAX, "1500", NULL,
	    "interface MTU (jumbo frames above 1500)");
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
	if ((rc = net_configure(&net_settings))) {
		log_err("config: network settings rejected (%d): using 10.10.0.10/24", rc);
		net_config_default(&def);
		net_configure(&def);
	}
	if (net_services && (rc = tcp_services_start()))
		log_err("discard/echo/chargen services failed to start (%d)", rc);
	return 0;
}
INITCALL(net_settings, INIT_LEVEL_NET, net_settings_apply);
