/* introspect.c — glibc's introspection (mallinfo2, mallinfo, malloc_info, malloc_stats,
 * mallopt, malloc_trim) and rampart_get_heap_stats, checked against what this program
 * allocates and frees; the reports of RAMPART_OPTIONS=stats=1|json at exit; the large
 * quarantine and cache bounds set at run time; stats_file=. Re-executes itself for the exit
 * cases. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "../profile.h"
#include "slab/sizeclass.h"

#ifndef __GLIBC__
/* mallinfo, mallinfo2, malloc_info and mallopt are glibc's; other C libraries (musl, for
 * check-musl) have none of them, so there is nothing to compare against. */
int main(void)
{
	fprintf(stderr, "SKIP: not a glibc build: glibc's introspection functions do not exist here\n");
	return 77;
}
#else
static int failures;
#define CHECK(cond, ...)                                                                 \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                    \
			fprintf(stderr, "\n");                                           \
			failures++;                                                      \
		}                                                                        \
	} while (0)

#define SMALL 1000
#define SMALL_SIZE 100 /* class of 112-byte slots, usable 104 */
#define SLOT 112

/* Without stdio: a FILE and its buffer would be allocated and freed between a trim and
 * the count of empty slabs after it (and leave one empty slab behind). */
static long rss_kib(void)
{
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	char buf[128];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	const char *res = strchr(buf, ' ');
	return res ? strtol(res + 1, NULL, 10) * (sysconf(_SC_PAGESIZE) / 1024) : 0;
}

static size_t class_of(const struct rampart_heap_stats *h, size_t size)
{
	for (size_t c = 1; c < h->classes; c++)
		if (h->size_class[c].usable >= size) return c;
	return 0;
}

static void test_mallinfo(void)
{
	static void *small[SMALL];
	static const size_t large_sizes[] = {1 << 20, 2 << 20, (3 << 20) + 1};
	void *large[3];
	size_t large_bytes = 0;
	for (int i = 0; i < 3; i++) large_bytes += (large_sizes[i] + 4095) & ~(size_t)4095;

	struct mallinfo2 m0 = mallinfo2();
	CHECK(m0.uordblks + m0.fordblks == m0.arena, "arena %zu != %zu + %zu", m0.arena, m0.uordblks, m0.fordblks);
	CHECK(m0.keepcost == 0 && m0.usmblks == 0, "keepcost %zu usmblks %zu", m0.keepcost, m0.usmblks);

	for (int i = 0; i < SMALL; i++) small[i] = malloc(SMALL_SIZE);
	for (int i = 0; i < 3; i++) large[i] = malloc(large_sizes[i]);
	struct mallinfo2 m1 = mallinfo2();
	CHECK(m1.uordblks - m0.uordblks == (size_t)SMALL * SLOT, "uordblks grew by %zu, want %d",
	      m1.uordblks - m0.uordblks, SMALL * SLOT);
	CHECK(m1.arena >= m0.arena + (size_t)SMALL * SLOT, "arena %zu -> %zu", m0.arena, m1.arena);
	CHECK(m1.uordblks + m1.fordblks == m1.arena, "arena");
	CHECK(m1.hblks == m0.hblks + 3, "hblks %zu -> %zu", m0.hblks, m1.hblks);
	CHECK(m1.hblkhd == m0.hblkhd + large_bytes, "hblkhd %zu -> %zu (want +%zu)", m0.hblkhd, m1.hblkhd, large_bytes);

	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	size_t c = class_of(&h, SMALL_SIZE);
	CHECK(h.size_class[c].slot_size == SLOT, "class %zu slot %zu", c, h.size_class[c].slot_size);
	CHECK(h.size_class[c].live >= SMALL, "class live %zu", h.size_class[c].live);
	CHECK(h.size_class[c].bytes_open >= SMALL * SLOT, "class open %zu", h.size_class[c].bytes_open);
	CHECK(h.large_live == m1.hblks && h.large_live_bytes == m1.hblkhd, "large %zu %zu", h.large_live,
	      h.large_live_bytes);
	CHECK(!strcmp(h.version, RAMPART_VERSION) && !strcmp(rampart_version(), RAMPART_VERSION), "version %s", h.version);
	CHECK(!strcmp(h.guard_backend, rampart_guard_backend()), "backend %s", h.guard_backend);

	/* mallinfo: the same figures, clamped to int. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	struct mallinfo mi = mallinfo();
#pragma GCC diagnostic pop
	CHECK((size_t)mi.hblks == m1.hblks && (size_t)mi.hblkhd == m1.hblkhd, "mallinfo hblks %d hblkhd %d", mi.hblks,
	      mi.hblkhd);
	CHECK((size_t)mi.uordblks == m1.uordblks, "mallinfo uordblks %d", mi.uordblks);

	for (int i = 0; i < SMALL; i++) free(small[i]);
	for (int i = 0; i < 3; i++) free(large[i]);
	struct mallinfo2 m2 = mallinfo2();
	CHECK(m2.uordblks == m0.uordblks, "uordblks after free %zu, before %zu", m2.uordblks, m0.uordblks);
	CHECK(m2.hblks == m0.hblks && m2.hblkhd == m0.hblkhd, "hblks %zu hblkhd %zu after free", m2.hblks, m2.hblkhd);
	/* Freed slots wait in the quarantine: free but held, counted in smblks/fsmblks. */
	CHECK(m2.smblks >= m1.smblks && m2.fsmblks <= m2.fordblks, "smblks %zu fsmblks %zu", m2.smblks, m2.fsmblks);
	rampart_get_heap_stats(&h);
	/* (Without the region quarantine, profile light, they go to the cache, which joins
	 * neighbouring regions into one entry.) */
	CHECK(h.large_quarantined + h.large_cached >= (test_region_quarantine() ? 3u : 1u),
	      "large quarantined %zu cached %zu", h.large_quarantined, h.large_cached);
}

static void test_malloc_info(void)
{
	char *buf = NULL;
	size_t len = 0;
	void *p = malloc(SMALL_SIZE), *q = malloc(1 << 20);
	FILE *f = open_memstream(&buf, &len);
	CHECK(f != NULL, "open_memstream");
	errno = 77;
	CHECK(malloc_info(0, f) == 0, "malloc_info failed");
	CHECK(errno == 77, "errno changed to %d", errno);
	fclose(f);
	CHECK(strncmp(buf, "<malloc version=\"rampart-1\">", 28) == 0, "starts '%.40s'", buf);
	CHECK(strstr(buf, "</malloc>\n") != NULL, "no end tag");
	char cls[64]; /* the class of 112 bytes, the canary's 8 bytes not usable */
	snprintf(cls, sizeof cls, "size=\"112\" usable=\"%u\" live=\"", 112 - SC_CANARY);
	CHECK(strstr(buf, cls) != NULL, "no class of 112");
	CHECK(strstr(buf, "<large live=\"") && strstr(buf, "<cache count=\"") && strstr(buf, "<quarantine count=\""),
	      "missing elements: %s", buf);
	free(buf);
	/* Options other than 0: what glibc's code does (not its manual page's -1 and
	 * errno): the error number returned, errno untouched, nothing written. */
	int (*glibc_info)(int, FILE *) = (int (*)(int, FILE *))dlsym(RTLD_NEXT, "malloc_info");
	buf = NULL;
	f = open_memstream(&buf, &len);
	CHECK(f != NULL, "open_memstream");
	for (int options = -1; options <= 2; options += 2) {
		errno = 77;
		int got = malloc_info(options, f);
		CHECK(got == EINVAL && errno == 77, "malloc_info(%d): %d, errno %d", options, got, errno);
		if (glibc_info) { /* linked dynamically: glibc's own answer beside ours */
			errno = 77;
			int want = glibc_info(options, f);
			CHECK(got == want && errno == 77, "malloc_info(%d): %d, glibc's %d (errno %d)", options, got, want,
			      errno);
		}
	}
	fclose(f);
	CHECK(len == 0, "malloc_info with options wrote '%s'", buf);
	free(buf);
	free(p);
	free(q);
}

/* Capture what fn writes to stderr. */
static void capture_stderr(void (*fn)(void), char *out, size_t cap)
{
	int pfd[2];
	if (pipe(pfd)) abort();
	int saved = dup(2);
	dup2(pfd[1], 2);
	close(pfd[1]);
	fn();
	dup2(saved, 2);
	close(saved);
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(pfd[0], out + n, cap - 1 - n)) > 0) n += (size_t)r;
	out[n] = 0;
	close(pfd[0]);
}

static void test_malloc_stats(void)
{
	static char out[65536];
	errno = 55;
	capture_stderr(malloc_stats, out, sizeof out);
	CHECK(errno == 55, "errno %d", errno);
	CHECK(strstr(out, "rampart " RAMPART_VERSION " statistics") != NULL, "'%.200s'", out);
	CHECK(strstr(out, "large blocks: ") && strstr(out, "reuse cache: ") && strstr(out, "guard layer: "), "'%s'", out);
}

static void test_mallopt(void)
{
	errno = 33;
	CHECK(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 0, "M_MMAP_THRESHOLD");
	CHECK(mallopt(M_TRIM_THRESHOLD, 1 << 20) == 0, "M_TRIM_THRESHOLD");
	CHECK(mallopt(M_ARENA_MAX, 1) == 0, "M_ARENA_MAX");
	CHECK(mallopt(M_PERTURB, 0x55) == 0, "M_PERTURB 0x55");
	CHECK(mallopt(M_PERTURB, 0) == 1, "M_PERTURB 0");
	CHECK(mallopt(M_MXFAST, 0) == 1, "M_MXFAST 0");
	CHECK(mallopt(M_CHECK_ACTION, 3) == 1, "M_CHECK_ACTION 3");
	CHECK(mallopt(M_CHECK_ACTION, 0) == 0, "M_CHECK_ACTION 0");
	CHECK(mallopt(12345, 1) == 0, "unknown");
	CHECK(errno == 33, "errno %d", errno);
}

/* Freeing many small blocks leaves empty slabs open for reuse (within a budget per
 * class); malloc_trim closes them: RSS goes down, and a second trim finds nothing. */
static void test_trim(void)
{
	enum { PER = 400 };
	static void *blocks[40][PER];
	malloc_trim(0);
	for (int c = 0; c < 40; c++) {
		size_t size = 512 + (size_t)c * 1024; /* classes from 640 B to 40 KiB */
		for (int i = 0; i < PER; i++) {
			blocks[c][i] = malloc(size);
			memset(blocks[c][i], 1, size);
		}
	}
	for (int c = 0; c < 40; c++)
		for (int i = 0; i < PER; i++) free(blocks[c][i]);
	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	long before = rss_kib();
	size_t empty = h.slabs_empty;
	errno = 21;
	int r = malloc_trim(0);
	CHECK(errno == 21, "errno %d", errno);
	long after = rss_kib();
	rampart_get_heap_stats(&h);
	fprintf(stderr, "trim: %zu empty slabs, RSS %ld KiB -> %ld KiB\n", empty, before, after);
	CHECK(r == 1, "malloc_trim returned %d", r);
	CHECK(empty > 0 && h.slabs_empty == 0, "empty slabs %zu -> %zu", empty, h.slabs_empty);
	CHECK(before - after >= 1024, "RSS only went from %ld to %ld KiB", before, after);
	CHECK(malloc_trim(0) == 0, "second trim released something");
}

/* Run this program again with RAMPART_OPTIONS extended by extra; its stderr in out. */
/* Seconds a re-executed child may run before SIGALRM ends it (0: no limit). */
static unsigned rerun_limit;

static int rerun(const char *self, const char *mode, const char *extra, char *out, size_t cap)
{
	char opts[512];
	const char *old = getenv("RAMPART_OPTIONS");
	snprintf(opts, sizeof opts, "%s%s%s", old ? old : "", old ? "," : "", extra);
	int pfd[2];
	if (pipe(pfd)) abort();
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 2);
		close(pfd[0]);
		setenv("RAMPART_OPTIONS", opts, 1);
		alarm(rerun_limit); /* kept across execve */
		execl(self, self, mode, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(pfd[0], out + n, cap - 1 - n)) > 0) n += (size_t)r;
	out[n] = 0;
	close(pfd[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Child: allocate, free, and leave some large blocks live for the exit report. */
static int child_workload(void)
{
	static void *keep[5];
	for (int i = 0; i < 5; i++) keep[i] = malloc((size_t)(i + 1) << 20);
	for (int i = 0; i < 200; i++) free(malloc(300 << 10));
	return keep[0] ? 0 : 1;
}

/* Child: the workload, then stderr closed before exit, as ls and sort do. */
static int child_closed_stderr(void)
{
	int status = child_workload();
	close(2);
	return status;
}

/* Child: print the large figures after churn (for the run-time bounds). */
static int child_bounds(void)
{
	for (int i = 0; i < 300; i++) free(malloc((size_t)(200 + i % 7) << 10));
	struct rampart_heap_stats h;
	rampart_get_heap_stats(&h);
	fprintf(stderr, "quarantined=%zu cached=%zu\n", h.large_quarantined, h.large_cached);
	return 0;
}

static void test_exit_reports(const char *self)
{
	static char out[131072];
	int st = rerun(self, "--workload", "stats=1", out, sizeof out);
	CHECK(st == 0, "status %d", st);
	CHECK(strstr(out, "rampart " RAMPART_VERSION " statistics (pid ") != NULL, "text report: '%.300s'", out);
	CHECK(strstr(out, "large blocks: 5 live (15.0 MiB)") != NULL, "text report: '%s'", out);
	CHECK(strstr(out, " backend, memory tagging ") && !strstr(out, " memory tagging, "), "guard line: '%s'", out);

	st = rerun(self, "--workload", "stats=json", out, sizeof out);
	CHECK(st == 0, "status %d", st);
	CHECK(out[0] == '{' && strstr(out, "}}\n") != NULL, "json: '%.200s'", out);
	CHECK(strstr(out, "\"large\":{\"live\":5,\"live_bytes\":15728640,") != NULL, "json: '%s'", out);
	CHECK(strstr(out, "\"cache\":{\"hits\":") != NULL, "json: '%s'", out);

	/* stats_file=: the report reaches the file though the program closed stderr; it is
	 * appended to, and a new file is private (0600). */
	char dir[] = "/tmp/rampart-stats-XXXXXX", path[64], extra[128];
	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof path, "%s/report", dir);
	snprintf(extra, sizeof extra, "stats=1,stats_file=%s", path);
	for (int round = 1; round <= 2; round++) {
		st = rerun(self, "--closed-stderr", extra, out, sizeof out);
		CHECK(st == 0 && out[0] == 0, "status %d, stderr '%s'", st, out);
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "no %s", path);
	if (fd >= 0) {
		struct stat sb;
		CHECK(fstat(fd, &sb) == 0 && (sb.st_mode & 0777) == 0600, "mode %o", (unsigned)sb.st_mode & 0777);
		ssize_t n = read(fd, out, sizeof out - 1);
		out[n > 0 ? n : 0] = 0;
		close(fd);
		const char *first = strstr(out, "large blocks: 5 live (15.0 MiB)");
		CHECK(first && strstr(first + 1, "large blocks: 5 live (15.0 MiB)"), "two reports: '%s'", out);
		unlink(path);
	}
	/* stats_file alone turns the report on (stats=1): it reaches the file. */
	snprintf(extra, sizeof extra, "stats_file=%s", path);
	st = rerun(self, "--closed-stderr", extra, out, sizeof out);
	CHECK(st == 0 && out[0] == 0, "stats_file alone: status %d, stderr '%s'", st, out);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "stats_file alone: no %s", path);
	if (fd >= 0) {
		ssize_t n = read(fd, out, sizeof out - 1);
		out[n > 0 ? n : 0] = 0;
		close(fd);
		CHECK(strstr(out, "large blocks: 5 live (15.0 MiB)") != NULL, "stats_file alone: '%s'", out);
		unlink(path);
	}
	/* A report on stderr: verbose=1 says at start-up that a program that closes stderr
	 * before it exits shows none, and what to do; not when it goes to a file. Either
	 * way, that a program ending with _exit (no destructor runs) shows none. */
	st = rerun(self, "--workload", "stats=1,verbose=1", out, sizeof out);
	CHECK(st == 0 &&
		      strstr(out, "; stats text on stderr at exit (none if the program closes stderr first, as ls and sort "
				  "do: stats_file=PATH; nor if it ends with _exit, as dash does); ") &&
		      strstr(out, ", slab_return_ms=") && strstr(out, ", check_at_exit=") &&
		      strstr(out, "large blocks: 5 live (15.0 MiB)"),
	      "stats on stderr under verbose=1: status %d, '%s'", st, out);
	snprintf(extra, sizeof extra, "stats=json,verbose=1,stats_file=%s", path);
	st = rerun(self, "--workload", extra, out, sizeof out);
	CHECK(st == 0 && strstr(out, "; stats json to /tmp/") &&
		      strstr(out, " at exit (none if the program ends with _exit, as dash does); ") &&
		      !strstr(out, "on stderr at exit"),
	      "stats to a file under verbose=1: status %d, '%s'", st, out);
	unlink(path);

	/* A file that cannot be opened: said under verbose=1, and the report goes to stderr. */
	snprintf(extra, sizeof extra, "stats=1,verbose=1,stats_file=%s/no/such/dir", dir);
	st = rerun(self, "--workload", extra, out, sizeof out);
	CHECK(st == 0 &&
		      strstr(out, "/no/such/dir: cannot be opened: ENOENT (No such file or directory); the report goes to stderr\n") &&
		      strstr(out, "large blocks: 5 live (15.0 MiB)"),
	      "status %d: '%s'", st, out);

	/* stats_file= names no regular file: one warning, no report anywhere, and the process
	 * exits at once. A symbolic link is not followed (the file it points to stays empty,
	 * a dangling one creates nothing); a FIFO without a reader does not block the exit
	 * (it did: the open waited for a reader for ever), and one with a reader gets
	 * nothing; a directory neither. */
	char target[64], link[64], fifo[64];
	snprintf(target, sizeof target, "%s/target", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "cannot create %s", target);
	if (fd >= 0) close(fd);
	CHECK(symlink(target, link) == 0, "symlink: errno %d", errno);
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: errno %d", errno);
	const char *const bad[] = {link, fifo, fifo, dir};
	rerun_limit = 20;
	for (int i = 0; i < 4; i++) {
		/* The third case holds the FIFO open for reading, so the open succeeds. */
		int reader = i == 2 ? open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
		CHECK(i != 2 || reader >= 0, "FIFO reader: errno %d", errno);
		for (int closed = 0; closed < 2; closed++) {
			snprintf(extra, sizeof extra, "stats=1,stats_file=%s", bad[i]);
			st = rerun(self, closed ? "--closed-stderr" : "--workload", extra, out, sizeof out);
			char want[160];
			snprintf(want, sizeof want,
				 "rampart: warning: stats_file %s: not a regular file (a symbolic link, FIFO, "
				 "device or directory); no statistics report\n",
				 bad[i]);
			/* With stderr closed by the program, the warning has nowhere to go. */
			CHECK(st == 0 && (closed ? !strcmp(out, "") : !strcmp(out, want)), "%s (%s): status %d, '%s'",
			      bad[i], closed ? "stderr closed" : "stderr open", st, out);
		}
		if (reader >= 0) {
			ssize_t n = read(reader, out, sizeof out);
			CHECK(n <= 0, "FIFO got %zd bytes: '%.100s'", n, out);
			close(reader);
		}
	}
	rerun_limit = 0;
	struct stat sb;
	CHECK(stat(target, &sb) == 0 && sb.st_size == 0, "the link's target was written to (%lld bytes)",
	      (long long)sb.st_size);
	unlink(link);
	/* A dangling link: O_CREAT would create what it points to. */
	CHECK(symlink(path, link) == 0, "symlink: errno %d", errno);
	snprintf(extra, sizeof extra, "stats=1,stats_file=%s", link);
	st = rerun(self, "--workload", extra, out, sizeof out);
	CHECK(st == 0 && strstr(out, "rampart: warning: stats_file ") && !strstr(out, "large blocks:"),
	      "dangling link: status %d, '%s'", st, out);
	CHECK(access(path, F_OK) != 0, "the dangling link's target %s was created", path);
	unlink(link);
	unlink(fifo);
	unlink(target);
	rmdir(dir);

	/* The bounds of the large quarantine and cache, at run time. */
	size_t q = 0, c = 0;
	st = rerun(self, "--bounds", "large_cache_entries=0", out, sizeof out);
	CHECK(st == 0 && sscanf(out, "quarantined=%zu cached=%zu", &q, &c) == 2, "'%s'", out);
	CHECK(c == 0 && (test_region_quarantine() ? q > 0 : q == 0), "no cache: quarantined %zu cached %zu", q, c);
	st = rerun(self, "--bounds", "large_quarantine_entries=0,large_quarantine_bytes=0", out, sizeof out);
	CHECK(st == 0 && sscanf(out, "quarantined=%zu cached=%zu", &q, &c) == 2, "'%s'", out);
	CHECK(q <= 1 && c > 0, "no quarantine: quarantined %zu cached %zu", q, c);
	st = rerun(self, "--bounds", "", out, sizeof out);
	CHECK(st == 0 && sscanf(out, "quarantined=%zu cached=%zu", &q, &c) == 2, "'%s'", out);
	/* The quarantine's ring alone holds more than the 300 frees: nothing reached the cache. */
	CHECK(test_region_quarantine() ? q == 300 && c == 0 : q == 0 && c > 0, "defaults: quarantined %zu cached %zu", q,
	      c);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--workload")) return child_workload();
	if (argc == 2 && !strcmp(argv[1], "--bounds")) return child_bounds();
	if (argc == 2 && !strcmp(argv[1], "--closed-stderr")) return child_closed_stderr();
	test_mallinfo();
	test_malloc_info();
	test_malloc_stats();
	test_mallopt();
	test_trim();
	test_exit_reports("/proc/self/exe");
	if (failures) fprintf(stderr, "%d failures\n", failures);
	else printf("introspection: all checks passed\n");
	return failures ? 1 : 0;
}
#endif /* __GLIBC__ */
