/*
 * options_at_load.c — options are read when rampart is loaded, not only at the first
 * allocation: a program that never allocates still prints help=1's list, the warning
 * for an unknown key and verbose=1's start-up lines, each once.
 *
 * The idle program is this one, run again as `options_at_load --idle`: it returns
 * from main at once, and stats=1 (a report at exit only if rampart was started)
 * confirms that it never allocates. Then the same for /bin/true with
 * OUT/librampart.so preloaded, in a glibc build where that library and true exist
 * (else that part is left out, with a note). The suite's RAMPART_OPTIONS (guard=...)
 * is kept, each case's entries added.
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

static int failures;

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

/* The cases for one program. idle: it is this one, which must never allocate (else
 * the test proves nothing); /bin/true is only expected to. */
static void cases(char *const argv[], const char *preload, const char *program, bool idle)
{
	static struct outcome o;

	/* stats=1 reports at exit only if rampart was started: silence means no call. */
	run(argv, "stats=1", preload, &o);
	bool never_allocates = o.status == 0 && !o.err[0];
	if (idle) expect(never_allocates, program, "never allocates (stats=1 reports nothing)", &o);
	else if (!never_allocates) printf("note: %s allocates here: the options would print anyway\n", program);

	run(argv, "help=1", preload, &o);
	expect(o.status == 0 && count(o.err, "  check_at_exit=0|1  ") == 1, program, "help=1 prints the list once", &o);

	run(argv, "no_such_key=1", preload, &o);
	expect(o.status == 0 && count(o.err, "RAMPART_OPTIONS: unknown key 'no_such_key'") == 1, program,
	       "an unknown key is reported once", &o);

	run(argv, "verbose=1", preload, &o);
	expect(o.status == 0 && count(o.err, "rampart: version ") == 1 && count(o.err, "rampart: policy file") == 1,
	       program, "verbose=1 prints the start-up lines once", &o);

	run(argv, "help=1,no_such_key=2,verbose=1", preload, &o);
	expect(o.status == 0 && count(o.err, "  check_at_exit=0|1  ") == 1 && count(o.err, "unknown key 'no_such_key'") == 1 &&
		       count(o.err, "rampart: version ") == 1,
	       program, "all three together: each once (start-up under verbose=1 reads nothing again)", &o);

	run(argv, "", preload, &o);
	expect(o.status == 0 && !o.err[0], program, "without them: silent", &o);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--idle")) return 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A call into rampart, so that librampart.a's allocator is linked in at all: the
	 * idle path above calls none. */
	printf("rampart %s\n", rampart_version());

	char *self_argv[] = {"/proc/self/exe", "--idle", NULL};
	cases(self_argv, NULL, "this program, idle", true);

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
		/* A sanitizer build's library needs its runtime in the program (check-ubsan's
		 * librampart.so names __ubsan_* symbols only its own programs define): the
		 * loader refuses it in a foreign one, and there is nothing to ask then. */
		static struct outcome probe;
		run(true_argv, "", lib, &probe);
		if (probe.status != 0) {
			char *nl = strchr(probe.err, '\n');
			if (nl) *nl = 0;
			printf("note: %s cannot be preloaded into %s here (status %d: %s): the preloaded case is not run\n",
			       lib, true_path, probe.status, probe.err);
		} else {
			cases(true_argv, lib, true_path, false);
		}
	}
#endif
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
