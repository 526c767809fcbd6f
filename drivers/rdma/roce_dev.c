/*
 * roce_dev.c - the RoCE v2 device: attributes, the port (one GID from the interface's
 * IPv4 address, the active path MTU from the interface MTU), object pools.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/byteorder.h"
#include "../../lib/log.h"
#include "roce_internal.h"
#include "roce_wire.h"

LOG_MODULE_DEFINE(rdma);

/* IPv4 (20) + UDP (8) + the longest header run (BTH + RETH + ImmDt, 32; atomics carry no
 * payload) + ICRC (4): what a path MTU's worth of payload needs beyond it. */
#define ROCE_FRAME_OVERHEAD (20 + 8 + 32 + 4)

int roce_table_slot(void *const *tab, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!tab[i])
			return (int)i;
	return -1;
}

unsigned roce_mtu_bytes(enum roce_mtu m)
{
	return (m >= ROCE_MTU_256 && m <= ROCE_MTU_4096) ? 128u << m : 0;
}

void roce_gid_from_ipv4(uint32_t addr, struct roce_gid *out)
{
	memset(out, 0, sizeof(*out));
	out->raw[10] = out->raw[11] = 0xff;
	out->raw[12] = (uint8_t)(addr >> 24);
	out->raw[13] = (uint8_t)(addr >> 16);
	out->raw[14] = (uint8_t)(addr >> 8);
	out->raw[15] = (uint8_t)addr;
}

int roce_gid_to_ipv4(const struct roce_gid *gid, uint32_t *out)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (memcmp(gid->raw, prefix, sizeof(prefix)))
		return -EINVAL;
	*out = be32_load(gid->raw + 12);
	return 0;
}

int roce_dev_init(struct roce_dev **out, const char *name)
{
	struct roce_dev *dev;
	int rc;

	if (!(dev = calloc(1, sizeof(*dev))))
		return -ENOMEM;
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	dev->port.max_mtu = ROCE_MTU_4096;
	dev->port.active_mtu = ROCE_MTU_1024;
	dev->port.pkey = ROCE_PKEY_DEFAULT;
	dev->qp_gen = 1;
	if ((rc = mm_pool_init(&dev->pd_pool, "roce_pd", sizeof(struct roce_pd), ROCE_MAX_PD)))
		goto fail_free;
	if ((rc = mm_pool_init(&dev->mr_pool, "roce_mr", sizeof(struct roce_mr), ROCE_MAX_MR)))
		goto fail_pd;
	if ((rc = mm_pool_init(&dev->cq_pool, "roce_cq", sizeof(struct roce_cq), ROCE_MAX_CQ)))
		goto fail_mr;
	if ((rc = mm_pool_init(&dev->srq_pool, "roce_srq", sizeof(struct roce_srq), ROCE_MAX_SRQ)))
		goto fail_cq;
	if ((rc = mm_pool_init(&dev->qp_pool, "roce_qp", sizeof(struct roce_qp), ROCE_MAX_QP)))
		goto fail_srq;
	*out = dev;
	return 0;

fail_srq:
	mm_pool_destroy(&dev->srq_pool);
fail_cq:
	mm_pool_destroy(&dev->cq_pool);
fail_mr:
	mm_pool_destroy(&dev->mr_pool);
fail_pd:
	mm_pool_destroy(&dev->pd_pool);
fail_free:
	free(dev);
	return rc;
}

int roce_dev_destroy(struct roce_dev *dev)
{
	if (dev->pd_pool.in_use || dev->mr_pool.in_use || dev->cq_pool.in_use || dev->srq_pool.in_use ||
	    dev->qp_pool.in_use)
		return -EBUSY;
	mm_pool_destroy(&dev->qp_pool);
	mm_pool_destroy(&dev->srq_pool);
	mm_pool_destroy(&dev->cq_pool);
	mm_pool_destroy(&dev->mr_pool);
	mm_pool_destroy(&dev->pd_pool);
	free(dev);
	return 0;
}

void roce_dev_set_addr(struct roce_dev *dev, uint32_t addr, unsigned mtu)
{
	enum roce_mtu m = ROCE_MTU_256;

	dev->addr = addr;
	dev->mtu = mtu;
	dev->port.gid_valid = addr != 0;
	roce_gid_from_ipv4(addr, &dev->port.gid);
	/* the largest path MTU whose full packets fit the interface MTU (256 at least) */
	for (enum roce_mtu c = ROCE_MTU_4096; c > ROCE_MTU_256; c--) {
		if (mtu >= ROCE_FRAME_OVERHEAD && roce_mtu_bytes(c) <= mtu - ROCE_FRAME_OVERHEAD) {
			m = c;
			break;
		}
	}
	dev->port.active_mtu = m;
}

void roce_query_device(const struct roce_dev *dev, struct roce_dev_attr *out)
{
	(void)dev;
	*out = (struct roce_dev_attr){
		.max_qp = ROCE_MAX_QP, .max_qp_wr = ROCE_MAX_WR, .max_sge = ROCE_MAX_SGE, .max_cq = ROCE_MAX_CQ,
		.max_cqe = ROCE_MAX_CQE, .max_mr = ROCE_MAX_MR, .max_pd = ROCE_MAX_PD, .max_srq = ROCE_MAX_SRQ,
		.max_qp_rd_atom = ROCE_MAX_RD_ATOMIC, .max_qp_init_rd_atom = ROCE_MAX_RD_ATOMIC,
		.max_mr_size = UINT64_MAX,
	};
}

void roce_query_port(const struct roce_dev *dev, struct roce_port_attr *out)
{
	*out = dev->port;
}

int roce_query_gid(const struct roce_dev *dev, unsigned index, struct roce_gid *out)
{
	if (index != 0 || !dev->port.gid_valid)
		return -EINVAL;
	*out = dev->port.gid;
	return 0;
}

/* --- PD ------------------------------------------------------------------------------ */

int roce_alloc_pd(struct roce_dev *dev, struct roce_pd **out)
{
	int slot = roce_table_slot((void *const *)dev->pds, ROCE_MAX_PD);
	struct roce_pd *pd;

	if (slot < 0 || !(pd = mm_pool_zalloc(&dev->pd_pool)))
		return -ENOMEM;
	pd->dev = dev;
	pd->index = (unsigned)slot;
	dev->pds[slot] = pd;
	*out = pd;
	return 0;
}

int roce_dealloc_pd(struct roce_pd *pd)
{
	struct roce_dev *dev = pd->dev;
	if (pd->users)
		return -EBUSY;
	dev->pds[pd->index] = NULL;
	mm_pool_free(&dev->pd_pool, pd);
	return 0;
}
