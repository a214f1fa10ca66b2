/*
 * mlock_probe.c — a small program that locks itself, for system/mlock_unpriv: built
 * without rampart and run twice by that test, once as it is (glibc's malloc) and once
 * with librampart.so preloaded, so the two answers compare the allocators alone.
 *
 *   mlock_probe FLAGS     FLAGS: the mlockall() flags as a decimal number
 *
 * It allocates what a small program would (a thousand small blocks, one of 200 KiB,
 * half of them freed), calls mlockall(FLAGS) and, with MCL_FUTURE, allocates a little
 * more under the lock. Prints one line; exits 0 when all of it worked, 1 when
 * mlockall failed, 2 when an allocation after it failed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, key, n)) v = atol(line + n);
	if (f) fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 2) return 3;
	int flags = atoi(argv[1]);
	static void *keep[1000];
	for (int i = 0; i < 1000; i++) {
		keep[i] = malloc(16 + (size_t)(i % 200) * 4);
		if (!keep[i]) return 3;
		memset(keep[i], i, 16);
	}
	char *big = malloc(200 << 10);
	if (!big) return 3;
	memset(big, 1, 200 << 10);
	for (int i = 0; i < 1000; i += 2) free(keep[i]);
	free(big);

	const char *(*backend)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "rampart_guard_backend");
	int r = mlockall(flags);
	int err = errno;
	int more = 0;
	if (r == 0 && (flags & MCL_FUTURE)) {
		for (int i = 0; i < 100; i++) {
			char *p = malloc(48);
			if (!p) more = 1;
			else p[0] = 1; /* kept: a program's data */
		}
		char *p = malloc(64 << 10);
		if (!p) more = 1;
		else memset(p, 2, 64 << 10);
	}
	printf("allocator %s: mlockall(%d) %s%s; VmSize %ld kB, VmLck %ld kB\n", backend ? "rampart" : "glibc", flags,
	       r ? strerror(err) : "ok", more ? ", then an allocation failed" : "", status_kib("VmSize:"),
	       status_kib("VmLck:"));
	return r ? 1 : more ? 2 : 0;
}
