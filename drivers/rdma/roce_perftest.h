/*
 * roce_perftest.h - the server side of perftest's bandwidth tests (ib_send_bw, ib_write_bw,
 * ib_read_bw, ib_atomic_bw; linux-rdma/perftest 4.5, protocol version 6.06) on rxe0.
 *
 * A perftest client first talks to its server over an out-of-band channel, then runs the
 * test on an RC QP. The channel is either TCP port 18515 (the default; shared with the
 * ibv_rc_pingpong server, which hands us its clients that do not speak its own message) or,
 * with -z or -R, an RC QP connected by rdma_cm to port 18515, whose messages are SENDs. On
 * the channel the client writes and the server answers, message for message:
 *   version      16 bytes, a NUL-terminated "M.mm" (we refuse < 5.70 as perftest does)
 *   cycle buffer 4 bytes, big-endian: the area the client's remote addresses cycle in
 *   cache line   4 bytes, big-endian: the step between those addresses
 *   path MTU     2 bytes, "%d" of the IBV_MTU code and a NUL; both sides take the smaller
 *   then any number of, in the order the test (send, write, read, atomic) has them:
 *   keys         LID, out_reads, QPN, PSN, R_Key, VA, GID, SRQN: over TCP as text
 *                "%04x:%04x:%06x:%06x:%08x:%016llx:" + 16 x "%02x:" + "%08x:" + NUL (108 bytes),
 *                over rdma_cm as struct pingpong_dest with big-endian fields (56 bytes)
 *   report       after a WRITE/READ/atomic run, the client's bandwidth report one 8-byte
 *                big-endian field at a time (size, iterations, peak, average, message rate,
 *                and four more with --report-per-port); we answer each with zeros (we
 *                measure nothing, as perftest's own passive server)
 *   "done"       TCP only, 5 bytes, then the client closes
 * Over TCP the first byte tells them apart: 'd' starts "done", a hex digit keys (their LID is 0000),
 * anything else a report field (a big-endian size, count or double starts with 0x00 or 0x3f/0x40).
 * The first keys message names the client's QP: we create ours, connect it towards the
 * client's QPN/PSN/GID and answer with our QPN, PSN, R_Key and buffer. With -R the first keys
 * carry no QP (QPN 0): the client then connects its data QP by rdma_cm to the same port, and
 * that second REQ from the same peer is taken as the session's data connection. Later keys
 * messages are synchronisation points and get the same answer.
 *
 * The server is passive and serves every test at once: a buffer of ROCE_PT_BUF_SIZE bytes open
 * to remote write, read and atomics (the client's remote addresses stay within its cycle buffer
 * or one message), and ROCE_PT_RECVS receives posted on it (SEND; overlapping, as perftest's
 * own server does). Bounded: ROCE_PT_MAX sessions, ROCE_PT_MAX_PER_PEER per client address,
 * one data QP per session (perftest -q 1), messages up to ROCE_PT_BUF_SIZE, no duplex (-b).
 */
#ifndef DRIVERS_RDMA_ROCE_PERFTEST_H
#define DRIVERS_RDMA_ROCE_PERFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "roce_cm.h"
#include "roce_verbs.h"

#define ROCE_PT_PORT 18515
#define ROCE_PT_MAX 4
#define ROCE_PT_MAX_PER_PEER 2
#define ROCE_PT_BUF_SIZE 65536u
#define ROCE_PT_RECVS 128            /* receive WRs kept posted on a data QP */
#define ROCE_PT_CYCLE_BUFFER 4096u   /* what we announce (perftest's default page size) */
#define ROCE_PT_CACHE_LINE 64u
#define ROCE_PT_OUT_READS ROCE_MAX_RD_ATOMIC
#define ROCE_PT_IDLE_NS (30ull * 1000000000ull)  /* a session without progress this long is closed */

#define ROCE_PT_VERSION "6.06"       /* the protocol revision we speak (perftest's VERSION) */
#define ROCE_PT_VERSION_LEN 16
#define ROCE_PT_MIN_VERSION 57000u   /* 5.70 in units of 1/10000 */
#define ROCE_PT_KEYS_TEXT_LEN 108
#define ROCE_PT_KEYS_BIN_LEN 56
#define ROCE_PT_DONE_LEN 5           /* "done" and its NUL */
#define ROCE_PT_REPORT_FIELD_LEN 8
#define ROCE_PT_REPORT_MAX_FIELDS 9  /* a report with --report-per-port; more in a row is refused */
#define ROCE_PT_MSG_MAX ROCE_PT_KEYS_TEXT_LEN

/* How the out-of-band messages travel. */
enum roce_pt_wire { ROCE_PT_WIRE_TCP, ROCE_PT_WIRE_CM };

/* One side's struct pingpong_dest (what a keys message carries). */
struct roce_pt_dest {
	uint16_t lid;
	uint32_t out_reads, qpn, psn, rkey, srqn;
	uint64_t vaddr;
	struct roce_gid gid;
};

/* The exchange, from the server's side: which client message comes next. */
enum roce_pt_xstate {
	ROCE_PT_X_VERSION, ROCE_PT_X_CYCLE_BUFFER, ROCE_PT_X_CACHE_LINE, ROCE_PT_X_MTU,
	ROCE_PT_X_KEYS,              /* keys, report fields, "done" */
	ROCE_PT_X_REPORT,            /* (only as `last`: a report field was taken) */
	ROCE_PT_X_DONE,              /* the client said "done" */
	ROCE_PT_X_FAILED,            /* a bad message: the session ends */
};

/* What we answer with (the keys are filled in by the caller once it has acted on the client's). */
struct roce_pt_local {
	enum roce_mtu mtu;
	struct roce_pt_dest dest;
};

struct roce_pt_xchg {
	enum roce_pt_xstate state;
	enum roce_pt_wire wire;
	enum roce_pt_xstate last;    /* the kind of the message taken last (what the answer is) */
	uint32_t version;            /* the client's, in units of 1/10000 */
	uint32_t cycle_buffer, cache_line;
	enum roce_mtu mtu;           /* the client's path MTU code */
	unsigned keys;               /* keys messages taken */
	unsigned report_fields;      /* report fields in a row */
};

/* Start an exchange over wire. */
void roce_pt_xchg_init(struct roce_pt_xchg *x, enum roce_pt_wire wire);

/* Bytes of the next client message, whose first byte is first (over TCP after the MTU the
 * kind depends on it; pass -1 when no byte has come yet: the answer is then the least that
 * may come). 0 once done or failed. */
size_t roce_pt_xchg_need(const struct roce_pt_xchg *x, int first);

/* Take one client message of len bytes (over TCP: what roce_pt_xchg_need asked for; over
 * rdma_cm: one SEND's payload). Returns 1 for a keys message (rem filled: act on it, then
 * answer), 0 for another message to answer, 2 for "done" (nothing to answer), -EPROTO for a
 * message that is not perftest's or that we refuse (an old version, a cycle buffer larger than
 * our buffer, an MTU code out of range); the exchange then stays FAILED. */
int roce_pt_xchg_take(struct roce_pt_xchg *x, const void *msg, size_t len, struct roce_pt_dest *rem);

/* The answer to the message just taken into out (cap bytes at least ROCE_PT_MSG_MAX).
 * Returns its length, 0 when there is none. */
size_t roce_pt_xchg_answer(const struct roce_pt_xchg *x, const struct roce_pt_local *ours, uint8_t *out, size_t cap);

/* A keys message, parsed (-EINVAL unless it is exactly the format above) and formatted. */
int roce_pt_keys_parse_text(const char *msg, size_t len, struct roce_pt_dest *out);
void roce_pt_keys_format_text(const struct roce_pt_dest *d, char out[ROCE_PT_KEYS_TEXT_LEN]);
int roce_pt_keys_parse_bin(const uint8_t *msg, size_t len, struct roce_pt_dest *out);
void roce_pt_keys_format_bin(const struct roce_pt_dest *d, uint8_t out[ROCE_PT_KEYS_BIN_LEN]);

/* --- the server ------------------------------------------------------------------------ */

struct tcp_sock;
struct roce_net;

enum roce_pt_state {
	ROCE_PT_FREE,
	ROCE_PT_CONNECTING,          /* rdma_cm channel: REP sent */
	ROCE_PT_EXCHANGE,            /* the channel is up, no data QP yet */
	ROCE_PT_WAIT_DATA_CONN,      /* -R: waiting for the client's data connection */
	ROCE_PT_RUNNING,             /* the data QP is connected: the test may run */
};

struct roce_pt_session {
	enum roce_pt_state state;
	struct roce_pt *pt;
	uint32_t peer;               /* IPv4, host order */
	struct roce_pt_xchg x;
	struct roce_pt_local ours;
	struct tcp_sock *sock;       /* TCP channel */
	struct roce_cm_conn *ctl_conn;  /* rdma_cm channel */
	struct roce_qp *ctl_qp;
	struct roce_cm_conn *data_conn; /* -R */
	struct roce_qp *qp;          /* the data QP */
	struct roce_cq *cq;          /* both QPs' completions */
	struct roce_mr *mr;          /* the data buffer: remote write, read, atomics */
	struct roce_mr *ctl_mr;      /* channel messages (local access only) */
	uint8_t *mem;                /* ROCE_PT_BUF_SIZE of data, then 2 x ROCE_PT_MSG_MAX of channel buffers */
	uint64_t last;               /* the last progress (ns) */
	uint32_t last_epsn;          /* the data QP's responder ePSN at the last look */
	uint64_t recvs, recv_bytes;
};

struct roce_pt_stats {
	uint64_t sessions, refused, errors, tcp, cm, data_conns;
	uint64_t recvs, recv_bytes, reads, atomics, messages;  /* of ended sessions' data QPs */
};

struct roce_pt {
	struct roce_net *rn;
	struct roce_pd *pd;
	struct roce_pt_session s[ROCE_PT_MAX];
	struct roce_pt_stats st;
};

/* Create the PD and listen on rdma_cm port ROCE_PT_PORT (TCP clients come through
 * roce_pt_adopt). 0 or errno. */
int roce_pt_start(struct roce_pt *pt, struct roce_net *rn);
void roce_pt_stop(struct roce_pt *pt);

/* A TCP client of port 18515 whose first bytes (already received, not read) are not
 * ibv_rc_pingpong's: take it over. 0, or -EBUSY (no session free for it: the caller closes). */
int roce_pt_adopt(struct roce_pt *pt, struct tcp_sock *sock);

/* Drive the sessions (channel messages, completions, idle limit). Returns the work done. */
int roce_pt_poll(struct roce_pt *pt, uint64_t now);

const char *roce_pt_state_name(enum roce_pt_state s);

#endif
