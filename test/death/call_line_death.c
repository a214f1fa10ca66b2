/*
 * call_line_death — the callers list names the program's own calls, and addr2line their
 * lines: a double free in a function of this program must list, first, that function's
 * call of free, then its caller's call of it, each as the address of the call, so that
 * addr2line -e gives the line of the call. (Both calls are the last statements of
 * their functions: the return address lies on the next line, the closing brace's.)
 * No frame of the list may be rampart's own. From the main thread, the C library's frame
 * of __libc_start_main carries that name and its offset, where the C library is a shared
 * object (callers_libc_names says why not elsewhere).
 *
 * Built -O2 -fno-optimize-sibling-calls (test.mk, check.mk): an optimised build whose
 * calls stay calls (with sibling calls a free at the end of a function is a jump, and
 * that function has no frame to list). From the main thread and from another thread;
 * linked with librampart.a (call_line_death), with librampart.so (call_line_death_so),
 * and statically for check-musl and check-arm64.
 */
#include "../harness.h"
#include "../callers.h"

#include <pthread.h>
#include <stdlib.h>

/* The bug and its caller. FREE_LINE and CALL_LINE are the lines of the calls they
 * name: keep them so. */
enum { FREE_LINE = __LINE__ + 4 };
__attribute__((noinline)) void call_line_bad_site(char *p)
{
	free(p);
	free(p);
}

enum { CALL_LINE = __LINE__ + 3 };
__attribute__((noinline)) void call_line_caller(char *p)
{
	call_line_bad_site(p);
}

static void *thread_main(void *arg)
{
	call_line_caller(arg);
	return NULL;
}

/* Runs in the child. */
static void commit(int threaded)
{
	char *p = malloc(40);
	pthread_t t;
	if (!threaded) call_line_caller(p);
	else if (pthread_create(&t, NULL, thread_main, p) == 0) pthread_join(t, NULL);
}

/* Frame f must be fn's call at line, in this program's file. */
static bool frame_is(const struct callers_frame *f, const char *exe, const char *fn, int line)
{
	char got_fn[256], file[256];
	int got_line;
	bool missing;
	if (!callers_where(f->module, f->off, got_fn, sizeof got_fn, file, sizeof file, &got_line, &missing)) {
		if (missing) test_skip("addr2line (binutils) is not installed: test/deps.sh installs it");
		printf("      addr2line knows nothing of %s+0x%lx\n", f->module, f->off);
		return false;
	}
	bool ok = !strcmp(f->module, exe) && !f->scanned && !strcmp(got_fn, fn) && !strcmp(file, "call_line_death.c") &&
		  got_line == line;
	if (!ok)
		printf("      %s+0x%lx%s is %s at %s:%d; expected %s at call_line_death.c:%d\n", f->module, f->off,
		       f->scanned ? " [scanned]" : "", got_fn, file, got_line, fn, line);
	return ok;
}

static int check(int threaded)
{
	const char *name = threaded ? "double free in a thread" : "double free in main";
	static char out[16384];
	char exe[512];
	struct callers_frame f[16];
	bool ok = callers_exe(exe, sizeof exe);
	int st = callers_child(commit, threaded, out, sizeof out);
	int n = callers_parse(out, f, 16), own = 0;
	for (int i = 0; i < n && i < 16; i++) own += callers_own(&f[i], exe, callers_bias());
	/* (Without the slot quarantine, profile=light, the freed slot's slab may be closed
	 * already: the second free is then a use of the freed slab.) */
	ok = ok && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
		  (strstr(out, "rampart: fatal: slot was already freed") ||
		   strstr(out, "rampart: fatal: use of a pointer into a freed slab")) &&
		  n >= 2 && n <= 16 && !own;
	ok = n >= 1 && frame_is(&f[0], exe, "call_line_bad_site", FREE_LINE) && ok;
	ok = n >= 2 && frame_is(&f[1], exe, "call_line_caller", CALL_LINE) && ok;
	/* A thread starts in glibc's start_thread, which is static: no name. */
	const char *why = NULL;
	int named = -1;
	if (threaded) {
		why = "a thread's first frames are the C library's own, not exported (glibc's start_thread)";
	} else if (callers_libc_names(&why)) {
		named = callers_named(f, n < 16 ? n : 16, "__libc_start_main");
		ok = named >= 0 && ok;
	}
	printf("%s  %s: %d frames, #0 the second free's line (%d), #1 its caller's (%d), %d of rampart's; ",
	       ok ? "ok  " : "FAIL", name, n, FREE_LINE, CALL_LINE, own);
	if (named >= 0) printf("#%d named (__libc_start_main+0x%lx)\n", named, f[named].symbol_off);
	else if (why) printf("no name asked for: %s\n", why);
	else printf("no frame named __libc_start_main at its address\n");
	if (!ok) printf("      child stderr:\n%s", out);
	return !ok;
}

int main(void)
{
	int failed = check(0) + check(1);
	printf("2 cases, %d failed\n", failed);
	return failed;
}
