/* sizeclass_table — prints the slab size-class table (Markdown) for the README (section Size classes).
 * Built by `make sizeclass-table`; the numbers come from src/slab/sizeclass.c. */
#include <stdio.h>
#include <stdlib.h>

#include "slab/sizeclass.h"

int main(int argc, char **argv)
{
	size_t page = argc > 1 ? strtoul(argv[1], NULL, 0) : 4096;
	printf("| class | slot size | usable | slots per slab | slab size | waste |\n");
	printf("|------:|----------:|-------:|---------------:|----------:|------:|\n");
	for (unsigned c = 0; c < SC_COUNT; c++) {
		struct sc_geometry g;
		sc_geometry(c, page, &g);
		size_t bytes = (size_t)g.pages * page;
		size_t waste = c ? bytes - (size_t)g.slots * g.size : 0;
		if (!c) {
			printf("| 0 | (zero size) | 0 | %u | %zu (never opened) | - |\n", g.slots, bytes);
			continue;
		}
		printf("| %u | %u | %u | %u | %zu | %zu B (%.1f%%) |\n", c, g.size, g.usable, g.slots,
		       bytes, waste, 100.0 * (double)waste / (double)bytes);
	}
	return 0;
}
