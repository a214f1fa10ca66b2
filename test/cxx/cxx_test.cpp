// cxx_test — rampart's C++ operator new/delete family (src/front/cxx.c), seen from C++.
// Built twice: linked with librampart.a (system/cxx_test) and with librampart.so
// (system/cxx_test_so, the way a preloaded library is found). Exits 0 on success.
#include <dlfcn.h>
#include <malloc.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "rampart.h"

static int failures;
#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                   \
		}                                                                     \
	} while (0)

// Keep the compiler from eliding allocation/deallocation pairs.
static void escape(void *p) { asm volatile("" : : "r"(p) : "memory"); }
static volatile std::size_t huge_size = SIZE_MAX / 2;

// The operators in use must be rampart's, not libstdc++'s.
static void test_which_operators()
{
	void *(*plain)(std::size_t) = &::operator new;
	void *global = dlsym(RTLD_DEFAULT, "_Znwm");
	Dl_info a{}, b{};
	CHECK(dladdr(reinterpret_cast<void *>(plain), &a) && a.dli_fname);
	CHECK(global && dladdr(global, &b) && b.dli_fname);
	if (a.dli_fname) CHECK(!std::strstr(a.dli_fname, "libstdc++"));
	if (b.dli_fname) CHECK(!std::strstr(b.dli_fname, "libstdc++"));
	CHECK(global == reinterpret_cast<void *>(plain));
	void *aligned = dlsym(RTLD_DEFAULT, "_ZdlPvmSt11align_val_t");
	Dl_info c{};
	CHECK(aligned && dladdr(aligned, &c) && c.dli_fname && !std::strstr(c.dli_fname, "libstdc++"));
}

static void test_zero_and_sized()
{
	void *a = ::operator new(0), *b = ::operator new(0);
	CHECK(a && b && a != b);
	::operator delete(a, std::size_t(0));
	::operator delete(b);
	void *c = ::operator new[](0);
	CHECK(c);
	::operator delete[](c, std::size_t(0));

	static const std::size_t sizes[] = {1, 7, 16, 17, 100, 256, 4095, 4096, 4097, 65536, 131072, 131073, 1 << 20, 3 << 20};
	for (std::size_t n : sizes) {
		char *p = static_cast<char *>(::operator new(n));
		std::memset(p, 0xa5, n);
		CHECK(malloc_object_size(p) >= n);
		::operator delete(p, n);
		char *q = static_cast<char *>(::operator new[](n));
		std::memset(q, 0x5a, n);
		::operator delete[](q, n);
		void *r = ::operator new(n, std::nothrow);
		CHECK(r);
		::operator delete(r, std::nothrow);
		void *s = ::operator new[](n, std::nothrow);
		CHECK(s);
		::operator delete[](s, std::nothrow);
		::operator delete(nullptr, n);
	}
	::operator delete(nullptr);
	::operator delete[](nullptr);
}

static int live_objects;
struct Tracked {
	char payload[40];
	Tracked() { live_objects++; std::memset(payload, 1, sizeof payload); }
	~Tracked() { live_objects--; }
};

static void test_expressions()
{
	// new[]/delete[] of a type with a destructor: an array cookie, and a sized delete[]
	// with the cookie-inclusive size.
	for (int n : {0, 1, 3, 100, 5000}) {
		Tracked *t = new Tracked[n];
		escape(t);
		CHECK(live_objects == n);
		delete[] t;
		CHECK(live_objects == 0);
	}
	Tracked *one = new Tracked;
	escape(one);
	delete one;
	CHECK(live_objects == 0);
	// Containers use sized deallocation through std::allocator.
	std::vector<std::string> v;
	std::map<int, std::string> m;
	for (int i = 0; i < 2000; i++) {
		v.push_back(std::string(static_cast<std::size_t>(i % 300), 'x'));
		m[i] = v.back();
	}
	for (int i = 0; i < 2000; i += 2) m.erase(i);
	CHECK(m.size() == 1000 && v.size() == 2000 && v[299].size() == 299);
}

struct alignas(256) Over {
	char x[300];
};

static void test_aligned()
{
	for (std::size_t align = 64; align <= (std::size_t(4) << 20); align <<= 1) {
		for (std::size_t n : {std::size_t(1), std::size_t(100), align, align + 1, std::size_t(200000)}) {
			std::align_val_t al{align};
			char *p = static_cast<char *>(::operator new(n, al));
			CHECK(reinterpret_cast<std::uintptr_t>(p) % align == 0);
			std::memset(p, 0x11, n);
			::operator delete(p, n, al);
			char *q = static_cast<char *>(::operator new[](n, al));
			CHECK(reinterpret_cast<std::uintptr_t>(q) % align == 0);
			q[n - 1] = 1;
			::operator delete[](q, n, al);
			void *r = ::operator new(n, al, std::nothrow);
			CHECK(r && reinterpret_cast<std::uintptr_t>(r) % align == 0);
			::operator delete(r, al);
			void *s = ::operator new[](n, al, std::nothrow);
			CHECK(s && reinterpret_cast<std::uintptr_t>(s) % align == 0);
			::operator delete[](s, al, std::nothrow);
			void *t = ::operator new(n, al);
			::operator delete(t, al, std::nothrow);
			void *u = ::operator new[](n, al);
			::operator delete[](u, al);
		}
	}
	Over *o = new Over;
	escape(o);
	CHECK(reinterpret_cast<std::uintptr_t>(o) % 256 == 0);
	delete o;
	Over *arr = new Over[7];
	escape(arr);
	CHECK(reinterpret_cast<std::uintptr_t>(arr) % 256 == 0);
	delete[] arr;
}

static void test_bad_alloc()
{
	CHECK(std::get_new_handler() == nullptr);
	bool caught = false;
	try {
		void *p = ::operator new(huge_size);
		escape(p);
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	CHECK(caught);
	caught = false;
	try {
		char *p = new char[huge_size];
		escape(p);
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	CHECK(caught);
	caught = false;
	try {
		void *p = ::operator new[](huge_size, std::align_val_t(4096));
		escape(p);
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	CHECK(caught);
	// Beyond the largest alignment served: an allocation failure, not a crash.
	caught = false;
	try {
		void *p = ::operator new(64, std::align_val_t(std::size_t(1) << 40));
		escape(p);
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	CHECK(caught);
	CHECK(::operator new(huge_size, std::nothrow) == nullptr);
	CHECK(::operator new[](huge_size, std::nothrow) == nullptr);
	CHECK(::operator new(huge_size, std::align_val_t(64), std::nothrow) == nullptr);
	CHECK(::operator new[](huge_size, std::align_val_t(1 << 20), std::nothrow) == nullptr);
	CHECK(new (std::nothrow) char[huge_size] == nullptr);
}

// The new-handler loop.
static int handler_calls;
static char *reserve;
static void free_reserve_handler()
{
	handler_calls++;
	if (reserve) {
		delete[] reserve;
		reserve = nullptr;
		malloc_trim(0); // and give cached address space back to the kernel
	} else {
		std::set_new_handler(nullptr); // nothing left: the next failure throws
	}
}
static void uninstalling_handler()
{
	handler_calls++;
	std::set_new_handler(nullptr);
}
struct handler_gave_up {};
static void throwing_handler()
{
	handler_calls++;
	throw handler_gave_up();
}

static long vm_size_bytes()
{
	FILE *f = std::fopen("/proc/self/status", "r");
	if (!f) return -1;
	char line[256];
	long kb = -1;
	while (std::fgets(line, sizeof line, f))
		if (std::sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
	std::fclose(f);
	return kb * 1024;
}

static void test_new_handler()
{
	// A handler that gives up by uninstalling itself: called once, then bad_alloc.
	handler_calls = 0;
	std::set_new_handler(uninstalling_handler);
	bool caught = false;
	try {
		escape(::operator new(huge_size));
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	CHECK(caught && handler_calls == 1);

	// A handler's own exception propagates through rampart's (C) frames.
	handler_calls = 0;
	std::set_new_handler(throwing_handler);
	bool gave_up = false;
	try {
		escape(::operator new(huge_size, std::align_val_t(128)));
	} catch (const handler_gave_up &) {
		gave_up = true;
	}
	CHECK(gave_up && handler_calls == 1);

	// nothrow new never calls the handler (see src/front/cxx.c) and never throws.
	handler_calls = 0;
	CHECK(::operator new(huge_size, std::nothrow) == nullptr);
	CHECK(::operator new[](huge_size, std::align_val_t(256), std::nothrow) == nullptr);
	CHECK(handler_calls == 0);
	std::set_new_handler(nullptr);

	// A handler that frees a reserve so that the retry succeeds, under a real
	// address-space limit. The reserve is big enough to skip the region quarantine,
	// and the handler trims rampart's reuse cache so its address space really goes.
	// Short of address space, rampart gives back the regions its cache and its
	// quarantine hold before it fails: the limit leaves those out, so the handler is
	// needed.
	const std::size_t big = std::size_t(300) << 20;
	reserve = new char[big];
	escape(reserve);
	long vm = vm_size_bytes();
	struct rampart_stats st;
	rampart_get_stats(&st);
	struct rlimit old;
	CHECK(vm > 0 && getrlimit(RLIMIT_AS, &old) == 0);
	struct rlimit lim = old;
	lim.rlim_cur = static_cast<rlim_t>(vm) - st.quarantine_bytes_now - st.cache_bytes_now + (std::size_t(200) << 20);
	CHECK(setrlimit(RLIMIT_AS, &lim) == 0);
	handler_calls = 0;
	std::set_new_handler(free_reserve_handler);
	char *p = nullptr;
	try {
		p = new char[big];
		escape(p);
		p[0] = p[big - 1] = 1;
	} catch (const std::bad_alloc &) {
		std::fprintf(stderr, "retry after freeing the reserve failed\n");
	}
	CHECK(p && handler_calls == 1 && reserve == nullptr);
	delete[] p;
	std::set_new_handler(nullptr);
	CHECK(setrlimit(RLIMIT_AS, &old) == 0);
}

int main()
{
	test_which_operators();
	test_zero_and_sized();
	test_expressions();
	test_aligned();
	test_bad_alloc();
	test_new_handler();
	if (failures) {
		std::fprintf(stderr, "cxx_test: %d check(s) failed (guard backend %s)\n", failures, rampart_guard_backend());
		return 1;
	}
	std::printf("cxx_test: ok (guard backend %s)\n", rampart_guard_backend());
	return 0;
}
