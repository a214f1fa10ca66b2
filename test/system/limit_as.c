/*
 * limit_as.c — rampart under an address-space limit (ulimit -v, systemd LimitAS=).
 *
 * The program re-executes itself under RLIMIT_AS of 1 GiB and of 4 GiB, so that
 * rampart starts under the limit as it would in a program run by a shell with
 * `ulimit -v`. Each child runs a mixed workload whose live memory (about 330 MiB)
 * fits easily under glibc at 1 GiB:
 *  - 400,000 small blocks of 8 B - 1 KiB and 16 large ones of 1-8 MiB, all filled;
 *  - a buffer grown by realloc by a quarter at a time from 1 KiB to 64 MiB;
 *  - 1,500 rounds of large-block churn (the region quarantine must not eat the limit);
 *  - every byte pattern checked before it is freed.
 * Then it runs out on purpose: 1 MiB blocks until malloc says NULL with ENOMEM (never
 * a crash), everything freed, and small and large allocations work again. A request
 * above the limit is NULL/ENOMEM at once, and leaves the region quarantine as it was.
 *
 * Two more children, started the same way: one whose limit leaves no room at all for
 * its first malloc calls (each fails with ENOMEM; once the limit is lifted, rampart
 * starts), and one whose first malloc runs on a stack in .bss, far below the real one
 * (the size of the address space must not be guessed from it).
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "../profile.h"
#include "rampart.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

#define NSMALL 400000
#define NLARGE 16

static unsigned char tag(size_t i, size_t j) { return (unsigned char)(i * 31 + j * 7 + 1); }

static void fill(unsigned char *p, size_t n, size_t i)
{
	/* Dense at both ends, one byte a page in between: every page is written. */
	for (size_t j = 0; j < n; j += (j < 64 || n - j <= 64) ? 1 : 4096) p[j] = tag(i, j);
}

static void check(const unsigned char *p, size_t n, size_t i)
{
	for (size_t j = 0; j < n; j += (j < 64 || n - j <= 64) ? 1 : 4096) CHECK(p[j] == tag(i, j));
}

static size_t vm_size_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t kib = 0;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmSize:", 7)) kib = strtoul(line + 7, NULL, 10);
	if (f) fclose(f);
	return kib;
}

static int workload(size_t limit)
{
	static unsigned char *small[NSMALL];
	static size_t small_n[NSMALL];
	unsigned char *large[NLARGE];
	size_t large_n[NLARGE];

	for (size_t i = 0; i < NSMALL; i++) {
		small_n[i] = 8 + (i * 2654435761u) % 1017;
		small[i] = malloc(small_n[i]);
		CHECK(small[i] != NULL);
		fill(small[i], small_n[i], i);
	}
	for (size_t i = 0; i < NLARGE; i++) {
		large_n[i] = MiB + (i * 7 % 8) * MiB;
		large[i] = malloc(large_n[i]);
		CHECK(large[i] != NULL);
		fill(large[i], large_n[i], i + NSMALL);
	}

	/* realloc growth: the old contents travel with every step. */
	size_t n = KiB;
	unsigned char *buf = malloc(n);
	CHECK(buf != NULL);
	memset(buf, 0xa5, n);
	while (n < 64 * MiB) {
		size_t m = n + n / 4;
		unsigned char *q = realloc(buf, m);
		CHECK(q != NULL);
		CHECK(q[0] == 0xa5 && q[n / 2] == 0xa5 && q[n - 1] == 0xa5);
		memset(q + n, 0xa5, m - n);
		buf = q;
		n = m;
	}

	/* Large churn: every freed region goes through the quarantine and the cache. */
	for (size_t r = 0; r < 1500; r++) {
		size_t i = r % NLARGE;
		check(large[i], large_n[i], i + NSMALL);
		free(large[i]);
		large_n[i] = 512 * KiB + (r * 40503u % 64) * 128 * KiB;
		large[i] = malloc(large_n[i]);
		CHECK(large[i] != NULL);
		fill(large[i], large_n[i], i + NSMALL);
	}
	size_t peak = vm_size_kib();

	for (size_t i = 0; i < NSMALL; i++) {
		check(small[i], small_n[i], i);
		free(small[i]);
	}
	for (size_t i = 0; i < NLARGE; i++) {
		check(large[i], large_n[i], i + NSMALL);
		free(large[i]);
	}
	CHECK(buf[n - 1] == 0xa5);
	/* A block beyond the quarantine's bound (a sixteenth of the limit) is unmapped at
	 * once rather than pushing every other freed region out of the quarantine. */
	struct rampart_stats held;
	rampart_get_stats(&held);
	CHECK(held.quarantine_bytes_now > 0 || !test_region_quarantine());
	free(buf);
	if (n > limit / 16) {
		struct rampart_stats now;
		rampart_get_stats(&now);
		CHECK(now.quarantine_bytes_now == held.quarantine_bytes_now);
	}

	/* Too big for the limit: refused at once, and the quarantine is not given up for it. */
	struct rampart_stats before, after;
	rampart_get_stats(&before);
	CHECK(before.quarantine_bytes_now > 0 || !test_region_quarantine());
	errno = 0;
	CHECK(malloc(limit + GiB) == NULL && errno == ENOMEM);
	rampart_get_stats(&after);
	CHECK(after.quarantine_bytes_now == before.quarantine_bytes_now);

	/* Run out on purpose: NULL with ENOMEM, then everything works again. */
	static void *blocks[8192];
	size_t got = 0;
	for (;;) {
		CHECK(got < sizeof blocks / sizeof *blocks);
		errno = 0;
		void *p = malloc(MiB);
		if (!p) {
			CHECK(errno == ENOMEM);
			break;
		}
		memset(p, 0x5a, 4096);
		blocks[got++] = p;
	}
	/* ... and small blocks too, until their class cannot grow. */
	size_t small_got = 0;
	for (;;) {
		errno = 0;
		void *p = malloc(48);
		if (!p) {
			CHECK(errno == ENOMEM);
			break;
		}
		CHECK(small_got < NSMALL);
		small[small_got++] = p;
	}
	for (size_t i = 0; i < got; i++) free(blocks[i]);
	for (size_t i = 0; i < small_got; i++) free(small[i]);
	void *a = malloc(100), *b = malloc(4 * MiB);
	CHECK(a && b);
	memset(b, 1, 4 * MiB);
	free(a);
	free(b);
	printf("      limit %zu MiB: peak VmSize %zu MiB; ran out after %zu MiB of 1 MiB blocks\n", limit / MiB,
	       peak / 1024, got);
	return 0;
}

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

/* No room for rampart's first mappings: every malloc fails cleanly, and start-up works
 * once the limit is lifted, however many times it failed before. No stdio before that
 * (its buffers come from malloc). */
static int startup_fails_then_works(void)
{
	long pages = vm_size_pages();
	CHECK(pages > 0);
	struct rlimit tight = {(rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE), RLIM_INFINITY};
	CHECK(setrlimit(RLIMIT_AS, &tight) == 0);
	for (int i = 0; i < 20; i++) {
		errno = 0;
		void *p = malloc(16 + (size_t)i * 1000);
		if (p) {
			say("startup: a malloc succeeded with no room left\n");
			return 1;
		}
		CHECK(errno == ENOMEM);
	}
	struct rlimit free_ = {RLIM_INFINITY, RLIM_INFINITY};
	CHECK(setrlimit(RLIMIT_AS, &free_) == 0);
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(16 + (size_t)i * 100);
		CHECK(p != NULL);
		p[0] = 1;
	}
	CHECK(malloc(8 * MiB) != NULL);
	say("      start-up: 20 mallocs refused under a full RLIMIT_AS, then rampart started\n");
	return 0;
}

/* The first malloc on a stack in .bss (a coroutine's, or a signal stack): the windows
 * are sized from the real stack's place, so a class still holds gigabytes. The stack is
 * a signal stack here (sigaltstack is in every C library; ucontext is not in musl), and
 * the signal is raised by the program itself, so malloc in the handler is safe. */
static char low_stack[256 * 1024];
static volatile int low_result = 1;
static void on_low_stack(int sig)
{
	(void)sig;
	static void *v[1 << 18];
	size_t n = 0;
	for (; n < sizeof v / sizeof *v; n++) { /* 1 GiB of 4 KiB blocks: one class */
		v[n] = malloc(4000);
		if (!v[n]) break;
		*(volatile char *)v[n] = 1;
	}
	for (size_t i = 0; i < n; i++) free(v[i]);
	low_result = n == sizeof v / sizeof *v ? 0 : 1;
}
static int first_malloc_on_low_stack(void)
{
	stack_t ss = {.ss_sp = low_stack, .ss_size = sizeof low_stack, .ss_flags = 0};
	CHECK(sigaltstack(&ss, NULL) == 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_low_stack;
	sa.sa_flags = SA_ONSTACK;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(raise(SIGUSR1) == 0);
	say(low_result ? "lowstack: a class ran out early\n" : "      first malloc on a stack in .bss: 1 GiB of 4 KiB blocks\n");
	return low_result;
}

static int run_child(const char *what, size_t limit)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (limit) {
			struct rlimit rl = {limit, limit};
			if (setrlimit(RLIMIT_AS, &rl)) {
				perror("setrlimit");
				_exit(2);
			}
		}
		char arg[32];
		snprintf(arg, sizeof arg, "%zu", limit);
		execl("/proc/self/exe", "limit_as", what, arg, (char *)NULL);
		perror("exec");
		_exit(2);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	if (WIFSIGNALED(st)) printf("      killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "child")) return workload(strtoul(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "startup")) return startup_fails_then_works();
	if (argc == 3 && !strcmp(argv[1], "lowstack")) return first_malloc_on_low_stack();

	static const size_t limits[] = {1 * GiB, 4 * GiB};
	int failed = 0;
	for (size_t l = 0; l < sizeof limits / sizeof *limits; l++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			struct rlimit rl = {limits[l], limits[l]};
			if (setrlimit(RLIMIT_AS, &rl)) {
				perror("setrlimit");
				_exit(2);
			}
			char arg[32];
			snprintf(arg, sizeof arg, "%zu", limits[l]);
			execl("/proc/self/exe", argv[0], "child", arg, (char *)NULL);
			perror("exec");
			_exit(2);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
		bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
		if (WIFSIGNALED(st))
			printf("FAIL  RLIMIT_AS %zu MiB: killed by signal %d (%s)\n", limits[l] / MiB, WTERMSIG(st),
			       strsignal(WTERMSIG(st)));
		else
			printf("%s  RLIMIT_AS %zu MiB: mixed workload, content checked, out of memory is NULL/ENOMEM\n",
			       ok ? "ok  " : "FAIL", limits[l] / MiB);
		failed += !ok;
	}
	bool ok = run_child("startup", 0);
	printf("%s  start-up that fails under RLIMIT_AS, then succeeds once it is lifted\n", ok ? "ok  " : "FAIL");
	failed += !ok;
	ok = run_child("lowstack", 0);
	printf("%s  first malloc on a stack in .bss\n", ok ? "ok  " : "FAIL");
	failed += !ok;
	printf("%d failed\n", failed);
	return failed != 0;
}
