/*
 * fake_odp_store.c - the in-memory ODP store of the host tests (see fake_odp_store.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/unit/drivers/rdma/fake_odp_store.h"

static int fake_submit(void *ctx, struct roce_odp_io *io)
{
	struct fake_store *s = ctx;
	int rc;

	if (s->fail_submit) {
		rc = s->fail_submit;
		s->fail_submit = 0;
		return rc;
	}
	if (s->busy) {
		s->busy--;
		return -EBUSY;
	}
	if (s->nq == FAKE_STORE_MAXQ)
		return -EBUSY;
	if (io->op != ROCE_ODP_IO_FLUSH && (io->offset > s->size || io->len > s->size - io->offset))
		return -ERANGE;
	s->q[s->nq++] = io;
	return 0;
}

static void fake_describe(void *ctx, char *buf, unsigned cap)
{
	struct fake_store *s = ctx;
	snprintf(buf, cap, "fake %llu B", (unsigned long long)s->size);
}

static const struct roce_odp_store_ops fake_ops = { .submit = fake_submit, .describe = fake_describe };

uint8_t fake_store_pattern(uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 12) * 13 + 1);
}

void fake_store_init(struct fake_store *s, uint64_t size)
{
	memset(s, 0, sizeof(*s));
	s->size = size;
	s->disk = malloc(size);
	s->durable = malloc(size);
	if (!s->disk || !s->durable)
		abort();
	for (uint64_t i = 0; i < size; i++)
		s->disk[i] = fake_store_pattern(i);
	memcpy(s->durable, s->disk, size);
	s->store = (struct roce_odp_store){ .ops = &fake_ops, .ctx = s, .size = size };
}

void fake_store_fini(struct fake_store *s)
{
	free(s->disk);
	free(s->durable);
	s->disk = s->durable = NULL;
}

unsigned fake_store_complete(struct fake_store *s, unsigned n)
{
	unsigned done = 0;
	while (s->nq && (n == 0 || done < n)) {
		struct roce_odp_io *io = s->q[0];
		int rc = s->fail_complete;
		s->fail_complete = 0;
		memmove(&s->q[0], &s->q[1], (s->nq - 1) * sizeof(s->q[0]));
		s->nq--;
		if (!rc) {
			void *mem = (void *)(uintptr_t)io->mem.bus;
			switch (io->op) {
			case ROCE_ODP_IO_READ:
				memcpy(mem, s->disk + io->offset, io->len);
				s->reads++;
				break;
			case ROCE_ODP_IO_WRITE:
				memcpy(s->disk + io->offset, mem, io->len);
				s->writes++;
				break;
			case ROCE_ODP_IO_FLUSH:
				memcpy(s->durable, s->disk, s->size);
				s->flushes++;
				break;
			}
		}
		io->done(io, rc);
		done++;
	}
	return done;
}
