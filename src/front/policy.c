/*
 * policy.c — the per-program policy file (see policy.h).
 */
#define _GNU_SOURCE
#include "front/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "base/report.h"
#include "base/text.h"

/* --- matching ------------------------------------------------------------------- */

bool policy_glob(const char *pat, size_t plen, const char *s)
{
	/* Iterative, with one backtrack point: the last '*' and where it began to match.
	 * Linear enough for a path, and no recursion on a hostile pattern. */
	size_t p = 0, star = SIZE_MAX;
	const char *star_s = NULL;
	while (*s) {
		if (p < plen && pat[p] == '*') {
			star = p++;
			star_s = s;
		} else if (p < plen && *s != '/' && (pat[p] == '?' || pat[p] == *s)) {
			p++;
			s++;
		} else if (p < plen && pat[p] == '/' && *s == '/') {
			p++;
			s++;
		} else if (star != SIZE_MAX && *star_s != '/') {
			/* Let the '*' take one more character, never a '/'. */
			p = star + 1;
			s = ++star_s;
		} else {
			return false;
		}
	}
	while (p < plen && pat[p] == '*') p++;
	return p == plen;
}

bool policy_match(const char *pattern, size_t plen, const char *name)
{
	if (memchr(pattern, '/', plen)) return policy_glob(pattern, plen, name);
	const char *base = strrchr(name, '/');
	return policy_glob(pattern, plen, base ? base + 1 : name);
}

/* A pattern of '*' alone: every program, whatever its name. */
static bool every_program(const char *pattern, size_t plen)
{
	for (size_t i = 0; i < plen; i++)
		if (pattern[i] != '*') return false;
	return plen > 0;
}

enum policy_matched policy_match_exe(const char *pattern, size_t plen, const struct policy_exe *exe)
{
	if (exe->secure) {
		/* No name chooses a rule of '*' alone. Any other rule chooses by name, and a
		 * privileged program's name is whatever a link to it is called: only its full
		 * path, written out (a pattern with no '*' or '?' matches only itself), and
		 * only while no other link to the file exists. */
		if (every_program(pattern, plen)) return POLICY_MATCHED_PATH;
		if (exe->path_ignored || plen != strlen(exe->path) || pattern[0] != '/' || memchr(pattern, '*', plen) ||
		    memchr(pattern, '?', plen) || memcmp(pattern, exe->path, plen))
			return POLICY_MATCHED_NONE;
		return POLICY_MATCHED_PATH;
	}
	if (policy_match(pattern, plen, exe->path)) return POLICY_MATCHED_PATH;
	if (exe->run_as[0] && !exe->run_as_ignored && policy_match(pattern, plen, exe->run_as))
		return POLICY_MATCHED_RUN_AS;
	return POLICY_MATCHED_NONE;
}

/* The name the program was run by, kept: AT_EXECFN's string lies in memory the program
 * may reuse (a process title written over argv and the environment). */
static char run_as_path[4096] STATIC_APART(run_as_path);

void policy_name_exe(struct policy_exe *exe, const char *kernel_file, const char *path, const char *run_as,
		     bool secure)
{
	*exe = (struct policy_exe){.path = path, .run_as = "", .secure = secure};
	struct stat by_kernel, by_name;
	if (secure) {
		/* A hard link raises the count of the file it names: with one link, the
		 * path is the file's only name, the one root gave it. */
		if (stat(kernel_file, &by_kernel)) exe->path_ignored = "its link count is unknown (stat)";
		else if (by_kernel.st_nlink > 1) exe->path_ignored = "the file has more than one link (hard links)";
		else if (by_kernel.st_nlink < 1) exe->path_ignored = "the file has no link (deleted)";
	}
	if (!run_as || !strcmp(run_as, path)) return;
	size_t n = strlen(run_as);
	if (n >= sizeof run_as_path) return; /* longer than any path the kernel runs */
	memcpy(run_as_path, run_as, n + 1);
	exe->run_as = run_as_path;
	if (secure) exe->run_as_ignored = "AT_SECURE program";
	else if (stat(kernel_file, &by_kernel) || stat(run_as_path, &by_name) || by_kernel.st_dev != by_name.st_dev ||
		 by_kernel.st_ino != by_name.st_ino)
		exe->run_as_ignored = "another file";
}

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* "<path>:<line>" into buf; a long path is cut, the line number kept. */
static void source_name(char *buf, size_t cap, const char *path, unsigned line)
{
	struct out o = out_string(buf, cap);
	out_mem(&o, path, cap - 12);
	out_str(&o, ":");
	out_num(&o, line);
}

/* "<source>: rule for '<pattern>' has no options" as a warning. */
static void warn_no_options(const char *source, const char *pat, size_t plen)
{
	char msg[256];
	struct out o = out_string(msg, sizeof msg);
	out_str(&o, source);
	out_str(&o, ": rule for '");
	out_mem(&o, pat, MIN(plen, (size_t)100));
	out_str(&o, "'");
	report_warn(WARN_EMPTY_RULE, msg);
}

unsigned policy_apply_text(struct options *o, const char *text, size_t len, const struct policy_exe *exe,
			   const char *path, enum policy_matched *matched)
{
	unsigned last = 0, number = 0;
	enum policy_matched last_by = POLICY_MATCHED_NONE;
	for (const char *p = text, *end = text + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		number++;
		const char *hash = memchr(p, '#', (size_t)(eol - p));
		const char *stop = hash ? hash : eol;
		while (p < stop && blank(*p)) p++;
		const char *pat = p;
		while (p < stop && !blank(*p)) p++;
		size_t plen = (size_t)(p - pat);
		enum policy_matched by = plen ? policy_match_exe(pat, plen, exe) : POLICY_MATCHED_NONE;
		if (by != POLICY_MATCHED_NONE) {
			while (p < stop && blank(*p)) p++;
			while (stop > p && blank(stop[-1])) stop--; /* a CR of a CRLF file too */
			char source[128];
			source_name(source, sizeof source, path, number);
			if (p == stop) {
				/* Most likely a rule whose options were lost to a stray '#'. */
				warn_no_options(source, pat, plen);
			} else {
				options_apply(o, p, (size_t)(stop - p), source);
				last = number;
				last_by = by;
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (matched) *matched = last_by;
	return last;
}

/* --- the file ------------------------------------------------------------------- */

const char *policy_unsafe(const struct stat *st)
{
	if (!S_ISREG(st->st_mode)) return "not a regular file";
	if (st->st_uid != 0) return "not owned by root";
	if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
	return NULL;
}

/* Start-up runs once, under the init lock: static storage is not shared. */
static char policy_text[POLICY_MAX_BYTES] STATIC_APART(policy_text);
static char exe_path[4096] STATIC_APART(exe_path);

/* This process's names: the executable as the kernel names it, and the path it was
 * run by where that counts (see policy.h). */
static void self_exe(struct policy_exe *exe, bool secure)
{
	const char *run_as = (const char *)getauxval(AT_EXECFN);
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
	if (n > 0) {
		exe_path[n] = 0;
		policy_name_exe(exe, "/proc/self/exe", exe_path, run_as, secure);
		return;
	}
	/* No /proc (early boot, a bare chroot). AT_EXECFN is what the caller of execve
	 * passed: good enough for a program whose environment wins anyway, not for one
	 * that runs with privileges its caller lacks. */
	exe_path[0] = 0;
	if (!secure && run_as && strlen(run_as) < sizeof exe_path) strcpy(exe_path, run_as);
	*exe = (struct policy_exe){.path = exe_path, .run_as = "", .secure = secure,
				   .path_ignored = secure ? "no /proc/self/exe" : NULL};
}

void policy_apply_file(struct options *o, const char *path, const struct policy_exe *exe, struct policy_status *st)
{
	st->path = path;
	st->exe = (struct policy_exe){.path = "", .run_as = ""};
	st->line = 0;
	st->matched = POLICY_MATCHED_NONE;
	st->truncated = false;
	st->why = NULL;
	st->err = 0;
	/* Non-blocking: a FIFO put in its place must not hang every program at start-up. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		st->err = errno;
		st->file = st->err == ENOENT || st->err == ENOTDIR ? POLICY_ABSENT : POLICY_IGNORED;
		st->why = "cannot be opened";
		return;
	}
	struct stat sb;
	if (fstat(fd, &sb)) {
		st->err = errno;
		st->file = POLICY_IGNORED;
		st->why = "cannot be examined (fstat)";
	} else if ((st->why = policy_unsafe(&sb))) {
		st->file = POLICY_IGNORED;
	} else {
		size_t len = 0;
		for (;;) {
			ssize_t r = read(fd, policy_text + len, sizeof policy_text - len);
			if (r < 0 && errno == EINTR) continue;
			if (r <= 0) break;
			len += (size_t)r;
			if (len == sizeof policy_text) {
				char more;
				st->truncated = read(fd, &more, 1) > 0;
				break;
			}
		}
		/* A rule cut by the limit is dropped, not half applied. */
		if (st->truncated) {
			while (len && policy_text[len - 1] != '\n') len--;
		}
		st->file = POLICY_READ;
		/* Only now are the executable's names worth a system call. */
		if (exe) st->exe = *exe;
		else self_exe(&st->exe, st->secure);
		st->line = policy_apply_text(o, policy_text, len, &st->exe, path, &st->matched);
	}
	close(fd);
}

void policy_read(struct options *o, struct policy_status *st)
{
	int saved = errno; /* start-up happens inside the program's malloc */
	options_default(o);
	*st = (struct policy_status){.file = POLICY_NO_FILE, .path = CONFIG_POLICY_PATH, .exe = {.path = "", .run_as = ""}};
	st->secure = getauxval(AT_SECURE) != 0;
	if (CONFIG_POLICY_PATH[0]) policy_apply_file(o, CONFIG_POLICY_PATH, NULL, st);
	if (!st->secure) {
		const char *env = getenv("RAMPART_OPTIONS");
		if (env) options_apply(o, env, strlen(env), "RAMPART_OPTIONS");
	}
	if (o->help) options_help();
	errno = saved;
}

void policy_say(const struct policy_status *st)
{
	char space[1024];
	struct out w = out_fd(2, space, sizeof space);
	if (st->file == POLICY_NO_FILE) {
		out_str(&w, "rampart: policy file: none in this build\n");
	} else if (st->file == POLICY_ABSENT) {
		out_str(&w, "rampart: policy file ");
		out_str(&w, st->path);
		out_str(&w, ": absent\n");
	} else if (st->file == POLICY_IGNORED) {
		out_str(&w, "rampart: policy file ");
		out_str(&w, st->path);
		out_str(&w, ": ignored, ");
		out_str(&w, st->why);
		if (st->err) {
			out_str(&w, ": ");
			report_put_errno(&w, st->err);
			out_str(&w, "\n");
		} else { /* the file was examined: what a trusted one looks like */
			out_str(&w, " (it must be a regular file owned by root, writable by nobody else)\n");
		}
	} else {
		out_str(&w, "rampart: policy file ");
		out_str(&w, st->path);
		const struct policy_exe *e = &st->exe;
		if (st->line) {
			out_str(&w, ": last rule applied is line ");
			out_num(&w, st->line);
			if (st->matched == POLICY_MATCHED_RUN_AS) {
				out_str(&w, ", matched by the name it was run as");
			} else if (e->run_as[0] && !e->run_as_ignored) {
				out_str(&w, ", matched by the executable's path");
			}
		} else {
			out_str(&w, ": no rule applies");
		}
		out_str(&w, " (executable ");
		out_str(&w, e->path[0] ? e->path : "unknown");
		if (e->secure && e->path_ignored) {
			out_str(&w, ", no rule by its path: ");
			out_str(&w, e->path_ignored);
		}
		if (e->run_as[0]) {
			out_str(&w, ", run as ");
			out_str(&w, e->run_as);
			if (e->run_as_ignored) {
				out_str(&w, ", not matched: ");
				out_str(&w, e->run_as_ignored);
			}
		}
		out_str(&w, ")");
		if (st->truncated) out_str(&w, "; longer than " POLICY_MAX_TEXT " bytes, the rest was ignored");
		out_str(&w, "\n");
	}
	if (st->secure)
		out_str(&w, "rampart: AT_SECURE program: RAMPART_OPTIONS ignored, the policy file alone applies (its rules "
			    "of '*' alone and those naming the executable's full path exactly)\n");
	out_flush(&w);
}

