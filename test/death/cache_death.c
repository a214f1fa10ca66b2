/* cache_death.c — a region waiting in the reuse cache is unreachable, and a region
 * taken from it again holds none of its old contents.
 *
 * The region quarantine holds 1,024 frees and more, and lets regions out in random
 * order, so no number of frees puts a given region in the cache: the cache cases run in
 * a re-execution with the quarantine turned off (large_quarantine_bytes=0), where a
 * freed region goes straight to the cache. The realloc cases run with it on. The blocks
 * that fill the cache and those that take from it are made at one call site
 * (test/site.h): a cached region goes only to its block's call-site partition. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "../harness.h"
#include "../site.h"

#define SIZE (1 << 20)
#define OTHERS 200

/* Free `victim`, then enough other blocks that it leaves the quarantine for the cache. */
static char *freed_into_cache(void)
{
	static char *others[OTHERS];
	for (int i = 0; i < OTHERS; i++) others[i] = site_malloc(SIZE);
	char *victim = site_malloc(SIZE);
	memset(victim, 0xa5, SIZE);
	char *volatile stale = victim;
	free(victim);
	for (int i = 0; i < OTHERS; i++) free(others[i]);
	struct rampart_stats st;
	rampart_get_stats(&st);
	if (!st.cache_now || st.cache_evictions) {
		fprintf(stderr, "setup: expected the regions in the cache (now %lu, evicted %lu)\n", st.cache_now,
			st.cache_evictions);
		exit(3);
	}
	return stale;
}

static void read_cached(void) { (void)*(volatile char *)(freed_into_cache() + 4096); }
static void write_cached(void) { *(volatile char *)(freed_into_cache() + SIZE - 1) = 1; }

static void reuse_reads_zero(void)
{
	(void)freed_into_cache();
	struct rampart_stats before, after;
	rampart_get_stats(&before);
	for (int i = 0; i < OTHERS; i++) {
		unsigned char *p = site_malloc(SIZE);
		for (size_t off = 0; off < SIZE; off++)
			if (p[off]) {
				fprintf(stderr, "old contents at %p+%zu\n", (void *)p, off);
				exit(1);
			}
	}
	rampart_get_stats(&after);
	if (after.cache_hits == before.cache_hits) {
		fprintf(stderr, "no cache hit happened\n");
		exit(1);
	}
}

/* A block realloc moved: its old region is closed and quarantined like a freed one. */
static char *moved_away(void)
{
	char *p = malloc(SIZE);
	char *volatile old = p;
	char *q = realloc(p, 16 * SIZE);
	if (q == old) exit(3); /* grew in place: nothing to test */
	return old;
}

static void read_after_realloc_move(void) { (void)*(volatile char *)moved_away(); }
static void free_after_realloc_move(void) { free(moved_away()); }

int main(int argc, char **argv)
{
	static const struct death_case cached[] = {
		{"read of a region in the reuse cache", read_cached, DIE_FAULT, NULL},
		{"write to a region in the reuse cache", write_cached, DIE_FAULT, NULL},
		{"regions reused from the cache read as zero", reuse_reads_zero, DIE_NOT, NULL},
	};
	static const struct death_case moved[] = {
		{"read through the old pointer of a block realloc moved", read_after_realloc_move, DIE_FAULT, NULL},
		{"free of the old pointer of a block realloc moved", free_after_realloc_move, DIE_FATAL, NULL},
	};
	if (argc == 2 && !strcmp(argv[1], "cached")) return death_run_all(cached, sizeof cached / sizeof cached[0]);
	int failed = death_run_all(moved, sizeof moved / sizeof moved[0]);
	const char *o = getenv("RAMPART_OPTIONS");
	char opts[512];
	snprintf(opts, sizeof opts, "%s%slarge_quarantine_bytes=0", o ? o : "", o && *o ? "," : "");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("RAMPART_OPTIONS", opts, 1);
		execl("/proc/self/exe", argv[0], "cached", (char *)NULL);
		perror("exec");
		_exit(2);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) failed = 1;
	return failed;
}
