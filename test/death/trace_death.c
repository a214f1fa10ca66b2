/*
 * trace_death — after the fatal line comes the list of callers: the calls found by
 * unwinding the thread's stack, as "module+offset". A double free committed in a known
 * function, from the main thread and from a second thread (whose stack is a mapping of
 * its own), must list a frame inside that function, with the offset addr2line wants,
 * and the list must start there: rampart's own frames (the free and what it called) are
 * left out. Built twice: linked with librampart.a (trace_death) and with librampart.so
 * (trace_death_so), where rampart's own code is found in two different ways (callers.c).
 * A write into a freed slot is reported as a write after free, whichever check finds it.
 */
#include "../harness.h"
#include "../profile.h"
#include "../site.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

/* The bug, in a function of its own so the trace can be checked against its address. */
__attribute__((noinline)) void trace_bad_site(char *p)
{
	free(p);
	free(p);
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	trace_bad_site(arg);
	return NULL;
}

/* A freed 48-byte slot written, among freed neighbours: the free of the slot before it
 * finds the write (it reads the freed slot after it), or, where the slot is the first of
 * its slab, its reuse does (the slot must still hold the zeros its free wrote). */
static void write_after_free(void)
{
	/* ROUNDS x CHURN frees: more than the class's slot quarantine holds (12,288 slots),
	 * enough that the slot surely left its random array (4,096 entries: e^(-n/4096) to
	 * stay past n frees; one CHURN alone was not always enough where no canary check
	 * finds the write first: CI saw it once, in the build without canaries). */
	enum { N = 64, ROUNDS = 4, CHURN = 20000, FILL = 200000 };
	static char *v[N];
	static void *fill[FILL];
	/* Every allocation from one site: with call-site partitions a slot freed by one
	 * site's block goes back only to its own partition (test/site.h). */
	for (int i = 0; i < N; i++) v[i] = site_malloc(48);
	char *p = v[N / 2];
	free(p);
	p[5] = 'x'; /* the bug */
	for (int i = 0; i < N; i++)
		if (i != N / 2) free(v[i]);
	/* Push the slot out of the quarantine, then allocate until it comes back. */
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < CHURN; i++) fill[i] = site_malloc(48);
		for (int i = 0; i < CHURN; i++) free(fill[i]);
	}
	for (int i = 0; i < FILL; i++) fill[i] = site_malloc(48);
}

/* Runs in the child, stderr captured. */
static void commit(int threaded)
{
	char *p = malloc(40);
	if (!threaded) {
		trace_bad_site(p);
		return;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, p) == 0) pthread_join(t, NULL);
}

/* Run fn(arg) in a child with its stderr in out; its wait status. */
static int run_child(void (*fn)(int), int arg, char *out, size_t size)
{
	int pfd[2];
	if (pipe(pfd)) return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], 2);
		quiet_child();
		alarm(30);
		fn(arg);
		_exit(0);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(pfd[0], out + len, size - 1 - len)) > 0) len += (size_t)n;
	out[len] = 0;
	close(pfd[0]);
	int st = -1;
	waitpid(pid, &st, 0);
	return st;
}

static void commit_write_after_free(int unused) { (void)unused; write_after_free(); }

static int check_write_after_free(void)
{
	static char out[16384];
	if (!CONFIG_ZERO_ON_FREE || !test_waf_check()) {
		printf("skip  write after free: this process does not check freed slots (write_after_free_check=off)\n");
		return 0;
	}
	int st = run_child(commit_write_after_free, 0, out, sizeof out);
	int ok = st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
		 strncmp(out, "rampart: fatal: write after free", 32) == 0;
	printf("%s  write after free: reported as a write after free\n", ok ? "ok  " : "FAIL");
	if (!ok) printf("      child stderr:\n%s", out);
	return !ok;
}

/* rampart's code in a program linked with librampart.a: the sections the static library
 * puts it in (Makefile); none where the program uses librampart.so. */
extern const char __start_rampart_text[] __attribute__((weak)), __stop_rampart_text[] __attribute__((weak));
extern const char __start_rampart_text_cold[] __attribute__((weak)), __stop_rampart_text_cold[] __attribute__((weak));

/* Is the frame at off of module rampart's own code? (base: the program's load base) */
static bool rampart_frame(const char *module, const char *exe, unsigned long off, uintptr_t base)
{
	if (strstr(module, "librampart")) return true;
	if (strcmp(module, exe)) return false;
	uintptr_t a = base + off;
	return (a >= (uintptr_t)__start_rampart_text && a < (uintptr_t)__stop_rampart_text) ||
	       (a >= (uintptr_t)__start_rampart_text_cold && a < (uintptr_t)__stop_rampart_text_cold);
}

static int check(int threaded)
{
	const char *name = threaded ? "double free in a thread" : "double free in main";
	static char out[16384];
	int st = run_child(commit, threaded, out, sizeof out);

	/* Where the function lies, as the trace must name it: the module's path and the
	 * offset from its load base. */
	Dl_info info;
	char exe[512];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = 0;
	/* A program linked at a fixed address (ET_EXEC: static or non-PIE, as musl-gcc
	 * -static makes) is named by absolute addresses, which is what addr2line wants
	 * there; static builds may also lack dladdr. */
	unsigned char ehdr[18] = {0};
	int efd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (efd >= 0) {
		if (read(efd, ehdr, sizeof ehdr) != (ssize_t)sizeof ehdr) ehdr[0] = 0;
		close(efd);
	}
	bool fixed = ehdr[0] == 0x7f && ehdr[16] == 2 && ehdr[17] == 0;
	int ok = (fixed || dladdr((void *)trace_bad_site, &info) != 0) && el > 0;
	uintptr_t lo = (uintptr_t)trace_bad_site - (fixed ? 0 : (uintptr_t)info.dli_fbase), hi = lo + 256;

	ok = ok && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
	/* (Without the slot quarantine, VARIANT=light, the freed slot's slab may be closed
	 * already, and the second free is caught as a use of the freed slab.) */
	ok = ok && (strncmp(out, "rampart: fatal: slot was already freed (double free?) at 0x", 59) == 0 ||
		    strncmp(out, "rampart: fatal: use of a pointer into a freed slab (double free?) at 0x", 71) == 0);
	char *line = strchr(out, '\n');
	ok = ok && line && strncmp(line + 1, "rampart: callers (", 18) == 0;
	uintptr_t base = fixed ? 0 : (uintptr_t)info.dli_fbase;
	int frames = 0, found = 0, bad = 0, first_inside = -1, ours_before = 0;
	for (line = line ? strchr(line + 1, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
		char module[512];
		unsigned long off;
		int idx;
		if (strncmp(line + 1, "rampart:", 8) != 0) break; /* the list has ended (qemu says how the child died) */
		if (sscanf(line + 1, "rampart:   #%d %511[^+]+0x%lx", &idx, module, &off) != 3 || idx != frames) {
			bad++;
			continue;
		}
		bool inside = strcmp(module, exe) == 0 && off >= lo && off < hi;
		if (inside && first_inside < 0) first_inside = frames;
		if (first_inside < 0 && rampart_frame(module, exe, off, base)) ours_before++;
		frames++;
		found += inside;
	}
	/* The callers start at the second free's call in trace_bad_site: none of rampart's
	 * own frames come before it, nor any stale return address (the stack is unwound by
	 * its unwind tables, not scanned). */
	ok = ok && frames >= 1 && frames <= 16 && !bad && found >= 1 && first_inside == 0 && !ours_before;
	printf("%s  %s: %d frames, %d inside trace_bad_site (+0x%lx..+0x%lx of %s), the first of them #%d, %d of "
	       "rampart's own before it\n",
	       ok ? "ok  " : "FAIL", name, frames, found, (unsigned long)lo, (unsigned long)hi, exe, first_inside,
	       ours_before);
	if (!ok) printf("      child stderr:\n%s", out);
	return !ok;
}

int main(void)
{
	int failed = check(0) + check(1) + check_write_after_free();
	printf("3 cases, %d failed\n", failed);
	return failed;
}
