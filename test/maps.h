/*
 * maps.h — what /proc/self/maps says around an address, for tests of where rampart maps
 * its slabs (death/cell_edge_death, unit/test_slab).
 */
#ifndef RAMPART_TEST_MAPS_H
#define RAMPART_TEST_MAPS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The end of the run of back-to-back mappings holding a: the first address past it,
 * where /proc/self/maps shows a gap. 0 when a is not mapped or the file cannot be read. */
static inline uintptr_t maps_run_end(uintptr_t a)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f) return 0;
	char line[512];
	uintptr_t end = 0;
	while (fgets(line, sizeof line, f)) {
		char *dash;
		uintptr_t lo = strtoul(line, &dash, 16), hi = strtoul(dash + 1, NULL, 16);
		if ((lo <= a && a < hi) || (end && lo == end)) end = hi;
		else if (end) break;
	}
	fclose(f);
	return end;
}

#endif
