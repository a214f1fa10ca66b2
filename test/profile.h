/*
 * profile.h — what the profile in effect turned on (rampart.conf(5): profile=strong or
 * light, or one option on its own), for tests whose expectations depend on it: the same
 * program runs under both profiles (test/run.sh, RAMPART_PROFILE), so it asks the
 * library at run time rather than reading a build switch.
 *
 * Only for programs linked with rampart (rampart_get_option).
 */
#ifndef RAMPART_TEST_PROFILE_H
#define RAMPART_TEST_PROFILE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"

/* The value in effect of option name; the first call starts rampart if nothing did. A
 * name the library does not know is the test's own mistake: it aborts. */
static __attribute__((unused)) unsigned long test_option(const char *name)
{
	unsigned long v;
	if (rampart_get_option(name, &v) == 0) return v;
	free(malloc(1));
	if (rampart_get_option(name, &v) == 0) return v;
	fprintf(stderr, "test_option: rampart cannot say option %s\n", name);
	abort();
}

static __attribute__((unused)) bool test_slot_quarantine(void) { return test_option("slot_quarantine_bytes") != 0; }
static __attribute__((unused)) bool test_waf_check(void) { return test_option("write_after_free_check") != 0; }
static __attribute__((unused)) bool test_region_quarantine(void) { return test_option("large_quarantine") != 0; }
static __attribute__((unused)) bool test_profile_light(void) { return test_option("profile") == 1; }

#endif
