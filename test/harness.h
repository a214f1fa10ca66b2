/*
 * harness.h — helpers shared by rampart's test programs (unit, fault, death, system).
 *
 *  - probe_read / probe_write: does an access to p fault? Answered by the kernel
 *    (process_vm_readv/writev on ourselves gives EFAULT) without taking a signal.
 *  - child_access: the same question answered the hard way, by a forked child that
 *    touches p; true when the child died by SIGSEGV or SIGBUS.
 *  - death_case / death_run: a death-test harness. Each case runs in a forked child
 *    with stderr captured through a pipe; it passes only if the child dies by the
 *    expected signal (and, for SIGABRT, printed a "rampart: fatal:" line).
 *  - count_vmas: lines of /proc/self/maps, read without allocating.
 *  - test_skip: the program cannot run here: says why and exits 77, which the runners
 *    count as skipped, showing the reason (test/results.sh).
 *
 * Nothing here allocates through malloc, so it is safe around rampart's own state.
 */
#ifndef RAMPART_TEST_HARNESS_H
#define RAMPART_TEST_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define TH_UNUSED __attribute__((unused))

/* Exit status of a program that cannot run here (the Automake convention). */
#define TEST_SKIPPED 77

/* The whole program cannot run here: one line "SKIP: why" on stderr, then exit 77.
 * Never a pass: a test that did not run must not look like one that did. */
static TH_UNUSED __attribute__((noreturn, format(printf, 1, 2))) void test_skip(const char *why, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, why);
	vsnprintf(line, sizeof line, why, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "SKIP: %s\n", line);
	exit(TEST_SKIPPED);
}

/* 0 when the byte at p is readable, otherwise the errno (EFAULT: it faults). */
static TH_UNUSED int probe_read(const void *p)
{
	char c;
	struct iovec local = {&c, 1}, remote = {(void *)p, 1};
	int saved = errno, err = 0;
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 1) err = errno ? errno : EIO;
	errno = saved;
	return err;
}

/* 0 when the byte at p is writable (it is rewritten with its own value). */
static TH_UNUSED int probe_write(void *p)
{
	char c = 0;
	struct iovec local = {&c, 1}, remote = {p, 1};
	int saved = errno, err = 0;
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != 1) err = errno ? errno : EIO;
	else if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) != 1) err = errno ? errno : EIO;
	errno = saved;
	return err;
}

/* Every access to the byte at p faults (read and write both refused). */
static TH_UNUSED bool inaccessible(const void *p)
{
	return probe_read(p) == EFAULT && probe_write((void *)p) == EFAULT;
}

/* Reads and writes of the byte at p both work. */
static TH_UNUSED bool accessible(void *p)
{
	return probe_read(p) == 0 && probe_write(p) == 0;
}

/* In a forked child that is meant to die: no core file, and the default action for
 * the signals a test framework (cmocka, Check) may have caught in the parent. */
static TH_UNUSED void quiet_child(void)
{
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core);
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGALRM};
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) signal(sigs[i], SIG_DFL);
}

/* Touch p in a forked child; returns the signal that killed it, 0 if it survived. */
static TH_UNUSED int child_access(void *p, bool write)
{
	pid_t pid = fork();
	if (pid < 0) return -1;
	if (pid == 0) {
		quiet_child();
		alarm(20);
		if (write) *(volatile char *)p = 1;
		else (void)*(volatile char *)p;
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

static TH_UNUSED bool child_faults(void *p, bool write)
{
	int sig = child_access(p, write);
	return sig == SIGSEGV || sig == SIGBUS;
}

/* Lines of /proc/self/maps: one per VMA. -1 on error. */
static TH_UNUSED long count_vmas(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	static char buf[1 << 16];
	long lines = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
	close(fd);
	return lines;
}

/* Total virtual size of the process in pages (first field of /proc/self/statm). */
static TH_UNUSED long vm_size_pages(void)
{
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	char buf[128];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

/* May this process lock `bytes` more of memory? Root may (CAP_IPC_LOCK), anyone else
 * within RLIMIT_MEMLOCK. A test that locks more than that cannot run here: it skips. */
static TH_UNUSED bool may_lock(size_t bytes)
{
	struct rlimit lim;
	if (geteuid() == 0) return true;
	if (getrlimit(RLIMIT_MEMLOCK, &lim)) return false;
	return lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= bytes;
}

/* --- death tests --- */

enum death_expect {
	DIE_FAULT, /* SIGSEGV or SIGBUS */
	DIE_FATAL, /* SIGABRT after a "rampart: fatal:" line on stderr */
	DIE_NOT,   /* exits 0: the control case */
	DIE_NOT_BUILT, /* not run: the protection that catches it is compiled out, or off in this
			* process (says which) */
};

struct death_case {
	const char *name;
	void (*fn)(void);
	enum death_expect expect;
	const char *says; /* DIE_FATAL: stderr must also contain this (NULL: any fatal line);
			   * DIE_NOT_BUILT: what the build lacks */
};

/* Case c is not run: what catches it is off in this process (the profile's choice). */
static TH_UNUSED void death_not_on(struct death_case *c, const char *what)
{
	c->expect = DIE_NOT_BUILT;
	c->says = what;
}

/* Run one case in a child; prints one line; true when it behaved as expected. */
static TH_UNUSED bool death_run(const struct death_case *c)
{
	if (c->expect == DIE_NOT_BUILT) {
		printf("n/a   %s: this process runs without %s\n", c->name, c->says);
		return true;
	}
	int pfd[2];
	if (pipe(pfd)) {
		printf("FAIL  %s: pipe: %s\n", c->name, strerror(errno));
		return false;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		printf("FAIL  %s: fork: %s\n", c->name, strerror(errno));
		return false;
	}
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[1]);
		quiet_child();
		alarm(30); /* a hang ends as SIGALRM, which never counts as the expected death */
		c->fn();
		_exit(0);
	}
	close(pfd[1]);
	static char out[8192];
	size_t len = 0;
	ssize_t n;
	while ((n = read(pfd[0], out + len, sizeof out - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR) continue;
			break;
		}
		len += (size_t)n;
		if (len == sizeof out - 1) { /* keep draining so the child never blocks */
			char sink[512];
			while ((n = read(pfd[0], sink, sizeof sink)) > 0 || (n < 0 && errno == EINTR)) {}
			break;
		}
	}
	out[len] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}

	int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	bool ok;
	const char *want;
	switch (c->expect) {
	case DIE_FAULT:
		want = "SIGSEGV/SIGBUS";
		ok = sig == SIGSEGV || sig == SIGBUS;
		break;
	case DIE_FATAL:
		want = "SIGABRT with 'rampart: fatal:'";
		ok = sig == SIGABRT && strstr(out, "rampart: fatal:") != NULL && (!c->says || strstr(out, c->says));
		break;
	default:
		want = "exit 0";
		ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
		break;
	}
	char got[64];
	if (sig) snprintf(got, sizeof got, "signal %d (%s)", sig, strsignal(sig));
	else snprintf(got, sizeof got, "exit %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	printf("%s  %s: expected %s, got %s\n", ok ? "ok  " : "FAIL", c->name, want, got);
	if (len) printf("      child stderr: %s%s", out, out[len - 1] == '\n' ? "" : "\n");
	fflush(stdout);
	return ok;
}

/* Run all cases; the exit status for main: 0 only if every case behaved. When every
 * case that commits a bug is compiled out (only controls would run), the program
 * skips instead: it would pass without testing anything. */
static TH_UNUSED int death_run_all(const struct death_case *cases, size_t n)
{
	size_t failed = 0, bugs = 0, not_built = 0;
	const char *lacks = NULL;
	for (size_t i = 0; i < n; i++) {
		if (cases[i].expect == DIE_NOT_BUILT) not_built++, lacks = cases[i].says;
		else if (cases[i].expect != DIE_NOT) bugs++;
	}
	if (not_built && !bugs) test_skip("every case needs what this process runs without (%s, ...)", lacks);
	for (size_t i = 0; i < n; i++) failed += !death_run(&cases[i]);
	printf("%zu cases, %zu failed\n", n, failed);
	return failed ? 1 : 0;
}

/* --- shared by the fault and system tests --- */

/* Report a failed condition and end the (child) process with status 1. */
#ifndef CHECK
#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			_exit(1);                                                          \
		}                                                                          \
	} while (0)
#endif

/* Does this kernel really block access behind a guard marker (MADV_GUARD_INSTALL, 102)?
 * The tests' own probe, not rampart's. */
static TH_UNUSED bool kernel_has_markers(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return false;
	bool ok = madvise(p, pg, 102) == 0 && probe_read(p) == EFAULT;
	munmap(p, pg);
	return ok;
}

/* Would rampart's probe choose the madvise backend here (markers, no strict overcommit)? */
static TH_UNUSED bool madvise_possible(void)
{
	int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
	char c = 0;
	if (fd >= 0) {
		if (read(fd, &c, 1) != 1) c = 0;
		close(fd);
	}
	return kernel_has_markers() && c != '2';
}

/* Run this program again in a child with FAKE_SCENARIO=name, so that a scenario's knobs
 * are in place before its very first malloc; its exit status (128 + signal if killed). */
static TH_UNUSED int run_scenario_child(const char *name)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("FAKE_SCENARIO", name, 1);
		execl("/proc/self/exe", "scenario", (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
