/*
 * mte_death — under arm64 memory tagging (MTE, RAMPART_OPTIONS=mte=sync, the default
 * where the CPU has it) a stray access to a small block faults at the access itself:
 *
 *   read and write 1 byte past the end of a slot    (the next slot's first byte)
 *   read and write 32 bytes past the end of a slot  (inside the next slot)
 *   read and write 1 byte before a slot's start     (the previous slot's canary)
 *   read and write a block after its free
 *   read through the old pointer once the slot is handed out again
 *
 * Each case runs in a forked child, which writes "before" to a pipe, makes the access,
 * then writes "after" and frees the block. Under synchronous tag checks the case passes
 * only if the child was killed by SIGSEGV with "before" and without "after": the
 * instruction itself faulted, not a later free or check. The blocks are 112-byte slots
 * (one-page slabs) with a slot on each side in the same slab, so that no guard slab or
 * neighbouring slab is in reach: only a tag can make these accesses fault.
 *
 * Without tagging (x86_64, arm64 without MTE, mte=off) the same accesses must complete
 * ("after" written): what rampart finds later (a canary or a freed neighbour at the
 * free, the write-after-free check at reuse) is the x86 behaviour of
 * docs/slab.md, "Which overflows are caught"; the log says how each child ended.
 *
 * In every mode a free through a pointer whose top byte (tag) is not the block's is a
 * fatal invalid free, and the mode rampart_memory_tagging() reports is the thread's.
 */
#include "../harness.h"

#include <malloc.h>
#include <sys/prctl.h>
#include <stdlib.h>

#include "rampart.h"
#include "../site.h"

enum { SIZE = 100, SLOT = 112, N = 64 };

static int out_fd = -1;

static void say(const char *m) { (void)!write(out_fd, m, strlen(m)); }

/* A live 112-byte slot with a slot before and after it on the same page: slabs of this
 * class are one page, so both are its slab's. */
static char *inner_block(void)
{
	static char *v[N];
	long page = sysconf(_SC_PAGESIZE);
	for (int i = 0; i < N; i++) {
		v[i] = site_malloc(SIZE);
		uintptr_t off = ((uintptr_t)v[i] & (((uintptr_t)1 << 56) - 1)) % (uintptr_t)page;
		if (off >= SLOT && off + 2 * SLOT <= (uintptr_t)page) return v[i]; /* the others stay live */
	}
	abort();
}

static void access_at(volatile char *q, bool write)
{
	say("before\n");
	if (write) *q = 'x';
	else (void)*q;
	say("after\n");
}

#define CASE(name, expr, write)                              \
	static void name(void)                               \
	{                                                    \
		char *p = inner_block();                     \
		access_at(expr, write);                      \
		free(p);                                     \
	}
CASE(read_past_end_1, p + SLOT, false)
CASE(write_past_end_1, p + SLOT, true)
CASE(read_past_end_32, p + SLOT + 31, false)
CASE(write_past_end_32, p + SLOT + 31, true)
CASE(read_before_start_1, p - 1, false)
CASE(write_before_start_1, p - 1, true)

static void read_after_free(void)
{
	char *p = inner_block();
	free(p);
	access_at(p + 8, false);
}

static void write_after_free(void)
{
	char *p = inner_block();
	free(p);
	access_at(p + 8, true);
}

/* The slot handed out again (after its wait in the quarantine) to a new owner, then
 * read through the old pointer: the new owner's tag is never the last one's. */
static void read_after_reuse(void)
{
	char *p = inner_block();
	uintptr_t slot = (uintptr_t)p & (((uintptr_t)1 << 56) - 1);
	free(p);
	for (int n = 0; n < 200000; n++) {
		char *q = site_malloc(SIZE);
		if (((uintptr_t)q & (((uintptr_t)1 << 56) - 1)) == slot) {
			access_at(p + 8, false);
			return;
		}
		free(q);
	}
	say("never reused\n");
}

struct access_case {
	const char *name;
	void (*fn)(void);
};

static const struct access_case cases[] = {
	{"read 1 byte past the end", read_past_end_1},
	{"write 1 byte past the end", write_past_end_1},
	{"read 32 bytes past the end", read_past_end_32},
	{"write 32 bytes past the end", write_past_end_32},
	{"read 1 byte before the start", read_before_start_1},
	{"write 1 byte before the start", write_before_start_1},
	{"read after free", read_after_free},
	{"write after free", write_after_free},
	{"read through a stale pointer after reuse", read_after_reuse},
};

/* Run fn in a child; its markers in out, its wait status returned. */
static int run_child(void (*fn)(void), char *out, size_t cap)
{
	int fd[2];
	if (pipe(fd)) abort();
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		out_fd = fd[1];
		quiet_child();
		fn();
		_exit(0);
	}
	close(fd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(fd[0], out + n, cap - 1 - n)) > 0) n += (size_t)r;
	out[n] = 0;
	close(fd[0]);
	int st;
	waitpid(pid, &st, 0);
	return st;
}

static void how(int st, char *buf, size_t cap)
{
	if (WIFSIGNALED(st)) snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else snprintf(buf, cap, "exit %d", WEXITSTATUS(st));
}

static void wrong_tag_free(void)
{
	char *p = inner_block();
	free((void *)((uintptr_t)p ^ (uintptr_t)1 << 56));
}

/* The mode rampart reports is the one the kernel applies to this thread: 0 when they
 * agree, 1 when not. (That a mode the program chose before rampart started is kept
 * cannot be arranged here: in a static program something allocates before main.) */
static int mode_is_the_kernels(const char *mode)
{
	/* PR_GET_TAGGED_ADDR_CTRL; the check mode is bits 1-2: 1 sync, 2 async. */
	long ctrl = prctl(56, 0, 0, 0, 0);
	long tcf = ctrl < 0 ? 0 : ctrl >> 1 & 3;
	if (!strcmp(mode, "sync")) return !(tcf & 1);
	if (!strcmp(mode, "async")) return tcf != 2;
	return 0; /* off: rampart tags nothing, whatever the thread's mode */
}

int main(void)
{
	free(malloc(1)); /* started: the mode is decided */
	const char *mode = rampart_memory_tagging();
	bool sync = !strcmp(mode, "sync"), async = !strcmp(mode, "async");
	printf("memory tagging: %s\n", mode);
	int failed = 0;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		char out[256], st_text[64];
		int st = run_child(cases[c].fn, out, sizeof out);
		how(st, st_text, sizeof st_text);
		bool before = strstr(out, "before") != NULL, after = strstr(out, "after") != NULL;
		bool segv = WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
		bool ok;
		if (sync) ok = before && !after && segv;            /* at the access */
		else if (async) ok = before && segv;                /* at the next kernel entry */
		else ok = before && after;                          /* not at the access: as on x86 */
		printf("%s  %s: %s%s, %s\n", ok ? "ok  " : "FAIL", cases[c].name, before ? "before" : "-",
		       after ? " after" : "", st_text);
		failed += !ok;
	}
	/* A free through another tag: fatal in every mode. */
	{
		char out[256], st_text[64];
		int st = run_child(wrong_tag_free, out, sizeof out);
		how(st, st_text, sizeof st_text);
		bool ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
		printf("%s  free through another tag: %s\n", ok ? "ok  " : "FAIL", st_text);
		failed += !ok;
	}
	int differs = mode_is_the_kernels(mode);
	printf("%s  the mode reported is the kernel's for this thread\n", differs ? "FAIL" : "ok  ");
	failed += differs;
	printf("mte_death: %d failed (memory tagging %s)\n", failed, mode);
	return failed != 0;
}
