/*
 * tcp_service.c - discard (RFC 863, port 9), echo (RFC 862, port 7) and chargen
 * (RFC 864, port 19) over TCP, for tests and diagnosis.
 *
 * Discard releases received fragments without reading them (no CPU touches the
 * payload). Echo sends the received fragments straight back (zero copy: the same
 * device-memory buffers go out, released once acknowledged). Chargen sends its
 * pattern from host chunks while send space lasts.
 */
#include <errno.h>
#include <string.h>
#include "../../lib/log.h"
#include "tcp_internal.h"

LOG_MODULE_USE(tcp);

#define SVC_BACKLOG 8
#define SVC_BATCH 32

enum svc_kind { SVC_DISCARD, SVC_ECHO, SVC_CHARGEN, SVC_COUNT };
static const uint16_t svc_port[SVC_COUNT] = { 9, 7, 19 };
static struct tcp_sock *svc_listener[SVC_COUNT];
static struct tcp_ops svc_conn_ops[SVC_COUNT];

static void svc_pump(struct tcp_sock *s, enum svc_kind k)
{
	struct netdev_frag f[SVC_BATCH];
	int n;

	switch (k) {
	case SVC_DISCARD:
		while ((n = tcp_recv_frags(s, f, SVC_BATCH, SIZE_MAX)) > 0)
			for (int i = 0; i < n; i++)
				netdev_frag_release(&f[i]);
		break;
	case SVC_ECHO: {
		size_t space;
		while ((space = tcp_send_space(s)) > 0 && tcp_recv_avail(s)) {
			n = tcp_recv_frags(s, f, SVC_BATCH, space);
			if (n <= 0 || tcp_send_frags(s, f, (unsigned)n))
				break;
		}
		break;
	}
	case SVC_CHARGEN: {
		static const char line[] = "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefgh\r\n";
		while ((n = tcp_recv_frags(s, f, SVC_BATCH, SIZE_MAX)) > 0)
			for (int i = 0; i < n; i++)
				netdev_frag_release(&f[i]);
		while (tcp_send_space(s) >= sizeof(line) - 1)
			if (tcp_send_copy(s, line, sizeof(line) - 1) <= 0)
				break;
		break;
	}
	default:
		break;
	}
	tcp_flush(s); /* done queueing: the short tail goes now */
	if (tcp_recv_eof(s) && (k != SVC_ECHO || tcp_recv_avail(s) == 0))
		tcp_close(s);
}

static void svc_event(struct tcp_sock *s, void *ctx, unsigned ev)
{
	enum svc_kind k = (enum svc_kind)(uintptr_t)ctx;
	if (ev & TCP_EV_CLOSED) {
		tcp_close(s);
		return;
	}
	svc_pump(s, k);
}

static void svc_accept(struct tcp_sock *l, void *ctx, unsigned ev)
{
	struct tcp_sock *c;
	if (!(ev & TCP_EV_ACCEPT))
		return;
	/* tcp_set_ops delivers the accepted socket's first events (send space, data
	 * that arrived before accept); c may be gone after it. */
	while ((c = tcp_accept(l)))
		tcp_set_ops(c, &svc_conn_ops[(uintptr_t)ctx], ctx);
}

static const struct tcp_ops svc_listen_ops = { svc_accept };

int tcp_services_start(void)
{
	int rc;
	for (int k = 0; k < SVC_COUNT; k++) {
		svc_conn_ops[k].event = svc_event;
		if (svc_listener[k])
			continue;
		if ((rc = tcp_listen(svc_port[k], SVC_BACKLOG, &svc_listen_ops, (void *)(uintptr_t)k, &svc_listener[k]))) {
			tcp_services_stop();
			return rc;
		}
		tcp_set_keepalive(svc_listener[k], TCP_KEEPALIVE_IDLE_NS, TCP_KEEPALIVE_INTVL_NS, TCP_KEEPALIVE_PROBES);
	}
	return 0;
}

void tcp_services_stop(void)
{
	for (int k = 0; k < SVC_COUNT; k++) {
		if (svc_listener[k])
			tcp_close(svc_listener[k]);
		svc_listener[k] = NULL;
	}
}
