/*
 * fake_cmb.c - the fake device memory of fake_cmb.h.
 */
#include "fake_cmb.h"
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "fake_tcp.h"

static uint8_t cmb[FCMB_SIZE] __attribute__((aligned(4096)));
static bool used[FCMB_SIZE / FCMB_GRANULE];
unsigned fcmb_in_use, fcmb_allocs;
int fcmb_reach_rc, fcmb_alloc_rc;
uint16_t fcmb_provider = 1;
bool fcmb_peer_refused;

void fcmb_reset(void)
{
	memset(used, 0, sizeof(used));
	fcmb_in_use = fcmb_allocs = 0;
	fcmb_reach_rc = fcmb_alloc_rc = 0;
	fcmb_provider = 1;
	fcmb_peer_refused = false;
}

static int reach(const struct nvmet_bdev *b, uint16_t provider, const char **why)
{
	(void)b;
	*why = fcmb_reach_rc ? "forced by the test" : NULL;
	if (fcmb_reach_rc)
		return fcmb_reach_rc;
	if (provider == fcmb_provider)
		return 0;
	if (provider == 1 && fcmb_peer_refused) {
		*why = "another device's memory (peer_sgl off)";
		return -EXDEV;
	}
	return provider == 1 ? 0 : -ENODEV;
}

static int alloc(const struct nvmet_bdev *b, uint32_t len, struct netdev_frag *out, const char **why)
{
	unsigned need = (len + FCMB_GRANULE - 1) / FCMB_GRANULE, run = 0;
	(void)b;
	*why = fcmb_alloc_rc ? "forced by the test" : NULL;
	if (fcmb_alloc_rc)
		return fcmb_alloc_rc;
	for (unsigned i = 0; i < FCMB_SIZE / FCMB_GRANULE; i++) {
		run = used[i] ? 0 : run + 1;
		if (run < need)
			continue;
		unsigned first = i + 1 - need;
		for (unsigned k = first; k <= i; k++)
			used[k] = true;
		fcmb_in_use += need;
		fcmb_allocs++;
		memset(out, 0, sizeof(*out));
		out->addr = (dma_addr_t){ (uint64_t)(uintptr_t)(cmb + first * FCMB_GRANULE), MEM_CLASS_DEVICE };
		out->offset = first * FCMB_GRANULE;
		out->len = len;
		out->provider = fcmb_provider;
		return 0;
	}
	*why = "fake CMB full";
	return -ENOMEM;
}

static void release(const struct netdev_frag *f)
{
	unsigned first = (unsigned)(f->offset / FCMB_GRANULE), n = (f->len + FCMB_GRANULE - 1) / FCMB_GRANULE;
	if (f->addr.cls != MEM_CLASS_DEVICE || first + n > FCMB_SIZE / FCMB_GRANULE)
		ftcp_violation("fake CMB: freeing memory it did not hand out");
	for (unsigned k = first; k < first + n; k++) {
		if (!used[k])
			ftcp_violation("fake CMB: granule freed twice");
		used[k] = false;
	}
	fcmb_in_use -= n;
}

const struct nvmet_tcp_mem_ops fcmb_ops = { .reach = reach, .alloc = alloc, .free = release };
