/* uses_rampart.c — built against an installed rampart through pkg-config: checks that
 * it runs with rampart's allocator (the header's version matches the library's, and
 * malloc hands out rampart's memory). With an argument, it just allocates (for
 * rampart-run). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rampart.h>

int main(int argc, char **argv)
{
	void *p = malloc(100), *q = malloc(1 << 20);
	if (argc > 1) {
		free(p);
		free(q);
		return 0;
	}
	int ok = strcmp(rampart_version(), RAMPART_VERSION) == 0 && malloc_object_size(p) >= 100 &&
		 malloc_object_size(p) == malloc_usable_size(p) &&
		 malloc_object_size(q) == 1 << 20 && strcmp(rampart_guard_backend(), "none") != 0;
	printf("version %s, backend %s, object sizes %zu %zu\n", rampart_version(), rampart_guard_backend(),
	       malloc_object_size(p), malloc_object_size(q));
	free(p);
	free(q);
	return ok ? 0 : 1;
}
