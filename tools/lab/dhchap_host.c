/*
 * tools/lab/dhchap_host.c - an NVMe/TCP host that authenticates with DH-HMAC-CHAP (NVMe Base
 * 2.0 8.13), for tests/lab/auth_tests.py: run inside a lab guest (built static on the host
 * against Debian's libmbedcrypto, copied in) because the lab guest's Debian 6.1 kernel is
 * built without NVMe in-band authentication (CONFIG_NVME_AUTH unset), so nvme-cli cannot.
 *
 *   dhchap_host ADDR PORT SUBNQN HOSTNQN SECRET CTRL_SECRET|- DHGROUPS
 *
 * Offers SHA-256/384/512 and the DH groups listed in DHGROUPS (ids, e.g. 012345), as Linux
 * does. Connects the admin queue, authenticates it (bidirectionally when CTRL_SECRET is not
 * "-", checking the controller's response), reads VS, enables the controller, then connects
 * I/O queue 1, checks that a Flush is refused before authentication, authenticates it and
 * runs the Flush. Prints "AUTH-OK hash H group G admin N ms io N ms" or "AUTH-FAILED <why>"
 * (exit 1); a Failure1 from the controller prints its reason code explanation.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <mbedtls/base64.h>
#include <mbedtls/bignum.h>
#include <mbedtls/dhm.h>
#include <mbedtls/md.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static const char *subnqn, *hostnqn;

static void die(const char *fmt, ...)
{
	va_list ap;
	printf("AUTH-FAILED ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static void st16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void st32(uint8_t *p, uint32_t v) { st16(p, (uint16_t)v); st16(p + 2, (uint16_t)(v >> 16)); }
static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t ld32(const uint8_t *p) { return ld16(p) | (uint32_t)ld16(p + 2) << 16; }

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void xread(int fd, void *b, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t k = read(fd, (uint8_t *)b + got, n - got);
		if (k <= 0)
			die("connection closed by the controller");
		got += (size_t)k;
	}
}

static void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		die("write");
}

static int tcp_open(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = 60 };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	uint8_t ic[128] = { 0 };

	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("tcp connect to %s:%d", addr, port);
	ic[0] = 0x00; /* ICReq */
	ic[2] = 128;
	st32(ic + 4, 128);
	xwrite(fd, ic, 128);
	xread(fd, ic, 128);
	if (ic[0] != 0x01)
		die("no ICResp (type %u)", ic[0]);
	return fd;
}

/* One command: SQE (64 bytes) with in-capsule data out (olen) or C2H data in (ilen into in).
 * Returns the status field (SCT << 8 | SC); *dw0 the completion's DW0. */
static uint16_t cmd(int fd, uint8_t *sqe, const void *out, uint32_t olen, void *in, uint32_t ilen, uint32_t *dw0)
{
	static uint16_t cid;
	uint8_t pdu[8 + 64], h[24];
	uint32_t got = 0;

	st16(sqe + 2, ++cid);
	sqe[1] = 0x40; /* PSDT: SGL */
	memset(sqe + 24, 0, 16);
	st32(sqe + 32, olen ? olen : ilen);
	sqe[39] = olen ? 0x01 : 0x5a; /* in-capsule offset / transport data block */
	memset(pdu, 0, 8);
	pdu[0] = 0x04; /* CapsuleCmd */
	pdu[2] = 72;
	pdu[3] = olen ? 72 : 0;
	st32(pdu + 4, 72 + olen);
	memcpy(pdu + 8, sqe, 64);
	xwrite(fd, pdu, sizeof(pdu));
	if (olen)
		xwrite(fd, out, olen);
	for (;;) {
		xread(fd, h, 8);
		uint32_t plen = ld32(h + 4);
		if (h[0] == 0x05) { /* CapsuleResp */
			xread(fd, h + 8, 16);
			*dw0 = ld32(h + 8);
			return (uint16_t)((ld16(h + 22) >> 1) & 0x7ff);
		}
		if (h[0] != 0x07 || h[2] != 24 || plen < 24)
			die("unexpected PDU type %u", h[0]);
		xread(fd, h + 8, 16);
		uint32_t off = ld32(h + 12), len = ld32(h + 16);
		if (off != got || len > ilen - got || plen - 24 != len || h[3] != 24)
			die("C2HData out of order");
		xread(fd, (uint8_t *)in + got, len);
		got += len;
		if (h[1] & 0x08) { /* SUCCESS: no CapsuleResp */
			*dw0 = 0;
			return 0;
		}
	}
}

static void fabrics(uint8_t *sqe, uint8_t fctype)
{
	memset(sqe, 0, 64);
	sqe[0] = 0x7f;
	sqe[4] = fctype;
}

static uint32_t do_connect(int fd, uint16_t qid, uint16_t cntlid)
{
	uint8_t sqe[64], cd[1024] = { 0 };
	uint32_t dw0;
	fabrics(sqe, 0x01);
	st16(sqe + 42, qid);
	st16(sqe + 44, 31);
	st32(sqe + 48, qid ? 0 : 30000);
	for (int i = 0; i < 16; i++)
		cd[i] = (uint8_t)(0x5a ^ i);
	st16(cd + 16, cntlid);
	strcpy((char *)cd + 256, subnqn);
	strcpy((char *)cd + 512, hostnqn);
	uint16_t st = cmd(fd, sqe, cd, sizeof(cd), NULL, 0, &dw0);
	if (st)
		die("Connect qid %u: status 0x%x", qid, st);
	return dw0;
}

struct secret {
	int hmac, len;
	uint8_t key[64];
};

static void parse_secret(const char *s, struct secret *k)
{
	uint8_t raw[80];
	size_t n = 0, b = strlen(s + 10);
	if (strncmp(s, "DHHC-1:0", 8) || s[9] != ':')
		die("bad secret %s", s);
	k->hmac = s[8] - '0';
	if (b && s[10 + b - 1] == ':')
		b--;
	if (mbedtls_base64_decode(raw, sizeof(raw), &n, (const uint8_t *)s + 10, b) || (n != 36 && n != 52 && n != 68))
		die("bad secret base64 %s", s);
	k->len = (int)n - 4;
	if ((uint32_t)crc32(0, raw, (unsigned)k->len) != ld32(raw + k->len))
		die("bad secret CRC %s", s);
	memcpy(k->key, raw, (size_t)k->len);
}

static const mbedtls_md_info_t *md(int id)
{
	mbedtls_md_type_t t = id == 1 ? MBEDTLS_MD_SHA256 : id == 2 ? MBEDTLS_MD_SHA384 : MBEDTLS_MD_SHA512;
	return mbedtls_md_info_from_type(t);
}

static void hmac_v(int id, const uint8_t *key, size_t klen, const void *const *p, const size_t *n, int cnt, uint8_t *out)
{
	mbedtls_md_context_t c;
	mbedtls_md_init(&c);
	mbedtls_md_setup(&c, md(id), 1);
	mbedtls_md_hmac_starts(&c, key, klen);
	for (int i = 0; i < cnt; i++)
		mbedtls_md_hmac_update(&c, p[i], n[i]);
	mbedtls_md_hmac_finish(&c, out);
	mbedtls_md_free(&c);
}

/* The key the responses use: transformed by the secret's own hash with nqn, or itself. */
static size_t transform(const struct secret *k, const char *nqn, uint8_t *out)
{
	if (!k->hmac) {
		memcpy(out, k->key, (size_t)k->len);
		return (size_t)k->len;
	}
	const void *p[2] = { nqn, "NVMe-over-Fabrics" };
	size_t n[2] = { strlen(nqn), 17 };
	hmac_v(k->hmac, k->key, (size_t)k->len, p, n, 2, out);
	return mbedtls_md_get_size(md(k->hmac));
}

static void response(int id, const uint8_t *key, size_t klen, const uint8_t *c, size_t hl, uint32_t seq, uint16_t tid,
		     const char *role, const char *n1, const char *n2, uint8_t *out)
{
	uint8_t s[4], t[2], z = 0;
	st32(s, seq);
	st16(t, tid);
	const void *p[8] = { c, s, t, &z, role, n1, &z, n2 };
	size_t n[8] = { hl, 4, 2, 1, strlen(role), strlen(n1), 1, strlen(n2) };
	hmac_v(id, key, klen, p, n, 8, out);
}

static const uint8_t p2048[] = MBEDTLS_DHM_RFC7919_FFDHE2048_P_BIN, p3072[] = MBEDTLS_DHM_RFC7919_FFDHE3072_P_BIN,
		     p4096[] = MBEDTLS_DHM_RFC7919_FFDHE4096_P_BIN, p6144[] = MBEDTLS_DHM_RFC7919_FFDHE6144_P_BIN,
		     p8192[] = MBEDTLS_DHM_RFC7919_FFDHE8192_P_BIN;

static int rnd(void *ctx, unsigned char *b, size_t n)
{
	(void)ctx;
	FILE *f = fopen("/dev/urandom", "rb");
	if (!f || fread(b, 1, n, f) != n)
		die("/dev/urandom");
	fclose(f);
	return 0;
}

/* One transaction on fd; returns its milliseconds. */
static double authenticate(int fd, int qid, const struct secret *hk, const struct secret *ck, const char *groups)
{
	uint8_t sqe[64], m[2048], c[2048], r[2048];
	uint32_t dw0, n;
	uint16_t tid = (uint16_t)(0x100 + qid);
	double t0 = now_ms();

	memset(m, 0, 72);
	st16(m + 4, tid);
	m[7] = 1; /* NAPD */
	m[8] = 1; /* DH-HMAC-CHAP */
	m[10] = 3;
	m[11] = (uint8_t)strlen(groups);
	m[12] = 1, m[13] = 2, m[14] = 3;
	for (size_t i = 0; groups[i]; i++)
		m[12 + 30 + i] = (uint8_t)(groups[i] - '0');
#define SEND(buf, len)                                                                                                \
	do {                                                                                                           \
		fabrics(sqe, 0x05);                                                                                    \
		sqe[41] = 1, sqe[42] = 1, sqe[43] = 0xe9;                                                              \
		st32(sqe + 44, (len));                                                                                 \
		if (cmd(fd, sqe, (buf), (len), NULL, 0, &dw0))                                                         \
			die("AUTH_Send refused");                                                                      \
	} while (0)
#define RECV(buf, al)                                                                                                 \
	do {                                                                                                           \
		fabrics(sqe, 0x06);                                                                                    \
		sqe[41] = 1, sqe[42] = 1, sqe[43] = 0xe9;                                                              \
		st32(sqe + 44, (al));                                                                                  \
		if (cmd(fd, sqe, NULL, 0, (buf), (al), &dw0))                                                          \
			die("AUTH_Receive refused");                                                                   \
		if ((buf)[1] == 0xf1)                                                                                  \
			die("qid %d: Failure1 from the controller, reason %u explanation %u", qid, (buf)[6], (buf)[7]); \
	} while (0)
	SEND(m, 72);
	RECV(c, 1200);
	if (c[0] != 1 || c[1] != 1 || ld16(c + 4) != tid)
		die("not a Challenge");
	int hid = c[8], gid = c[9];
	size_t hl = c[6], dhvlen = ld16(c + 10);
	uint32_t s1 = ld32(c + 12);
	const uint8_t *c1 = c + 16, *dhv = c + 16 + hl;
	uint8_t skh[64], aug[64], key[64], c2[64];
	const uint8_t *ch = c1;
	size_t hostdh = 0;

	memset(r, 0, sizeof(r));
	if (gid) {
		const uint8_t *p[] = { NULL, p2048, p3072, p4096, p6144, p8192 };
		size_t pl[] = { 0, sizeof(p2048), sizeof(p3072), sizeof(p4096), sizeof(p6144), sizeof(p8192) };
		mbedtls_mpi P, X, Y, G, K;
		uint8_t ks[1024];
		if (gid > 5 || dhvlen != pl[gid])
			die("challenge DH value length %zu for group %d", dhvlen, gid);
		mbedtls_mpi_init(&P), mbedtls_mpi_init(&X), mbedtls_mpi_init(&Y), mbedtls_mpi_init(&G), mbedtls_mpi_init(&K);
		mbedtls_mpi_read_binary(&P, p[gid], pl[gid]);
		mbedtls_mpi_fill_random(&X, 64, rnd, NULL);
		mbedtls_mpi_lset(&G, 2);
		mbedtls_mpi_exp_mod(&Y, &G, &X, &P, NULL);
		mbedtls_mpi_write_binary(&Y, r + 16 + 2 * hl, pl[gid]);
		mbedtls_mpi_read_binary(&G, dhv, dhvlen);
		mbedtls_mpi_exp_mod(&K, &G, &X, &P, NULL);
		mbedtls_mpi_write_binary(&K, ks, pl[gid]);
		mbedtls_md(md(hid), ks, pl[gid], skh);
		const void *pp[1] = { c1 };
		hmac_v(hid, skh, hl, pp, &hl, 1, aug);
		ch = aug;
		hostdh = pl[gid];
		mbedtls_mpi_free(&P), mbedtls_mpi_free(&X), mbedtls_mpi_free(&Y), mbedtls_mpi_free(&G), mbedtls_mpi_free(&K);
	}
	size_t klen = transform(hk, hostnqn, key);
	r[0] = 1, r[1] = 2;
	st16(r + 4, tid);
	r[6] = (uint8_t)hl;
	st16(r + 10, (uint16_t)hostdh);
	response(hid, key, klen, ch, hl, s1, tid, "HostHost", hostnqn, subnqn, r + 16);
	uint32_t s2 = 0;
	if (ck) {
		rnd(NULL, c2, hl);
		s2 = 0x5eed0000u + (uint32_t)qid;
		r[8] = 1;
		st32(r + 12, s2);
		memcpy(r + 16 + hl, c2, hl);
	}
	n = (uint32_t)(16 + 2 * hl + hostdh);
	SEND(r, n);
	RECV(m, 200);
	if (m[0] != 1 || m[1] != 3 || ld16(m + 4) != tid)
		die("not a Success1");
	if (ck) {
		uint8_t expect[64];
		const uint8_t *ch2 = c2;
		if (!(m[8] & 1))
			die("Success1 without the controller's response");
		if (gid) {
			const void *pp[1] = { c2 };
			hmac_v(hid, skh, hl, pp, &hl, 1, aug);
			ch2 = aug;
		}
		klen = transform(ck, subnqn, key);
		response(hid, key, klen, ch2, hl, s2, tid, "Controller", subnqn, hostnqn, expect);
		if (memcmp(expect, m + 16, hl)) {
			memset(m, 0, 8);
			m[1] = 0xf0;
			st16(m + 4, tid);
			m[6] = 1, m[7] = 1;
			SEND(m, 8);
			die("qid %d: the controller's response is wrong (dhchap_ctrl_key)", qid);
		}
		memset(m, 0, 16);
		m[0] = 1, m[1] = 4;
		st16(m + 4, tid);
		SEND(m, 16);
	}
	printf("qid %d: hash %d group %d, %.0f ms\n", qid, hid, gid, now_ms() - t0);
	return now_ms() - t0;
}

int main(int argc, char **argv)
{
	struct secret hk, ck;
	uint8_t sqe[64], vs[4];
	uint32_t dw0;

	if (argc != 8)
		die("usage: dhchap_host ADDR PORT SUBNQN HOSTNQN SECRET CTRL_SECRET|- DHGROUPS");
	setvbuf(stdout, NULL, _IONBF, 0);
	subnqn = argv[3];
	hostnqn = argv[4];
	parse_secret(argv[5], &hk);
	if (strcmp(argv[6], "-"))
		parse_secret(argv[6], &ck);
	int a = tcp_open(argv[1], atoi(argv[2]));
	dw0 = do_connect(a, 0, 0xffff);
	if (!(dw0 & (1u << 17)))
		die("the controller does not ask for authentication (DW0 0x%x)", dw0);
	uint16_t cntlid = (uint16_t)dw0;
	fabrics(sqe, 0x04);
	st32(sqe + 44, 0x08);
	uint16_t st = cmd(a, sqe, NULL, 0, NULL, 0, &dw0);
	if (st != 0x191)
		die("Property Get before authentication: status 0x%x, not Authentication Required", st);
	double ta = authenticate(a, 0, &hk, strcmp(argv[6], "-") ? &ck : NULL, argv[7]);
	fabrics(sqe, 0x04);
	st32(sqe + 44, 0x08);
	if (cmd(a, sqe, NULL, 0, NULL, 0, &dw0))
		die("Property Get VS after authentication");
	st32(vs, dw0);
	fabrics(sqe, 0x00);
	st32(sqe + 44, 0x14);
	st32(sqe + 48, 0x460001); /* CC: EN, IOSQES 6, IOCQES 4 */
	if (cmd(a, sqe, NULL, 0, NULL, 0, &dw0))
		die("Property Set CC");
	for (int i = 0;; i++) {
		fabrics(sqe, 0x04);
		st32(sqe + 44, 0x1c);
		if (cmd(a, sqe, NULL, 0, NULL, 0, &dw0) == 0 && (dw0 & 1))
			break;
		if (i > 100)
			die("CSTS.RDY");
		usleep(10000);
	}
	int io = tcp_open(argv[1], atoi(argv[2]));
	dw0 = do_connect(io, 1, cntlid);
	if (!(dw0 & (1u << 17)))
		die("I/O queue: no AUTHREQ.ATR");
	memset(sqe, 0, 64);
	sqe[0] = 0x00; /* Flush */
	st32(sqe + 4, 1);
	if ((st = cmd(io, sqe, NULL, 0, NULL, 0, &dw0)) != 0x191)
		die("Flush before the I/O queue's authentication: status 0x%x", st);
	double ti = authenticate(io, 1, &hk, strcmp(argv[6], "-") ? &ck : NULL, argv[7]);
	memset(sqe, 0, 64);
	st32(sqe + 4, 1);
	if ((st = cmd(io, sqe, NULL, 0, NULL, 0, &dw0)) != 0)
		die("Flush after authentication: status 0x%x", st);
	printf("AUTH-OK VS %u.%u admin %.0f ms io %.0f ms\n", vs[2] | vs[3] << 8, vs[1], ta, ti);
	close(io);
	close(a);
	return 0;
}
