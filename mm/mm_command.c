/*
 * mm_command.c - the console's `mem`: pages, heap and pools.
 */
#include <stdio.h>
#include "../lib/command.h"
#include "../lib/libc_glue.h"
#include "mm.h"

static void mem_show_pool(const struct mm_pool *p, void *arg)
{
	(void)arg;
	printf("  %-20s %6zu B x %-7zu in-use %-7zu high %-7zu allocs %-9llu fail %-5llu bad-free %llu\n",
	       p->name, p->obj_size, p->capacity, p->in_use, p->high_water,
	       (unsigned long long)p->allocs, (unsigned long long)p->failures,
	       (unsigned long long)p->bad_frees);
}

static int mem_command(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	const struct page_allocator *pa = mm_page_allocator();
	printf("pages: total %llu (%llu MiB) free %llu (%llu MiB) largest-free-run %llu pages\n",
	       (unsigned long long)pa->total_pages, (unsigned long long)(pa->total_pages >> 8),
	       (unsigned long long)pa->free_pages, (unsigned long long)(pa->free_pages >> 8),
	       (unsigned long long)pa_largest_free_run(pa));
	printf("pages: allocs %llu frees %llu failures %llu bad-frees %llu regions %u\n",
	       (unsigned long long)pa->allocs, (unsigned long long)pa->frees,
	       (unsigned long long)pa->failures, (unsigned long long)pa->bad_frees, pa->nregions);
	struct libc_heap_stats h;
	libc_heap_stats(&h);
	printf("heap: arena %llu KiB, break %llu KiB, refused sbrk %llu\n",
	       (unsigned long long)(h.size >> 10), (unsigned long long)(h.brk >> 10),
	       (unsigned long long)h.refused);
	printf("pools:\n");
	mm_pool_foreach(mem_show_pool, NULL);
	return 0;
}
CONSOLE_COMMAND(mem, "", "page allocator, heap and object pools", mem_command);
