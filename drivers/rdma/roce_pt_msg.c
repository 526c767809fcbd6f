/*
 * roce_pt_msg.c - perftest's out-of-band exchange, server side: the messages parsed into
 * locals and formatted, and the order they come in (roce_perftest.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "../../lib/byteorder.h"
#include "roce_perftest.h"

/* struct pingpong_dest as perftest SENDs it over its rdma_cm channel: every integer
 * big-endian (htobe32/htobe64), x86_64 layout (4 bytes of padding before the VA). */
struct roce_pt_keys_wire {
	be32_t lid, out_reads, qpn, psn, rkey;
	uint8_t pad[4];
	be64_t vaddr;
	uint8_t gid[16];
	be32_t srqn, gid_index;
} __attribute__((packed));

_Static_assert(sizeof(struct roce_pt_keys_wire) == ROCE_PT_KEYS_BIN_LEN, "perftest's struct pingpong_dest");

/* n hex digits at p (either case). 0 or -EINVAL. */
static int roce_pt_hex(const char *p, unsigned n, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++) {
		char c = p[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* The widths of the text form's fields, each followed by ':'. */
static const uint8_t roce_pt_text_widths[] = { 4, 4, 6, 6, 8, 16, 2, 2, 2, 2, 2, 2, 2, 2,
					       2, 2, 2, 2, 2, 2, 2, 2, 8 };
#define ROCE_PT_TEXT_FIELDS (sizeof(roce_pt_text_widths) / sizeof(roce_pt_text_widths[0]))

int roce_pt_keys_parse_text(const char *msg, size_t len, struct roce_pt_dest *out)
{
	uint64_t v[ROCE_PT_TEXT_FIELDS];
	struct roce_pt_dest d;
	size_t off = 0;

	if (len != ROCE_PT_KEYS_TEXT_LEN)
		return -EINVAL;
	for (unsigned i = 0; i < ROCE_PT_TEXT_FIELDS; i++) {
		unsigned w = roce_pt_text_widths[i];
		if (w + 1 > len - off || roce_pt_hex(msg + off, w, &v[i]) || msg[off + w] != ':')
			return -EINVAL;
		off += w + 1u;
	}
	if (off != len - 1 || msg[off] != 0)
		return -EINVAL;
	if (v[2] > 0xffffff || v[3] > 0xffffff)
		return -EINVAL;
	memset(&d, 0, sizeof(d));
	d.lid = (uint16_t)v[0];
	d.out_reads = (uint32_t)v[1];
	d.qpn = (uint32_t)v[2];
	d.psn = (uint32_t)v[3];
	d.rkey = (uint32_t)v[4];
	d.vaddr = v[5];
	for (unsigned i = 0; i < 16; i++)
		d.gid.raw[i] = (uint8_t)v[6 + i];
	d.srqn = (uint32_t)v[22];
	*out = d;
	return 0;
}

void roce_pt_keys_format_text(const struct roce_pt_dest *d, char out[ROCE_PT_KEYS_TEXT_LEN])
{
	size_t n;
	memset(out, 0, ROCE_PT_KEYS_TEXT_LEN);
	n = (size_t)snprintf(out, ROCE_PT_KEYS_TEXT_LEN, "%04x:%04x:%06x:%06x:%08x:%016llx:", d->lid & 0xffffu,
			     d->out_reads & 0xffffu, d->qpn & 0xffffffu, d->psn & 0xffffffu, (unsigned)d->rkey,
			     (unsigned long long)d->vaddr);
	for (unsigned i = 0; i < 16; i++, n += 3)
		snprintf(out + n, ROCE_PT_KEYS_TEXT_LEN - n, "%02x:", d->gid.raw[i]);
	snprintf(out + n, ROCE_PT_KEYS_TEXT_LEN - n, "%08x:", (unsigned)d->srqn);
}

int roce_pt_keys_parse_bin(const uint8_t *msg, size_t len, struct roce_pt_dest *out)
{
	struct roce_pt_keys_wire w;
	struct roce_pt_dest d;

	if (len != sizeof(w))
		return -EINVAL;
	memcpy(&w, msg, sizeof(w));
	memset(&d, 0, sizeof(d));
	if (be32_get(w.lid) > 0xffff || be32_get(w.qpn) > 0xffffff || be32_get(w.psn) > 0xffffff)
		return -EINVAL;
	d.lid = (uint16_t)be32_get(w.lid);
	d.out_reads = be32_get(w.out_reads);
	d.qpn = be32_get(w.qpn);
	d.psn = be32_get(w.psn);
	d.rkey = be32_get(w.rkey);
	d.vaddr = be64_get(w.vaddr);
	memcpy(d.gid.raw, w.gid, 16);
	d.srqn = be32_get(w.srqn);
	*out = d;
	return 0;
}

void roce_pt_keys_format_bin(const struct roce_pt_dest *d, uint8_t out[ROCE_PT_KEYS_BIN_LEN])
{
	struct roce_pt_keys_wire w;
	memset(&w, 0, sizeof(w));
	w.lid = be32_make(d->lid);
	w.out_reads = be32_make(d->out_reads);
	w.qpn = be32_make(d->qpn & 0xffffff);
	w.psn = be32_make(d->psn & 0xffffff);
	w.rkey = be32_make(d->rkey);
	w.vaddr = be64_make(d->vaddr);
	memcpy(w.gid, d->gid.raw, 16);
	w.srqn = be32_make(d->srqn);
	w.gid_index = be32_make(1);  /* what perftest's clients pick for RoCE v2 over IPv4 */
	memcpy(out, &w, sizeof(w));
}

/* "M.mm" (digits, one dot, NUL-terminated within len) -> M * 10000 + the first four
 * decimals, as atof would compare them. -EINVAL for anything else. */
static int roce_pt_version(const char *v, size_t len, uint32_t *out)
{
	uint32_t major = 0, frac = 0, scale = 1000;
	size_t i = 0;

	for (; i < len && v[i] >= '0' && v[i] <= '9'; i++)
		if ((major = major * 10 + (uint32_t)(v[i] - '0')) > 9999)
			return -EINVAL;
	if (i == 0 || i >= len || v[i] != '.')
		return -EINVAL;
	for (i++; i < len && v[i] >= '0' && v[i] <= '9'; i++, scale /= 10)
		frac += (uint32_t)(v[i] - '0') * scale;
	if (i >= len || v[i] != 0)
		return -EINVAL;
	*out = major * 10000 + frac;
	return 0;
}

void roce_pt_xchg_init(struct roce_pt_xchg *x, enum roce_pt_wire wire)
{
	memset(x, 0, sizeof(*x));
	x->state = ROCE_PT_X_VERSION;
	x->last = ROCE_PT_X_FAILED;
	x->wire = wire;
}

/* Over TCP after the MTU: what a message starting with c is ('d' is "done": a keys message
 * starts with the LID, 0000 on RoCE). */
static enum roce_pt_xstate roce_pt_kind(uint8_t c)
{
	if (c == 'd')
		return ROCE_PT_X_DONE;
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
		return ROCE_PT_X_KEYS;
	return ROCE_PT_X_REPORT;
}

size_t roce_pt_xchg_need(const struct roce_pt_xchg *x, int first)
{
	switch (x->state) {
	case ROCE_PT_X_VERSION:
		return ROCE_PT_VERSION_LEN;
	case ROCE_PT_X_CYCLE_BUFFER:
	case ROCE_PT_X_CACHE_LINE:
		return 4;
	case ROCE_PT_X_MTU:
		return 2;
	case ROCE_PT_X_KEYS:
		if (x->wire == ROCE_PT_WIRE_CM)
			return ROCE_PT_KEYS_BIN_LEN;
		if (first < 0)
			return ROCE_PT_DONE_LEN;
		switch (roce_pt_kind((uint8_t)first)) {
		case ROCE_PT_X_KEYS:
			return ROCE_PT_KEYS_TEXT_LEN;
		case ROCE_PT_X_DONE:
			return ROCE_PT_DONE_LEN;
		default:
			return ROCE_PT_REPORT_FIELD_LEN;
		}
	default:
		return 0;
	}
}

static int roce_pt_xchg_fail(struct roce_pt_xchg *x)
{
	x->state = ROCE_PT_X_FAILED;
	x->last = ROCE_PT_X_FAILED;
	return -EPROTO;
}

int roce_pt_xchg_take(struct roce_pt_xchg *x, const void *msg, size_t len, struct roce_pt_dest *rem)
{
	const uint8_t *m = msg;
	enum roce_pt_xstate at = x->state;
	uint32_t v;

	if (at == ROCE_PT_X_KEYS && len) {
		/* keys, a report field, or "done" */
		enum roce_pt_xstate kind = x->wire == ROCE_PT_WIRE_TCP ? roce_pt_kind(m[0])
				       : len == ROCE_PT_REPORT_FIELD_LEN ? ROCE_PT_X_REPORT : ROCE_PT_X_KEYS;
		if (kind == ROCE_PT_X_DONE) {
			if (len != ROCE_PT_DONE_LEN || memcmp(m, "done", ROCE_PT_DONE_LEN))
				return roce_pt_xchg_fail(x);
			x->state = x->last = ROCE_PT_X_DONE;
			return 2;
		}
		if (kind == ROCE_PT_X_REPORT) {
			if (len != ROCE_PT_REPORT_FIELD_LEN || ++x->report_fields > ROCE_PT_REPORT_MAX_FIELDS)
				return roce_pt_xchg_fail(x);
			x->last = ROCE_PT_X_REPORT;
			return 0;
		}
	}
	if (at >= ROCE_PT_X_REPORT || len != roce_pt_xchg_need(x, len ? m[0] : -1))
		return roce_pt_xchg_fail(x);
	switch (at) {
	case ROCE_PT_X_VERSION:
		if (roce_pt_version(msg, len, &v) || v < ROCE_PT_MIN_VERSION)
			return roce_pt_xchg_fail(x);
		x->version = v;
		x->state = ROCE_PT_X_CYCLE_BUFFER;
		break;
	case ROCE_PT_X_CYCLE_BUFFER:
		/* the client's remote addresses cycle in the larger of both: it must fit our buffer */
		if (!(v = be32_load(m)) || v > ROCE_PT_BUF_SIZE)
			return roce_pt_xchg_fail(x);
		x->cycle_buffer = v;
		x->state = ROCE_PT_X_CACHE_LINE;
		break;
	case ROCE_PT_X_CACHE_LINE:
		if (!(v = be32_load(m)) || v > ROCE_PT_BUF_SIZE)
			return roce_pt_xchg_fail(x);
		x->cache_line = v;
		x->state = ROCE_PT_X_MTU;
		break;
	case ROCE_PT_X_MTU:
		if (m[0] < '0' + ROCE_MTU_256 || m[0] > '0' + ROCE_MTU_4096 || m[1] != 0)
			return roce_pt_xchg_fail(x);
		x->mtu = (enum roce_mtu)(m[0] - '0');
		x->state = ROCE_PT_X_KEYS;
		break;
	case ROCE_PT_X_KEYS: {
		struct roce_pt_dest d;
		int rc = x->wire == ROCE_PT_WIRE_TCP ? roce_pt_keys_parse_text(msg, len, &d)
						     : roce_pt_keys_parse_bin(msg, len, &d);
		if (rc)
			return roce_pt_xchg_fail(x);
		*rem = d;
		x->keys++;
		x->report_fields = 0;
		x->last = at;
		return 1;
	}
	default:
		return roce_pt_xchg_fail(x);
	}
	x->last = at;
	return 0;
}

size_t roce_pt_xchg_answer(const struct roce_pt_xchg *x, const struct roce_pt_local *ours, uint8_t *out, size_t cap)
{
	if (cap < ROCE_PT_MSG_MAX)
		return 0;
	switch (x->last) {
	case ROCE_PT_X_VERSION:
		memset(out, 0, ROCE_PT_VERSION_LEN);
		memcpy(out, ROCE_PT_VERSION, sizeof(ROCE_PT_VERSION));
		return ROCE_PT_VERSION_LEN;
	case ROCE_PT_X_CYCLE_BUFFER:
		be32_store(out, ROCE_PT_CYCLE_BUFFER);
		return 4;
	case ROCE_PT_X_CACHE_LINE:
		be32_store(out, ROCE_PT_CACHE_LINE);
		return 4;
	case ROCE_PT_X_MTU:
		out[0] = (uint8_t)('0' + ours->mtu);
		out[1] = 0;
		return 2;
	case ROCE_PT_X_KEYS:
		if (x->wire == ROCE_PT_WIRE_TCP) {
			roce_pt_keys_format_text(&ours->dest, (char *)out);
			return ROCE_PT_KEYS_TEXT_LEN;
		}
		roce_pt_keys_format_bin(&ours->dest, out);
		return ROCE_PT_KEYS_BIN_LEN;
	case ROCE_PT_X_REPORT:
		memset(out, 0, ROCE_PT_REPORT_FIELD_LEN);
		return ROCE_PT_REPORT_FIELD_LEN;
	default:
		return 0;
	}
}
