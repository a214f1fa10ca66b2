/*
 * object_size_death — malloc_object_size on a pointer into rampart's slab memory that
 * is not inside a live allocation is heap corruption (the caller holds a stale or
 * forged pointer); on a live block, at or past its usable end, or on a pointer that
 * is not rampart's, it answers without dying.
 */
#include "../harness.h"

#include <malloc.h>
#include <stdlib.h>

#include "rampart.h"

static volatile size_t sink;

static void freed_start(void)
{
	char *p = malloc(77);
	free(p);
	sink = malloc_object_size(p);
}

static void freed_interior(void)
{
	char *p = malloc(300);
	free(p);
	sink = malloc_object_size(p + 100);
}

/* Still in the slot quarantine, behind many later frees of the same class. */
static void freed_then_churned(void)
{
	enum { N = 500 };
	static void *v[N];
	char *p = malloc(40);
	for (int i = 0; i < N; i++) v[i] = malloc(40);
	free(p);
	for (int i = 0; i < N; i++) free(v[i]);
	sink = malloc_object_size(p + 3);
}

/* A slot no one was ever handed: class 14336 has 4 slots per slab, 3.5 pages apart,
 * so an even slot starts on a page and the slot next to it in the same slab lies
 * above it, and an odd slot's neighbour below it. The class is used by nothing else. */
static void never_used_slot(void)
{
	char *p = malloc(14000);
	long page = sysconf(_SC_PAGESIZE);
	char *q = (uintptr_t)p % (uintptr_t)page == 0 ? p + 14336 : p - 14336;
	sink = malloc_object_size(q + 8);
}

/* The closed page below a class's first slab (rampart's guard, never opened). */
static void guard_area(void)
{
	char *p = malloc(100000); /* 1 slot per slab: slab 0 is the area's start */
	sink = malloc_object_size(p - 4096);
}

static void freed_zero_size(void)
{
	void *p = malloc(0);
	free(p);
	sink = malloc_object_size(p);
}

/* Control: the answers that are not fatal, in one child. */
static void live_answers(void)
{
	char *p = malloc(100); /* class 112: usable 104 */
	size_t u = malloc_usable_size(p);
	if (malloc_object_size(p) != u || malloc_object_size(p + 10) != u - 10) abort();
	if (malloc_object_size(p + u - 1) != 1) abort();
	/* One past the end, and the rest of the slot (the canary): a valid pointer to
	 * nothing. (Without canaries one past the end is the next slot's start, answered
	 * as that: docs/slab.md, "Introspection".) */
	for (size_t k = u; CONFIG_SLOT_CANARY && k < u + 8; k++)
		if (malloc_object_size(p + k) != 0) abort();
	int local;
	static int global;
	if (malloc_object_size(&local) != 0 || malloc_object_size(&global) != 0) abort();
	if (malloc_object_size(NULL) != 0) abort();
	void *z = malloc(0);
	if (malloc_object_size(z) != 0) abort();
	free(z);
	free(p);
}

static const struct death_case cases[] = {
	{"malloc_object_size of a freed block", freed_start, DIE_FATAL, NULL},
	{"malloc_object_size inside a freed block", freed_interior, DIE_FATAL, NULL},
	{"malloc_object_size of a freed block after churn", freed_then_churned, DIE_FATAL, NULL},
	{"malloc_object_size of a never-used slot", never_used_slot, DIE_FATAL, NULL},
	{"malloc_object_size in a class's guard area", guard_area, DIE_FATAL, NULL},
	{"malloc_object_size of a freed malloc(0)", freed_zero_size, DIE_FATAL, NULL},
	{"malloc_object_size of live, past-the-end and foreign pointers", live_answers, DIE_NOT, NULL},
};

int main(void) { return death_run_all(cases, sizeof cases / sizeof *cases); }
