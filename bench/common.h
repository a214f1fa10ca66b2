/* Shared helpers for the rampart benchmark workloads.
 *
 * Every workload is a standalone program: it takes its size/iteration
 * parameters on the command line, verifies the data it wrote, exits with
 * status 1 (after one "corrupt: ..." line on stderr) when a check fails, and
 * prints a checksum that depends only on its parameters, never on addresses
 * or timing, so the driver can compare it across allocators.  It also prints
 * "vmas=N": the largest number of lines it saw in /proc/self/maps at the
 * points where it holds the most memory, and "ops=N": how many allocator
 * calls (malloc, calloc, realloc, free, free(NULL) included) it made, which
 * the driver divides page faults and memory system calls by.  Both lines are
 * left out of the checksum comparison.
 */
#ifndef RAMPART_BENCH_COMMON_H
#define RAMPART_BENCH_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* splitmix64: small, fast, deterministic */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t mix64(uint64_t x)
{
    uint64_t s = x;
    return rng_next(&s);
}

/* Uniform in [0, n) (n > 0); the tiny modulo bias does not matter here. */
static inline uint64_t rng_below(uint64_t *s, uint64_t n)
{
    return rng_next(s) % n;
}

/* Log-uniform size in [lo, hi]: as many requests between 8 and 16 bytes as
 * between 512 and 1024, like real programs where small sizes dominate. */
static inline size_t rng_size(uint64_t *s, size_t lo, size_t hi)
{
    unsigned lo_bits = 63u - (unsigned)__builtin_clzll((unsigned long long)lo);
    unsigned top = 63u - (unsigned)__builtin_clzll((unsigned long long)hi);
    if ((hi & (hi - 1)) == 0 && top > lo_bits)
        top--;
    unsigned b = lo_bits + (unsigned)rng_below(s, top - lo_bits + 1u);
    size_t base = (size_t)1 << b;
    size_t span = hi - base < base ? hi - base : base;
    size_t v = base + (size_t)rng_below(s, span + 1);
    return v < lo ? lo : v;
}

__attribute__((noreturn)) static inline void die_corrupt(const char *what, uint64_t a, uint64_t b)
{
    fprintf(stderr, "corrupt: %s (0x%" PRIx64 " vs 0x%" PRIx64 ")\n", what, a, b);
    fflush(stderr);
    exit(1);
}

/* Allocator calls made by this thread through the x* wrappers below; a thread
 * adds its count to a shared total before it ends (see ops_add). */
static _Thread_local uint64_t bench_thread_ops;

static inline void *xmalloc(size_t n)
{
    bench_thread_ops++;
    void *p = malloc(n);
    if (p == NULL) {
        fprintf(stderr, "out of memory: malloc(%zu)\n", n);
        exit(2);
    }
    return p;
}

static inline void *xcalloc(size_t n, size_t m)
{
    bench_thread_ops++;
    void *p = calloc(n, m);
    if (p == NULL) {
        fprintf(stderr, "out of memory: calloc(%zu, %zu)\n", n, m);
        exit(2);
    }
    return p;
}

static inline void *xrealloc(void *old, size_t n)
{
    bench_thread_ops++;
    void *p = realloc(old, n);
    if (p == NULL) {
        fprintf(stderr, "out of memory: realloc(%zu)\n", n);
        exit(2);
    }
    return p;
}

static inline void xfree(void *p)
{
    bench_thread_ops++;
    free(p);
}

/* Total allocator calls of all threads: each thread calls ops_add() once,
 * after its last allocator call. */
static uint64_t bench_ops;

static inline void ops_add(void)
{
    __atomic_fetch_add(&bench_ops, bench_thread_ops, __ATOMIC_RELAXED);
    bench_thread_ops = 0;
}

/* Fill a block like a program that initialises what it asked for, without
 * letting memset dominate the time of big blocks: an 8-byte tag at the
 * start (when the block has 16 bytes or more), the tag's low byte over the first 1 KiB and then at
 * every 4 KiB step (so each page of the block is written once), and the
 * tag's second byte as the last byte. */
#define FILL_DENSE 1024u
#define FILL_STRIDE 4096u

static inline void block_fill(unsigned char *p, size_t n, uint64_t tag)
{
    unsigned char body = (unsigned char)tag;
    size_t dense = n < FILL_DENSE ? n : FILL_DENSE;
    if (n >= 16) {
        memcpy(p, &tag, 8);
        memset(p + 8, body, dense - 8);
    } else {
        memset(p, body, n);
    }
    for (size_t i = FILL_STRIDE; i < n; i += FILL_STRIDE)
        p[i] = body;
    p[n - 1] = (unsigned char)(tag >> 8);
}

/* Check the tag, the last byte and one body byte picked from the tag. */
static inline void block_check(const unsigned char *p, size_t n, uint64_t tag)
{
    if (n >= 16) {
        uint64_t t;
        memcpy(&t, p, 8);
        if (t != tag)
            die_corrupt("block tag", t, tag);
    }
    if (p[n - 1] != (unsigned char)(tag >> 8))
        die_corrupt("block tail", p[n - 1], (unsigned char)(tag >> 8));
    if (n > 9) {
        size_t i;
        if (n <= FILL_DENSE + 1)
            i = 8 + (size_t)((tag >> 16) % (n - 9));
        else if (n > FILL_STRIDE + 1)
            i = FILL_STRIDE * (1 + (size_t)((tag >> 16) % ((n - 2) / FILL_STRIDE)));
        else
            i = 8 + (size_t)((tag >> 16) % (FILL_DENSE - 8));
        if (p[i] != (unsigned char)tag)
            die_corrupt("block body", p[i], tag & 0xff);
    }
}

/* Lines in /proc/self/maps, read with plain syscalls and a stack buffer so
 * counting does not allocate.  Returns 0 when the file is unreadable. */
static inline long count_vmas(void)
{
    char buf[16384];
    long lines = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; i < r; i++)
            lines += buf[i] == '\n';
    }
    close(fd);
    return lines;
}

static long bench_max_vmas;

static inline void sample_vmas(void)
{
    long v = count_vmas();
    if (v > bench_max_vmas)
        bench_max_vmas = v;
}

static inline long arg_long(int argc, char **argv, int i, long dflt)
{
    if (i < argc) {
        char *end;
        long v = strtol(argv[i], &end, 0);
        if (*end != '\0' || v <= 0) {
            fprintf(stderr, "bad argument %d: %s\n", i, argv[i]);
            exit(2);
        }
        return v;
    }
    return dflt;
}

/* The last output of a workload: checksum, VMAs at peak, allocator calls
 * (the main thread's own count is added here). */
static inline void report(const char *name, uint64_t checksum)
{
    sample_vmas();
    ops_add();
    printf("%s checksum=%016" PRIx64 "\nvmas=%ld\nops=%" PRIu64 "\n", name, checksum,
           bench_max_vmas, __atomic_load_n(&bench_ops, __ATOMIC_RELAXED));
}

#endif
