/*
 * fake_nvme.h - a fake NVMe controller for host unit tests of drivers/nvme/nvme.c: a
 * register file behind struct nvme_bus, admin and I/O queues processed when a doorbell is
 * written, one namespace of RAM, PRP/SGL walking like QEMU's (including the CMB rules:
 * the first address decides, lists must be where the data is, CMSE=0 moves no data), and
 * knobs for failures (never ready, fatal status, dropped commands, ignored Abort).
 */
#ifndef TESTS_UNIT_DRIVERS_NVME_FAKE_NVME_H
#define TESTS_UNIT_DRIVERS_NVME_FAKE_NVME_H

#include <stdbool.h>
#include <stdint.h>
#include "drivers/nvme/nvme.h"

#define FAKE_NSZE 2048u          /* blocks of 512 bytes: 1 MiB */
#define FAKE_CMB_SIZE (4u << 20) /* 4 x 1 MiB units */

struct fake_q {
	uint64_t base;
	uint16_t depth, head, tail, cqid;
	uint8_t phase;
	bool live;
};

struct fake_nvme {
	/* registers */
	uint64_t cap;
	uint32_t vs, cc, csts, aqa;
	uint64_t asq, acq;
	uint32_t cmbloc, cmbsz, cmbsts;
	uint64_t cmbmsc;
	/* knobs */
	bool never_ready, cfs_on_enable, cmb_v14, cmb_legacy, ignore_cmse, ns_absent;
	int drop_opc;            /* I/O opcode that never completes (-1: none) */
	bool drop_aborts;        /* Abort itself never completes */
	bool cfs_on_drop;        /* a dropped command sets CSTS.CFS */
	uint32_t sgls;           /* Identify SGLS */
	/* state */
	struct fake_q sq[8], cq[8];
	uint8_t *media;
	uint8_t *cmb;            /* the CMB's memory; its bus address is its pointer */
	bool cmse;
	int held_sqid, held_cid;
	/* counters */
	unsigned disables, enables, aborts, commands, io_commands, held;
	unsigned cmb_silent_drops; /* CMSE=0 transfers that "succeeded" moving nothing */
	uint16_t last_status;
	uint32_t last_psdt;
	/* the bus interface handed to the driver */
	struct nvme_bus bus;
	unsigned dma_live;       /* dma_alloc - dma_free */
};

/* Reset the fake to a healthy 1.4 controller with one namespace and SGL support. */
void fake_nvme_init(struct fake_nvme *f);
void fake_nvme_fini(struct fake_nvme *f);

#endif
