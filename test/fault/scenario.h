/*
 * scenario.h — what the fault-injection programs with start-up scenarios share
 * (test_guard_fault.c, test_old_kernels.c). rampart initialises once per process, so each
 * case runs in a forked child (fault_child), where it may set the backend up again; and a
 * start-up scenario runs in this program executed again with FAKE_SCENARIO set
 * (run_scenario_child, harness.h), whose main() plays it before anything has allocated
 * (scenario_or_tests), so that the fake kernel's knobs are in place for the very first
 * malloc.
 */
#ifndef RAMPART_TEST_SCENARIO_H
#define RAMPART_TEST_SCENARIO_H

#include <stdatomic.h>

#include "../harness.h"
#include "fake_kernel.h"
#include "front/init.h"

/* Run a case in a forked child, quiet and ended by an alarm after seconds: before(arg)
 * first where given (the case's set-up, say the backend), then the fake kernel reset,
 * then fn. The child's exit status: 0 when fn returned, 128 + the signal that killed it. */
static TH_UNUSED int fault_child(void (*before)(int), int arg, void (*fn)(void), unsigned seconds)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		quiet_child();
		alarm(seconds);
		if (before) before(arg);
		fake_reset();
		fn();
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
	if (WIFSIGNALED(st)) fprintf(stderr, "child killed by signal %d\n", WTERMSIG(st));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The start of main(): with FAKE_SCENARIO set, play that scenario (scenario(name), ended
 * by an alarm after scenario_seconds) and exit with its verdict; nothing may have
 * allocated before. Otherwise return, with an alarm after seconds for the cmocka group
 * main runs then. */
static TH_UNUSED void scenario_or_tests(int (*scenario)(const char *), unsigned scenario_seconds, unsigned seconds)
{
	const char *name = getenv("FAKE_SCENARIO");
	if (name) {
		alarm(scenario_seconds);
		CHECK(atomic_load(&rampart_state) == STATE_NEW);
		exit(scenario(name));
	}
	alarm(seconds);
}

#endif
