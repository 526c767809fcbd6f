/*
 * tcp_pools.c - the stack's host-memory pools shared by all sockets, with a share per
 * socket so that a few peers cannot starve the rest (DESIGN rule 10).
 *
 * Two pools are drawn by what peers do: chunks (TCP_CHUNK_SIZE bytes of host memory for
 * copied bytes: tcp_send_copy, and payload of frames the NIC did not split) and send
 * entries (one per queued fragment). Each is split into
 *   - a reserve of R per socket (TCP_CHUNK_RESERVE, TCP_SNDENT_RESERVE) that only the
 *     socket's sending uses, so TCP_SOCKETS x R fits the pool: a socket can always queue
 *     a few PDUs, however full the pool is;
 *   - a shared part (the rest), from which a socket borrows at most TCP_*_BORROW_MAX
 *     (an eighth of it): a zero-window peer with a full 256 KiB send queue (chargen)
 *     holds at most that, and it takes at least eight of them to empty the shared part.
 * Received chunks always borrow (dropping a received segment is a loss the peer
 * repairs; a send that cannot queue is back-pressure, see tcp.h). A send entry of a
 * socket's reserve that comes back stays the socket's for its next one
 * (tcp_sndent_give: a 4 KiB read's three entries without the pool round trips); with the
 * entries it holds they never exceed its reserve, and they go back to the pool with it.
 *
 * A chunk or entry records its socket, the socket's slot in the socket pool and its id:
 * when the slot no longer has that id, the socket is gone (the memory came back after it:
 * a user still held received chunks) and the memory was counted as borrowed when it went.
 */
#include <errno.h>
#include <string.h>
#include "../../mm/pool.h"
#include "tcp_internal.h"

_Static_assert(TCP_CHUNK_SHARED > 8 * (TCP_SND_BUF / TCP_CHUNK_SIZE) / 2, "chunk pool: room for 4+ full send queues");
_Static_assert(TCP_SNDENT_SHARED > 0, "send entry pool smaller than its reserves");

/* A chunk's bookkeeping, in front of its data. */
struct tcp_chunk_hdr {
	struct tcp_sock *s;
	uint64_t sock_id;
	uint16_t slot;
	bool rx;              /* borrowed for received bytes (no reserve) */
	uint8_t pad[13];
};
_Static_assert(sizeof(struct tcp_chunk_hdr) == 32, "chunk header");

static struct mm_pool tcp_chunk_pool;
static uint64_t tcp_sock_ids;
static uint64_t slot_ids[TCP_SOCKETS];  /* id of the live socket in each slot, 0: none */
unsigned tcp_chunks_borrowed, tcp_sndents_borrowed;


/* Is the socket that had id still alive at slot? (Never touches a freed socket.) */
static bool alive(uint16_t slot, uint64_t id)
{
	return slot < TCP_SOCKETS && slot_ids[slot] == id;
}

/* Is the socket that had id at slot still that socket? A slot is the socket's place in
 * the socket pool: while its id is there, the pointer the caller holds is good. */
bool tcp_sock_alive(uint16_t slot, uint64_t id)
{
	return alive(slot, id);
}

/* May s take one more chunk (rx: for received bytes)? Counts it when so. */
static bool chunk_take(struct tcp_sock *s, bool rx)
{
	if (!rx && s->chunks_tx < TCP_CHUNK_RESERVE) {
		s->chunks_tx++;
		return true;
	}
	if (tcp_chunk_borrowed(s) >= TCP_CHUNK_BORROW_MAX || tcp_chunks_borrowed >= TCP_CHUNK_SHARED) {
		tcp_counters.chunk_share_denied++;
		return false;
	}
	if (rx)
		s->chunks_rx++;
	else
		s->chunks_tx++;
	tcp_chunks_borrowed++;
	return true;
}

static inline void chunk_give(struct tcp_sock *s, bool rx)
{
	unsigned before = tcp_chunk_borrowed(s);
	if (rx)
		s->chunks_rx--;
	else
		s->chunks_tx--;
	tcp_chunks_borrowed -= before - tcp_chunk_borrowed(s);
}

static void chunk_release(struct netdev_frag_owner *o, uint64_t token)
{
	struct tcp_chunk_hdr *h = (struct tcp_chunk_hdr *)(uintptr_t)token;
	(void)o;
	if (alive(h->slot, h->sock_id))
		chunk_give(h->s, h->rx);
	else
		tcp_chunks_borrowed--;
	mm_pool_free(&tcp_chunk_pool, h);
}
static struct netdev_frag_owner tcp_chunk_owner = { "tcp-chunk", chunk_release };
struct netdev_frag_owner *const tcp_chunk_owner_p = &tcp_chunk_owner;

int tcp_chunk_frag(struct tcp_sock *s, bool rx, const void *src, size_t len, struct netdev_frag *f)
{
	struct tcp_chunk_hdr *h;
	uint8_t *c;

	if (!chunk_take(s, rx))
		return -ENOBUFS;
	if (!(h = mm_pool_alloc(&tcp_chunk_pool))) {
		chunk_give(s, rx);
		return -ENOBUFS;
	}
	h->s = s;
	h->sock_id = s->id;
	h->slot = s->slot;
	h->rx = rx;
	c = (uint8_t *)(h + 1);
	if (len) { /* (tcp_send_place takes an empty chunk: no call into the C library for 0 bytes) */
		memcpy(c, src, len);
		dma_account_cpu(MEM_CLASS_HOST, len);
	}
	memset(f, 0, sizeof(*f));
	f->addr = dma_addr_host(c);
	f->len = (uint32_t)len;
	f->provider = NETDEV_PROVIDER_HOST;
	f->token = (uint64_t)(uintptr_t)h;
	f->owner = &tcp_chunk_owner;
	return 0;
}

unsigned tcp_chunk_rx_room(const struct tcp_sock *s)
{
	unsigned mine = TCP_CHUNK_BORROW_MAX > tcp_chunk_borrowed(s) ? TCP_CHUNK_BORROW_MAX - tcp_chunk_borrowed(s) : 0;
	unsigned pool = TCP_CHUNK_SHARED > tcp_chunks_borrowed ? TCP_CHUNK_SHARED - tcp_chunks_borrowed : 0;
	return mine < pool ? mine : pool;
}

/* --- send entries ------------------------------------------------------------------ */

struct tcp_sndent *tcp_sndent_alloc_slow(struct tcp_sock *s)
{
	struct tcp_sndent *e;
	if (!tcp_sndent_room(s) || !(e = mm_pool_alloc(&tcp_sndent_pool)))
		return NULL;
	if (s->sndents++ >= TCP_SNDENT_RESERVE)
		tcp_sndents_borrowed++;
	tcp_sndent_init(e, s);
	return e;
}

void tcp_sndent_free_unlocked(struct tcp_sndent *e)
{
	struct tcp_sock *s = e->sock;
	if (e->frag.owner) /* (an entry holding its bytes itself has none) */
		netdev_frag_release(&e->frag);
	if (alive(e->slot, e->sock_id)) {
		tcp_sndent_give(s, e);
		if (s->send_refused)
			tcp_send_wake(s); /* room came back after the ACK: tell the waiting user */
	} else {
		tcp_sndents_borrowed--;
		mm_pool_free(&tcp_sndent_pool, e);
	}
}

/* --- lifecycle ------------------------------------------------------------------- */

/* A socket's id: memory it leaves behind is recognised as an orphan. */
void tcp_pools_sock_new(struct tcp_sock *s, unsigned slot)
{
	s->id = ++tcp_sock_ids;
	s->slot = (uint16_t)slot;
	s->snd_spare = NULL;
	slot_ids[slot] = s->id;
}

/* s is freed: what it still holds (chunks a user holds, entries the NIC still reads)
 * stays counted as borrowed until it comes back. */
void tcp_pools_sock_gone(struct tcp_sock *s)
{
	while (s->snd_spare) { /* (the entries it kept, tcp_sndent_give: nobody refers to them) */
		struct tcp_sndent *e = container_of(s->snd_spare, struct tcp_sndent, node);
		s->snd_spare = e->node.next;
		mm_pool_free(&tcp_sndent_pool, e);
	}
	tcp_chunks_borrowed += s->chunks_tx - tcp_pool_over(s->chunks_tx, TCP_CHUNK_RESERVE);
	tcp_sndents_borrowed += s->sndents - tcp_pool_over(s->sndents, TCP_SNDENT_RESERVE);
	slot_ids[s->slot] = 0;
	s->id = 0;
}

int tcp_pools_init(void)
{
	tcp_chunks_borrowed = tcp_sndents_borrowed = 0;
	memset(slot_ids, 0, sizeof(slot_ids));
	return mm_pool_init(&tcp_chunk_pool, "tcp_chunk", sizeof(struct tcp_chunk_hdr) + TCP_CHUNK_SIZE, TCP_CHUNKS);
}

bool tcp_pools_busy(void)
{
	return tcp_chunk_pool.in_use != 0;
}

void tcp_pools_fini(void)
{
	mm_pool_destroy(&tcp_chunk_pool);
}
