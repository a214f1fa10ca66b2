// cxx_kind_death — blocks freed otherwise than they were allocated (dealloc_kind):
// free, realloc or free_sized of what operator new or new[] made, delete of new[]'s or
// malloc's, delete[] of new's or malloc's. Each must end in SIGABRT with the line that
// names both the deallocation and the allocation. Controls: every matched pair goes
// through, in small and large blocks, from the allocating thread and from another one
// (a batched free); under dealloc_kind=off the mismatches go through silently, and under
// on_error=report they are reported and go through. Built three times: linked with
// librampart.a (death/cxx_kind_death) and with librampart.so (death/cxx_kind_death_so),
// both with the shared libstdc++, and with librampart.a and -static-libstdc++
// (death/cxx_kind_death_static).
//
// Each case runs in a forked child; one that needs other options runs in a child that
// executes this program again with them added to RAMPART_OPTIONS (read at load).
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>

#include "rampart.h"

static void escape(void *p) { asm volatile("" : : "r"(p) : "memory"); }
// Hide where a pointer came from, so the compiler does not diagnose the bug we commit.
template <class T> static T *hide(T *p)
{
	asm volatile("" : "+r"(p) : : "memory");
	return p;
}

static const std::size_t SMALL = 24, LARGE = 300000;

// --- the mismatches ---------------------------------------------------------------

static void free_of_new_small() { free(hide(new int(1))); }
static void free_of_new_array_small() { free(hide(new char[SMALL])); }
static void free_of_new_large() { free(hide(::operator new(LARGE))); }
static void free_of_new_array_large() { free(hide(::operator new[](LARGE))); }
static void free_sized_of_new() { free_sized(hide(::operator new(SMALL)), SMALL); }
static void realloc_of_new_small() { escape(realloc(hide(::operator new(SMALL)), 4 * SMALL)); }
static void realloc_of_new_array_large() { escape(realloc(hide(::operator new[](LARGE)), 2 * LARGE)); }
// A large block realloc moves into a slot: its kind is asked before the move.
static void realloc_of_new_large_to_small() { escape(realloc(hide(::operator new(LARGE)), SMALL)); }
static void delete_of_new_array_small() { ::operator delete(hide(::operator new[](SMALL))); }
static void delete_of_new_array_large() { ::operator delete(hide(::operator new[](LARGE))); }
// The kind is judged before the size: the size is right, the kind is not.
static void sized_delete_of_new_array() { ::operator delete(hide(::operator new[](SMALL)), SMALL); }
static void nothrow_delete_of_new_array() { ::operator delete(hide(::operator new[](SMALL)), std::nothrow); }
static void delete_of_malloc_small() { ::operator delete(hide(malloc(SMALL))); }
static void delete_of_malloc_large() { ::operator delete(hide(malloc(LARGE))); }
static void delete_of_calloc() { ::operator delete(hide(calloc(4, SMALL))); }
// mimalloc-bench's invalid_array_delete_char: new char, delete[].
static void array_delete_of_new_char()
{
	char *p = hide(new char);
	delete[] p;
}
static void array_delete_of_new_large() { ::operator delete[](hide(::operator new(LARGE))); }
static void array_delete_of_malloc() { ::operator delete[](hide(malloc(SMALL))); }
static void sized_array_delete_of_new() { ::operator delete[](hide(::operator new(SMALL)), SMALL); }
static void aligned_array_delete_of_aligned_new()
{
	std::align_val_t al{64};
	::operator delete[](hide(::operator new(SMALL, al)), al);
}
static void aligned_delete_of_aligned_malloc()
{
	void *p = nullptr;
	if (posix_memalign(&p, 4096, LARGE)) _exit(3);
	::operator delete(hide(p), std::align_val_t(4096));
}

// Another thread frees what this one allocated: a free into another arena waits in
// that thread's batch, whose own check must decline it for the locked path to report.
static void *delete_in_thread(void *p)
{
	::operator delete(p);
	return nullptr;
}
static void delete_of_new_array_in_thread()
{
	void *warm = ::operator new[](SMALL); // this class, set up in this thread's arena
	escape(warm);
	pthread_t t;
	if (pthread_create(&t, nullptr, delete_in_thread, hide(::operator new[](SMALL)))) _exit(3);
	pthread_join(t, nullptr);
}

// --- the controls -----------------------------------------------------------------

static void *delete_array_in_thread(void *p)
{
	char *q = static_cast<char *>(malloc(SMALL)); // this thread's arena, set up
	free(q);
	::operator delete[](p);
	return nullptr;
}

// The churn's one call site for malloc and operator new[] alike: a call through a
// pointer returns to the same address whichever function it reaches, and that address
// is the allocation's call site for both (src/front/cxx.c takes an operator's caller as
// malloc takes its own), so their blocks share a call-site partition, and a slot one of
// them freed can go to the other. Called directly, they would be two sites, in two
// partitions but 1 time in 16, and no slot would change hands: the
// check would pass on fresh slots alone. The pointer is read from a volatile, so the
// call stays one indirect call whichever function it reaches.
static void *(*volatile churn_alloc)(std::size_t);
static __attribute__((noinline)) void *churn_site(std::size_t n)
{
	void *p = churn_alloc(n);
	asm volatile("" : "+r"(p)); // no tail call: the return address must be this one's
	return p;
}

// Which allocation function had each slot the churn was handed last, by address: an
// open-addressing table, so the churn can count slots that came back to the other kind.
enum { SLOTS_SEEN = 1 << 17 };
static struct {
	std::uintptr_t at;
	bool by_new;
} slots_seen[SLOTS_SEEN];
static std::size_t nseen;

// Records that p was handed out by operator new[] (by_new) or malloc; whether the other
// one had it before.
static bool changed_kind(void *p, bool by_new)
{
	std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p) & ((std::uintptr_t(1) << 56) - 1); // no MTE tag
	std::size_t i = std::size_t((a >> 4) * 0x9e3779b97f4a7c15ull >> 40) & (SLOTS_SEEN - 1);
	for (; slots_seen[i].at; i = (i + 1) & (SLOTS_SEEN - 1))
		if (slots_seen[i].at == a) {
			bool changed = slots_seen[i].by_new != by_new;
			slots_seen[i].by_new = by_new;
			return changed;
		}
	if (nseen < SLOTS_SEEN / 2) {
		slots_seen[i].at = a;
		slots_seen[i].by_new = by_new;
		nseen++;
	}
	return false;
}

// Every pair matched, small and large, plain, sized, aligned and nothrow; C++ slots
// beside C functions' slots in the same slabs; frees from another thread; and then
// churn at one call site (churn_site), so that slots the C++ operators used come back to
// malloc and free, and slots malloc used to operator new[] and delete[]: at least one
// of each is asserted.
static void matched_pairs()
{
	for (int round = 0; round < 4; round++) {
		for (std::size_t n : {std::size_t(1), SMALL, std::size_t(1000), std::size_t(20000), LARGE}) {
			int *a = new int[n];
			int *b = new int;
			void *m = malloc(n);
			void *c = ::operator new(n, std::nothrow);
			void *d = ::operator new[](n, std::align_val_t(64));
			void *e = ::operator new(n, std::align_val_t(4096), std::nothrow);
			m = realloc(m, 2 * n); // a C functions' slot among C++ ones
			escape(a), escape(b), escape(m), escape(c), escape(d), escape(e);
			delete[] a;
			delete b;
			free(m);
			::operator delete(c, n);
			::operator delete[](d, n, std::align_val_t(64));
			::operator delete(e, std::align_val_t(4096), std::nothrow);
		}
		pthread_t t[8];
		for (pthread_t &th : t)
			if (pthread_create(&th, nullptr, delete_array_in_thread, new char[SMALL])) _exit(3);
		for (pthread_t &th : t) pthread_join(th, nullptr);
	}
	void *(*const new_array)(std::size_t) = &::operator new[];
	long to_malloc = 0, to_new = 0;
	for (int i = 0; i < 200000; i++) {
		churn_alloc = malloc;
		void *p = churn_site(SMALL);
		if (!p) _exit(3);
		escape(p);
		to_malloc += changed_kind(p, false);
		void *q = realloc(p, SMALL + 1);
		free(q);
		churn_alloc = new_array;
		char *r = static_cast<char *>(churn_site(SMALL));
		escape(r);
		to_new += changed_kind(r, true);
		delete[] r;
	}
	if (!to_malloc || !to_new) {
		std::fprintf(stderr, "matched pairs: %ld slots of operator new[] came back to malloc, %ld of malloc to "
				     "operator new[]: a slot must change hands each way\n", to_malloc, to_new);
		_exit(6);
	}
}

// A program may replace the operators; std::allocator, strings and containers use
// them, and the C library's malloc and free serve exceptions. None of it mismatches.
static void library_use()
{
	for (int i = 0; i < 20000; i++) {
		char *s = strdup("a string the C library allocates");
		escape(s);
		free(s);
		try {
			throw std::bad_alloc(); // __cxa_allocate_exception: malloc, then free
		} catch (const std::bad_alloc &) {
		}
	}
}

// --- the cases --------------------------------------------------------------------

// How a block was made, as the line names it.
static const char NEW[] = "a block allocated by operator new (allocation and deallocation do not match) at 0x";
static const char NEW_ARRAY[] = "a block allocated by operator new[] (allocation and deallocation do not match) at 0x";
static const char MALLOC[] = "a block allocated by malloc (allocation and deallocation do not match) at 0x";

struct Case {
	const char *name;
	void (*fn)();
	const char *options; // added to RAMPART_OPTIONS in a re-executed child; nullptr: none
	const char *freed;   // the deallocation the line names; nullptr: the case must exit 0
	const char *made;    // how the block was made
	bool fatal;          // SIGABRT with "rampart: fatal: <freed><made>"; else exit 0 with "rampart: error: ..."
};

#define MISMATCH(name, fn, freed, made) {name, fn, nullptr, freed, made, true}
#define OFF(name, fn) {name " (dealloc_kind=off)", fn, "dealloc_kind=off", nullptr, nullptr, false}
#define REPORTED(name, fn, freed, made) {name " (on_error=report)", fn, "on_error=report", freed, made, false}

static const Case cases[] = {
	MISMATCH("free of new (small)", free_of_new_small, "free of ", NEW),
	MISMATCH("free of new[] (small)", free_of_new_array_small, "free of ", NEW_ARRAY),
	MISMATCH("free of new (large)", free_of_new_large, "free of ", NEW),
	MISMATCH("free of new[] (large)", free_of_new_array_large, "free of ", NEW_ARRAY),
	MISMATCH("free_sized of new", free_sized_of_new, "free of ", NEW),
	MISMATCH("realloc of new (small)", realloc_of_new_small, "realloc of ", NEW),
	MISMATCH("realloc of new[] (large)", realloc_of_new_array_large, "realloc of ", NEW_ARRAY),
	MISMATCH("realloc of new (large) into a slot", realloc_of_new_large_to_small, "realloc of ", NEW),
	MISMATCH("delete of new[] (small)", delete_of_new_array_small, "operator delete of ", NEW_ARRAY),
	MISMATCH("delete of new[] (large)", delete_of_new_array_large, "operator delete of ", NEW_ARRAY),
	MISMATCH("sized delete of new[], the right size", sized_delete_of_new_array, "operator delete of ", NEW_ARRAY),
	MISMATCH("nothrow delete of new[]", nothrow_delete_of_new_array, "operator delete of ", NEW_ARRAY),
	MISMATCH("delete of new[] from another thread", delete_of_new_array_in_thread, "operator delete of ", NEW_ARRAY),
	MISMATCH("delete of malloc (small)", delete_of_malloc_small, "operator delete of ", MALLOC),
	MISMATCH("delete of malloc (large)", delete_of_malloc_large, "operator delete of ", MALLOC),
	MISMATCH("delete of calloc", delete_of_calloc, "operator delete of ", MALLOC),
	MISMATCH("aligned delete of posix_memalign", aligned_delete_of_aligned_malloc, "operator delete of ", MALLOC),
	MISMATCH("delete[] of new char", array_delete_of_new_char, "operator delete[] of ", NEW),
	MISMATCH("delete[] of new (large)", array_delete_of_new_large, "operator delete[] of ", NEW),
	MISMATCH("delete[] of malloc", array_delete_of_malloc, "operator delete[] of ", MALLOC),
	MISMATCH("sized delete[] of new", sized_array_delete_of_new, "operator delete[] of ", NEW),
	MISMATCH("aligned delete[] of aligned new", aligned_array_delete_of_aligned_new, "operator delete[] of ", NEW),
	{"matched pairs, every form, small and large, from two threads", matched_pairs, nullptr, nullptr, nullptr, false},
	{"the C library's and libstdc++'s own allocations", library_use, nullptr, nullptr, nullptr, false},
	OFF("free of new (small)", free_of_new_small),
	OFF("delete of new[] (large)", delete_of_new_array_large),
	OFF("delete[] of malloc", array_delete_of_malloc),
	OFF("realloc of new (small)", realloc_of_new_small),
	OFF("delete of new[] from another thread", delete_of_new_array_in_thread),
	REPORTED("free of new (small)", free_of_new_small, "free of ", NEW),
	REPORTED("delete of new[] (large)", delete_of_new_array_large, "operator delete of ", NEW_ARRAY),
	REPORTED("delete[] of malloc", array_delete_of_malloc, "operator delete[] of ", MALLOC),
	REPORTED("realloc of new[] (large)", realloc_of_new_array_large, "realloc of ", NEW_ARRAY),
};
static const std::size_t NCASES = sizeof cases / sizeof cases[0];

static bool run_case(std::size_t i, const char *self)
{
	const Case &c = cases[i];
	int fds[2];
	if (pipe(fds) != 0) return false;
	std::fflush(nullptr);
	pid_t pid = fork();
	if (pid < 0) return false;
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		if (c.options) {
			const char *old = getenv("RAMPART_OPTIONS");
			static char opts[512];
			std::snprintf(opts, sizeof opts, "%s%s%s", old ? old : "", old ? "," : "", c.options);
			setenv("RAMPART_OPTIONS", opts, 1);
			char index[16];
			std::snprintf(index, sizeof index, "%zu", i);
			execl("/proc/self/exe", self, "--case", index, (char *)nullptr);
			_exit(4);
		}
		c.fn();
		_exit(0); // survived: a mismatch went unnoticed
	}
	close(fds[1]);
	static char out[8192];
	std::size_t len = 0;
	ssize_t r;
	while (len < sizeof out - 1 && (r = read(fds[0], out + len, sizeof out - 1 - len)) > 0) len += (std::size_t)r;
	out[len] = 0;
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	char want[200] = "";
	if (c.freed)
		std::snprintf(want, sizeof want, "rampart: %s: %s%s", c.fatal ? "fatal" : "error", c.freed, c.made);
	bool ok;
	if (c.fatal) {
		ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && std::strstr(out, want);
	} else {
		ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !std::strstr(out, "rampart: fatal");
		if (c.freed) ok = ok && std::strstr(out, want) && std::strstr(out, "; done as the call asks (on_error=report)\n");
		else ok = ok && !std::strstr(out, "rampart: error");
	}
	std::printf("%s  %s\n", ok ? "ok  " : "FAIL", c.name);
	if (!ok) {
		if (WIFSIGNALED(status)) std::printf("      child died of signal %d\n", WTERMSIG(status));
		else std::printf("      child exited with %d\n", WEXITSTATUS(status));
		if (c.freed) std::printf("      wanted: %s\n", want);
		std::printf("      stderr: %s\n", out);
	}
	return ok;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !std::strcmp(argv[1], "--case")) { // a re-executed child
		std::size_t i = std::strtoul(argv[2], nullptr, 10);
		if (i >= NCASES) return 5;
		cases[i].fn();
		return 0;
	}
	void *first = malloc(1); // rampart starts at the first call
	escape(first);
	free(first);
	unsigned long on = 0;
	if (rampart_get_option("dealloc_kind", &on) || !on) {
		std::fprintf(stderr, "cxx_kind_death: dealloc_kind is not on\n");
		return 1;
	}
	int failed = 0;
	for (std::size_t i = 0; i < NCASES; i++)
		if (!run_case(i, argv[0])) failed++;
	std::printf("cxx_kind_death: %d of %zu cases failed\n", failed, NCASES);
	return failed ? 1 : 0;
}
