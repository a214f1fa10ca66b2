/*
 * page_return_death — a write after free into a slot whose pages went back to the kernel
 * (docs/slab.md, "Pages of free slots") is still fatal when the slot is next handed out:
 * the write brings the page back with the stale byte, and the slot, marked returned, is
 * checked whole at its allocation.
 *
 *   2,000 blocks of 8,000 bytes written, all but one a slab (every eighth by address)
 *   freed, malloc_trim: the first block freed has its pages back with the kernel (checked
 *   with mincore, else the case fails without the report), then a byte written into it,
 *   then blocks of its class allocated until it comes back -> fatal, write after free
 *
 * Control: the same without the write: every block comes back, reading zero.
 */
#include "../harness.h"

#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "rampart.h"
#include "../profile.h"

/* musl's <malloc.h> does not declare it; rampart defines it under both C libraries. */
int malloc_trim(size_t pad);

#define COUNT 2000
#define SIZE 8000

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

/* Frees all but every eighth block (by address), gives the pages back, and answers the
 * first block freed, whose page must be back with the kernel. */
static char *freed_and_returned(void)
{
	static char *v[COUNT];
	for (int i = 0; i < COUNT; i++) {
		if (!(v[i] = malloc(SIZE))) _exit(3);
		memset(v[i], 'x', SIZE);
	}
	qsort(v, COUNT, sizeof *v, cmp_ptr);
	char *first = NULL;
	for (int i = 0; i < COUNT; i++) {
		if (i % 8 == 0) continue;
		if (!first) first = v[i];
		free(v[i]);
	}
	malloc_trim(0);
	if (resident(first)) _exit(6); /* not given back: nothing to prove */
	return first;
}

static void take_all_back(bool expect_zero)
{
	for (int i = 0; i < 4 * COUNT; i++) {
		unsigned char *p = malloc(SIZE);
		if (!p) _exit(3);
		if (expect_zero)
			for (int j = 0; j < SIZE; j++)
				if (p[j]) _exit(5);
	}
}

static void write_into_returned(void)
{
	char *stale = freed_and_returned();
	stale[100] = 1;
	take_all_back(false);
}

/* Without zero-on-free a freed slot keeps its bytes until its pages go back: only the
 * build that wipes at free hands every block back zero. */
static void control(void)
{
	(void)freed_and_returned();
	take_all_back(CONFIG_ZERO_ON_FREE);
}

static struct death_case cases[] = {
	{"a byte written into a freed 8,000-byte block whose pages went back, then its class allocated",
	 write_into_returned, DIE_FATAL, "write after free"},
	{"the same without the write: every block comes back zero", control, DIE_NOT, NULL},
};

int main(void)
{
	if (!test_waf_check()) death_not_on(&cases[0], "write-after-free check (write_after_free_check=off)");
	return death_run_all(cases, sizeof cases / sizeof *cases);
}
