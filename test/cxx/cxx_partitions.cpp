// cxx_partitions — each new-expression of a C++ program is a call site of its own for
// rampart's call-site partitions (docs/slab.md, "Call-site partitions"): the operators
// (src/front/cxx.c) take their own caller's return address, never one inside rampart.
// In each of many processes (the program runs itself again: each draws its own
// secret), site A news N objects and deletes them, site B churns objects of the same
// type; B gets A's freed slots only in the processes where the two sites share a
// partition. Were the site the operator's, every process would share: some process with
// none shows the sites apart, and a process with only a few would show reuse across
// partitions. Objects of a third site stay live among A's, so that no slab of A's
// empties (a slab wholly free may close, and its slots start afresh, anyone's: not the
// reuse measured here). Linked with librampart.a. Exits 0 on success, 77 where it cannot run
// itself again.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rampart.h"

namespace {

struct Object {
	char bytes[48];
};

enum { N = 2000, PIN_EVERY = 4, LIVE = 64, CHURN = 100000, PROCS = 48 };

Object *a_objects[N];
Object *pins[N / PIN_EVERY];
std::uintptr_t freed[N];
Object *live[LIVE];

__attribute__((noinline)) Object *site_a() { return new Object(); }
__attribute__((noinline)) Object *site_b() { return new Object(); }
__attribute__((noinline)) Object *site_pin() { return new Object(); }

// One process: the hits of B on A's freed slots.
long child()
{
	for (int i = 0; i < N; i++) {
		if (i % PIN_EVERY == 0) pins[i / PIN_EVERY] = site_pin();
		a_objects[i] = site_a();
		freed[i] = reinterpret_cast<std::uintptr_t>(a_objects[i]);
	}
	std::sort(freed, freed + N);
	for (int i = 0; i < N; i++) delete a_objects[i];
	long hits = 0;
	for (long r = 0; r < CHURN; r++) {
		delete live[r % LIVE];
		live[r % LIVE] = site_b();
		hits += std::binary_search(freed, freed + N, reinterpret_cast<std::uintptr_t>(live[r % LIVE]));
	}
	return hits;
}

// This program again, as a child; its hits, or -1 when it failed.
long run()
{
	int pfd[2];
	if (pipe(pfd)) return -1;
	std::fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) return -1;
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], STDOUT_FILENO);
		char self[] = "cxx_partitions", arg[] = "child";
		char *args[] = {self, arg, nullptr};
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(pfd[1]);
	char buf[64] = {};
	ssize_t n, len = 0;
	while ((n = read(pfd[0], buf + len, sizeof buf - 1 - len)) > 0) len += n;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) return -1;
	return std::strtol(buf, nullptr, 10);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 2 && !std::strcmp(argv[1], "child")) {
		std::printf("%ld\n", child());
		return 0;
	}
	if (access("/proc/self/exe", X_OK)) {
		std::fprintf(stderr, "SKIP: cannot run itself again: no /proc/self/exe\n");
		return 77;
	}
	unsigned long partitions = 1;
	Object *first = new Object(); // rampart started: its options are in place
	asm volatile("" : : "r"(first) : "memory"); // kept: a new and delete pair may be elided
	delete first;
	if (rampart_get_option("partitions", &partitions)) partitions = 1;
	if (partitions < 2) {
		std::fprintf(stderr, "SKIP: this process runs without call-site partitions\n");
		return 77;
	}
	int apart = 0, shared = 0, few = 0, broken = 0;
	for (int i = 0; i < PROCS; i++) {
		long hits = run();
		if (hits < 0) broken++;
		else if (!hits) apart++;
		else if (hits < LIVE) few++;
		else shared++;
	}
	std::printf("%d processes with %lu partitions: B took A's freed slots in %d, none in %d, only a few in %d, "
		    "%d broken\n",
		    PROCS, partitions, shared, apart, few, broken);
	bool ok = !broken && !few && apart > 0;
	std::printf("cxx_partitions: %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
