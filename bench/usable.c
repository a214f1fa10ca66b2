/*
 * usable.c — what malloc_usable_size costs (issue 37, section 3). Meant for counting
 * instructions under callgrind, where the machine's load does not matter: run it with
 * n and 2n calls and take the difference over n, so start-up and set-up cancel.
 *
 *   usable KIND N      KIND: small (8 B to 1 KiB, mixed), mid (2 KiB to 64 KiB),
 *                      large (256 KiB to 1 MiB): N calls over a set of live blocks
 *                      of that kind, each block asked about many times
 *   usable redis N     N rounds of what redis does with a block: malloc (8 B to
 *                      1 KiB), malloc_usable_size, malloc_usable_size, free
 *   usable plain N     the same rounds without the two questions (subtract it from
 *                      redis's count to get the questions' share)
 *
 *   usable KIND N timed      the same, and prints nanoseconds a round on stderr (a
 *                      timing: run the allocators interleaved, compare in one run)
 *   usable KIND N threaded   timed, with a second thread alive (asleep), as in redis:
 *                      an allocator's locks then take their atomic path
 *
 * Prints a checksum so that nothing is optimised away.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define BLOCKS 256

/* Called through a volatile pointer: the compiler may not fold or hoist the call. */
static size_t (*volatile usable)(void *) = malloc_usable_size;

static size_t size_of(const char *kind, unsigned j)
{
	/* A fixed spread over the kind's range (no rand(): the same blocks under every
	 * allocator). */
	unsigned h = j * 2654435761u >> 7;
	if (!strcmp(kind, "mid")) return 2048 + h % (65536 - 2048);
	if (!strcmp(kind, "large")) return 262144 + h % (1048576 - 262144);
	return 8 + h % (1024 - 8 + 1);
}

static void *asleep(void *arg)
{
	(void)arg;
	for (;;) pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 4 && (!strcmp(argv[3], "timed") || !strcmp(argv[3], "threaded")))) {
		fprintf(stderr, "usage: usable small|mid|large|redis|plain N [timed|threaded]\n");
		return 2;
	}
	const char *kind = argv[1];
	unsigned long n = strtoul(argv[2], NULL, 10);
	size_t sum = 0;
	pthread_t t;
	if (argc == 4 && !strcmp(argv[3], "threaded") && pthread_create(&t, NULL, asleep, NULL)) return 1;
	double t0 = (double)now_ns();
	if (!strcmp(kind, "redis") || !strcmp(kind, "plain")) {
		int ask = !strcmp(kind, "redis");
		void *keep[BLOCKS] = {0};
		for (unsigned long r = 0; r < n; r++) {
			unsigned j = (unsigned)(r % BLOCKS);
			free(keep[j]);
			void *p = malloc(size_of("small", (unsigned)r));
			if (!p) return 1;
			if (ask) sum += usable(p) + usable(p);
			keep[j] = p;
		}
		for (unsigned j = 0; j < BLOCKS; j++) free(keep[j]);
	} else {
		unsigned nb = !strcmp(kind, "large") ? 16 : !strcmp(kind, "mid") ? 64 : BLOCKS;
		void *b[BLOCKS];
		for (unsigned j = 0; j < nb; j++)
			if (!(b[j] = malloc(size_of(kind, j)))) return 1;
		for (unsigned long r = 0; r < n; r++) sum += usable(b[r % nb]);
		for (unsigned j = 0; j < nb; j++) free(b[j]);
	}
	if (argc == 4) fprintf(stderr, "%.2f ns a round\n", ((double)now_ns() - t0) / (double)n);
	printf("%zu\n", sum);
	return 0;
}
