/*
 * sizeclass.h — the slab allocator's size classes and slab geometry.
 *
 * Invariants:
 *  - Class 0 is the zero-size class: its slots are 16-byte address ranges that are
 *    never opened, so malloc(0) gets distinct pointers whose any access faults.
 *  - Classes 1..8 are 16..128 in steps of 16; above 128 each doubling from 2^b to
 *    2^(b+1) has five classes: a snug one an eighth above 2^b (144, 288, 576, 1152,
 *    2304, 4608, ...) and the four quarters (1.25, 1.5, 1.75 and 2 times 2^b), up to
 *    128 KiB (class SC_COUNT - 1). The snug classes exist because requests just above
 *    a power of two are everywhere: malloc(4096) is one once the canary is added, and
 *    so is 4096 plus a header (sqlite asks 1,032, 4,104 and 4,368 bytes for its pages);
 *    each would otherwise take a slot a quarter bigger than the power of two.
 *  - A class's size is its slot stride. With canaries the last SC_CANARY bytes of the
 *    slot hold the canary, so the usable size is size - SC_CANARY; every slot start is
 *    16-byte aligned because every size is a multiple of 16 and slabs start on pages.
 *  - sc_of(n) is the smallest class whose usable size is at least n, for every
 *    n <= SC_MAX_REQUEST. Bigger requests are large allocations.
 *  - A slab is a whole number of pages holding at most SLAB_MAX_SLOTS slots.
 */
#ifndef RAMPART_SIZECLASS_H
#define RAMPART_SIZECLASS_H

#include <stddef.h>
#include <stdint.h>

#ifndef CONFIG_SLOT_CANARY
#error "CONFIG_SLOT_CANARY is not set: compile with config.mk's CONFIG_CPPFLAGS"
#endif

#define SC_COUNT 59u
#define SC_CANARY (CONFIG_SLOT_CANARY ? 8u : 0u)
#define SC_LARGEST ((size_t)131072)
#define SC_MAX_REQUEST (SC_LARGEST - SC_CANARY)
#define SLAB_MAX_SLOTS 256u
#define SLAB_WORDS (SLAB_MAX_SLOTS / 64u)

/* Bytes the snug class of the doubling from 2^b (b >= 7) adds to 2^b: an eighth, a
 * multiple of 16 (eight slots are nine times 2^b: whole pages from 4 KiB up). */
static inline size_t sc_snug(unsigned b) { return (size_t)1 << (b - 3); }

/* Slot stride of class c (the zero class has a nominal 16-byte stride). */
static inline size_t sc_size(unsigned c)
{
	if (c <= 8) return c ? 16u * c : 16u;
	unsigned k = c - 9, b = 7 + k / 5, j = k % 5;
	return ((size_t)1 << b) + (j ? (size_t)j << (b - 2) : sc_snug(b));
}

static inline size_t sc_usable(unsigned c) { return c ? sc_size(c) - SC_CANARY : 0; }

/* The smallest class that holds n bytes; n <= SC_MAX_REQUEST. */
static inline unsigned sc_of(size_t n)
{
	if (!n) return 0;
	size_t m = n + SC_CANARY;
	if (m <= 128) return (unsigned)((m + 15) >> 4);
	size_t x = m - 1;
	unsigned b = 63u - (unsigned)__builtin_clzl(x); /* 2^b <= m-1 < 2^(b+1), b >= 7 */
	if (m <= ((size_t)1 << b) + sc_snug(b)) return 9 + (b - 7) * 5;
	return 10 + (b - 7) * 5 + (unsigned)((x >> (b - 2)) & 3);
}

/* The smallest class at or above sc_of(n) whose slots all start on an align
 * boundary (align a power of two, at most the page size); SC_COUNT if none. */
static inline unsigned sc_of_aligned(size_t n, size_t align)
{
	if (n > SC_MAX_REQUEST) return SC_COUNT;
	unsigned c = sc_of(n ? n : 1);
	while (c < SC_COUNT && sc_size(c) % align) c++;
	return c;
}

struct sc_geometry {
	uint32_t size;   /* slot stride */
	uint32_t usable; /* bytes the caller may use */
	uint32_t slots;  /* slots per slab */
	uint32_t pages;  /* pages per slab */
};

/* The slab geometry of class c for a page size: the fewest pages that give at
 * least the class's minimum slot count with little waste (see sizeclass.c). */
void sc_geometry(unsigned c, size_t page, struct sc_geometry *g);
/* At least sc_geometry's slots for class c, without its search of page counts (at most
 * twice as many): for a layout made before the classes are set up, cheaply. */
uint32_t sc_slots_most(unsigned c, size_t page);

#endif
