/* test_report.c — the report module (Check): every kind and every operation has its
 * words, the on_error decisions follow the options and not the wording, the text
 * writer keeps strings terminated and cut where they must be, and error numbers are
 * written by name and text without strerror. */
#define _GNU_SOURCE
#include <check.h>

#include "../check_main.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/report.h"
#include "base/roots.h"
#include "base/text.h"

#define SENTINEL 2718

/* stderr of fn(arg), captured through a pipe into buf. */
static void capture(void (*fn)(int), int arg, char *buf, size_t size)
{
	int fds[2], saved = dup(STDERR_FILENO);
	ck_assert(saved >= 0 && pipe(fds) == 0);
	dup2(fds[1], STDERR_FILENO);
	close(fds[1]);
	fn(arg);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ssize_t n = read(fds[0], buf, size - 1);
	buf[n > 0 ? n : 0] = 0;
	close(fds[0]);
}

static void fatal_line_of(int kind) { report_fatal_line(OP_FREE, (enum report_kind)kind, (void *)0x1234); }

/* Each kind but ERR_KERNEL (report_kernel's) says something of its own, on one line. */
START_TEST(test_every_kind_has_words)
{
	static char seen[ERR_COUNT][256];
	for (int k = 0; k < ERR_KERNEL; k++) {
		errno = SENTINEL;
		capture(fatal_line_of, k, seen[k], sizeof seen[k]);
		ck_assert_int_eq(errno, SENTINEL);
		ck_assert_msg(strncmp(seen[k], "rampart: fatal: ", 16) == 0 && strlen(seen[k]) > 16 + 10 + 8,
			      "kind %d: '%s'", k, seen[k]);
		ck_assert_msg(strstr(seen[k], " at 0x1234\n") && strchr(seen[k], '\n')[1] == 0, "kind %d: '%s'", k,
			      seen[k]);
		for (int j = 0; j < k; j++) ck_assert_msg(strcmp(seen[j], seen[k]), "kinds %d and %d: '%s'", j, k, seen[k]);
	}
}
END_TEST

static void not_live_of(int op) { report_fatal_line((enum report_op)op, ERR_NOT_LIVE, NULL); }

/* Each operation has a name, and the kinds that start with it use it. */
START_TEST(test_every_op_has_a_name)
{
	char out[256];
	capture(not_live_of, OP_FREE, out, sizeof out);
	ck_assert_str_eq(out, "rampart: fatal: free of a pointer that is not a live allocation at 0x0\n");
	capture(not_live_of, OP_USABLE_SIZE, out, sizeof out);
	ck_assert_str_eq(out, "rampart: fatal: malloc_usable_size of a pointer that is not a live allocation at 0x0\n");
	for (int op = 0; op < OP_COUNT; op++) {
		capture(not_live_of, op, out, sizeof out);
		ck_assert_msg(strncmp(out, "rampart: fatal: ", 16) == 0 && out[16] != ' ' && !strstr(out, "(null)"),
			      "op %d: '%s'", op, out);
	}
}
END_TEST

static void go_on_of(int kind) { ck_assert(report_go_on(OP_FREE, (enum report_kind)kind, (void *)0x10)); }
static enum report_op mismatch_op;
static void mismatch_go_on_of(int kind) { ck_assert(report_go_on(mismatch_op, (enum report_kind)kind, (void *)0x10)); }
static void mismatch_line_of(int op) { report_fatal_line((enum report_op)op, ERR_ALLOCATED_BY_NEW, (void *)0x20); }

/* Only a free goes on (or a realloc or delete of a block allocated otherwise), only
 * where the options say so, and only after an error that leaves nothing changed; the
 * words of the report come from the kind. */
START_TEST(test_go_on)
{
	roots.opt.on_error = ON_ERROR_ABORT;
	roots.opt.sized_free = true;
	for (int k = 0; k < ERR_COUNT; k++) ck_assert(!report_go_on(OP_FREE, (enum report_kind)k, NULL));
	roots.opt.sized_free = false; /* a wrong size alone is forgiven, silently */
	for (int k = 0; k < ERR_COUNT; k++) ck_assert(report_go_on(OP_FREE, (enum report_kind)k, NULL) == (k == ERR_WRONG_SIZE));
	roots.opt.sized_free = true;
	roots.opt.on_error = ON_ERROR_REPORT;
	static const enum report_kind ignored[] = {ERR_NOT_LIVE,   ERR_NOT_SLOT_START, ERR_SLOT_NOT_ALLOCATED,
						   ERR_FREED_SLAB, ERR_SLOT_FREED,     ERR_DOUBLE_FREE};
	char out[4096];
	for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++) {
		capture(go_on_of, (int)ignored[i], out, sizeof out);
		ck_assert_msg(strncmp(out, "rampart: error: ", 16) == 0 &&
				      strstr(out, " at 0x10; the call was ignored (on_error=report)\n"),
			      "'%s'", out);
	}
	capture(go_on_of, ERR_WRONG_SIZE, out, sizeof out);
	ck_assert_msg(strstr(out, "rampart: error: sized free with a wrong size or alignment at 0x10; freed as by free() "
				  "(on_error=report)\n"),
		      "'%s'", out);
	/* A block freed otherwise than it was allocated: any call that frees or moves it
	 * goes on, done as it asks; no other. */
	static const enum report_kind mismatched[] = {ERR_ALLOCATED_BY_MALLOC, ERR_ALLOCATED_BY_NEW,
						      ERR_ALLOCATED_BY_NEW_ARRAY};
	static const enum report_op freeing[] = {OP_FREE, OP_DELETE, OP_DELETE_ARRAY, OP_REALLOC};
	for (size_t i = 0; i < sizeof mismatched / sizeof *mismatched; i++) {
		for (size_t j = 0; j < sizeof freeing / sizeof *freeing; j++) {
			mismatch_op = freeing[j];
			capture(mismatch_go_on_of, (int)mismatched[i], out, sizeof out);
			ck_assert_msg(strncmp(out, "rampart: error: ", 16) == 0 &&
					      strstr(out, " (allocation and deallocation do not match) at 0x10; done as the "
							  "call asks (on_error=report)\n"),
				      "'%s'", out);
		}
		ck_assert(!report_go_on(OP_ALLOC, mismatched[i], NULL));
		ck_assert(!report_go_on(OP_NEW, mismatched[i], NULL));
		ck_assert(!report_go_on(OP_USABLE_SIZE, mismatched[i], NULL));
	}
	capture(mismatch_line_of, OP_DELETE_ARRAY, out, sizeof out);
	ck_assert_str_eq(out, "rampart: fatal: operator delete[] of a block allocated by operator new (allocation and "
			      "deallocation do not match) at 0x20\n");
	capture(mismatch_line_of, OP_REALLOC, out, sizeof out);
	ck_assert_str_eq(out, "rampart: fatal: realloc of a block allocated by operator new (allocation and "
			      "deallocation do not match) at 0x20\n");
	/* Damage, and every operation but a free, never go on. */
	static const enum report_kind never[] = {ERR_CANARY, ERR_WRITE_AFTER_FREE, ERR_FREED_NEIGHBOUR, ERR_USE_AFTER_FREE,
						 ERR_NEVER_HANDED_OUT, ERR_KERNEL};
	for (size_t i = 0; i < sizeof never / sizeof *never; i++) ck_assert(!report_go_on(OP_FREE, never[i], NULL));
	for (int op = 0; op < OP_COUNT; op++)
		if (op != OP_FREE) ck_assert(!report_go_on((enum report_op)op, ERR_NOT_LIVE, NULL));
	roots.opt.on_error = ON_ERROR_ABORT;
}
END_TEST

START_TEST(test_string_writer)
{
	char small[8];
	struct out o = out_string(small, sizeof small);
	ck_assert_str_eq(small, "");
	out_str(&o, "ab");
	out_num(&o, 305);
	ck_assert_str_eq(small, "ab305");
	out_hex(&o, 0xabc); /* cut: seven characters and the terminator */
	ck_assert_str_eq(small, "ab3050x");
	char big[64];
	o = out_string(big, sizeof big);
	out_mem(&o, "abcdef", 3);
	out_fixed(&o, 12345, 2);
	out_str(&o, " ");
	out_hex(&o, 0);
	ck_assert_str_eq(big, "abc123.45 0x0");
}
END_TEST

static void kernel_error_of(int err) { report_kernel(OP_MPROTECT, err, (void *)0x2000); }

/* An error number is written as its name and the C library's own text for it (in the C
 * locale, which the test runs in), from rampart's table: every entry says what
 * strerrorname_np and strerror say, the numbers rampart's calls can meet are there, and
 * one it lacks is "errno N". errno is left alone. */
START_TEST(test_errno_text)
{
	int known = 0;
	for (int e = 0; e < 200; e++) {
		char got[160], want[160];
		struct out o = out_string(got, sizeof got);
		errno = SENTINEL;
		report_put_errno(&o, e);
		ck_assert_int_eq(errno, SENTINEL);
		if (strncmp(got, "errno ", 6) == 0) {
			snprintf(want, sizeof want, "errno %d", e);
			ck_assert_str_eq(got, want);
			continue;
		}
		const char *name = strerrorname_np(e);
		ck_assert_msg(name != NULL, "%d has a text, but no name in the C library: '%s'", e, got);
		snprintf(want, sizeof want, "%s (%s)", name, strerror(e));
		ck_assert_str_eq(got, want);
		known++;
	}
	static const int needed[] = {EPERM, ENOENT, EINTR, EIO, ENXIO, EBADF, EAGAIN, ENOMEM, EACCES, EFAULT,
				     EEXIST, ENOTDIR, EISDIR, EINVAL, ENFILE, EMFILE, EFBIG, ENOSPC, EROFS,
				     ENAMETOOLONG, ENOSYS, ELOOP, EDQUOT};
	for (size_t i = 0; i < sizeof needed / sizeof *needed; i++) {
		char got[160];
		struct out o = out_string(got, sizeof got);
		report_put_errno(&o, needed[i]);
		ck_assert_msg(strncmp(got, "errno ", 6) != 0, "%s is not in the table", strerrorname_np(needed[i]));
	}
	ck_assert_int_ge(known, (int)(sizeof needed / sizeof *needed));
	/* report_kernel's line gives it the same way (the abort caught in a child). */
	int fds[2];
	ck_assert(pipe(fds) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		kernel_error_of(EINVAL);
	}
	close(fds[1]);
	char out[4096];
	ssize_t n = 0, r;
	while ((r = read(fds[0], out + n, sizeof out - 1 - (size_t)n)) > 0) n += r;
	out[n] = 0;
	close(fds[0]);
	int st;
	waitpid(pid, &st, 0);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	static const char line[] = "rampart: fatal: unexpected error EINVAL (Invalid argument) from mprotect at 0x2000\n";
	ck_assert_msg(strncmp(out, line, sizeof line - 1) == 0, "'%s'", out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report");
	TCase *t = tcase_create("report");
	tcase_add_test(t, test_every_kind_has_words);
	tcase_add_test(t, test_every_op_has_a_name);
	tcase_add_test(t, test_go_on);
	tcase_add_test(t, test_string_writer);
	tcase_add_test(t, test_errno_text);
	suite_add_tcase(s, t);
	return run_suite(s);
}
