/* test_resident — the statistics' resident memory per size class (slab_resident,
 * slab/slab_stats.c): it follows what the program writes, never exceeds a class's open
 * memory, adds up to no more than the process's VmRSS, and leaves the pages a program
 * only read out (the shared zero page is no memory). Run under each backend (make
 * test): under mprotect a class is many mappings. */
#define _GNU_SOURCE
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "../harness.h"
#include "rampart.h"
#include "slab/sizeclass.h"
#include "slab/slab.h"

#define COUNT 64
#define SIZE 60000 /* the 64 KiB class: a slab of 4 slots, 16 pages a slot */

static size_t class_resident(unsigned c)
{
	size_t r[SC_COUNT];
	ck_assert(slab_resident(r));
	return r[c];
}

static size_t vm_rss(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	ck_assert_ptr_nonnull(f);
	char line[256];
	size_t kib = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %zu kB", &kib) == 1) break;
	fclose(f);
	return kib * 1024;
}

/* Blocks written whole are resident; blocks only read are not (the reads map the shared
 * zero page), though both are open. */
START_TEST(follows_what_is_written)
{
	unsigned c = sc_of(SIZE);
	static char *written[COUNT], *read_only[COUNT];
	size_t before = class_resident(c);
	for (int i = 0; i < COUNT; i++) {
		ck_assert_ptr_nonnull(written[i] = malloc(SIZE));
		memset(written[i], 'w', SIZE);
	}
	size_t after_writes = class_resident(c);
	unsigned long sum = 0;
	for (int i = 0; i < COUNT; i++) {
		ck_assert_ptr_nonnull(read_only[i] = malloc(SIZE));
		for (size_t j = 0; j < SIZE; j += 4096) sum += (unsigned char)read_only[i][j];
	}
	size_t after_reads = class_resident(c);
	printf("%u-byte slots: %zu bytes resident, %zu after %d written, %zu after %d read (sum %lu)\n",
	       (unsigned)sc_size(c), before, after_writes, COUNT, after_reads, COUNT, sum);
	ck_assert_uint_ge(after_writes - before, (size_t)COUNT * SIZE);
	/* Each block written holds its own pages and its canary's: at most a page more. */
	ck_assert_uint_le(after_writes - before, (size_t)COUNT * (sc_size(c) + 4096));
	/* A read block's canary page was written when it was handed out: one page each. */
	ck_assert_uint_le(after_reads - after_writes, (size_t)COUNT * 2 * 4096);
	for (int i = 0; i < COUNT; i++) {
		free(written[i]);
		free(read_only[i]);
	}
}
END_TEST

/* Every class's resident memory lies within its open memory, and all of it within the
 * process's resident set. */
START_TEST(within_open_and_rss)
{
	static void *p[4096];
	for (int i = 0; i < 4096; i++) {
		size_t n = 16 + (size_t)(i * 7919) % 20000;
		ck_assert_ptr_nonnull(p[i] = malloc(n));
		memset(p[i], 1, n);
	}
	size_t r[SC_COUNT], total = 0;
	ck_assert(slab_resident(r));
	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	size_t rss = vm_rss();
	for (unsigned c = 0; c < SC_COUNT; c++) {
		ck_assert_msg(r[c] <= h.size_class[c].bytes_open, "class %u: %zu resident, %zu open", c, r[c],
			      h.size_class[c].bytes_open);
		total += r[c];
	}
	printf("%zu bytes of slabs resident, %zu open; VmRSS %zu\n", total, h.slab_open_bytes, rss);
	ck_assert_uint_gt(total, 0);
	ck_assert_uint_le(total, rss);
	for (int i = 0; i < 4096; i++) free(p[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("resident");
	TCase *t = tcase_create("core");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, follows_what_is_written);
	tcase_add_test(t, within_open_and_rss);
	suite_add_tcase(s, t);
	return run_suite(s);
}
