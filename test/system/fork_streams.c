/*
 * fork_streams — children made by fork(), by _Fork() (glibc 2.34+, musl 1.2.3+) and by a
 * raw fork system call each draw their own random choices: no child repeats another's
 * slot choices or large-block address, nor the parent's next ones. Before, only fork()
 * ran the handler that tells rampart it is in a new process; every _Fork() or raw-fork
 * child made the parent's next choices, all the same.
 *
 * The parent sets up a size class and the large allocator, then makes KIDS children of
 * each kind without allocating in between, so every child starts from the same state.
 * Each child allocates SMALL blocks of one class and LARGE large blocks and sends the
 * addresses up a pipe; afterwards the parent makes the same allocations itself.
 *
 * Asserted: every child's addresses (as a whole) differ from every other child's and
 * from the parent's; and among the children of one kind the large blocks are not all
 * at the same addresses. Twelve large blocks, because the light variant chooses slots
 * in order (only the large blocks' guards are random there) and its guards are one of
 * 5 page counts: with three blocks two children agreed in about one run in three; with
 * twelve, two of four children agree about once in 10^7 runs (65 counts by default).
 *
 * Where the kernel does not wipe MADV_WIPEONFORK pages (an emulator that ignores the
 * advice), only the fork() children are checked, and the run says so.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Weak: musl before 1.2.3 has no _Fork, and a static link pulls it in only where
 * something else does (fork() does, in the C libraries that have it). */
#pragma weak _Fork
pid_t _Fork(void);

enum { KIDS = 4, SMALL = 16, LARGE = 12 };
#define SMALL_BYTES 48
#define LARGE_BYTES ((size_t)4 << 20)

struct draw {
	uintptr_t small[SMALL];
	uintptr_t large[LARGE];
};

static void allocate(struct draw *d)
{
	for (int i = 0; i < SMALL; i++) d->small[i] = (uintptr_t)malloc(SMALL_BYTES);
	for (int i = 0; i < LARGE; i++) d->large[i] = (uintptr_t)malloc(LARGE_BYTES);
}

static pid_t by_fork(void) { return fork(); }
static pid_t by_underscore_fork(void) { return _Fork(); }
static pid_t by_syscall(void)
{
#ifdef SYS_fork
	return (pid_t)syscall(SYS_fork);
#else /* arm64 has only clone: with just the exit signal it is a fork */
	return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
}

static const struct kind {
	const char *name;
	pid_t (*make)(void);
} kinds[] = {
	{"fork()", by_fork},
	{"_Fork()", by_underscore_fork},
	{"syscall(SYS_fork)", by_syscall},
};
#define NKINDS (sizeof kinds / sizeof *kinds)

/* Does the kernel zero a MADV_WIPEONFORK page in a child made by a raw fork? */
static int kernel_wipes(void)
{
	volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return 0;
	p[0] = 1;
	int wipes = 0;
	if (madvise((void *)p, 4096, MADV_WIPEONFORK) == 0) {
		pid_t pid = by_syscall();
		if (pid == 0) _exit(p[0] == 0 ? 0 : 1);
		int st;
		wipes = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	munmap((void *)p, 4096);
	return wipes;
}

/* One child of the given kind: its draw, or 0 on failure. */
static int child_draw(const struct kind *k, struct draw *out)
{
	int fd[2];
	if (pipe(fd)) {
		perror("pipe");
		return 0;
	}
	pid_t pid = k->make();
	if (pid < 0) {
		perror(k->name);
		return 0;
	}
	if (pid == 0) {
		struct draw d;
		allocate(&d);
		_exit(write(fd[1], &d, sizeof d) == sizeof d ? 0 : 1);
	}
	close(fd[1]);
	ssize_t n = read(fd[0], out, sizeof *out);
	close(fd[0]);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || n != sizeof *out) {
		printf("FAIL  a %s child did not report its draw\n", k->name);
		return 0;
	}
	return 1;
}

static int same(const struct draw *a, const struct draw *b) { return memcmp(a, b, sizeof *a) == 0; }

int main(void)
{
	alarm(60);
	/* The class and the large allocator set up, and left with nothing freed: no child
	 * starts from a slot the quarantine hands back. */
	void *warm_small = malloc(SMALL_BYTES), *warm_large = malloc(LARGE_BYTES);
	if (!warm_small || !warm_large) {
		printf("FAIL  no memory\n");
		return 1;
	}
	int wipes = kernel_wipes();
	static struct draw kid[NKINDS][KIDS];
	int ran[NKINDS] = {0};
	for (size_t k = 0; k < NKINDS; k++) {
		if (k > 0 && !wipes) {
			printf("skip  %s: this kernel (or emulator) does not wipe MADV_WIPEONFORK pages\n", kinds[k].name);
			continue;
		}
		if (kinds[k].make == by_underscore_fork && !_Fork) {
			printf("skip  _Fork(): not in this C library\n");
			continue;
		}
		for (int i = 0; i < KIDS; i++)
			if (!child_draw(&kinds[k], &kid[k][i])) return 1;
		ran[k] = 1;
	}
	struct draw parent;
	allocate(&parent);

	int fails = 0;
	for (size_t k = 0; k < NKINDS; k++) {
		if (!ran[k]) continue;
		int large_varies = 0;
		for (int i = 0; i < KIDS; i++) {
			const struct draw *d = &kid[k][i];
			printf("%-18s child %d: small %#lx %#lx %#lx ... large %#lx %#lx %#lx\n", kinds[k].name, i,
			       (unsigned long)d->small[0], (unsigned long)d->small[1], (unsigned long)d->small[2],
			       (unsigned long)d->large[0], (unsigned long)d->large[1], (unsigned long)d->large[2]);
			if (same(d, &parent)) {
				printf("FAIL  %s child %d made the parent's next choices\n", kinds[k].name, i);
				fails++;
			}
			if (memcmp(d->large, kid[k][0].large, sizeof d->large)) large_varies = 1;
			/* Against every child drawn before it, of any kind. */
			for (size_t k2 = 0; k2 <= k; k2++)
				for (int j = 0; j < (k2 == k ? i : KIDS); j++)
					if (ran[k2] && same(d, &kid[k2][j])) {
						printf("FAIL  %s child %d made the same choices as %s child %d\n", kinds[k].name,
						       i, kinds[k2].name, j);
						fails++;
					}
		}
		if (!large_varies) {
			printf("FAIL  every %s child got its large blocks at the same addresses\n", kinds[k].name);
			fails++;
		}
	}
	printf("parent (next)     : small %#lx %#lx %#lx ... large %#lx %#lx %#lx\n", (unsigned long)parent.small[0],
	       (unsigned long)parent.small[1], (unsigned long)parent.small[2], (unsigned long)parent.large[0],
	       (unsigned long)parent.large[1], (unsigned long)parent.large[2]);
	printf(fails ? "FAIL\n" : "ok\n");
	return fails != 0;
}
