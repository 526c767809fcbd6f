/*
 * datapath.h - the executable data path: a host's NVMe/TCP session through the REAL
 * network stack (net/: Ethernet, ARP, IPv4, TCP), the REAL NVMe-oF target
 * (drivers/nvme/target/: transport, framing, core) and the REAL NVMe host driver core
 * (drivers/nvme/) over a fake NIC (tests/unit/net/fake_netdev.c, e1000e-style header
 * split, payload in "device memory") and a fake drive (tests/unit/drivers/nvme/
 * fake_nvme.c). It is docs/architecture.md's data path made runnable: the unit test
 * (test_datapath.c), a libFuzzer target (tests/fuzz/fuzz_datapath.c) and what the
 * performance work counts instructions on.
 *
 * Deterministic: the clock is the fake clock of tests/unit/unit_support.h (the fuzzer
 * brings its own; it moves only when the host or the fake drive waits), the
 * poll loop is run pass by pass as core/loop.c runs it (every registered poller, then
 * due timers), and the host is a minimal TCP peer: nothing is lost on the wire, and what
 * the appliance does not acknowledge (a segment it dropped) the host sends again from its
 * first unacknowledged byte after DP_RTO_STEPS ms, as a TCP retransmission timeout does.
 */
#ifndef TESTS_UNIT_DATAPATH_DATAPATH_H
#define TESTS_UNIT_DATAPATH_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "drivers/nvme/nvme.h"
#include "drivers/nvme/target/nvmet_config.h"
#include "tests/unit/drivers/nvme/fake_nvme.h"
#include "tests/unit/net/fake_netdev.h"

#define DP_HOST_ADDR 0x0a0a0001u      /* 10.10.0.1: the host (the appliance is net's default) */
#define DP_PORT 4420
#define DP_MSS 1460
#define DP_STREAM_MAX (512u * 1024)   /* bytes from the target not yet parsed, per connection */
#define DP_WAIT_STEPS 2000            /* clock steps of 1 ms a host waits at most (2 s) */
#define DP_RTO_STEPS 200              /* a host resends its first unacknowledged segment after 200 ms */
#define DP_SENT_MAX (512u * 1024)     /* bytes a host keeps for retransmission, per connection */
#define DP_HOST_WSCALE 7              /* the window scale a host offers when asked to (RFC 7323) */
#define DP_SUBNQN "nqn.2026-11.org.p2pstore:dp"
#define DP_BURST_MAX 64               /* segments a host sends back to back form one receive batch
				       * (the e1000e hands a poll up to its budget of 64 frames) */

/* The host's end of one TCP connection. */
struct dp_conn {
	uint16_t sport;
	uint32_t snd_nxt, snd_una, snd_wnd;  /* what the host sent, what the target acknowledged */
	uint32_t rcv_nxt, acked;             /* what the host received, what it acknowledged */
	bool established, reset;
	uint8_t snd_ws;                      /* the appliance's window scale (0: none) */
	unsigned idle_steps;                 /* steps without an acknowledgement while data is out */
	bool delack_armed;                   /* received bytes wait for a delayed ACK (dp_opts) */
	uint64_t delack_since;               /* since this clock step */
	bool adv_small;                      /* the last window advertised a stream over half full */
	uint8_t stream[DP_STREAM_MAX];       /* received bytes not yet parsed as PDUs */
	size_t len;
	uint8_t sent[DP_SENT_MAX];           /* what the host sent, by sequence number modulo the size */
};

struct dp {
	struct fake_netdev nic;
	struct fake_nvme drive;
	struct nvme_ctrl ctrl;
	struct nvmet_config cfg;
	struct dp_conn adm, io;
	struct dp_conn live_adm, live_io;    /* dp_liveness()'s session */
	uint16_t cntlid;
	bool ddgst;                          /* data digests on the I/O connection */
	bool wscale;                         /* the host offers window scaling, as Linux does */
	bool seg_batches;                    /* each segment a receive batch of its own (dp_opts) */
	uint32_t host_cwnd;                  /* bytes the host keeps unacknowledged at most (0: the window) */
	uint32_t host_ack_bytes;             /* the host acknowledges once this much is unacknowledged
					      * (0: at once), else after host_delack_ms (dp_opts) */
	unsigned host_delack_ms;
	uint64_t passes;                     /* poll-loop passes run */
	uint64_t steps;                      /* clock steps (1 ms) the hosts waited */
	uint64_t frames_in, frames_out;      /* host -> appliance, appliance -> host */
	char why[160];                       /* the last failure */
};

/* Bring everything up and connect a host: the drive initialised and registered, the
 * stack on the fake NIC, the target started from a one-namespace configuration on
 * nvme0n1, then TCP + ICReq + Connect (+ CC.EN) on the admin queue and TCP + ICReq +
 * Connect on I/O queue 1. 0, or -errno with d->why. */
int dp_start(struct dp *d, bool ddgst);

/* dp_start with the fake NIC offering nic_features (NETDEV_F_*) instead of header split
 * alone: the instruction count (tests/bench/insn_datapath.c) gives it the e1000e's
 * offloads so that the stack does not checksum in software what the NIC checks. */
int dp_start_nic(struct dp *d, bool ddgst, uint32_t nic_features);

/* What dp_start_opts sets up beyond dp_start's defaults. */
struct dp_opts {
	bool ddgst;                          /* data digests on the I/O connection */
	uint32_t nic_features;               /* NETDEV_F_* (and FAKE_NETDEV_PLAIN) */
	bool wscale;                         /* the host offers window scaling, as Linux does (the
					      * appliance may then open windows beyond 64 KiB) */
	uint8_t mdts;                        /* the drive's MDTS; 0: the fake's (128 KiB) */
	bool seg_batches;                    /* every segment a receive batch of its own (the batch
					      * ends before the next segment comes); default: what a
					      * host sends back to back (up to DP_BURST_MAX segments) is
					      * one batch, as the e1000e hands a burst to one poll */
	uint32_t host_cwnd;                  /* a congestion window: the host sends no more than this
					      * many bytes beyond what the appliance acknowledged */
	uint32_t host_ack_bytes;             /* delayed ACKs as Linux's: the host acknowledges once
					      * this many received bytes are unacknowledged (2 MSS: every
					      * second full segment), else host_delack_ms (default 40)
					      * after the first of them; 0: every pass acknowledges.
					      * Set, the host also advertises the room its stream
					      * buffer has (DP_STREAM_MAX), as a receiver with a buffer */
	unsigned host_delack_ms;
	bool cmb_reads;                      /* read data in the drive's CMB (device memory the drive
					      * writes and the NIC gathers from), as the CMB mode
					      * serves reads; default: through DRAM */
	bool drive_later;                    /* the drive runs the I/O commands rung in a pass at the
					      * start of the next (fake_nvme.io_later), as QEMU's and a
					      * real drive answer microseconds after the doorbell, long
					      * after the pass that rang it; default: at the doorbell */
};

/* dp_start with the options of o. */
int dp_start_opts(struct dp *d, const struct dp_opts *o);

/* A slow drive: its completions are reaped at most once per ms milliseconds of the clock
 * (0: at every poll-loop pass, the default). */
void dp_drive_period(struct dp *d, unsigned ms);

/* Write len bytes at slba (512-byte blocks): in-capsule when it fits in the target's
 * in-capsule size, else after the target's R2T through H2CData PDUs. 0 with *status (the
 * NVMe status, SCT << 8 | SC), or -errno (d->why). */
int dp_write(struct dp *d, uint16_t cid, uint64_t slba, const void *buf, uint32_t len, uint16_t *status);

/* Queue depth n at once, as Linux's host does: n Writes of len bytes (R2T + H2CData),
 * every CapsuleCmd sent first, then each R2T answered with its H2CData as it comes, until
 * every command completed. Command i (cid cid0 + i) writes slot i % slots: len bytes from
 * buf + slot * len at slba + slot * len / 512 (commands of the same slot carry the same
 * bytes, so the media's contents do not depend on the drive's order). 0 with status[i], or
 * -errno (d->why). */
int dp_write_burst(struct dp *d, uint16_t cid0, unsigned n, unsigned slots, uint64_t slba, const void *buf,
		   uint32_t len, uint16_t *status);

/* Queue depth n with in-capsule writes (len <= the in-capsule size): the n CapsuleCmds
 * sent back to back (each as the windows allow), then the n responses collected. Command i
 * (cid cid0 + i) writes len bytes from buf at slba + i * len / 512. 0 with status[i], or
 * -errno (d->why). */
int dp_write_capsules(struct dp *d, uint16_t cid0, unsigned n, uint64_t slba, const void *buf, uint32_t len,
		      uint16_t *status);

/* Reads at queue depth qd, as fio drives Linux's host: total Reads of len bytes (at most
 * 128 KiB), read i of slot i % slots (slba i % slots * len / 512), a new one sent as soon as
 * one completes (CID 0x100 + i % qd), each CapsuleCmd a segment of its own that shares a
 * receive batch with whatever the host sends before the loop runs (ACKs, other capsules);
 * every ka_every reads (0: never) a Keep Alive on the admin queue, answered alongside.
 * Every read's bytes are checked against the drive's media; *max_ms is the longest a read
 * took in clock time. 0, or -errno (d->why: a read not answered within DP_WAIT_STEPS). */
int dp_read_stream(struct dp *d, unsigned qd, unsigned total, unsigned slots, uint32_t len, unsigned ka_every,
		   unsigned *max_ms);

/* Read len bytes at slba into buf: C2HData then CapsuleResp (or C2HData SUCCESS). */
int dp_read(struct dp *d, uint16_t cid, uint64_t slba, void *buf, uint32_t len, uint16_t *status);

/* The host sends raw bytes on the I/O connection (fuzzing), then runs the loop. */
int dp_send_raw(struct dp *d, const void *buf, size_t len);

/* Liveness: whatever the I/O connection holds (fuzzing), the host opens two fresh
 * connections, connects a new controller and an I/O queue on them, writes 512 bytes in
 * the capsule at LBA 0 and reads them back, then resets both. 0, or -errno (d->why). */
int dp_liveness(struct dp *d);

/* Disconnect (the host resets both connections), stop the target, the stack, the drive.
 * 0 when every connection, queue and controller is freed, every NIC buffer is back, every
 * pool is empty and every DMA allocation of the drive freed; else -1 with d->why. */
int dp_stop(struct dp *d);

/* Device-memory pieces (dp_opts.cmb_reads) handed out for read data and not yet freed. */
unsigned dp_cmb_in_use(void);

/* Device-memory buffers (dp_opts.cmb_reads) handed out for read data since dp_start. */
extern unsigned dp_cmb_allocs;

/* One poll-loop pass (every registered poller, then due timers): its progress. */
unsigned dp_pass(struct dp *d);

#endif
