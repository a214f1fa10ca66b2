/*
 * seccomp_check.c — rampart under a seccomp filter that allows only the system calls
 * the table of docs/seccomp.md lists (generated with this program's allow-list from
 * test/seccomp/syscalls.list) plus what the program itself
 * needs; any other system call kills the process (SECCOMP_RET_KILL_PROCESS).
 *
 * Each scenario runs in a fresh process (this program re-executed), which installs the
 * filter before its first allocation, so rampart's start-up runs under it too; in the
 * scenario "load" the filter is installed before execve, so what rampart does when the
 * program is loaded (reading the options and the policy file) runs under it as well:
 * threaded stress, small and large churn (aligned and sized variants), realloc moves
 * and in-place resizes, fork (with and without threads running), malloc_trim, and a
 * fatal report (a double free must end in SIGABRT with the "rampart: fatal:" line).
 * The guard backend is whatever RAMPART_OPTIONS says (run.sh runs this under both).
 *
 * When a scenario dies by the filter, it is run again with SECCOMP_RET_TRAP instead,
 * whose handler names the system call: the list or the table is missing it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "syscalls.h" /* generated: rampart_syscalls[], test_syscalls[] */

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp_check: unknown architecture"
#endif

#define N(a) (sizeof(a) / sizeof *(a))
#define KiB ((size_t)1024)
#define MiB (KiB * 1024)

/* --- in the filtered process: no stdio, only write(2) ------------------------------- */

static void say(const char *s) { (void)!write(STDERR_FILENO, s, strlen(s)); }

static const char *syscall_name(long nr)
{
	for (size_t i = 0; i < N(rampart_syscalls); i++)
		if (rampart_syscalls[i].nr == nr) return rampart_syscalls[i].name;
	for (size_t i = 0; i < N(test_syscalls); i++)
		if (test_syscalls[i].nr == nr) return test_syscalls[i].name;
	return "not in the list";
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char buf[160];
	snprintf(buf, sizeof buf, "seccomp: system call %d (%s) from pc %p\n", si->si_syscall,
		 syscall_name(si->si_syscall), si->si_call_addr);
	say(buf);
	_exit(99);
}

static void install_filter(bool trap)
{
	static struct sock_filter f[4 + 2 * (N(rampart_syscalls) + N(test_syscalls)) + 1];
	size_t n = 0;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < N(rampart_syscalls) + N(test_syscalls); i++) {
		long nr = i < N(rampart_syscalls) ? rampart_syscalls[i].nr : test_syscalls[i - N(rampart_syscalls)].nr;
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, trap ? SECCOMP_RET_TRAP : SECCOMP_RET_KILL_PROCESS);
	struct sock_fprog prog = {(unsigned short)n, f};
	if (trap) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_sigsys;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSYS, &sa, NULL);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		say("seccomp_check: cannot install the filter\n");
		_exit(98);
	}
}

static int failed;
static void expect(bool ok, const char *what)
{
	if (!ok) {
		say("check failed: ");
		say(what);
		say("\n");
		failed = 1;
	}
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void fill(unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i += (n > 4096 ? 4096 : 1)) p[i] = v;
	if (n) p[n - 1] = v;
}
static bool holds(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i += (n > 4096 ? 4096 : 1))
		if (p[i] != v) return false;
	return !n || p[n - 1] == v;
}

/* Small and large blocks, every allocation function, churned. */
static void churn(uint32_t seed, int ops)
{
	enum { SLOTS = 64 };
	unsigned char *p[SLOTS] = {0};
	size_t sz[SLOTS] = {0}, aligned[SLOTS] = {0};
	uint32_t s = seed | 1;
	for (int i = 0; i < ops; i++) {
		unsigned k = rnd(&s) % SLOTS;
		if (p[k]) {
			expect(holds(p[k], sz[k], (unsigned char)sz[k]), "churn contents");
			if (aligned[k]) free_aligned_sized(p[k], aligned[k], sz[k]);
			else if (rnd(&s) % 2) free_sized(p[k], sz[k]);
			else free(p[k]);
		}
		unsigned r = rnd(&s) % 100;
		sz[k] = r < 90 ? rnd(&s) % 4096 : r < 97 ? 128 * KiB + rnd(&s) % (2 * MiB) : rnd(&s) % (8 * MiB);
		aligned[k] = 0;
		switch (rnd(&s) % 4) {
		case 0: p[k] = malloc(sz[k]); break;
		case 1: p[k] = calloc(1, sz[k]); break;
		case 2: aligned[k] = (size_t)16 << rnd(&s) % 14; p[k] = aligned_alloc(aligned[k], sz[k]); break;
		default: {
			void *q = NULL;
			aligned[k] = 64;
			p[k] = posix_memalign(&q, 64, sz[k]) ? NULL : q;
		}
		}
		expect(p[k] != NULL, "allocation");
		if (!p[k]) return;
		fill(p[k], sz[k], (unsigned char)sz[k]);
	}
	for (unsigned k = 0; k < SLOTS; k++) free(p[k]);
}

static void *thread_churn(void *arg)
{
	churn((uint32_t)(uintptr_t)arg * 7919, 4000);
	return NULL;
}

static void run_threads(void)
{
	pthread_t t[4];
	for (uintptr_t i = 0; i < N(t); i++) expect(pthread_create(&t[i], NULL, thread_churn, (void *)(i + 1)) == 0, "pthread_create");
	for (size_t i = 0; i < N(t); i++) pthread_join(t[i], NULL);
}

static void realloc_moves(void)
{
	/* Grow past what the trail guard can hold while neighbours take the address space
	 * next to the block: moves with mremap; shrink in place; slab <-> large. */
	unsigned char *p = malloc(200 * KiB), *block[16] = {0}; /* the loop may stop early */
	fill(p, 200 * KiB, 1);
	size_t n = 200 * KiB;
	for (int i = 0; i < 16; i++) {
		block[i] = malloc(300 * KiB);
		size_t m = n * 2;
		unsigned char *q = realloc(p, m);
		expect(q && holds(q, n, (unsigned char)(i + 1)), "realloc grow keeps contents");
		if (!q) return;
		p = q;
		n = m;
		fill(p, n, (unsigned char)(i + 2));
		if (n >= 64 * MiB) break;
	}
	p = realloc(p, 1 * MiB);
	expect(p && holds(p, 1 * MiB - 4095, p[0]), "realloc shrink"); /* the bytes fill() wrote */
	p = realloc(p, 100);
	expect(p != NULL, "realloc large -> small");
	p = realloc(p, 3 * MiB);
	expect(p != NULL, "realloc small -> large");
	free(p);
	for (int i = 0; i < 16; i++) free(block[i]);
}

static void forks(bool with_threads)
{
	pthread_t t[2];
	if (with_threads)
		for (uintptr_t i = 0; i < N(t); i++) pthread_create(&t[i], NULL, thread_churn, (void *)(i + 11));
	for (int i = 0; i < 3; i++) {
		void *keep = malloc(5000);
		pid_t pid = fork();
		if (pid == 0) {
			churn(99, 500);
			free(keep);
			_exit(failed);
		}
		int st = 0;
		expect(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child");
		free(keep);
	}
	if (with_threads)
		for (size_t i = 0; i < N(t); i++) pthread_join(t[i], NULL);
}

static void trim(void)
{
	void *p[40];
	for (int i = 0; i < 40; i++) p[i] = malloc(256 * KiB + (size_t)i * 64 * KiB);
	for (int i = 0; i < 40; i++) free(p[i]);
	malloc_trim(0);
	churn(5, 1000);
	malloc_trim(0);
}

static void scenario(const char *name)
{
	if (!strcmp(name, "startup") || !strcmp(name, "load")) {
		free(malloc(1));
	} else if (!strcmp(name, "churn")) {
		churn(12345, 20000);
	} else if (!strcmp(name, "threads")) {
		run_threads();
	} else if (!strcmp(name, "realloc")) {
		realloc_moves();
	} else if (!strcmp(name, "fork")) {
		forks(false);
		forks(true);
	} else if (!strcmp(name, "trim")) {
		trim();
	} else if (!strcmp(name, "control")) { /* the filter works: this must kill */
		syscall(SYS_getppid);
		say("getppid was allowed\n");
		_exit(94);
	} else if (!strcmp(name, "fatal")) {
		void *volatile p = malloc(40);
		free(p);
		free(p); /* rampart: fatal: ... then SIGABRT */
		say("double free not caught\n");
		_exit(97);
	} else {
		say("unknown scenario\n");
		_exit(96);
	}
	say("backend ");
	say(rampart_guard_backend());
	say("\n");
	_exit(failed);
}

/* --- the parent: runs every scenario in a fresh filtered process -------------------- */

static const char *const scenarios[] = {"control", "load", "startup", "churn", "threads", "realloc", "fork", "trim", "fatal"};

/* Run argv0 scenario mode; its stderr into out. Returns the wait status. */
static int run(const char *argv0, const char *name, const char *mode, char *out, size_t cap)
{
	int pfd[2];
	if (pipe(pfd)) return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		/* "load": the filter is on before execve, so what rampart does when the program
		 * is loaded (the options, the policy file) runs under it too; the dynamic
		 * loader's calls are the test's own (syscalls.list). A handler does not survive
		 * execve: its trap run is a kill run. */
		if (!strcmp(name, "load")) {
			install_filter(false);
			execl(argv0, argv0, name, "loaded", (char *)NULL);
			_exit(95);
		}
		execl(argv0, argv0, name, mode, (char *)NULL);
		_exit(95);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t r;
	char sink[256];
	while ((r = read(pfd[0], len + 1 < cap ? out + len : sink, len + 1 < cap ? cap - 1 - len : sizeof sink)) != 0) {
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) break;
		if (len + 1 < cap) len += (size_t)r;
	}
	out[len] = 0;
	close(pfd[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return st;
}

int main(int argc, char **argv)
{
	if (argc == 3) { /* a filtered scenario ("loaded": filtered since before execve) */
		if (strcmp(argv[2], "loaded")) install_filter(!strcmp(argv[2], "trap"));
		scenario(argv[1]);
	}
	const char *opt = getenv("RAMPART_OPTIONS");
	printf("allow-list: %zu system calls from the README's table, %zu for the test itself; backend option %s\n",
	       N(rampart_syscalls), N(test_syscalls), opt ? opt : "(none)");
	int failures = 0;
	static char out[8192];
	for (size_t i = 0; i < N(scenarios); i++) {
		const char *name = scenarios[i];
		int st = run(argv[0], name, "kill", out, sizeof out);
		bool ok;
		if (!strcmp(name, "fatal"))
			ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(out, "rampart: fatal:");
		else if (!strcmp(name, "control"))
			ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS && snprintf(out, sizeof out, "getppid killed by SIGSYS");
		else
			ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
		if (ok) {
			char *nl = strchr(out, '\n');
			if (nl) *nl = 0;
			printf("ok    %-8s %s\n", name, out);
			continue;
		}
		failures++;
		if (WIFSIGNALED(st))
			printf("FAIL  %-8s killed by signal %d (%s)\n", name, WTERMSIG(st), strsignal(WTERMSIG(st)));
		else
			printf("FAIL  %-8s exit status %d\n", name, WEXITSTATUS(st));
		printf("      stderr: %s\n", out);
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS && !strcmp(name, "load"))
			printf("      a call of the dynamic loader or of rampart's load-time start-up is missing "
			       "(strace -f the scenario to name it: no handler survives execve)\n");
		else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS && strcmp(name, "control")) {
			run(argv[0], name, "trap", out, sizeof out);
			printf("      again with SECCOMP_RET_TRAP: %s\n", out);
		}
	}
	printf("seccomp_check: %zu scenarios, %d failed\n", N(scenarios), failures);
	return failures != 0;
}
