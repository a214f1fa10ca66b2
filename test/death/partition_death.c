/*
 * partition_death — a freed slot that waits for its own call-site partition (out of the
 * slot quarantine, its slab open: docs/slab.md, "Call-site partitions") is still a
 * freed slot to every check: a second free of it, from its own thread or another, a
 * free of a pointer inside it, a size question, a realloc are fatal, and a write into
 * it is found when its partition takes it back (the write-after-free check, strong).
 *
 * The victim is allocated in the partition malloc_partition names by id 0; blocks of
 * id 1 (another partition by construction) churn its class until the victim's slot
 * has surely left the quarantine, and none of them can take it. Each case runs in a
 * forked child (harness.h).
 */
#define _GNU_SOURCE
#include "../harness.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "rampart.h"
#include "../profile.h"

enum { SIZE = 64, LIVE = 64, CHURN = 40000 };

static volatile char sink;
static void *volatile keep[8]; /* live blocks beside the victim: its slab stays open */

/* Allocate and free blocks of partition id in the victim's class, LIVE at a time:
 * CHURN frees, well past the class's quarantine (2,048 + 4,096 slots of 80 bytes). */
static void churn(unsigned long id)
{
	static void *live[LIVE];
	for (int r = 0; r < CHURN; r++) {
		free(live[r % LIVE]);
		if (!(live[r % LIVE] = malloc_partition(SIZE, id))) _exit(3);
	}
	for (int j = 0; j < LIVE; j++) free(live[j]), live[j] = NULL;
}

/* A block of id 0 among live ones of its partition (its slab stays open), freed, its slot
 * out of the quarantine and waiting for id 0. */
static char *waiting_slot(void)
{
	for (int i = 0; i < 8; i++) keep[i] = malloc_partition(SIZE, 0);
	char *p = malloc_partition(SIZE, 0);
	if (!p) _exit(3);
	free(p);
	churn(1);
	return p;
}

static void double_free(void) { free(waiting_slot()); }

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

static void double_free_other_thread(void)
{
	pthread_t t;
	char *p = waiting_slot();
	if (pthread_create(&t, NULL, free_it, p) || pthread_join(t, NULL)) _exit(3);
}

static void inner_free(void) { free(waiting_slot() + 8); }

static void usable_size(void) { sink = (char)malloc_usable_size(waiting_slot()); }

static void realloc_it(void) { sink = (char)(uintptr_t)realloc(waiting_slot(), 100); }

static void write_then_taken_back(void)
{
	char *p = waiting_slot();
	p[40] = 'x'; /* the bug: past the first 16 bytes, which a neighbour's free checks */
	churn(0);
}

/* Control: the same slot taken back by its partition, no bug. */
static void taken_back(void)
{
	char *p = waiting_slot();
	(void)p;
	churn(0);
}

int main(void)
{
	unsigned long partitions = test_option("partitions");
	if (partitions < 2) test_skip("this process runs without call-site partitions (partitions=%lu)", partitions);
	struct death_case cases[] = {
		{"second free of a slot waiting for its partition", double_free, DIE_FATAL, "already freed"},
		{"second free of it from another thread", double_free_other_thread, DIE_FATAL, "already freed"},
		{"free of a pointer inside it", inner_free, DIE_FATAL, "not the start of a slot"},
		{"malloc_usable_size of it", usable_size, DIE_FATAL, "already freed"},
		{"realloc of it", realloc_it, DIE_FATAL, "already freed"},
		{"a write into it, then its partition takes it back", write_then_taken_back, DIE_FATAL,
		 "write after free"},
		{"control: its partition takes it back", taken_back, DIE_NOT, NULL},
	};
	if (!test_waf_check()) death_not_on(&cases[5], "the write-after-free check (write_after_free_check)");
	return death_run_all(cases, sizeof cases / sizeof *cases);
}
