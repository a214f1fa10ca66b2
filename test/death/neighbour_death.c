/*
 * neighbour_death — a free checks the neighbours that the freed block can have
 * damaged without touching its own canary, so these bugs are caught at the free of
 * the block that did the damage:
 *
 *   overflow from A past its canary into a free next slot B  -> caught at free(A)
 *   underflow from B into the canary of a live slot A before -> caught at free(B)
 *   underflow from B into the end of a free slot A before    -> caught at free(B)
 *
 * A and B are adjacent slots of one slab: two blocks handed out 48 bytes apart on the
 * same page (slabs are whole pages, so no slab boundary lies between them).
 */
#include "../harness.h"

#include <malloc.h>
#include <stdlib.h>

#include "rampart.h"

enum { SIZE = 40, SLOT = 48, N = 256 };

/* Two live adjacent slots of class 48, *a just below *b. */
static void adjacent_pair(char **a, char **b)
{
	static char *v[N];
	long page = sysconf(_SC_PAGESIZE);
	for (int i = 0; i < N; i++) v[i] = malloc(SIZE);
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			if (v[j] == v[i] + SLOT && (uintptr_t)v[i] / (uintptr_t)page == (uintptr_t)v[j] / (uintptr_t)page) {
				*a = v[i];
				*b = v[j];
				return; /* the others stay allocated: the slab must stay open */
			}
	abort(); /* no adjacent pair: the test cannot run (reported as the wrong signal) */
}

/* A write at A + 48 skips A's canary (a wrong index, not a linear overflow). */
static void overflow_into_free_next(void)
{
	char *a, *b;
	adjacent_pair(&a, &b);
	free(b);
	a[SLOT + 2] = 'x';
	free(a);
}

/* The same with A's canary read and written back by a linear copy that runs on. */
static void linear_overflow_keeping_canary(void)
{
	char *a, *b;
	adjacent_pair(&a, &b);
	free(b);
	char buf[SLOT + 8];
	memcpy(buf, a, SLOT); /* what an attacker who can read the canary writes back */
	memset(buf + SLOT, 'y', 8);
	memcpy(a, buf, sizeof buf);
	free(a);
}

static void underflow_into_live_canary(void)
{
	char *a, *b;
	adjacent_pair(&a, &b);
	b[-3] ^= 0x5a; /* a byte of A's canary */
	free(b);
}

static void underflow_into_free_prev(void)
{
	char *a, *b;
	adjacent_pair(&a, &b);
	free(a);
	/* The last byte of A's canary, which a free leaves in place: changed, whatever
	 * it was. (A fixed value would equal the random byte once in 256 runs.) */
	b[-1] ^= 0x5a;
	free(b);
}

/* Controls: the same frees without the bug. Both neighbours freed in either order,
 * and the zero byte of a canary (not detectable by design) written. */
static void controls(void)
{
	char *a, *b;
	adjacent_pair(&a, &b);
	memset(a, 'a', malloc_usable_size(a));
	memset(b, 'b', malloc_usable_size(b));
	free(b);
	free(a);
	adjacent_pair(&a, &b);
	memset(a, 'a', malloc_usable_size(a));
	memset(b, 'b', malloc_usable_size(b));
	a[malloc_usable_size(a)] = 0;
	free(a);
	free(b);
}

/* A case the build can catch: DIE_FATAL; else not run, and what is missing said. */
#define CAUGHT_WITH(cfg, what) (cfg) ? DIE_FATAL : DIE_NOT_BUILT, (cfg) ? NULL : what
#define ZERO_ON_FREE "zero-on-free (CONFIG_ZERO_ON_FREE=0): a free slot's bytes are not known"

static const struct death_case cases[] = {
	{"overflow past the canary into a free next slot, caught at its free", overflow_into_free_next,
	 CAUGHT_WITH(CONFIG_ZERO_ON_FREE, ZERO_ON_FREE)},
	{"overflow rewriting the canary, into a free next slot", linear_overflow_keeping_canary,
	 CAUGHT_WITH(CONFIG_ZERO_ON_FREE, ZERO_ON_FREE)},
	{"underflow into a live previous slot's canary, caught at its free", underflow_into_live_canary,
	 CAUGHT_WITH(CONFIG_SLOT_CANARY, "canaries (CONFIG_SLOT_CANARY=0)")},
	{"underflow into a free previous slot, caught at its free", underflow_into_free_prev,
	 CAUGHT_WITH(CONFIG_ZERO_ON_FREE, ZERO_ON_FREE)},
	{"adjacent slots freed in both orders without a bug", controls, DIE_NOT, NULL},
};

int main(void) { return death_run_all(cases, sizeof cases / sizeof *cases); }
