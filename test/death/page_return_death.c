/*
 * page_return_death — a write after free into a slot whose pages went back to the kernel
 * (docs/slab.md, "Pages of free slots") is still fatal when the slot is next handed out:
 * the write brings the page back with the stale byte, and the slot, marked returned, is
 * checked whole at its allocation.
 *
 *   2,000 blocks of 8,000 bytes written, all but one a slab (every eighth by address)
 *   freed, malloc_trim: a block freed among the first has its pages back with the kernel
 *   (checked with mincore, else the case fails without the report), then a byte written
 *   into it, then blocks of its class allocated until it comes back -> fatal, write
 *   after free
 *   the same with 8,000 blocks of 300 bytes (51 slots of 320 bytes a slab of 4 pages, no
 *   extent per slot), all but every 64th freed -> fatal, write after free
 *
 * Controls: the same without the write: every block comes back, reading zero.
 */
#include "../harness.h"

#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "rampart.h"
#include "../profile.h"
#include "../site.h"

/* musl's <malloc.h> does not declare it; rampart defines it under both C libraries. */
int malloc_trim(size_t pad);

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static bool resident(const void *p)
{
	unsigned char vec;
	if (mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &vec)) _exit(7);
	return vec & 1;
}

/* count blocks of size, written whole; all but every keep-th (by address) freed; the
 * pages given back. Answers the block halfway between the first two kept, freed among
 * the first and on a page no kept block shares, which must be back with the kernel. */
static char *freed_and_returned(int count, size_t size, int keep)
{
	static char *v[8000];
	for (int i = 0; i < count; i++) {
		if (!(v[i] = site_malloc(size))) _exit(3);
		memset(v[i], 'x', size);
	}
	qsort(v, count, sizeof *v, cmp_ptr);
	for (int i = 0; i < count; i++)
		if (i % keep) free(v[i]);
	malloc_trim(0);
	if (resident(v[keep / 2])) _exit(6); /* not given back: nothing to prove */
	return v[keep / 2];
}

static void take_all_back(int count, size_t size, bool expect_zero)
{
	for (int i = 0; i < count; i++) {
		unsigned char *p = site_malloc(size);
		if (!p) _exit(3);
		if (expect_zero)
			for (size_t j = 0; j < size; j++)
				if (p[j]) _exit(5);
	}
}

static void write_into_returned(void)
{
	char *stale = freed_and_returned(2000, 8000, 8);
	stale[100] = 1;
	take_all_back(8000, 8000, false);
}

/* Without zero-on-free a freed slot keeps its bytes until its pages go back: only the
 * build that wipes at free hands every block back zero. */
static void control(void)
{
	(void)freed_and_returned(2000, 8000, 8);
	take_all_back(8000, 8000, CONFIG_ZERO_ON_FREE);
}

/* Small slots: 7,875 of 8,000 freed, so that one freed among the first has left the slot
 * quarantine (1,536 slots of 320 bytes) by the trim but for a chance below 1e-5. */
static void write_into_returned_small(void)
{
	char *stale = freed_and_returned(8000, 300, 64);
	stale[100] = 1;
	take_all_back(16000, 300, false);
}

static void control_small(void)
{
	(void)freed_and_returned(8000, 300, 64);
	take_all_back(16000, 300, CONFIG_ZERO_ON_FREE);
}

static struct death_case cases[] = {
	{"a byte written into a freed 8,000-byte block whose pages went back, then its class allocated",
	 write_into_returned, DIE_FATAL, "write after free"},
	{"the same without the write: every block comes back zero", control, DIE_NOT, NULL},
	{"a byte written into a freed 300-byte block whose page went back, then its class allocated",
	 write_into_returned_small, DIE_FATAL, "write after free"},
	{"the same without the write: every block comes back zero", control_small, DIE_NOT, NULL},
};

int main(void)
{
	if (!test_waf_check()) {
		death_not_on(&cases[0], "write-after-free check (write_after_free_check=off)");
		death_not_on(&cases[2], "write-after-free check (write_after_free_check=off)");
	}
	return death_run_all(cases, sizeof cases / sizeof *cases);
}
