/*
 * slab_death — every heap bug the slab allocator must stop, one forked child each.
 *
 * Harness (self-contained): each case runs in a forked child whose stderr goes
 * through a pipe; the case passes only if the child dies by the expected signal and,
 * for SIGABRT, wrote a "rampart: fatal:" line. A child that exits normally means the
 * bug went unnoticed. Prints one line per case and a summary; exits 1 on any failure.
 * A case whose bug is found when its slot is handed out again makes the block and the
 * allocations that take the slot back at one call site (site.h): with call-site
 * partitions nothing else takes it.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rampart.h"
#include "../all_arenas.h"
#include "../profile.h"
#include "../site.h"

static volatile char sink;
static char global_buffer[64];

static void double_free(void)
{
	void *p = malloc(32);
	free(p);
	free(p);
}

/* The slot has surely left the quarantine (and may have been reused and freed again). */
static void double_free_after_many(void)
{
	enum { N = 100000 };
	static void *v[N];
	void *p = malloc(32);
	for (int i = 0; i < N; i++) v[i] = malloc(32);
	free(p);
	for (int i = 0; i < N; i++) free(v[i]);
	free(p);
}

static void interior_free(void)
{
	char *p = malloc(64);
	free(p + 16);
}

static void stack_free(void)
{
	char buf[64];
	sink = buf[0] = 1;
	free(buf);
}

static void global_free(void) { free(global_buffer); }

/* A slot start that was never handed out: the neighbour, in the same slab, of the only
 * block of class 14336 (4 slots per slab, 3.5 pages apart: an even slot starts on a
 * page and has its same-slab neighbour above it, an odd slot below it). */
static void unused_slot_free(void)
{
	char *p = malloc(14000);
	long page = sysconf(_SC_PAGESIZE);
	free((uintptr_t)p % (uintptr_t)page == 0 ? p + 14336 : p - 14336);
}

static void overflow_one_byte(void)
{
	char *p = malloc(24);
	p[malloc_usable_size(p)] = 'x';
	free(p);
}

static void overflow_eighth_byte(void)
{
	char *p = malloc(100);
	p[malloc_usable_size(p) + 7] ^= 0x5a; /* a constant would match the random byte 1 time in 256 */
	free(p);
}

static void overflow_then_realloc(void)
{
	char *p = malloc(40);
	memset(p, 'x', malloc_usable_size(p) + 3);
	p = realloc(p, 44);
	sink = p[0];
}

/* A 48-byte block with live neighbours in its slab, so its slot stays mapped after the
 * free that comes next. */
static char *block_among_neighbours(void)
{
	enum { NEIGHBOURS = 8 };
	static void *keep[NEIGHBOURS];
	for (int i = 0; i < NEIGHBOURS; i++) keep[i] = malloc(48);
	sink = (char)(uintptr_t)keep[NEIGHBOURS - 1];
	return site_malloc(48);
}

/* Free many 48-byte blocks (pushes a freed slot out of the quarantine), then allocate
 * until some allocation gets that slot back. */
static void reuse_freed_48(void)
{
	/* ROUNDS x CHURN frees: the quarantine's FIFO (8,192 slots) and then some, enough
	 * that the slot surely left its random array (4,096 entries: it stays there past
	 * n frees with probability e^(-n/4096), about 1e-8 here; one CHURN alone was not
	 * always enough: CI saw it once). FILL then takes every free slot of the class. */
	enum { ROUNDS = 4, CHURN = 20000, FILL = 200000 };
	static void *v[FILL];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < CHURN; i++) v[i] = site_malloc(48);
		for (int i = 0; i < CHURN; i++) free(v[i]);
	}
	for (int i = 0; i < FILL; i++) v[i] = site_malloc(48);
}

static void write_after_free(void)
{
	char *p = block_among_neighbours();
	free(p);
	p[5] = 'x'; /* the bug */
	reuse_freed_48();
}

/* A stale pointer writes past the freed block, over the canary the slot keeps: found
 * when the slot, handed out again, is freed (or when the slot after it is). */
static void stale_write_over_canary(void)
{
	enum { N = 5000, ROUNDS = 40 };
	static void *v[N];
	char *p = block_among_neighbours();
	size_t usable = malloc_usable_size(p);
	free(p);
	p[usable + 3] ^= 0x5a; /* the bug */
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++) v[i] = site_malloc(48);
		for (int i = 0; i < N; i++) free(v[i]);
	}
}

/* The same in a class with a dirty extent per slot: a write inside what the program
 * asked for is found when the slot is handed out again. */
static void write_after_free_big(void)
{
	enum { NEIGHBOURS = 12, CHURN = 300, FILL = 3000 };
	static void *keep[NEIGHBOURS], *v[FILL];
	for (int i = 0; i < NEIGHBOURS; i++) keep[i] = malloc(5000);
	sink = (char)(uintptr_t)keep[NEIGHBOURS - 1];
	char *p = site_malloc(5000);
	free(p);
	p[4000] = 'x';
	/* Rounds, as in reuse_freed_48: the class's random array holds 32 entries, where
	 * the slot stays past n frees with probability (31/32)^n; one CHURN is too few. */
	for (int r = 0; r < 8; r++) {
		for (int i = 0; i < CHURN; i++) v[i] = site_malloc(5000);
		for (int i = 0; i < CHURN; i++) free(v[i]);
	}
	for (int i = 0; i < FILL; i++) v[i] = site_malloc(5000);
}

/* Run fn(arg) on a new thread and wait for it. The harness itself starts no thread, so
 * the new one is sent to another arena than the main thread's (arenas go round-robin):
 * its frees of the main thread's blocks are cross-arena frees, whose slots wait in the
 * class's deferred list before they enter the quarantine. */
static void on_other_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, arg) || pthread_join(t, NULL)) _exit(3);
}

static void *free_it(void *p)
{
	free(p);
	return NULL;
}

static void *free_it_twice(void *p)
{
	free(p);
	free(p);
	return NULL;
}

/* The second free comes while the first waits deferred: caught at once, by the same
 * state bit as a double free in one thread. */
static void double_free_deferred(void)
{
	void *p = malloc(32);
	on_other_thread(free_it_twice, p);
}

static void double_free_deferred_then_owner(void)
{
	void *p = malloc(32);
	on_other_thread(free_it, p);
	free(p);
}

/* A write after a cross-arena free, while the slot waits deferred: the free wiped the
 * slot before deferring it, so the reuse finds the write as in write_after_free. */
static void write_after_free_deferred(void)
{
	char *p = block_among_neighbours();
	on_other_thread(free_it, p);
	p[5] = 'x';
	reuse_freed_48();
}

/* A thread of another arena that frees a block and stays alive until told to end:
 * while it lives, the slot waits in its free batch (frees from another arena's thread
 * enter the quarantine a batch at a time; its exit lets the batch go). */
struct batch_holder {
	pthread_t thread;
	void *p;
	int freed[2], end[2];
};

static void *free_and_hold(void *arg)
{
	struct batch_holder *h = arg;
	char c = 0;
	free(h->p);
	if (write(h->freed[1], &c, 1) != 1 || read(h->end[0], &c, 1) != 1) _exit(3);
	return NULL;
}

static void batch_holder_start(struct batch_holder *h, void *p)
{
	char c;
	h->p = p;
	if (pipe(h->freed) || pipe(h->end) || pthread_create(&h->thread, NULL, free_and_hold, h) ||
	    read(h->freed[0], &c, 1) != 1)
		_exit(3);
}

static void batch_holder_end(struct batch_holder *h)
{
	if (write(h->end[1], "", 1) != 1 || pthread_join(h->thread, NULL)) _exit(3);
}

/* The owner frees a block again while another thread's free of it waits in that
 * thread's batch: the batched mark in the slot's canary word tells it is freed. */
static void double_free_while_batched_owner(void)
{
	static struct batch_holder h;
	void *p = malloc(32);
	batch_holder_start(&h, p);
	free(p);
}

/* The same second free from a third thread (its own arena again). */
static void double_free_while_batched_third(void)
{
	static struct batch_holder h;
	void *p = malloc(32);
	batch_holder_start(&h, p);
	on_other_thread(free_it, p);
}

/* The second free comes when the thread's batch is full: the batch, the first free
 * among its slots, enters the quarantine before the second free is judged. */
static void *free_batch_then_last_again(void *arg)
{
	void **v = arg;
	int n = 0;
	while (v[n]) free(v[n++]);
	free(v[n - 1]);
	return NULL;
}

static void double_free_full_batch(void)
{
	enum { N = CONFIG_SLAB_FREE_BATCH ? CONFIG_SLAB_FREE_BATCH : 14 };
	static void *v[N + 1];
	for (int i = 0; i < N; i++) v[i] = malloc(32);
	on_other_thread(free_batch_then_last_again, v);
}

/* Two threads of different arenas free one block at the same moment, the owner under
 * the class lock and the other with its batched claim: if both pass, the slot is in
 * the quarantine and in a batch, and the mark the batched free left in its first word
 * is found when the batch enters the quarantine (here at the thread's exit), at the
 * slot's reuse, or by a neighbour's free, whichever comes first. */
static void *volatile race_block;
static atomic_int race_ready, race_go;

static void *race_free(void *arg)
{
	(void)arg;
	atomic_store(&race_ready, 1);
	while (!atomic_load(&race_go)) {}
	free(race_block);
	return NULL;
}

static void double_free_at_once(void)
{
	for (int round = 0; round < 200; round++) {
		pthread_t t;
		race_block = malloc(2000);
		atomic_store(&race_ready, 0);
		atomic_store(&race_go, 0);
		if (pthread_create(&t, NULL, race_free, NULL)) _exit(3);
		while (!atomic_load(&race_ready)) {}
		for (volatile int d = 0; d < round % 40 * 3; d++) {}
		atomic_store(&race_go, 1);
		free(race_block);
		if (pthread_join(t, NULL)) _exit(3);
	}
}

static void realloc_while_batched(void)
{
	static struct batch_holder h;
	void *p = malloc(200);
	batch_holder_start(&h, p);
	sink = (char)(uintptr_t)realloc(p, 100);
}

static void usable_size_while_batched(void)
{
	static struct batch_holder h;
	void *p = malloc(200);
	batch_holder_start(&h, p);
	sink = (char)malloc_usable_size(p);
}

static void object_size_while_batched(void)
{
	static struct batch_holder h;
	char *p = malloc(200);
	batch_holder_start(&h, p);
	sink = (char)malloc_object_size(p + 10);
}

/* A stale write puts the slab's canary (read off a live neighbour) back over a batched
 * slot's mark, so the owner's second free passes its checks and the slot enters the
 * quarantine: the batch, entering it too, finds the slot quarantined already. */
static void double_free_mark_forged(void)
{
	static struct batch_holder h;
	char *live = block_among_neighbours(); /* same class, same slab's canary */
	char *p = malloc(48);
	size_t usable = malloc_usable_size(p);
	batch_holder_start(&h, p);
	memcpy(p + usable, live + usable, 8); /* the bug: the mark replaced */
	memset(p, 0, 8);
	free(p); /* passes: a live slot with its canary, by the bits */
	batch_holder_end(&h);
}

/* A write after free while the slot waits in the freeing thread's batch: its first
 * word holds the batched mark, which the batch's entry into the quarantine finds
 * changed. The write flips bits rather than storing a constant: a constant equal to
 * the mark's byte there (1 in 256 processes, the mark being random) changes nothing,
 * and the entry then wipes the word, so no check could see it. */
static void write_after_free_while_batched(void)
{
	static struct batch_holder h;
	char *p = block_among_neighbours();
	batch_holder_start(&h, p);
	p[5] ^= 0x5a; /* the bug */
	batch_holder_end(&h);
	reuse_freed_48();
}

/* A stale write over the canary word of a batched slot (where the mark is): found when
 * the batch enters the quarantine. Without batches (the light variant), when the slot
 * is handed out again and freed. */
static void canary_write_while_batched(void)
{
	enum { N = 5000, ROUNDS = 40 };
	static struct batch_holder h;
	static void *v[N];
	char *p = block_among_neighbours();
	size_t usable = malloc_usable_size(p);
	batch_holder_start(&h, p);
	p[usable + 3] ^= 0x5a; /* the bug */
	batch_holder_end(&h);
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < N; i++) v[i] = site_malloc(48);
		for (int i = 0; i < N; i++) free(v[i]);
	}
}

static void zero_size_read(void)
{
	char *p = malloc(0);
	sink = *(volatile char *)p;
}

static void zero_size_write(void)
{
	char *p = malloc(0);
	*(volatile char *)p = 1;
}

static void sized_free_wrong_size(void)
{
	void *p = malloc(100);
	free_sized(p, 300);
}

static void sized_free_smaller_class(void)
{
	void *p = malloc(1000);
	free_sized(p, 100);
}

/* 200 bytes aligned to 256 take a slot of 256, 200 bytes aligned to 16 one of 224 with
 * or without canaries (256 aligned to 256 would share the class of 256 without). */
static void aligned_sized_free_wrong_alignment(void)
{
	void *p = aligned_alloc(256, 200);
	free_aligned_sized(p, 16, 200);
}

/* A pointer into a slab whose slot went back and which was closed (the empty cache
 * holds one): a stale pointer into it is neither freeable nor readable. */
static void *pointer_into_freed_slab(void)
{
	void *a = malloc(100000), *b = malloc(100000), *c = malloc(100000); /* 1 slot per slab */
	free(a);
	free(b);
	free(c);
	void *d[64];
	for (int i = 0; i < 64; i++) d[i] = malloc(100000); /* churn the quarantine */
	for (int i = 0; i < 64; i++) free(d[i]);
	return b;
}

static void free_into_freed_slab(void) { free(pointer_into_freed_slab()); }

static void usable_size_of_freed(void)
{
	void *p = malloc(77);
	free(p);
	sink = (char)malloc_usable_size(p);
}

/* The size questions below take the unlocked path first (slot_alloc.c), which must
 * hand every one of these to the locked path's report. */
static void usable_size_of_interior(void)
{
	char *p = malloc(64);
	sink = (char)malloc_usable_size(p + 16);
}

static void usable_size_of_unused_slot(void)
{
	char *p = malloc(14000);
	long page = sysconf(_SC_PAGESIZE);
	sink = (char)malloc_usable_size((uintptr_t)p % (uintptr_t)page == 0 ? p + 14336 : p - 14336);
}

static void usable_size_in_freed_slab(void) { sink = (char)malloc_usable_size(pointer_into_freed_slab()); }

static void wild_pointer_free(void) { free((void *)(uintptr_t)0x10000); }

struct death_case {
	const char *name;
	void (*fn)(void);
	int sig;
	int needs; /* 1: needs the write-after-free check, 2: canaries (without, the bytes
		    * past a block are the next slot's, or past the slab's end) */
	const char *says; /* SIGABRT: the fatal line must also hold this (NULL: any) */
};

static const struct death_case cases[] = {
	{"double free (immediate)", double_free, SIGABRT, 0, NULL},
	{"double free after 100000 other frees", double_free_after_many, SIGABRT, 0, NULL},
	{"free of an interior pointer", interior_free, SIGABRT, 0, NULL},
	{"free of a stack pointer", stack_free, SIGABRT, 0, NULL},
	{"free of a global pointer", global_free, SIGABRT, 0, NULL},
	{"free of a never-allocated slot", unused_slot_free, SIGABRT, 0, NULL},
	{"free of a wild pointer", wild_pointer_free, SIGABRT, 0, NULL},
	{"1 byte past malloc_usable_size, then free", overflow_one_byte, SIGABRT, 2, NULL},
	{"8th byte past malloc_usable_size, then free", overflow_eighth_byte, SIGABRT, 2, NULL},
	{"overflow, then realloc", overflow_then_realloc, SIGABRT, 2, NULL},
	{"write after free, detected on reuse", write_after_free, SIGABRT, 1, NULL},
	{"write after free in a 5 KiB slot, detected on reuse", write_after_free_big, SIGABRT, 1, NULL},
	{"stale write over a freed slot's canary, detected at a later free", stale_write_over_canary, SIGABRT, 2, NULL},
	{"double free by another thread, first free deferred", double_free_deferred, SIGABRT, 0, NULL},
	{"free by another thread, then by the owner", double_free_deferred_then_owner, SIGABRT, 0, NULL},
	{"write after another thread's free", write_after_free_deferred, SIGABRT, 1, NULL},
	{"double free by the owner, first free batched", double_free_while_batched_owner, SIGABRT, 0, NULL},
	{"double free by a third thread, first batched", double_free_while_batched_third, SIGABRT, 0, NULL},
	{"double free by the same thread, batch full", double_free_full_batch, SIGABRT, 0, NULL},
	{"double free in two threads at the same moment", double_free_at_once, SIGABRT, 0, NULL},
	{"realloc of a block in another thread's batch", realloc_while_batched, SIGABRT, 0, NULL},
	{"malloc_usable_size of a batched block", usable_size_while_batched, SIGABRT, 0, NULL},
	{"malloc_object_size of a batched block", object_size_while_batched, SIGABRT, 0, NULL},
	{"second free after the batched mark is forged", double_free_mark_forged, SIGABRT, 2, NULL},
	{"write after free into a batched slot", write_after_free_while_batched, SIGABRT, 1, NULL},
	{"write over a batched slot's canary", canary_write_while_batched, SIGABRT, 2, NULL},
	{"read of a malloc(0) pointer", zero_size_read, SIGSEGV, 0, NULL},
	{"write to a malloc(0) pointer", zero_size_write, SIGSEGV, 0, NULL},
	/* The line shows the size passed, and the slot's usable size (which depends on the
	 * build's canaries: only its start is asserted). */
	{"free_sized with a bigger size", sized_free_wrong_size, SIGABRT, 0, ": passed size 300, the block's size "},
	{"free_sized with a smaller size", sized_free_smaller_class, SIGABRT, 0, ": passed size 100, the block's size "},
	{"free_aligned_sized with a wrong alignment", aligned_sized_free_wrong_alignment, SIGABRT, 0,
	 ": passed size 200 aligned to 16, the block's size "},
	{"free into a freed slab", free_into_freed_slab, SIGABRT, 0, NULL},
	{"malloc_usable_size of a freed pointer", usable_size_of_freed, SIGABRT, 0, NULL},
	{"malloc_usable_size of an interior pointer", usable_size_of_interior, SIGABRT, 0, NULL},
	{"malloc_usable_size of a never-allocated slot", usable_size_of_unused_slot, SIGABRT, 0, NULL},
	{"malloc_usable_size into a freed slab", usable_size_in_freed_slab, SIGABRT, 0, NULL},
};

/* Run one case; true if the child died as expected. */
static int run_case(const struct death_case *c)
{
	int fds[2];
	if (pipe(fds)) return 0;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) return 0;
	if (pid == 0) {
		struct rlimit none = {0, 0};
		setrlimit(RLIMIT_CORE, &none);
		close(fds[0]);
		dup2(fds[1], 2);
		signal(SIGABRT, SIG_DFL);
		signal(SIGSEGV, SIG_DFL);
		c->fn();
		_exit(0);
	}
	close(fds[1]);
	char buf[4096];
	size_t len = 0;
	ssize_t n;
	while ((n = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0 && len + (size_t)n < sizeof buf - 1) len += (size_t)n;
	buf[len] = 0;
	close(fds[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0) {}
	int ok = WIFSIGNALED(status) && WTERMSIG(status) == c->sig;
	const char *line = strstr(buf, "rampart: fatal:");
	if (ok && c->sig == SIGABRT) ok = line && (!c->says || strstr(line, c->says));
	if (WIFSIGNALED(status)) printf("%-4s %-46s %s", ok ? "ok" : "FAIL", c->name, strsignal(WTERMSIG(status)));
	else printf("%-4s %-46s exited with status %d", ok ? "ok" : "FAIL", c->name, WEXITSTATUS(status));
	if (line) printf("  [%.*s]", (int)strcspn(line, "\n"), line);
	printf("\n");
	return ok;
}

int main(int argc, char **argv)
{
	(void)argc;
	all_arenas(argv); /* the cases of frees from another arena */
	int passed = 0, failed = 0, skipped = 0;
	const int count = (int)(sizeof cases / sizeof *cases);
	for (int i = 0; i < count; i++) {
		if (cases[i].needs == 1 && !test_waf_check()) {
			printf("skip %-46s (no write-after-free check in this process: write_after_free_check=off)\n",
			       cases[i].name);
			skipped++;
			continue;
		}
		if (cases[i].needs == 2 && !CONFIG_SLOT_CANARY) {
			printf("skip %-46s (no canaries in this build)\n", cases[i].name);
			skipped++;
			continue;
		}
		if (run_case(&cases[i])) passed++;
		else failed++;
	}
	printf("slab_death: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
	if (skipped == count) { /* nothing was tested: not a pass (test/results.sh) */
		fprintf(stderr, "SKIP: every case needs the write-after-free check or canaries, which this build lacks\n");
		return 77;
	}
	return failed ? 1 : 0;
}
