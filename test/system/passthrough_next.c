/* passthrough_next — under passthrough=1, glibc's introspection functions are glibc's
 * even where another allocator is loaded after rampart: redis-server links jemalloc, and
 * with rampart preloaded and passthrough=1 its first malloc_usable_size went to
 * jemalloc's (the next definition, RTLD_NEXT) with a block glibc made, and crashed
 * (issue 52's soak). Runs test/plain/introspect_probe with LD_PRELOAD=OUT/librampart.so
 * and jemalloc behind it; skipped where the shared library, the probe or Debian's
 * libjemalloc2 is missing (a static or foreign build). */
#define _GNU_SOURCE
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"

static const char *const jemallocs[] = {"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
					 "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2", "/usr/lib/libjemalloc.so.2"};

static int run(const char *probe, const char *preload, const char *options)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("LD_PRELOAD", preload, 1);
		setenv("RAMPART_OPTIONS", options, 1);
		execl(probe, probe, (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) return 1;
	exe[n] = 0;
	const char *dir = dirname(exe); /* OUT/test/system */
	char probe[4200], lib[4200];
	snprintf(probe, sizeof probe, "%s/../plain/introspect_probe", dir);
	snprintf(lib, sizeof lib, "%s/../../librampart.so", dir);
	const char *jemalloc = NULL;
	for (size_t i = 0; i < sizeof jemallocs / sizeof *jemallocs && !jemalloc; i++)
		if (access(jemallocs[i], R_OK) == 0) jemalloc = jemallocs[i];
	if (access(probe, X_OK) || access(lib, R_OK) || !jemalloc)
		test_skip("needs %s, %s and Debian's libjemalloc2", probe, lib);
	char preload[8500];
	snprintf(preload, sizeof preload, "%s:%s", lib, jemalloc);
	/* A sanitizer build's library cannot be preloaded into a foreign program. */
	if (run(probe, lib, "") != 0) test_skip("%s cannot be preloaded into %s here", lib, probe);
	int failed = 0;
	static const char *const options[] = {"passthrough=1", "", "guard=mprotect,passthrough=1"};
	for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
		int rc = run(probe, preload, options[i]);
		printf("%-30s rampart, then jemalloc, preloaded: exit %d\n", *options[i] ? options[i] : "(rampart itself)", rc);
		failed |= rc != 0;
	}
	printf("%s\n", failed ? "FAIL" : "ok");
	return failed;
}
