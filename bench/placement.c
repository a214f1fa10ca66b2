/*
 * placement.c — where an allocator puts its first large blocks, relative to the C
 * library (issue 36, "Where large blocks are placed"). Run under LD_PRELOAD of the
 * allocator; prints one line: the offsets of the first malloc(200000), malloc(1 MiB)
 * and malloc(64 MiB) from dlsym(printf), in bytes (each block is allocated first in a
 * process of its own, by re-running this program with an argument). bench/placement.sh
 * runs it many times per allocator and counts the distinct values.
 *
 *   cc -O1 -o placement bench/placement.c -ldl
 *   LD_PRELOAD=out/librampart.so ./placement
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 1) {
		/* One size, first large block of this process. */
		size_t size = strtoull(argv[1], NULL, 10);
		void *p = malloc(size);
		intptr_t libc = (intptr_t)dlsym(RTLD_DEFAULT, "printf");
		if (!p || !libc) return 1;
		printf("%lld", (long long)((intptr_t)p - libc));
		return 0;
	}
	static const char *const sizes[] = {"200000", "1048576", "67108864"};
	for (int i = 0; i < 3; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			execl("/proc/self/exe", argv[0], sizes[i], (char *)NULL);
			_exit(127);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) return 1;
		printf(i < 2 ? " " : "\n");
	}
	return 0;
}
