/* test_partitions — the parts of call-site partitions that can be checked from inside
 * (docs/slab.md, "Call-site partitions"): the map from sites and named ids to partitions
 * (base/partition.h), the owner maps (slab_class.h: owned_slot, owned_set, owned_clear), the
 * bound the owner maps are laid out by (sc_slots_most), and a class's state after
 * churn by several sites: every slot's owner, every slab's count of owned slots and
 * its membership of the partitions' sets (slab_sets.h, slab_life.h invariants). Run
 * under each backend, and under profile=light by make check-configs. */
#define _GNU_SOURCE
#include <check.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "../harness.h"
#include "base/partition.h"
#include "rampart.h"
#include "slab/sizeclass.h"
#include "slab/slab_class.h"
#include "slab/slab_sets.h"

static unsigned partitions(void)
{
	free(malloc(1)); /* started: the options and the secret are in place */
	return (unsigned)roots.opt.partitions;
}

/* Named ids 0 .. partitions - 1 take distinct partitions; every site and id one
 * partition below the count, always the same; addresses spread over all of them. */
START_TEST(sites_and_ids)
{
	unsigned n = partitions();
	if (n < 2) return;
	bool seen[OPTION_PARTITIONS_MAX] = {false};
	for (unsigned id = 0; id < n; id++) {
		uintptr_t site = partition_named(id);
		unsigned p = site_partition(site);
		ck_assert_uint_lt(p, n);
		ck_assert_msg(!seen[p], "ids below %u share partition %u", n, p);
		seen[p] = true;
		ck_assert_uint_eq(site_partition(partition_named(id)), p);
	}
	/* Return addresses 1 to 5 bytes apart, as call sites in a function lie: each
	 * partition gets about its share (1/n, within a third either way). */
	enum { SITES = 1 << 14 };
	unsigned count[OPTION_PARTITIONS_MAX] = {0};
	uintptr_t a = (uintptr_t)&sites_and_ids;
	for (int i = 0; i < SITES; i++) {
		a += 1 + (unsigned)i % 5;
		unsigned p = site_partition(a);
		ck_assert_uint_lt(p, n);
		ck_assert_uint_eq(site_partition(a), p);
		count[p]++;
	}
	for (unsigned p = 0; p < n; p++) {
		ck_assert_uint_gt(count[p], SITES / n * 2 / 3);
		ck_assert_uint_lt(count[p], SITES / n * 4 / 3);
	}
}
END_TEST

/* owned_slot finds a slot whose byte is OWNER_FREE | p from a slot on, wrapping round,
 * as a plain loop does, among those the map's bits say are owned; owned_set and
 * owned_clear keep bits and bytes together. */
START_TEST(owner_map_scans)
{
	struct slab_class k;
	memset(&k, 0, sizeof k);
	static const uint32_t slot_counts[] = {4, 5, 12, 32, 36, 51, 64, 85, 128, 256};
	static uint64_t map[512];
	srand(3);
	for (size_t c = 0; c < sizeof slot_counts / sizeof *slot_counts; c++) {
		k.slots = slot_counts[c];
		k.nwords = (uint8_t)((k.slots + 63) / 64);
		uint8_t *own = (uint8_t *)(map + k.nwords);
		for (int round = 0; round < 200; round++) {
			memset(map, 0, sizeof map);
			for (uint32_t i = 0; i < k.slots; i++) {
				unsigned v = (unsigned)rand() % 8;
				if (v < 4) own[i] = (uint8_t)v;
				else owned_set(&k, map, i, v - 4);
			}
			unsigned p = (unsigned)rand() % 4;
			uint32_t from = (uint32_t)rand() % k.slots, want = UINT32_MAX;
			for (uint32_t j = 0; j < k.slots && want == UINT32_MAX; j++)
				if (own[(from + j) % k.slots] == (OWNER_FREE | p)) want = (from + j) % k.slots;
			ck_assert_uint_eq(owned_slot(&k, map, p, from), want);
			if (want == UINT32_MAX) continue;
			owned_clear(&k, map, want, p);
			ck_assert_uint_eq(own[want], p);
			ck_assert(!(map[want >> 6] >> (want & 63) & 1));
		}
		ck_assert_uint_le(owner_map_bytes(k.slots), sizeof map);
	}
}
END_TEST

/* The owner maps of the first positions are laid out before the classes are set up, by
 * a bound on each class's slots: never below them, for every page size Linux uses. */
START_TEST(slots_bound)
{
	static const size_t pages[] = {4096, 16384, 65536};
	for (size_t i = 0; i < sizeof pages / sizeof *pages; i++)
		for (unsigned c = 0; c < SC_COUNT; c++) {
			struct sc_geometry g;
			sc_geometry(c, pages[i], &g);
			ck_assert_uint_ge(sc_slots_most(c, pages[i]), g.slots);
			ck_assert_uint_le(sc_slots_most(c, pages[i]), 2 * g.slots + 2);
		}
}
END_TEST

/* Every open slab of k (lock held): its owned slots counted in nown, its psets the
 * partitions of its owned slots; every set member open and flagged in its psets. */
static void check_owners(struct slab_class *k)
{
	class_lock(k);
	uint32_t members[OPTION_PARTITIONS_MAX] = {0};
	for (uint32_t pos = 0; pos < k->hwm; pos++) {
		if (!desc_exists(k, pos)) continue;
		const struct slab *s = desc(k, pos);
		for (unsigned p = 0; p < roots.opt.partitions; p++) {
			bool member = set_next(k, set_of_part(p), pos) == pos;
			ck_assert_int_eq(member, (s->psets >> p & 1) != 0);
			members[p] += member;
			if (member) ck_assert(s->state == SLAB_ACTIVE || s->state == SLAB_EMPTY);
		}
		if (s->state != SLAB_ACTIVE && s->state != SLAB_EMPTY) {
			ck_assert_uint_eq(s->psets, 0);
			continue;
		}
		const uint8_t *own = owners_of(k, s, pos);
		const uint64_t *map = owner_map(k, s, pos);
		uint32_t owned = 0, parts = 0;
		for (uint32_t i = 0; i < k->slots; i++) {
			ck_assert_int_eq((own[i] & OWNER_FREE) != 0, map[i >> 6] >> (i & 63) & 1);
			if (!(own[i] & OWNER_FREE)) continue;
			owned++;
			parts |= 1u << (own[i] & ~OWNER_FREE);
			/* Used and quarantined in the bits: no draw takes it, a free of it is fatal. */
			ck_assert(s->bits[i >> 6].used >> (i & 63) & 1);
			ck_assert(s->bits[i >> 6].quar >> (i & 63) & 1);
		}
		ck_assert_uint_eq(owned, s->nown);
		ck_assert_msg(parts == s->psets, "slab %u: owned by %#x, in the sets of %#x", pos, parts, s->psets);
		ck_assert_uint_le(s->nown, s->nused);
		if (s->state == SLAB_EMPTY) ck_assert_uint_eq(s->nown, s->nused);
	}
	for (unsigned p = 0; p < roots.opt.partitions; p++) ck_assert_uint_eq(members[p], k->parts->n[p]);
	class_unlock(k);
}

/* Blocks of one size from eight named partitions, freed and allocated in random order;
 * the class's owners checked along the way. */
START_TEST(owners_after_churn)
{
	if (partitions() < 2) return;
	enum { LIVE = 3000, ROUNDS = 60000, IDS = 8 };
	static void *v[LIVE];
	static unsigned id_of[LIVE];
	srand(5);
	for (int i = 0; i < LIVE; i++) {
		id_of[i] = (unsigned)rand() % IDS;
		ck_assert_ptr_nonnull(v[i] = malloc_partition(200, id_of[i]));
	}
	const struct area_span *span = NULL;
	struct slab_class *k = class_at((uintptr_t)v[0], &span);
	ck_assert(k && k->parted);
	for (int r = 0; r < ROUNDS; r++) {
		int i = rand() % LIVE;
		free(v[i]);
		ck_assert_ptr_nonnull(v[i] = malloc_partition(200, id_of[i]));
		/* Now and then a wave of frees, so that slabs empty and are taken again. */
		if (r % 10000 == 9999) {
			for (int j = 0; j < LIVE / 2; j++) free(v[j]);
			for (int j = 0; j < LIVE / 2; j++) ck_assert_ptr_nonnull(v[j] = malloc_partition(200, id_of[j]));
		}
		if (r % 5000 == 0) check_owners(k);
	}
	check_owners(k);
	/* Every live block carries its id's partition. */
	class_lock(k);
	for (int i = 0; i < LIVE; i++) {
		const struct area_span *sp = NULL;
		ck_assert(class_at((uintptr_t)v[i], &sp) == k);
		struct slot_place pl = decode_slot(k, sp, (uintptr_t)v[i], LOCK_HELD);
		ck_assert_uint_eq(owners_of(k, pl.s, pl.pos)[pl.i], site_partition(partition_named(id_of[i])));
	}
	class_unlock(k);
	/* All freed: the slabs empty, kept open with their owners (light) or waiting in the
	 * quarantine; taken again by their partitions; then closed by the trim, owners
	 * forgotten. */
	for (int i = 0; i < LIVE; i++) free(v[i]);
	check_owners(k);
	for (int i = 0; i < LIVE; i++) ck_assert_ptr_nonnull(v[i] = malloc_partition(200, id_of[i]));
	check_owners(k);
	for (int i = 0; i < LIVE; i++) free(v[i]);
	malloc_trim(0);
	check_owners(k);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("partitions");
	TCase *t = tcase_create("core");
	tcase_set_timeout(t, 120);
	tcase_add_test(t, sites_and_ids);
	tcase_add_test(t, owner_map_scans);
	tcase_add_test(t, slots_bound);
	tcase_add_test(t, owners_after_churn);
	suite_add_tcase(s, t);
	return run_suite(s);
}
