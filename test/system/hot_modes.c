/*
 * hot_modes.c — each copy of the allocation path does what the options ask of it.
 * slot_alloc.c compiles the allocation path three times: with strong's choices as
 * constants, with light's, and reading each choice from the class for a mix (an option
 * set against its profile: slab_class.h, enum hot_mode). This program runs itself again
 * under each kind of mix, with the options put after the run's own (the guard backend,
 * and a profile of the run's, which the mix's overrides: the last profile wins),
 * and checks in each child what the choices mean:
 *   - slot_random: consecutive blocks of one size lie in rising order when it is off,
 *     and not all in order when it is on;
 *   - slot_quarantine_bytes: a freed slot comes back at once without a quarantine (and
 *     without random slots), and not within the next 64 blocks with one;
 *   - write_after_free_check: a write into a freed slot (past the bytes the free of a
 *     neighbour checks in any profile) is fatal at the slot's next allocation when it
 *     is on, and goes unseen when it is off.
 * With call-site partitions (the default) every class takes the copy that reads its
 * choices: strong and light with partitions=1 are the ones that run the copies with
 * constants, and the checks hold with partitions on too (the blocks whose reuse they
 * watch come from one call site, site.h).
 */
#include "../harness.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../profile.h"
#include "../site.h"

#define SIZE 200 /* a class no other call of this program uses */
#define BLOCKS 64

/* Each value of the three choices, and what a mix spells it as. */
struct mix {
	const char *options;
	bool random, quarantine, check;
};
static const struct mix mixes[] = {
	{"profile=strong,partitions=1", true, true, true},
	{"profile=light,partitions=1", false, false, false},
	{"profile=strong", true, true, true},
	{"profile=light", false, false, false},
	{"profile=light,write_after_free_check=on", false, false, true},
	{"profile=light,slot_random=on", true, false, false},
	{"profile=strong,slot_quarantine_bytes=0,slot_random=off", false, false, true},
	{"profile=strong,slot_random=off", false, true, true},
	{"profile=light,slot_random=on,write_after_free_check=on", true, false, true},
};

static void *volatile sink;

/* The write-after-free check as a mix leaves it: a build without zero-on-free cannot
 * have it (CONFIG_ZERO_ON_FREE=0: the option stays off, with a warning). */
static bool check_of(const struct mix *m) { return m->check && CONFIG_ZERO_ON_FREE; }

/* The choices as the library reports them. */
static void check_options(const struct mix *m)
{
	CHECK(test_option("slot_random") == m->random);
	CHECK(test_slot_quarantine() == m->quarantine);
	CHECK(test_waf_check() == check_of(m));
}

/* Fresh blocks of one size in a row: in rising order exactly when slots are not drawn
 * at random (a fresh slab's slots are taken from its first; at random, 64 in order
 * has the odds of 1 in 64!). */
static void check_order(const struct mix *m)
{
	char *p[BLOCKS];
	bool rising = true;
	for (int i = 0; i < BLOCKS; i++) {
		p[i] = malloc(SIZE);
		CHECK(p[i] != NULL);
		if (i && p[i] < p[i - 1]) rising = false;
	}
	CHECK(rising == !m->random);
	for (int i = 0; i < BLOCKS; i++) free(p[i]);
}

/* A freed block among live ones: handed out again by the next allocation of its size
 * when there is no quarantine and slots are drawn in order; never among the next
 * BLOCKS with a quarantine. */
static void check_reuse(const struct mix *m)
{
	char *keep[BLOCKS], *again[BLOCKS];
	for (int i = 0; i < BLOCKS; i++) CHECK((keep[i] = site_malloc(SIZE)) != NULL);
	char *freed = keep[BLOCKS / 2];
	free(freed);
	keep[BLOCKS / 2] = NULL;
	bool seen = false;
	for (int i = 0; i < BLOCKS; i++) {
		CHECK((again[i] = site_malloc(SIZE)) != NULL);
		if (again[i] == freed) seen = true;
	}
	if (m->quarantine) CHECK(!seen);
	if (!m->quarantine && !m->random) CHECK(again[0] == freed);
	for (int i = 0; i < BLOCKS; i++) free(keep[i]), free(again[i]);
}

/* A write into a freed block, then its slot handed out again (at once without a
 * quarantine; with one, after enough frees): fatal with the check, unseen without. */
static void write_after_free(const struct mix *m)
{
	char *p = site_malloc(SIZE);
	CHECK(p != NULL);
	free(p);
	p[100] = 'x'; /* the bug; past the first 16 bytes, which a neighbour's free checks always */
	for (int i = 0; i < 200000; i++) {
		char *q = site_malloc(SIZE);
		CHECK(q != NULL);
		sink = q;
		free(q);
	}
	(void)m;
}

static int child(const struct mix *m, const char *what)
{
	check_options(m);
	if (!strcmp(what, "order")) check_order(m);
	else if (!strcmp(what, "reuse")) check_reuse(m);
	else write_after_free(m);
	return 0;
}

/* Run this program with the mix's options after the run's own; its exit status, or
 * 128 + the signal that ended it. stderr is kept in err. */
static int run(const struct mix *m, const char *what, char *err, size_t errlen)
{
	char options[512];
	const char *own = getenv("RAMPART_OPTIONS");
	snprintf(options, sizeof options, "%s%s%s", own ? own : "", own && *own ? "," : "", m->options);
	int pfd[2];
	if (pipe(pfd)) return -1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], STDERR_FILENO);
		setenv("RAMPART_OPTIONS", options, 1);
		char index[16];
		snprintf(index, sizeof index, "%d", (int)(m - mixes));
		execl("/proc/self/exe", "hot_modes", index, what, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(pfd[0], err + len, errlen - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR) continue;
		if (n < 0) break;
		len += (size_t)n;
		if (len == errlen - 1) break;
	}
	err[len] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	size_t n = sizeof mixes / sizeof mixes[0];
	if (argc == 3) return child(&mixes[atoi(argv[1])], argv[2]);
	if (access("/proc/self/exe", X_OK)) test_skip("cannot run itself again: no /proc/self/exe");
	int failed = 0;
	static char err[8192];
	for (size_t i = 0; i < n; i++) {
		const struct mix *m = &mixes[i];
		static const char *const checks[] = {"order", "reuse"};
		for (int c = 0; c < 2; c++) {
			int st = run(m, checks[c], err, sizeof err);
			bool ok = st == 0;
			printf("%s  %-58s %s (exit %d)\n", ok ? "ok  " : "FAIL", m->options, checks[c], st);
			if (!ok) printf("      stderr: %s\n", err), failed++;
		}
		int st = run(m, "waf", err, sizeof err);
		bool caught = st == 128 + SIGABRT && strstr(err, "rampart: fatal:") && strstr(err, "write after free");
		bool ok = check_of(m) ? caught : st == 0;
		printf("%s  %-58s write after free: %s (exit %d)\n", ok ? "ok  " : "FAIL", m->options,
		       check_of(m) ? "fatal" : "unseen", st);
		if (!ok) printf("      stderr: %s\n", err), failed++;
	}
	printf("%zu mixes, %d failed\n", n, failed);
	return failed ? 1 : 0;
}
