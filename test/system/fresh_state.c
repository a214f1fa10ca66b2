/* fresh_state.c — every block rampart hands out behaves like fresh anonymous memory,
 * whatever an earlier owner of its pages did to them (issue 34, item 1).
 *
 * Programs change the kernel state of memory they got from malloc and free it without
 * restoring it (glibc unmaps such a chunk, so nothing carries over): a JIT makes a block
 * executable, a coroutine library closes the lowest page of a stack, an RDMA buffer is
 * MADV_DONTFORK, a DRBG buffer MADV_WIPEONFORK, a key buffer mlocked, MADV_DONTDUMP,
 * MADV_NOHUGEPAGE. For each such change, blocks of one size are allocated, checked,
 * changed and freed in a loop long enough for their addresses to come back (through
 * the quarantine and the reuse cache, or at once in the light variant); every block is
 * checked before the change:
 *  - its mapping is rw-p, and none of the flags locked, dontcopy, wipeonfork, dontdump,
 *    nohugepage is set (/proc/self/smaps VmFlags);
 *  - every page takes a write;
 *  - a fork child sees the parent's contents;
 * and a freed block, while it waits closed, is closed in a fork child as well (mapped,
 * unreachable). The fork checks run on every block at an address used before and on
 * every FORK_EVERY-th other one.
 * The loop must see addresses come back, or it proves nothing. Also: a locked block
 * freed without munlock must not switch the madvise backend off (item 3: only
 * mlockall(MCL_FUTURE) does), and a small block locked and freed neither.
 * Black-box: also built against the light variant (test/light/fresh_state.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "../harness.h"

#define ROUNDS 400
#define SEEN_MAX ROUNDS
/* Frees of bigger blocks after each round's, untouched and unchecked: they move the region
 * quarantine (1,024 frees and more) on, so that the checked blocks' addresses come back
 * within ROUNDS without a fork for every free. Too big to be served from the checked
 * blocks' regions, which stay for the checked blocks. */
#define FILL 4
#define FORK_EVERY 8

static size_t page;

static bool has_flag(const char *flags, const char *two)
{
	for (const char *s = flags; (s = strstr(s, two)); s += 2)
		if ((s == flags || s[-1] == ' ') && (s[2] == ' ' || s[2] == '\n' || !s[2])) return true;
	return false;
}

/* Every mapping that [p, p + len) meets, from /proc/self/smaps: is it read-write,
 * private, and free of the flags a program may have set? Prints the first that is not;
 * false also when part of the range is in no mapping. */
static bool mappings_fresh(const char *what, const unsigned char *p, size_t len)
{
	static const char *const bad[][2] = {{"lo", "locked"},     {"dc", "MADV_DONTFORK"},
					     {"wf", "MADV_WIPEONFORK"}, {"dd", "MADV_DONTDUMP"},
					     {"nh", "MADV_NOHUGEPAGE"}, {"ex", "executable"}};
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f) {
		perror("/proc/self/smaps");
		return false;
	}
	char line[512];
	bool in = false, ok = true;
	uintptr_t lo_want = (uintptr_t)p, hi_want = lo_want + len, covered = lo_want;
	unsigned long lo = 0, hi = 0;
	while (ok && fgets(line, sizeof line, f)) {
		char perms[8];
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx %7s ", &a, &b, perms) == 3 && strchr(line, '-') < strchr(line, ' ')) {
			lo = a, hi = b;
			in = lo < hi_want && lo_want < hi;
			if (!in) continue;
			if (lo > covered) break; /* a hole */
			covered = hi;
			if (strncmp(perms, "rw-p", 4)) {
				printf("FAIL %s: %lx-%lx of block %p is %s, not rw-p\n", what, lo, hi, (void *)p, perms);
				ok = false;
			}
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
				if (has_flag(line + 8, bad[i][0])) {
					printf("FAIL %s: %lx-%lx of block %p is %s (VmFlags:%s", what, lo, hi, (void *)p,
					       bad[i][1], line + 8);
					ok = false;
					break;
				}
		}
	}
	fclose(f);
	if (ok && covered < hi_want) {
		printf("FAIL %s: %lx of block %p is in no mapping\n", what, (unsigned long)covered, (void *)p);
		ok = false;
	}
	return ok;
}

/* Does the block [p, p + len) look like fresh anonymous memory? Prints why not. With
 * forking, a fork child must also see its contents. */
static bool fresh(const char *what, unsigned char *p, size_t len, bool forking)
{
	if (!mappings_fresh(what, p, len)) return false;
	for (size_t off = 0; off < len; off += page)
		if (probe_write(p + off)) {
			printf("FAIL %s: page %zu of %p refuses a write\n", what, off / page, (void *)p);
			return false;
		}
	memset(p, 0x5a, len);
	if (!forking) return true;
	/* A fork child must see the contents (MADV_DONTFORK: it faults; WIPEONFORK: zeros). */
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return false;
	}
	if (pid == 0) {
		for (size_t i = 0; i < len; i += 64)
			if (p[i] != 0x5a) _exit(2);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid) return false;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL %s: a fork child %s the block %p\n", what,
		       WIFSIGNALED(st) ? "faulted reading" : "saw other contents in", (void *)p);
		return false;
	}
	return true;
}

/* In a fork child: is p mapped, and does every access to it fault? */
static bool closed_in_child(const void *p)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) return false;
	if (pid == 0) {
		unsigned char v;
		bool mapped = mincore((void *)((uintptr_t)p & ~(page - 1)), page, &v) == 0;
		_exit(mapped && inaccessible(p) ? 0 : 1);
	}
	int st;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

struct change {
	const char *name;
	int (*apply)(unsigned char *p, size_t len); /* 0, or an errno: the change is not possible here */
};

static int rx(unsigned char *p, size_t len) { return mprotect(p, len, PROT_READ | PROT_EXEC) ? errno : 0; }
static int rwx(unsigned char *p, size_t len)
{
	return mprotect(p, len, PROT_READ | PROT_WRITE | PROT_EXEC) ? errno : 0;
}
static int low_page_closed(unsigned char *p, size_t len)
{
	(void)len;
	return mprotect(p, page, PROT_NONE) ? errno : 0;
}
static int dontfork(unsigned char *p, size_t len) { return madvise(p, len, MADV_DONTFORK) ? errno : 0; }
static int wipeonfork(unsigned char *p, size_t len) { return madvise(p, len, MADV_WIPEONFORK) ? errno : 0; }
static int locked(unsigned char *p, size_t len) { return mlock(p, len) ? errno : 0; }
static int dontdump(unsigned char *p, size_t len) { return madvise(p, len, MADV_DONTDUMP) ? errno : 0; }
static int nohuge(unsigned char *p, size_t len) { return madvise(p, len, MADV_NOHUGEPAGE) ? errno : 0; }

static const struct change changes[] = {
	{"mprotect(PROT_READ|PROT_EXEC)", rx},
	{"mprotect(PROT_READ|PROT_WRITE|PROT_EXEC)", rwx},
	{"mprotect(lowest page, PROT_NONE)", low_page_closed},
	{"MADV_DONTFORK", dontfork},
	{"MADV_WIPEONFORK", wipeonfork},
	{"mlock", locked},
	{"MADV_DONTDUMP", dontdump},
	{"MADV_NOHUGEPAGE", nohuge},
};

/* One change, ROUNDS blocks of len bytes (page-aligned: what a program mprotects). */
static bool run_change(const struct change *c, size_t len)
{
	static uintptr_t seen[SEEN_MAX];
	size_t nseen = 0, reused = 0;
	char what[128];
	for (int round = 0; round < ROUNDS; round++) {
		unsigned char *p = NULL;
		int err = posix_memalign((void **)&p, page, len);
		if (err) {
			printf("FAIL %s: posix_memalign(%zu) gave %d\n", c->name, len, err);
			return false;
		}
		bool again = false;
		for (size_t i = 0; i < nseen; i++)
			if (seen[i] == (uintptr_t)p) {
				again = true;
				reused++;
				break;
			}
		if (nseen < SEEN_MAX) seen[nseen++] = (uintptr_t)p;
		/* The fork checks run on every block at an address used before, which is what
		 * the test is about, and on every FORK_EVERY-th other one. Not on all: under the
		 * madvise backend a fork copies the guard markers of every closed region in the
		 * quarantine, and 2 forks a round made this the slowest test of the suite. */
		bool forking = again || round % FORK_EVERY == 0;
		snprintf(what, sizeof what, "after %s, round %d", c->name, round);
		if (!fresh(what, p, len, forking)) return false;
		err = c->apply(p, len);
		if (err) {
			printf("not run: %s (%s)\n", c->name, strerror(err));
			free(p);
			return true;
		}
		free(p); /* the state stays: what the test is about */
		/* While it waits closed, a fork child sees the freed block closed too: mapped
		 * (a MADV_DONTFORK span would be a hole there, for the child's own mappings to
		 * land in) and unreachable (a MADV_WIPEONFORK span would lose its markers). */
		if (forking && !closed_in_child(p)) {
			printf("FAIL %s: the freed block %p is reachable or unmapped in a fork child\n", what, (void *)p);
			return false;
		}
		for (int i = 0; i < FILL; i++) free(malloc(2 * len));
	}
	printf("%s, %zu KiB blocks: %d blocks fresh, %zu of them at an address used before\n", c->name, len >> 10,
	       ROUNDS, reused);
	if (!reused) {
		printf("FAIL %s: no address came back; the test proves nothing\n", c->name);
		return false;
	}
	return true;
}

int main(void)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	free(malloc(1)); /* start rampart */
	const char *backend = rampart_guard_backend();
	printf("guard backend: %s\n", backend);
	bool ok = true;
	for (size_t i = 0; i < sizeof changes / sizeof changes[0] && ok; i++) ok = run_change(&changes[i], 256 << 10);
	/* A small block's page locked and freed without munlock: the lock stays with the
	 * slab (as with glibc's heap), but it must not switch the backend off either. */
	for (int i = 0; i < 64 && ok; i++) {
		void *s = NULL;
		if (posix_memalign(&s, page, page)) return 1;
		if (mlock(s, page) == 0) memset(s, 1, page);
		free(s);
	}
	struct rampart_stats st;
	rampart_get_stats(&st);
	if (ok && strcmp(rampart_guard_backend(), backend)) {
		printf("FAIL: the guard backend moved from %s to %s (%lu latches) without mlockall(MCL_FUTURE)\n",
		       backend, rampart_guard_backend(), st.guard_latches);
		ok = false;
	}
	if (ok) printf("guard backend still %s, %lu latches\n", rampart_guard_backend(), st.guard_latches);
	return ok ? 0 : 1;
}
