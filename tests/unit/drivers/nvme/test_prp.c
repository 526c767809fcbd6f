// sources: drivers/nvme/nvme_prp.c
/*
 * PRP and SGL building: page boundaries, odd sizes, PRP lists chained across list pages,
 * SGL data blocks and (Last) Segments, the SGL total == NLB x 512 rule, memory-class mixes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/nvme/nvme.h"
#include "tests/unit/unit_support.h"

#define PS 4096u

static uint64_t *list_pages;
static struct nvme_list_mem list;

static void setup(void)
{
	list_pages = aligned_alloc(PS, 4 * PS);
	memset(list_pages, 0xee, 4 * PS);
	list.cpu = list_pages;
	list.addr = dma_addr_host(list_pages);
	list.bytes = 4 * PS;
}
static void teardown(void)
{
	free(list_pages);
}
TestSuite(prp, .init = setup, .fini = teardown);
TestSuite(sgl, .init = setup, .fini = teardown);

static struct nvme_sg host(uint64_t bus, uint32_t len)
{
	struct nvme_sg s = { { bus, MEM_CLASS_HOST }, len };
	return s;
}

Test(prp, one_page_needs_prp1_only)
{
	struct nvme_sg sg = host(0x100000, 4096);
	uint64_t p1, p2;
	size_t lb;
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, &list, &p1, &p2, &lb), 0);
	cr_assert_eq(p1, 0x100000);
	cr_assert_eq(p2, 0);
	cr_assert_eq(lb, 0);
}

Test(prp, small_odd_size_within_a_page)
{
	struct nvme_sg sg = host(0x100204, 700);
	uint64_t p1, p2;
	size_t lb;
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, &list, &p1, &p2, &lb), 0);
	cr_assert_eq(p1, 0x100204);
	cr_assert_eq(p2, 0);
}

Test(prp, crossing_one_boundary_uses_prp2_as_page)
{
	struct nvme_sg sg = host(0x100e00, 1024); /* 0x100e00..0x101200 */
	uint64_t p1, p2;
	size_t lb;
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, &list, &p1, &p2, &lb), 0);
	cr_assert_eq(p1, 0x100e00);
	cr_assert_eq(p2, 0x101000);
	cr_assert_eq(lb, 0);
}

Test(prp, eight_kib_aligned_is_two_entries_no_list)
{
	struct nvme_sg sg = host(0x200000, 8192);
	uint64_t p1, p2;
	size_t lb;
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, &list, &p1, &p2, &lb), 0);
	cr_assert_eq(p1, 0x200000);
	cr_assert_eq(p2, 0x201000);
}

Test(prp, three_pages_use_a_list)
{
	struct nvme_sg sg = host(0x200200, 3 * 4096); /* touches 4 pages */
	uint64_t p1, p2;
	size_t lb;
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, &list, &p1, &p2, &lb), 0);
	cr_assert_eq(p1, 0x200200);
	cr_assert_eq(p2, list.addr.bus);
	cr_assert_eq(lb, 3 * 8);
	cr_assert_eq(list_pages[0], 0x201000);
	cr_assert_eq(list_pages[1], 0x202000);
	cr_assert_eq(list_pages[2], 0x203000);
	cr_assert_eq(list_pages[3], 0xeeeeeeeeeeeeeeeeull, "nothing written past the list");
}

Test(prp, list_exactly_one_full_page_is_not_chained)
{
	/* 513 pages: PRP1 + 512 list entries = one full list page, no chain entry */
	struct nvme_sg sg = host(0x10000000, 513 * 4096);
	uint64_t p1, p2;
	size_t lb;
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, &list, &p1, &p2, &lb), 0);
	cr_assert_eq(lb, 512 * 8);
	cr_assert_eq(list_pages[511], 0x10000000 + 512 * 4096ull);
	cr_assert_eq(list_pages[512], 0xeeeeeeeeeeeeeeeeull);
}

Test(prp, list_spanning_pages_chains_through_the_last_slot)
{
	/* 514 pages: 513 list entries: page 0 holds 511 + a pointer to page 1 which holds 2 */
	struct nvme_sg sg = host(0x10000000, 514 * 4096);
	uint64_t p1, p2;
	size_t lb;
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, &list, &p1, &p2, &lb), 0);
	cr_assert_eq(p1, 0x10000000);
	cr_assert_eq(p2, list.addr.bus);
	cr_assert_eq(list_pages[0], 0x10001000);
	cr_assert_eq(list_pages[510], 0x10000000 + 511 * 4096ull);
	cr_assert_eq(list_pages[511], list.addr.bus + PS, "chain to the next list page");
	cr_assert_eq(list_pages[512], 0x10000000 + 512 * 4096ull);
	cr_assert_eq(list_pages[513], 0x10000000 + 513 * 4096ull);
	cr_assert_eq(lb, 514 * 8);
}

Test(prp, list_area_too_small_is_e2big)
{
	struct nvme_sg sg = host(0x10000000, 3000 * 4096);
	uint64_t p1, p2;
	size_t lb;
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, &list, &p1, &p2, &lb), -E2BIG);
	cr_assert_eq(nvme_prp_build(&sg, 1, PS, NULL, &p1, &p2, &lb), -E2BIG);
}

Test(prp, scatter_list_of_pages)
{
	struct nvme_sg sg[3] = { host(0x300800, 0x800), host(0x500000, 0x1000), host(0x700000, 0x10) };
	uint64_t p1, p2;
	size_t lb;
	cr_assert(nvme_prp_possible(sg, 3, PS));
	cr_assert_eq(nvme_prp_build(sg, 3, PS, &list, &p1, &p2, &lb), 0);
	cr_assert_eq(p1, 0x300800);
	cr_assert_eq(p2, list.addr.bus);
	cr_assert_eq(list_pages[0], 0x500000);
	cr_assert_eq(list_pages[1], 0x700000);
	cr_assert_eq(lb, 16);
}

Test(prp, shapes_prps_cannot_describe)
{
	struct nvme_sg mid_unaligned[2] = { host(0x300000, 0x1000), host(0x500010, 0x1000) };
	struct nvme_sg short_first[2] = { host(0x300000, 0x800), host(0x500000, 0x1000) };
	struct nvme_sg odd_start = host(0x300001, 0x10);
	uint64_t p1, p2;
	size_t lb;
	cr_assert_not(nvme_prp_possible(mid_unaligned, 2, PS));
	cr_assert_not(nvme_prp_possible(short_first, 2, PS));
	cr_assert_not(nvme_prp_possible(&odd_start, 1, PS), "PRP1 must be dword aligned");
	cr_assert_eq(nvme_prp_build(mid_unaligned, 2, PS, &list, &p1, &p2, &lb), -EINVAL);
}

Test(prp, classes_mix_is_detected)
{
	struct nvme_sg sg[2] = { host(0x300000, 0x1000), { dma_addr_device(0xe000000000ull), 0x1000 } };
	cr_assert_eq(nvme_sg_class(sg, 2), -EINVAL);
	cr_assert_eq(nvme_sg_class(sg, 1), MEM_CLASS_HOST);
	cr_assert_eq(nvme_sg_class(sg + 1, 1), MEM_CLASS_DEVICE);
}

Test(prp, totals_and_empty_entries)
{
	struct nvme_sg sg[2] = { host(0x1000, 100), host(0x2000, 0) };
	cr_assert_eq(nvme_sg_total(sg, 1), 100);
	cr_assert_eq(nvme_sg_total(sg, 2), -EINVAL);
	cr_assert_eq(nvme_sg_total(sg, 0), -EINVAL);
}

Test(sgl, one_entry_is_a_data_block_in_the_command)
{
	struct nvme_sg sg = host(0x400003, 1401);
	struct nvme_sgl_desc d;
	size_t lb;
	cr_assert_eq(nvme_sgl_build(&sg, 1, 1401, PS, false, &list, &d, &lb), 0);
	cr_assert_eq(le64_get(d.addr), 0x400003);
	cr_assert_eq(le32_get(d.len), 1401);
	cr_assert_eq(d.id, NVME_SGL_TYPE_DATA_BLOCK << 4);
	cr_assert_eq(lb, 0);
}

Test(sgl, total_must_equal_nlb_times_block)
{
	struct nvme_sg sg[2] = { host(0x400000, 1400), host(0x500000, 1400) };
	struct nvme_sgl_desc d;
	size_t lb;
	cr_assert_eq(nvme_sgl_build(sg, 2, 2 * 512, PS, false, &list, &d, &lb), -EINVAL);
	cr_assert_eq(nvme_sgl_build(sg, 2, 6 * 512, PS, false, &list, &d, &lb), -EINVAL);
	sg[1].len = 6 * 512 - 1400;
	cr_assert_eq(nvme_sgl_build(sg, 2, 6 * 512, PS, false, &list, &d, &lb), 0);
}

Test(sgl, several_entries_use_one_last_segment)
{
	/* 64 x 1400 B payloads packed back to back at odd addresses = 175 sectors */
	struct nvme_sg sg[64];
	for (int i = 0; i < 64; i++)
		sg[i] = host(0x800001 + 1401ull * i, 1400);
	struct nvme_sgl_desc d;
	size_t lb;
	cr_assert_eq(nvme_sgl_build(sg, 64, 175 * 512, PS, false, &list, &d, &lb), 0);
	cr_assert_eq(d.id, NVME_SGL_TYPE_LAST_SEGMENT << 4);
	cr_assert_eq(le64_get(d.addr), list.addr.bus);
	cr_assert_eq(le32_get(d.len), 64 * 16);
	cr_assert_eq(lb, 64 * 16);
	struct nvme_sgl_desc *seg = list.cpu;
	for (int i = 0; i < 64; i++) {
		cr_assert_eq(le64_get(seg[i].addr), 0x800001 + 1401ull * i);
		cr_assert_eq(le32_get(seg[i].len), 1400);
		cr_assert_eq(seg[i].id, 0);
	}
}

/* The one-segment gather (n <= a page of descriptors) needs a list area as the chained one
 * does: none, one smaller than a page or one not 16-byte aligned is -E2BIG, nothing built. */
Test(sgl, one_segment_needs_a_usable_list_area)
{
	struct nvme_sg sg[3] = { host(0x900000, 1448), host(0x901000, 1448), host(0x902000, 1200) };
	struct nvme_sgl_desc d;
	size_t lb = 99;
	cr_assert_eq(nvme_sgl_build(sg, 3, 4096, PS, false, NULL, &d, &lb), -E2BIG);
	cr_assert_eq(lb, 0);
	struct nvme_list_mem small = list, odd = list;
	small.bytes = PS - 1;
	odd.addr.bus += 8;
	cr_assert_eq(nvme_sgl_build(sg, 3, 4096, PS, false, &small, &d, &lb), -E2BIG);
	cr_assert_eq(nvme_sgl_build(sg, 3, 4096, PS, false, &odd, &d, &lb), -E2BIG);
	cr_assert_eq(nvme_sgl_build(sg, 3, 4096, PS, false, &list, &d, &lb), 0);
	cr_assert_eq(d.id, NVME_SGL_TYPE_LAST_SEGMENT << 4);
	cr_assert_eq(le32_get(d.len), 3 * 16);
	cr_assert_eq(lb, 3 * 16);
	const struct nvme_sgl_desc *seg = list.cpu;
	cr_assert_eq(le64_get(seg[2].addr), 0x902000);
	cr_assert_eq(le32_get(seg[2].len), 1200);
}

Test(sgl, more_than_a_page_of_descriptors_chains_segments)
{
	/* 256 descriptors per 4 KiB page. 256 entries fit one segment exactly; 300 entries make
	 * segment 0 = 255 data + a Last Segment pointer to segment 1 = 45 data. */
	static struct nvme_sg sg[600];
	for (int i = 0; i < 600; i++)
		sg[i] = host(0x1000000 + 0x1000ull * i, 512);
	struct nvme_sgl_desc d;
	size_t lb;
	struct nvme_sgl_desc *seg = list.cpu;
	cr_assert_eq(nvme_sgl_build(sg, 256, 256 * 512, PS, false, &list, &d, &lb), 0);
	cr_assert_eq(d.id, NVME_SGL_TYPE_LAST_SEGMENT << 4);
	cr_assert_eq(le32_get(d.len), 256 * 16);
	cr_assert_eq(le64_get(seg[255].addr), 0x1000000 + 0x1000ull * 255);

	cr_assert_eq(nvme_sgl_build(sg, 300, 300 * 512, PS, false, &list, &d, &lb), 0);
	cr_assert_eq(d.id, NVME_SGL_TYPE_SEGMENT << 4, "segment 0 is not the last");
	cr_assert_eq(le32_get(d.len), 256 * 16);
	cr_assert_eq(le64_get(seg[254].addr), 0x1000000 + 0x1000ull * 254);
	cr_assert_eq(seg[255].id, NVME_SGL_TYPE_LAST_SEGMENT << 4, "pointer to the final segment");
	cr_assert_eq(le64_get(seg[255].addr), list.addr.bus + PS);
	cr_assert_eq(le32_get(seg[255].len), 45 * 16);
	cr_assert_eq(le64_get(seg[256].addr), 0x1000000 + 0x1000ull * 255, "data continues in segment 1");
	cr_assert_eq(le64_get(seg[256 + 44].addr), 0x1000000 + 0x1000ull * 299);
	cr_assert_eq(lb, (256 + 45) * 16);

	/* 3 segments: 255 + 255 + 2 = 512 entries over 3 pages */
	cr_assert_eq(nvme_sgl_build(sg, 512, 512 * 512, PS, false, &list, &d, &lb), 0);
	cr_assert_eq(seg[255].id, NVME_SGL_TYPE_SEGMENT << 4);
	cr_assert_eq(seg[511].id, NVME_SGL_TYPE_LAST_SEGMENT << 4);
	cr_assert_eq(le64_get(seg[511].addr), list.addr.bus + 2 * PS);
	cr_assert_eq(le32_get(seg[511].len), 2 * 16);
	cr_assert_eq(le64_get(seg[513].addr), 0x1000000 + 0x1000ull * 511);

	struct nvme_list_mem small = list;
	small.bytes = PS;
	cr_assert_eq(nvme_sgl_build(sg, 300, 300 * 512, PS, false, &small, &d, &lb), -E2BIG);
	cr_assert_eq(nvme_sgl_build(sg, 600, 600 * 512, PS, false, &list, &d, &lb), -EINVAL,
		     "over NVME_MAX_SG");
}

Test(sgl, dword_granularity_is_enforced_when_required)
{
	struct nvme_sg sg = host(0x400002, 512);
	struct nvme_sgl_desc d;
	size_t lb;
	cr_assert_eq(nvme_sgl_build(&sg, 1, 512, PS, true, &list, &d, &lb), -EINVAL);
	cr_assert_eq(nvme_sgl_build(&sg, 1, 512, PS, false, &list, &d, &lb), 0);
}

Test(sgl, list_in_device_memory_keeps_its_address)
{
	/* data in a CMB: the list area given is the CMB's; the builder uses its bus address */
	struct nvme_sg sg[2] = { { dma_addr_device(0xe040100000ull), 512 },
				 { dma_addr_device(0xe040200001ull), 512 } };
	struct nvme_list_mem cmb = { list_pages, dma_addr_device(0xe040000000ull), PS };
	struct nvme_sgl_desc d;
	size_t lb;
	cr_assert_eq(nvme_sgl_build(sg, 2, 1024, PS, false, &cmb, &d, &lb), 0);
	cr_assert_eq(le64_get(d.addr), 0xe040000000ull);
	cr_assert_eq(le64_get(((struct nvme_sgl_desc *)list_pages)[1].addr), 0xe040200001ull);
}
