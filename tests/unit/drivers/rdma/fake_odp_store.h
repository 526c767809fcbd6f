/*
 * fake_odp_store.h - an ODP store for host tests: a disk in memory whose commands queue
 * until the test completes them (oldest first), with refusals (queue full) and failures
 * on demand, and a copy of the disk as of the last completed flush ("durable").
 */
#ifndef TESTS_UNIT_FAKE_ODP_STORE_H
#define TESTS_UNIT_FAKE_ODP_STORE_H

#include <stdint.h>
#include "drivers/rdma/roce_odp.h"

#define FAKE_STORE_MAXQ 1024

struct fake_store {
	uint8_t *disk, *durable;
	uint64_t size;
	struct roce_odp_io *q[FAKE_STORE_MAXQ];
	unsigned nq;
	unsigned busy;               /* refuse the next `busy` submits with -EBUSY */
	int fail_submit;             /* the next submit fails with this (then 0) */
	int fail_complete;           /* the next completion fails with this (then 0) */
	uint64_t reads, writes, flushes;
	struct roce_odp_store store;
};

/* A store of size bytes (disk filled with fake_store_pattern). */
void fake_store_init(struct fake_store *s, uint64_t size);
void fake_store_fini(struct fake_store *s);
/* The byte the fresh disk holds at offset off. */
uint8_t fake_store_pattern(uint64_t off);
/* Complete up to n queued commands, oldest first (n = 0: all, including those the
 * completions queue). Returns how many were completed. */
unsigned fake_store_complete(struct fake_store *s, unsigned n);

#endif
