/*
 * fuzz_ops.h — the input format of the operation-sequence fuzzer (test/fuzz/fuzz_ops.c),
 * shared by the harness, its replay driver and the seed writer (test/fuzz/replay.c).
 *
 * An input is a sequence of records, read until the bytes run out (a record cut short
 * reads zeros, so every byte string is a valid program):
 *
 *   record   := op slot args
 *   op       := byte % OP_COUNT               (enum fuzz_op)
 *   slot     := byte % FUZZ_SLOTS             (the table entry the op works on)
 *   size     := mode(byte % SZ_COUNT) ...     (enum size_mode; see read_size)
 *   pair     := kind(byte % PAIR_COUNT) ...   (calloc and reallocarray: n, m)
 *   align    := byte [byte]                   (read_align)
 *
 *   OP_MALLOC size | OP_CALLOC pair flags | OP_REALLOC size | OP_REALLOCARRAY pair
 *   OP_ALIGNED_ALLOC align size | OP_POSIX_MEMALIGN align size | OP_MEMALIGN align size
 *   OP_VALLOC size | OP_PVALLOC size | OP_FREE how | OP_USABLE | OP_OBJECT_SIZE where u16
 *   OP_WRITE | OP_TRIM
 *
 * An allocation into an occupied slot first frees what is there.
 */
#ifndef RAMPART_FUZZ_OPS_H
#define RAMPART_FUZZ_OPS_H

#include <stddef.h>
#include <stdint.h>

/* Live blocks at most: the table the harness keeps. */
#define FUZZ_SLOTS 64

/* Longest input the fuzzer generates (make fuzz passes it as -max_len). */
#define FUZZ_MAX_LEN 512

enum fuzz_op {
	OP_MALLOC,
	OP_CALLOC,
	OP_REALLOC,
	OP_REALLOCARRAY,
	OP_ALIGNED_ALLOC,
	OP_POSIX_MEMALIGN,
	OP_MEMALIGN,
	OP_VALLOC,
	OP_PVALLOC,
	OP_FREE,        /* how: free, free_sized or free_aligned_sized where they apply */
	OP_USABLE,      /* malloc_usable_size; the program then uses all of it */
	OP_OBJECT_SIZE, /* malloc_object_size of a pointer into the block, or a foreign one */
	OP_WRITE,       /* rewrite the block with a new pattern */
	OP_TRIM,        /* malloc_trim(0), then every live block is checked */
	OP_COUNT
};

enum size_mode {
	SZ_BYTE,       /* byte: 0..255 */
	SZ_CLASS,      /* byte class, byte delta: a size-class usable size -2..+2 */
	SZ_CLASS2,     /* the same (twice the weight) */
	SZ_U16,        /* u16: 0..65535 */
	SZ_PAGES,      /* u16 pages, byte delta: pages % 1025 * page -2..+2 (up to 4 MiB) */
	SZ_LARGE,      /* u24: anything up to 4 MiB + 1 page */
	SZ_IMPOSSIBLE, /* byte: a size that can never be served (must give NULL + ENOMEM) */
	SZ_EDGE,       /* byte: 128 KiB - 24 .. 128 KiB + 39 (the slab / large switch) */
	SZ_COUNT
};

enum pair_kind {
	PAIR_ONE_N,     /* (1, size) */
	PAIR_N_ONE,     /* (size, 1) */
	PAIR_SMALL_N,   /* (byte % 16 + 1, size / n) */
	PAIR_OVERFLOW,  /* byte: a product that overflows size_t */
	PAIR_COUNT
};

/* Runs one input; returns the number of operations executed. On any disagreement with
 * the shadow model it prints what and where, and aborts. */
size_t fuzz_run(const uint8_t *data, size_t size);

/* libFuzzer's entry point (also called by the replay driver). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
