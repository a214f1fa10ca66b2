/*
 * check_main.h — the end of every Check program's main: run the suite, report, and exit
 * with its verdict. Verbosity comes from CK_VERBOSITY (test/run.sh sets normal), the
 * fork mode from CK_FORK (each test in a child of its own unless CK_FORK=no).
 */
#ifndef RAMPART_TEST_CHECK_MAIN_H
#define RAMPART_TEST_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

/* Run every test of s; EXIT_SUCCESS when none failed. */
static inline int run_suite(Suite *s)
{
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_ENV);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
