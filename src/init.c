/*
 * init.c — first-use initialisation, the read-only roots, and fork handling.
 */
#define _GNU_SOURCE
#include "init.h"

#include <pthread.h>
#include <sys/mman.h>

#include "guard.h"
#include "large.h"
#include "meta.h"
#include "os.h"
#include "slab.h"

/* The roots sit alone on their page so that page can be made read-only. */
_Static_assert(sizeof(struct rampart_roots) <= RO_ALIGN, "roots must fit one page");
union ro_page ro_page __attribute__((aligned(RO_ALIGN)));

_Atomic int rampart_state = STATE_NEW;
static pthread_mutex_t init_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool fork_handlers_registered;

/* Locks in the order they are always taken: meta innermost. */
static void fork_prepare(void)
{
	slab_fork_prepare();
	large_fork_prepare();
	meta_lock();
}

static void fork_parent(void)
{
	meta_unlock();
	large_fork_parent();
	slab_fork_parent();
}

static void fork_child(void)
{
	meta_reset_lock();
	large_fork_child();
	slab_fork_child();
}

static void protect_roots(void)
{
	if (os_page != RO_ALIGN) return; /* larger pages: the roots share a page, leave it */
	if (os_protect(&ro, RO_ALIGN, PROT_READ)) os_warn("cannot make the roots read-only", NULL);
}

bool rampart_init_slow(void)
{
	pthread_mutex_lock(&init_mutex);
	bool ok = atomic_load_explicit(&rampart_state, memory_order_relaxed) == STATE_READY;
	if (!ok) {
		os_init();
		options_read(&ro.opt);
		guard_init(ro.opt.guard);
		ok = (ro.meta || meta_init()) && (ro.slab.classes || slab_init()) && (ro.large || large_init());
		if (ok) {
			protect_roots();
			atomic_store_explicit(&rampart_state, STATE_READY, memory_order_release);
		}
	}
	pthread_mutex_unlock(&init_mutex);
	/* Registration may allocate; the allocator is ready by now, so that is safe. */
	if (ok && !atomic_exchange(&fork_handlers_registered, true))
		pthread_atfork(fork_prepare, fork_parent, fork_child);
	return ok;
}
