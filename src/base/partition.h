/*
 * partition.h — the call-site partition of a small allocation: which of roots.opt.
 * partitions groups of slots it may reuse (docs/slab.md, "Call-site partitions").
 *
 * Invariants:
 *  - A site is the address an allocation returns to in the program (its public entry
 *    point's __builtin_return_address(0)), or, with SITE_NAMED set, a partition a
 *    program named itself (malloc_partition): site_partition maps every site to one
 *    partition below roots.opt.partitions, always the same one within a process.
 *  - The map from addresses is a keyed hash (roots.part_key, sealed with the roots):
 *    knowing the program's binary tells nothing of which of its sites share a
 *    partition. Named ids from 0 to partitions - 1 take distinct partitions.
 *  - Called only when roots.opt.partitions > 1 (the shift below would be undefined at
 *    1). A leaf: reads the roots, includes base files alone.
 */
#ifndef RAMPART_PARTITION_H
#define RAMPART_PARTITION_H

#include "base/roots.h"

/* A site that names its partition (its low bits) instead of an address: no user-space
 * address has the top bit set (x86_64, arm64; an arm64 tag or PAC lies below it). */
#define SITE_NAMED ((uintptr_t)1 << 63)

/* Two rounds of multiply and fold, keyed: the multipliers' top bits decide, and the
 * first fold brings the address's high bits down before the second multiply spreads
 * them up. Three multiplications: an allocation pays a few cycles, where a SipHash of
 * one word costs tens. The attacker sees no output of it (which partitions sites share
 * shows only in which slots they reuse), so a keyed universal hash is enough. */
static inline uint64_t partition_mix(uint64_t x)
{
	uint64_t h = (x ^ roots.part_key[0]) * roots.part_key[1];
	return (h ^ h >> 32) * roots.part_key[2];
}

static inline unsigned site_partition(uintptr_t site)
{
	unsigned bits = (unsigned)__builtin_ctzl(roots.opt.partitions);
	if (unlikely(site & SITE_NAMED)) return (unsigned)site & ((1u << bits) - 1);
	return (unsigned)(partition_mix(site) >> (64 - bits));
}

/* The site of a partition a program names by id: ids that differ only in their low bits
 * (0 to partitions - 1, a program's enumeration) take distinct partitions, in an order
 * the secret draws; ids above spread over the partitions as addresses do. */
static inline uintptr_t partition_named(uintptr_t id)
{
	unsigned bits = (unsigned)__builtin_ctzl(roots.opt.partitions);
	uint64_t offset = partition_mix((id >> bits) ^ SITE_NAMED) >> (64 - bits);
	return SITE_NAMED | (uintptr_t)((id + offset) & ((1u << bits) - 1));
}

#endif
