/*
 * nvmet_bdev_ram.c - a RAM-disk namespace backend (unit tests, fuzzing, demos): blocks
 * in heap memory, every I/O completed inside submit. Segments are reached through the
 * identity map, like every CPU access the target makes to request data.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nvmet.h"

static int ram_copy(struct nvmet_bdev *b, const struct nvmet_bio *bio, bool write)
{
	uint8_t *disk = b->priv;
	uint64_t pos = bio->slba << b->lba_shift, left = (uint64_t)bio->nlb << b->lba_shift;

	for (unsigned i = 0; i < bio->nsg && left; i++) {
		uint64_t n = bio->sg[i].len < left ? bio->sg[i].len : left;
		uint8_t *p = (uint8_t *)(uintptr_t)bio->sg[i].addr.bus;
		if (write)
			memcpy(disk + pos, p, n);
		else
			memcpy(p, disk + pos, n);
		pos += n;
		left -= n;
	}
	return left ? -EINVAL : 0;
}

static bool in_range(const struct nvmet_bdev *b, uint64_t slba, uint64_t nlb)
{
	return slba <= b->nblocks && nlb <= b->nblocks - slba;
}

static int ram_submit(struct nvmet_bdev *b, struct nvmet_bio *bio)
{
	uint8_t *disk = b->priv;
	int rc = 0;

	switch (bio->op) {
	case NVMET_BIO_READ:
	case NVMET_BIO_WRITE:
		rc = in_range(b, bio->slba, bio->nlb) ? ram_copy(b, bio, bio->op == NVMET_BIO_WRITE) : -ERANGE;
		break;
	case NVMET_BIO_FLUSH:
		break;
	case NVMET_BIO_WRITE_ZEROES:
		if (!in_range(b, bio->slba, bio->nlb))
			rc = -ERANGE;
		else
			memset(disk + (bio->slba << b->lba_shift), 0, (size_t)bio->nlb << b->lba_shift);
		break;
	case NVMET_BIO_DSM: {
		/* deallocated blocks read as zeroes */
		uint64_t off = 0;
		for (uint32_t r = 0; r < bio->nlb && rc == 0; r++) {
			uint8_t range[16];
			uint32_t got = 0;
			for (unsigned i = 0, base = 0; i < bio->nsg && got < 16; base += bio->sg[i].len, i++) {
				const uint8_t *p = (const uint8_t *)(uintptr_t)bio->sg[i].addr.bus;
				while (got < 16 && off + got >= base && off + got < base + bio->sg[i].len) {
					range[got] = p[off + got - base];
					got++;
				}
			}
			if (got < 16) {
				rc = -EINVAL;
				break;
			}
			uint32_t nlb = le32_load(range + 4);
			uint64_t slba = le64_load(range + 8);
			if (!in_range(b, slba, nlb))
				rc = -ERANGE;
			else
				memset(disk + (slba << b->lba_shift), 0, (size_t)nlb << b->lba_shift);
			off += 16;
		}
		break;
	}
	default:
		return -EOPNOTSUPP;
	}
	bio->done(bio, rc);
	return 0;
}

static void ram_close(struct nvmet_bdev *b)
{
	free(b->priv);
	b->priv = NULL;
}

static const struct nvmet_bdev_ops ram_ops = {
	.submit = ram_submit,
	.close = ram_close,
};

int nvmet_bdev_ram_open(struct nvmet_bdev *b, uint64_t nblocks, unsigned lba_shift)
{
	if (lba_shift < 9 || lba_shift > 12 || nblocks == 0 || nblocks > (1ull << 32) >> lba_shift)
		return -EINVAL;
	memset(b, 0, sizeof(*b));
	if (!(b->priv = calloc(1, (size_t)nblocks << lba_shift)))
		return -ENOMEM;
	b->ops = &ram_ops;
	b->nblocks = nblocks;
	b->lba_shift = lba_shift;
	b->write_zeroes = true;
	b->dsm = true;
	snprintf(b->name, sizeof(b->name), "ram%llu", (unsigned long long)nblocks);
	return 0;
}
