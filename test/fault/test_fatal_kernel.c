/* test_fatal_kernel.c — a kernel error that is neither "no memory" nor one of the
 * answers the guard layer falls back on (EINVAL from a locked mapping) means rampart's
 * view of its own mappings is wrong: fatal, one line, abort. Faked here with EFAULT. */
#define _GNU_SOURCE
#include "../harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_kernel.h"
#include "guard/guard.h"
#include "large/populate.h"

static void efault_on_new_mapping(void)
{
	fk.guard_install_errno = EFAULT; /* madvise backend */
	fk.mprotect_errno = EFAULT;      /* mprotect backend */
	void *volatile p = malloc(3 << 20);
	(void)p;
}

static void efault_on_free(void)
{
	char *volatile p = malloc(5 << 20);
	fk.guard_install_errno = EFAULT;
	fk.mmap_fail_fixed = true; /* the mprotect backend closes with MAP_FIXED, then mprotect */
	fk.mprotect_errno = EFAULT;
	free(p);
}

/* A class set up in a fresh process grows its cell: behind markers (madvise backend),
 * opened with mprotect (mprotect backend). A size no earlier allocation used. */
static void efault_while_a_class_grows(void)
{
	fk.guard_install_errno = EFAULT; /* madvise backend */
	fk.mprotect_errno = EFAULT;      /* mprotect backend */
	void *volatile p = malloc(6000);
	(void)p;
}

/* A class's cell mapped read-write for its markers, which the kernel refuses (EINVAL: a
 * locked mapping); giving the cell back, the kernel refuses the unmap (madvise backend;
 * under mprotect the failing mprotect of the cell's first open is fatal by itself). */
static void efault_giving_back_a_refused_growth(void)
{
	if (guard_backend() == GUARD_MADVISE) fk.guard_install_errno = EINVAL;
	else fk.mprotect_errno = EFAULT;
	fk.munmap_errno = EFAULT;
	void *volatile p = malloc(7000);
	(void)p;
}

/* A slab opened in space grown behind markers: the kernel refuses to take them out. Not
 * the class's first slab, which opens with its cell (guard_grow_open): a later one in
 * the cell (a small class: one-page slabs, a dozen of them in its cell). */
static void efault_opening_a_slab(void)
{
	void *volatile p = malloc(100);
	if (guard_backend() == GUARD_MADVISE) fk.guard_remove_errno = EFAULT;
	else fk.mprotect_errno = EFAULT;
	for (int i = 0; i < 2000; i++) p = malloc(100);
	(void)p;
}

/* Touched large blocks freed, so the next large block is populated (src/large/populate.h);
 * with the real kernel's answers, so on Linux 5.14+ populating has worked by then. */
static void earn_credit(void)
{
	for (int i = 0; i < POPULATE_PROBE_EVERY; i++) {
		unsigned char *p = malloc(2 << 20);
		assert_non_null(p);
		memset(p, 1, 2 << 20);
		free(p);
	}
}

/* Populating is advice: whatever the kernel answers (EFAULT, or EINVAL after it has
 * worked: a page of the block the kernel will not populate), the block is handed out
 * and works, and the program goes on (issue 34: a failed optimisation is never fatal). */
static void populate_failing_with(int err)
{
	earn_credit();
	fk.populate_errno = err;
	unsigned char *p = malloc(2 << 20);
	fk.populate_errno = 0;
	assert_non_null(p);
	memset(p, 7, 2 << 20);
	assert_int_equal(p[(2 << 20) - 1], 7);
	free(p);
}

static void populate_failure_is_not_fatal(void **state)
{
	(void)state;
	populate_failing_with(EFAULT);
	populate_failing_with(EINVAL);
	populate_failing_with(ENOMEM);
}

static void unexpected_error_is_fatal(void **state)
{
	(void)state;
	static const struct death_case cases[] = {
		{"EFAULT while mapping a new region", efault_on_new_mapping, DIE_FATAL, NULL},
		{"EFAULT while closing a freed region", efault_on_free, DIE_FATAL, NULL},
		{"EFAULT while a size class grows", efault_while_a_class_grows, DIE_FATAL, NULL},
		{"EFAULT giving back a growth whose markers were refused", efault_giving_back_a_refused_growth, DIE_FATAL, NULL},
		{"EFAULT opening a slab grown behind markers", efault_opening_a_slab, DIE_FATAL, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) assert_true(death_run(&cases[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(unexpected_error_is_fatal),
					   cmocka_unit_test(populate_failure_is_not_fatal)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
