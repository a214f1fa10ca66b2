/*
 * bugclasses.c — commit one heap bug per scenario and say whether the allocator in use
 * stopped the process, so that allocators can be compared class by class under the same
 * program: `make bug-classes` runs it with no preload (glibc), with rampart and with
 * every allocator named in BENCH_EXTRA, and prints one table.
 *
 * Each scenario runs in a forked child: it commits the bug, then keeps allocating and
 * freeing blocks of the same size (so a check made at a later allocation or free has
 * its chance), then exits 0. The parent reports "stopped (SIGNAME)" when the child died
 * by a signal, "not stopped" when it exited 0, and what else happened otherwise. A
 * scenario that measures exposure instead of a stop ("stale data") prints what the
 * child saw.
 *
 * Compiled with -O0 -fno-builtin: the compiler must not drop or reorder the bugs. Linked
 * with libstdc++, for the C++ operators of the mismatch scenarios under glibc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Pointers the compiler cannot reason about. */
static void *volatile sink;

static void churn(size_t size, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		void *p = malloc(size);
		sink = p;
		free(p);
	}
}

/* Enough live blocks of one size that a freed slot of that size is surely handed out
 * again, whatever the quarantine. */
static void refill(size_t size, int count)
{
	for (int i = 0; i < count; i++) sink = malloc(size);
}

static int double_free(void)
{
	char *p = malloc(64);
	free(p);
	free(p);
	churn(64, 1000);
	return 0;
}

static int double_free_later(void)
{
	char *p = malloc(64), *q = malloc(64);
	free(p);
	free(q);
	churn(64, 100);
	free(p);
	churn(64, 1000);
	return 0;
}

static int double_free_large(void)
{
	char *p = malloc(1 << 20);
	free(p);
	free(p);
	churn(1 << 20, 100);
	return 0;
}

static int free_stack_pointer(void)
{
	char local[64];
	sink = local;
	free(sink);
	churn(64, 1000);
	return 0;
}

static int free_interior_pointer(void)
{
	char *p = malloc(64);
	free(p + 16);
	churn(64, 1000);
	return 0;
}

static int overflow_small(void)
{
	char *p = malloc(24);
	memset(p, 'A', 32); /* 8 bytes past the request */
	free(p);
	churn(24, 1000);
	return 0;
}

/* Inside the slot, short of anything after it: 1,000 bytes asked for lie in a bigger
 * slot (rampart: 1,016 usable bytes, then its canary). */
static int overflow_in_slot(void)
{
	char *p = malloc(1000);
	memset(p, 'A', 1001); /* one byte past the request */
	free(p);
	churn(1000, 1000);
	return 0;
}

static int underflow_small(void)
{
	char *p = malloc(24);
	memset(p - 8, 'A', 8); /* 8 bytes before the block */
	free(p);
	churn(24, 1000);
	return 0;
}

static int write_after_free_small(void)
{
	char *p = malloc(64);
	free(p);
	memset(p, 'A', 16);
	/* Frees push the slot through any quarantine; allocations then take it. */
	for (int i = 0; i < 100000; i++) {
		churn(64, 1);
		refill(64, 1);
	}
	return 0;
}

/* Bugs no canary or check of freed memory sees, which only memory tagging (arm64 MTE)
 * stops, at the access: a read of freed memory, a write that skips the canary into a
 * live neighbour, a write through a stale pointer into the slot's next owner. */
static int read_after_free_small(void)
{
	char *volatile p = malloc(64);
	free(p);
	sink = (void *)(uintptr_t)p[8];
	return 0;
}

/* An address without its top byte: under arm64 memory tagging the tag a block's
 * pointer carries, which differs between neighbours and between owners of a slot. */
static uintptr_t untag(const void *p) { return (uintptr_t)p & (((uintptr_t)1 << 56) - 1); }

/* Two live 24-byte blocks in adjacent 32-byte slots of one page. */
static char *adjacent_live(void)
{
	static char *v[128];
	long page = sysconf(_SC_PAGESIZE);
	for (int i = 0; i < 128; i++) v[i] = malloc(24);
	for (int i = 0; i < 128; i++)
		for (int j = 0; j < 128; j++)
			if (untag(v[j]) == untag(v[i]) + 32 && untag(v[i]) / (uintptr_t)page == untag(v[j]) / (uintptr_t)page)
				return v[i];
	_exit(5);
}

static int overflow_into_live_neighbour(void)
{
	char *p = adjacent_live();
	memset(p + 32, 'A', 8); /* the next block's first bytes, past this one's canary */
	churn(24, 1000);
	return 0;
}

static int write_after_reuse_small(void)
{
	char *p = malloc(64);
	free(p);
	for (int i = 0; i < 200000; i++) {
		char *q = malloc(64);
		if (untag(q) == untag(p)) { /* the slot's first reuse */
			memset(p, 'A', 16); /* the new owner's bytes */
			return 0;
		}
		free(q);
	}
	return 6;
}

static int write_after_free_large(void)
{
	char *p = malloc(1 << 20);
	p[0] = 1;
	free(p);
	p[4096] = 'A';
	return 0;
}

static int overflow_large(void)
{
	char *p = malloc(1 << 20);
	size_t n = malloc_usable_size(p);
	p[n] = 'A'; /* one byte past the usable size */
	free(p);
	return 0;
}

static int underflow_large(void)
{
	char *p = malloc(1 << 20);
	p[-4097] = 'A'; /* a page and a byte before the block */
	free(p);
	return 0;
}

/* C23 free_sized with the wrong size; exit 4 where the allocator has no free_sized. */
static int sized_free_wrong_size(void)
{
	void (*free_sized_fn)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
	if (!free_sized_fn) return 4;
	char *p = malloc(64);
	free_sized_fn(p, 4096);
	churn(64, 1000);
	return 0;
}

/* The C++ operators by their mangled names (x86_64, arm64), from libstdc++ (the program
 * links it) or from the allocator preloaded in front of it: a C program can commit the
 * mismatches of allocation and deallocation that a C++ one does. */
void *_Znwm(unsigned long size);
void *_Znam(unsigned long size);
void _ZdlPv(void *p);
void _ZdaPv(void *p);

/* mimalloc-bench's invalid_array_delete_char: new char, freed by delete[]. */
static int array_delete_of_new(void)
{
	char *p = _Znwm(1);
	sink = p;
	_ZdaPv(p);
	churn(1, 1000);
	return 0;
}

static int delete_of_new_array(void)
{
	char *p = _Znam(64);
	sink = p;
	_ZdlPv(p);
	churn(64, 1000);
	return 0;
}

static int free_of_new(void)
{
	char *p = _Znwm(64);
	sink = p;
	free(p);
	churn(64, 1000);
	return 0;
}

static int delete_of_malloc(void)
{
	char *p = malloc(64);
	sink = p;
	_ZdlPv(p);
	churn(64, 1000);
	return 0;
}

static int free_of_new_array_large(void)
{
	char *p = _Znam(1 << 20);
	sink = p;
	free(p);
	churn(1 << 20, 100);
	return 0;
}

static int zero_size_access(void)
{
	char *p = malloc(0);
	memset(p, 'A', 8);
	free(p);
	return 0;
}

/* Exposure, not a stop: after a 64-byte block full of 'S' is freed, do any of the next
 * 200,000 blocks of that size (half of them freed again at once) hold an 'S'?
 * Exit 3 when one does. */
static int stale_data(void)
{
	char *p = malloc(64);
	memset(p, 'S', 64);
	free(p);
	for (int i = 0; i < 200000; i++) {
		char *q = malloc(64);
		if (!q) break;
		if (i % 2) free(q); /* cycle any quarantine */
		for (int j = 0; j < 64; j++)
			if (q[j] == 'S') _exit(3);
	}
	return 0;
}

/* Exposure across call sites (issue 49): site A allocates blocks of one size and frees
 * them, site B then churns that size (each allocation freeing the block allocated
 * `live` before). In how many of CROSS_PROCS processes does B get a block that overlaps
 * one of A's freed ones? Each process is this program run again (a new process, a new
 * secret where the allocator draws one). Blocks of a third site stay live among A's, so
 * that no run of A's slots is wholly free (an allocator may hand a wholly free page to
 * anyone). For 64 B: 2,000 blocks, then 100,000 allocations with 64 live. For 64 KiB (a
 * small block under rampart) and the large sizes: 128 blocks, every page written (so
 * that an allocator keeping freed pages keeps them), then 4,000 allocations with 8
 * live: enough frees to push A's regions through rampart's region quarantine (1,024
 * frees and a random number more) into its reuse cache. */
enum { CROSS_PROCS = 32 };
static char *self;

struct cross {
	size_t size;
	int n, live, churn;
};
static const struct cross crosses[] = {
	{64, 2000, 64, 100000},
	{64 << 10, 128, 8, 4000},
	{256 << 10, 128, 8, 4000},
	{1 << 20, 128, 8, 4000},
};
enum { CROSS_MAX_N = 2000, CROSS_MAX_LIVE = 64 };

static __attribute__((noinline)) void *site_a(size_t n) { return malloc(n); }
static __attribute__((noinline)) void *site_b(size_t n) { return malloc(n); }
static __attribute__((noinline)) void *site_pin(size_t n) { return malloc(n); }

static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* Does [q, q + size) overlap one of the n blocks of size bytes starting at sorted[]? */
static int overlaps(const uintptr_t *sorted, int n, uintptr_t q, size_t size)
{
	int lo = 0, hi = n; /* the first start above q */
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (sorted[mid] <= q) lo = mid + 1;
		else hi = mid;
	}
	return (lo > 0 && sorted[lo - 1] + size > q) || (lo < n && sorted[lo] < q + size);
}

static void write_pages(char *p, size_t size)
{
	for (size_t i = 0; size >= 4096 && i < size; i += 4096) p[i] = 1;
}

/* One process, for crosses[which]: 1 when B got one of A's blocks, 0 when not. */
static int cross_site_once(int which)
{
	const struct cross *c = &crosses[which];
	static uintptr_t freed[CROSS_MAX_N];
	static void *a[CROSS_MAX_N], *live[CROSS_MAX_LIVE];
	for (int i = 0; i < c->n; i++) {
		if (i % 4 == 0) sink = site_pin(c->size);
		a[i] = site_a(c->size);
		if (!a[i]) return 2;
		write_pages(a[i], c->size);
		freed[i] = (uintptr_t)a[i];
	}
	qsort(freed, (size_t)c->n, sizeof *freed, cmp_addr);
	for (int i = 0; i < c->n; i++) free(a[i]);
	for (int r = 0; r < c->churn; r++) {
		free(live[r % c->live]);
		uintptr_t q = (uintptr_t)(live[r % c->live] = site_b(c->size));
		if (!q) return 2;
		if (overlaps(freed, c->n, q, c->size)) return 1;
	}
	return 0;
}

/* The processes where B got A's blocks (the exit status), for crosses[which]. */
static int cross_site_of(int which)
{
	int seen = 0;
	char arg[16];
	snprintf(arg, sizeof arg, "%d", which);
	for (int i = 0; i < CROSS_PROCS; i++) {
		pid_t pid = fork();
		if (pid < 0) _exit(100);
		if (pid == 0) {
			execl(self, self, "--cross-site-once", arg, (char *)NULL);
			_exit(127);
		}
		int st;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) > 1) _exit(101);
		seen += WEXITSTATUS(st);
	}
	return seen;
}

static int cross_site(void) { return cross_site_of(0); }
static int cross_site_64k(void) { return cross_site_of(1); }
static int cross_site_256k(void) { return cross_site_of(2); }
static int cross_site_1m(void) { return cross_site_of(3); }

static int counts_processes(int (*run)(void))
{
	return run == cross_site || run == cross_site_64k || run == cross_site_256k || run == cross_site_1m;
}

static const struct scenario {
	const char *name;
	int (*run)(void);
} scenarios[] = {
	{"double free (64 B), at once", double_free},
	{"double free (64 B), after other frees", double_free_later},
	{"double free (1 MiB)", double_free_large},
	{"free of a stack pointer", free_stack_pointer},
	{"free of an interior pointer (64 B block + 16)", free_interior_pointer},
	{"free_sized with the wrong size (64 B block, 4096 given)", sized_free_wrong_size},
	{"delete[] of new (new char)", array_delete_of_new},
	{"delete of new[] (64 B)", delete_of_new_array},
	{"free of new (64 B)", free_of_new},
	{"delete of malloc (64 B)", delete_of_malloc},
	{"free of new[] (1 MiB)", free_of_new_array_large},
	{"overflow: 8 bytes past a 24-byte block, then free", overflow_small},
	{"overflow: 1 byte past a 1,000-byte block (inside its slot), then free", overflow_in_slot},
	{"underflow: 8 bytes before a 24-byte block, then free", underflow_small},
	{"write after free (64 B), then churn of that size", write_after_free_small},
	{"read after free (64 B)", read_after_free_small},
	{"overflow: 8 bytes into the live next block, past the canary", overflow_into_live_neighbour},
	{"write through a stale pointer after the slot's reuse (64 B)", write_after_reuse_small},
	{"write after free (1 MiB)", write_after_free_large},
	{"overflow: 1 byte past a 1 MiB block's usable size", overflow_large},
	{"underflow: a page before a 1 MiB block", underflow_large},
	{"write through malloc(0)", zero_size_access},
	{"stale data: a freed block's bytes in a later block", stale_data},
	{"a block freed at one call site, then taken by an allocation from another site", cross_site},
	{"the same with 64 KiB blocks", cross_site_64k},
	{"the same with 256 KiB blocks (large)", cross_site_256k},
	{"the same with 1 MiB blocks (large)", cross_site_1m},
};

int main(int argc, char **argv)
{
	self = argv[0];
	if (argc > 2 && !strcmp(argv[1], "--cross-site-once"))
		return cross_site_once(atoi(argv[2]) % (int)(sizeof crosses / sizeof crosses[0]));
	const char *only = argc > 1 ? argv[1] : NULL;
	for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
		const struct scenario *s = &scenarios[i];
		if (only && strcmp(only, s->name) != 0) continue;
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) { perror("fork"); return 1; }
		if (pid == 0) {
			/* The allocator's report goes to stderr; keep the table readable. */
			int devnull = open("/dev/null", O_WRONLY);
			if (devnull >= 0) dup2(devnull, 2);
			alarm(60);
			_exit(s->run());
		}
		int status;
		if (waitpid(pid, &status, 0) < 0) { perror("waitpid"); return 1; }
		const char *verdict;
		char buf[64];
		if (WIFSIGNALED(status)) {
			int sig = WTERMSIG(status);
			snprintf(buf, sizeof buf, "%s (%s)", sig == SIGALRM ? "timeout" : "stopped",
				 sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
			verdict = buf;
		} else if (counts_processes(s->run) && WEXITSTATUS(status) <= CROSS_PROCS) {
			snprintf(buf, sizeof buf, "in %d of %d processes", WEXITSTATUS(status), CROSS_PROCS);
			verdict = buf;
		} else if (WEXITSTATUS(status) == 0) {
			verdict = s->run == stale_data ? "none seen" : "not stopped";
		} else if (s->run == stale_data && WEXITSTATUS(status) == 3) {
			verdict = "seen";
		} else if (s->run == sized_free_wrong_size && WEXITSTATUS(status) == 4) {
			verdict = "no free_sized";
		} else {
			snprintf(buf, sizeof buf, "exit %d", WEXITSTATUS(status));
			verdict = buf;
		}
		printf("%s\t%s\n", s->name, verdict);
	}
	return 0;
}
