/*
 * arenas.c — a process spreads its threads over one arena per CPU it may run on, at
 * most CONFIG_SLAB_ARENAS, unless arenas=N says otherwise; threads that share an arena
 * (more threads than CPUs) work as ever.
 *
 * Each case runs this program again (--child) with an affinity mask and
 * RAMPART_OPTIONS set before its first allocation. The child starts THREADS threads one
 * after another; each allocates blocks of several classes, checks and frees the blocks
 * the thread before it left (frees that cross arenas where there are several), and
 * leaves its own for the next. The child exits through exit(), so its statistics
 * report (stats=json) reaches the parent on a pipe, which reads "arenas" (how many the
 * process has) and "arenas_open" (how many its threads opened) from it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 6
#define BLOCKS 500

static void *handed[BLOCKS];
static int failures;

static void *worker(void *arg)
{
	unsigned char tag = (unsigned char)(uintptr_t)arg;
	for (int i = 0; i < BLOCKS; i++) {
		unsigned char *p = handed[i];
		if (p) {
			size_t n = 16 + (size_t)(i % 40) * 24;
			for (size_t k = 0; k < n; k++)
				if (p[k] != (unsigned char)(tag - 1)) failures++;
			free(p);
		}
		size_t n = 16 + (size_t)(i % 40) * 24;
		p = malloc(n);
		if (!p) {
			failures++;
			handed[i] = NULL;
			continue;
		}
		memset(p, tag, n);
		handed[i] = p;
	}
	return NULL;
}

static int child(void)
{
	/* One thread after another: each is sent to the next arena in turn. */
	for (uintptr_t t = 1; t <= THREADS; t++) {
		pthread_t th;
		if (pthread_create(&th, NULL, worker, (void *)t) || pthread_join(th, NULL)) return 3;
	}
	for (int i = 0; i < BLOCKS; i++) free(handed[i]);
	if (failures) fprintf(stderr, "child: %d damaged or missing blocks\n", failures);
	exit(failures ? 1 : 0);
}

static long json_field(const char *s, const char *key)
{
	char want[64];
	snprintf(want, sizeof want, "\"%s\":", key);
	const char *at = strstr(s, want);
	return at ? strtol(at + strlen(want), NULL, 10) : -1;
}

static int failed;

/* Run the child on cpus CPUs (0: the parent's mask) with RAMPART_OPTIONS=stats=json
 * plus opts; check the arenas it reports. */
static void run_case(unsigned cpus, const char *opts, long want_arenas)
{
	int pfd[2];
	if (pipe(pfd)) {
		perror("pipe");
		exit(2);
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], 2);
		if (cpus) {
			cpu_set_t all, some;
			CPU_ZERO(&some);
			if (sched_getaffinity(0, sizeof all, &all)) _exit(4);
			for (int c = 0, n = 0; c < CPU_SETSIZE && n < (int)cpus; c++)
				if (CPU_ISSET(c, &all)) CPU_SET(c, &some), n++;
			if (sched_setaffinity(0, sizeof some, &some)) _exit(4);
		}
		char env[128];
		snprintf(env, sizeof env, "stats=json%s%s", *opts ? "," : "", opts);
		setenv("RAMPART_OPTIONS", env, 1);
		execl("/proc/self/exe", "arenas", "--child", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	static char out[1 << 16];
	size_t len = 0;
	for (ssize_t n; len < sizeof out - 1 && (n = read(pfd[0], out + len, sizeof out - 1 - len)) != 0;)
		if (n > 0) len += (size_t)n;
		else if (errno != EINTR) break;
	out[len] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	long arenas = json_field(out, "arenas"), open = json_field(out, "arenas_open");
	long want_open = want_arenas < THREADS + 1 ? want_arenas : THREADS + 1;
	bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && arenas == want_arenas && open == want_open;
	printf("%-4s cpus %-3s options '%s': arenas %ld (want %ld), open %ld (want %ld), exit status %d\n",
	       ok ? "ok" : "FAIL", cpus ? (cpus == 1 ? "1" : "2") : "all", opts, arenas, want_arenas, open, want_open,
	       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	if (!ok) {
		failed++;
		fprintf(stderr, "child's stderr:\n%s\n", out);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child")) return child();
	cpu_set_t mask;
	if (sched_getaffinity(0, sizeof mask, &mask)) {
		perror("sched_getaffinity");
		return 2;
	}
	long cpus = CPU_COUNT(&mask), most = CONFIG_SLAB_ARENAS;
	long by_cpus = cpus < most ? cpus : most;
	printf("this process may run on %ld CPUs; the build has at most %ld arenas\n", cpus, most);
	run_case(0, "", by_cpus);
	run_case(1, "", 1);
	if (cpus >= 2) run_case(2, "", most < 2 ? most : 2);
	run_case(1, "arenas=0", 1);
	char opt[32];
	snprintf(opt, sizeof opt, "arenas=%ld", most);
	run_case(1, opt, most); /* more arenas than CPUs, when asked */
	run_case(0, "arenas=1", 1);
	snprintf(opt, sizeof opt, "arenas=%ld", most + 1); /* refused: the default stays */
	run_case(1, opt, 1);
	printf("arenas: %s\n", failed ? "FAILED" : "ok");
	return failed ? 1 : 0;
}
