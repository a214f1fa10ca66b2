/*
 * reentry_death — malloc called from a signal handler that interrupted malloc (undefined
 * behaviour, which crash handlers commit) must end in one fatal line that says so, not
 * in metadata changed under the interrupted call's feet (one thread: the locks are
 * elided) nor in a thread waiting for itself for good (threads).
 *
 * No program can raise a signal at a chosen instruction inside the allocator, so each
 * case churns blocks of one size class while a CPU-time timer (SIGPROF, every tick or
 * so) runs a handler that allocates and frees a block of the same class. Most ticks
 * land inside the class's critical section; the first that does must be fatal. The
 * churn is bounded by a count, not a time: a build that misses the re-entry finishes it
 * and exits 0 (or dies of something else), which fails the case; the harness's alarm
 * ends a hang.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "../harness.h"

#define BYTES 48
#define CHURN 50000000L /* about a second or two of small churn: hundreds of ticks */

static void *volatile sink;

static void allocate_in_handler(int sig)
{
	(void)sig;
	int saved = errno;
	void *p = malloc(BYTES);
	sink = p;
	free(p);
	errno = saved;
}

static void churn_under_timer(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = allocate_in_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval every = {{0, 100}, {0, 100}}; /* rounded up to the kernel's tick */
	setitimer(ITIMER_PROF, &every, NULL);
	for (long i = 0; i < CHURN; i++) {
		void *p = malloc(BYTES);
		sink = p;
		free(p);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
}

static void reentry_one_thread(void) { churn_under_timer(); }

static void *idle(void *arg)
{
	pause();
	return arg;
}

/* With a second thread the locks are real: the handler's take finds this thread's
 * own mark in the word. The idle thread blocks SIGPROF, so every tick lands here. */
static void reentry_threads(void)
{
	sigset_t prof, old;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, &old);
	pthread_t th;
	if (pthread_create(&th, NULL, idle, NULL)) _exit(3);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	churn_under_timer();
}

/* The control: the same churn and timer with a handler that does not allocate. */
static void count_in_handler(int sig) { (void)sig; }
static void control(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = count_in_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval every = {{0, 100}, {0, 100}};
	setitimer(ITIMER_PROF, &every, NULL);
	for (long i = 0; i < CHURN / 10; i++) {
		void *p = malloc(BYTES);
		sink = p;
		free(p);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
}

#define SAYS "allocator re-entered"

static const struct death_case cases[] = {
	{"control: timer handler that does not allocate", control, DIE_NOT, NULL},
	{"malloc in a handler that interrupted malloc, one thread", reentry_one_thread, DIE_FATAL, SAYS},
	{"malloc in a handler that interrupted malloc, two threads", reentry_threads, DIE_FATAL, SAYS},
};

int main(void)
{
	free(malloc(BYTES)); /* start the allocator before the cases fork */
	return death_run_all(cases, sizeof cases / sizeof *cases);
}
