/*
 * class_spread.c — where the first blocks of a few small sizes land, one line per run:
 * the addresses of malloc(s) for each size s below, in decimal. Run many times under
 * LD_PRELOAD (bench/class_spread.sh does, and works out the spreads): the span of
 * malloc(a) - malloc(b) over the runs says how much one leaked pointer tells about where
 * another size class lives (issue 36, "Where small classes are placed").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Sizes of distinct classes under rampart and hardened_malloc alike, from the smallest
 * to those whose slabs are big (128 KiB blocks). */
static const size_t sizes[] = {16, 32, 64, 128, 1000, 4096, 20000, 100000};

int main(void)
{
	enum { N = sizeof sizes / sizeof sizes[0] };
	void *volatile got[N];
	for (unsigned i = 0; i < N; i++) {
		got[i] = malloc(sizes[i]);
		if (!got[i]) return 1;
	}
	for (unsigned i = 0; i < N; i++) printf("%s%zu=%ju", i ? " " : "", sizes[i], (uintmax_t)(uintptr_t)got[i]);
	printf("\n");
	return 0;
}
