/*
 * init.c — first-use initialisation, the read-only roots, and fork handling; the
 * options are read at load time (read_options_at_load, at the end).
 *
 * The first call decides, once, between rampart and the C library's allocator
 * (passthrough, chosen by the policy file or RAMPART_OPTIONS): before anything is
 * mapped, so a passthrough process holds no rampart reservation at all.
 */
#define _GNU_SOURCE
#include "front/init.h"

#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>

#include "base/report.h"
#include "guard/guard.h"
#include "large/large.h"
#include "os/lock.h"
#include "guard/meta.h"
#include "os/mte.h"
#include "os/os.h"
#include "front/cxx.h"
#include "front/options.h"
#include "front/passthrough.h"
#include "front/policy.h"
#include "os/random.h"
#include "slab/slab.h"
#include "front/stats.h"
#include "base/text.h"
#include "rampart.h"

_Static_assert(ROOTS_SLAB_CLASSES == SC_COUNT, "the roots size the nursery's table by the class count");

static struct lock init_lock; /* all zero: free */
static bool fork_handlers_registered; /* under init_lock */
/* dealloc_kind was on, but the program has operators of its own (cxx.h): turned off. */
static bool cxx_replaced;
/* This thread is finishing initialisation and everything is usable already. Volatile:
 * libc declares pthread_atfork a leaf (it never calls back into this file), so the
 * compiler would drop the store before the call — yet its malloc does come back. */
static __thread volatile bool init_finishing __attribute__((tls_model("initial-exec")));

/* Whether the last fork_prepare took every lock. Only when other threads exist: with
 * one thread nobody holds a lock at fork (rampart never forks from inside itself), and
 * every page the handlers write would become a copy in parent and child alike — the
 * cost of a shell's fork + exec (taking every lock nearly doubled a shell's page
 * faults: bench/journal/2026-11-27-figures-from-code-comments.md). */
static bool fork_locked;

/* Locks in the order they are always taken: meta innermost. */
static void fork_prepare(void)
{
	fork_locked = !os_single_threaded();
	if (!fork_locked) return;
	slab_fork_prepare();
	large_fork_prepare();
	meta_lock();
}

static void fork_parent(void)
{
	if (!fork_locked) return;
	meta_unlock();
	large_fork_parent();
	slab_fork_parent();
}

static void fork_child(void)
{
	random_fork_child(); /* the kernel's wipe by hand, where it did not happen */
	large_fork_child(fork_locked);
	if (!fork_locked) return;
	meta_reset_lock();
	slab_fork_child();
}

/* RAMPART_OPTIONS=verbose=1: one line on what start-up chose; the options in it as the
 * option table spells them (front/options.c). */
static void say_choices(void)
{
	char space[1024];
	struct out o = out_fd(2, space, sizeof space);
	out_str(&o, "rampart: version " RAMPART_VERSION "; guard backend ");
	out_str(&o, guard_backend_name());
	out_str(&o, "; memory tagging ");
	out_str(&o, mte_state_name(roots.mte));
	out_str(&o, "; ");
	options_say_profile(&o, &roots.opt);
	out_str(&o, "; slab arenas ");
	out_num(&o, roots.slab.arenas);
	char num[24];
	out_str(&o, "; stats ");
	out_str(&o, option_value_text(OPTION_STATS, &roots.opt.stats, num));
	/* Where the report will go. On stderr it is lost when the program closes stderr
	 * before it exits, and anywhere when it ends with _exit, which runs no destructor:
	 * nothing can tell either at exit any more, so it is said now, once. */
	if (roots.opt.stats && roots.opt.stats_file[0] && !getauxval(AT_SECURE)) {
		out_str(&o, " to ");
		out_str(&o, roots.opt.stats_file);
		out_str(&o, " at exit (none if the program ends with _exit, as dash does)");
	} else if (roots.opt.stats) {
		out_str(&o, " on stderr at exit (none if the program closes stderr first, as ls and sort do: "
			    "stats_file=PATH; nor if it ends with _exit, as dash does)");
	}
	/* Every other option, as the table spells it; these are said above in words of their
	 * own (arenas: the count chosen, not the option's 0 for "one per core"), or say
	 * nothing of this process (help, verbose). */
	static const char *const said[] = {"profile", "guard", "mte", "arenas", "stats", "stats_file",
					   "verbose", "help", NULL};
	out_str(&o, "; ");
	options_say_rest(&o, &roots.opt, said);
	if (cxx_replaced) out_str(&o, " (dealloc_kind off: the program replaces operator new or delete)");
	out_str(&o, "\n");
	out_flush(&o);
}

/* The secret of the call-site partitions (base/partition.h), kept in the roots, which are
 * sealed with it. A fork child keeps it: a new one would put the child's new blocks in
 * other partitions than its parent's blocks of the same site, and a block allocated
 * before the fork and freed in the child would then go to a partition other sites of
 * the child share (docs/slab.md, "Call-site partitions"). */
static void draw_partition_key(void)
{
	random_entropy(roots.part_key, sizeof roots.part_key);
	roots.part_key[1] |= 1;
	roots.part_key[2] |= 1;
}

static void protect_roots(void)
{
	if (os_page != ROOTS_PAGE_BYTES) return; /* larger pages: the roots share a page, leave it */
	if (os_read_only(&roots, ROOTS_PAGE_BYTES)) report_warn(WARN_ROOTS_WRITABLE, NULL);
}

/* Start the modules bottom-up, each handing back its roots, which only this file writes
 * (before they are made read-only). A module that failed is started again at the next
 * call; those that started are kept. Under the init lock. */
static bool start_modules(void)
{
	/* The slab window first (slab.h says why); once set aside it stays for the next try
	 * when a later step fails. */
	static struct slab_roots slab;
	if (!roots.slab.classes && !slab.size && !slab_window(&slab)) return false;
	if (!roots.meta && !(roots.meta = meta_init())) return false; /* meta_alloc reads it from here on */
	if (!roots.slab.classes) {
		if (!slab_init(&slab)) return false;
		roots.slab = slab;
		/* The roots are made read-only; no writable copy of them stays behind. */
		explicit_bzero(&slab, sizeof slab);
	}
	return roots.large || (roots.large = large_init());
}

/* The options, and what the policy file did: read once, under the init lock, when the
 * library is loaded or by the first call, whichever comes first. */
static bool options_known;
static struct policy_status policy_seen;

static void read_options(void)
{
	if (options_known) return;
	os_init();
	policy_read(&roots.opt, &policy_seen);
	options_known = true;
}

/* passthrough: the C library serves this process for good. Under the init lock. */
static bool become_passthrough(const struct policy_status *ps)
{
	if (!passthrough_available()) {
		report_warn(WARN_NO_PASSTHROUGH, NULL);
		roots.opt.passthrough = false;
		return false;
	}
	protect_roots();
	if (roots.opt.verbose) {
		policy_say(ps);
		char space[160];
		struct out o = out_fd(2, space, sizeof space);
		out_str(&o, "rampart: version " RAMPART_VERSION "; passthrough: every call goes to the C library's "
			    "allocator\n");
		out_flush(&o);
	}
	atomic_store_explicit(&rampart_state, STATE_PASSTHROUGH, memory_order_release);
	return true;
}

bool rampart_init_slow(void)
{
	/* A call made by pthread_atfork below (musl's allocates): serve it. */
	if (init_finishing) return true;
	/* Decided for good: no lock on the way to the C library. */
	if (atomic_load_explicit(&rampart_state, memory_order_acquire) == STATE_PASSTHROUGH) return false;
	lock_take(&init_lock);
	int state = atomic_load_explicit(&rampart_state, memory_order_relaxed);
	bool ok = state == STATE_READY;
	if (state == STATE_NEW) {
		read_options();
		if (roots.opt.passthrough && become_passthrough(&policy_seen)) {
			lock_give(&init_lock);
			return false;
		}
		/* A replaced operator may pass blocks between rampart's C functions and its
		 * operators as the standard allows: kinds are neither recorded nor checked. */
		if (roots.opt.dealloc_kind && !cxx_operators_own()) {
			roots.opt.dealloc_kind = false;
			cxx_replaced = true;
		}
		random_init();
		if (roots.opt.partitions > 1) draw_partition_key();
		guard_init(roots.opt.guard);
		roots.mte = mte_start(roots.opt.mte); /* before the slab regions, mapped tagged if so */
		ok = start_modules();
		if (ok) {
			protect_roots();
			if (roots.opt.verbose) {
				say_choices();
				policy_say(&policy_seen);
			}
			/* The fork handlers exist before any other thread can take one of the
			 * allocator's locks: those wait for the ready flag, set only after. */
			if (!fork_handlers_registered) {
				init_finishing = true;
				fork_handlers_registered = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
				init_finishing = false;
				if (!fork_handlers_registered) report_warn(WARN_FORK_HANDLERS, NULL);
			}
			atomic_store_explicit(&rampart_state, STATE_READY, memory_order_release);
		}
	}
	lock_give(&init_lock);
	return ok;
}

/* A program that never allocates (/bin/true) would otherwise never read its options:
 * help=1, verbose=1 and the warnings for bad entries would print nothing. Reading them
 * at load costs what the first call would have spent on it anyway (a getenv, the
 * policy file's open); the rest of start-up waits for the first call, except under
 * verbose=1, whose line tells what start-up chose. Nothing happens if a call came
 * first (another library's constructor that allocates). */
__attribute__((constructor)) static void read_options_at_load(void)
{
	if (atomic_load_explicit(&rampart_state, memory_order_acquire) != STATE_NEW) return;
	lock_take(&init_lock);
	bool start_now = false;
	if (atomic_load_explicit(&rampart_state, memory_order_relaxed) == STATE_NEW) {
		read_options();
		start_now = roots.opt.verbose;
	}
	lock_give(&init_lock);
	if (start_now) {
		bool started = rampart_init_slow(); /* a failure is retried by the first call */
		(void)started;
	}
}
