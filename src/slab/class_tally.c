/* class_tally.c — a class's drift told to the process-wide total (class_tally.h). */
#include "slab/class_tally.h"

#include "base/counters.h"

/* Out of line: once per step of a class's allocations or frees on balance. */
noinline void tally_publish(struct slab_class *k)
{
	struct class_tally *t = tally_of(k);
	long slots = (long)t->level - (long)t->step;
	t->level = t->step;
	bool one = os_single_threaded();
	stat_add_peak(STAT_HEAP_BLOCKS_NOW, STAT_HEAP_BLOCKS_PEAK, slots, one);
	stat_add_peak(STAT_HEAP_BYTES_NOW, STAT_HEAP_BYTES_PEAK, slots * (long)k->size, one);
}
