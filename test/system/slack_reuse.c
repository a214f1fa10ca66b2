/*
 * slack_reuse — no byte a slot's owner wrote reaches the slot's next owner, the bytes
 * past its request (the slack) included (docs/slab.md, "The slack").
 *
 * For each size, blocks are given every right to write their slack (malloc_usable_size;
 * a realloc that grows them in place; calloc), fill their whole usable size and are
 * freed (by their own thread, and by a thread of another arena); then blocks of the
 * same size are allocated and freed until the freed slot's address comes back, and
 * every byte of its usable size must be zero. The blocks come from one call site, and
 * the calloc'ed ones from another, each taken back by its own (site.h: with call-site
 * partitions nothing else takes a freed slot); calloc clears nothing it can prove zero
 * (the write-after-free check's proof), and under light only what it was asked for. The sizes cover classes with a dirty
 * extent per slot (1,000 bytes up, and 105 in class 128) and without (24, 100). An
 * overflow into the slack without that right is fatal at the free: test/death/
 * slack_death.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "../all_arenas.h"
#include "../site.h"
#include "slab/sizeclass.h"

enum { LIMIT = 300000 };

static const size_t sizes[] = {24, 100, 105, 1000, 5000, 16000, 100000};

/* Ways a previous owner comes to have written its whole slot. */
enum how { USABLE_SIZE, REALLOC_GROW, CALLOC_USABLE, OTHER_THREAD, HOW_COUNT };
static const char *const how_name[HOW_COUNT] = {"malloc_usable_size", "realloc in place", "calloc",
						"freed by another thread"};

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

/* A block of n bytes (in n's class), its whole usable size written by its owner as the
 * API allows; freed. Returns its address, NULL when it could not be made. */
static char *dirty_slot(size_t n, enum how how)
{
	char *p;
	size_t lo = sc_usable(sc_of(n) - 1) + 1; /* the smallest request in n's class */
	switch (how) {
	case REALLOC_GROW:
		p = site_malloc(lo);
		if (!p) return NULL;
		memset(p, 0xa5, lo);
		{
			size_t u = sc_usable(sc_of(n));
			char *q = realloc(p, u);
			if (q != p) { /* the same class: it must stay */
				printf("FAIL: realloc(%p, %zu) moved to %p\n", (void *)p, u, (void *)q);
				exit(1);
			}
			memset(p, 0xa5, u);
		}
		free(p);
		return p;
	case CALLOC_USABLE:
		p = site_calloc(1, n);
		break;
	default:
		p = site_malloc(n);
		break;
	}
	if (!p) return NULL;
	memset(p, 0xa5, malloc_usable_size(p));
	if (how == OTHER_THREAD) {
		pthread_t t;
		if (pthread_create(&t, NULL, free_it, p) || pthread_join(t, NULL)) {
			printf("FAIL: cannot run a thread\n");
			exit(1);
		}
	} else {
		free(p);
	}
	return p;
}

/* Allocate and free blocks of n bytes (as `how` made old) until one is at old; the
 * bytes of its whole usable size that are not zero, or -1 when it never came back. */
static long dirty_bytes_at_reuse(const char *old, size_t n, enum how how)
{
	for (long k = 0; k < LIMIT; k++) {
		volatile char *q = how == CALLOC_USABLE ? site_calloc(1, n) : site_malloc(n);
		if (!q) return -1;
		/* The slot's address: under arm64 memory tagging the new owner's pointer
		 * carries another tag than the old one's (docs/mte.md). */
		if (((uintptr_t)q & (((uintptr_t)1 << 56) - 1)) == ((uintptr_t)old & (((uintptr_t)1 << 56) - 1))) {
			long dirty = 0;
			/* Read whole: a correct program reads only its request, an over-read
			 * reads the rest, and neither may find the last owner's bytes. */
			for (size_t i = 0; i < sc_usable(sc_of(n)); i++) dirty += q[i] != 0;
			free((void *)q);
			return dirty;
		}
		free((void *)q);
	}
	return -1;
}

int main(int argc, char **argv)
{
	(void)argc;
	if (!CONFIG_ZERO_ON_FREE) test_skip("this build does not wipe freed slots (CONFIG_ZERO_ON_FREE=0)");
	all_arenas(argv); /* a free by another arena's thread */
	int failed = 0;
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		size_t n = sizes[s];
		for (int how = 0; how < HOW_COUNT; how++) {
			char *old = dirty_slot(n, (enum how)how);
			long dirty = old ? dirty_bytes_at_reuse(old, n, (enum how)how) : -1;
			bool bad = dirty != 0;
			printf("%6zu bytes (usable %6zu), %-24s: ", n, sc_usable(sc_of(n)), how_name[how]);
			if (dirty < 0) printf("FAIL: the slot never came back\n");
			else printf("%ld bytes of the last owner's%s\n", dirty, bad ? "   <- FAIL" : "");
			failed |= bad;
		}
	}
	printf("slack_reuse: %s\n", failed ? "FAIL" : "ok");
	return failed;
}
