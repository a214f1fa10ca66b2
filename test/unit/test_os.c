/* test_os.c — the syscall layer (Check): errno is never changed, VMA extents are found
 * without side effects, and a no-replace mapping never lands on anything. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_main.h"
#include "../harness.h"
#include "os/lock.h"
#include "base/report.h"
#include "os/os.h"

#define SENTINEL 2718

static size_t pg;

static void setup(void)
{
	os_init();
	pg = os_page;
}

/* A warning is written even when stderr is gone, and errno stays. */
START_TEST(test_warn_keeps_errno)
{
	int saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	close(STDERR_FILENO); /* the write fails with EBADF */
	errno = SENTINEL;
	report_warn(WARN_OPTION, "test warning");
	int after = errno;
	dup2(saved, STDERR_FILENO);
	close(saved);
	ck_assert_int_eq(after, SENTINEL);
	errno = SENTINEL;
	report_warn(WARN_OPTION, "test warning to a live stderr: ignore");
	ck_assert_int_eq(errno, SENTINEL);
}
END_TEST

/* Three VMAs (read-write, read-only, read-write) in one mapping of 12 pages. */
START_TEST(test_one_mapping)
{
	unsigned char *p = mmap(NULL, 12 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(p != MAP_FAILED);
	memset(p, 7, 12 * pg);
	ck_assert_int_eq(mprotect(p + 4 * pg, 3 * pg, PROT_READ), 0);
	errno = SENTINEL;
	ck_assert_uint_eq(os_one_mapping(p, 12 * pg), 4 * pg);
	ck_assert_uint_eq(os_one_mapping(p, 3 * pg), 3 * pg);
	ck_assert_uint_eq(os_one_mapping(p + pg, 11 * pg), 3 * pg);
	ck_assert_uint_eq(os_one_mapping(p + 4 * pg, 8 * pg), 3 * pg);
	ck_assert_uint_eq(os_one_mapping(p + 7 * pg, 4 * pg), 4 * pg);
	ck_assert_int_eq(errno, SENTINEL);
	/* Nothing moved, grew or changed. */
	for (size_t i = 0; i < 12 * pg; i += 512) ck_assert_int_eq(p[i], 7);
	ck_assert_int_eq(probe_write(p + 5 * pg), EFAULT);
	ck_assert(accessible(p + 11 * pg));
	munmap(p, 12 * pg);
}
END_TEST

START_TEST(test_map_noreplace)
{
	void *p = NULL;
	ck_assert_int_eq(os_map(&p, 4 * pg, OS_READ_WRITE, OS_ANYWHERE), 0);
	memset(p, 9, 4 * pg);
	void *at = (char *)p + pg;
	errno = SENTINEL;
	ck_assert_int_eq(os_map(&at, pg, OS_RESERVED, OS_NOREPLACE), EEXIST);
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_ptr_eq(at, (char *)p + pg);
	ck_assert_int_eq(((unsigned char *)p)[pg], 9);
	/* Into a hole it lands exactly. */
	ck_assert_int_eq(os_unmap(at, pg), 0);
	ck_assert_int_eq(os_map(&at, pg, OS_RESERVED, OS_NOREPLACE), 0);
	ck_assert_ptr_eq(at, (char *)p + pg);
	ck_assert(inaccessible(at));
	ck_assert_int_eq(os_unmap(p, 4 * pg), 0);
}
END_TEST

/* os_range_free: true over a hole, which stays a hole; false where anything overlaps,
 * which keeps its contents; errno untouched. */
START_TEST(test_range_free)
{
	unsigned char *p = NULL;
	ck_assert_int_eq(os_map((void **)&p, 8 * pg, OS_READ_WRITE, OS_ANYWHERE), 0);
	memset(p, 7, 8 * pg);
	ck_assert_int_eq(os_unmap(p + 2 * pg, 4 * pg), 0);
	int vmas = count_vmas();
	errno = SENTINEL;
	ck_assert(os_range_free((uintptr_t)p + 2 * pg, (uintptr_t)p + 6 * pg));
	ck_assert(!os_range_free((uintptr_t)p + pg, (uintptr_t)p + 3 * pg));
	ck_assert(!os_range_free((uintptr_t)p + 5 * pg, (uintptr_t)p + 7 * pg));
	ck_assert(!os_range_free((uintptr_t)p, (uintptr_t)p + 8 * pg));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(count_vmas(), vmas);
	ck_assert(inaccessible(p + 2 * pg) && inaccessible(p + 5 * pg));
	ck_assert_int_eq(p[pg], 7);
	ck_assert_int_eq(p[6 * pg], 7);
	void *hole = p + 2 * pg;
	ck_assert_int_eq(os_map(&hole, 4 * pg, OS_RESERVED, OS_NOREPLACE), 0); /* still empty */
	ck_assert_int_eq(os_unmap(p, 8 * pg), 0);
}
END_TEST

/* Where the kernel will not map the span to ask (here RLIMIT_AS), /proc/self/maps answers. */
START_TEST(test_range_free_under_limit)
{
	size_t big = (size_t)1 << 30;
	void *hole = NULL;
	ck_assert_int_eq(os_map(&hole, big, OS_RESERVED, OS_ANYWHERE), 0);
	ck_assert_int_eq(os_unmap(hole, big), 0);
	unsigned char *m = NULL;
	ck_assert_int_eq(os_map((void **)&m, pg, OS_READ_WRITE, OS_ANYWHERE), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* Room for what is mapped now and a little more, never for the probe. */
		struct rlimit rl = {(rlim_t)vm_size_pages() * pg + 64 * pg, RLIM_INFINITY};
		int ok = setrlimit(RLIMIT_AS, &rl) == 0;
		void *try = NULL;
		ok = ok && os_map(&try, big, OS_RESERVED, OS_ANYWHERE) == ENOMEM;
		ok = ok && os_range_free((uintptr_t)hole, (uintptr_t)hole + big);
		ok = ok && !os_range_free((uintptr_t)m - big / 2, (uintptr_t)m + big / 2);
		_exit(ok ? 0 : 1);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	ck_assert_int_eq(os_unmap(m, pg), 0);
}
END_TEST

/* os_resident counts resident pages exactly, or stops early, below need, once the
 * pages left could not bring the count to need; errno untouched. */
START_TEST(test_resident_stops_early)
{
	size_t n = 4096 * pg; /* four of its 1024-page mincore calls */
	void *p = NULL;
	ck_assert_int_eq(os_map(&p, n, OS_READ_WRITE, OS_ANYWHERE), 0);
	unsigned char *b = p;
	for (size_t i = 0; i < 10; i++) b[i * pg] = 1;
	b[n - 1] = 1; /* the last page */
	errno = SENTINEL;
	ck_assert_uint_eq(os_resident(p, n, 0), 11 * pg);
	ck_assert_uint_eq(os_resident(p, n, 11 * pg), 11 * pg);
	/* Half of it cannot be reached: the count stops before the last page. */
	ck_assert_uint_eq(os_resident(p, n, n / 2), 10 * pg);
	ck_assert_int_eq(errno, SENTINEL);
	/* The same pass counts both ends, also across its 1024-page calls. */
	size_t ends[2] = {99, 99};
	ck_assert_uint_eq(os_resident_ends(p, n, 0, 5 * pg, 2 * pg, ends), 11 * pg);
	ck_assert_uint_eq(ends[0], 5 * pg);
	ck_assert_uint_eq(ends[1], pg);
	ck_assert_uint_eq(os_resident_ends(p, n, 11 * pg, 2000 * pg, 3000 * pg, ends), 11 * pg);
	ck_assert_uint_eq(ends[0], 10 * pg);
	ck_assert_uint_eq(ends[1], pg);
	ck_assert_uint_eq(os_resident_ends(p, n, 0, 0, 0, ends), 11 * pg);
	ck_assert_uint_eq(ends[0] + ends[1], 0);
	ck_assert_int_eq(errno, SENTINEL);
	/* One os_residency read, counted as often as wanted, says what os_resident_ends
	 * says (the light variant's free counts credit, keep and wipe from one read). */
	static unsigned char vec[4096];
	ck_assert(os_residency(p, n, vec));
	ck_assert_uint_eq(os_resident_counted(vec, n, 0, 0, NULL), 11 * pg);
	ck_assert_uint_eq(os_resident_counted(vec, n, 2000 * pg, 3000 * pg, ends), 11 * pg);
	ck_assert_uint_eq(ends[0], 10 * pg);
	ck_assert_uint_eq(ends[1], pg);
	ck_assert_uint_eq(os_resident_counted(vec, 12 * pg, 0, 0, NULL), 10 * pg);
	ck_assert(!os_residency((char *)p + 1, pg, vec)); /* not page-aligned: refused */
	ck_assert_int_eq(errno, SENTINEL);
	memset(p, 2, n);
	ck_assert_uint_eq(os_resident(p, n, n / 2), n);
	ck_assert_int_eq(os_unmap(p, n), 0);
}
END_TEST

/* Single-threaded until a second thread is made, and not again after it ends (the fork
 * handlers skip their locks only while true). Where the C library cannot tell: false. */
static void *nothing(void *arg) { return arg; }

START_TEST(test_single_threaded)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
	ck_assert(os_single_threaded());
#endif
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, nothing, NULL), 0);
	ck_assert(!os_single_threaded());
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert(!os_single_threaded());
}
END_TEST

/* A lock is elided while the process has one thread: no atomic, its word set and
 * cleared without one, and a try fails while it is held. Once a second thread exists
 * it excludes again: a try fails while another thread holds it, and a waiter gets it
 * when it is given back. */
static struct lock held_lock;
static _Atomic int held_phase;

static void *hold_lock(void *arg)
{
	lock_take(&held_lock);
	atomic_store(&held_phase, 1);
	while (atomic_load(&held_phase) != 2) usleep(100);
	usleep(20000); /* the main thread is waiting by now */
	lock_give(&held_lock);
	return arg;
}

START_TEST(test_lock_elided_while_single_threaded)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
	struct lock l = {0};
	lock_take(&l);
	ck_assert_uint_eq(atomic_load(&l.word), 1);
	ck_assert(!lock_try(&l));
	lock_give(&l);
	ck_assert_uint_eq(atomic_load(&l.word), 0);
	ck_assert(lock_try(&l));
	lock_give(&l);
	ck_assert_uint_eq(atomic_load(&l.waiters), 0);
#endif
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, hold_lock, NULL), 0);
	while (atomic_load(&held_phase) != 1) usleep(100);
	ck_assert(!lock_try(&held_lock));
	atomic_store(&held_phase, 2);
	lock_take(&held_lock); /* waits for the holder's give */
	ck_assert_uint_ne(atomic_load(&held_lock.word), 0);
	ck_assert(!lock_try(&held_lock));
	lock_give(&held_lock);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert(lock_try(&held_lock));
	lock_give(&held_lock);
	ck_assert_uint_eq(atomic_load(&held_lock.word), 0);
}
END_TEST

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32) && defined(__x86_64__) && \
	defined(__GCC_ASM_FLAG_OUTPUTS__)
#define FIRST_TAKE_ONE_FAULT 1
/* The first take of a lock on a page nobody has written is one page fault, not two
 * (lock_word_test_and_set says why). Only where the elided take is one instruction. */
START_TEST(test_lock_first_take_one_fault)
{
	ck_assert(os_single_threaded());
	char *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	struct lock *l = (struct lock *)(void *)(p + 64);
	/* Nothing between the two samples but the take: no assertion (Check's bookkeeping
	 * may write a page of its own). */
	struct rusage before, after;
	int rc_before = getrusage(RUSAGE_SELF, &before);
	lock_take(l);
	int rc_after = getrusage(RUSAGE_SELF, &after);
	ck_assert_int_eq(rc_before, 0);
	ck_assert_int_eq(rc_after, 0);
	ck_assert_uint_eq(atomic_load(&l->word), 1);
	lock_give(l);
	ck_assert_int_eq(after.ru_minflt - before.ru_minflt, 1);
	ck_assert_int_eq(munmap(p, pg), 0);
}
END_TEST
#endif

/* A take of a lock the calling thread holds (a signal handler that re-entered the
 * allocator) is fatal: alone, it finds the word set; with other threads, it finds its own
 * mark there. Before, the first went on inside the critical section and the second
 * waited for itself for good. */
START_TEST(test_lock_reentered_alone)
{
	static struct lock l;
	lock_take(&l);
	lock_take(&l);
}
END_TEST

static void *idle(void *arg)
{
	pause();
	return arg;
}

START_TEST(test_lock_reentered_threads)
{
	static struct lock l;
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, idle, NULL), 0);
	ck_assert(!os_single_threaded());
	lock_owner_init();
	ck_assert_uint_ne(lock_owner, 0);
	lock_take(&l);
	ck_assert_uint_eq(atomic_load(&l.word), lock_owner);
	lock_take(&l);
}
END_TEST

/* Contended: threads that take the lock in turn never lose an update, every waiter
 * gets it (a lost wake-up costs a bounded sleep, not a hang), and the lock ends free
 * with no waiter counted. */
enum { CONTENDERS = 4, ROUNDS = 200000 };
static struct lock contended_lock;
static unsigned long contended_count; /* plain: only the holder touches it */

static void *contend(void *arg)
{
	errno = SENTINEL; /* the waits' EAGAIN, EINTR and ETIMEDOUT must not show */
	for (int i = 0; i < ROUNDS; i++) {
		lock_take(&contended_lock);
		contended_count++;
		if (i % 1000 == 0) usleep(10); /* hold it a while now and then: others sleep */
		lock_give(&contended_lock);
	}
	return errno == SENTINEL ? arg : NULL;
}

START_TEST(test_lock_contended)
{
	pthread_t th[CONTENDERS];
	static int ok;
	for (int t = 0; t < CONTENDERS; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, contend, &ok), 0);
	for (int t = 0; t < CONTENDERS; t++) {
		void *res = NULL;
		ck_assert_int_eq(pthread_join(th[t], &res), 0);
		ck_assert_ptr_eq(res, &ok);
	}
	ck_assert_uint_eq(contended_count, (unsigned long)CONTENDERS * ROUNDS);
	ck_assert_uint_eq(atomic_load(&contended_lock.word), 0);
	ck_assert_uint_eq(atomic_load(&contended_lock.waiters), 0);
}
END_TEST


int main(void)
{
	Suite *s = suite_create("os");
	TCase *t = tcase_create("os");
	tcase_add_checked_fixture(t, setup, NULL);
	tcase_add_test(t, test_warn_keeps_errno);
	tcase_add_test(t, test_one_mapping);
	tcase_add_test(t, test_map_noreplace);
	tcase_add_test(t, test_range_free);
	tcase_add_test(t, test_range_free_under_limit);
	tcase_add_test(t, test_resident_stops_early);
	tcase_add_test(t, test_single_threaded);
	tcase_add_test(t, test_lock_elided_while_single_threaded);
#ifdef FIRST_TAKE_ONE_FAULT
	tcase_add_test(t, test_lock_first_take_one_fault);
#endif
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
	tcase_add_test_raise_signal(t, test_lock_reentered_alone, SIGABRT);
#endif
	tcase_add_test_raise_signal(t, test_lock_reentered_threads, SIGABRT);
	tcase_add_test(t, test_lock_contended);
	suite_add_tcase(s, t);
	return run_suite(s);
}
