/*
 * trace_death — after the fatal line comes the list of callers: return addresses found
 * on the thread's stack, as "module+offset". A double free committed in a known
 * function, from the main thread and from a second thread (whose stack is a mapping of
 * its own), must list a frame inside that function, with the offset addr2line wants.
 */
#include "../harness.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

/* The bug, in a function of its own so the trace can be checked against its address. */
__attribute__((noinline)) void trace_bad_site(char *p)
{
	free(p);
	free(p);
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	trace_bad_site(arg);
	return NULL;
}

/* Runs in the child, stderr captured. */
static void commit(int threaded)
{
	char *p = malloc(40);
	if (!threaded) {
		trace_bad_site(p);
		return;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, p) == 0) pthread_join(t, NULL);
}

static int check(int threaded)
{
	const char *name = threaded ? "double free in a thread" : "double free in main";
	int pfd[2];
	if (pipe(pfd)) return 1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], 2);
		quiet_child();
		alarm(30);
		commit(threaded);
		_exit(0);
	}
	close(pfd[1]);
	static char out[16384];
	size_t len = 0;
	ssize_t n;
	while ((n = read(pfd[0], out + len, sizeof out - 1 - len)) > 0) len += (size_t)n;
	out[len] = 0;
	close(pfd[0]);
	int st;
	waitpid(pid, &st, 0);

	/* Where the function lies, as the trace must name it: the module's path and the
	 * offset from its load base. */
	Dl_info info;
	char exe[512];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[el > 0 ? el : 0] = 0;
	/* A program linked at a fixed address (ET_EXEC: static or non-PIE, as musl-gcc
	 * -static makes) is named by absolute addresses, which is what addr2line wants
	 * there; static builds may also lack dladdr. */
	unsigned char ehdr[18] = {0};
	int efd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (efd >= 0) {
		if (read(efd, ehdr, sizeof ehdr) != (ssize_t)sizeof ehdr) ehdr[0] = 0;
		close(efd);
	}
	bool fixed = ehdr[0] == 0x7f && ehdr[16] == 2 && ehdr[17] == 0;
	int ok = (fixed || dladdr((void *)trace_bad_site, &info) != 0) && el > 0;
	uintptr_t lo = (uintptr_t)trace_bad_site - (fixed ? 0 : (uintptr_t)info.dli_fbase), hi = lo + 256;

	ok = ok && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
	/* (Without the slot quarantine, VARIANT=light, the freed slot's slab may be closed
	 * already, and the second free is caught as a use of the freed slab.) */
	ok = ok && (strncmp(out, "rampart: fatal: slot was already freed (double free?) at 0x", 59) == 0 ||
		    strncmp(out, "rampart: fatal: use of a pointer into a freed slab (double free?) at 0x", 71) == 0);
	char *line = strchr(out, '\n');
	ok = ok && line && strncmp(line + 1, "rampart: callers (", 18) == 0;
	int frames = 0, found = 0, bad = 0;
	for (line = line ? strchr(line + 1, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
		char module[512];
		unsigned long off;
		int idx;
		if (sscanf(line + 1, "rampart:   #%d %511[^+]+0x%lx", &idx, module, &off) != 3 || idx != frames) {
			bad++;
			continue;
		}
		frames++;
		if (strcmp(module, exe) == 0 && off >= lo && off < hi) found++;
	}
	ok = ok && frames >= 1 && frames <= 16 && !bad && found >= 1;
	printf("%s  %s: %d frames, %d inside trace_bad_site (+0x%lx..+0x%lx of %s)\n", ok ? "ok  " : "FAIL", name,
	       frames, found, (unsigned long)lo, (unsigned long)hi, exe);
	if (!ok) printf("      child stderr:\n%s", out);
	return !ok;
}

int main(void)
{
	int failed = check(0) + check(1);
	printf("2 cases, %d failed\n", failed);
	return failed;
}
