/*
 * cell_edge_death — past the slabs a size class has mapped, every access faults: a
 * class's area (its nursery cell, else its region) is mapped as the class takes slabs,
 * with a closed page past the highest, and nothing is mapped beyond (docs/slab.md, "The
 * nursery"). Under both guard backends (markers, PROT_NONE).
 *
 *   one block of 100 bytes (a class of one-page slabs few programs touch first), then a
 *   write to the first byte past its slab (the guard slab after it)   -> SIGSEGV
 *   200 blocks of it (several slabs, a growth of the area), then a write to the last
 *   byte of the run of mappings that holds the highest block (the closed page past the
 *   highest slab)                                                       -> SIGSEGV
 *   the same, a read of the first byte past that run (nothing mapped)   -> SIGSEGV
 *
 * Control: the same blocks written whole, and the run checked to end in a gap: exit 0.
 */
#include "../harness.h"
#include "../maps.h"

#include <stdio.h>
#include <stdlib.h>

#define SIZE 100
#define MANY 200

/* An address without its memory tag (arm64 MTE keeps it in the top byte): what
 * /proc/self/maps and comparisons between blocks go by. */
static uintptr_t untagged(const void *p) { return (uintptr_t)p & (((uintptr_t)1 << 56) - 1); }

/* MANY blocks of SIZE, each written whole; the highest's address, untagged. */
static uintptr_t highest_of_many(void)
{
	static char *v[MANY];
	uintptr_t top = 0;
	for (int i = 0; i < MANY; i++) {
		if (!(v[i] = malloc(SIZE))) _exit(3);
		memset(v[i], 'x', SIZE);
		if (untagged(v[i]) > top) top = untagged(v[i]);
	}
	return top;
}

static void past_first_slab(void)
{
	char *p = malloc(SIZE);
	if (!p) _exit(3);
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	volatile char *past = (char *)(((uintptr_t)p | (page - 1)) + 1);
	*past = 1;
}

static void last_mapped_byte(void)
{
	uintptr_t end = maps_run_end(highest_of_many());
	if (!end) _exit(4);
	*(volatile char *)(end - 1) = 1;
}

static void past_mapped(void)
{
	uintptr_t end = maps_run_end(highest_of_many());
	if (!end) _exit(4);
	(void)*(volatile char *)end;
}

static void control(void)
{
	uintptr_t top = highest_of_many();
	uintptr_t end = maps_run_end(top);
	if (!end || end <= top + SIZE) _exit(5);
	if (maps_run_end(end)) _exit(6); /* a gap follows: nothing of anyone's there */
}

static struct death_case cases[] = {
	{"a write one byte past a class's first slab (its guard slab)", past_first_slab, DIE_FAULT, NULL},
	{"a write to the last byte a class has mapped past its highest slab", last_mapped_byte, DIE_FAULT, NULL},
	{"a read of the first byte past what a class has mapped", past_mapped, DIE_FAULT, NULL},
	{"the same blocks written whole", control, DIE_NOT, NULL},
};

int main(void) { return death_run_all(cases, sizeof cases / sizeof *cases); }
