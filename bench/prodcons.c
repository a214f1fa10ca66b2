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

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

struct msg {
    uint64_t tag;
    size_t n; /* total size of the block, header included */
};

static long nmsgs;
static size_t depth; /* power of two */
static struct msg **ring;
static _Atomic size_t head; /* next slot the producer writes */
static _Atomic size_t tail; /* next slot the consumer reads */

static void backoff(unsigned *spins)
{
    if (++*spins > 64) {
        sched_yield();
        *spins = 0;
    }
}

static void *producer(void *arg)
{
    (void)arg;
    uint64_t rng = 0x70726f64u;
    size_t h = 0;
    for (long i = 0; i < nmsgs; i++) {
        size_t n = rng_size(&rng, 32, 2048);
        uint64_t tag = mix64((uint64_t)i ^ 0xabcdef);
        struct msg *m = xmalloc(n);
        memset(m, (int)(tag & 0xff), n);
        m->tag = tag;
        m->n = n;
        ((unsigned char *)m)[n - 1] = (unsigned char)(tag >> 8);
        unsigned spins = 0;
        while (h - atomic_load_explicit(&tail, memory_order_acquire) >= depth)
            backoff(&spins);
        ring[h & (depth - 1)] = m;
        atomic_store_explicit(&head, ++h, memory_order_release);
    }
    return NULL;
}

static uint64_t consumed_sum;

static void *consumer(void *arg)
{
    (void)arg;
    uint64_t rng = 0x636f6e73u;
    uint64_t sum = 0;
    size_t t = 0;
    void *window[8] = { 0 };
    for (long i = 0; i < nmsgs; i++) {
        unsigned spins = 0;
        while (atomic_load_explicit(&head, memory_order_acquire) == t)
            backoff(&spins);
        struct msg *m = ring[t & (depth - 1)];
        atomic_store_explicit(&tail, ++t, memory_order_release);

        uint64_t tag = mix64((uint64_t)i ^ 0xabcdef);
        unsigned char *p = (unsigned char *)m;
        if (m->tag != tag)
            die_corrupt("message tag", m->tag, tag);
        if (p[m->n - 1] != (unsigned char)(tag >> 8))
            die_corrupt("message tail", p[m->n - 1], (unsigned char)(tag >> 8));
        if (m->n > 17 && p[16 + (tag >> 16) % (m->n - 17)] != (unsigned char)tag)
            die_corrupt("message body", p[16 + (tag >> 16) % (m->n - 17)], tag & 0xff);
        sum += tag ^ m->n;
        free(m);

        /* consumer-side scratch allocations, freed a few messages later */
        size_t k = (size_t)(i & 7);
        free(window[k]);
        size_t sn = rng_size(&rng, 16, 256);
        window[k] = xmalloc(sn);
        memset(window[k], (int)(i & 0xff), sn);
        if (i % (nmsgs / 8 + 1) == 0)
            sample_vmas();
    }
    for (size_t k = 0; k < 8; k++)
        free(window[k]);
    consumed_sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    nmsgs = arg_long(argc, argv, 1, 1000000);
    long d = arg_long(argc, argv, 2, 1024);
    depth = 1;
    while (depth < (size_t)d)
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
    free(ring);
    report("prodcons", consumed_sum);
    return 0;
}
