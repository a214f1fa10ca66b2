/*
 * exit_check_death — RAMPART_OPTIONS=check_at_exit=1: damage to a block that is never
 * freed is reported when the program exits, one "rampart: fatal:" line per damaged
 * slot, then SIGABRT; without the option the same program exits quietly.
 *
 * Built without canaries (CONFIG_SLOT_CANARY=0) the option is refused with a warning.
 *
 * The report's callers hold no frame of rampart's own: the destructor that checks is
 * left out, and the list starts at the loader's call of it. Where the program calls
 * exit() from a function of its own, that call is one of the frames, as addr2line
 * names it (function and line). Where the C library is a shared object, its frame in
 * exit carries the name "exit" and its offset (callers_libc_names says why not elsewhere).
 *
 * The options are read once, at the first allocation, so each case re-executes this
 * program with check_at_exit=1 appended to whatever RAMPART_OPTIONS the test runner
 * set (both guard backends get exercised) or without it. The re-executed program
 * prints the addresses of the blocks it damaged on stdout and returns from main, or
 * ("overflow-exit") calls exit() from exit_check_leave.
 */
#include "../harness.h"
#include "../callers.h"

#include <malloc.h>
#include <stdlib.h>

#include "rampart.h"

/* --- the re-executed program ------------------------------------------------------ */

/* EXIT_LINE: the line of the exit() call below; keep it so. */
enum { EXIT_LINE = __LINE__ + 4 };
__attribute__((noinline)) void exit_check_leave(void)
{
	fflush(stdout);
	exit(0);
}

static int child_main(const char *mode)
{
	static void *keep[100];
	for (int i = 0; i < 100; i++) keep[i] = malloc((size_t)(i * 37 % 3000) + 1); /* live, intact */
	for (int i = 0; i < 100; i += 3) free(keep[i]);
	if (strncmp(mode, "overflow", 8) == 0) {
		/* Two live blocks of different classes, never freed: one byte of each canary. */
		char *a = malloc(24), *b = malloc(1000);
		a[malloc_usable_size(a) + 3] ^= 0x5a;
		b[malloc_usable_size(b) + 7] ^= 0x01;
		printf("%p\n%p\n", (void *)a, (void *)b);
	}
	if (strcmp(mode, "overflow-exit") == 0) exit_check_leave();
	fflush(stdout);
	return 0; /* from main: exit handlers and destructors run */
}

/* --- the test ------------------------------------------------------------------- */

struct outcome {
	int status;
	char out[512], err[8192];
};

static void drain(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	while ((n = read(fd, buf + len, cap - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR) continue;
			break;
		}
		len += (size_t)n;
		if (len == cap - 1) break;
	}
	buf[len] = 0;
}

/* Run this program in mode with RAMPART_OPTIONS = the runner's, plus extra if any. */
static void run(const char *mode, const char *extra, struct outcome *o)
{
	int out[2], err[2];
	if (pipe(out) || pipe(err)) abort();
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		close(out[0]), close(err[0]), close(out[1]), close(err[1]);
		quiet_child();
		if (extra) {
			const char *base = getenv("RAMPART_OPTIONS");
			static char opts[512];
			snprintf(opts, sizeof opts, "%s%s%s", base ? base : "", base && *base ? "," : "", extra);
			setenv("RAMPART_OPTIONS", opts, 1);
		}
		execl("/proc/self/exe", "exit_check_death", mode, (char *)NULL);
		_exit(127);
	}
	close(out[1]), close(err[1]);
	/* Small outputs: the child never fills a pipe, so reading one after the other is safe. */
	drain(out[0], o->out, sizeof o->out);
	drain(err[0], o->err, sizeof o->err);
	close(out[0]), close(err[0]);
	while (waitpid(pid, &o->status, 0) < 0 && errno == EINTR) {}
}

static TH_UNUSED int count(const char *hay, const char *needle) /* the canary build's cases */
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
	return n;
}

static int failures;

static void report(bool ok, const char *name, const struct outcome *o)
{
	printf("%s  %s (status %#x)\n", ok ? "ok  " : "FAIL", name, o->status);
	if (*o->err) printf("      child stderr: %s", o->err);
	failures += !ok;
}

/* The callers of the report: at least one frame, none of rampart's own; with leave, one
 * of them exit_check_leave's call of exit(), at EXIT_LINE. */
static TH_UNUSED bool callers_hold(const char *err, bool leave)
{
	char exe[512], fn[256], file[256];
	struct callers_frame f[16];
	int n = callers_parse(err, f, 16), own = 0, left = 0;
	if (!callers_exe(exe, sizeof exe)) return false;
	for (int i = 0; i < n && i < 16; i++) {
		int line;
		bool missing;
		own += callers_own(&f[i], exe, callers_bias());
		if (!leave || strcmp(f[i].module, exe) != 0) continue;
		if (callers_where(f[i].module, f[i].off, fn, sizeof fn, file, sizeof file, &line, &missing))
			left += !strcmp(fn, "exit_check_leave") && !strcmp(file, "exit_check_death.c") && line == EXIT_LINE;
		else if (missing)
			test_skip("addr2line (binutils) is not installed: test/deps.sh installs it");
	}
	const char *why = NULL;
	bool named = !callers_libc_names(&why) || callers_named(f, n < 16 ? n : 16, "exit") >= 0;
	if (why) printf("      no name asked for: %s\n", why);
	if (own || n < 1 || (leave && left != 1) || !named)
		printf("      callers: %d frames, %d of rampart's, %d at exit_check_death.c:%d, %s\n", n, own, left,
		       EXIT_LINE, named ? "exit named" : "no frame named exit at its address");
	return n >= 1 && !own && (!leave || left == 1) && named;
}

int main(int argc, char **argv)
{
	if (argc == 2) return child_main(argv[1]);
	struct outcome o;

#if CONFIG_SLOT_CANARY
	/* The overflows, checked at exit: SIGABRT after one line per damaged block, each
	 * naming the block. */
	run("overflow", "check_at_exit=1", &o);
	char a[32] = "", b[32] = "";
	sscanf(o.out, "%31s %31s", a, b);
	bool ok = WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT && count(o.err, "rampart: fatal:") == 2 &&
		  count(o.err, "canary") == 2 && *a && *b && strstr(o.err, a) && strstr(o.err, b) && callers_hold(o.err, false);
	report(ok, "check_at_exit=1: two damaged live blocks reported at exit, then SIGABRT; no caller rampart's", &o);

	run("overflow-exit", "check_at_exit=1", &o);
	ok = WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGABRT && count(o.err, "rampart: fatal:") == 2 &&
	     callers_hold(o.err, true);
	report(ok, "check_at_exit=1, exit() from a function: its call among the callers, none rampart's", &o);

	run("clean", "check_at_exit=1", &o);
	report(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 && !strstr(o.err, "rampart:"),
	       "check_at_exit=1: no damage, exit 0 and nothing said", &o);

	run("overflow", NULL, &o);
	report(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 && !strstr(o.err, "rampart:"),
	       "without the option: the same damage goes unreported at exit", &o);

	run("overflow", "check_at_exit=0", &o);
	report(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 && !strstr(o.err, "rampart:"),
	       "check_at_exit=0: the same damage goes unreported at exit", &o);

#else
	/* Built without canaries there is nothing to check: the option is refused with a
	 * warning that says why, and the program runs on. (No overflow is committed here:
	 * without a canary it lands in the next slot, or past the slab's last page.) */
	run("clean", "check_at_exit=1", &o);
	report(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 &&
		       strstr(o.err, "check_at_exit: this build has no slot canaries (CONFIG_SLOT_CANARY=0)") &&
		       !strstr(o.err, "rampart: fatal"),
	       "check_at_exit=1 without canaries: refused with a warning, exit 0", &o);
	run("clean", NULL, &o);
	report(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0 && !strstr(o.err, "rampart:"),
	       "without the option: exit 0 and nothing said", &o);
#endif
	printf("exit_check_death: %d failed\n", failures);
	return failures ? 1 : 0;
}
