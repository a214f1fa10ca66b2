/* test_fatal_kernel.c — a kernel error that is neither "no memory" nor one of the
 * answers the guard layer falls back on (EINVAL from a locked mapping) means rampart's
 * view of its own mappings is wrong: fatal, one line, abort. Faked here with EFAULT. */
#define _GNU_SOURCE
#include "../harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "fake_kernel.h"

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

static void unexpected_error_is_fatal(void **state)
{
	(void)state;
	static const struct death_case cases[] = {
		{"EFAULT while mapping a new region", efault_on_new_mapping, DIE_FATAL, NULL},
		{"EFAULT while closing a freed region", efault_on_free, DIE_FATAL, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) assert_true(death_run(&cases[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(unexpected_error_is_fatal)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
