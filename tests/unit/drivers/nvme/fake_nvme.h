/*
 * fake_nvme.h - a fake NVMe controller for host unit tests of drivers/nvme/nvme.c: a
 * register file behind struct nvme_bus, admin and I/O queues processed when a doorbell is
 * written, one namespace of RAM, PRP/SGL walking like QEMU's (including the CMB rules:
 * the first address decides, lists must be where the data is, CMSE=0 moves no data), and
 * knobs for failures (never ready, fatal status, dropped commands, ignored Abort, a media
 * error status on chosen LBAs).
 *
 * With `vwc` set it models a volatile write cache: a Write (or Write Zeroes, DSM) without
 * FUA lands in `media` (what reads see) but reaches `durable` (what survives power) only at
 * a Flush, a normal shutdown notification (CC.SHN) or when FUA is set;
 * fake_nvme_power_cut() throws the unflushed blocks away. Every command is recorded in
 * order (`rec`), and the command number at which CC.SHN arrived is kept.
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

#define FAKE_REC_MAX 256u

/* One command as the fake received it (in processing order, which is completion order). */
struct fake_rec {
	uint16_t sqid;
	uint8_t opc;
	uint32_t nsid, cdw10, cdw11, cdw12;
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
	uint64_t id_nsze;        /* Identify NSZE/NCAP of namespace 1 (0: FAKE_NSZE; the media stays
				  * FAKE_NSZE blocks: a smaller drive in the old one's place) */
	int drop_opc;            /* I/O opcode that never completes (-1: none) */
	bool drop_aborts;        /* Abort itself never completes */
	bool cfs_on_drop;        /* a dropped command sets CSTS.CFS */
	bool dup_io_cqe;         /* each I/O completion posted twice (a drive's bug: the second
				  * names a command already completed) */
	uint32_t sgls;           /* Identify SGLS */
	uint8_t mdts;            /* Identify MDTS (5: 128 KiB, the default) */
	bool vwc;                /* Identify VWC bit 0 and the volatile cache model */
	uint32_t rtd3e;          /* Identify RTD3E (microseconds) */
	bool shn_never_completes; /* CC.SHN leaves CSTS.SHST at "occurring" */
	bool removed;            /* surprise removal: registers read all-ones, writes are lost */
	uint16_t err_status;     /* I/O status returned for commands touching [err_slba, +err_nlb) */
	uint64_t err_slba, err_nlb;
	bool io_later;           /* an I/O queue's doorbell only records the tail: the commands
				  * run at the next fake_nvme_run() (a drive that answers after
				  * the poll-loop pass that rang it, as QEMU's and any real one) */
	/* state */
	struct fake_q sq[8], cq[8];
	uint8_t *media;          /* what reads return (cache and media) */
	uint8_t *durable;        /* what survives a power cut */
	uint8_t *dirty;          /* one byte per block: in the volatile cache only */
	struct fake_rec rec[FAKE_REC_MAX];
	unsigned nrec;           /* commands recorded (the first FAKE_REC_MAX kept) */
	unsigned shn_at;         /* nrec when CC.SHN (normal) was written; 0 never */
	unsigned shn_count, flushes, fua_writes, power_cuts;
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

/* With io_later set: run the I/O commands whose doorbells were rung since the last call
 * (their completions posted). */
void fake_nvme_run(struct fake_nvme *f);

/* Power is cut: unflushed cached blocks are lost (media := durable), the controller
 * resets (queues gone, CC/CSTS zero). */
void fake_nvme_power_cut(struct fake_nvme *f);
/* Blocks still only in the volatile cache. */
unsigned fake_nvme_dirty_blocks(const struct fake_nvme *f);
/* Index in rec of the n-th (0 first) command with this sqid class (0 admin, -1 any I/O)
 * and opcode, or -1. */
int fake_nvme_find(const struct fake_nvme *f, int sqid, uint8_t opc, unsigned n);

#endif
