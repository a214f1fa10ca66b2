/* cxx_dlopen — a C program linked with librampart.so that loads a C++ plugin (and with
 * it libstdc++) only later, with dlopen(RTLD_LOCAL), as Python loads a C++ extension
 * under LD_PRELOAD. The plugin's `new` must still throw std::bad_alloc and run the
 * new-handler. Argument-free; finds the plugin next to itself (../cxx/). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *_Znwm(size_t size); /* rampart's operator new(size_t) */
void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt);

/* Before libstdc++ is loaded, a failing throwing `new` cannot throw: it must be
 * fatal (a C caller reaching it is the only possibility), and nothrow new is NULL. */
static int no_libstdcxx_yet(void)
{
	if (_ZnwmRKSt9nothrow_t(SIZE_MAX / 2, NULL) != NULL) return 0;
	int fds[2];
	if (pipe(fds)) return 0;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		_Znwm(SIZE_MAX / 2);
		_exit(0);
	}
	close(fds[1]);
	char out[512] = {0};
	ssize_t n = read(fds[0], out, sizeof out - 1);
	(void)n;
	int status;
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(out, "rampart: fatal: operator new failed");
}

int main(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
	if (n <= 0) return 1;
	path[n] = 0;
	char *slash = strrchr(path, '/');
	if (!slash) return 1;
	strcpy(slash, "/../cxx/libcxx_plugin.so");
	if (dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD)) {
		fprintf(stderr, "libstdc++ is already loaded: the test would prove nothing\n");
		return 1;
	}
	if (!no_libstdcxx_yet()) {
		fprintf(stderr, "a failing new without libstdc++ did not end in a fatal report\n");
		return 1;
	}
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*run)(void) = (int (*)(void))dlsym(lib, "cxx_plugin_run");
	if (!run) return 1;
	int r = run();
	printf("cxx_dlopen: %s (check %d)\n", r ? "FAIL" : "ok", r);
	return r ? 1 : 0;
}
