/*
 * policy_ns.c — the per-program policy file, end to end: real /etc/rampart.conf files
 * read by real programs (this one, re-executed), in a private mount namespace so that
 * the machine's /etc is never touched.
 *
 * Set-up (needs root and unshare(CLONE_NEWNS); otherwise the test says why and exits
 * 77, skipped): a private mount namespace; a tmpfs on a scratch directory made
 * in /tmp (not on /tmp itself: the build tree, this program included, may live there);
 * the real /etc bound under it; a tmpfs on /etc holding a symlink to every real entry (the loader still
 * finds ld.so.cache) plus our own rampart.conf, which the test rewrites, chowns and
 * chmods per case.
 *
 * Each case runs this program again as `policy_ns --child <scenario>` (statically
 * linked with rampart, as every system test) and judges its exit status, the one line
 * it prints and its stderr:
 *  - passthrough by full path, by basename and by glob: rampart_guard_backend() says
 *    "passthrough", malloc_usable_size(malloc(1)) is glibc's 24 (rampart's is 8), no
 *    rampart mapping exists (no [anon:rampart] label, no multi-GiB reservation), and a
 *    fork child is still passthrough;
 *  - a group-writable file and a file not owned by root are ignored (and verbose=1 says
 *    why); RAMPART_OPTIONS wins over the file for an ordinary program;
 *  - on_error=report: a double free (small and large) is reported and the program goes
 *    on; without it the same program dies by SIGABRT;
 *  - sized_free=off: a free_sized with a wrong size is accepted silently; on_error=report
 *    reports it; neither: SIGABRT;
 *  - a bad entry on a line that applies is reported with file and line; a bad entry on a
 *    line for another program is not;
 *  - the name run by: a rule naming a symlink to this program (by name or full path)
 *    applies when the program is run through it, a rule naming a made-up argv[0] does
 *    not, and verbose=1 says which name the rule matched;
 *  - the profile: strong by default, light by RAMPART_OPTIONS, by a rule naming the
 *    program or the symlink it was started by (verbose=1 names the rule's line), a later
 *    rule setting one of its options back; the environment wins over the file; the
 *    program's setenv, mallopt and malloc_trim after start-up change nothing (what it
 *    reads and what a freed slot does); a set-user-ID copy takes it from the file alone;
 *  - AT_SECURE: a set-user-ID copy run by an unprivileged user obeys the file and
 *    ignores RAMPART_OPTIONS, and a symlink to it named after a rule does not bring it
 *    that rule; nor do rules by basename or glob, and while a hard link to it exists
 *    (run through it or not) no rule but '*' applies.
 * In a static program (no glibc to hand calls to), passthrough must keep rampart and say
 * "passthrough unavailable": the passthrough cases check that instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "../../include/rampart.h"
#include "../harness.h"
#include "../site.h"
#include "slab/sizeclass.h"

void free_sized(void *p, size_t size);
/* rampart's, also where the C library's headers lack it (musl). */
int malloc_trim(size_t pad);

#define CONF "/etc/rampart.conf"

/* --- the child: one scenario, one line on stdout -------------------------------- */

/* Does /proc/self/maps show a rampart label, and how big is the address space? */
static void maps_facts(int *labels, long *vm_gib)
{
	*labels = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (f) {
		char line[512];
		while (fgets(line, sizeof line, f))
			if (strstr(line, "[anon:rampart")) (*labels)++;
		fclose(f);
	}
	long pages = vm_size_pages();
	*vm_gib = pages < 0 ? -1 : pages / (long)((1L << 30) / sysconf(_SC_PAGESIZE));
}

static int child(const char *scenario)
{
	if (!strcmp(scenario, "state")) {
		void *p = malloc(1);
		size_t usable = malloc_usable_size(p);
		free(p);
		int labels;
		long gib;
		maps_facts(&labels, &gib);
		int pfd[2];
		char fork_backend[32] = "?";
		if (pipe(pfd) == 0) {
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				void *q = malloc(10);
				const char *b = rampart_guard_backend();
				if (write(pfd[1], b, strlen(b)) < 0) _exit(1);
				free(q);
				_exit(0);
			}
			close(pfd[1]);
			ssize_t n = read(pfd[0], fork_backend, sizeof fork_backend - 1);
			fork_backend[n > 0 ? n : 0] = 0;
			close(pfd[0]);
			waitpid(pid, NULL, 0);
		}
		printf("backend=%s usable1=%zu labels=%d vm_gib=%ld fork=%s\n", rampart_guard_backend(), usable, labels,
		       gib, fork_backend);
		return 0;
	}
	if (!strcmp(scenario, "profile")) {
		/* The profile in effect, and what it does: under light a freed slot is the
		 * next one its class hands out; under strong it waits in the quarantine. */
		void *p = site_malloc(200);
		free(p);
		void *q = site_malloc(200);
		int reused = p == q;
		free(q);
		char before[32];
		snprintf(before, sizeof before, "%s", rampart_profile());
		/* The program tries to change it: the environment, mallopt, malloc_trim. None
		 * of them reads the options again. */
		setenv("RAMPART_OPTIONS", "profile=light,slot_quarantine_bytes=0,write_after_free_check=off", 1);
#ifdef __GLIBC__ /* rampart has mallopt where glibc's interface is (not under musl) */
		(void)mallopt(M_PERTURB, 0);
		(void)mallopt(M_MXFAST, 0);
#endif
		(void)malloc_trim(0);
		unsigned long sq = 12345;
		int got = rampart_get_option("slot_quarantine_bytes", &sq);
		void *a = site_malloc(200);
		free(a);
		void *b = site_malloc(200);
		int reused_after = a == b;
		free(b);
		printf("profile=%s after=%s slot_q=%lu got=%d reused=%d reused_after=%d\n", before, rampart_profile(), sq, got,
		       reused, reused_after);
		return 0;
	}
	if (!strcmp(scenario, "double_free")) {
		char *p = malloc(64);
		free(p);
		free(p);
		char *big = malloc(1 << 20);
		free(big);
		free(big);
		char *q = malloc(64); /* the heap still works */
		q[0] = 1;
		free(q);
		printf("survived\n");
		return 0;
	}
	if (!strcmp(scenario, "sized")) {
		char *p = malloc(100);
		free_sized(p, 5000);
		char *big = malloc(1 << 20);
		free_sized(big, 100);
		printf("survived\n");
		return 0;
	}
	return 2;
}

/* --- the parent ----------------------------------------------------------------- */

static char self[4096];   /* this program, as the kernel names it */
static const char *base_opts; /* the suite's RAMPART_OPTIONS (guard=...) */
static int failures;

struct result {
	int status; /* exit code, or 128 + signal */
	char out[512];
	char err[8192];
};

static void slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;
	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0) close(fd);
}

/* The scratch directory, a tmpfs in the private namespace (see private_etc). */
static char W[64] = "/tmp/rampart-policy_ns-XXXXXX";

static void wpath(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", W, name); }

/* Run exe (argv[0] argv0) --child scenario with RAMPART_OPTIONS=opts (NULL: unset), as
 * uid (0: root). */
static struct result run_named(const char *exe, const char *argv0, const char *scenario, const char *opts, uid_t uid)
{
	struct result r;
	char out_path[128], err_path[128];
	wpath(out_path, sizeof out_path, "out");
	wpath(err_path, sizeof err_path, "err");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out < 0 || err < 0) _exit(125);
		dup2(out, 1);
		dup2(err, 2);
		quiet_child();
		if (uid && (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))) _exit(126);
		char env_opts[256];
		snprintf(env_opts, sizeof env_opts, "RAMPART_OPTIONS=%s", opts ? opts : "");
		char *envp[] = {opts ? env_opts : NULL, NULL};
		char *argv[] = {(char *)argv0, "--child", (char *)scenario, NULL};
		execve(exe, argv, envp);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	slurp(out_path, r.out, sizeof r.out);
	slurp(err_path, r.err, sizeof r.err);
	return r;
}

static struct result run_as(const char *exe, const char *scenario, const char *opts, uid_t uid)
{
	return run_named(exe, exe, scenario, opts, uid);
}

static struct result run(const char *scenario, const char *opts) { return run_as(self, scenario, opts, 0); }

/* Write the policy file: text, then owner and mode as given. */
static void conf(const char *text, uid_t owner, mode_t mode)
{
	int fd = open(CONF ".new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	CHECK(fchown(fd, owner, 0) == 0);
	CHECK(fchmod(fd, mode) == 0);
	close(fd);
	CHECK(rename(CONF ".new", CONF) == 0);
}

static void no_conf(void) { unlink(CONF); }

static void expect(bool ok, const char *name, const struct result *r)
{
	printf("%s  %s\n", ok ? "ok  " : "FAIL", name);
	if (!ok) {
		failures++;
		printf("      status %d, stdout: %s      stderr: %s\n", r->status, r->out, r->err);
	}
}

static bool passthrough_available_here;

/* The state scenario's verdict: rampart, or the C library without a trace of rampart. */
static bool is_passthrough(const struct result *r)
{
	return r->status == 0 && strstr(r->out, "backend=passthrough ") && strstr(r->out, " usable1=24 ") &&
	       strstr(r->out, " labels=0 ") && strstr(r->out, "fork=passthrough") && !strstr(r->out, "vm_gib=-") &&
	       atol(strstr(r->out, "vm_gib=") + 7) < 64;
}

static bool is_rampart(const struct result *r)
{
	char usable1[32]; /* rampart's slot of 16 bytes, less its canary */
	snprintf(usable1, sizeof usable1, " usable1=%u ", 16 - SC_CANARY);
	return r->status == 0 && (strstr(r->out, "backend=madvise ") || strstr(r->out, "backend=mprotect ")) &&
	       strstr(r->out, usable1);
}

/* A passthrough case: glibc where it can be handed calls, else rampart plus the reason. */
static bool passthrough_or_unavailable(const struct result *r)
{
	if (passthrough_available_here) return is_passthrough(r);
	return is_rampart(r) && strstr(r->err, "passthrough unavailable");
}

static void cases_passthrough(void)
{
	char text[8192], opts[256];
	const char *name = strrchr(self, '/') + 1;
	struct result r;

	no_conf();
	r = run("state", base_opts);
	expect(is_rampart(&r) && !r.err[0], "no policy file: rampart, silently", &r);

	snprintf(text, sizeof text, "# exempt this program\n%s passthrough\n", self);
	conf(text, 0, 0644);
	r = run("state", base_opts);
	expect(passthrough_or_unavailable(&r), "passthrough by full path: the C library's allocator, no rampart mapping",
	       &r);

	snprintf(text, sizeof text, "/nonexistent/x passthrough\n  %s   passthrough  # by name\n", name);
	conf(text, 0, 0600);
	r = run("state", base_opts);
	expect(passthrough_or_unavailable(&r), "passthrough by basename", &r);

	snprintf(text, sizeof text, "%.*s/policy_n?* passthrough\n", (int)(name - 1 - self), self);
	conf(text, 0, 0644);
	r = run("state", base_opts);
	expect(passthrough_or_unavailable(&r), "passthrough by glob", &r);

	snprintf(text, sizeof text, "/*/policy_ns passthrough\nother_program passthrough\n");
	conf(text, 0, 0644);
	r = run("state", base_opts);
	expect(is_rampart(&r), "rules for other programs ('*' stays inside one path component)", &r);

	snprintf(text, sizeof text, "%s passthrough\n", self);
	conf(text, 0, 0664);
	snprintf(opts, sizeof opts, "%s%sverbose=1", base_opts ? base_opts : "", base_opts ? "," : "");
	r = run("state", opts);
	expect(is_rampart(&r) && strstr(r.err, "ignored, writable by group or others"),
	       "a group-writable file is ignored (verbose=1 says why)", &r);
	r = run("state", base_opts);
	expect(is_rampart(&r) && !r.err[0], "... and silently without verbose", &r);

	conf(text, 65534, 0644);
	r = run("state", opts);
	expect(is_rampart(&r) && strstr(r.err, "ignored, not owned by root"), "a file not owned by root is ignored", &r);

	conf(text, 0, 0644);
	snprintf(opts, sizeof opts, "%s%spassthrough=0", base_opts ? base_opts : "", base_opts ? "," : "");
	r = run("state", opts);
	expect(is_rampart(&r), "RAMPART_OPTIONS=passthrough=0 wins over the file for an ordinary program", &r);
}

static void cases_errors(void)
{
	char text[8192];
	struct result r;

	no_conf();
	r = run("double_free", base_opts);
	expect(r.status == 128 + SIGABRT && strstr(r.err, "rampart: fatal:"), "double free without a policy: SIGABRT",
	       &r);

	snprintf(text, sizeof text, "* guard=auto\n%s on_error=report\n", self);
	conf(text, 0, 0644);
	r = run("double_free", base_opts);
	expect(r.status == 0 && strstr(r.out, "survived") &&
		       (strstr(r.err, "rampart: error: slot was already freed") ||
			strstr(r.err, "rampart: error: use of a pointer into a freed slab (double free?)")) &&
		       /* (VARIANT=light: a freed region goes straight to the reuse cache and is no
			* allocation any more, quarantined or live.) */
		       (strstr(r.err, "rampart: error: double free at") ||
			strstr(r.err, "rampart: error: free of a pointer that is not a live allocation at")) &&
		       strstr(r.err, "the call was ignored") &&
		       !strstr(r.err, "fatal"),
	       "on_error=report: small and large double frees reported, the program goes on", &r);

	no_conf();
	r = run("sized", base_opts);
	expect(r.status == 128 + SIGABRT && strstr(r.err, "sized free with a wrong size"), "sized free mismatch: SIGABRT",
	       &r);

	snprintf(text, sizeof text, "%s sized_free=off\n", self);
	conf(text, 0, 0644);
	r = run("sized", base_opts);
	expect(r.status == 0 && strstr(r.out, "survived") && !r.err[0], "sized_free=off: mismatches accepted silently",
	       &r);

	snprintf(text, sizeof text, "%s on_error=report\n", self);
	conf(text, 0, 0644);
	r = run("sized", base_opts);
	expect(r.status == 0 && strstr(r.out, "survived") &&
		       strstr(r.err, "rampart: error: sized free with a wrong size or alignment") &&
		       strstr(r.err, "freed as by free()"),
	       "on_error=report: sized free mismatches reported, the program goes on", &r);

	snprintf(text, sizeof text, "other_program bogus_key=1\n%s sized_free=maybe\n", self);
	conf(text, 0, 0644);
	r = run("state", base_opts);
	expect(is_rampart(&r) && strstr(r.err, CONF ":2: bad value 'maybe' for sized_free") &&
		       !strstr(r.err, "bogus_key"),
	       "a bad entry is reported with file and line, only by the program it applies to", &r);
}

/* The path a program is run by: a symlink's name matches (the kernel resolves it to
 * this executable), a made-up argv[0] does not, and verbose=1 says which name matched. */
static void cases_run_as(void)
{
	char link[128], text[8192], opts[256], want[8192];
	wpath(link, sizeof link, "alias_ns");
	CHECK(symlink(self, link) == 0);
	snprintf(opts, sizeof opts, "%s%sverbose=1", base_opts ? base_opts : "", base_opts ? "," : "");
	struct result r;

	conf("alias_ns passthrough\n", 0, 0644);
	r = run_as(link, "state", base_opts, 0);
	expect(passthrough_or_unavailable(&r), "a rule naming the symlink the program was run by applies", &r);
	r = run("state", base_opts);
	expect(is_rampart(&r), "... and not when it is run by its own path", &r);

	snprintf(text, sizeof text, "%s passthrough\n", link);
	conf(text, 0, 0644);
	r = run_as(link, "state", base_opts, 0);
	expect(passthrough_or_unavailable(&r), "a rule naming the symlink's full path applies", &r);

	conf("alias_ns on_error=report\n", 0, 0644);
	r = run_as(link, "state", opts, 0);
	snprintf(want, sizeof want, CONF ": last rule applied is line 1, matched by the name it was run as (executable %s, run as %s)",
		 self, link);
	expect(is_rampart(&r) && strstr(r.err, want), "verbose=1 says the rule matched the name the program was run as",
	       &r);
	snprintf(text, sizeof text, "%s on_error=report\n", self);
	conf(text, 0, 0644);
	r = run_as(link, "state", opts, 0);
	snprintf(want, sizeof want, CONF ": last rule applied is line 1, matched by the executable's path (executable %s, run as %s)",
		 self, link);
	expect(is_rampart(&r) && strstr(r.err, want), "... or the executable's own path", &r);

	conf("made_up_name passthrough\n", 0, 0644);
	r = run_named(self, "made_up_name", "state", opts, 0);
	expect(is_rampart(&r) && strstr(r.err, CONF ": no rule applies") && !strstr(r.err, "made_up_name"),
	       "argv[0] is no name of the program: a rule for a made-up argv[0] does not apply", &r);
	unlink(link);
}

/* The suite's guard backend alone of its RAMPART_OPTIONS, into buf: check-configs runs
 * the suite with a profile or one of its options first, which these cases choose
 * themselves. */
static const char *opts_without_profile(char *buf, size_t cap, const char *extra)
{
	buf[0] = 0;
	const char *p = base_opts ? base_opts : "";
	while (*p) {
		size_t n = strcspn(p, ",:");
		if (strncmp(p, "guard=", 6) == 0 && n)
			snprintf(buf + strlen(buf), cap - strlen(buf), "%s%.*s", buf[0] ? "," : "", (int)n, p);
		p += n + (p[n] != 0);
	}
	if (extra) snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? "," : "", extra);
	return buf;
}

static bool is_profile(const struct result *r, const char *name)
{
	char want[96];
	snprintf(want, sizeof want, "profile=%s after=%s slot_q=", name, name);
	bool light = !strcmp(name, "light");
	return r->status == 0 && strstr(r->out, want) && strstr(r->out, " got=0 ") &&
	       strstr(r->out, light ? "slot_q=0 " : "slot_q=131072 ") &&
	       strstr(r->out, light ? "reused=1 reused_after=1" : "reused=0 reused_after=0");
}

/* The profile: chosen by RAMPART_OPTIONS or by a rule, by any name of the program;
 * fixed at start-up whatever the program does later. */
static void cases_profile(void)
{
	char opts[256], verbose[256], link[128], text[8192];
	const char *plain = opts_without_profile(opts, sizeof opts, NULL);
	opts_without_profile(verbose, sizeof verbose, "verbose=1");
	struct result r;

	no_conf();
	r = run("profile", plain);
	expect(is_profile(&r, "strong"), "profile: strong by default; setenv, mallopt and malloc_trim change nothing", &r);
	char light_opts[256];
	opts_without_profile(light_opts, sizeof light_opts, "profile=light");
	r = run("profile", light_opts);
	expect(is_profile(&r, "light"), "profile: light by RAMPART_OPTIONS, and it stays light", &r);

	snprintf(text, sizeof text, "%s profile=light\n", strrchr(self, '/') + 1);
	conf(text, 0, 0644);
	r = run("profile", verbose);
	expect(is_profile(&r, "light") && strstr(r.err, "profile light (" CONF ":1: slot_random=off,"),
	       "profile: light by a rule naming the program; verbose=1 says where it came from", &r);
	char both[256];
	opts_without_profile(both, sizeof both, "profile=strong");
	r = run("profile", both);
	expect(is_profile(&r, "strong"), "profile: RAMPART_OPTIONS wins over the rule for an ordinary program", &r);

	wpath(link, sizeof link, "prof-light");
	CHECK(symlink(self, link) == 0);
	conf("prof-* profile=light\n", 0, 0644);
	r = run_as(link, "profile", plain, 0);
	expect(is_profile(&r, "light"), "profile: a rule for the name the program was started by applies", &r);
	r = run("profile", plain);
	expect(is_profile(&r, "strong"), "... and not when it is started by its own path", &r);
	unlink(link);

	/* A rule sets the profile, then one of its options back. */
	snprintf(text, sizeof text, "* profile=light\n%s slot_quarantine_bytes=128k\n", self);
	conf(text, 0, 0644);
	r = run("profile", plain);
	expect(r.status == 0 && strstr(r.out, "profile=light after=light slot_q=131072 ") &&
		       strstr(r.out, "reused=0 reused_after=0"),
	       "profile: a later rule gives light back its slot quarantine", &r);
	no_conf();
}

/* A set-user-ID root copy of this program, run by nobody: AT_SECURE. */
static void cases_secure(void)
{
	char copy[128];
	wpath(copy, sizeof copy, "secure_copy");
	int in = open(self, O_RDONLY | O_CLOEXEC), out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	CHECK(in >= 0 && out >= 0);
	static char buf[1 << 16];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0) CHECK(write(out, buf, (size_t)n) == n);
	close(in);
	close(out);
	CHECK(chmod(copy, 04755) == 0);

	char text[512];
	snprintf(text, sizeof text, "%s passthrough\n", copy);
	conf(text, 0, 0644);
	struct result r = run_as(copy, "state", "passthrough=0", 65534);
	if (r.status == 0 && !strstr(r.out, "backend=passthrough") && !strstr(r.err, "passthrough unavailable")) {
		/* Either setuid is not honoured here or the file was not obeyed: tell which. */
		struct result plain = run_as(copy, "state", "passthrough=1", 65534);
		if (is_passthrough(&plain)) {
			printf("skip  AT_SECURE cases: set-user-ID is not honoured here\n");
			unlink(copy);
			return;
		}
	}
	expect(passthrough_or_unavailable(&r), "AT_SECURE: the file's passthrough applies, RAMPART_OPTIONS=passthrough=0 "
					       "is ignored", &r);
	no_conf();
	r = run_as(copy, "state", "passthrough=1", 65534);
	expect(is_rampart(&r), "AT_SECURE: RAMPART_OPTIONS=passthrough=1 alone is ignored", &r);

	/* A link named after another program's rule does not bring that rule to a
	 * privileged program: it is matched by the kernel's name alone. */
	char alias[128];
	wpath(alias, sizeof alias, "secure_alias");
	CHECK(symlink(copy, alias) == 0);
	conf("* verbose=1\nsecure_alias passthrough\n", 0, 0644);
	r = run_as(alias, "state", NULL, 65534);
	expect(is_rampart(&r) && !strstr(r.err, "passthrough unavailable") &&
		       strstr(r.err, "last rule applied is line 1") && strstr(r.err, "not matched: AT_SECURE program"),
	       "AT_SECURE: a rule naming the symlink it was run by does not apply", &r);
	unlink(alias);

	/* Only its full path, written out, names a privileged program: not its basename, not
	 * a glob that matches that path. */
	snprintf(text, sizeof text, "* verbose=1\nsecure_copy passthrough\n%s/secure_co?y passthrough\n", W);
	conf(text, 0, 0644);
	r = run_as(copy, "state", NULL, 65534);
	expect(is_rampart(&r) && !strstr(r.err, "passthrough unavailable") && strstr(r.err, "last rule applied is line 1"),
	       "AT_SECURE: rules by basename and by glob do not apply", &r);

	/* A hard link named after a rule (the kernel names the program by the link's path;
	 * with fs.protected_hardlinks=0 anyone may make one): neither the rule for its name
	 * nor the one for the program's own path applies while the file has two links. */
	char hard[128];
	wpath(hard, sizeof hard, "gimp-evil");
	CHECK(link(copy, hard) == 0);
	snprintf(text, sizeof text, "* verbose=1\ngimp-* passthrough\n%s passthrough\n%s passthrough\n", hard, copy);
	conf(text, 0, 0644);
	r = run_as(hard, "state", NULL, 65534);
	expect(is_rampart(&r) && !strstr(r.err, "passthrough unavailable") && strstr(r.err, "last rule applied is line 1") &&
		       strstr(r.err, "no rule by its path: the file has more than one link"),
	       "AT_SECURE: a hard link named after a rule, or named by one, does not bring it", &r);
	r = run_as(copy, "state", NULL, 65534);
	expect(is_rampart(&r) && !strstr(r.err, "passthrough unavailable") && strstr(r.err, "last rule applied is line 1"),
	       "AT_SECURE: ... nor does the rule naming the program's own path while the link exists", &r);
	unlink(hard);
	r = run_as(copy, "state", NULL, 65534);
	expect(passthrough_or_unavailable(&r), "AT_SECURE: ... which applies again once the link is gone", &r);

	/* The profile of a privileged program: from the file alone. */
	no_conf();
	r = run_as(copy, "profile", "profile=light", 65534);
	expect(is_profile(&r, "strong"), "AT_SECURE: RAMPART_OPTIONS=profile=light is ignored", &r);
	snprintf(text, sizeof text, "%s profile=light\n", copy);
	conf(text, 0, 0644);
	r = run_as(copy, "profile", "profile=strong", 65534);
	expect(is_profile(&r, "light"), "AT_SECURE: the rule naming its path gives it light, whatever the environment", &r);
	no_conf();
	unlink(copy);
}

/* The private namespace: see the top of the file. Where it cannot be had here the
 * test is skipped, with the reason. */
static void private_etc(void)
{
	if (unshare(CLONE_NEWNS)) {
		int e = errno;
		rmdir(W);
		test_skip("unshare(CLONE_NEWNS): %s (no private mount namespace here)", strerror(e));
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		int e = errno;
		rmdir(W);
		test_skip("making / private in a new mount namespace: %s", strerror(e));
	}
	if (mount("policy_ns", W, "tmpfs", 0, "mode=1777")) {
		int e = errno;
		rmdir(W);
		test_skip("tmpfs on %s in a new mount namespace: %s", W, strerror(e));
	}
	char real_etc[128];
	wpath(real_etc, sizeof real_etc, "etc");
	CHECK(mkdir(real_etc, 0755) == 0);
	CHECK(mount("/etc", real_etc, NULL, MS_BIND | MS_REC, NULL) == 0);
	CHECK(mount("policy_ns", "/etc", "tmpfs", 0, "mode=755") == 0);
	DIR *d = opendir(real_etc);
	CHECK(d != NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "rampart.conf")) continue;
		char from[512], to[512];
		snprintf(from, sizeof from, "%s/%s", real_etc, e->d_name);
		snprintf(to, sizeof to, "/etc/%s", e->d_name);
		CHECK(symlink(from, to) == 0);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--child")) return child(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getuid() != 0)
		test_skip("not root (a private mount namespace is needed to put its own %s in place)", CONF);
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n] = 0;
	base_opts = getenv("RAMPART_OPTIONS");
	/* Would this program be able to hand calls to the C library (not static, glibc)? */
	passthrough_available_here = false;
#ifdef __GLIBC__
	extern void *__libc_malloc(size_t) __attribute__((weak));
	passthrough_available_here = __libc_malloc != NULL;
#endif
	/* Made before the namespace, so that it exists on the host too (empty there);
	 * removed at the end, after its tmpfs is gone. */
	CHECK(mkdtemp(W) != NULL);
	private_etc();
	if (!passthrough_available_here) printf("note: a static program: passthrough must be refused with a reason\n");
	cases_passthrough();
	cases_errors();
	cases_run_as();
	cases_profile();
	cases_secure();
	/* The namespace's mounts go with the process; the directory on the host stays
	 * unless removed from there: from here it is the tmpfs's mount point. */
	if (umount2(W, MNT_DETACH) == 0) rmdir(W);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
