/*
 * static_glibc.c — a glibc program linked statically (gcc -static) with librampart.a
 * uses rampart: for the program's own calls and for the allocations glibc makes
 * inside (strdup, fopen's FILE, a new thread), asked
 * of rampart itself (rampart_guard_backend, rampart_get_stats,
 * rampart_get_heap_stats, malloc_object_size: 0 for a pointer that is not rampart's).
 * The backend must be the one RAMPART_OPTIONS asks for (madvise where the kernel
 * has guard markers). Exits 0 when every check passes.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "../harness.h"
#include "rampart.h"

static void *thread_fn(void *arg)
{
	char *p = malloc(64);
	CHECK(p != NULL && malloc_object_size(p) >= 64);
	free(p);
	return arg;
}

int main(void)
{
	CHECK(getauxval(AT_BASE) == 0); /* no program interpreter: really static */

	const char *b = rampart_guard_backend();
	const char *opt = getenv("RAMPART_OPTIONS");
	CHECK(b && (!strcmp(b, "madvise") || !strcmp(b, "mprotect")));
	if (opt && strstr(opt, "guard=mprotect")) CHECK(!strcmp(b, "mprotect"));
	if (opt && strstr(opt, "guard=madvise") && madvise_possible()) CHECK(!strcmp(b, "madvise"));
	CHECK(!strcmp(rampart_version(), RAMPART_VERSION));

	/* A large block: rampart's counters move, its guards block access. */
	struct rampart_stats s0, s1;
	rampart_get_stats(&s0);
	char *big = malloc(1 << 20);
	CHECK(big != NULL);
	rampart_get_stats(&s1);
	CHECK(s1.large_live_now == s0.large_live_now + 1 && s1.guarded_maps > s0.guarded_maps);
	CHECK(inaccessible(big - 1) && inaccessible(big + malloc_usable_size(big)));
	free(big);

	/* Allocations made inside glibc. */
	char *d = strdup("allocated by glibc's strdup");
	CHECK(d != NULL && malloc_object_size(d) >= strlen(d) + 1);
	free(d);
	struct rampart_heap_stats h0, h1;
	rampart_get_heap_stats(&h0);
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	rampart_get_heap_stats(&h1);
	CHECK(h1.slab_live > h0.slab_live); /* the FILE */
	fclose(f);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, thread_fn, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);

	/* A double free still ends in rampart's abort. */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		quiet_child();
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2);
		char *x = malloc(32);
		free(x);
		free(x);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);

	printf("static_glibc: rampart %s, guard backend %s: program and glibc allocations are rampart's\n",
	       rampart_version(), b);
	return 0;
}
