/*
 * all_arenas.h — run a test with every arena the build has, whatever the machine.
 *
 * By default rampart opens one arena per CPU the process may run on (at most
 * CONFIG_SLAB_ARENAS), so on a one-CPU machine every thread shares one arena and a test
 * of frees that cross arenas would pass without ever crossing one. A test that needs
 * them calls all_arenas(argv) first thing in main: the program runs again with
 * arenas=CONFIG_SLAB_ARENAS added to RAMPART_OPTIONS (the rest of it kept), unless an
 * arenas entry is there already. Where the program cannot run itself again (an
 * emulator without binfmt_misc), it goes on with the arenas it has and says so.
 */
#ifndef RAMPART_TEST_ALL_ARENAS_H
#define RAMPART_TEST_ALL_ARENAS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALL_ARENAS_STR_(x) #x
#define ALL_ARENAS_STR(x) ALL_ARENAS_STR_(x)

static __attribute__((unused)) void all_arenas(char **argv)
{
	const char *old = getenv("RAMPART_OPTIONS");
	if (old && strstr(old, "arenas=")) return;
	char opts[512];
	int n = snprintf(opts, sizeof opts, "%s%sarenas=" ALL_ARENAS_STR(CONFIG_SLAB_ARENAS), old ? old : "",
			 old && *old ? "," : "");
	if (n < 0 || (size_t)n >= sizeof opts || setenv("RAMPART_OPTIONS", opts, 1)) {
		fprintf(stderr, "all_arenas: cannot set RAMPART_OPTIONS\n");
		exit(2);
	}
	fflush(stdout);
	execv("/proc/self/exe", argv);
	perror("all_arenas: cannot run again with every arena (going on with the machine's)");
	if (old) setenv("RAMPART_OPTIONS", old, 1);
	else unsetenv("RAMPART_OPTIONS");
}

#endif
