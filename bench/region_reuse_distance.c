/*
 * region_reuse_distance.c — how many frees until a new large block overlaps a freed one.
 *
 * For each size: a victim block is allocated and freed, then malloc + free of the same
 * size repeat until a new block overlaps one of the victim's pages (whoever put it there:
 * the allocator's reuse or the kernel placing a fresh mapping in the hole). The distance
 * is the number of that malloc, counting from the first one after the victim's free, so 1
 * means the very next block of the size got the victim's address. The victim and the
 * blocks after it come from one call site: an allocator that partitions by site, as
 * rampart does, hands another site's freed region to none of them; this measures how
 * long a site's own region is held. Each size runs in a child of its own (no sizes
 * mixed in one quarantine); trials follow each other there.
 * Any allocator works under LD_PRELOAD:
 *
 *   cc -O2 -o region_reuse_distance bench/region_reuse_distance.c
 *   LD_PRELOAD=out/librampart.so ./region_reuse_distance            # default sizes
 *   ./region_reuse_distance -t 21 -m 20000 200000 1048576
 *   ./region_reuse_distance -c                  # churn: peak VMAs, RSS and page tables
 *
 * Output, one line a size: size trials min median max (">" before a figure: the cap was
 * reached, the real distance is larger).
 *
 * Churn mode (-c): 64 live blocks of the sizes given (default the four), 20,000 random
 * allocate/free operations writing the first and last page of each block; prints the
 * peak and final VMA count, the peak RSS (VmHWM) and the page tables (VmPTE) at the end.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t page;

/* malloc at one call site, whoever calls it. The empty asm keeps the call from being a
 * tail call, whose return address would be the caller's. */
static __attribute__((noinline)) void *site_malloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : "+r"(p));
	return p;
}

static int overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen)
{
	uintptr_t a0 = a & ~(page - 1), a1 = (a + alen + page - 1) & ~(page - 1);
	uintptr_t b0 = b & ~(page - 1), b1 = (b + blen + page - 1) & ~(page - 1);
	return a0 < b1 && b0 < a1;
}

static int cmp(const void *x, const void *y)
{
	long a = *(const long *)x, b = *(const long *)y;
	return (a > b) - (a < b);
}

static void one_size(size_t size, int trials, long cap)
{
	long *d = calloc((size_t)trials, sizeof *d);
	int capped = 0;
	for (int t = 0; t < trials; t++) {
		void *victim = site_malloc(size);
		if (!victim) {
			printf("%zu malloc failed\n", size);
			return;
		}
		uintptr_t v = (uintptr_t)victim;
		free(victim);
		long i;
		for (i = 1; i <= cap; i++) {
			void *q = site_malloc(size);
			if (!q) {
				printf("%zu malloc failed after %ld\n", size, i);
				return;
			}
			int hit = overlaps((uintptr_t)q, size, v, size);
			free(q);
			if (hit) break;
		}
		if (i > cap) {
			i = cap;
			capped = 1;
		}
		d[t] = i;
	}
	qsort(d, (size_t)trials, sizeof *d, cmp);
	/* Capped trials sort last: only the max (and the median when half are capped) is a bound. */
	printf("%zu %d %ld %s%ld %s%ld\n", size, trials, d[0], capped && d[trials / 2] == cap ? ">" : "",
	       d[trials / 2], capped ? ">" : "", d[trials - 1]);
	fflush(stdout);
	free(d);
}

static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, key, n) && line[n] == ':') v = strtol(line + n + 1, NULL, 10);
	if (f) fclose(f);
	return v;
}

static long count_vmas(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	long n = 0;
	int c;
	while (f && (c = fgetc(f)) != EOF)
		if (c == '\n') n++;
	if (f) fclose(f);
	return n;
}

static void churn(const size_t *sizes, int nsizes)
{
	enum { LIVE = 64, OPS = 20000 };
	static char *live[LIVE];
	static size_t len[LIVE];
	unsigned seed = 12345;
	long before = count_vmas(), peak = before;
	for (int i = 0; i < OPS; i++) {
		int k = rand_r(&seed) % LIVE;
		if (live[k]) {
			free(live[k]);
			live[k] = NULL;
		} else {
			len[k] = sizes[rand_r(&seed) % nsizes];
			live[k] = malloc(len[k]);
			if (!live[k]) {
				printf("malloc(%zu) failed\n", len[k]);
				exit(1);
			}
			live[k][0] = live[k][len[k] - 1] = 1;
		}
		if (i % 256 == 0) {
			long v = count_vmas();
			if (v > peak) peak = v;
		}
	}
	printf("churn: VMAs before %ld, peak %ld, after %ld; VmHWM %ld KiB, VmPTE %ld KiB\n", before, peak,
	       count_vmas(), status_kib("VmHWM"), status_kib("VmPTE"));
}

int main(int argc, char **argv)
{
	int trials = 21, opt, churn_mode = 0;
	long cap = 20000;
	page = (size_t)sysconf(_SC_PAGESIZE);
	while ((opt = getopt(argc, argv, "t:m:c")) != -1) {
		if (opt == 't') trials = atoi(optarg);
		else if (opt == 'm') cap = atol(optarg);
		else if (opt == 'c') churn_mode = 1;
		else return 2;
	}
	size_t sizes[16] = {200000, 1 << 20, 4 << 20, 32 << 20};
	int n = 4;
	if (optind < argc) {
		n = 0;
		for (int i = optind; i < argc && n < 16; i++) sizes[n++] = strtoull(argv[i], NULL, 0);
	}
	if (trials < 1 || cap < 1) return 2;
	if (churn_mode) {
		churn(sizes, n);
		return 0;
	}
	printf("# size trials min median max\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			one_size(sizes[i], trials, cap);
			_exit(0);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("%zu child failed\n", sizes[i]);
			return 1;
		}
	}
	return 0;
}
