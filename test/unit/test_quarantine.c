/* test_quarantine.c — the region quarantine: ordering, bounds, minimum stay, random eviction, drain. */
#define _GNU_SOURCE
#include <check.h>

#include "../check_main.h"
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "large/region_quarantine.h"
#include "os/random.h"

#define MAXCAP 256

static struct region_quarantine_item slots[MAXCAP], ring[MAXCAP + 1];
static struct random_state rnd;

static void setup_min(size_t rcap, size_t fcap, size_t bytes_max, size_t min_stay, struct region_quarantine *q)
{
	memset(slots, 0, sizeof slots);
	memset(ring, 0, sizeof ring);
	random_reseed(&rnd);
	region_quarantine_init(q, slots, rcap, ring, fcap, bytes_max, min_stay);
}

static void setup(size_t rcap, size_t fcap, size_t bytes_max, struct region_quarantine *q)
{
	setup_min(rcap, fcap, bytes_max, 0, q);
}

static void check_invariants(const struct region_quarantine *q)
{
	size_t in_array = 0, bytes = 0;
	for (size_t i = 0; i < q->random_cap; i++)
		if (q->slots[i].key) in_array++, bytes += q->slots[i].bytes;
	for (size_t i = 0; i < q->ring_count; i++) bytes += q->ring[(q->head + i) % (q->fifo_cap + 1)].bytes;
	ck_assert_uint_eq(q->count, in_array + q->ring_count);
	ck_assert_uint_eq(q->bytes, bytes);
}

/* Push, then evict whatever must leave; record who left (and how many left early). */
static size_t early_left;

static size_t push_evict(struct region_quarantine *q, uintptr_t key, size_t bytes, uintptr_t *left, size_t max_left)
{
	region_quarantine_push(q, (struct region_quarantine_item){.key = key, .bytes = bytes});
	size_t n = 0;
	struct region_quarantine_item out;
	bool early;
	while (region_quarantine_evict(q, &out, &rnd, &early)) {
		ck_assert_uint_ne(out.key, 0);
		ck_assert_uint_lt(n, max_left);
		ck_assert(early == (q->pushes - out.seq < q->min_stay));
		early_left += early;
		left[n++] = out.key;
	}
	check_invariants(q);
	ck_assert_uint_le(q->ring_count, q->fifo_cap);
	ck_assert(q->bytes <= q->bytes_max || q->count == 0);
	ck_assert(q->count <= q->count_max || q->count == 0);
	return n;
}

/* One random slot: the array is a one-item delay, so eviction order is push order. */
START_TEST(test_fifo_order)
{
	struct region_quarantine q;
	setup(1, 16, (size_t)-1, &q);
	uintptr_t next_out = 1, left[4];
	for (uintptr_t k = 1; k <= 1000; k++) {
		size_t n = push_evict(&q, k, 4096, left, 4);
		if (k <= 17) {
			ck_assert_uint_eq(n, 0); /* 1 in the array + 16 in the ring */
		} else {
			ck_assert_uint_eq(n, 1);
			ck_assert_uint_eq(left[0], next_out++);
		}
		ck_assert_uint_eq(q.count, k < 17 ? k : 17);
	}
	struct region_quarantine_item out;
	while (region_quarantine_drain(&q, &out)) ck_assert_uint_eq(out.key, next_out++);
	ck_assert_uint_eq(next_out, 1001);
	ck_assert_uint_eq(q.count, 0);
	ck_assert_uint_eq(q.bytes, 0);
}
END_TEST

/* Every item leaves exactly once, no earlier than fifo_cap + 1 pushes after its own,
 * and how long it stays is not a constant. */
START_TEST(test_count_bound_and_lifetimes)
{
	enum { R = 32, F = 64, N = 20000 };
	struct region_quarantine q;
	setup(R, F, (size_t)-1, &q);
	static size_t pushed_at[N + 1];
	static bool gone[N + 1];
	memset(gone, 0, sizeof gone);
	size_t min_life = (size_t)-1, max_life = 0, hist[8] = {0};
	uintptr_t left[4];
	for (uintptr_t k = 1; k <= N; k++) {
		pushed_at[k] = k;
		size_t n = push_evict(&q, k, 1, left, 4);
		ck_assert_uint_le(n, 1);
		ck_assert_uint_le(q.count, R + F);
		for (size_t i = 0; i < n; i++) {
			uintptr_t o = left[i];
			ck_assert(o >= 1 && o <= k);
			ck_assert_msg(!gone[o], "item %lu left twice", (unsigned long)o);
			gone[o] = true;
			size_t life = k - pushed_at[o];
			ck_assert_uint_ge(life, F + 1);
			min_life = life < min_life ? life : min_life;
			max_life = life > max_life ? life : max_life;
			hist[(life - F - 1) * 8 / (4 * R) < 8 ? (life - F - 1) * 8 / (4 * R) : 7]++;
		}
	}
	/* Steady state: the array is full (with overwhelming probability) and the ring is. */
	ck_assert_uint_eq(q.ring_count, F);
	ck_assert_uint_eq(q.count, R + F);
	ck_assert_uint_lt(min_life, max_life);
	/* Lifetimes beyond the ring are geometric with mean R: both short and long stays occur. */
	ck_assert_uint_gt(hist[0], 0);
	ck_assert_uint_gt(max_life, F + 1 + 2 * R);
	struct region_quarantine_item out;
	size_t drained = 0;
	while (region_quarantine_drain(&q, &out)) {
		ck_assert(!gone[out.key]);
		gone[out.key] = true;
		drained++;
	}
	ck_assert_uint_eq(drained, R + F);
	for (size_t k = 1; k <= N; k++) ck_assert(gone[k]);
	ck_assert_uint_eq(q.bytes, 0);
}
END_TEST

/* The byte bound holds after every push; oversize items still pass through. */
START_TEST(test_byte_bound)
{
	enum { N = 5000 };
	struct region_quarantine q;
	setup(8, 32, 1 << 20, &q);
	static bool gone[N + 1];
	memset(gone, 0, sizeof gone);
	uintptr_t left[64];
	size_t total_left = 0;
	for (uintptr_t k = 1; k <= N; k++) {
		size_t bytes = (size_t)(random_below(&rnd, 256) + 1) << 12; /* 4 KiB .. 1 MiB */
		if (k % 997 == 0) bytes = 3 << 20;                          /* bigger than the bound */
		size_t n = push_evict(&q, k, bytes, left, 64);
		for (size_t i = 0; i < n; i++) {
			ck_assert(!gone[left[i]]);
			gone[left[i]] = true;
		}
		total_left += n;
		ck_assert(q.bytes <= (1 << 20) || q.count == 0);
	}
	struct region_quarantine_item out;
	while (region_quarantine_drain(&q, &out)) {
		ck_assert(!gone[out.key]);
		gone[out.key] = true;
		total_left++;
	}
	ck_assert_uint_eq(total_left, N);
	ck_assert_uint_eq(q.count, 0);
	ck_assert_uint_eq(q.bytes, 0);
}
END_TEST

/* Over the byte bound with an empty ring, a random occupied slot leaves. */
START_TEST(test_random_eviction)
{
	enum { R = 8, TRIALS = 400 };
	size_t chosen[R + 1] = {0};
	bool early;
	for (int t = 0; t < TRIALS; t++) {
		struct region_quarantine q;
		setup(R, 0, 100, &q);
		/* Fill every slot directly (ring empty), each item 20 bytes: 160 > 100. */
		for (size_t i = 0; i < R; i++) slots[i] = (struct region_quarantine_item){.key = i + 1, .bytes = 20};
		q.count = R;
		q.bytes = 20 * R;
		struct region_quarantine_item out;
		ck_assert(region_quarantine_evict(&q, &out, &rnd, &early));
		ck_assert(out.key >= 1 && out.key <= R);
		ck_assert_uint_eq(slots[out.key - 1].key, 0);
		chosen[out.key]++;
		ck_assert_uint_eq(q.count, R - 1);
		ck_assert_uint_eq(q.bytes, 20 * (R - 1));
		/* Evicts until back under the bound: 8 * 20 -> 5 * 20 = 100. */
		size_t more = 0;
		while (region_quarantine_evict(&q, &out, &rnd, &early)) more++;
		ck_assert_uint_eq(more, 2);
		ck_assert_uint_eq(q.bytes, 100);
		check_invariants(&q);
	}
	/* Every slot gets chosen sometimes (each with probability 1/8 per trial). */
	for (size_t i = 1; i <= R; i++) ck_assert_msg(chosen[i] > 0, "slot %zu never chosen", i);
}
END_TEST

START_TEST(test_nothing_leaves_under_bounds)
{
	struct region_quarantine q;
	setup(4, 4, 1000, &q);
	struct region_quarantine_item out;
	bool early;
	ck_assert(!region_quarantine_evict(&q, &out, &rnd, &early));
	ck_assert(!region_quarantine_drain(&q, &out));
	uintptr_t left[4];
	for (uintptr_t k = 1; k <= 4; k++) ck_assert_uint_eq(push_evict(&q, k, 10, left, 4), 0);
	ck_assert_uint_eq(q.count, 4);
	ck_assert_uint_eq(q.bytes, 40);
}
END_TEST

/* The byte bound takes items that stayed min_stay pushes, at random among them (so how
 * long an item stays is not a constant), never a younger one while an older one is left. */
START_TEST(test_min_stay)
{
	enum { R = 8, F = 64, MIN = 16, N = 20000, FIT = 40 };
	struct region_quarantine q;
	setup_min(R, F, FIT * 4096, MIN, &q); /* 40 items fit: the byte bound, not the count, decides */
	static size_t pushed_at[N + 1];
	size_t min_life = (size_t)-1, max_life = 0;
	uintptr_t left[4];
	early_left = 0;
	for (uintptr_t k = 1; k <= N; k++) {
		pushed_at[k] = k;
		size_t n = push_evict(&q, k, 4096, left, 4);
		ck_assert_uint_eq(n, k > FIT);
		for (size_t i = 0; i < n; i++) {
			size_t life = k - pushed_at[left[i]];
			ck_assert_uint_ge(life, MIN);
			min_life = life < min_life ? life : min_life;
			max_life = life > max_life ? life : max_life;
		}
	}
	ck_assert_uint_eq(early_left, 0);
	ck_assert_uint_lt(min_life, FIT / 2);
	ck_assert_uint_gt(max_life, 2 * FIT);
}
END_TEST

/* Where the bound cannot hold min_stay items, the oldest leaves early and says so. */
START_TEST(test_early_when_bound_too_small)
{
	struct region_quarantine q;
	setup_min(8, 64, 3 * 4096, 16, &q); /* 3 items fit, 16 wanted */
	uintptr_t left[4];
	early_left = 0;
	for (uintptr_t k = 1; k <= 1000; k++) {
		size_t n = push_evict(&q, k, 4096, left, 4);
		ck_assert_uint_eq(n, k > 3);
		if (n) ck_assert_uint_eq(left[0], k - 3); /* the oldest */
	}
	ck_assert_uint_eq(early_left, 997);
}
END_TEST

/* count_max (the owner's VMA budget) bounds the count like the byte bound. */
START_TEST(test_count_max)
{
	struct region_quarantine q;
	setup_min(32, 200, (size_t)-1, 16, &q);
	q.count_max = 100;
	uintptr_t left[4];
	early_left = 0;
	for (uintptr_t k = 1; k <= 5000; k++) ck_assert_uint_eq(push_evict(&q, k, 4096, left, 4), k > 100);
	ck_assert_uint_eq(q.count, 100);
	ck_assert_uint_eq(early_left, 0);
}
END_TEST

/* Draining gives the oldest first: the array's items, older than the ring's, then the ring's. */
START_TEST(test_drain_oldest_first)
{
	struct region_quarantine q;
	setup(16, 32, (size_t)-1, &q);
	uintptr_t left[4];
	for (uintptr_t k = 1; k <= 300; k++) (void)push_evict(&q, k, 1, left, 4);
	ck_assert_uint_eq(q.count, 48);
	struct region_quarantine_item out;
	uint64_t last = 0;
	while (region_quarantine_drain(&q, &out)) {
		ck_assert_uint_gt(out.seq, last);
		last = out.seq;
	}
	ck_assert_uint_eq(last, 300);
	ck_assert_uint_eq(q.count, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("quarantine");
	TCase *t = tcase_create("quarantine");
	tcase_set_timeout(t, 60);
	tcase_add_unchecked_fixture(t, os_init, NULL);
	tcase_add_test(t, test_fifo_order);
	tcase_add_test(t, test_count_bound_and_lifetimes);
	tcase_add_test(t, test_byte_bound);
	tcase_add_test(t, test_random_eviction);
	tcase_add_test(t, test_nothing_leaves_under_bounds);
	tcase_add_test(t, test_min_stay);
	tcase_add_test(t, test_early_when_bound_too_small);
	tcase_add_test(t, test_count_max);
	tcase_add_test(t, test_drain_oldest_first);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return run_suite(suite());
}
