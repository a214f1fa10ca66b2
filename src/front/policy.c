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

#include "base/text.h"

#ifndef CONFIG_POLICY_PATH
#define CONFIG_POLICY_PATH ""
#endif

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

bool policy_match(const char *pattern, size_t plen, const char *exe)
{
	if (memchr(pattern, '/', plen)) return policy_glob(pattern, plen, exe);
	const char *base = strrchr(exe, '/');
	return policy_glob(pattern, plen, base ? base + 1 : exe);
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

unsigned policy_apply_text(struct options *o, const char *text, size_t len, const char *exe, const char *path)
{
	unsigned last = 0, number = 0;
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
		if (plen && policy_match(pat, plen, exe)) {
			while (p < stop && blank(*p)) p++;
			while (stop > p && blank(stop[-1])) stop--; /* a CR of a CRLF file too */
			char source[128];
			source_name(source, sizeof source, path, number);
			options_apply(o, p, (size_t)(stop - p), source);
			last = number;
		}
		p = nl ? nl + 1 : end;
	}
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
static char policy_text[POLICY_MAX_BYTES];
static char exe_path[4096];

/* The executable, as the kernel names it. */
static const char *self_exe(bool secure)
{
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
	if (n > 0) {
		exe_path[n] = 0;
		return exe_path;
	}
	/* No /proc (early boot, a bare chroot). AT_EXECFN is what the caller of execve
	 * passed: good enough for a program whose environment wins anyway, not for one
	 * that runs with privileges its caller lacks. */
	const char *fn = secure ? NULL : (const char *)getauxval(AT_EXECFN);
	return fn ? fn : "";
}

void policy_apply_file(struct options *o, const char *path, const char *exe, struct policy_status *st)
{
	st->path = path;
	st->exe = "";
	st->line = 0;
	st->truncated = false;
	st->why = NULL;
	/* Non-blocking: a FIFO put in its place must not hang every program at start-up. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		st->file = errno == ENOENT || errno == ENOTDIR ? POLICY_ABSENT : POLICY_IGNORED;
		st->why = "cannot be opened";
		return;
	}
	struct stat sb;
	if (fstat(fd, &sb)) {
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
		/* Only now is the executable's name worth a system call. */
		st->exe = exe ? exe : self_exe(st->secure);
		st->line = policy_apply_text(o, policy_text, len, st->exe, path);
	}
	close(fd);
}

void policy_read(struct options *o, struct policy_status *st)
{
	int saved = errno; /* start-up happens inside the program's malloc */
	options_default(o);
	*st = (struct policy_status){.file = POLICY_NO_FILE, .path = CONFIG_POLICY_PATH, .exe = ""};
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
		out_str(&w, " (it must be a regular file owned by root, writable by nobody else)\n");
	} else {
		out_str(&w, "rampart: policy file ");
		out_str(&w, st->path);
		if (st->line) {
			out_str(&w, ": last rule applied is line ");
			out_num(&w, st->line);
		} else {
			out_str(&w, ": no rule applies");
		}
		out_str(&w, " (executable ");
		out_str(&w, st->exe[0] ? st->exe : "unknown");
		out_str(&w, ")");
		if (st->truncated) out_str(&w, "; longer than " POLICY_MAX_TEXT " bytes, the rest was ignored");
		out_str(&w, "\n");
	}
	if (st->secure) out_str(&w, "rampart: AT_SECURE program: RAMPART_OPTIONS ignored, the policy file alone applies\n");
	out_flush(&w);
}

