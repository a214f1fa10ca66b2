/* stats.c — storage for the counters and the public snapshot. */
#include "stats.h"

#include "../include/rampart.h"

_Atomic unsigned long stat_counters[STAT_COUNT];

_Static_assert(sizeof(struct rampart_stats) / sizeof(unsigned long) == STAT_COUNT,
	       "struct rampart_stats must list every counter in enum stat order");

__attribute__((visibility("default"))) void rampart_get_stats(struct rampart_stats *out)
{
	unsigned long *dst = (unsigned long *)out;
	for (int i = 0; i < STAT_COUNT; i++)
		dst[i] = atomic_load_explicit(&stat_counters[i], memory_order_relaxed);
}
