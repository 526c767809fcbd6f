/*
 * tools/lab/hostile.c - the hostile peers of tests/lab/hostile_tests.py, run inside a Linux
 * lab guest (built static on the host, copied in). Each mode keeps its attack up until it is
 * killed, so a legitimate host can be tested beside it: a connection the target closes (its
 * timeouts) is opened again at once, counted as "reopened" on stdout.
 *
 *   hostile synflood IFACE SRC DST PORT
 *       SYNs from SRC (a made-up address and MAC that never completes a handshake) and
 *       distinct ports, 1000 a second, over a packet socket.
 *   hostile ooo IFACE SRC DST PORT
 *   hostile zerownd IFACE SRC DST PORT
 *       A user-space TCP peer at SRC with a made-up MAC (the guest's kernel never sees
 *       its frames, so it sends no RSTs): ARP, handshake, then 2000 1-byte segments each
 *       beyond a hole (ooo), or an ICReq with a zero receive window, ACKing the window
 *       probes with window 0 (zerownd).
 *   hostile icreq DST PORT COUNT
 *       COUNT kernel TCP connections that send an NVMe/TCP ICReq and then nothing.
 *   hostile precmd DST PORT KIND
 *       ICReq, then before any Connect: KIND read (one Read of 1 MiB), write (four Writes of
 *       128-256 KiB whose data never comes) or reads64 (64 Reads of 128 KiB, socket never read).
 * Prints "HOSTILE-READY <what>" once its connections are first in place.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int pfd, ifindex;
static uint8_t my_mac[6], peer_mac[6], bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static uint32_t my_ip, peer_ip; /* network order */

static void die(const char *m)
{
	perror(m);
	exit(1);
}

static uint16_t csum(const void *p, size_t n, uint32_t sum)
{
	const uint8_t *b = p;
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (n & 1)
		sum += (uint32_t)b[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8), p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)), put16(p + 2, (uint16_t)v); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | p[2] << 8 | p[3]; }

static void send_frame(const uint8_t *f, size_t n)
{
	struct sockaddr_ll a = { .sll_family = AF_PACKET, .sll_ifindex = ifindex, .sll_halen = 6 };
	memcpy(a.sll_addr, f, 6);
	if (sendto(pfd, f, n, 0, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("sendto");
}

static void send_arp(uint16_t op, const uint8_t *tha, uint32_t tpa, const uint8_t *dst)
{
	uint8_t f[42];
	memcpy(f, dst, 6), memcpy(f + 6, my_mac, 6), put16(f + 12, 0x0806);
	put16(f + 14, 1), put16(f + 16, 0x0800), f[18] = 6, f[19] = 4, put16(f + 20, op);
	memcpy(f + 22, my_mac, 6), memcpy(f + 28, &my_ip, 4), memcpy(f + 32, tha, 6), memcpy(f + 38, &tpa, 4);
	send_frame(f, sizeof(f));
}

static void send_tcp(uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack, uint8_t flags, uint16_t wnd,
		     const void *data, size_t len)
{
	uint8_t f[1600], ph[12];
	size_t tl = 20 + (flags & 0x02 ? 4 : 0), il = 20 + tl + len;
	memset(f, 0, sizeof(f));
	memcpy(f, peer_mac, 6), memcpy(f + 6, my_mac, 6), put16(f + 12, 0x0800);
	uint8_t *ip = f + 14, *t = ip + 20;
	ip[0] = 0x45, put16(ip + 2, (uint16_t)il), ip[6] = 0x40, ip[8] = 64, ip[9] = 6;
	memcpy(ip + 12, &my_ip, 4), memcpy(ip + 16, &peer_ip, 4);
	put16(ip + 10, csum(ip, 20, 0));
	put16(t, sport), put16(t + 2, dport), put32(t + 4, seq), put32(t + 8, ack);
	t[12] = (uint8_t)((tl / 4) << 4), t[13] = flags, put16(t + 14, wnd);
	if (flags & 0x02)
		t[20] = 2, t[21] = 4, put16(t + 22, 1460);
	memcpy(t + tl, data, len);
	memcpy(ph, &my_ip, 4), memcpy(ph + 4, &peer_ip, 4), ph[8] = 0, ph[9] = 6, put16(ph + 10, (uint16_t)(tl + len));
	uint32_t s = 0;
	for (int i = 0; i < 12; i += 2)
		s += (uint32_t)ph[i] << 8 | ph[i + 1];
	put16(t + 16, csum(t, tl + len, s));
	send_frame(f, 14 + il);
}

/* One received frame for us: answers ARP for my_ip; returns a TCP segment's header (and
 * sets *flen) or NULL. */
static const uint8_t *poll_frame(uint8_t *buf, size_t *flen, int ms)
{
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	if (poll(&p, 1, ms) <= 0)
		return NULL;
	ssize_t n = recv(pfd, buf, 2048, 0);
	if (n < 42)
		return NULL;
	if (buf[12] == 0x08 && buf[13] == 0x06) {
		uint32_t tpa, spa;
		memcpy(&tpa, buf + 38, 4), memcpy(&spa, buf + 28, 4);
		if (tpa == my_ip && buf[21] == 1)
			send_arp(2, buf + 22, spa, buf + 6);
		if (spa == peer_ip && buf[21] == 2)
			memcpy(peer_mac, buf + 22, 6);
		return NULL;
	}
	if (buf[12] != 0x08 || buf[13] != 0x00 || memcmp(buf, my_mac, 6) || buf[23] != 6)
		return NULL;
	*flen = (size_t)n;
	return buf + 14 + (buf[14] & 0x0f) * 4;
}

static void raw_open(const char *ifname, const char *src, const char *dst, int mac_tail)
{
	struct ifreq ifr;
	pfd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (pfd < 0)
		die("socket");
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(pfd, SIOCGIFINDEX, &ifr))
		die("SIOCGIFINDEX");
	ifindex = ifr.ifr_ifindex;
	struct packet_mreq mr = { .mr_ifindex = ifindex, .mr_type = PACKET_MR_PROMISC };
	if (setsockopt(pfd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		die("PACKET_MR_PROMISC");
	uint8_t m[6] = { 0x02, 0x00, 0x5e, 0x00, 0x00, (uint8_t)mac_tail };
	memcpy(my_mac, m, 6);
	inet_pton(AF_INET, src, &my_ip);
	inet_pton(AF_INET, dst, &peer_ip);
}

static void resolve_peer(void)
{
	uint8_t buf[2048], zero[6] = { 0 };
	size_t n;
	for (int tries = 0; tries < 50 && !memcmp(peer_mac, zero, 6); tries++) {
		send_arp(1, zero, peer_ip, bcast);
		for (int i = 0; i < 10; i++)
			poll_frame(buf, &n, 20);
	}
	if (!memcmp(peer_mac, zero, 6)) {
		fprintf(stderr, "no ARP reply from the target\n");
		exit(1);
	}
}

/* Handshake from sport with window wnd: 0 with *rnxt = the peer's ISS + 1 (our RCV.NXT),
 * -1 when no SYN-ACK came in 20 tries. */
static int handshake(uint16_t sport, uint16_t dport, uint32_t iss, uint16_t wnd, uint32_t *rnxt)
{
	uint8_t buf[2048];
	size_t n;
	for (int tries = 0; tries < 20; tries++) {
		send_tcp(sport, dport, iss, 0, 0x02, wnd, NULL, 0);
		for (int i = 0; i < 50; i++) {
			const uint8_t *t = poll_frame(buf, &n, 20);
			if (t && (t[0] << 8 | t[1]) == dport && (t[2] << 8 | t[3]) == sport && (t[13] & 0x12) == 0x12) {
				*rnxt = get32(t + 4) + 1;
				send_tcp(sport, dport, iss + 1, *rnxt, 0x10, wnd, NULL, 0);
				return 0;
			}
		}
	}
	printf("no SYN-ACK\n");
	return -1;
}

static void icreq_pdu(uint8_t p[128])
{
	memset(p, 0, 128);
	p[0] = 0x00, p[2] = 128, p[4] = 128; /* ICReq, HLEN 128, PLEN 128 (LE) */
}


/* SYNs from distinct ports for ever, 1000 a second, answering ARP in between. */
static void synflood(uint16_t dport)
{
	uint8_t buf[2048];
	size_t n;
	for (unsigned k = 0;; k++) {
		send_tcp((uint16_t)(20000 + k % 40000), dport, 1000u * k, 0, 0x02, 65535, NULL, 0);
		poll_frame(buf, &n, 1);
		if (k == 2000)
			printf("HOSTILE-READY synflood\n");
	}
}

/* One user-space connection from sport: the 1-byte out-of-order flood or the zero-window
 * ICReq, then ACK whatever arrives until the target resets or closes it. */
static void raw_peer(uint16_t sport, uint16_t dport, int zw, int *ready)
{
	uint8_t buf[2048], pdu[128];
	size_t n;
	uint32_t iss = 5000, rnxt, snxt = iss + 1;
	uint16_t wnd = zw ? 0 : 65535;
	if (handshake(sport, dport, iss, wnd, &rnxt))
		return;
	if (zw) {
		icreq_pdu(pdu);
		send_tcp(sport, dport, snxt, rnxt, 0x18, 0, pdu, 128);
		snxt += 128;
	} else {
		for (uint32_t k = 0; k < 2000; k++) {
			send_tcp(sport, dport, snxt + 2 + 2 * k, rnxt, 0x10, wnd, "x", 1);
			if (k % 64 == 63)
				usleep(2000);
		}
	}
	if (!*ready) {
		printf("HOSTILE-READY %s\n", zw ? "zerownd" : "ooo");
		*ready = 1;
	}
	for (;;) {
		const uint8_t *t = poll_frame(buf, &n, 1000);
		if (!t || (t[2] << 8 | t[3]) != sport)
			continue;
		if (t[13] & 0x04)
			return; /* reset */
		if (t[13] & 0x01) {
			send_tcp(sport, dport, snxt, get32(t + 4) + 1, 0x14, wnd, NULL, 0); /* FIN: go (RST) */
			return;
		}
		send_tcp(sport, dport, snxt, rnxt, 0x10, wnd, NULL, 0);
	}
}

static int tcp_conn(const char *dst, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), small = 4096;
	if (fd < 0)
		return -1;
	inet_pton(AF_INET, dst, &a.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void capsule(uint8_t p[72], uint8_t opc, uint16_t cid, uint32_t len)
{
	memset(p, 0, 72);
	p[0] = 0x04, p[2] = 72, p[4] = 72;         /* CapsuleCmd, HLEN 72, PLEN 72 */
	uint8_t *sqe = p + 8;
	sqe[0] = opc, sqe[1] = 0x40;                /* PSDT 01: SGL */
	sqe[2] = (uint8_t)cid, sqe[3] = (uint8_t)(cid >> 8);
	sqe[4] = 1;                                 /* NSID 1 */
	memcpy(sqe + 24 + 8, &len, 4);              /* SGL length (LE) */
	sqe[24 + 15] = 0x5a;                        /* Transport SGL Data Block, transport specific */
	uint32_t nlb = len / 512 - 1;
	memcpy(sqe + 48, &nlb, 4);                  /* CDW12 NLB, 0-based */
}

/* A kernel connection with an ICReq and, for precmd, the ICResp read and the commands of
 * kind sent; -1 when the target refused or closed it on the way. */
static int open_attacker(const char *dst, int port, const char *kind)
{
	uint8_t pdu[128], c[72];
	int fd = tcp_conn(dst, port);
	icreq_pdu(pdu);
	if (fd < 0 || write(fd, pdu, 128) != 128)
		goto fail;
	if (!kind)
		return fd;
	for (size_t got = 0; got < 128;) {
		ssize_t n = read(fd, pdu + got, 128 - got);
		if (n <= 0)
			goto fail;
		got += (size_t)n;
	}
	int n = !strcmp(kind, "read") ? 1 : !strcmp(kind, "write") ? 4 : 64;
	for (int k = 0; k < n; k++) {
		uint32_t len = !strcmp(kind, "read") ? 1u << 20 : !strcmp(kind, "write") ? (128u + 32u * (unsigned)k) << 10
											     : 128u << 10;
		capsule(c, !strcmp(kind, "write") ? 0x01 : 0x02, (uint16_t)k, len);
		if (write(fd, c, 72) != 72)
			goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* count kernel connections (kind NULL: ICReq only), each opened again 100 ms after the
 * target closed or refused it; never reads them. */
static void hold_conns(const char *dst, int port, int count, const char *kind)
{
	struct pollfd p[64];
	unsigned reopened = 0, ready = 0;
	if (count < 1 || count > 64)
		exit(2);
	for (int k = 0; k < count; k++)
		p[k].fd = open_attacker(dst, port, kind), p[k].events = POLLRDHUP;
	for (;;) {
		int up = 0;
		for (int k = 0; k < count; k++)
			up += p[k].fd >= 0;
		if (!ready) {
			printf("HOSTILE-READY %s %d of %d\n", kind ? kind : "icreq", up, count);
			ready = 1;
		}
		if (poll(p, (nfds_t)count, 100) < 0)
			die("poll");
		for (int k = 0; k < count; k++) {
			if (p[k].fd >= 0 && !(p[k].revents & (POLLRDHUP | POLLHUP | POLLERR)))
				continue;
			if (p[k].fd >= 0)
				close(p[k].fd);
			usleep(100 * 1000);
			p[k].fd = open_attacker(dst, port, kind);
			p[k].revents = 0;
			printf("reopened %u\n", ++reopened);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	setvbuf(stdout, NULL, _IONBF, 0);
	/* A target that resets a connection while its commands are being written must make the
	 * write fail (EPIPE: the connection is opened again), not kill the attacker with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(argv[1], "synflood") && argc == 6) {
		raw_open(argv[2], argv[3], argv[4], 0x66);
		resolve_peer();
		synflood((uint16_t)atoi(argv[5]));
	}
	if ((!strcmp(argv[1], "ooo") || !strcmp(argv[1], "zerownd")) && argc == 6) {
		int zw = !strcmp(argv[1], "zerownd"), ready = 0;
		raw_open(argv[2], argv[3], argv[4], zw ? 0x68 : 0x67);
		resolve_peer();
		for (unsigned k = 0;; k++) {
			raw_peer((uint16_t)(30000 + k % 20000), (uint16_t)atoi(argv[5]), zw, &ready);
			printf("reopened %u\n", k + 1);
		}
	}
	if (!strcmp(argv[1], "icreq") && argc == 5)
		hold_conns(argv[2], atoi(argv[3]), atoi(argv[4]), NULL);
	if (!strcmp(argv[1], "precmd") && argc == 5)
		hold_conns(argv[2], atoi(argv[3]), 1, argv[4]);
	fprintf(stderr, "usage: see tools/lab/hostile.c\n");
	return 2;
}
