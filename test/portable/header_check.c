/*
 * header_check.c — rampart.h as a user's strict build sees it. test/check.mk compiles
 * this file as a user would (gcc or clang -O2 -Wall -Wextra -Wpedantic -Werror, the
 * compiler's own knowledge of malloc left on), as C99 and as C++: a warning that the
 * header provokes in its callers is a build error here. Then it runs, linked with
 * librampart.a: malloc_object_size on a block straight from malloc, before anything
 * is written to it (the call gcc 11 and later took for a read of uninitialised
 * memory when the declaration did not say otherwise).
 *
 * Written in the common subset of C and C++, with nothing but libc and rampart.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rampart.h"

/* The room malloc gave, asked before the block is touched. Not static: gcc judges a
 * function's own body; inlined into main's loop, the call no longer warned. */
size_t room_of_fresh_block(size_t n);
size_t room_of_fresh_block(size_t n)
{
	char *p = (char *)malloc(n);
	if (!p) return 0;
	size_t room = malloc_object_size(p);
	size_t tail = malloc_object_size(p + n - 1);
	free(p);
	return tail >= 1 ? room : 0;
}

int main(void)
{
	static const size_t sizes[] = {1, 24, 100, 4096, 200000, 1 << 20};
	int failures = 0;
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t room = room_of_fresh_block(sizes[i]);
		if (room < sizes[i]) {
			fprintf(stderr, "header_check: malloc(%zu): malloc_object_size %zu\n", sizes[i], room);
			failures++;
		}
	}
	int on_stack = 0;
	if (malloc_object_size(&on_stack) != 0) {
		fprintf(stderr, "header_check: a stack address is not rampart's, yet has a size\n");
		failures++;
	}
	printf("header_check: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
