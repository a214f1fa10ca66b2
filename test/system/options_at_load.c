/*
 * options_at_load.c — options are read when rampart is loaded, not only at the first
 * allocation: a program that never allocates still prints help=1's list, the warning
 * for an unknown key and verbose=1's start-up lines, each once.
 *
 * The idle program is this one, run again as `options_at_load --idle`: it returns
 * from main without a call that could allocate, and says by its exit status whether
 * rampart was started (IDLE_NEW: never, so nothing was allocated; IDLE_STARTED). Then the
 * same for /bin/true with OUT/librampart.so preloaded, where that library and a
 * dynamically linked true exist (not in a static build: that part is skipped, with a
 * note). The suite's RAMPART_OPTIONS (guard=...) is kept, the case's entries added.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "rampart.h"

enum { IDLE_NEW = 10, IDLE_STARTED = 11, IDLE_UNKNOWN = 12 };

static int failures;

/* VmPeak of /proc/self/status in KiB, read without allocating; -1 if unknown.
 * rampart's internals are hidden in librampart.a, but a started rampart shows itself:
 * finding its windows of address space free maps terabytes for a moment. */
static long vm_peak_kib(void)
{
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	static char buf[8192];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return -1;
	buf[n] = 0;
	const char *peak = strstr(buf, "\nVmPeak:");
	return peak ? strtol(peak + 8, NULL, 10) : -1;
}

struct outcome {
	int status; /* exit code, or 128 + signal */
	char err[16384];
};

/* Run argv with RAMPART_OPTIONS = the suite's plus extra, LD_PRELOAD=preload unless
 * NULL; its stderr in o->err. */
static void run(char *const argv[], const char *extra, const char *preload, struct outcome *o)
{
	const char *base = getenv("RAMPART_OPTIONS");
	char opts[512];
	snprintf(opts, sizeof opts, "%s%s%s", base ? base : "", base && *base ? "," : "", extra);
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		quiet_child();
		setenv("RAMPART_OPTIONS", opts, 1);
		if (preload) setenv("LD_PRELOAD", preload, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	size_t n = 0;
	ssize_t r;
	while (n < sizeof o->err - 1 && ((r = read(pfd[0], o->err + n, sizeof o->err - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0) n += (size_t)r;
	o->err[n] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *s = hay; (s = strstr(s, needle)) != NULL; s += strlen(needle)) n++;
	return n;
}

static void expect(bool ok, const char *program, const char *name, const struct outcome *o)
{
	printf("%s  %s: %s\n", ok ? "ok  " : "FAIL", program, name);
	if (!ok) {
		failures++;
		printf("      status %d, stderr:\n%s\n", o->status, o->err);
	}
}

/* The cases for one program; self: it is this one, idle, whose exit status tells
 * whether rampart was started. */
static void cases(char *const argv[], const char *preload, const char *program, bool self)
{
	static struct outcome o;

	run(argv, "help=1", preload, &o);
	expect(count(o.err, "check_at_exit=") == 1 && (!self || o.status == IDLE_NEW),
	       program, "help=1 prints the list once, and nothing is allocated for it", &o);

	run(argv, "no_such_key=1", preload, &o);
	expect(count(o.err, "RAMPART_OPTIONS: unknown key 'no_such_key'") == 1 &&
		       (!self || o.status == IDLE_NEW),
	       program, "an unknown key is reported once", &o);

	run(argv, "verbose=1", preload, &o);
	expect(count(o.err, "rampart: version ") == 1 && count(o.err, "rampart: policy file") == 1 &&
		       (!self || o.status == IDLE_STARTED),
	       program, "verbose=1 prints the start-up lines once (rampart started to tell them)", &o);

	run(argv, "", preload, &o);
	expect(!o.err[0] && (!self || o.status == IDLE_NEW), program, "without such options: silent, nothing started",
	       &o);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--idle")) {
		long kib = vm_peak_kib();
		if (kib < 0) return IDLE_UNKNOWN;
		return kib >= (64L << 20) ? IDLE_STARTED : IDLE_NEW;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A call into rampart, so that librampart.a's allocator is linked in at all: the
	 * idle path above calls none. */
	printf("rampart %s\n", rampart_version());

	char *self_argv[] = {"/proc/self/exe", "--idle", NULL};
	cases(self_argv, NULL, "this program, idle", true);

	/* All three, where verbose=1 starts rampart after the options were read: each
	 * still once (start-up does not read them again). */
	static struct outcome o;
	run(self_argv, "help=1,no_such_key=2,verbose=1", NULL, &o);
	expect(count(o.err, "check_at_exit=") == 1 && count(o.err, "unknown key 'no_such_key'") == 1 &&
		       count(o.err, "rampart: version ") == 1,
	       "this program, idle", "help, warning and verbose together: each once", &o);

#ifndef __GLIBC__
	/* A build for another C library (check-musl): its librampart.so cannot be
	 * preloaded into the system's glibc programs. */
	printf("note: not a glibc build: the preloaded case is not run\n");
#else
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	CHECK(n > 0);
	exe[n] = 0;
	char lib[4200];
	snprintf(lib, sizeof lib, "%s/../../librampart.so", dirname(exe)); /* OUT/test/system */
	static const char *const trues[] = {"/bin/true", "/usr/bin/true"};
	const char *true_path = NULL;
	for (size_t i = 0; i < sizeof trues / sizeof *trues && !true_path; i++)
		if (access(trues[i], X_OK) == 0) true_path = trues[i];
	if (access(lib, R_OK) != 0 || !true_path) {
		printf("note: no %s or no true program: the preloaded case is not run\n", lib);
	} else {
		char *true_argv[] = {(char *)true_path, NULL};
		cases(true_argv, lib, true_path, false);
	}
#endif
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
