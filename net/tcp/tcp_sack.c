/*
 * tcp_sack.c - the receiver side of selective acknowledgment (RFC 2018, RFC 2883).
 *
 * When both SYNs carried SACK-permitted, every ACK sent while the out-of-order queue
 * holds data lists the queue's contiguous blocks: first the block holding the most
 * recently received segment, then the blocks of the segments received before it, most
 * recent first, then any others, as many as the option space allows (RFC 2018 section 4).
 * A segment that arrived entirely below RCV.NXT is reported once as a D-SACK block in
 * front of them (RFC 2883 section 4), which lets the sender see spurious retransmissions.
 */
#include "../../lib/byteorder.h"
#include "tcp_internal.h"

/* Remember that a segment starting at seq went to the out-of-order queue: its block is
 * reported first from now on. */
void tcp_sack_note(struct tcp_sock *s, uint32_t seq)
{
	unsigned n = s->sack_nrecent < TCP_SACK_RECENT ? s->sack_nrecent : TCP_SACK_RECENT - 1;
	for (unsigned i = n; i > 0; i--)
		s->sack_recent[i] = s->sack_recent[i - 1];
	s->sack_recent[0] = seq;
	s->sack_nrecent = n + 1;
}

/* The contiguous run of out-of-order data holding byte seq: [*l, *r). false if none. */
static bool block_of(const struct tcp_sock *s, uint32_t seq, uint32_t *l, uint32_t *r)
{
	struct list_node *it;
	bool open = false;
	uint32_t bl = 0, br = 0;

	list_for_each(&s->ooo, it) {
		const struct tcp_rxent *e = container_of(it, struct tcp_rxent, node);
		uint32_t end = e->seq + e->frag.len;
		if (open && e->seq == br) {
			br = end;
		} else {
			if (open && SEQ_LEQ(bl, seq) && SEQ_LT(seq, br))
				break;
			open = true;
			bl = e->seq;
			br = end;
		}
	}
	if (!open || !SEQ_LEQ(bl, seq) || !SEQ_LT(seq, br))
		return false;
	*l = bl;
	*r = br;
	return true;
}

static bool emitted(uint32_t (*b)[2], unsigned n, uint32_t l)
{
	for (unsigned i = 0; i < n; i++)
		if (b[i][0] == l)
			return true;
	return false;
}

/* Write the SACK option of the next ACK into p (at most room bytes, NOP-padded to a
 * multiple of 4): 0 when there is nothing to report or no room for one block. The
 * D-SACK block is reported once. */
size_t tcp_sack_option(struct tcp_sock *s, uint8_t *p, size_t room)
{
	uint32_t b[TCP_SACK_BLOCKS_MAX][2];
	unsigned n = 0, max, keep = 0;
	struct list_node *it;

	if (!s->sack_ok || room < 12)
		return 0;
	max = (unsigned)((room - 4) / 8);
	if (max > TCP_SACK_BLOCKS_MAX)
		max = TCP_SACK_BLOCKS_MAX;
	if (s->dsack) {
		s->dsack = false;
		b[n][0] = s->dsack_start;
		b[n][1] = s->dsack_end;
		n++;
		tcp_counters.dsack_out++;
	}
	/* Recent blocks, newest first; forget entries whose block is gone (delivered). */
	for (unsigned i = 0; i < s->sack_nrecent; i++) {
		uint32_t l, r;
		if (!block_of(s, s->sack_recent[i], &l, &r))
			continue;
		s->sack_recent[keep++] = s->sack_recent[i];
		if (n < max && !emitted(b, n, l)) {
			b[n][0] = l;
			b[n][1] = r;
			n++;
		}
	}
	s->sack_nrecent = keep;
	/* Then the other blocks in sequence order (one pass over the queue). */
	bool open = false;
	uint32_t bl = 0, br = 0;
	list_for_each(&s->ooo, it) {
		const struct tcp_rxent *e = container_of(it, struct tcp_rxent, node);
		if (n >= max)
			break;
		if (open && e->seq == br) {
			br = e->seq + e->frag.len;
			continue;
		}
		if (open && !emitted(b, n, bl)) {
			b[n][0] = bl;
			b[n][1] = br;
			n++;
		}
		open = true;
		bl = e->seq;
		br = e->seq + e->frag.len;
	}
	if (open && n < max && !emitted(b, n, bl)) {
		b[n][0] = bl;
		b[n][1] = br;
		n++;
	}
	if (!n)
		return 0;
	p[0] = TCP_OPT_NOP;
	p[1] = TCP_OPT_NOP;
	p[2] = TCP_OPT_SACK;
	p[3] = (uint8_t)(2 + 8 * n);
	for (unsigned i = 0; i < n; i++) {
		be32_store(p + 4 + 8 * i, b[i][0]);
		be32_store(p + 8 + 8 * i, b[i][1]);
	}
	tcp_counters.sack_blocks_out += n;
	return 4 + 8 * n;
}
