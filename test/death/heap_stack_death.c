/*
 * heap_stack_death — a fatal report from code that runs on a stack the program took from
 * the heap (coroutines, ucontext, green threads, user-allocated thread stacks).
 *
 * The report's caller trace reads the stack upwards from the stack pointer within its
 * mapping (the registers the unwind rules say were saved there; a scan where a frame
 * has no rules). When that mapping is one of rampart's own regions, the pages past the
 * stack block can be guards: under guard=madvise they are markers inside the same
 * mapping, and reading one faults. Each case commits a double free of another block
 * while running on such a stack and passes only if the process dies by SIGABRT, with
 * the fatal line, a trace whose first frame lies in the function that committed the bug,
 * and without running the program's own SIGSEGV/SIGBUS handler (installed in half the
 * cases: before the fix it ran, on the stack of the failing code, inside the damaged
 * heap).
 *
 * Stacks: a coroutine (makecontext/swapcontext) on a malloc'ed 16 KiB block (a slab
 * slot) and on a 256 KiB block (a large block between guards), and a thread whose stack
 * is a malloc'ed 256 KiB block (pthread_attr_setstack). Then, so that the page that
 * faults is certainly within the trace's reach whatever rampart's layout, two stacks of
 * the program's own: one right below a guard marker it installed itself (run under
 * both backends; not where the kernel has no markers), one mapped from a file that
 * ends where the stack ends (the next page of the mapping raises SIGBUS).
 *
 * on_error=report must also go on after its report on such a stack: the options are
 * read at the first allocation, so that case re-executes this program with
 * on_error=report appended to the runner's RAMPART_OPTIONS (both guard backends). The
 * re-executed program commits the double free on every stack, with and without the
 * handler, and must return from each and exit 0 after six reports with their traces.
 *
 * musl has the ucontext declarations but not the functions: there the coroutine cases
 * say so and do not run (the thread cases still do).
 */
#include "../harness.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <ucontext.h>
#define HAVE_UCONTEXT 1
#else
#define HAVE_UCONTEXT 0
#endif

#define SMALL_STACK (16u * 1024u)  /* the largest slab class: a slot among others */
#define LARGE_STACK (256u * 1024u) /* a large block, guards on both sides */

static const char handler_ran[] = "heap_stack_death: the program's SIGSEGV/SIGBUS handler ran\n";

/* The bug, in a function of its own so the trace can be checked against its address. */
__attribute__((noinline)) void heap_stack_bad_site(char *p)
{
	free(p);
	free(p);
	__asm__ volatile("" ::: "memory");
}

/* The program's own handler: it must never run. If it does, it says so and exits with
 * a status no case expects. */
static void on_fault(int sig)
{
	(void)sig;
	if (write(STDERR_FILENO, handler_ran, sizeof handler_ran - 1) < 0) {}
	_exit(3);
}

static void install_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fault; /* no SA_ONSTACK: it runs on the failing code's stack */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

static void uninstall_handler(void)
{
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
}

/* --- the stacks ------------------------------------------------------------------- */

static char *victim; /* the block freed twice */

#if HAVE_UCONTEXT
static ucontext_t main_ctx, co_ctx;

static void co_main(void)
{
	heap_stack_bad_site(victim);
	/* on_error=report: back to on_coroutine through uc_link */
}

/* Run the double free on a coroutine whose stack is [stack, stack + size). */
static bool on_coroutine_at(char *stack, size_t size)
{
	victim = malloc(40);
	if (!stack || !victim || getcontext(&co_ctx) != 0) return false;
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = size;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co_main, 0);
	return swapcontext(&main_ctx, &co_ctx) == 0;
}

/* The same on a malloc'ed block of size bytes. */
static bool on_coroutine(size_t size)
{
	char *stack = malloc(size);
	if (!on_coroutine_at(stack, size)) return false;
	free(stack);
	return true;
}
#endif

/* Stacks of the program's own, not from the heap, that end right below a page of the
 * same mapping that faults: whatever the stack is, the trace must not read that page.
 * The page after the stack carries a guard marker (kernels with markers, whatever
 * rampart's backend), or lies past the end of the file the stack is mapped from (a
 * read there raises SIGBUS). */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#define OWN_STACK (64u * 1024u)

#if HAVE_UCONTEXT

static char *stack_below_marker(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, OWN_STACK + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || madvise(m + OWN_STACK, pg, MADV_GUARD_INSTALL) != 0 || probe_read(m + OWN_STACK) != EFAULT)
		return NULL;
	return m;
}

static char *stack_before_eof(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int fd = memfd_create("heap_stack_death", MFD_CLOEXEC);
	if (fd < 0) return NULL;
	char *m = ftruncate(fd, OWN_STACK) == 0
			  ? mmap(NULL, OWN_STACK + pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
			  : MAP_FAILED;
	close(fd);
	return m == MAP_FAILED || probe_read(m + OWN_STACK) != EFAULT ? NULL : m;
}
#endif

static const char *no_markers(void)
{
	return kernel_has_markers() ? NULL : "kernel without guard markers (MADV_GUARD_INSTALL)";
}

/* The thread allocates its victim itself: a block freed by a thread of another arena
 * goes through a free batch, where a second free is fatal even under on_error=report
 * (a matter of the slab allocator, not of the trace tested here). */
static void *thread_main(void *arg)
{
	(void)arg;
	victim = malloc(40);
	if (victim) heap_stack_bad_site(victim);
	return NULL;
}

/* Run the double free on a thread whose stack is a malloc'ed block of size bytes. */
static bool on_thread(size_t size)
{
	char *stack = malloc(size);
	pthread_attr_t a;
	pthread_t t;
	if (!stack || pthread_attr_init(&a) != 0) return false;
	bool ok = pthread_attr_setstack(&a, stack, size) == 0 && pthread_create(&t, &a, thread_main, NULL) == 0 &&
		  pthread_join(t, NULL) == 0;
	pthread_attr_destroy(&a);
	if (ok) free(stack);
	return ok;
}

/* --- checking a child's stderr ---------------------------------------------------- */

/* Where heap_stack_bad_site lies, as the trace names it: module path, offset range. */
static char exe[512];
static uintptr_t site_lo, site_hi;

static bool locate_site(void)
{
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = 0;
	/* A program linked at a fixed address (ET_EXEC: static or non-PIE) is named by
	 * absolute addresses; static builds may also lack dladdr. */
	unsigned char ehdr[18] = {0};
	int efd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (efd >= 0) {
		if (read(efd, ehdr, sizeof ehdr) != (ssize_t)sizeof ehdr) ehdr[0] = 0;
		close(efd);
	}
	bool fixed = ehdr[0] == 0x7f && ehdr[16] == 2 && ehdr[17] == 0;
	Dl_info info;
	if (el <= 0 || (!fixed && dladdr((void *)heap_stack_bad_site, &info) == 0)) return false;
	site_lo = (uintptr_t)heap_stack_bad_site - (fixed ? 0 : (uintptr_t)info.dli_fbase);
	site_hi = site_lo + 256;
	return true;
}

/* In text (a child's stderr): how many traces, and how many of them start at a frame
 * inside heap_stack_bad_site; false if a frame line is malformed or a trace is empty. */
static bool count_traces(const char *text, int *traces, int *naming_site)
{
	*traces = *naming_site = 0;
	int frames = 0;
	bool well_formed = true;
	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (strncmp(line, "rampart: callers (", 18) == 0) {
			if (*traces && !frames) well_formed = false;
			++*traces;
			frames = 0;
			continue;
		}
		if (strncmp(line, "rampart:   #", 12) != 0) continue;
		char module[512];
		unsigned long off;
		int idx;
		if (!*traces || sscanf(line, "rampart:   #%d %511[^+]+0x%lx", &idx, module, &off) != 3 || idx != frames) {
			well_formed = false;
			continue;
		}
		frames++;
		if (idx == 0 && strcmp(module, exe) == 0 && off >= site_lo && off < site_hi) ++*naming_site;
	}
	return well_formed && (!*traces || frames);
}

/* Run fn in a forked child (stderr captured, exec'ed with args if argv is set);
 * returns its wait status, its stderr in err. */
static int run_child(void (*fn)(void), char *const argv[], char *err, size_t cap)
{
	int pfd[2];
	if (pipe(pfd)) return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) return -1;
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[1]);
		quiet_child();
		alarm(30); /* a hang ends as SIGALRM, which no case expects */
		if (argv) {
			execv("/proc/self/exe", argv);
			_exit(127);
		}
		fn();
		_exit(0);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(pfd[0], err + len, cap - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR) continue;
			break;
		}
		len += (size_t)n;
		if (len == cap - 1) { /* keep draining so the child never blocks */
			char sink[512];
			while ((n = read(pfd[0], sink, sizeof sink)) > 0 || (n < 0 && errno == EINTR)) {}
			break;
		}
	}
	err[len] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return st;
}

/* --- the fatal cases -------------------------------------------------------------- */

#if HAVE_UCONTEXT
static void co_small(void) { on_coroutine(SMALL_STACK); }
static void co_small_handler(void) { install_handler(), on_coroutine(SMALL_STACK); }
static void co_large(void) { on_coroutine(LARGE_STACK); }
static void co_large_handler(void) { install_handler(), on_coroutine(LARGE_STACK); }
static void co_own(char *stack)
{
	install_handler();
	if (!on_coroutine_at(stack, OWN_STACK)) fprintf(stderr, "heap_stack_death: the stack could not be set up\n");
}
static void co_below_marker(void) { co_own(stack_below_marker()); }
static void co_before_eof(void) { co_own(stack_before_eof()); }
#endif
static void thread_large(void) { on_thread(LARGE_STACK); }
static void thread_large_handler(void) { install_handler(), on_thread(LARGE_STACK); }

struct fatal_case {
	const char *name;
	void (*fn)(void);		/* NULL: this C library has no makecontext */
	const char *(*unavailable)(void); /* why it cannot run here; NULL: always runs */
};

#if HAVE_UCONTEXT
#define CO(fn) fn
#else
#define CO(fn) NULL
#endif

static const struct fatal_case fatal_cases[] = {
	{"coroutine on a malloc'ed 16 KiB stack", CO(co_small), NULL},
	{"coroutine on a malloc'ed 16 KiB stack, SIGSEGV handler installed", CO(co_small_handler), NULL},
	{"coroutine on a malloc'ed 256 KiB stack", CO(co_large), NULL},
	{"coroutine on a malloc'ed 256 KiB stack, SIGSEGV handler installed", CO(co_large_handler), NULL},
	{"thread on a malloc'ed 256 KiB stack", thread_large, NULL},
	{"thread on a malloc'ed 256 KiB stack, SIGSEGV handler installed", thread_large_handler, NULL},
	{"coroutine on a stack below the program's own guard marker, SIGSEGV handler installed",
	 CO(co_below_marker), no_markers},
	{"coroutine on a stack mapped from a file that ends with it, SIGBUS handler installed", CO(co_before_eof),
	 NULL},
};

static bool check_fatal(const struct fatal_case *c)
{
	if (!c->fn) {
		printf("n/a   %s: this C library has no makecontext/swapcontext\n", c->name);
		return true;
	}
	const char *why = c->unavailable ? c->unavailable() : NULL;
	if (why) {
		printf("n/a   %s: %s\n", c->name, why);
		return true;
	}
	static char err[16384];
	int st = run_child(c->fn, NULL, err, sizeof err);
	int traces, naming;
	bool formed = count_traces(err, &traces, &naming);
	bool abrt = st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
	/* The first line names a double free: "slot was already freed (double free?)", or
	 * without the slot quarantine (slot_quarantine_bytes=0, profile light) "slot is
	 * not allocated (double free or invalid pointer)" or "use of a pointer into a
	 * freed slab (double free?)". */
	size_t first = strcspn(err, "\n");
	char *named = strstr(err, "double free");
	bool line = strncmp(err, "rampart: fatal: ", 16) == 0 && named && named < err + first;
	bool handler = strstr(err, handler_ran) != NULL;
	bool ok = abrt && line && !handler && formed && traces == 1 && naming == 1;
	char got[64];
	if (st == -1) snprintf(got, sizeof got, "no child");
	else if (WIFSIGNALED(st)) snprintf(got, sizeof got, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else snprintf(got, sizeof got, "exit %d", WEXITSTATUS(st));
	printf("%s  %s: expected SIGABRT, the fatal line, a trace naming heap_stack_bad_site and no handler; "
	       "got %s, %s, %d trace(s), %d naming it%s\n",
	       ok ? "ok  " : "FAIL", c->name, got, line ? "the fatal line" : "no fatal line", traces, naming,
	       handler ? ", the handler ran" : "");
	if (!ok) printf("      child stderr:\n%s", err);
	return ok;
}

/* --- on_error=report: the re-executed program ------------------------------------- */

/* Double frees committed by report_main: on each stack, without and with the handler. */
#define REPORTS (HAVE_UCONTEXT ? 6 : 2)

static int report_main(void)
{
	int done = 0;
	for (int handler = 0; handler < 2; handler++) {
		if (handler) install_handler();
#if HAVE_UCONTEXT
		done += on_coroutine(SMALL_STACK);
		done += on_coroutine(LARGE_STACK);
#endif
		done += on_thread(LARGE_STACK);
		if (handler) uninstall_handler();
	}
	/* Went on: the heap still serves. */
	char *p = malloc(100);
	memset(p, 1, 100);
	free(p);
	fprintf(stderr, "heap_stack_death: went on after %d double frees on heap stacks\n", done);
	return done == REPORTS ? 0 : 1;
}

static bool check_report(void)
{
	const char *name = "on_error=report on heap stacks (coroutines 16 KiB and 256 KiB, a thread), "
			   "with and without a SIGSEGV handler";
	const char *base = getenv("RAMPART_OPTIONS");
	static char opts[512];
	snprintf(opts, sizeof opts, "%s%son_error=report", base ? base : "", base && *base ? "," : "");
	setenv("RAMPART_OPTIONS", opts, 1);
	char *argv[] = {"heap_stack_death", "report", NULL};
	static char err[65536];
	int st = run_child(NULL, argv, err, sizeof err);
	if (base) setenv("RAMPART_OPTIONS", base, 1);
	else unsetenv("RAMPART_OPTIONS");

	/* The report lines: "rampart: error: <a double free, as in check_fatal> at 0x...;
	 * the call was ignored (on_error=report)". */
	int reports = 0;
	for (const char *s = err; (s = strstr(s, "rampart: error: ")) != NULL; s++) {
		char line[320];
		size_t len = strcspn(s, "\n");
		snprintf(line, sizeof line, "%.*s", (int)len, s);
		reports += strstr(line, "double free") && strstr(line, "; the call was ignored (on_error=report)");
	}
	int traces, naming;
	bool formed = count_traces(err, &traces, &naming);
	bool exited = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	char said[96];
	snprintf(said, sizeof said, "heap_stack_death: went on after %d double frees on heap stacks\n", REPORTS);
	bool went_on = strstr(err, said) != NULL;
	bool fatal = strstr(err, "rampart: fatal:") != NULL, handler = strstr(err, handler_ran) != NULL;
	bool ok = exited && went_on && !fatal && !handler && formed && reports == REPORTS && traces == REPORTS &&
		  naming == REPORTS;
	char got[64];
	if (st == -1) snprintf(got, sizeof got, "no child");
	else if (WIFSIGNALED(st)) snprintf(got, sizeof got, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else snprintf(got, sizeof got, "exit %d", WEXITSTATUS(st));
	printf("%s  %s: expected exit 0 after %d reports, as many traces naming heap_stack_bad_site, no handler; "
	       "got %s, %d report(s), %d trace(s), %d naming it%s%s\n",
	       ok ? "ok  " : "FAIL", name, REPORTS, got, reports, traces, naming, fatal ? ", a fatal line" : "",
	       handler ? ", the handler ran" : "");
	if (!ok) printf("      child stderr:\n%s", err);
	return ok;
}

int main(int argc, char **argv)
{
	if (!locate_site()) test_skip("cannot tell where heap_stack_bad_site lies (no /proc/self/exe or dladdr)");
	if (argc > 1 && strcmp(argv[1], "report") == 0) return report_main();
	size_t n = sizeof fatal_cases / sizeof *fatal_cases, failed = 0;
	for (size_t i = 0; i < n; i++) failed += !check_fatal(&fatal_cases[i]);
	failed += !check_report();
	printf("%zu cases, %zu failed\n", n + 1, failed);
	return failed ? 1 : 0;
}
