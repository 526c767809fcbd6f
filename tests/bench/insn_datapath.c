/*
 * insn_datapath.c - instructions per I/O on the executable data path
 * (tests/unit/datapath/datapath.h): the real net/, NVMe/TCP target and NVMe host driver
 * core over the fake NIC (with the e1000e's offloads: header split, receive and transmit
 * checksums, transmit gather from device memory) and the fake drive, run under Debian's
 * valgrind --tool=callgrind by tools/bench/insn.py.
 *
 * For each job (4 KiB and 128 KiB writes and reads, no digests; then 4 KiB with data
 * digests; then 4 KiB and 128 KiB reads whose data the drive writes into its CMB and the
 * NIC gathers from there, as the CMB mode serves reads; then 4 KiB writes and reads at
 * queue depth 16, the judge's, against a host that acknowledges as Linux's does) the host
 * connects once, runs a few I/Os to warm the pools and the TCP windows,
 * then runs N I/Os with callgrind collecting and dumps one profile per job
 * ("job <name> <N>"). Collection is off everywhere else (setup, checks, teardown), so
 * each dump holds the poll-loop passes, the host's frames and the fakes of N I/Os;
 * tools/bench/insn.py keeps only the appliance's own code from it. Every I/O's bytes are
 * checked (outside the collection) and the teardown must find every pool empty, so a
 * count is never taken on a broken path.
 *
 *   insn_datapath [N]    N I/Os per job (default 64); exit 0 when every job ran clean
 */
// sources: tests/unit/datapath/datapath.c drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c tests/unit/net/fake_netdev.c mm/pool.c mm/dma.c lib/timer.c lib/log.c drivers/nvme/target/nvmet_tcp.c drivers/nvme/target/nvmet_dram_reason.c drivers/nvme/target/nvmet_tcp_buf.c drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_config.c drivers/nvme/target/nvmet_bdev_nvme.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/nvme.c drivers/nvme/nvme_shutdown.c lib/shutdown.c drivers/nvme/nvme_reset.c drivers/nvme/nvme_prp.c drivers/nvme/nvme_queue.c drivers/nvme/nvme_cmb.c drivers/nvme/nvme_status.c lib/crc32.c tests/unit/drivers/nvme/fake_nvme.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c tests/unit/drivers/nvme/target/nvme_tcp_host.c tests/unit/unit_support.c lib/clock.c
// libs: -lcriterion -lmbedcrypto
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>
#include "mm/pool.h"
#include "tests/unit/datapath/datapath.h"

#define WARMUP 4
#define MAX_LEN (128u * 1024)

struct job {
	const char *name;
	bool write, ddgst, cmb; /* cmb: read data in the drive's CMB, as the CMB mode serves reads */
	uint32_t len;
	unsigned qd; /* 0: one I/O at a time; else QD_BATCH in-capsule writes sent back to back, or
		      * reads kept at this queue depth, against a host that acknowledges as Linux's */
};

#define QD_BATCH 16

static const struct job jobs[] = {
	{ "write-4k", true, false, false, 4096, 0 },
	{ "read-4k", false, false, false, 4096, 0 },
	{ "write-128k", true, false, false, MAX_LEN, 0 },
	{ "read-128k", false, false, false, MAX_LEN, 0 },
	{ "write-4k-ddgst", true, true, false, 4096, 0 },
	{ "read-4k-ddgst", false, true, false, 4096, 0 },
	{ "read-4k-cmb", false, false, true, 4096, 0 },
	{ "read-128k-cmb", false, false, true, MAX_LEN, 0 },
	{ "write-4k-qd16", true, false, false, 4096, QD_BATCH },
	{ "read-4k-qd16", false, false, false, 4096, QD_BATCH },
};

static struct dp d;
static uint8_t wbuf[MAX_LEN], rbuf[MAX_LEN];

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 131 + seed + (i >> 9));
}

/* One I/O of job j at slot i (its own LBA range), checked; 0 or -1 with a message. */
static int one_io(const struct job *j, unsigned i, bool collect)
{
	uint64_t slba = (uint64_t)(i % 8) * (MAX_LEN / 512);
	uint16_t cid = (uint16_t)(1 + i % 60), status = 0xffff;
	int rc;

	fill(wbuf, j->len, i);
	if (!j->write) /* what the read must find: written outside the collection */
		memcpy(d.drive.media + slba * 512, wbuf, j->len);
	if (collect)
		CALLGRIND_TOGGLE_COLLECT;
	rc = j->write ? dp_write(&d, cid, slba, wbuf, j->len, &status) : dp_read(&d, cid, slba, rbuf, j->len, &status);
	if (collect)
		CALLGRIND_TOGGLE_COLLECT;
	if (rc || status) {
		fprintf(stderr, "insn: %s I/O %u: rc %d status 0x%x: %s\n", j->name, i, rc, status, d.why);
		return -1;
	}
	if (memcmp(j->write ? d.drive.media + slba * 512 : rbuf, wbuf, j->len)) {
		fprintf(stderr, "insn: %s I/O %u: wrong bytes %s\n", j->name, i, j->write ? "on the drive" : "read back");
		return -1;
	}
	return 0;
}

/* n I/Os of a queue-depth job (j->qd), collected or not: writes in rounds of QD_BATCH
 * CapsuleCmds sent back to back, each round's media checked; reads as a stream kept at
 * j->qd (dp_read_stream checks every read's bytes). 0 or -1 with a message. */
static int qd_ios(const struct job *j, unsigned n, unsigned round, bool collect)
{
	static uint16_t status[QD_BATCH];
	unsigned max_ms;
	int rc = 0;

	if (collect)
		CALLGRIND_TOGGLE_COLLECT;
	if (!j->write) {
		rc = dp_read_stream(&d, j->qd, n, 8, j->len, 0, &max_ms);
	} else {
		for (unsigned k = 0; k < n && rc == 0; k += QD_BATCH) {
			uint64_t slba = (uint64_t)((round + k / QD_BATCH) % 2) * QD_BATCH * (j->len / 512);
			if (collect)
				CALLGRIND_TOGGLE_COLLECT;
			fill(wbuf, (size_t)QD_BATCH * j->len, round + k);
			if (collect)
				CALLGRIND_TOGGLE_COLLECT;
			rc = dp_write_capsules(&d, (uint16_t)(1 + (k / QD_BATCH % 2) * QD_BATCH), QD_BATCH, slba, wbuf,
					       j->len, status);
			for (unsigned i = 0; i < QD_BATCH && rc == 0; i++)
				rc = status[i] ? -1 : 0;
			if (collect)
				CALLGRIND_TOGGLE_COLLECT;
			if (rc == 0 && memcmp(d.drive.media + slba * 512, wbuf, (size_t)QD_BATCH * j->len))
				rc = -1;
			if (collect)
				CALLGRIND_TOGGLE_COLLECT;
		}
	}
	if (collect)
		CALLGRIND_TOGGLE_COLLECT;
	if (rc)
		fprintf(stderr, "insn: %s: rc %d: %s\n", j->name, rc, d.why);
	return rc ? -1 : 0;
}

static int run_job(const struct job *j, unsigned n)
{
	char what[64];
	struct dp_opts o = { .ddgst = j->ddgst,
			     .nic_features = NETDEV_F_RX_SPLIT | NETDEV_F_RX_CSUM | NETDEV_F_TX_CSUM |
					     NETDEV_F_TX_GATHER_DEV,
			     .cmb_reads = j->cmb,
			     .drive_later = true,
			     .host_ack_bytes = j->qd ? 2 * DP_MSS : 0 };
	int rc = dp_start_opts(&d, &o);
	if (rc) {
		fprintf(stderr, "insn: %s: start: %s\n", j->name, d.why);
		return -1;
	}
	uint64_t passes = 0, in = 0, out = 0;
	if (j->qd) {
		/* the media the reads check, then a warm-up round and n collected I/Os */
		fill(d.drive.media, 8 * (size_t)j->len, 7);
		n = (n + QD_BATCH - 1) / QD_BATCH * QD_BATCH;
		rc = qd_ios(j, QD_BATCH, 0, false);
		passes = d.passes, in = d.frames_in, out = d.frames_out;
		if (rc == 0)
			rc = qd_ios(j, n, 1, true);
	}
	for (unsigned i = 0; !j->qd && i < WARMUP + n && rc == 0; i++) {
		if (i == WARMUP)
			passes = d.passes, in = d.frames_in, out = d.frames_out;
		rc = one_io(j, i, i >= WARMUP);
	}
	passes = d.passes - passes, in = d.frames_in - in, out = d.frames_out - out;
	if (rc == 0 && j->cmb && dp_cmb_allocs < WARMUP + n) {
		fprintf(stderr, "insn: %s: %u reads took device memory for their data, not %u\n", j->name,
			dp_cmb_allocs, WARMUP + n);
		rc = -1;
	}
	snprintf(what, sizeof(what), "job %s %u", j->name, n);
	CALLGRIND_DUMP_STATS_AT(what);
	if (dp_stop(&d)) {
		fprintf(stderr, "insn: %s: stop: %s\n", j->name, d.why);
		return -1;
	}
	if (rc == 0) /* tools/bench/insn.py reads this line */
		printf("job %s: %u I/Os, %llu poll-loop passes, %llu frames in, %llu frames out\n", j->name, n,
		       (unsigned long long)passes, (unsigned long long)in, (unsigned long long)out);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 64;
	int bad = 0;

	if (n == 0 || n > 100000) {
		fprintf(stderr, "usage: insn_datapath [N I/Os per job, 1..100000]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		bad |= run_job(&jobs[i], n) != 0;
	return bad;
}
