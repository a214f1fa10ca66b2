/*
 * partitions — call-site partitions (docs/slab.md, "Call-site partitions"): a small
 * slot freed by one partition is handed to no allocation of another while its slab is
 * open. The program runs itself again (a new process draws a new secret) in many
 * children, each one experiment, under profile=strong and profile=light:
 *
 *   sites   site A allocates N blocks of one size and frees them; site B churns the
 *           same size (each allocation frees the block allocated 64 steps earlier,
 *           as in issue 49's measurement). B gets A's freed slots only when the two
 *           sites share a partition: in about 1 process in `partitions` (16 under
 *           both profiles), and then many of them; in every other process none. Blocks of a
 *           third site stay live among A's, so that no slab of A's empties (a slab
 *           wholly free may close and its slots start afresh, anyone's: that is not
 *           the reuse measured here).
 *   unpinned  issue 49's scenario exactly: sites A and B as above, 64-byte blocks,
 *           and no third site, so A's slabs empty wholly once its slots leave the
 *           quarantine (at once under light). The same share of processes is
 *           expected: an emptied slab kept open keeps its slots their partition's
 *           (docs/slab.md, "When a slab empties"), and here A's stay open (measured:
 *           about 40 empty, none closed, at exit), since the class's recent peak keeps
 *           them within its budget and B's churn, recycling its own slots, needs no
 *           slab reset. A slab of A's closed and reopened for B would hand B A's
 *           slots whatever the partitions: more processes, or a few hits, fail.
 *   named   the same with malloc_partition: ids 0 and 1 (distinct partitions by
 *           construction) never share a slot; ids 0 and 0 always do.
 *   same    one site's blocks reuse one another's slots: under strong only after
 *           the slot quarantine's wait, under light at once.
 *   fork    blocks allocated before a fork and freed in the child: taken again by their
 *           own site in the child (the child keeps the parent's partitions), never by
 *           another named partition.
 *   realloc a realloc within the slot keeps the block's partition; one that moves the
 *           block makes the new one the realloc call's site's, and the old slot goes
 *           back to its own partition, whoever frees it.
 *   off     partitions=1: B gets A's slots in every process.
 * Each child prints "hits H first F" (B's allocations that landed on one of A's freed
 * slots, and the step of the first); the parent judges.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "rampart.h"
#include "reexec_run.h"

enum { N = 2000, PIN_EVERY = 4, LIVE = 64, CHURN = 100000 };
static const size_t sizes[] = {64, 1000, 8000};

/* --- the child: one experiment --------------------------------------------------- */

/* Three call sites. The empty asm keeps each call a call (a tail call would make the
 * site its caller's). */
static __attribute__((noinline)) void *site_a(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : "+r"(p));
	return p;
}
static __attribute__((noinline)) void *site_b(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : "+r"(p));
	return p;
}
static __attribute__((noinline)) void *site_pin(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : "+r"(p));
	return p;
}
/* A realloc at a site of its own. */
static __attribute__((noinline)) void *site_realloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	__asm__ volatile("" : "+r"(q));
	return q;
}

/* How the blocks of one side are made: a call site, or a named partition. */
struct side {
	void *(*site)(size_t);
	long id; /* >= 0: malloc_partition(n, id) instead */
};

static void *make(const struct side *s, size_t n)
{
	void *p = s->id >= 0 ? malloc_partition(n, (unsigned long)s->id) : s->site(n);
	CHECK(p != NULL);
	return p;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static bool among(const uintptr_t *sorted, size_t n, const void *p)
{
	uintptr_t key = (uintptr_t)p;
	return bsearch(&key, sorted, n, sizeof *sorted, cmp_ptr) != NULL;
}

static uintptr_t freed[N];
static void *pins[N / PIN_EVERY + 1];
static bool pinned = true; /* false: no third site's blocks among A's (unpinned) */

/* A's N blocks (among live pins, unless unpinned), their addresses kept sorted; not
 * freed here. */
static void allocate_a(const struct side *a, size_t n, void **out)
{
	for (int i = 0, p = 0; i < N; i++) {
		if (pinned && i % PIN_EVERY == 0) pins[p++] = site_pin(n);
		out[i] = make(a, n);
		freed[i] = (uintptr_t)out[i];
	}
	qsort(freed, N, sizeof *freed, cmp_ptr);
}

/* B churns: each allocation frees the block allocated LIVE steps earlier. Counts B's
 * blocks on one of A's freed slots, and the step of the first (-1: none). */
static void churn(const struct side *b, size_t n, long *hits, long *first)
{
	static void *live[LIVE];
	*hits = 0;
	*first = -1;
	for (long r = 0; r < CHURN; r++) {
		free(live[r % LIVE]);
		void *p = live[r % LIVE] = make(b, n);
		if (!among(freed, N, p)) continue;
		if (*first < 0) *first = r;
		++*hits;
	}
	for (int j = 0; j < LIVE; j++) free(live[j]), live[j] = NULL;
}

static int experiment(const struct side *a, const struct side *b, size_t n)
{
	static void *v[N];
	allocate_a(a, n, v);
	for (int i = 0; i < N; i++) free(v[i]);
	long hits, first;
	churn(b, n, &hits, &first);
	printf("hits %ld first %ld\n", hits, first);
	return 0;
}

/* Blocks allocated before a fork, freed in the child: its own site takes them again,
 * another named partition never does. Prints "hits H first F" for each. */
static int fork_experiment(size_t n)
{
	static void *v[N];
	const struct side a = {site_a, -1}, named0 = {NULL, 0}, named1 = {NULL, 1};
	allocate_a(&a, n, v);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < N; i++) free(v[i]);
		long hits, first;
		churn(&a, n, &hits, &first);
		printf("hits %ld first %ld\n", hits, first);
		/* The same with a named partition: id 0 allocates, the child frees, id 1
		 * churns, then id 0. */
		allocate_a(&named0, n, v);
		/* Every PIN_EVERY-th block of id 0 stays live: its slabs then cannot empty
		 * wholly, whatever the third site's pins did after the first part's churn (a
		 * slab of id 0's that emptied and closed would be anyone's when it reopens,
		 * docs/slab.md: 13 of id 1's blocks landed there in 2 of 200 children, with
		 * slab_return_ms=1; none in 300 with these blocks kept). */
		for (int i = 0; i < N; i++)
			if (i % PIN_EVERY) free(v[i]);
		churn(&named1, n, &hits, &first);
		printf("hits %ld first %ld\n", hits, first);
		churn(&named0, n, &hits, &first);
		printf("hits %ld first %ld\n", hits, first);
		fflush(stdout);
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* One block's slot, then churn by a side until it comes back: "hits H first F" with
 * freed[] holding just that slot. */
static void watch_one(void *slot, const struct side *b, size_t n)
{
	for (int i = 0; i < N; i++) freed[i] = (uintptr_t)slot; /* sorted: all the same */
	long hits, first;
	churn(b, n, &hits, &first);
	printf("hits %ld first %ld\n", hits, first);
}

/* realloc's rules, each printed as watch_one prints it:
 *   1. in place: a block of id 0 reallocated within its slot, freed: id 1 never takes
 *      the slot, id 0 does;
 *   2. moved: the new block is the realloc site's (realloc(NULL) there takes its slot
 *      back); the old slot, freed by the realloc, is id 0's (id 1 never takes it, id 0
 *      does). */
/* Live blocks of s, one in the page of x if it can be had, so that x's slab stays open
 * (a slab wholly free may close, and a closed slab's slots forget their partition: a
 * build without canaries lost the watched slot so in 1 process of 3). Blocks that miss
 * are kept too: freed, they would be s's own slots for the next try to take. Under
 * light, whose own slots come lowest first, the page may have none left: the blocks
 * kept are then the slab's best chance. */
static void *page_neighbour(const struct side *s, const void *x, void **missed, int most)
{
	for (int i = 0; i < most; i++) {
		void *q = make(s, 64);
		if ((uintptr_t)q >> 12 == (uintptr_t)x >> 12) return q;
		missed[i] = q;
	}
	return NULL;
}

static int realloc_experiment(void)
{
	const struct side named0 = {NULL, 0}, named1 = {NULL, 1};
	static void *missed[2][256];
	void *p = make(&named0, 64);
	void *keep = page_neighbour(&named0, p, missed[0], 256); /* its slab stays open */
	CHECK(site_realloc(p, 60) == p);
	free(p);
	watch_one(p, &named1, 64);
	watch_one(p, &named0, 64);

	void *old = make(&named0, 64);
	void *keep_old = page_neighbour(&named0, old, missed[1], 256);
	void *moved = site_realloc(old, 3000);
	CHECK(moved != NULL && moved != old);
	void *keep3000 = make(&named0, 3000); /* its slab stays open */
	free(moved);
	/* realloc(NULL, n) at the realloc's site: the moved block's partition. */
	for (int i = 0; i < N; i++) freed[i] = (uintptr_t)moved;
	long hits = 0, first = -1;
	static void *live[LIVE];
	for (long r = 0; r < CHURN; r++) {
		free(live[r % LIVE]);
		void *q = live[r % LIVE] = site_realloc(NULL, 3000);
		CHECK(q != NULL);
		if (q == moved && !hits++) first = r;
	}
	for (int j = 0; j < LIVE; j++) free(live[j]), live[j] = NULL;
	printf("hits %ld first %ld\n", hits, first);
	watch_one(old, &named1, 64);
	watch_one(old, &named0, 64);
	free(keep);
	free(keep_old);
	free(keep3000);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 256; i++) free(missed[k][i]);
	return 0;
}

static int child(char **argv)
{
	size_t n = sizes[atoi(argv[2]) % (int)(sizeof sizes / sizeof *sizes)];
	const struct side a = {site_a, -1}, b = {site_b, -1};
	if (!strcmp(argv[1], "sites") || !strcmp(argv[1], "off")) return experiment(&a, &b, n);
	if (!strcmp(argv[1], "same")) return experiment(&a, &a, n);
	if (!strcmp(argv[1], "unpinned")) {
		pinned = false;
		return experiment(&a, &b, 64);
	}
	if (!strcmp(argv[1], "named")) {
		const struct side x = {NULL, atoi(argv[3])}, y = {NULL, atoi(argv[4])};
		return experiment(&x, &y, n);
	}
	if (!strcmp(argv[1], "fork")) return fork_experiment(n);
	if (!strcmp(argv[1], "realloc")) return realloc_experiment();
	return 2;
}

/* --- the parent ----------------------------------------------------------------- */


/* An experiment of sites A and B (sites, unpinned) over `procs` processes: how many saw
 * B on A's slots, and that each saw none or many (a process with a few would be reuse
 * across partitions). */
static void sites(const char *profile, char *name, int procs, int lo, int hi)
{
	char opts[64], what[240];
	int shared = 0, mixed = 0, broken = 0;
	for (int i = 0; i < procs; i++) {
		char idx[16];
		snprintf(idx, sizeof idx, "%d", i);
		char *args[] = {"partitions", name, idx, NULL};
		snprintf(opts, sizeof opts, "%s", profile);
		struct outcome o = run(opts, args);
		if (o.status || o.lines != 1) broken++;
		else if (o.hits[0] >= LIVE) shared++;
		else if (o.hits[0]) mixed++;
	}
	snprintf(what, sizeof what,
		 "%s: %s: site B took site A's freed slots in %d of %d processes (expected %d to %d), "
		 "%d with only a few, %d broken",
		 profile, name, shared, procs, lo, hi, mixed, broken);
	verdict(!broken && !mixed && shared >= lo && shared <= hi, what);
}


static bool never(const struct outcome *o) { return o->lines == 1 && o->hits[0] == 0; }
static bool always(const struct outcome *o) { return o->lines == 1 && o->hits[0] >= LIVE; }
/* Same site: taken back (how long a slot waits first is system/slot_reuse's). */
static bool same_site(const struct outcome *o) { return o->lines == 1 && o->hits[0] > 0; }
static bool fork_child(const struct outcome *o)
{
	return o->lines == 3 && o->hits[0] > 0 && o->hits[1] == 0 && o->hits[2] > 0;
}
static bool realloc_rules(const struct outcome *o)
{
	return o->lines == 5 && !o->hits[0] && o->hits[1] && o->hits[2] && !o->hits[3] && o->hits[4];
}

int main(int argc, char **argv)
{
	if (argc >= 3) return child(argv);
	if (access("/proc/self/exe", X_OK)) test_skip("cannot run itself again: no /proc/self/exe");
	static const struct {
		const char *options;
		int procs, lo, hi; /* sites: processes, and the range of shared ones allowed */
	} profiles[] = {
		/* 1 in 16: 12.5 expected of 200, none with odds 2.5e-6, more than 35 far less. */
		{"profile=strong", 200, 1, 35},
		{"profile=light", 200, 1, 35},
	};
	for (size_t p = 0; p < sizeof profiles / sizeof *profiles; p++) {
		const char *opt = profiles[p].options;
		sites(opt, "sites", profiles[p].procs, profiles[p].lo, profiles[p].hi);
		/* The same bounds: the odds are the partitions', whatever the pins do. */
		sites(opt, "unpinned", profiles[p].procs, profiles[p].lo, profiles[p].hi);
		char *named_apart[] = {"named", "0", "1", NULL}, *named_same[] = {"named", "0", "0", NULL};
		each(opt, "malloc_partition ids 0 and 1 never share a slot", 12, named_apart, never);
		each(opt, "malloc_partition ids 0 and 0 share their slots", 6, named_same, always);
		char *same[] = {"same", NULL};
		each(opt, "a site takes its own freed slots back", 6, same, same_site);
		char *forked[] = {"fork", NULL};
		each(opt, "a fork child: blocks of the parent's site go back to that site, never to another id", 6,
		     forked, fork_child);
		char opts_off[64];
		snprintf(opts_off, sizeof opts_off, "%s,partitions=1", opt);
		char *off[] = {"off", NULL};
		each(opts_off, "partitions=1: site B takes site A's freed slots", 6, off, always);
		char *re[] = {"realloc", NULL};
		each(opt, "realloc: in place the block keeps its partition; moved, the new block is the realloc "
			  "site's and the old slot its own partition's", 3, re, realloc_rules);
	}
	printf("partitions: %s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
