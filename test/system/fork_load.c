/*
 * fork_load.c — fork() while other threads allocate and free: every child must be
 * able to malloc, realloc and free (small and large) and exit 0. A deadlock in a child
 * ends with SIGALRM and fails the test instead of hanging it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../harness.h"
#include "rampart.h"

#define THREADS 4
#define FORKS 60

static atomic_bool stop;

static void *churner(void *arg)
{
	uint64_t s = (uintptr_t)arg * 0x2545f4914f6cdd1dull + 7;
	void *keep[16] = {0};
	while (!atomic_load(&stop)) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		int i = (int)(s % 16);
		size_t n = s % 8 == 0 ? (256 << 10) + (s >> 20) % (1 << 20) : (s >> 8) % 4000;
		free(keep[i]);
		keep[i] = malloc(n);
		if (keep[i] && n) ((unsigned char *)keep[i])[n - 1] = 1;
		if (s % 5 == 0) {
			void *q = realloc(keep[i], n / 2 + 300000);
			if (q) keep[i] = q;
		}
	}
	for (int i = 0; i < 16; i++) free(keep[i]);
	return NULL;
}

static int child_work(void)
{
	alarm(10);
	for (int round = 0; round < 20; round++) {
		unsigned char *a = malloc(100), *b = malloc(512 << 10), *c = calloc(10, 1000);
		if (!a || !b || !c) return 2;
		memset(a, 1, 100);
		memset(b, 2, 512 << 10);
		b = realloc(b, 3 << 20);
		if (!b || b[0] != 2) return 3;
		for (int i = 0; i < 10000; i++)
			if (c[i]) return 4;
		free(a);
		free(b);
		free(c);
	}
	return 0;
}

/* Forks stop being started after this long once MIN_FORKS were done: under an emulator
 * (check-arm64 runs this under qemu-user) on a loaded machine 60 of them took more than
 * the two minutes the whole program is given, and what the test proves, children that
 * can allocate whatever the other threads were doing, holds for every fork it makes. */
#define FORK_BUDGET_S 60
#define MIN_FORKS 10

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	alarm(300); /* a deadlock in the parent: its children each have 10 s (child_work) */
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, churner, (void *)(i + 1));
	int failed = 0, forks = 0;
	double start = now_s();
	for (int f = 0; f < FORKS; f++) {
		if (f >= MIN_FORKS && now_s() - start > FORK_BUDGET_S) break;
		forks++;
		void *mine = malloc((f % 2) ? 64 : 700000); /* the forking thread allocates too */
		pid_t pid = fork();
		if (pid < 0) {
			printf("FAIL  fork: %s\n", strerror(errno));
			failed++;
			break;
		}
		if (pid == 0) _exit(child_work());
		free(mine);
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			if (WIFSIGNALED(st))
				printf("FAIL  fork %d: child killed by %s%s\n", f, strsignal(WTERMSIG(st)),
				       WTERMSIG(st) == SIGALRM ? " (deadlock?)" : "");
			else printf("FAIL  fork %d: child exited %d\n", f, WEXITSTATUS(st));
			failed++;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
	printf("%s: %d forks under %d allocating threads, %d failed (backend %s)\n", failed ? "FAIL" : "ok", forks,
	       THREADS, failed, rampart_guard_backend());
	return failed ? 1 : 0;
}
