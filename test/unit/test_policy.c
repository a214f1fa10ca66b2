/* test_policy.c — the policy file's grammar and matching (pure functions on text), the
 * owner and mode rules on real temporary files, and the new options' grammar. */
#define _GNU_SOURCE
#include <check.h>

#include "../check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "front/options.h"
#include "front/policy.h"

/* Capture stderr around the calls between begin and end. */
static int saved_fd = -1, pipe_rd = -1;

static void capture_begin(void)
{
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	saved_fd = dup(STDERR_FILENO);
	dup2(pfd[1], STDERR_FILENO);
	close(pfd[1]);
	pipe_rd = pfd[0];
}

static void capture_end(char *buf, size_t cap)
{
	dup2(saved_fd, STDERR_FILENO);
	close(saved_fd);
	ssize_t n = read(pipe_rd, buf, cap - 1);
	buf[n > 0 ? n : 0] = 0;
	close(pipe_rd);
}

/* An executable known by its path alone. */
static const struct policy_exe *named(const char *path)
{
	static struct policy_exe exe;
	exe = (struct policy_exe){.path = path, .run_as = ""};
	return &exe;
}

/* Apply text for exe; stderr into warn; returns the options, *line the last rule and
 * *by the name it matched (each unless NULL). */
static struct options apply_names(const char *text, const struct policy_exe *exe, unsigned *line,
				  enum policy_matched *by, char *warn, size_t cap)
{
	struct options o;
	options_default(&o);
	capture_begin();
	unsigned l = policy_apply_text(&o, text, strlen(text), exe, "/etc/rampart.conf", by);
	capture_end(warn, cap);
	if (line) *line = l;
	return o;
}

static struct options apply(const char *text, const char *exe, unsigned *line, char *warn, size_t cap)
{
	return apply_names(text, named(exe), line, NULL, warn, cap);
}

START_TEST(test_glob)
{
	static const struct {
		const char *pat, *s;
		bool want;
	} cases[] = {
		{"firefox", "firefox", true},
		{"firefox", "firefox-esr", false},
		{"firefox*", "firefox-esr", true},
		{"*", "anything", true},
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"f?refox", "firefox", true},
		{"f?refox", "frefox", false},
		{"/opt/app/bin/*", "/opt/app/bin/tool", true},
		{"/opt/app/bin/*", "/opt/app/bin/sub/tool", false}, /* '*' stays in one component */
		{"/opt/*/bin/tool", "/opt/app/bin/tool", true},
		{"/opt/*/tool", "/opt/app/bin/tool", false},
		{"/opt/app?bin/tool", "/opt/app/bin/tool", false}, /* '?' is no '/' either */
		{"*.bin", "a.b.bin", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"**", "abc", true},
		{"/usr/bin/x", "/usr/bin/x", true},
		{"/usr/bin/x", "/usr/bin/xy", false},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		ck_assert_msg(policy_glob(cases[i].pat, strlen(cases[i].pat), cases[i].s) == cases[i].want, "'%s' vs '%s'",
			      cases[i].pat, cases[i].s);
	/* A pattern with a '/' names the path; one without, the last component. */
	ck_assert(policy_match("firefox", 7, "/usr/lib/firefox/firefox"));
	ck_assert(!policy_match("firefox", 7, "/usr/lib/firefox/firefox-bin"));
	ck_assert(policy_match("/usr/lib/*/firefox", 18, "/usr/lib/firefox/firefox"));
	ck_assert(!policy_match("/firefox", 8, "/usr/lib/firefox/firefox"));
	ck_assert(policy_match("*", 1, ""));          /* unknown executable: only '*' */
	ck_assert(!policy_match("firefox", 7, ""));
	ck_assert(!policy_match("/usr/bin/*", 10, ""));
}
END_TEST

START_TEST(test_rules)
{
	char warn[1024];
	unsigned line;
	struct options o;
	const char *text = "# rampart policy\n"
			   "\n"
			   "*                   on_error=report\n"
			   "/usr/bin/firefox    passthrough        # bundles its own allocator\n"
			   "/opt/app/bin/*      sized_free=off, verbose=1\n"
			   "   gimp\tsized_free=off\n"
			   "late                guard=mprotect\n"
			   "late                guard=madvise\n";

	o = apply(text, "/usr/bin/firefox", &line, warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert(o.passthrough && o.sized_free && o.on_error == ON_ERROR_REPORT);
	ck_assert_uint_eq(line, 4);

	o = apply(text, "/opt/app/bin/tool", &line, warn, sizeof warn);
	ck_assert(!o.passthrough && !o.sized_free && o.verbose && o.on_error == ON_ERROR_REPORT);
	ck_assert_uint_eq(line, 5);

	o = apply(text, "/usr/local/bin/gimp", &line, warn, sizeof warn);
	ck_assert(!o.sized_free && !o.passthrough);
	ck_assert_uint_eq(line, 6);

	o = apply(text, "/bin/true", &line, warn, sizeof warn);
	ck_assert(!o.passthrough && o.sized_free && o.on_error == ON_ERROR_REPORT);
	ck_assert_uint_eq(line, 3);

	/* Every matching line applies in order: the later entry wins. */
	o = apply(text, "/x/late", &line, warn, sizeof warn);
	ck_assert_int_eq(o.guard, GUARD_MADVISE);
	ck_assert_uint_eq(line, 8);

	/* No rule: the defaults, line 0. */
	o = apply("/usr/bin/a passthrough\n", "/usr/bin/b", &line, warn, sizeof warn);
	ck_assert(!o.passthrough);
	ck_assert_uint_eq(line, 0);

	/* No final newline, CRLF line ends, comments only. */
	o = apply("x passthrough", "/bin/x", &line, warn, sizeof warn);
	ck_assert(o.passthrough);
	o = apply("x on_error=report\r\n", "/bin/x", &line, warn, sizeof warn);
	ck_assert_int_eq(o.on_error, ON_ERROR_REPORT);
	ck_assert_str_eq(warn, "");
	o = apply("# x passthrough\n   # x passthrough\n\n", "/bin/x", &line, warn, sizeof warn);
	ck_assert(!o.passthrough);
	ck_assert_uint_eq(line, 0);
	ck_assert_str_eq(warn, "");
	o = apply("", "/bin/x", &line, warn, sizeof warn);
	ck_assert_uint_eq(line, 0);
}
END_TEST

/* A rule with no options applies nothing and says so, on the program it names only. */
START_TEST(test_rule_without_options)
{
	char warn[1024];
	unsigned line;
	const char *text = "* on_error=report\n"
			   "x\n"
			   "y   # passthrough\n"
			   "x\t \r\n";
	struct options o = apply(text, "/bin/x", &line, warn, sizeof warn);
	ck_assert_msg(strstr(warn, "rampart: warning: /etc/rampart.conf:2: rule for 'x' has no options\n"), "'%s'", warn);
	ck_assert_msg(strstr(warn, "rampart: warning: /etc/rampart.conf:4: rule for 'x' has no options\n"), "'%s'", warn);
	ck_assert_msg(!strstr(warn, "'y'"), "'%s'", warn);
	ck_assert_int_eq(o.on_error, ON_ERROR_REPORT);
	ck_assert_uint_eq(line, 1); /* the last rule that applied something */
	apply(text, "/bin/y", &line, warn, sizeof warn);
	ck_assert_msg(strstr(warn, "/etc/rampart.conf:3: rule for 'y' has no options") && !strstr(warn, "'x'"), "'%s'",
		      warn);
	apply(text, "/bin/z", &line, warn, sizeof warn);
	ck_assert_str_eq(warn, "");
}
END_TEST

/* A rule matches the executable's path or the path it was run by (when that counts):
 * the name the user typed works, and the status says which name matched. */
START_TEST(test_run_as_names)
{
	char warn[1024];
	unsigned line;
	enum policy_matched by;
	const char *text = "python3 on_error=report\n"
			   "/usr/bin/python3 sized_free=off\n"
			   "python3.11 verbose=1\n";
	struct policy_exe exe = {.path = "/usr/bin/python3.11", .run_as = "/usr/bin/python3"};
	struct options o = apply_names(text, &exe, &line, &by, warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert(o.on_error == ON_ERROR_REPORT && !o.sized_free && o.verbose);
	ck_assert_uint_eq(line, 3);
	ck_assert_int_eq(by, POLICY_MATCHED_PATH);
	o = apply_names("python3 on_error=report\n", &exe, &line, &by, warn, sizeof warn);
	ck_assert(o.on_error == ON_ERROR_REPORT);
	ck_assert_int_eq(by, POLICY_MATCHED_RUN_AS);

	/* A name that does not count matches nothing: only the executable's path. */
	exe.run_as_ignored = "another file";
	o = apply_names(text, &exe, &line, &by, warn, sizeof warn);
	ck_assert(o.on_error == ON_ERROR_ABORT && o.sized_free && o.verbose);
	ck_assert_int_eq(by, POLICY_MATCHED_PATH);
	apply_names("python3 on_error=report\n", &exe, &line, &by, warn, sizeof warn);
	ck_assert_uint_eq(line, 0);
	ck_assert_int_eq(by, POLICY_MATCHED_NONE);

	ck_assert_int_eq(policy_match_exe("*", 1, named("")), POLICY_MATCHED_PATH);
	ck_assert_int_eq(policy_match_exe("python3", 7, named("")), POLICY_MATCHED_NONE);
}
END_TEST

/* An AT_SECURE program: a rule applies only if it names the executable's full path
 * exactly, or is '*' alone; never by basename or glob (a hard link's name is the
 * kernel's name of the program), never by the name it was run as, and none by path
 * while the file has more than one link. */
START_TEST(test_secure_matching)
{
	char warn[1024];
	unsigned line;
	enum policy_matched by;
	const char *text = "*               on_error=report\n"
			   "su              passthrough\n"
			   "s?              passthrough\n"
			   "/usr/bin/s?     sized_free=off\n"
			   "/usr/bin/*      verbose=1\n"
			   "/usr/bin/su     guard=mprotect\n"
			   "/usr/bin/su2    arenas=2\n"
			   "/usr/bin/s      arenas=3\n"
			   "/bin/su         arenas=4\n";
	struct options d;
	options_default(&d);
	struct policy_exe exe = {.path = "/usr/bin/su", .run_as = "", .secure = true};
	struct options o = apply_names(text, &exe, &line, &by, warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert(o.on_error == ON_ERROR_REPORT && !o.passthrough && o.sized_free && !o.verbose);
	ck_assert_int_eq(o.guard, GUARD_MPROTECT);
	ck_assert_uint_eq(o.arenas, d.arenas);
	ck_assert_uint_eq(line, 6);
	ck_assert_int_eq(by, POLICY_MATCHED_PATH);
	/* The same program, not AT_SECURE: every rule that names it applies. */
	exe.secure = false;
	o = apply_names(text, &exe, &line, NULL, warn, sizeof warn);
	ck_assert(o.passthrough && !o.sized_free && o.verbose);
	ck_assert_uint_eq(line, 6);

	/* More than one link: no rule by its path, '*' still. */
	exe = (struct policy_exe){.path = "/usr/bin/su", .run_as = "", .secure = true, .path_ignored = "hard links"};
	o = apply_names(text, &exe, &line, NULL, warn, sizeof warn);
	ck_assert(o.on_error == ON_ERROR_REPORT && o.guard == d.guard && !o.passthrough);
	ck_assert_uint_eq(line, 1);

	/* A set-user-ID program hard-linked as gimp-evil: the glob rule for gimp-* does not
	 * apply (it does to an ordinary program of that name), nor does a rule naming the
	 * link's full path with a glob, nor a rule for the name it was run as. */
	const char *gimp = "gimp-*           passthrough\n"
			   "/tmp/*/gimp-evil sized_free=off\n"
			   "/tmp/gimp-run    verbose=1\n";
	exe = (struct policy_exe){.path = "/tmp/x/gimp-evil", .run_as = "/tmp/gimp-run", .secure = true};
	o = apply_names(gimp, &exe, &line, &by, warn, sizeof warn);
	ck_assert(!o.passthrough && o.sized_free && !o.verbose);
	ck_assert_uint_eq(line, 0);
	ck_assert_int_eq(by, POLICY_MATCHED_NONE);
	exe.secure = false;
	o = apply_names(gimp, &exe, &line, &by, warn, sizeof warn);
	ck_assert(o.passthrough && !o.sized_free && o.verbose);
	ck_assert_int_eq(by, POLICY_MATCHED_RUN_AS);

	/* '*' alone, however many: every program, also one whose path is unknown. */
	exe = (struct policy_exe){.path = "", .run_as = "", .secure = true, .path_ignored = "no /proc/self/exe"};
	ck_assert_int_eq(policy_match_exe("*", 1, &exe), POLICY_MATCHED_PATH);
	ck_assert_int_eq(policy_match_exe("**", 2, &exe), POLICY_MATCHED_PATH);
	ck_assert_int_eq(policy_match_exe("/*", 2, &exe), POLICY_MATCHED_NONE);
	ck_assert_int_eq(policy_match_exe("?", 1, &exe), POLICY_MATCHED_NONE);
	exe = (struct policy_exe){.path = "/usr/bin/su", .run_as = "", .secure = true};
	ck_assert_int_eq(policy_match_exe("/usr/bin/su", 11, &exe), POLICY_MATCHED_PATH);
	ck_assert_int_eq(policy_match_exe("/usr/bin/s*", 11, &exe), POLICY_MATCHED_NONE);
	ck_assert_int_eq(policy_match_exe("/usr/bin/s?", 11, &exe), POLICY_MATCHED_NONE);
	ck_assert_int_eq(policy_match_exe("usr/bin/su", 10, &exe), POLICY_MATCHED_NONE);
}
END_TEST

/* verbose=1's line names the rule's line and which name it matched. */
START_TEST(test_say_names)
{
	char out[1024];
	struct policy_status st = {.file = POLICY_READ, .path = "/etc/rampart.conf", .line = 3,
				   .matched = POLICY_MATCHED_RUN_AS,
				   .exe = {.path = "/usr/bin/python3.11", .run_as = "/usr/bin/python3"}};
	capture_begin();
	policy_say(&st);
	capture_end(out, sizeof out);
	ck_assert_str_eq(out, "rampart: policy file /etc/rampart.conf: last rule applied is line 3, matched by the name it "
			      "was run as (executable /usr/bin/python3.11, run as /usr/bin/python3)\n");

	st.matched = POLICY_MATCHED_PATH;
	capture_begin();
	policy_say(&st);
	capture_end(out, sizeof out);
	ck_assert_str_eq(out, "rampart: policy file /etc/rampart.conf: last rule applied is line 3, matched by the "
			      "executable's path (executable /usr/bin/python3.11, run as /usr/bin/python3)\n");

	st.exe.run_as_ignored = "AT_SECURE program";
	st.secure = true;
	capture_begin();
	policy_say(&st);
	capture_end(out, sizeof out);
	ck_assert_msg(strstr(out, ": last rule applied is line 3 (executable /usr/bin/python3.11, run as /usr/bin/python3, "
				  "not matched: AT_SECURE program)\n"),
		      "'%s'", out);

	/* An AT_SECURE program whose file has other links: no rule by its path, and why. */
	st = (struct policy_status){.file = POLICY_READ, .path = "/etc/rampart.conf", .line = 1, .secure = true,
				    .exe = {.path = "/tmp/gimp-evil", .run_as = "", .secure = true,
					    .path_ignored = "the file has more than one link (hard links)"}};
	capture_begin();
	policy_say(&st);
	capture_end(out, sizeof out);
	ck_assert_str_eq(out, "rampart: policy file /etc/rampart.conf: last rule applied is line 1 (executable "
			      "/tmp/gimp-evil, no rule by its path: the file has more than one link (hard links))\n"
			      "rampart: AT_SECURE program: RAMPART_OPTIONS ignored, the policy file alone applies (its "
			      "rules of '*' alone and those naming the executable's full path exactly)\n");

	st = (struct policy_status){.file = POLICY_READ, .path = "/etc/rampart.conf", .exe = {.path = "/bin/x", .run_as = ""}};
	capture_begin();
	policy_say(&st);
	capture_end(out, sizeof out);
	ck_assert_str_eq(out, "rampart: policy file /etc/rampart.conf: no rule applies (executable /bin/x)\n");
}
END_TEST

/* When the path run by counts: the kernel's file and the named one are the same file
 * (a symlink to it, or itself under another path), and the program is not AT_SECURE. */
START_TEST(test_run_as_counts)
{
	char dir[] = "/tmp/rampart-runas-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char real[256], link[256], other[256], hard[256];
	snprintf(real, sizeof real, "%s/python3.11", dir);
	snprintf(link, sizeof link, "%s/python3", dir);
	snprintf(other, sizeof other, "%s/other", dir);
	snprintf(hard, sizeof hard, "%s/./python3.11", dir);
	int fd = open(real, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(symlink("python3.11", link), 0);

	struct policy_exe exe;
	policy_name_exe(&exe, real, real, link, false);
	ck_assert_str_eq(exe.path, real);
	ck_assert_str_eq(exe.run_as, link);
	ck_assert_ptr_null(exe.run_as_ignored);

	policy_name_exe(&exe, real, real, hard, false);
	ck_assert_str_eq(exe.run_as, hard);
	ck_assert_ptr_null(exe.run_as_ignored);

	policy_name_exe(&exe, real, real, link, true); /* AT_SECURE: the kernel's name alone */
	ck_assert_str_eq(exe.run_as_ignored, "AT_SECURE program");
	ck_assert(exe.secure);
	ck_assert_ptr_null(exe.path_ignored); /* one link: rules naming the path apply */

	/* A hard link to the file: the kernel names a program run through it by the link's
	 * path, and the file's link count tells. Only AT_SECURE programs care. */
	char second[256];
	snprintf(second, sizeof second, "%s/gimp-evil", dir);
	ck_assert_int_eq(linkat(AT_FDCWD, real, AT_FDCWD, second, 0), 0); /* linkat: link is the symlink's path here */
	policy_name_exe(&exe, real, second, NULL, true);
	ck_assert_str_eq(exe.path, second);
	ck_assert_str_eq(exe.path_ignored, "the file has more than one link (hard links)");
	policy_name_exe(&exe, second, real, NULL, true); /* either name */
	ck_assert_str_eq(exe.path_ignored, "the file has more than one link (hard links)");
	policy_name_exe(&exe, real, second, NULL, false);
	ck_assert(!exe.secure);
	ck_assert_ptr_null(exe.path_ignored);
	ck_assert_int_eq(unlink(second), 0);
	policy_name_exe(&exe, real, real, NULL, true);
	ck_assert_ptr_null(exe.path_ignored);
	policy_name_exe(&exe, "/nonexistent/exe", "/nonexistent/exe", NULL, true);
	ck_assert_str_eq(exe.path_ignored, "its link count is unknown (stat)");

	policy_name_exe(&exe, real, real, other, false); /* a name of another file */
	ck_assert_str_eq(exe.run_as_ignored, "another file");
	policy_name_exe(&exe, real, real, "/nonexistent/python3", false);
	ck_assert_str_eq(exe.run_as_ignored, "another file");

	policy_name_exe(&exe, real, real, real, false); /* the same string: one name */
	ck_assert_str_eq(exe.run_as, "");
	policy_name_exe(&exe, real, real, NULL, false);
	ck_assert_str_eq(exe.run_as, "");

	unlink(link);
	unlink(other);
	unlink(real);
	rmdir(dir);
}
END_TEST

/* A bad entry names file and line, and only the program the line applies to sees it. */
START_TEST(test_rule_messages)
{
	char warn[1024];
	const char *text = "a bogus=1\n"
			   "b sized_free=maybe, on_error=report\n"
			   "c on_error=explode\n"
			   "d passthrough=yes\n";
	struct options o = apply(text, "/bin/b", NULL, warn, sizeof warn);
	ck_assert_msg(strstr(warn, "rampart: warning: /etc/rampart.conf:2: bad value 'maybe' for sized_free: expected on "
				   "or off (entry ignored)"),
		      "'%s'", warn);
	ck_assert(!strstr(warn, "bogus") && !strstr(warn, "explode"));
	ck_assert(o.sized_free && o.on_error == ON_ERROR_REPORT); /* the good entry still applies */
	apply(text, "/bin/a", NULL, warn, sizeof warn);
	ck_assert_msg(strstr(warn, "/etc/rampart.conf:1: unknown key 'bogus'"), "'%s'", warn);
	apply(text, "/bin/c", NULL, warn, sizeof warn);
	ck_assert_msg(strstr(warn, "/etc/rampart.conf:3: bad value 'explode' for on_error: expected abort or report"), "'%s'",
		      warn);
	o = apply(text, "/bin/d", NULL, warn, sizeof warn);
	ck_assert(!o.passthrough);
	ck_assert_msg(strstr(warn, "/etc/rampart.conf:4: bad value 'yes' for passthrough"), "'%s'", warn);
}
END_TEST

/* The new keys in RAMPART_OPTIONS, and help=1 lists them. */
START_TEST(test_new_options)
{
	struct options o, d;
	options_default(&d);
	ck_assert(!d.passthrough && d.sized_free && d.on_error == ON_ERROR_ABORT);
	char warn[1024];
	capture_begin();
	options_parse(&o, "passthrough,sized_free=off,on_error=report");
	capture_end(warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert(o.passthrough && !o.sized_free && o.on_error == ON_ERROR_REPORT);
	capture_begin();
	options_parse(&o, "passthrough=1,passthrough=0,sized_free=0,sized_free=on,on_error=abort");
	capture_end(warn, sizeof warn);
	ck_assert_str_eq(warn, "");
	ck_assert(!o.passthrough && o.sized_free && o.on_error == ON_ERROR_ABORT);
	capture_begin();
	options_parse(&o, "passthroughx");
	capture_end(warn, sizeof warn);
	ck_assert_msg(strstr(warn, "RAMPART_OPTIONS: entry 'passthroughx' has no '='"), "'%s'", warn);

	capture_begin();
	options_help();
	char out[4096];
	capture_end(out, sizeof out);
	ck_assert_msg(strstr(out, "passthrough=0|1") && strstr(out, "sized_free=on|off") &&
			      strstr(out, "on_error=abort|report"),
		      "'%s'", out);
}
END_TEST

/* Owner and mode, on real files (root only: chown). */
START_TEST(test_file_rules)
{
	char dir[] = "/tmp/rampart-policy-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/rampart.conf", dir);
	struct policy_status st;
	struct options o;

	/* Absent. */
	options_default(&o);
	st = (struct policy_status){0};
	policy_apply_file(&o, path, named("/bin/x"), &st);
	ck_assert_int_eq(st.file, POLICY_ABSENT);

	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	const char *text = "x passthrough\n";
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);

	static const struct {
		mode_t mode;
		uid_t owner;
		bool trusted;
		const char *why;
	} cases[] = {
		{0644, 0, true, NULL},
		{0600, 0, true, NULL},
		{0444, 0, true, NULL},
		{0664, 0, false, "writable by group or others"},
		{0646, 0, false, "writable by group or others"},
		{0644, 1, false, "not owned by root"},
	};
	bool root = getuid() == 0;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		if (cases[i].owner && !root) continue;
		ck_assert_int_eq(chmod(path, cases[i].mode), 0);
		if (root) ck_assert_int_eq(chown(path, cases[i].owner, 0), 0);
		options_default(&o);
		st = (struct policy_status){0};
		policy_apply_file(&o, path, named("/bin/x"), &st);
		if (!root) { /* a file we own is never trusted */
			ck_assert_int_eq(st.file, POLICY_IGNORED);
			ck_assert_str_eq(st.why, "not owned by root");
			continue;
		}
		ck_assert_msg((st.file == POLICY_READ) == cases[i].trusted, "mode %o owner %u", cases[i].mode,
			      cases[i].owner);
		ck_assert(o.passthrough == cases[i].trusted);
		if (cases[i].why) ck_assert_str_eq(st.why, cases[i].why);
		else ck_assert_uint_eq(st.line, 1);
	}
	if (!root) fprintf(stderr, "note: not root, only the 'not owned by root' case ran\n");
	unlink(path);

	/* Not a regular file. */
	options_default(&o);
	st = (struct policy_status){0};
	policy_apply_file(&o, dir, named("/bin/x"), &st);
	ck_assert_int_eq(st.file, POLICY_IGNORED);
	ck_assert_str_eq(st.why, "not a regular file"); /* checked before the owner */
	ck_assert_int_eq(st.err, 0);
	char out[1024], want[512];
	capture_begin();
	policy_say(&st);
	capture_end(out, sizeof out);
	snprintf(want, sizeof want,
		 "rampart: policy file %s: ignored, not a regular file (it must be a regular file owned by root, "
		 "writable by nobody else)\n",
		 dir);
	ck_assert_str_eq(out, want);

	/* A file that cannot be opened: the reason is the error, not the ownership rules. A
	 * symbolic link to itself fails with ELOOP even for root. */
	snprintf(path, sizeof path, "%s/loop", dir);
	ck_assert_int_eq(symlink("loop", path), 0);
	options_default(&o);
	st = (struct policy_status){0};
	policy_apply_file(&o, path, named("/bin/x"), &st);
	ck_assert_int_eq(st.file, POLICY_IGNORED);
	ck_assert_int_eq(st.err, ELOOP);
	ck_assert_str_eq(st.why, "cannot be opened");
	capture_begin();
	policy_say(&st);
	capture_end(out, sizeof out);
	snprintf(want, sizeof want,
		 "rampart: policy file %s: ignored, cannot be opened: ELOOP (Too many levels of symbolic links)\n", path);
	ck_assert_str_eq(out, want);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* A file over the limit: the rules in its first POLICY_MAX_BYTES apply, a rule cut in
 * two does not, and the status says so. */
START_TEST(test_file_limit)
{
	if (getuid() != 0) {
		fprintf(stderr, "note: not root, size-limit case skipped\n");
		return;
	}
	char path[] = "/tmp/rampart-policy-big-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, 0644), 0);
	static char text[POLICY_MAX_BYTES + 4096];
	size_t at = 0;
	at += (size_t)sprintf(text + at, "x on_error=report\n");
	while (at < POLICY_MAX_BYTES - 20) at += (size_t)sprintf(text + at, "# padding padding padding\n");
	at += (size_t)sprintf(text + at, "x passthrough passthrough passthrough passthrough\n");
	at += (size_t)sprintf(text + at, "x sized_free=off\n");
	ck_assert_int_eq(write(fd, text, at), (ssize_t)at);
	close(fd);
	struct options o;
	options_default(&o);
	struct policy_status st = {0};
	policy_apply_file(&o, path, named("/bin/x"), &st);
	unlink(path);
	ck_assert_int_eq(st.file, POLICY_READ);
	ck_assert(st.truncated);
	ck_assert(o.on_error == ON_ERROR_REPORT && !o.passthrough && o.sized_free);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("policy");
	TCase *t = tcase_create("policy");
	tcase_set_timeout(t, 30);
	tcase_add_test(t, test_glob);
	tcase_add_test(t, test_rules);
	tcase_add_test(t, test_rule_without_options);
	tcase_add_test(t, test_run_as_names);
	tcase_add_test(t, test_run_as_counts);
	tcase_add_test(t, test_secure_matching);
	tcase_add_test(t, test_say_names);
	tcase_add_test(t, test_rule_messages);
	tcase_add_test(t, test_new_options);
	tcase_add_test(t, test_file_rules);
	tcase_add_test(t, test_file_limit);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
