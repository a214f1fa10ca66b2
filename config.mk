# rampart compile-time configuration.
# Every option: its default, and a one-line reason. Override on the command line
# (make CONFIG_ZERO_ON_FREE=0) or pick a preset with VARIANT=light. Each value is
# checked before anything is built (CONFIG_RULES at the end); C code never repeats one.

VARIANT ?= default

# --- large allocations (> CONFIG_SMALL_MAX) ---------------------------------------
# Guard regions on each side are 1 page + a random count up to size/CONFIG_GUARD_FRACTION.
CONFIG_GUARD_FRACTION ?= 8
# Upper bound, in pages, of the random part of a large allocation's guard region (profile
# strong's default; run time: large_guard_max_pages).
CONFIG_GUARD_MAX_PAGES ?= 64
# Profile strong's default (run time: large_quarantine=on|off). Region quarantine: freed
# large regions held closed before their address is reused.
CONFIG_REGION_QUARANTINE ?= 1
# Entries in the FIFO ring a freed region passes first (it waits at least that many large
# frees) and in the random-swap array behind it (then a random number more, mean that many).
CONFIG_REGION_QUARANTINE_FIFO ?= 1024
CONFIG_REGION_QUARANTINE_RANDOM ?= 256
# Bytes of address space the region quarantine may hold (closed regions hold no pages; under
# the madvise backend their guard markers take page tables, 2 MiB per GiB: 4 MiB here). At least
# CONFIG_REGION_QUARANTINE_MIN times CONFIG_REGION_QUARANTINE_SKIP, so that the bound never
# makes a region leave before CONFIG_REGION_QUARANTINE_MIN frees.
CONFIG_REGION_QUARANTINE_BYTES ?= 2147483648
# Large frees a region waits at least before rampart reuses its address: one that the bounds
# (RLIMIT_AS, the VMA limit, a smaller byte bound) make leave sooner is unmapped, not reused.
CONFIG_REGION_QUARANTINE_MIN ?= 16
# Regions at least this big (huge blocks) wait in a quarantine of their own instead, each
# closed by one fresh PROT_NONE mapping (no memory, no page tables, one VMA), so a
# dangling pointer faults instead of reaching the next huge block the kernel would place
# there; then they are unmapped, never reused.
CONFIG_REGION_QUARANTINE_SKIP ?= 134217728
# Entries in the huge quarantine's random-swap array and FIFO ring: a freed huge region
# stays out of reach for at least CONFIG_HUGE_QUARANTINE_FIFO huge frees ...
CONFIG_HUGE_QUARANTINE_RANDOM ?= 8
CONFIG_HUGE_QUARANTINE_FIFO ?= 16
# ... within this much address space (and at most RLIMIT_AS/16 under a limit).
CONFIG_HUGE_QUARANTINE_BYTES ?= 1099511627776

# Reuse cache: closed large regions kept for reuse instead of being unmapped. Regions leave
# the long region quarantine in random order, seldom next to a cached one, so the cache holds
# many pieces: fewer entries would unmap them and punch holes (VMAs) under churn.
CONFIG_CACHE_ENTRIES ?= 256
# Bytes of address space the cache may hold (closed regions hold no RAM).
CONFIG_CACHE_BYTES ?= 536870912
# A cached region is reused only if it wastes at most this percentage of the request.
CONFIG_CACHE_MAX_WASTE_PERCENT ?= 10
# Cached regions idle for longer than this (milliseconds) are unmapped.
CONFIG_CACHE_DECAY_MS ?= 10000
# Without the region quarantine (profile light; run time: large_resident_bytes): most bytes
# of freed large blocks kept sealed with their pages (wiped, PROT_NONE), so the next block
# of about their size takes no page fault; an eighth of it always, the rest only while
# live large blocks are below their recent peak.
CONFIG_CACHE_RESIDENT_BYTES ?= 67108864
# New large blocks are populated up front (MADV_POPULATE_WRITE) as far as large blocks
# freed just before had resident pages, holding at most this many bytes of such credit
# (0 = off; run time: large_refill_bytes) ...
CONFIG_LARGE_REFILL_BYTES ?= 67108864
# ... which lapses after this many ms without a large free.
CONFIG_LARGE_REFILL_MS ?= 1000

# --- small allocations (slab, <= CONFIG_SMALL_MAX) ---------------------------------
# Most independent arenas: a process uses one per CPU it may run on, up to this many
# (run time: arenas=N); threads are assigned round-robin, each (arena, class) has a lock.
CONFIG_SLAB_ARENAS ?= 4
# log2 of the address space set aside per (arena, size class) region (halved at start-up
# until all of them fit the address space). Set aside, not mapped: a region maps what it
# uses, growing by a quarter at a time, at least CONFIG_SLAB_GROW_MIN bytes. At most 44
# (a pointer's page index in its region is a 32-bit number).
CONFIG_SLAB_REGION_SHIFT ?= 36
# Spill regions (each of a region's size) set aside after the classes' regions: a class
# whose own region is full takes one for good, so it runs out only with the machine's
# memory (docs/slab.md, "Capacity: spill regions"). Address space only; 0 = a full region is out of memory.
CONFIG_SLAB_SPILL_REGIONS ?= 64
CONFIG_SLAB_GROW_MIN ?= 16384
# Pages of the nursery cell each (arena, class) gets in the nursery (a power of two, 0 =
# no nursery): a class's first slabs, as many as fit below one page of guard, live
# there instead of in its own region, so a short-lived or forking process maps each
# small class under one page table, sharing those above it, instead of two per class.
# Costs a free a little of allocation-heavy churn (docs/slab.md, "The nursery"); 0
# compiles that decoding out.
CONFIG_SLAB_NURSERY_PAGES ?= 32
# log2 of the nursery's least width: each cell lies at a random place in a slot of its
# own, the slots together at least this wide, so the first slabs of two classes lie that
# far apart at random. Wider costs page tables: one more page per GiB that classes use.
CONFIG_SLAB_NURSERY_SHIFT ?= 32
# 8-byte canary (zero leading byte, random per slab) at the end of every slot, checked on free.
# Without it one past a block is the next slot's start, and check_at_exit is refused.
CONFIG_SLOT_CANARY ?= 1
# Profile strong's default (run time: slot_random): pick a random free slot of the slab
# instead of the first free one.
CONFIG_SLOT_RANDOM ?= 1
# Profile strong's default (run time: write_after_free_check): verify on allocation that
# a slot still holds the zeros written on free (needs zero-on-free).
CONFIG_WRITE_AFTER_FREE_CHECK ?= 1
# Profile strong's default (run time: slot_quarantine_bytes, 0 = no slot quarantine):
# freed slots wait in a per-class random array + FIFO before they can be handed out
# again; bytes of slots each (arena, class) quarantine's random array holds, in entries
# rounded up to a power of two (at least 4); its FIFO holds twice as many, so a freed
# slot waits longer than hardened_malloc's (docs/slab.md, "How long a freed slot waits").
CONFIG_SLOT_QUARANTINE_BYTES ?= 131072
# Profile strong's default (run time: partitions): call-site partitions of small blocks, a
# power of two up to 16 (1 = none). A small block's partition is a keyed hash of the
# address its allocation returns to; a freed slot is taken again only by its own
# partition while its slab stays open (docs/slab.md, "Call-site partitions").
CONFIG_PARTITIONS ?= 16
# Frees a thread makes into another arena's class wait in a per-thread batch of up to
# this many per class, which enters the slot quarantine under one acquisition of the
# class lock (0 = every such free takes the lock). Needs the slot quarantine and canaries.
CONFIG_SLAB_FREE_BATCH ?= 14
# Profile strong's defaults (run time: slab_guard_interval, slab_guard_interval_mprotect).
# Madvise backend: a guard slab after every N slabs (guard markers cost no VMA).
CONFIG_GUARD_SLAB_INTERVAL ?= 1
# Mprotect backend: a guard slab after every N slabs (each costs up to 2 VMAs).
CONFIG_GUARD_SLAB_INTERVAL_MPROTECT ?= 8
# Empty slabs kept open per (arena, class) for quick reuse; more are closed.
CONFIG_SLAB_EMPTY_CACHE ?= 1
# ... and beyond that count, while the empty slabs kept open total at most this many bytes
# (big classes have few slots per slab: without it nearly every free would close a slab).
# That is the floor of the budget; it grows while a class churns (see the next two).
CONFIG_SLAB_EMPTY_CACHE_BYTES ?= 262144
# The budget grows by a slab each time a class reopens a slab within this many ms of
# closing one, and its part above the floor halves every this many ms without churn.
# Beyond the budget, a class keeps open the empty slabs that take it back to its peak of
# slabs in use in this period or the last (a structure freed and built again).
CONFIG_SLAB_EMPTY_DECAY_MS ?= 1000
# Above the floor, empty slabs kept open are at most 1/N of the class's slabs in use.
CONFIG_SLAB_EMPTY_MAX_FRACTION ?= 4
# Closed empty slabs wait in a FIFO of this many per (arena, class) before reuse (0 = off);
# profile strong's default and the most the run-time option slab_quarantine takes.
CONFIG_SLAB_QUARANTINE ?= 16
# The pages of free slots in open slabs (classes of 2 KiB and up: whole pages a free slot
# or a run of them covers) go back to the kernel between this many ms and twice that
# after the last free into the slab (0 = never; run time: slab_return_ms).
CONFIG_SLAB_RETURN_MS ?= 1000

# A block that realloc moves gets up to half its size (at most this many bytes) of
# trail guard to grow into in place later.
CONFIG_REALLOC_HEADROOM_MAX ?= 67108864

# --- general --------------------------------------------------------------------
# Largest request served by the slab allocator; bigger ones are large allocations.
CONFIG_SMALL_MAX ?= 131072
# Zero memory when it is freed (slab slots; large regions are dropped by the kernel), and
# check that a slot's bytes past the request (its slack) are still zero then: no owner's
# byte reaches the slot's next owner.
CONFIG_ZERO_ON_FREE ?= 1
# Name rampart's mappings (PR_SET_VMA_ANON_NAME) so /proc/PID/maps tells them apart.
CONFIG_LABEL_MEMORY ?= 1
# Bytes of address space set aside for the isolated metadata region (mapped as it grows).
CONFIG_META_RESERVE ?= 17179869184
# The per-program policy file (rampart.conf(5)), read once at start-up and trusted only
# when owned by root and writable by nobody else; empty: no policy file. No spaces.
CONFIG_POLICY_PATH ?= /etc/rampart.conf
# Check the conditions the code states with invariant() (base/common.h); a broken one is
# fatal. For the check-* builds (test/check.mk turns it on), not for a release: 0 compiles
# them out.
CONFIG_INVARIANTS ?= 0

# --- profiles (run time: profile=strong|light, then any option above by name) ------
# The protections below the line "profile" in RAMPART_OPTIONS and /etc/rampart.conf
# chooses, option by option. strong takes the values above; light these instead.
# Slot choice in order, no write-after-free check, no slot or slab quarantine, a
# guard slab every 8 (madvise) or 32 (mprotect) slabs, no large-region quarantine
# (freed blocks kept with their pages instead, up to CONFIG_CACHE_RESIDENT_BYTES),
# large guards of at most 4 random pages, 16 call-site partitions (as many as strong:
# under light they cost the same instructions and peak RSS as 4,
# bench/results/2026-11-29-light-partitions.md).
CONFIG_LIGHT_SLOT_RANDOM ?= 0
CONFIG_LIGHT_WRITE_AFTER_FREE_CHECK ?= 0
CONFIG_LIGHT_SLOT_QUARANTINE_BYTES ?= 0
CONFIG_LIGHT_SLAB_QUARANTINE ?= 0
CONFIG_LIGHT_GUARD_SLAB_INTERVAL ?= 8
CONFIG_LIGHT_GUARD_SLAB_INTERVAL_MPROTECT ?= 32
CONFIG_LIGHT_REGION_QUARANTINE ?= 0
CONFIG_LIGHT_GUARD_MAX_PAGES ?= 4
CONFIG_LIGHT_PARTITIONS ?= 16
# The profile a process gets when nothing chooses one: 0 strong, 1 light. VARIANT=light
# builds the same library with light as that default, into out/light.
CONFIG_PROFILE_LIGHT ?= 0
ifeq ($(VARIANT),light)
CONFIG_PROFILE_LIGHT := 1
endif

# What each value may be. A wrong one stops the build before anything is compiled, with
# a message naming the option (config-check.mk); so does a CONFIG_ name given on the
# command line that is not listed here. Entries: NAME:flag (0 or 1), NAME:MIN:MAX (a
# whole number in decimal, leading zeros refused: C would read them as octal),
# NAME:pow2:MIN:MAX (0 or a power of two, in range), NAME:path (empty or an absolute
# path without spaces or quotes).
CONFIG_RULES := \
	CONFIG_GUARD_FRACTION:1:4096 \
	CONFIG_GUARD_MAX_PAGES:0:65536 \
	CONFIG_REGION_QUARANTINE:flag \
	CONFIG_REGION_QUARANTINE_RANDOM:1:4096 \
	CONFIG_REGION_QUARANTINE_FIFO:1:65536 \
	CONFIG_REGION_QUARANTINE_BYTES:0:70368744177664 \
	CONFIG_REGION_QUARANTINE_SKIP:4096:70368744177664 \
	CONFIG_REGION_QUARANTINE_MIN:1:65536 \
	CONFIG_HUGE_QUARANTINE_RANDOM:1:4096 \
	CONFIG_HUGE_QUARANTINE_FIFO:1:65536 \
	CONFIG_HUGE_QUARANTINE_BYTES:0:140737488355328 \
	CONFIG_CACHE_ENTRIES:1:65536 \
	CONFIG_CACHE_BYTES:0:70368744177664 \
	CONFIG_CACHE_MAX_WASTE_PERCENT:0:100 \
	CONFIG_CACHE_DECAY_MS:0:1099511627776 \
	CONFIG_CACHE_RESIDENT_BYTES:0:70368744177664 \
	CONFIG_LARGE_REFILL_BYTES:0:70368744177664 \
	CONFIG_LARGE_REFILL_MS:1:1099511627776 \
	CONFIG_SLAB_ARENAS:1:32 \
	CONFIG_SLAB_REGION_SHIFT:20:44 \
	CONFIG_SLAB_SPILL_REGIONS:0:65535 \
	CONFIG_SLAB_GROW_MIN:4096:1073741824 \
	CONFIG_SLAB_NURSERY_PAGES:pow2:0:1024 \
	CONFIG_SLAB_NURSERY_SHIFT:20:44 \
	CONFIG_SLOT_CANARY:flag \
	CONFIG_SLOT_RANDOM:flag \
	CONFIG_WRITE_AFTER_FREE_CHECK:flag \
	CONFIG_SLOT_QUARANTINE_BYTES:0:16777216 \
	CONFIG_PARTITIONS:pow2:1:16 \
	CONFIG_SLAB_FREE_BATCH:0:64 \
	CONFIG_GUARD_SLAB_INTERVAL:1:65536 \
	CONFIG_GUARD_SLAB_INTERVAL_MPROTECT:1:65536 \
	CONFIG_SLAB_EMPTY_CACHE:0:65536 \
	CONFIG_SLAB_EMPTY_CACHE_BYTES:0:1099511627776 \
	CONFIG_SLAB_EMPTY_DECAY_MS:1:1099511627776 \
	CONFIG_SLAB_EMPTY_MAX_FRACTION:1:1024 \
	CONFIG_SLAB_QUARANTINE:0:65536 \
	CONFIG_SLAB_RETURN_MS:0:2147483647 \
	CONFIG_REALLOC_HEADROOM_MAX:0:70368744177664 \
	CONFIG_SMALL_MAX:16:131072 \
	CONFIG_ZERO_ON_FREE:flag \
	CONFIG_LABEL_MEMORY:flag \
	CONFIG_META_RESERVE:16777216:70368744177664 \
	CONFIG_POLICY_PATH:path \
	CONFIG_INVARIANTS:flag \
	CONFIG_LIGHT_SLOT_RANDOM:flag \
	CONFIG_LIGHT_WRITE_AFTER_FREE_CHECK:flag \
	CONFIG_LIGHT_SLOT_QUARANTINE_BYTES:0:16777216 \
	CONFIG_LIGHT_SLAB_QUARANTINE:0:65536 \
	CONFIG_LIGHT_GUARD_SLAB_INTERVAL:1:65536 \
	CONFIG_LIGHT_GUARD_SLAB_INTERVAL_MPROTECT:1:65536 \
	CONFIG_LIGHT_REGION_QUARANTINE:flag \
	CONFIG_LIGHT_GUARD_MAX_PAGES:0:65536 \
	CONFIG_LIGHT_PARTITIONS:pow2:1:16 \
	CONFIG_PROFILE_LIGHT:flag
# A switch that only works with another one on: NAME:NEEDED.
CONFIG_NEEDS := CONFIG_WRITE_AFTER_FREE_CHECK:CONFIG_ZERO_ON_FREE CONFIG_LIGHT_WRITE_AFTER_FREE_CHECK:CONFIG_ZERO_ON_FREE

include config-check.mk
