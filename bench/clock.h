/* clock.h — what the measuring programs of bench/ read around the loop they time: the
 * monotonic clock in nanoseconds, and the process's minor page faults so far. One copy
 * for every program (launch, usable, large_reuse, large_sites). */
#ifndef RAMPART_BENCH_CLOCK_H
#define RAMPART_BENCH_CLOCK_H

#include <sys/resource.h>
#include <time.h>

static inline long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Microseconds, for loops timed per block. */
static inline double now_us(void)
{
	return (double)now_ns() / 1e3;
}

static inline long minor_faults(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

#endif
