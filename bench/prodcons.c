/* prodcons: producer/consumer with cross-thread frees.
 *
 *   prodcons MESSAGES [QUEUE_DEPTH]
 *
 * The producer allocates messages of log-uniform random size in
 * [32, 2048] bytes, fills them and hands them over a single-producer /
 * single-consumer ring; the consumer checks and frees them, so every free
 * happens on a thread other than the one that allocated.  The consumer also
 * keeps a small window of its own short-lived allocations, as a real consumer
 * would (parsing, building replies).
 */
#include "common.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

struct msg {
    uint64_t tag;
    size_t n; /* total size of the block, header included */
};

/* The ring's counters are 32-bit so that a thread can sleep on them with
 * futex(2): a side that finds the ring full (or empty) spins briefly, then
 * sleeps until the other side has made room for (or published) a quarter of
 * the ring.  Sleeping instead of yielding keeps the time stable when the two
 * threads share one CPU. */
static uint32_t nmsgs;
static uint32_t depth; /* power of two */
static struct msg **ring;
static _Atomic uint32_t head; /* messages published by the producer */
static _Atomic uint32_t tail; /* messages taken by the consumer */
static _Atomic uint32_t prod_waiting, prod_target;
static _Atomic uint32_t cons_waiting, cons_target;

static void futex_wait(_Atomic uint32_t *addr, uint32_t seen)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Wait until *counter has reached target (counters compare modulo 2^32). */
static void wait_for(_Atomic uint32_t *counter, uint32_t target, _Atomic uint32_t *waiting,
                     _Atomic uint32_t *want)
{
    for (unsigned spins = 0; (int32_t)(atomic_load(counter) - target) < 0; spins++) {
        if (spins < 256)
            continue;
        atomic_store(want, target);
        atomic_store(waiting, 1);
        uint32_t seen = atomic_load(counter);
        if ((int32_t)(seen - target) < 0)
            futex_wait(counter, seen);
        atomic_store(waiting, 0);
    }
}

/* After advancing *counter to now: wake the other side if it sleeps for it. */
static void publish(_Atomic uint32_t *counter, uint32_t now, _Atomic uint32_t *waiting,
                    _Atomic uint32_t *want)
{
    atomic_store(counter, now);
    if (atomic_load(waiting) && (int32_t)(now - atomic_load(want)) >= 0) {
        atomic_store(waiting, 0);
        futex_wake(counter);
    }
}

static void *producer(void *arg)
{
    (void)arg;
    uint64_t rng = 0x70726f64u;
    for (uint32_t i = 0; i < nmsgs; i++) {
        size_t n = rng_size(&rng, 32, 2048);
        uint64_t tag = mix64((uint64_t)i ^ 0xabcdef);
        struct msg *m = xmalloc(n);
        memset(m, (int)(tag & 0xff), n);
        m->tag = tag;
        m->n = n;
        ((unsigned char *)m)[n - 1] = (unsigned char)(tag >> 8);
        if (i - atomic_load(&tail) >= depth) /* full: wait for a quarter to drain */
            wait_for(&tail, i - depth + depth / 4, &prod_waiting, &prod_target);
        ring[i & (depth - 1)] = m;
        publish(&head, i + 1, &cons_waiting, &cons_target);
    }
    ops_add();
    return NULL;
}

static uint64_t consumed_sum;

static void *consumer(void *arg)
{
    (void)arg;
    uint64_t rng = 0x636f6e73u;
    uint64_t sum = 0;
    void *window[8] = { 0 };
    for (uint32_t i = 0; i < nmsgs; i++) {
        if (atomic_load(&head) == i) { /* empty: wait for a quarter ring */
            uint32_t want = nmsgs - i < depth / 4 ? nmsgs - i : depth / 4;
            wait_for(&head, i + want, &cons_waiting, &cons_target);
        }
        struct msg *m = ring[i & (depth - 1)];
        publish(&tail, i + 1, &prod_waiting, &prod_target);

        uint64_t tag = mix64((uint64_t)i ^ 0xabcdef);
        unsigned char *p = (unsigned char *)m;
        if (m->tag != tag)
            die_corrupt("message tag", m->tag, tag);
        if (p[m->n - 1] != (unsigned char)(tag >> 8))
            die_corrupt("message tail", p[m->n - 1], (unsigned char)(tag >> 8));
        if (m->n > 17 && p[16 + (tag >> 16) % (m->n - 17)] != (unsigned char)tag)
            die_corrupt("message body", p[16 + (tag >> 16) % (m->n - 17)], tag & 0xff);
        sum += tag ^ m->n;
        xfree(m);

        /* consumer-side scratch allocations, freed a few messages later */
        size_t k = (size_t)(i & 7);
        xfree(window[k]);
        size_t sn = rng_size(&rng, 16, 256);
        window[k] = xmalloc(sn);
        memset(window[k], (int)(i & 0xff), sn);
        if (i % (nmsgs / 8 + 1) == 0)
            sample_vmas();
    }
    for (size_t k = 0; k < 8; k++)
        xfree(window[k]);
    consumed_sum = sum;
    ops_add();
    return NULL;
}

int main(int argc, char **argv)
{
    long n = arg_long(argc, argv, 1, 1000000);
    long d = arg_long(argc, argv, 2, 1024);
    if (n > (1L << 30) || d > (1L << 20) || d < 4) {
        fprintf(stderr, "usage: prodcons MESSAGES<=2^30 [QUEUE_DEPTH in 4..2^20]\n");
        return 2;
    }
    nmsgs = (uint32_t)n;
    depth = 4;
    while (depth < (uint32_t)d)
        depth <<= 1;
    ring = xcalloc(depth, sizeof *ring);

    pthread_t pt, ct;
    if (pthread_create(&ct, NULL, consumer, NULL) != 0 ||
        pthread_create(&pt, NULL, producer, NULL) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return 2;
    }
    pthread_join(pt, NULL);
    pthread_join(ct, NULL);
    xfree(ring);
    report("prodcons", consumed_sum);
    return 0;
}
