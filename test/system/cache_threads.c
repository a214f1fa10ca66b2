/* cache_threads.c — four threads churn large blocks through the quarantine and the
 * reuse cache at once; every block keeps its own pattern and every reused block
 * arrives zeroed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"

#define THREADS 4
#define OPS 1500
#define LIVE 8

static _Atomic int failures;

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
	unsigned char *live[LIVE] = {0};
	size_t size[LIVE] = {0};
	for (int i = 0; i < OPS; i++) {
		int k = rand_r(&seed) % LIVE;
		unsigned char tag = (unsigned char)(((uintptr_t)arg << 4) | (unsigned)k);
		if (live[k]) {
			for (size_t off = 0; off < size[k]; off += 4096)
				if (live[k][off] != tag) failures++;
			if (live[k][size[k] - 1] != tag) failures++;
			free(live[k]);
			live[k] = NULL;
			continue;
		}
		size[k] = (256u << 10) + (size_t)rand_r(&seed) % (4u << 20);
		live[k] = malloc(size[k]);
		if (!live[k]) {
			failures++;
			continue;
		}
		for (size_t off = 0; off < size[k]; off += 4096) {
			if (live[k][off]) failures++; /* old contents must be gone */
			live[k][off] = tag;
		}
		live[k][size[k] - 1] = tag;
	}
	for (int k = 0; k < LIVE; k++) free(live[k]);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, churn, (void *)i);
	for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
	struct rampart_stats st;
	rampart_get_stats(&st);
	printf("cache hits %lu, misses %lu; failures %d\n", st.cache_hits, st.cache_misses, failures);
	if (failures || !st.cache_hits) {
		printf("FAIL\n");
		return 1;
	}
	printf("ok\n");
	return 0;
}
