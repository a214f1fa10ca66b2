/*
 * policy.h — the per-program policy file (CONFIG_POLICY_PATH, /etc/rampart.conf by
 * default). The error policy it and RAMPART_OPTIONS choose (on_error, sized_free) is
 * applied by base/report.h, report_go_on.
 *
 * The file: one rule a line, `<pattern> <options>`; `#` starts a comment; blank lines
 * are skipped. A pattern with a '/' is matched against a full path, one without
 * against its last component; `*` matches any run of characters but '/', `?` any one
 * character but '/' (so a pattern is one word: `?` stands for a space). A rule matches
 * when it matches either name of the program: the executable's path, or the path it
 * was run by when that is another name of the same file (a symlink such as
 * /usr/bin/python3 -> python3.11). An AT_SECURE program is matched only by a rule
 * that names the executable's path exactly (no `*` or `?`), and only while that file
 * has one link, and by a rule of `*` alone (every program). The options are RAMPART_OPTIONS entries
 * (options.h), plus the bare word `passthrough`; a rule without any is reported.
 * Every line that matches applies, in file order: a later entry wins, as in
 * RAMPART_OPTIONS, so a `*` line first sets defaults that later lines refine.
 *
 * Invariants:
 *  - Read once, at start-up, with open/fstat/read into a static buffer of
 *    POLICY_MAX_BYTES (the rest of a longer file is ignored): nothing is allocated, and
 *    start-up runs under the init lock, so the static storage is not shared.
 *  - The file is trusted only if it is a regular file owned by root and writable by
 *    nobody else (mode & 022 == 0); otherwise it is ignored as a whole.
 *  - The executable is named by the kernel (/proc/self/exe), never by argv[0] or
 *    AT_EXECFN, which whoever runs the program chooses. The path it was run by
 *    (AT_EXECFN) is a second name only if the kernel resolves it to the same file
 *    (stat: the st_dev and st_ino of /proc/self/exe), and never for an AT_SECURE
 *    program: an ordinary program's caller gains nothing RAMPART_OPTIONS does not give
 *    it already, and a privileged program cannot be given another rule's options by a
 *    link with that rule's name. The kernel's name is a hard link's own name (the path
 *    execve opened), so an AT_SECURE program's rules name its path exactly, never by
 *    basename or glob, and none applies while the file has more than one link (stat of
 *    /proc/self/exe: st_nlink), which a link made to it where rules' names are free would
 *    raise (with fs.protected_hardlinks=0). Only when /proc is missing (early boot) does
 *    a program that is not AT_SECURE fall back to AT_EXECFN alone; an AT_SECURE one then
 *    matches only `*`.
 *  - Precedence: defaults, then the file, then RAMPART_OPTIONS — except for set-user-ID
 *    and other AT_SECURE programs, which obey the file alone.
 *  - Messages: a bad entry on a line that applies to the program is reported like a bad
 *    RAMPART_OPTIONS entry ("/etc/rampart.conf:3: unknown key ..."); the file's own
 *    problems (ignored as unsafe, too long, unreadable) only under verbose=1, so a
 *    system-wide file never puts a line into every program's stderr.
 */
#ifndef RAMPART_POLICY_H
#define RAMPART_POLICY_H

#include <sys/stat.h>

#include "base/common.h"
#include "front/options.h"

#define POLICY_MAX_BYTES 16384
#define POLICY_MAX_TEXT "16384" /* the same, for messages */

/* The names a rule is matched against. */
struct policy_exe {
	const char *path;           /* the executable, as the kernel names it ("" unknown) */
	const char *run_as;         /* the path it was run by, when that differs from path ("" none) */
	const char *run_as_ignored; /* NULL: run_as is matched too; else why it is not */
	bool secure;                /* AT_SECURE: path matched only by a rule naming it exactly */
	const char *path_ignored;   /* secure: NULL when such a rule applies; else why none does */
};

/* Which name a rule matched. */
enum policy_matched { POLICY_MATCHED_NONE, POLICY_MATCHED_PATH, POLICY_MATCHED_RUN_AS };

struct policy_status {
	enum { POLICY_NO_FILE, POLICY_ABSENT, POLICY_IGNORED, POLICY_READ } file;
	const char *path;  /* the policy file, "" when the build has none */
	const char *why;   /* POLICY_IGNORED: the reason */
	int err;           /* POLICY_ABSENT, POLICY_IGNORED: the errno of the open or fstat that
			    * failed; 0 when the file was opened and found unsafe */
	struct policy_exe exe;        /* POLICY_READ: the names the rules were matched against */
	unsigned line;                /* POLICY_READ: the last line that applied, 0 for none */
	enum policy_matched matched;  /* POLICY_READ: the name that line matched */
	bool truncated;    /* POLICY_READ: longer than POLICY_MAX_BYTES */
	bool secure;       /* AT_SECURE: the environment was not read */
};

/* Does the glob pattern (plen bytes) match all of s? */
bool policy_glob(const char *pattern, size_t plen, const char *s);
/* Does a rule's pattern apply to the program named name ("" when unknown)? */
bool policy_match(const char *pattern, size_t plen, const char *name);
/* Which of the program's names a rule's pattern matches (the executable's path first);
 * for exe->secure, only a pattern of '*' alone or one equal to exe->path (unless
 * exe->path_ignored) matches, and run_as never. */
enum policy_matched policy_match_exe(const char *pattern, size_t plen, const struct policy_exe *exe);
/* The names of an executable: path (its name, "" unknown), run_as (the path it was
 * run by, NULL unknown), and kernel_file, a path the kernel resolves to the executable
 * itself (/proc/self/exe); run_as counts only if stat() finds the same file there, and
 * not when secure; when secure, path counts only if stat() finds one link there. */
void policy_name_exe(struct policy_exe *exe, const char *kernel_file, const char *path, const char *run_as,
		     bool secure);
/* Apply every rule of the policy text (len bytes) that matches exe on top of o; entries
 * are reported as "<path>:<line>: ...". Returns the last line that applied, 0 if none,
 * and in *matched (unless NULL) the name it matched. */
unsigned policy_apply_text(struct options *o, const char *text, size_t len, const struct policy_exe *exe,
			   const char *path, enum policy_matched *matched);
/* NULL when a file with these attributes may be trusted, else why not. */
const char *policy_unsafe(const struct stat *st);
/* Read the policy file at path and apply it for exe (NULL: this process's executable)
 * on top of o; st tells what happened (st->secure must be set). */
void policy_apply_file(struct options *o, const char *path, const struct policy_exe *exe, struct policy_status *st);
/* The process's options: defaults, the policy file, RAMPART_OPTIONS unless AT_SECURE;
 * help=1 prints the list. */
void policy_read(struct options *o, struct policy_status *st);
/* verbose=1: one line on what the policy file did. */
void policy_say(const struct policy_status *st);

#endif
