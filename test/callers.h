/*
 * callers.h — reading the callers list of a rampart report in a test (C and C++):
 *
 *  - callers_parse: the frames of the first list in a report ("rampart:   #N
 *    module+0xaddr [(symbol+0xoff)] [[scanned]]", docs/errors.md);
 *  - callers_exe, callers_bias: the program's path as the list names it, and its load
 *    bias (0 where it is linked at a fixed address);
 *  - callers_where: what addr2line says of a frame: its function, file and line;
 *  - callers_own: whether a frame lies in rampart's own code;
 *  - callers_child: a function run in a child whose stderr (the report) is kept;
 *  - callers_libc_names, callers_named: whether the C library's frames can carry their
 *    function's name here, and the frame that carries a given one, checked.
 *
 * Self-contained and valid C++, so that the C++ tests use it too.
 */
#ifndef RAMPART_TEST_CALLERS_H
#define RAMPART_TEST_CALLERS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define CALLERS_UNUSED __attribute__((unused))

struct callers_frame {
	char module[512];
	unsigned long off;
	char symbol[128];        /* the name beside the frame, "" for none */
	unsigned long symbol_off; /* the frame's distance from the symbol's start */
	bool scanned;
};

/* The frames of the first callers list at or after report: how many there are (at most
 * max stored); -1 where there is no list or a line of it is malformed. */
static CALLERS_UNUSED int callers_parse(const char *report, struct callers_frame *f, int max)
{
	const char *p = strstr(report, "rampart: callers (");
	if (!p) return -1;
	int n = 0;
	for (p = strchr(p, '\n'); p && strncmp(p + 1, "rampart:   #", 12) == 0; p = strchr(p + 1, '\n')) {
		struct callers_frame one;
		int idx;
		if (sscanf(p + 1, "rampart:   #%d %511[^+]+0x%lx", &idx, one.module, &one.off) != 3 || idx != n) return -1;
		const char *eol = strchr(p + 1, '\n'), *mark = strstr(p + 1, " [scanned]");
		one.scanned = mark && (!eol || mark < eol);
		const char *name = strstr(p + 1, " (");
		one.symbol[0] = 0;
		one.symbol_off = 0;
		if (name && (!eol || name < eol) &&
		    sscanf(name, " (%127[^+)]+0x%lx)", one.symbol, &one.symbol_off) != 2)
			return -1;
		if (n < max) f[n] = one;
		n++;
	}
	return n;
}

/* The program's path, as /proc/self/maps (hence the list) names it. */
static CALLERS_UNUSED bool callers_exe(char *exe, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", exe, size - 1);
	exe[n > 0 ? n : 0] = 0;
	return n > 0;
}

static CALLERS_UNUSED int callers_first_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
	return 1; /* the program comes first */
}

static CALLERS_UNUSED uintptr_t callers_bias(void)
{
	uintptr_t bias = 0;
	dl_iterate_phdr(callers_first_bias, &bias);
	return bias;
}

/* addr2line -f -C -e module off: the function (its name up to its parameters), the
 * source file's last component and the line. False where addr2line cannot say; *missing
 * then tells whether it could not be run at all (binutils not installed). */
static CALLERS_UNUSED bool callers_where(const char *module, unsigned long off, char *fn, size_t fn_size,
					 char *file, size_t file_size, int *line, bool *missing)
{
	char addr[32], out[2048];
	snprintf(addr, sizeof addr, "0x%lx", off);
	int pfd[2];
	*missing = false;
	if (pipe(pfd)) return false;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		execlp("addr2line", "addr2line", "-f", "-C", "-e", module, addr, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t r;
	while (len < sizeof out - 1 && (r = read(pfd[0], out + len, sizeof out - 1 - len)) > 0) len += (size_t)r;
	out[len] = 0;
	close(pfd[0]);
	int st = 0;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		*missing = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127;
		return false;
	}
	/* "function\nfile:line" or "file:line (discriminator N)" */
	char *nl = strchr(out, '\n');
	if (!nl) return false;
	*nl = 0;
	snprintf(fn, fn_size, "%.*s", (int)strcspn(out, "("), out);
	char *loc = nl + 1, *colon = strrchr(loc, ':');
	if (!colon) return false;
	*colon = 0;
	const char *base = strrchr(loc, '/');
	snprintf(file, file_size, "%s", base ? base + 1 : loc);
	*line = atoi(colon + 1);
	return *line > 0;
}

/* rampart's code in a program linked with librampart.a: the sections the static library
 * puts it in (Makefile); none where the program uses librampart.so. */
#ifdef __cplusplus
extern "C" {
#endif
extern const char __start_rampart_text[] __attribute__((weak)), __stop_rampart_text[] __attribute__((weak));
extern const char __start_rampart_text_cold[] __attribute__((weak)), __stop_rampart_text_cold[] __attribute__((weak));
#ifdef __cplusplus
}
#endif

/* Is frame f rampart's own code? exe: the program's path; bias: its load bias. */
static CALLERS_UNUSED bool callers_own(const struct callers_frame *f, const char *exe, uintptr_t bias)
{
	if (strstr(f->module, "librampart")) return true;
	if (strcmp(f->module, exe) != 0) return false;
	uintptr_t a = bias + f->off;
	return (a >= (uintptr_t)__start_rampart_text && a < (uintptr_t)__stop_rampart_text) ||
	       (a >= (uintptr_t)__start_rampart_text_cold && a < (uintptr_t)__stop_rampart_text_cold);
}

static CALLERS_UNUSED int callers_find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const char *base = strrchr(info->dlpi_name, '/');
	if (strncmp(base ? base + 1 : info->dlpi_name, "libc.so", 7) != 0) return 0;
	*(bool *)data = true;
	return 1;
}

/* Can a frame in one of the C library's exported functions carry its name here? The
 * names come from a module's dynamic symbol table: a C library linked statically (the
 * tests' static set, which check-musl and check-arm64 run) has none, and then no frame
 * can. The functions the tests name are glibc's start-up and exit paths. False, with
 * *why, where a test should not ask. */
static CALLERS_UNUSED bool callers_libc_names(const char **why)
{
	bool shared = false;
	dl_iterate_phdr(callers_find_libc, &shared);
	if (!shared) {
		*why = "the C library is linked statically: no dynamic symbol table names its functions";
		return false;
	}
#ifndef __GLIBC__
	*why = "not glibc: the frames looked for are those of glibc's start-up and exit code";
	return false;
#else
	return true;
#endif
}

struct callers_object {
	uintptr_t addr, bias;
	bool found;
};

static CALLERS_UNUSED int callers_find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct callers_object *o = (struct callers_object *)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && o->addr >= start && o->addr - start < ph->p_memsz) {
			o->bias = (uintptr_t)info->dlpi_addr;
			o->found = true;
			return 1;
		}
	}
	return 0;
}

/* The index of the frame among f[0..n) that names fn, an exported function of a shared
 * object, where its name and offset agree with the loader's: the frame's address is fn's
 * (dlsym) plus the offset printed, in fn's module. -1 where no frame does. */
static CALLERS_UNUSED int callers_named(const struct callers_frame *f, int n, const char *fn)
{
	struct callers_object o = {(uintptr_t)dlsym(RTLD_DEFAULT, fn), 0, false};
	if (!o.addr || !dl_iterate_phdr(callers_find_object, &o) || !o.found) return -1;
	for (int i = 0; i < n; i++) {
		if (strcmp(f[i].symbol, fn) != 0) continue;
		if (o.bias + f[i].off - f[i].symbol_off == o.addr) return i;
		printf("      #%d %s+0x%lx (%s+0x%lx): %s is at +0x%lx of the module that holds it\n", i, f[i].module,
		       f[i].off, f[i].symbol, f[i].symbol_off, fn, (unsigned long)(o.addr - o.bias));
	}
	return -1;
}

/* Run fn(arg) in a child (no core file, SIGABRT's default action, 30 s at most) with its
 * stderr kept in out (size bytes, terminated); its wait status, -1 where it could not
 * run. */
static CALLERS_UNUSED int callers_child(void (*fn)(int), int arg, char *out, size_t size)
{
	int pfd[2];
	if (pipe(pfd)) return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) return -1;
	if (pid == 0) {
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		signal(SIGABRT, SIG_DFL);
		close(pfd[0]);
		dup2(pfd[1], STDERR_FILENO);
		alarm(30);
		fn(arg);
		_exit(0);
	}
	close(pfd[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(pfd[0], out + len, size - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR) continue;
		if (n < 0) break;
		len += (size_t)n;
		if (len == size - 1) { /* keep draining so the child never blocks */
			char sink[512];
			while ((n = read(pfd[0], sink, sizeof sink)) > 0 || (n < 0 && errno == EINTR)) {}
			break;
		}
	}
	out[len] = 0;
	close(pfd[0]);
	int st = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	return st;
}

#endif
