/* test_random.c — ChaCha20 and ChaCha8 known answers and the generator built on ChaCha8. */
#define _GNU_SOURCE
#include <check.h>

#include "../check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/os.h"
#include "os/random.h"

/* RFC 8439 section 2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00,
 * block counter 1. Our block function takes a 64-bit counter (state words 12-13) and
 * a 64-bit nonce (words 14-15), so word 13 = 0x09000000 rides in the counter's top. */
START_TEST(test_rfc8439_2_3_2)
{
	uint32_t key[8];
	for (int i = 0; i < 8; i++)
		key[i] = (uint32_t)(4 * i) | (uint32_t)(4 * i + 1) << 8 | (uint32_t)(4 * i + 2) << 16 |
			 (uint32_t)(4 * i + 3) << 24;
	const uint32_t nonce[2] = {0x4a000000, 0x00000000};
	uint64_t counter = 1 | (uint64_t)0x09000000 << 32;
	static const uint32_t expect[16] = {
		0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3, 0xc7f4d1c7, 0x0368c033, 0x9aaa2204, 0x4e6cd4c3,
		0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9, 0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2,
	};
	uint32_t out[16];
	chacha20_block(key, counter, nonce, out);
	for (int i = 0; i < 16; i++) ck_assert_msg(out[i] == expect[i], "word %d: %08x != %08x", i, out[i], expect[i]);
}
END_TEST

/* RFC 8439 appendix A.1, test vectors #1 and #2: all-zero key and nonce, counters 0 and 1. */
START_TEST(test_rfc8439_a1)
{
	static const uint8_t expect0[64] = {
		0x76, 0xb8, 0xe0, 0xad, 0xa0, 0xf1, 0x3d, 0x90, 0x40, 0x5d, 0x6a, 0xe5, 0x53, 0x86, 0xbd, 0x28,
		0xbd, 0xd2, 0x19, 0xb8, 0xa0, 0x8d, 0xed, 0x1a, 0xa8, 0x36, 0xef, 0xcc, 0x8b, 0x77, 0x0d, 0xc7,
		0xda, 0x41, 0x59, 0x7c, 0x51, 0x57, 0x48, 0x8d, 0x77, 0x24, 0xe0, 0x3f, 0xb8, 0xd8, 0x4a, 0x37,
		0x6a, 0x43, 0xb8, 0xf4, 0x15, 0x18, 0xa1, 0x1c, 0xc3, 0x87, 0xb6, 0x69, 0xb2, 0xee, 0x65, 0x86,
	};
	static const uint8_t expect1[64] = {
		0x9f, 0x07, 0xe7, 0xbe, 0x55, 0x51, 0x38, 0x7a, 0x98, 0xba, 0x97, 0x7c, 0x73, 0x2d, 0x08, 0x0d,
		0xcb, 0x0f, 0x29, 0xa0, 0x48, 0xe3, 0x65, 0x69, 0x12, 0xc6, 0x53, 0x3e, 0x32, 0xee, 0x7a, 0xed,
		0x29, 0xb7, 0x21, 0x76, 0x9c, 0xe6, 0x4e, 0x43, 0xd5, 0x71, 0x33, 0xb0, 0x74, 0xd8, 0x39, 0xd5,
		0x31, 0xed, 0x1f, 0x28, 0x51, 0x0a, 0xfb, 0x45, 0xac, 0xe1, 0x0a, 0x1f, 0x4b, 0x79, 0x4d, 0x6f,
	};
	const uint32_t key[8] = {0}, nonce[2] = {0};
	uint32_t out[16];
	uint8_t bytes[64];
	chacha20_block(key, 0, nonce, out);
	for (int i = 0; i < 16; i++)
		for (int b = 0; b < 4; b++) bytes[4 * i + b] = (uint8_t)(out[i] >> (8 * b));
	ck_assert_mem_eq(bytes, expect0, 64);
	chacha20_block(key, 1, nonce, out);
	for (int i = 0; i < 16; i++)
		for (int b = 0; b < 4; b++) bytes[4 * i + b] = (uint8_t)(out[i] >> (8 * b));
	ck_assert_mem_eq(bytes, expect1, 64);
}
END_TEST

static void block_bytes(const uint32_t out[16], uint8_t bytes[64])
{
	for (int i = 0; i < 16; i++)
		for (int b = 0; b < 4; b++) bytes[4 * i + b] = (uint8_t)(out[i] >> (8 * b));
}

/* ChaCha8, all-zero key and IV, first block: test case 1 of the ChaCha test vectors
 * draft (draft-strombergson-chacha-test-vectors-01, 8 rounds, 256-bit key). */
START_TEST(test_chacha8_zero)
{
	static const uint8_t expect[64] = {
		0x3e, 0x00, 0xef, 0x2f, 0x89, 0x5f, 0x40, 0xd6, 0x7f, 0x5b, 0xb8, 0xe8, 0x1f, 0x09, 0xa5, 0xa1,
		0x2c, 0x84, 0x0e, 0xc3, 0xce, 0x9a, 0x7f, 0x3b, 0x18, 0x1b, 0xe1, 0x88, 0xef, 0x71, 0x1a, 0x1e,
		0x98, 0x4c, 0xe1, 0x72, 0xb9, 0x21, 0x6f, 0x41, 0x9f, 0x44, 0x53, 0x67, 0x45, 0x6d, 0x56, 0x19,
		0x31, 0x4a, 0x42, 0xa3, 0xda, 0x86, 0xb0, 0x01, 0x38, 0x7b, 0xfd, 0xb8, 0x0e, 0x0c, 0xfe, 0x42,
	};
	const uint32_t key[8] = {0}, nonce[2] = {0};
	uint32_t out[16];
	uint8_t bytes[64];
	chacha8_block(key, 0, nonce, out);
	block_bytes(out, bytes);
	ck_assert_mem_eq(bytes, expect, 64);
}
END_TEST

/* The generator's multi-block keystream is exactly ChaCha8's, less the 32 bytes of each
 * refill that become the next key (fast key erasure). */
START_TEST(test_generator_is_chacha8)
{
	static struct random_state r;
	memset(&r, 0, sizeof r);
	for (int i = 0; i < 8; i++) r.key[i] = 0x01020304u * (uint32_t)(i + 1);
	r.until_reseed = RANDOM_RESEED_BYTES;
	r.pos = RANDOM_BUF_BYTES;
	uint32_t key[8];
	memcpy(key, r.key, sizeof key);
	const uint32_t nonce[2] = {0};
	static uint8_t stream[2][RANDOM_BUF_BYTES];
	for (int refill = 0; refill < 2; refill++) {
		for (int b = 0; b < RANDOM_BUF_BYTES / 64; b++) {
			uint32_t out[16];
			chacha8_block(key, (uint64_t)(refill * (RANDOM_BUF_BYTES / 64) + b), nonce, out);
			block_bytes(out, stream[refill] + 64 * b);
		}
		memcpy(key, stream[refill], sizeof key);
	}
	for (int refill = 0; refill < 2; refill++)
		for (size_t off = 32; off + 8 <= RANDOM_BUF_BYTES; off += 8) {
			uint64_t want, got = random_u64(&r);
			memcpy(&want, stream[refill] + off, 8);
			ck_assert_msg(got == want, "refill %d offset %zu", refill, off);
		}
}
END_TEST

START_TEST(test_generator)
{
	static struct random_state a, b;
	random_reseed(&a);
	random_reseed(&b);
	ck_assert_mem_ne(a.key, b.key, sizeof a.key); /* two seeds from getrandom differ */
	uint32_t key0[8];
	memcpy(key0, a.key, sizeof key0);
	uint64_t first = random_u64(&a);
	/* Fast key erasure: the refill replaced the key. */
	ck_assert_mem_ne(a.key, key0, sizeof key0);
	/* Output words are not repeated and both bit values appear in every position. */
	uint64_t or_all = first, and_all = first;
	static uint64_t seen[4096];
	seen[0] = first;
	for (int i = 1; i < 4096; i++) {
		seen[i] = random_u64(&a);
		or_all |= seen[i];
		and_all &= seen[i];
		ck_assert(seen[i] != seen[i - 1]);
	}
	ck_assert_uint_eq(or_all, UINT64_MAX);
	ck_assert_uint_eq(and_all, 0);
	/* Beyond the reseed threshold the generator keeps going. */
	for (size_t i = 0; i < 2 * RANDOM_RESEED_BYTES / 8; i++) (void)random_u64(&a);
}
END_TEST

/* Generators seeded from a source take its keystream, 32 bytes each, in order (one
 * getrandom() for all of them), and the bytes are gone from the source once taken. After
 * a fork the source reseeds from the kernel before it seeds anything: parent and child
 * never hand out the same keys. */
START_TEST(test_source)
{
	static struct random_source src;
	random_source_init(&src);
	for (int i = 0; i < 8; i++) src.state.key[i] = 0x0a0b0c0du * (uint32_t)(i + 3); /* a known key */
	src.state.counter = 0;
	src.state.pos = RANDOM_BUF_BYTES;
	static uint8_t stream[RANDOM_BUF_BYTES];
	const uint32_t nonce[2] = {0};
	for (int b = 0; b < RANDOM_BUF_BYTES / 64; b++) {
		uint32_t out[16];
		chacha8_block(src.state.key, (uint64_t)b, nonce, out);
		block_bytes(out, stream + 64 * b);
	}
	static struct random_state a, b, c;
	a.source = b.source = c.source = &src;
	random_reseed(&a);
	random_reseed(&b);
	ck_assert_mem_eq(a.key, stream + 32, 32); /* the first 32 became the source's key */
	ck_assert_mem_eq(b.key, stream + 64, 32);
	static const uint8_t zero[64];
	ck_assert_mem_eq(src.state.buf + 32, zero, 64); /* erased from the source */
	(void)random_u64(&a);                           /* a draws from its own stream */
	ck_assert_mem_ne(a.key, stream + 32, 32);
	random_fork_child();
	random_reseed(&c);
	ck_assert_mem_ne(c.key, stream + 96, 32); /* the source reseeded first */
	ck_assert_uint_eq(src.state.generation, random_generation);
}
END_TEST

/* A child made by any kind of fork finds the generation's page zeroed (the kernel's
 * wipe, emulated here): every state reseeds at its next draw, from a new generation
 * number none of them held. */
START_TEST(test_wiped_generation)
{
	static struct random_state a, b;
	random_reseed(&a);
	random_reseed(&b);
	(void)random_u16(&a);
	uint32_t before = random_generation;
	ck_assert_uint_ne(before, 0);
	ck_assert_uint_eq(a.generation, before);
	uint32_t key[8];
	memcpy(key, a.key, sizeof key);
	uint32_t pos = a.pos;
	random_generation = 0; /* what a child sees */
	(void)random_u16(&a);
	ck_assert_uint_gt(random_generation, before);
	ck_assert_uint_eq(a.generation, random_generation);
	ck_assert_mem_ne(a.key, key, sizeof key); /* reseeded, not the rest of its buffer */
	ck_assert_uint_ne(a.pos, pos + 2);
	(void)random_u16(&b); /* b too, to the same number */
	ck_assert_uint_eq(b.generation, random_generation);
}
END_TEST

/* random_init asks the kernel to wipe the generation's page in children, and that page
 * alone: its mapping is exactly that page, with "wf" (wipe on fork) among its flags. */
START_TEST(test_wipe_on_fork_page)
{
	os_init();
	random_init();
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f) return; /* no /proc: nothing to look at */
	uintptr_t page = (uintptr_t)&random_fork_page, lo = 0, hi = 0;
	char line[512];
	bool found = false, in = false, wiped = false;
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) { /* a mapping's first line */
			in = page >= a && page < b;
			if (in) lo = a, hi = b, found = true;
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			wiped = strstr(line, " wf") != NULL;
		}
	}
	fclose(f);
	ck_assert(found);
	ck_assert_msg(wiped, "the generation's page is not wiped on fork");
	ck_assert_uint_eq(lo, page);
	ck_assert_uint_eq(hi, page + os_page);
}
END_TEST

START_TEST(test_below)
{
	static struct random_state r;
	random_reseed(&r);
	for (int i = 0; i < 1000; i++) ck_assert_uint_eq(random_below(&r, 1), 0);
	size_t hist[7] = {0};
	for (int i = 0; i < 70000; i++) {
		uint64_t v = random_below(&r, 7);
		ck_assert_uint_lt(v, 7);
		hist[v]++;
	}
	/* Each bucket expects 10000 (sd about 93); 9000..11000 is more than 10 sd wide. */
	for (int i = 0; i < 7; i++) ck_assert(hist[i] > 9000 && hist[i] < 11000);
	uint64_t big = ((uint64_t)1 << 63) + 12345;
	bool high = false;
	for (int i = 0; i < 200; i++) {
		uint64_t v = random_below(&r, big);
		ck_assert(v < big);
		high |= v >= (uint64_t)1 << 62;
	}
	ck_assert(high);
}
END_TEST

/* The entropy pool: one getrandom() serves several draws, bytes are erased as taken, and
 * a fork child never hands out what its parent's pool still held (the wiped page, or the
 * fork handler where the kernel does not wipe). */
START_TEST(test_entropy_pool)
{
	os_init();
	random_init();
	uint8_t a[32], b[32], zero[32] = {0};
	random_entropy(a, sizeof a);
	ck_assert_uint_eq(random_fork_page.pool_left, RANDOM_POOL_BYTES - sizeof a);
	ck_assert(!memcmp(random_fork_page.pool, zero, sizeof zero)); /* erased */
	random_entropy(b, sizeof b);
	ck_assert(memcmp(a, b, sizeof a));
	for (int how = 0; how < 2; how++) {
		int fds[2];
		ck_assert_int_eq(pipe(fds), 0);
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			if (how) random_fork_child(); /* as where the kernel does not wipe */
			uint8_t c[32];
			random_entropy(c, sizeof c);
			_exit(write(fds[1], c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
		}
		uint8_t c[32], next[32];
		ck_assert_int_eq(read(fds[0], c, sizeof c), (ssize_t)sizeof c);
		int status;
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_int_eq(status, 0);
		close(fds[0]);
		close(fds[1]);
		random_entropy(next, sizeof next); /* what the pool held at the fork */
		ck_assert_msg(memcmp(c, next, sizeof c), "a child drew its parent's pooled entropy");
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("random");
	TCase *t = tcase_create("random");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, test_rfc8439_2_3_2);
	tcase_add_test(t, test_rfc8439_a1);
	tcase_add_test(t, test_chacha8_zero);
	tcase_add_test(t, test_generator_is_chacha8);
	tcase_add_test(t, test_generator);
	tcase_add_test(t, test_source);
	tcase_add_test(t, test_below);
	tcase_add_test(t, test_wiped_generation);
	tcase_add_test(t, test_wipe_on_fork_page);
	tcase_add_test(t, test_entropy_pool);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
