/*
 * reexec_run.h — the parent side of a test that runs its experiments in fresh processes:
 * this program again (through /proc/self/exe, with the suite's RAMPART_OPTIONS and more
 * after them), its arguments naming the experiment, its findings read back from the
 * "hits N first M" lines it prints. Used by system/partitions and system/large_partitions,
 * whose children each draw a new partition secret.
 *
 * Included once, by a test's main file, after harness.h (CHECK).
 */
#ifndef RAMPART_TEST_REEXEC_RUN_H
#define RAMPART_TEST_REEXEC_RUN_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { REEXEC_LINES = 6 };
struct outcome {
	int status;
	int lines;
	long hits[REEXEC_LINES], first[REEXEC_LINES];
};

/* This program again with the run's options and extra ones after them, the experiment
 * in its arguments. */
static struct outcome run(const char *extra, char *const args[])
{
	struct outcome o = {0};
	char options[512];
	const char *own = getenv("RAMPART_OPTIONS");
	snprintf(options, sizeof options, "%s%s%s", own ? own : "", own && *own ? "," : "", extra);
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], STDOUT_FILENO);
		setenv("RAMPART_OPTIONS", options, 1);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(pfd[1]);
	FILE *f = fdopen(pfd[0], "r");
	CHECK(f != NULL);
	char line[128];
	while (fgets(line, sizeof line, f) && o.lines < REEXEC_LINES)
		if (sscanf(line, "hits %ld first %ld", &o.hits[o.lines], &o.first[o.lines]) == 2) o.lines++;
	fclose(f);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	o.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return o;
}

static int failed;

static void verdict(bool ok, const char *what)
{
	printf("%s  %s\n", ok ? "ok  " : "FAIL", what);
	failed += !ok;
}

/* One experiment in `procs` processes (argv_tail: its name and up to four arguments;
 * each process gets its index after the name): each must pass check on its outcome. */
static void each(const char *options, const char *what, int procs, char *const argv_tail[],
		 bool (*check)(const struct outcome *))
{
	int bad = 0;
	struct outcome last = {0};
	for (int i = 0; i < procs; i++) {
		char idx[16];
		snprintf(idx, sizeof idx, "%d", i);
		char *args[8] = {"child", argv_tail[0], idx};
		for (int j = 1; argv_tail[j] && j < 5; j++) args[2 + j] = argv_tail[j];
		struct outcome o = run(options, args);
		if (o.status || !check(&o)) bad++, last = o;
	}
	char line[256];
	snprintf(line, sizeof line, "%s: %s (%d of %d processes wrong)", options, what, bad, procs);
	verdict(!bad, line);
	if (bad) {
		printf("      last wrong: status %d, %d lines:", last.status, last.lines);
		for (int l = 0; l < last.lines; l++) printf(" (hits %ld, first %ld)", last.hits[l], last.first[l]);
		printf("\n");
	}
}

#endif
