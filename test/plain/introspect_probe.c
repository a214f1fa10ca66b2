/* introspect_probe — a plain program (built without rampart) that allocates and asks
 * glibc's introspection functions about its blocks: system/passthrough_next runs it with
 * rampart preloaded in front of another allocator, under passthrough=1. Exit 0 when every
 * answer is sane; a crash is what the test looks for. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	char *p = malloc(1000), *q = calloc(1, 200000);
	if (!p || !q) return 2;
	if (malloc_usable_size(p) < 1000 || malloc_usable_size(q) < 200000) return 3;
	p = realloc(p, 5000);
	if (!p || malloc_usable_size(p) < 5000) return 4;
	struct mallinfo2 mi = mallinfo2();
	if (!mi.uordblks && !mi.hblkhd) return 5;
	FILE *null = fopen("/dev/null", "w");
	if (!null || malloc_info(0, null) != 0) return 6;
	fclose(null);
	free(p);
	free(q);
	malloc_trim(0);
	return 0;
}
