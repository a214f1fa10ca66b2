/* larson: a server whose threads free each other's blocks (after the Larson
 * and Krishnan benchmark, with a fixed amount of work instead of a time
 * limit).
 *
 *   larson ITERATIONS SLOTS MIN_SIZE MAX_SIZE THREADS
 *
 * THREADS threads share one array of THREADS x SLOTS slots; thread t owns
 * slots [t*SLOTS, (t+1)*SLOTS).  Every iteration a thread allocates a block
 * of log-uniform random size in [MIN_SIZE, MAX_SIZE] (MIN_SIZE >= 16), fills
 * it, and swaps it with an atomic exchange into a slot picked at random: one
 * of its own half of the time, one of another thread's the other half.  The
 * block it gets back (if any) is checked and freed.  A slot holds its owner's
 * block half the time, so with 4 threads about two thirds of the frees
 * release a block that another thread allocated (1/2 x 1/2 + 1/2 x 5/6), and
 * blocks keep moving between threads the way requests and replies do in a
 * server.  Each thread
 * makes ITERATIONS allocations; what is left in the slots at the end is
 * checked and freed by the main thread.
 *
 * A block carries its own identity (allocating thread and iteration) in its
 * first 8 bytes; its size and fill tag are derived from that identity.  Every
 * block is freed exactly once, so the sum over freed blocks is the same
 * whichever thread freed which block: the checksum depends only on the
 * parameters.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>

static long iters, nslots, nthreads;
static size_t lo, hi;
static _Atomic(unsigned char *) *slots;
static _Atomic uint64_t freed_blocks;

static inline uint64_t block_tag(uint64_t id)
{
    return mix64(id ^ 0x6c6172736f6eULL);
}

static inline size_t block_size(uint64_t tag)
{
    uint64_t s = tag;
    return rng_size(&s, lo, hi);
}

struct job {
    long t;
    uint64_t sum;
};

/* Check a block taken out of a slot, add it to *sum and free it. */
static void retire(unsigned char *p, uint64_t *sum)
{
    uint64_t id;
    memcpy(&id, p, 8);
    uint64_t thread = id >> 40, it = id & ((1ULL << 40) - 1);
    if (thread >= (uint64_t)nthreads || it >= (uint64_t)iters)
        die_corrupt("larson block id", id, (uint64_t)nthreads << 40);
    uint64_t tag = block_tag(id);
    size_t n = block_size(tag);
    block_check(p + 8, n - 8, tag);
    *sum += tag ^ n;
    xfree(p);
}

static void *run(void *arg)
{
    struct job *j = arg;
    uint64_t rng = mix64(0x6c72736eu + (uint64_t)j->t);
    uint64_t sum = 0, freed = 0;
    long sample_every = iters / 16 + 1;

    for (long it = 0; it < iters; it++) {
        uint64_t id = ((uint64_t)j->t << 40) | (uint64_t)it;
        uint64_t tag = block_tag(id);
        size_t n = block_size(tag);
        unsigned char *p = xmalloc(n);
        memcpy(p, &id, 8);
        block_fill(p + 8, n - 8, tag);

        uint64_t r = rng_next(&rng);
        long owner = j->t;
        if ((r & 1) && nthreads > 1)
            owner = (j->t + 1 + (long)((r >> 1) % (uint64_t)(nthreads - 1))) % nthreads;
        long slot = owner * nslots + (long)((r >> 17) % (uint64_t)nslots);
        unsigned char *old = atomic_exchange(&slots[slot], p);
        if (old != NULL) {
            retire(old, &sum);
            freed++;
        }
        if (j->t == 0 && it % sample_every == sample_every - 1)
            sample_vmas();
    }
    j->sum = sum;
    atomic_fetch_add(&freed_blocks, freed);
    ops_add();
    return NULL;
}

int main(int argc, char **argv)
{
    iters = arg_long(argc, argv, 1, 1000000);
    nslots = arg_long(argc, argv, 2, 1000);
    long min = arg_long(argc, argv, 3, 16);
    long max = arg_long(argc, argv, 4, 1024);
    nthreads = arg_long(argc, argv, 5, 4);
    if (min < 16 || min > max || nthreads > 64 || iters >= (1L << 40)) {
        fprintf(stderr, "usage: larson ITERATIONS<2^40 SLOTS MIN_SIZE>=16 MAX_SIZE THREADS<=64\n");
        return 2;
    }
    lo = (size_t)min;
    hi = (size_t)max;
    slots = xcalloc((size_t)(nthreads * nslots), sizeof *slots);

    struct job jobs[64];
    pthread_t tids[64];
    for (long t = 0; t < nthreads; t++) {
        jobs[t] = (struct job){ .t = t, .sum = 0 };
        if (pthread_create(&tids[t], NULL, run, &jobs[t]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 2;
        }
    }
    for (long t = 0; t < nthreads; t++)
        pthread_join(tids[t], NULL);

    uint64_t sum = 0, freed = atomic_load(&freed_blocks);
    for (long t = 0; t < nthreads; t++)
        sum += jobs[t].sum;
    for (long i = 0; i < nthreads * nslots; i++) {
        unsigned char *p = atomic_load(&slots[i]);
        if (p != NULL) {
            retire(p, &sum);
            freed++;
        }
    }
    if (freed != (uint64_t)(nthreads * iters))
        die_corrupt("larson blocks freed", freed, (uint64_t)(nthreads * iters));
    xfree((void *)slots);
    report("larson", sum);
    return 0;
}
