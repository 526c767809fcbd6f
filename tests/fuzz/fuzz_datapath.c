// sources: tests/unit/datapath/datapath.c drivers/nic/netdev.c net/net.c lib/ipv4_text.c net/arp.c net/ipv4.c net/udp.c net/tcp/tcp.c net/tcp/tcp_in.c net/tcp/tcp_admit.c net/tcp/tcp_pools.c net/tcp/tcp_isn.c tests/unit/net/fake_entropy.c net/tcp/tcp_hdr.c net/tcp/tcp_out.c net/tcp/tcp_budget.c net/tcp/tcp_sack.c net/tcp/tcp_service.c tests/unit/net/fake_netdev.c mm/pool.c mm/dma.c lib/timer.c lib/log.c drivers/nvme/target/nvmet_tcp.c drivers/nvme/target/nvmet_dram_reason.c drivers/nvme/target/nvmet_tcp_buf.c drivers/nvme/target/nvmet_tcp_rx.c drivers/nvme/target/nvmet_tcp_pdu.c drivers/nvme/target/nvmet_core.c drivers/nvme/target/nvmet_fabrics.c drivers/nvme/target/nvmet_auth.c drivers/nvme/target/nvmet_auth_msg.c drivers/nvme/target/nvmet_auth_key.c lib/crypto.c drivers/nvme/target/nvmet_admin.c drivers/nvme/target/nvmet_ana.c drivers/nvme/target/nvmet_referral.c drivers/nvme/target/nvmet_io.c drivers/nvme/target/nvmet_config.c drivers/nvme/target/nvmet_bdev_nvme.c drivers/nvme/target/nvmet_bdev_ram.c drivers/nvme/nvme.c drivers/nvme/nvme_shutdown.c lib/shutdown.c drivers/nvme/nvme_reset.c drivers/nvme/nvme_prp.c drivers/nvme/nvme_queue.c drivers/nvme/nvme_cmb.c drivers/nvme/nvme_status.c lib/crc32.c tests/unit/drivers/nvme/fake_nvme.c tests/unit/drivers/nvme/target/fake_nvmet_transport.c tests/unit/drivers/nvme/target/nvme_tcp_host.c lib/clock.c
// libs: -lmbedcrypto
/*
 * libFuzzer harness: the executable data path (tests/unit/datapath/datapath.h) driven by
 * the input. The host connects (the first byte chooses data digests), then the input is
 * a list of operations on the I/O queue: a write of 1..256 blocks at a chosen LBA
 * (in-capsule when it fits, else R2T + H2CData), a read, or raw bytes the host sends.
 * Invariants: no crash or sanitizer report; until the first raw bytes, every read returns
 * what the writes left (a shadow of the drive); at the end, whatever the I/O connection
 * holds, a new controller on two fresh connections gets a Write and a Read through
 * (dp_liveness); after the host leaves, every connection, queue and controller is freed,
 * every NIC buffer back and every pool empty.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/clock.h"
#include "tests/unit/datapath/datapath.h"
#include "tests/unit/unit_support.h"

/* The fake clock the harness and the fake drive use (unit tests link unit_support.c). */
static uint64_t clock_ns;
static uint64_t clock_now(void)
{
	return clock_ns;
}
void fake_clock_install(void)
{
	clock_set_source(clock_now);
}
void fake_clock_set(uint64_t ns)
{
	clock_ns = ns;
}
void fake_clock_advance(uint64_t ns)
{
	clock_ns += ns;
}

static struct dp d;
static uint8_t shadow[FAKE_NSZE * 512];
static uint8_t buf[256 * 512];

static void die(const char *what)
{
	fprintf(stderr, "fuzz_datapath: %s: %s\n", what, d.why);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t p = 1;
	bool raw = false;
	uint16_t cid = 1;

	if (size < 1)
		return 0;
	if (dp_start(&d, data[0] & 1))
		die("start");
	memset(shadow, 0, sizeof(shadow));
	while (p + 3 <= size) {
		uint8_t op = data[p], a = data[p + 1], b = data[p + 2];
		uint32_t nlb = 1 + (uint32_t)a % 256, len = nlb * 512;
		uint64_t slba = ((uint64_t)b * 8) % (FAKE_NSZE - nlb + 1);
		uint16_t status;
		p += 3;
		cid = (uint16_t)(cid % 60 + 1);
		if ((op & 3) == 0) {
			for (uint32_t i = 0; i < len; i++)
				buf[i] = (uint8_t)(i * 7 + op);
			if (dp_write(&d, cid, slba, buf, len, &status))
				break;
			if (!raw && status == 0)
				memcpy(shadow + slba * 512, buf, len);
		} else if ((op & 3) == 1) {
			if (dp_read(&d, cid, slba, buf, len, &status))
				break;
			if (!raw && status == 0 && memcmp(buf, shadow + slba * 512, len))
				die("a read did not return what was written");
		} else {
			size_t n = (size_t)a + 1 < size - p ? (size_t)a + 1 : size - p;
			raw = true;
			if (dp_send_raw(&d, data + p, n))
				break;
			p += n;
		}
	}
	if (dp_liveness(&d))
		die("liveness: another session is not served");
	if (dp_stop(&d))
		die("stop");
	return 0;
}
