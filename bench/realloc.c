/* realloc: naive 25% growth of buffers up to a maximum size.
 *
 *   realloc ROUNDS [MAX_BYTES]
 *
 * Each round grows two buffers side by side from 16 bytes to MAX_BYTES
 * (default 64 MiB), each step asking realloc for 25% more, writing the new
 * words with a position-derived pattern and spot-checking the preserved
 * prefix.  Between steps a small record is allocated and kept, as a program
 * building a log or a document would, so the buffers do not sit alone at the
 * top of the heap.  At the end of a round both buffers are verified in full
 * and everything is freed.
 */
#include "common.h"

static inline uint64_t word_at(size_t i, uint64_t seed)
{
    return (uint64_t)i * 0x9e3779b97f4a7c15ULL + seed;
}

struct growing {
    uint64_t *w;
    size_t words;
    uint64_t seed;
};

static void spot_check(const struct growing *g, uint64_t *rng)
{
    size_t n = g->words;
    if (n == 0)
        return;
    size_t probes[4] = { 0, n - 1, (size_t)rng_below(rng, n), (size_t)rng_below(rng, n) };
    for (int k = 0; k < 4; k++) {
        size_t i = probes[k];
        if (g->w[i] != word_at(i, g->seed))
            die_corrupt("realloc prefix", g->w[i], word_at(i, g->seed));
    }
}

static int grow(struct growing *g, size_t max_words, uint64_t *rng)
{
    if (g->words >= max_words)
        return 0;
    spot_check(g, rng);
    size_t n = g->words + g->words / 4 + 2;
    if (n > max_words)
        n = max_words;
    g->w = xrealloc(g->w, n * sizeof(uint64_t));
    spot_check(g, rng);
    for (size_t i = g->words; i < n; i++)
        g->w[i] = word_at(i, g->seed);
    g->words = n;
    return 1;
}

struct record {
    struct record *next;
    uint64_t v[6];
};

int main(int argc, char **argv)
{
    long rounds = arg_long(argc, argv, 1, 20);
    long max_bytes = arg_long(argc, argv, 2, 64L << 20);
    size_t max_words = (size_t)max_bytes / sizeof(uint64_t);
    uint64_t rng = 0x7265616cu;
    uint64_t sum = 0;

    for (long r = 0; r < rounds; r++) {
        struct growing g[2] = { { NULL, 0, mix64((uint64_t)r) }, { NULL, 0, mix64(~(uint64_t)r) } };
        struct record *log = NULL;
        long steps = 0;
        for (;;) {
            int more = grow(&g[0], max_words, &rng);
            more |= grow(&g[1], max_words / 2, &rng);
            if (!more)
                break;
            struct record *rec = xmalloc(sizeof *rec);
            rec->next = log;
            for (int k = 0; k < 6; k++)
                rec->v[k] = (uint64_t)steps + (uint64_t)k;
            log = rec;
            steps++;
        }
        sample_vmas();
        for (int b = 0; b < 2; b++) {
            for (size_t i = 0; i < g[b].words; i++) {
                if (g[b].w[i] != word_at(i, g[b].seed))
                    die_corrupt("realloc final", g[b].w[i], word_at(i, g[b].seed));
                sum += g[b].w[i] >> 7;
            }
            xfree(g[b].w);
        }
        while (log != NULL) {
            struct record *next = log->next;
            if (log->v[5] != log->v[0] + 5)
                die_corrupt("realloc record", log->v[5], log->v[0] + 5);
            sum += log->v[0];
            xfree(log);
            log = next;
        }
        sum += (uint64_t)steps;
    }
    report("realloc", sum);
    return 0;
}
