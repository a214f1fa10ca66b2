/*
 * window_place.c — where the slab and metadata windows go (docs/address-space.md): both
 * in the part of the address space where Linux places nothing unless asked for that
 * address, between 1/64 and 1/4 - 1/64 of it, in every process.
 *
 * The metadata's window (16 GiB) used to be drawn first and the slab window (about 19
 * TiB of that part's 28) after it: where the metadata's lay near the middle, no place
 * beside it held the slab window, which then went to a free span found in
 * /proc/self/maps above the part, where the legacy mmap layout grows (a third of the
 * processes). Now the slab window is drawn first.
 *
 * Asserted in 40 processes (this program run again through /proc/self/exe, each drawing
 * its windows afresh): the first small blocks, of 16 and 1000 bytes, lie in that part.
 * (Under a sanitizer whose shadow memory owns the part, rampart places its windows
 * elsewhere, as it should; no such build runs this suite.)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "../harness.h"
#include "rampart.h"

#define RUNS 40

/* The top of the address space as rampart finds it: the power of two above the string
 * the kernel put on the main thread's stack, at least 47 bits (x86_64) or 39 (arm64). */
static uintptr_t address_space_top(void)
{
	uintptr_t sp = getauxval(AT_EXECFN);
	if (!sp) sp = getauxval(AT_RANDOM);
#if defined(__x86_64__)
	uintptr_t least = (uintptr_t)1 << 47;
#else
	uintptr_t least = (uintptr_t)1 << 39;
#endif
	uintptr_t top = (uintptr_t)1 << (64 - __builtin_clzl(sp));
	return top > least ? top : least;
}

/* One process: where its first small blocks went. */
static int one_process(void)
{
	uintptr_t top = address_space_top(), lo = top / 64, hi = top / 4 - top / 64;
	void *small = malloc(16), *mid = malloc(1000);
	CHECK(small && mid);
	int bad = 0;
	uintptr_t at[2] = {(uintptr_t)small, (uintptr_t)mid};
	for (int i = 0; i < 2; i++)
		if (at[i] < lo || at[i] >= hi) {
			fprintf(stderr, "a small block at %#lx, outside [%#lx, %#lx)\n", (unsigned long)at[i],
				(unsigned long)lo, (unsigned long)hi);
			bad = 1;
		}
	free(small);
	free(mid);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "one")) return one_process();
	int bad = 0;
	for (int i = 0; i < RUNS; i++) {
		fflush(stderr);
		pid_t pid = fork();
		if (pid == 0) {
			execl("/proc/self/exe", "window_place", "one", (char *)NULL);
			_exit(127);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 127);
		if (WEXITSTATUS(st)) bad++;
	}
	printf("%d of %d processes placed a window outside its part of the address space\n", bad, RUNS);
	return bad ? 1 : 0;
}
