/* churn: random malloc/free over a fixed number of live slots.
 *
 *   churn ITERATIONS SLOTS MIN_SIZE MAX_SIZE [THREADS [PASSES]]
 *
 * Each thread owns SLOTS slots.  Every iteration picks a random slot, checks
 * and frees the block it holds (if any) and puts a new block of a
 * log-uniform random size in [MIN_SIZE, MAX_SIZE] there, filled with a tag
 * derived from the slot and its generation.  Threads share nothing but the
 * allocator.  At the end every remaining block is checked and freed.
 *
 * PASSES=1 makes the program itself do the two passes a zeroing hardened
 * allocator makes over what was asked for: it zeroes a block before freeing
 * it and reads a new block through before filling it.  Run under glibc, that
 * is the floor the issue "Speed" holds rampart's `mid` to (glibc's own work
 * plus the wipe at free and the write-after-free check), measured on the same
 * machine in the same run instead of typed in.  The checksum is the same.
 */
#include "common.h"

#include <pthread.h>

struct slot {
    unsigned char *p;
    size_t n;
    uint64_t tag;
};

struct job {
    long iters;
    long nslots;
    size_t lo, hi;
    uint64_t seed;
    uint64_t sum;
    int sample; /* this thread samples /proc/self/maps */
    int passes; /* do the wipe and the read-through check ourselves */
    uint64_t scanned; /* what the read-through saw, kept so it is not optimised away */
};

/* Every byte of the block is read, as a check that stops only on a non-zero
 * byte it would report; what glibc hands back is not zero, so the bytes are
 * OR-ed together instead of compared, and the result is kept. */
static uint64_t read_through(const unsigned char *p, size_t n)
{
    uint64_t acc = 0, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        acc |= w;
    }
    for (; i < n; i++)
        acc |= p[i];
    return acc;
}

static void *run(void *arg)
{
    struct job *j = arg;
    struct slot *slots = xcalloc((size_t)j->nslots, sizeof *slots);
    uint64_t rng = j->seed;
    uint64_t sum = 0;
    long sample_every = j->iters / 16 + 1;

    for (long it = 0; it < j->iters; it++) {
        struct slot *s = &slots[rng_below(&rng, (uint64_t)j->nslots)];
        if (s->p != NULL) {
            block_check(s->p, s->n, s->tag);
            sum += s->tag ^ s->n;
            if (j->passes)
                memset(s->p, 0, s->n);
            xfree(s->p);
        }
        s->n = rng_size(&rng, j->lo, j->hi);
        s->tag = mix64(j->seed ^ ((uint64_t)it << 20) ^ (uint64_t)(s - slots));
        s->p = xmalloc(s->n);
        if (j->passes)
            j->scanned |= read_through(s->p, s->n);
        block_fill(s->p, s->n, s->tag);
        if (j->sample && it % sample_every == sample_every - 1)
            sample_vmas();
    }
    for (long i = 0; i < j->nslots; i++) {
        struct slot *s = &slots[i];
        if (s->p != NULL) {
            block_check(s->p, s->n, s->tag);
            sum += s->tag ^ s->n;
            xfree(s->p);
        }
    }
    xfree(slots);
    j->sum = sum;
    ops_add();
    return NULL;
}

int main(int argc, char **argv)
{
    long iters = arg_long(argc, argv, 1, 1000000);
    long nslots = arg_long(argc, argv, 2, 10000);
    long lo = arg_long(argc, argv, 3, 8);
    long hi = arg_long(argc, argv, 4, 1024);
    long nthreads = arg_long(argc, argv, 5, 1);
    long passes = arg_long(argc, argv, 6, 0);
    if (lo > hi || nthreads > 64 || passes > 1) {
        fprintf(stderr, "usage: churn ITERATIONS SLOTS MIN_SIZE MAX_SIZE [THREADS<=64 [PASSES=1]]\n");
        return 2;
    }

    struct job jobs[64];
    pthread_t tids[64];
    for (long t = 0; t < nthreads; t++) {
        jobs[t] = (struct job){ .iters = iters, .nslots = nslots, .lo = (size_t)lo,
                                .hi = (size_t)hi, .seed = mix64(0x5eed0000u + (uint64_t)t),
                                .sum = 0, .sample = t == 0, .passes = (int)passes };
    }
    if (nthreads == 1) {
        run(&jobs[0]);
    } else {
        for (long t = 0; t < nthreads; t++) {
            if (pthread_create(&tids[t], NULL, run, &jobs[t]) != 0) {
                fprintf(stderr, "pthread_create failed\n");
                return 2;
            }
        }
        for (long t = 0; t < nthreads; t++)
            pthread_join(tids[t], NULL);
    }
    uint64_t sum = 0, scanned = 0;
    for (long t = 0; t < nthreads; t++) {
        sum += jobs[t].sum;
        scanned |= jobs[t].scanned;
    }
    /* Only to keep the read-through: the compiler must assume this uses it. */
    __asm__ volatile("" : : "r"(scanned));
    report("churn", sum);
    return 0;
}
