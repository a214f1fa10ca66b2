/* own_names.c — a program linked with the static library (librampart.a) may use for its
 * own functions and variables the names rampart uses inside: `fatal`, `out_str`,
 * `os_page`, `slab_alloc`... (the static library renames its internal symbols; without
 * that, this file would not link: "multiple definition of `fatal'"). Linking is half the
 * test; running it checks that each name is the program's own and that rampart still
 * serves malloc and still reports a heap bug itself. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rampart.h"
#include "../harness.h"

/* Functions and variables named as rampart's internal ones (src/os/os.h, stats.h, slab.h,
 * large.h, guard.h, meta.h, random.h, quarantine.h, cache.h, policy.h, options.h,
 * init.h), with the program's own meanings. */
static int calls;
void fatal(const char *what);
void fatal(const char *what)
{
	fprintf(stderr, "own fatal: %s\n", what);
	exit(3);
}
int fatal_report(int x);
int fatal_report(int x) { return calls++, x + 1; }
int out_str(int x);
int out_str(int x) { return calls++, x * 2; }
int os_init(void);
int os_init(void) { return calls++, 7; }
int slab_alloc(int x);
int slab_alloc(int x) { return calls++, x - 1; }
int slab_free(int x);
int slab_free(int x) { return calls++, x + 2; }
int large_alloc(int x);
int large_alloc(int x) { return calls++, x * 3; }
int guard_open(int x);
int guard_open(int x) { return calls++, -x; }
int meta_alloc(int x);
int meta_alloc(int x) { return calls++, x ^ 1; }
int random_u64(void);
int random_u64(void) { return calls++, 4; } /* chosen by fair dice roll */
int region_quarantine_push(int x);
int region_quarantine_push(int x) { return calls++, x + 10; }
int reuse_cache_put(int x);
int reuse_cache_put(int x) { return calls++, x + 20; }
int policy_read(int x);
int policy_read(int x) { return calls++, x + 30; }
int rampart_malloc(int x);
int rampart_malloc(int x) { return calls++, x + 40; }
int os_page = 12345;
char roots_page[3] = "rp";
long rampart_state = -1;
long stat_counters[2] = {5, 6};

static void double_free(void)
{
	void *p = malloc(48);
	free(p);
	free(p);
}

int main(void)
{
	CHECK(fatal_report(1) == 2 && out_str(4) == 8 && os_init() == 7 && slab_alloc(5) == 4 &&
	      slab_free(5) == 7 && large_alloc(2) == 6 && guard_open(3) == -3 && meta_alloc(2) == 3 &&
	      random_u64() == 4 && region_quarantine_push(1) == 11 && reuse_cache_put(1) == 21 && policy_read(1) == 31 &&
	      rampart_malloc(2) == 42);
	CHECK(calls == 13);

	/* rampart serves the program's blocks, small and large, and its variables are its own. */
	enum { N = 200 };
	static char *v[N];
	for (int i = 0; i < N; i++) {
		size_t n = i % 10 == 9 ? (size_t)(300 << 10) : (size_t)(16 + 37 * i);
		CHECK((v[i] = malloc(n)) != NULL);
		memset(v[i], i, n);
	}
	for (int i = 0; i < N; i++) free(v[i]);
	const char *backend = rampart_guard_backend();
	CHECK(backend && (!strcmp(backend, "madvise") || !strcmp(backend, "mprotect")));
	struct rampart_stats st;
	rampart_get_stats(&st);
	CHECK(st.guarded_maps >= 1); /* the large blocks were rampart's */
	CHECK(os_page == 12345 && !strcmp(roots_page, "rp") && rampart_state == -1 && stat_counters[1] == 6);

	/* A heap bug is still rampart's to report (its own fatal line, SIGABRT), not this
	 * program's `fatal` (which would exit with status 3). */
	static const struct death_case cases[] = {{"double free", double_free, DIE_FATAL, "double free"}};
	if (death_run_all(cases, 1)) return 1;
	puts("own_names: the program's names are its own, rampart serves and reports");
	return 0;
}
