/*
 * nvme_cmb.c - Controller Memory Buffer register decoding (CMBLOC/CMBSZ), the same for the
 * legacy scheme (valid from reset) and NVMe 1.4 (valid once CMBMSC.CRE is set).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "nvme.h"

/* Decode CMBLOC/CMBSZ into sizes and allowed uses. */
int nvme_cmb_decode(uint32_t cmbloc, uint32_t cmbsz, struct nvme_cmb_info *out)
{
	memset(out, 0, sizeof(*out));
	out->cmbloc = cmbloc;
	out->cmbsz = cmbsz;
	if (cmbsz == 0)
		return -ENODEV;
	unsigned szu = NVME_GET(cmbsz, NVME_CMBSZ_SZU);
	unsigned bir = NVME_GET(cmbloc, NVME_CMBLOC_BIR);
	uint64_t sz = NVME_GET(cmbsz, NVME_CMBSZ_SZ);
	uint64_t ofst = NVME_GET(cmbloc, NVME_CMBLOC_OFST);
	if (szu > 6)
		return -EINVAL;        /* SZU 7..15 reserved */
	if (bir == 1 || bir > 5)
		return -EINVAL;        /* BIR 1 is the upper half of 64-bit BAR0; 6, 7 reserved */
	if (sz == 0)
		return -ENODEV;
	out->unit = 4096ull << (4 * szu);  /* 4 KiB, 64 KiB, 1 MiB, 16 MiB, 256 MiB, 4 GiB, 64 GiB */
	out->bir = bir;
	out->size = sz * out->unit;        /* at most 2^20 x 2^36: fits */
	out->offset = ofst * out->unit;
	out->sqs = cmbsz & NVME_CMBSZ_SQS;
	out->cqs = cmbsz & NVME_CMBSZ_CQS;
	out->lists = cmbsz & NVME_CMBSZ_LISTS;
	out->rds = cmbsz & NVME_CMBSZ_RDS;
	out->wds = cmbsz & NVME_CMBSZ_WDS;
	return 0;
}

/* The allowed uses as words. */
char *nvme_cmb_uses_str(const struct nvme_cmb_info *ci, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s%s%s", ci->sqs ? "SQS " : "", ci->cqs ? "CQS " : "",
		 ci->lists ? "LISTS " : "", ci->rds ? "RDS " : "", ci->wds ? "WDS " : "");
	size_t n = strlen(buf);
	if (n && buf[n - 1] == ' ')
		buf[n - 1] = 0;
	return buf;
}
