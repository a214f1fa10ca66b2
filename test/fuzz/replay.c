/*
 * replay.c — runs the fuzzer's harness (fuzz_ops.c) without libFuzzer, so that every
 * input in the committed corpus and every crash ever found is a test of `make test`.
 *
 *   fuzz_replay                    every file of FUZZ_DIR/corpus and FUZZ_DIR/crashes
 *   fuzz_replay PATH...            these files, or every file of these directories
 *   fuzz_replay --write-seeds DIR  writes the hand-made seed corpus into DIR
 *
 * Files whose names start with '.' are skipped (.gitkeep). The inputs run one after the
 * other in this process, as under libFuzzer. Exits 0 when every input passed (a
 * failure aborts, naming the operation); the default run also fails when the corpus
 * is missing or empty, so that it cannot pass by running nothing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_ops.h"
#include "rampart.h"
#include "slab/sizeclass.h"

#ifndef FUZZ_DIR
#define FUZZ_DIR "test/fuzz"
#endif

static size_t inputs, operations;

static bool run_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		return false;
	}
	size_t n = (size_t)st.st_size, got = 0;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf) {
		fprintf(stderr, "fuzz_replay: %s: out of memory\n", path);
		return false;
	}
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r <= 0) {
			fprintf(stderr, "fuzz_replay: %s: short read\n", path);
			free(buf);
			close(fd);
			return false;
		}
		got += (size_t)r;
	}
	close(fd);
	fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path, n);
	/* libFuzzer's copy of an input is exactly as long as the input: so is this one,
	 * in case the harness ever reads past the end. */
	operations += fuzz_run(buf, n);
	inputs++;
	free(buf);
	return true;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }
static int visible(const struct dirent *d) { return d->d_name[0] != '.'; }

/* Every file of a directory (sorted by name) or the file itself; -1 on an error. */
static long run_path(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) return run_file(path) ? 1 : -1;
	struct dirent **names;
	int n = scandir(path, &names, visible, by_name);
	if (n < 0) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	long count = 0;
	for (int i = 0; i < n; i++) {
		char file[4096];
		snprintf(file, sizeof file, "%s/%s", path, names[i]->d_name);
		if (count >= 0 && stat(file, &st) == 0 && S_ISREG(st.st_mode)) count = run_file(file) ? count + 1 : -1;
		free(names[i]);
	}
	free(names);
	return count;
}

/* --- the seed corpus ------------------------------------------------------------- */

struct seed {
	uint8_t b[FUZZ_MAX_LEN];
	size_t n;
};

static void put(struct seed *s, unsigned v)
{
	if (s->n == sizeof s->b) {
		fprintf(stderr, "fuzz_replay: a seed is longer than FUZZ_MAX_LEN\n");
		exit(1);
	}
	s->b[s->n++] = (uint8_t)v;
}
static void put16(struct seed *s, unsigned v) { put(s, v & 255), put(s, v >> 8); }
static void op(struct seed *s, enum fuzz_op o, unsigned slot) { put(s, o), put(s, slot); }
/* Sizes (read_size): a class's usable size + delta (-2..2), pages + delta, and so on. */
static void sz_class(struct seed *s, unsigned c, int delta) { put(s, SZ_CLASS), put(s, c), put(s, (unsigned)(delta + 2)); }
static void sz_byte(struct seed *s, unsigned v) { put(s, SZ_BYTE), put(s, v); }
static void sz_pages(struct seed *s, unsigned pages, int delta) { put(s, SZ_PAGES), put16(s, pages), put(s, (unsigned)(delta + 2)); }
static void sz_impossible(struct seed *s, unsigned i) { put(s, SZ_IMPOSSIBLE), put(s, i); }
static void sz_edge(struct seed *s, unsigned v) { put(s, SZ_EDGE), put(s, v); }
static void align_log2(struct seed *s, unsigned e) { put(s, 0), put(s, e); }
static void align_bad(struct seed *s, unsigned i) { put(s, 7), put(s, i); }

static void write_seed(const char *dir, const char *name, const struct seed *s)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(s->b, 1, s->n, f) != s->n || fclose(f) != 0) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	printf("%s (%zu bytes)\n", path, s->n);
}

static void write_seeds(const char *dir)
{
	struct seed s;

	/* Every size class at its usable size, asked for its usable size; then one past
	 * it (the next class) and one below, freed plainly and with free_sized. */
	s.n = 0;
	for (unsigned c = 0; c < SC_COUNT; c++) op(&s, OP_MALLOC, c), sz_class(&s, c, 0), op(&s, OP_USABLE, c);
	write_seed(dir, "malloc-classes", &s);
	s.n = 0;
	for (unsigned c = 0; c < SC_COUNT; c++) op(&s, OP_MALLOC, c), sz_class(&s, c, c % 2 ? 1 : -1), op(&s, OP_FREE, c), put(&s, c);
	op(&s, OP_MALLOC, 1), sz_edge(&s, 23), op(&s, OP_MALLOC, 2), sz_edge(&s, 24), op(&s, OP_MALLOC, 3), sz_edge(&s, 25);
	op(&s, OP_USABLE, 1), op(&s, OP_USABLE, 2), op(&s, OP_USABLE, 3);
	write_seed(dir, "malloc-boundaries", &s);

	/* calloc: small, large, the usable slack, overflowing products. */
	s.n = 0;
	op(&s, OP_CALLOC, 0), put(&s, PAIR_ONE_N), sz_class(&s, 10, 1), put(&s, 1);
	op(&s, OP_CALLOC, 1), put(&s, PAIR_N_ONE), sz_pages(&s, 100, 1), put(&s, 1);
	op(&s, OP_CALLOC, 2), put(&s, PAIR_SMALL_N), put(&s, 6), sz_class(&s, 30, 0), put(&s, 0);
	for (unsigned i = 0; i < 6; i++) op(&s, OP_CALLOC, 3 + i), put(&s, PAIR_OVERFLOW), put(&s, i), put(&s, 0);
	op(&s, OP_FREE, 0), put(&s, 1), op(&s, OP_CALLOC, 0), put(&s, PAIR_ONE_N), sz_class(&s, 10, 0), put(&s, 1);
	op(&s, OP_CALLOC, 4), put(&s, PAIR_ONE_N), sz_byte(&s, 0), put(&s, 1);
	write_seed(dir, "calloc", &s);

	/* realloc: one block grown through the classes into a large block and back, in
	 * place and moved; realloc(NULL, n), realloc(p, 0), a failed realloc; reallocarray. */
	s.n = 0;
	op(&s, OP_REALLOC, 0), sz_byte(&s, 1);
	for (unsigned c = 1; c < SC_COUNT; c += 3) op(&s, OP_REALLOC, 0), sz_class(&s, c, c % 2 ? 2 : -2);
	op(&s, OP_USABLE, 0);
	op(&s, OP_REALLOC, 0), sz_pages(&s, 64, 1), op(&s, OP_REALLOC, 0), sz_pages(&s, 70, 0);
	op(&s, OP_REALLOC, 0), sz_pages(&s, 600, -1), op(&s, OP_REALLOC, 0), sz_pages(&s, 40, 0);
	op(&s, OP_REALLOC, 0), sz_impossible(&s, 0), op(&s, OP_REALLOC, 0), sz_class(&s, 20, 0);
	op(&s, OP_REALLOC, 0), sz_impossible(&s, 4), op(&s, OP_REALLOC, 0), sz_byte(&s, 0);
	op(&s, OP_MALLOC, 1), sz_class(&s, 5, 0), op(&s, OP_REALLOCARRAY, 1), put(&s, PAIR_SMALL_N), put(&s, 3), sz_class(&s, 40, 1);
	op(&s, OP_REALLOCARRAY, 1), put(&s, PAIR_OVERFLOW), put(&s, 1);
	op(&s, OP_REALLOCARRAY, 2), put(&s, PAIR_N_ONE), sz_pages(&s, 33, 0), op(&s, OP_REALLOC, 2), sz_pages(&s, 1, 0);
	write_seed(dir, "realloc", &s);

	/* The aligned functions: every power of two up to 2^30, bad alignments, valloc and
	 * pvalloc, freed with free_aligned_sized. */
	s.n = 0;
	for (unsigned e = 0; e <= 30; e++) {
		enum fuzz_op o = e % 3 == 0 ? OP_ALIGNED_ALLOC : e % 3 == 1 ? OP_POSIX_MEMALIGN : OP_MEMALIGN;
		op(&s, o, e), align_log2(&s, e), e < 20 ? sz_class(&s, e + 5, 1) : sz_byte(&s, e);
	}
	for (unsigned i = 0; i < 14; i++)
		op(&s, i % 2 ? OP_POSIX_MEMALIGN : OP_ALIGNED_ALLOC, 40 + i), align_bad(&s, i), sz_byte(&s, 8);
	/* memalign with each of them, five slots taking turns: a slot taken again first
	 * frees its block, with free_aligned_sized given the alignment asked for. */
	for (unsigned i = 0; i < 14; i++) op(&s, OP_MEMALIGN, 59 + i % 5), align_bad(&s, i), sz_byte(&s, 8 + i);
	op(&s, OP_VALLOC, 55), sz_byte(&s, 100), op(&s, OP_PVALLOC, 56), sz_class(&s, 29, 0);
	op(&s, OP_VALLOC, 57), sz_pages(&s, 40, 0), op(&s, OP_PVALLOC, 58), sz_byte(&s, 0);
	for (unsigned i = 0; i < 31; i += 2) op(&s, OP_FREE, i), put(&s, 1);
	op(&s, OP_FREE, 55), put(&s, 1), op(&s, OP_USABLE, 56), op(&s, OP_USABLE, 58);
	write_seed(dir, "aligned", &s);

	/* Large blocks: a few sizes up to 4 MiB, their usable size, rewrites, in-place
	 * growth and shrinking, malloc_trim. */
	s.n = 0;
	op(&s, OP_MALLOC, 0), sz_pages(&s, 33, 0), op(&s, OP_MALLOC, 1), sz_pages(&s, 1024, 0);
	put(&s, OP_MALLOC), put(&s, 2), put(&s, SZ_LARGE), put16(&s, 0x3456), put(&s, 0x12);
	op(&s, OP_USABLE, 0), op(&s, OP_WRITE, 1), op(&s, OP_REALLOC, 1), sz_pages(&s, 1000, 0);
	op(&s, OP_REALLOC, 1), sz_pages(&s, 1024, 2), op(&s, OP_FREE, 0), put(&s, 1);
	op(&s, OP_MALLOC, 0), sz_pages(&s, 33, 0), op(&s, OP_TRIM, 0), op(&s, OP_FREE, 2), put(&s, 0);
	write_seed(dir, "large", &s);

	/* Sizes that can never be served, through every function that takes a size. */
	s.n = 0;
	for (unsigned i = 0; i < 13; i++) op(&s, OP_MALLOC, i), sz_impossible(&s, i);
	op(&s, OP_CALLOC, 0), put(&s, PAIR_ONE_N), sz_impossible(&s, 1), put(&s, 0);
	op(&s, OP_ALIGNED_ALLOC, 1), align_log2(&s, 12), sz_impossible(&s, 2);
	op(&s, OP_POSIX_MEMALIGN, 2), align_log2(&s, 6), sz_impossible(&s, 3);
	op(&s, OP_MEMALIGN, 3), align_log2(&s, 21), sz_impossible(&s, 7);
	op(&s, OP_VALLOC, 4), sz_impossible(&s, 5), op(&s, OP_PVALLOC, 5), sz_impossible(&s, 2);
	op(&s, OP_MALLOC, 6), sz_class(&s, 12, 0), op(&s, OP_REALLOC, 6), sz_impossible(&s, 10);
	op(&s, OP_MALLOC, 7), sz_pages(&s, 50, 0), op(&s, OP_REALLOC, 7), sz_impossible(&s, 11);
	write_seed(dir, "impossible", &s);

	/* malloc_object_size at offsets in small and large blocks, and of foreign pointers. */
	s.n = 0;
	op(&s, OP_MALLOC, 0), sz_class(&s, 7, 0), op(&s, OP_MALLOC, 1), sz_pages(&s, 40, 1);
	op(&s, OP_MALLOC, 2), sz_byte(&s, 0), op(&s, OP_MALLOC, 3), sz_class(&s, 40, -1);
	for (unsigned w = 0; w < 3; w++)
		for (unsigned i = 0; i < 4; i++) op(&s, OP_OBJECT_SIZE, i), put(&s, w), put16(&s, 1000 + 77 * i);
	for (unsigned x = 0; x < 5; x++) op(&s, OP_OBJECT_SIZE, 9), put(&s, 3), put16(&s, x);
	write_seed(dir, "object-size", &s);

	/* Sized frees of every kind of block, small and large. */
	s.n = 0;
	op(&s, OP_MALLOC, 0), sz_class(&s, 3, 1), op(&s, OP_CALLOC, 1), put(&s, PAIR_SMALL_N), put(&s, 2), sz_pages(&s, 40, 0), put(&s, 0);
	op(&s, OP_ALIGNED_ALLOC, 2), align_log2(&s, 6), sz_class(&s, 9, 0), op(&s, OP_MEMALIGN, 3), align_log2(&s, 14), sz_pages(&s, 40, -1);
	op(&s, OP_POSIX_MEMALIGN, 4), align_log2(&s, 12), sz_byte(&s, 0), op(&s, OP_VALLOC, 5), sz_class(&s, 20, 0);
	op(&s, OP_MALLOC, 6), sz_byte(&s, 0), op(&s, OP_REALLOC, 7), sz_pages(&s, 50, 0);
	for (unsigned i = 0; i < 8; i++) op(&s, OP_FREE, i), put(&s, 1);
	write_seed(dir, "free-sized", &s);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
		write_seeds(argv[2]);
		return 0;
	}
	if (argc > 1 && argv[1][0] == '-') {
		fprintf(stderr, "usage: %s [--write-seeds DIR | FILE-OR-DIR...]\n", argv[0]);
		return 2;
	}
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (run_path(argv[i]) < 0) return 1;
	} else {
		long corpus = run_path(FUZZ_DIR "/corpus");
		long crashes = run_path(FUZZ_DIR "/crashes");
		if (corpus <= 0 || crashes < 0) {
			fprintf(stderr, "fuzz_replay: no corpus in %s/corpus, or an unreadable file\n", FUZZ_DIR);
			return 1;
		}
	}
	printf("fuzz_replay: %zu inputs, %zu operations, guard backend %s: all checks passed\n", inputs, operations,
	       rampart_guard_backend());
	return 0;
}
