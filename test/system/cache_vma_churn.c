/* cache_vma_churn.c — 20,000 random large allocate/free operations (1–5 MiB, 64 live)
 * must leave the VMA count flat: at most 32 more under the madvise backend. Under the
 * mprotect backend every live region costs its own VMAs; the figure is reported. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "../harness.h"

#define OPS 20000
#define LIVE 64

int main(void)
{
	static char *live[LIVE];
	static size_t size[LIVE];
	unsigned seed = 12345;
	free(malloc(1 << 20)); /* initialise rampart before the first count */
	long before = count_vmas(), peak = before;
	for (int i = 0; i < OPS; i++) {
		int k = rand_r(&seed) % LIVE;
		if (live[k]) {
			if (live[k][0] != (char)k || live[k][size[k] - 1] != (char)k) {
				printf("FAIL: block %d lost its contents\n", k);
				return 1;
			}
			free(live[k]);
			live[k] = NULL;
		} else {
			size[k] = (1 << 20) + (size_t)rand_r(&seed) % (4 << 20);
			live[k] = malloc(size[k]);
			if (!live[k]) {
				printf("FAIL: malloc(%zu) failed\n", size[k]);
				return 1;
			}
			live[k][0] = live[k][size[k] - 1] = (char)k;
		}
		if (i % 256 == 0) {
			long v = count_vmas();
			if (v > peak) peak = v;
		}
	}
	long after = count_vmas();
	struct rampart_stats st;
	rampart_get_stats(&st);
	const char *backend = rampart_guard_backend();
	printf("backend %s: VMAs before %ld, after %ld (+%ld), peak %ld; cache hits %lu, misses %lu, evictions %lu\n",
	       backend, before, after, after - before, peak, st.cache_hits, st.cache_misses, st.cache_evictions);
	if (!strcmp(backend, "madvise") && after - before > 32) {
		printf("FAIL: more than 32 VMAs added under the madvise backend\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}
