/*
 * nvme_prp.c - describing a scatter list to the controller: PRP entries and PRP lists, or
 * SGL Data Block descriptors in (Last) Segments. Pure functions over dma_addr_t: they never
 * dereference the data, only write the list area they are given.
 *
 * PRP rules (NVMe 1.4 4.3): PRP1 may start anywhere dword aligned; every further entry is a
 * page address; when more than two pages are touched PRP2 points to a list whose last entry,
 * when the page is full and entries remain, points to the next list page.
 * SGL rules (4.4): byte-granular (or dword with SGLS 10b); the descriptors' lengths must add up
 * exactly to the transfer (NLB x block size) since the controller has no bit bucket; a
 * segment that is not the last ends with a Segment descriptor (or Last Segment descriptor
 * when the next segment is the final one).
 */
#include <errno.h>
#include <string.h>
#include <stddef.h>
#include "nvme_priv.h"

/* Sum of the entries' lengths. */
int64_t nvme_sg_total(const struct nvme_sg *sg, unsigned n)
{
	uint64_t total = 0;
	if (!sg || n == 0 || n > NVME_MAX_SG)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (sg[i].len == 0)
			return -EINVAL;
		total += sg[i].len; /* n <= 256 entries of < 4 GiB: no overflow */
	}
	return (int64_t)total;
}

/* The one memory class of all entries. */
int nvme_sg_class(const struct nvme_sg *sg, unsigned n)
{
	if (!sg || n == 0)
		return -EINVAL;
	for (unsigned i = 1; i < n; i++)
		if (sg[i].addr.cls != sg[0].addr.cls)
			return -EINVAL;
	return sg[0].addr.cls;
}

/* PRP shape check. */
bool nvme_prp_possible(const struct nvme_sg *sg, unsigned n, uint32_t page_size)
{
	uint64_t mask = page_size - 1;
	if (!sg || n == 0 || (sg[0].addr.bus & 3))
		return false;
	for (unsigned i = 0; i < n; i++) {
		if (sg[i].len == 0)
			return false;
		if (i > 0 && (sg[i].addr.bus & mask))
			return false;
		if (i + 1 < n && ((sg[i].addr.bus + sg[i].len) & mask))
			return false;
	}
	return true;
}

/* Walk of the PRP entries of a scatter list: entry k is the k-th page touched. */
struct prp_walk {
	const struct nvme_sg *sg;
	unsigned n, i;
	uint64_t pos, end;   /* current address and end of the current entry */
	uint64_t mask;
};

static void walk_start(struct prp_walk *w, const struct nvme_sg *sg, unsigned n, uint64_t mask)
{
	w->sg = sg;
	w->n = n;
	w->i = 0;
	w->pos = sg[0].addr.bus;
	w->end = sg[0].addr.bus + sg[0].len;
	w->mask = mask;
}

/* The next entry, or false at the end. */
static bool walk_next(struct prp_walk *w, uint64_t *entry)
{
	if (w->pos >= w->end) {
		if (++w->i >= w->n)
			return false;
		w->pos = w->sg[w->i].addr.bus;
		w->end = w->pos + w->sg[w->i].len;
	}
	*entry = w->pos;
	w->pos = (w->pos & ~w->mask) + w->mask + 1; /* start of the next page */
	return true;
}

/* Build PRP1/PRP2 and the PRP list. */
int nvme_prp_build(const struct nvme_sg *sg, unsigned n, uint32_t page_size,
		   const struct nvme_list_mem *list, uint64_t *prp1, uint64_t *prp2,
		   size_t *list_bytes)
{
	struct prp_walk w;
	uint64_t e, entries = 0;

	*prp1 = *prp2 = 0;
	*list_bytes = 0;
	if (page_size < 4096 || (page_size & (page_size - 1)) || !nvme_prp_possible(sg, n, page_size))
		return -EINVAL;
	walk_start(&w, sg, n, page_size - 1);
	while (walk_next(&w, &e))
		entries++;
	walk_start(&w, sg, n, page_size - 1);
	walk_next(&w, prp1);
	if (entries == 1)
		return 0;
	if (entries == 2) {
		walk_next(&w, prp2);
		return 0;
	}

	/* entries - 1 list entries; each full page but the last gives one slot to the chain */
	uint64_t per = page_size / 8, left = entries - 1;
	uint64_t pages = left <= per ? 1 : 1 + (left - per + (per - 1) - 1) / (per - 1);
	if (!list || !list->cpu || pages * page_size > list->bytes || (list->addr.bus & (page_size - 1)))
		return -E2BIG;
	volatile le64_t *slot = list->cpu; /* PRP entries are little-endian */
	uint64_t page = 0, idx = 0;
	while (left) {
		if (idx == per - 1 && left > 1) {
			/* last slot of a full page with more to come: chain to the next list page */
			slot[page * per + idx] = le64_make(list->addr.bus + (page + 1) * page_size);
			page++;
			idx = 0;
			continue;
		}
		walk_next(&w, &e);
		slot[page * per + idx] = le64_make(e);
		idx++;
		left--;
	}
	*prp2 = list->addr.bus;
	*list_bytes = (size_t)(page * per + idx) * 8;
	return 0;
}

/* Build SGL1 and the segments. */
int nvme_sgl_build(const struct nvme_sg *sg, unsigned n, uint64_t total, uint32_t page_size,
		   bool dword, const struct nvme_list_mem *list, struct nvme_sgl_desc *sgl1,
		   size_t *list_bytes)
{
	*list_bytes = 0;
	memset(sgl1, 0, sizeof(*sgl1));
	int64_t sum = nvme_sg_total(sg, n);
	if (sum < 0 || (uint64_t)sum != total)
		return -EINVAL;       /* the SGL must describe exactly NLB x block size bytes */
	return nvme_sgl_build_summed(sg, n, page_size, dword, list, sgl1, list_bytes);
}

/* Build SGL1 and the segments of a scatter list the caller checked and summed. */
int nvme_sgl_build_summed(const struct nvme_sg *sg, unsigned n, uint32_t page_size, bool dword,
			  const struct nvme_list_mem *list, struct nvme_sgl_desc *sgl1, size_t *list_bytes)
{
	*list_bytes = 0;
	memset(sgl1, 0, sizeof(*sgl1));
	if (page_size < 4096 || (page_size & (page_size - 1)))
		return -EINVAL;
	if (dword)
		for (unsigned i = 0; i < n; i++)
			if ((sg[i].addr.bus & 3) || (sg[i].len & 3))
				return -EINVAL;
	if (n == 1) {
		nvme_sgl_desc_put(sgl1, sg[0].addr.bus, sg[0].len, NVME_SGL_TYPE_DATA_BLOCK);
		return 0;
	}

	unsigned per = page_size / sizeof(struct nvme_sgl_desc);
	if (n <= per) {
		/* one Last Segment of n Data Blocks (a few NIC buffers: the common gather) */
		if (!list || !list->cpu || page_size > list->bytes || (list->addr.bus & 15))
			return -E2BIG;
		volatile struct nvme_sgl_desc *d = list->cpu;
		nvme_sgl_desc_put(sgl1, list->addr.bus, n * (uint32_t)sizeof(*d), NVME_SGL_TYPE_LAST_SEGMENT);
		for (unsigned k = 0; k < n; k++)
			nvme_sgl_desc_put(&d[k], sg[k].addr.bus, sg[k].len, NVME_SGL_TYPE_DATA_BLOCK);
		*list_bytes = n * sizeof(*d);
		return 0;
	}
	/* segment s holds per - 1 data descriptors plus a pointer, except the last (<= per) */
	unsigned segs = n <= per ? 1 : 1 + (n - per + (per - 1) - 1) / (per - 1);
	if (!list || !list->cpu || (uint64_t)segs * page_size > list->bytes || (list->addr.bus & 15))
		return -E2BIG;
	volatile struct nvme_sgl_desc *base = list->cpu;
	unsigned left = n, i = 0;
	for (unsigned s = 0; s < segs; s++) {
		unsigned here = s + 1 == segs ? left : per - 1; /* data descriptors in segment s */
		unsigned ndesc = s + 1 == segs ? here : per;
		volatile struct nvme_sgl_desc *d = base + (size_t)s * per;
		/* the descriptor that points at segment s: SGL1 for s = 0, else the previous one's tail */
		unsigned type = s + 1 == segs ? NVME_SGL_TYPE_LAST_SEGMENT : NVME_SGL_TYPE_SEGMENT;
		uint64_t seg_addr = list->addr.bus + (uint64_t)s * page_size;
		if (s == 0)
			nvme_sgl_desc_put(sgl1, seg_addr, ndesc * (uint32_t)sizeof(*d), type);
		else
			nvme_sgl_desc_put(base + (size_t)(s - 1) * per + per - 1, seg_addr,
				 ndesc * (uint32_t)sizeof(*d), type);
		for (unsigned k = 0; k < here; k++, i++)
			nvme_sgl_desc_put(&d[k], sg[i].addr.bus, sg[i].len, NVME_SGL_TYPE_DATA_BLOCK);
		left -= here;
		*list_bytes += ndesc * sizeof(*d);
	}
	return 0;
}
