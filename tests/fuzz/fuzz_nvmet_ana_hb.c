// sources: drivers/nvme/target/nvmet_ana_hb.c drivers/nvme/target/nvmet_config.c lib/ipv4_text.c lib/log.c lib/clock.c
/*
 * libFuzzer harness: the failover heartbeat's datagram parser and receive path fed
 * arbitrary datagrams from the partner. Invariants: no crash or sanitizer report; a
 * datagram that parses has a valid ANA state and group and is counted as received, one
 * that does not is counted as bad; the takeover decision never fires for an appliance
 * that serves the group.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "drivers/nvme/target/nvmet_ana_hb.h"
#include "lib/log.h"

LOG_MODULE_DEFINE(nvmet); /* nvmet_core.c, which defines it, is not linked */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nvmet_ana_hb hb;
	struct nvmet_ana_hb_msg m;
	uint64_t now = 0;

	nvmet_ana_hb_init(&hb, 0x0a000001, 1, 1, 100);
	/* records: [len byte][len bytes of datagram] */
	for (size_t p = 0; p < size;) {
		size_t len = data[p++];
		if (len > size - p)
			len = size - p;
		uint64_t rx = hb.received, bad = hb.bad, foreign = hb.foreign;
		int ok = nvmet_ana_hb_parse(data + p, len, &m) == 0;
		if (ok)
			assert(m.grpid >= 1 && m.grpid <= NVMET_ANA_GRPMAX && m.anas >= 1 && m.anas <= 0xf);
		nvmet_ana_hb_rx(&hb, 0x0a000001, data + p, len, now, NVMET_ANA_INACCESSIBLE);
		assert(hb.received + hb.bad + hb.foreign == rx + bad + foreign + 1);
		assert(ok ? hb.bad == bad : hb.bad == bad + 1);
		now += 50ull * 1000 * 1000;
		assert(nvmet_ana_hb_tick(&hb, now, NVMET_ANA_OPTIMIZED) == 0);
		p += len;
	}
	return 0;
}
