/* demo.c — what `make run` shows: rampart at work, and a use-after-free stopped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	const char *(*backend)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "rampart_guard_backend");
	if (!backend) {
		printf("rampart is not loaded: run this through `make run`\n");
		return 1;
	}
	printf("rampart loaded, guard backend: %s\n", backend());

	char *small = malloc(100), *big = malloc(1 << 20);
	strcpy(small, "hello from a small block");
	memset(big, 'x', 1 << 20);
	printf("allocated 100 B at %p and 1 MiB at %p (usable %zu)\n", (void *)small, (void *)big,
	       malloc_usable_size(big));
	/* More than the block's trailing guard can give: its pages move to a new region
	 * (mremap, not copied), so the address changes (docs/large.md, realloc). */
	char *old = big;
	big = realloc(big, 4 << 20);
	if (big == old) printf("grew the 1 MiB block to 4 MiB in place, first byte still '%c'\n", big[0]);
	else printf("grew the 1 MiB block to 4 MiB: its pages moved to %p, first byte still '%c'\n", (void *)big, big[0]);
	free(small);
	char *volatile freed = big;
	free(big);
	big = freed;

	printf("now a child writes to the freed 4 MiB block...\n");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		volatile char *stale = big; /* hide the bug from the compiler's warning */
		stale[0] = 'y';            /* use after free */
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status)) {
		printf("use-after-free stopped: the child was killed by %s\n", strsignal(WTERMSIG(status)));
		return 0;
	}
	printf("use-after-free NOT stopped (child exited normally)\n");
	return 1;
}
