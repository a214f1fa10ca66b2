/* test_labels.c — rampart names its mappings with PR_SET_VMA_ANON_NAME: once per new
 * region, covering the whole region (guards included), a sub-span only where a close
 * mapped it afresh (with the same name), and not at all once the kernel has refused.
 * The kernel's answer is faked (fake_kernel.c): this project's test machines are built
 * without CONFIG_ANON_VMA_NAME. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_kernel.h"
#include "rampart.h"

#if CONFIG_LABEL_MEMORY
static unsigned long maps_now(void)
{
	struct rampart_stats st;
	rampart_get_stats(&st);
	return st.guarded_maps;
}

static void whole_regions_only(void **state)
{
	(void)state;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	fk.labels_supported = true;
	unsigned long calls = fk.label_calls, maps = maps_now();
	char *p = malloc(3 << 20);
	assert_non_null(p);
	assert_int_equal(fk.label_calls, calls + 1);
	unsigned long a = fk.labels[calls].addr, len = fk.labels[calls].len;
	/* The label spans the guards on both sides too: the whole mapping. */
	assert_true(a + page <= (uintptr_t)p);
	assert_true(a + len >= (uintptr_t)p + (3u << 20) + page);

	/* A span inside a region is named only where it was mapped afresh (closed under the
	 * mprotect backend, reopened under the madvise one; the free maps the whole region
	 * afresh), with the region's name so it merges back into its neighbours: every later
	 * label lies inside the region, and only the free's covers all of it. */
	char *q = realloc(p, 1 << 20); /* shrink in place */
	assert_ptr_equal(q, p);
	q = realloc(q, (1 << 20) + page); /* grow in place, into the trail guard */
	assert_ptr_equal(q, p);
	free(q);
	assert_true(fk.label_calls >= calls + 2); /* the free mapped the region afresh */
	for (unsigned long i = calls + 1; i < fk.label_calls && i < 64; i++) {
		assert_true(fk.labels[i].addr >= a);
		assert_true(fk.labels[i].addr + fk.labels[i].len <= a + len);
		assert_true(fk.labels[i].len < len || i == fk.label_calls - 1);
	}

	/* At least one label per new mapping. */
	calls = fk.label_calls;
	char *r = malloc(7 << 20);
	r = realloc(r, 40 << 20); /* moves: a new region */
	free(r);
	assert_true(fk.label_calls - calls >= maps_now() - maps);
}

static void refusal_switches_labels_off(void **state)
{
	(void)state;
	fk.labels_supported = false;
	unsigned long calls = fk.label_calls, maps = maps_now();
	/* Until three new mappings were made (without the region quarantine, VARIANT=light,
	 * the regions freed above sit in the reuse cache and may serve some). */
	void *v[8];
	int n = 0;
	while (n < 8 && maps_now() - maps < 3) {
		v[n] = malloc(((size_t)9 + 2 * (size_t)n) << 20);
		assert_non_null(v[n++]);
	}
	assert_true(maps_now() - maps >= 3);
	assert_int_equal(fk.label_calls, calls + 1); /* asked once, refused, never again */
	while (n) free(v[--n]);
}

#else
/* Built with CONFIG_LABEL_MEMORY=0: no label is ever asked for, although the kernel
 * would take it. */
static void never_labels(void **state)
{
	(void)state;
	fk.labels_supported = true;
	unsigned long calls = fk.label_calls;
	char *p = malloc(3 << 20), *q = malloc(100);
	assert_non_null(p);
	assert_non_null(q);
	p = realloc(p, 40 << 20); /* moves: a new region */
	free(p);
	free(q);
	assert_int_equal(fk.label_calls, calls);
}
#endif

int main(void)
{
	fk.labels_supported = true;
	const struct CMUnitTest tests[] = {
#if CONFIG_LABEL_MEMORY
		cmocka_unit_test(whole_regions_only),
		cmocka_unit_test(refusal_switches_labels_off),
#else
		cmocka_unit_test(never_labels),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
