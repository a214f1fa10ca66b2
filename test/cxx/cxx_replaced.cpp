// cxx_replaced — a program that replaces one of the C++ operators, as the standard lets
// it, and leaves the others to the library: its operator new hands malloc's blocks to
// the default operator delete (built with -DREPLACE_NEW), or its operator delete frees
// what the default operator new made with free (-DREPLACE_DELETE). Both are correct, so
// rampart must not take them for mismatches: it turns dealloc_kind off for such a
// program (src/front/cxx.h), and says so under verbose=1. Linked with librampart.so,
// whose operators the program's own replace; linked with librampart.a, the program's
// definition and the archive's would both be in it.
#include <cstdio>
#include <cstdlib>
#include <new>

#include "rampart.h"

static void escape(void *p) { asm volatile("" : : "r"(p) : "memory"); }

#if defined(REPLACE_NEW)
void *operator new(std::size_t n)
{
	void *p = std::malloc(n ? n : 1);
	if (!p) throw std::bad_alloc();
	return p;
}
#elif defined(REPLACE_DELETE)
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
#else
#error "build with -DREPLACE_NEW or -DREPLACE_DELETE"
#endif

int main()
{
	for (int i = 0; i < 10000; i++) {
		int *p = new int(i); // the replaced new and rampart's delete, or the reverse
		escape(p);
		delete p;
		char *a = new char[i % 300 + 1]; // both rampart's
		escape(a);
		delete[] a;
	}
	unsigned long on = 1;
	if (rampart_get_option("dealloc_kind", &on) || on) {
		std::printf("FAIL: dealloc_kind is still on in a program that replaces an operator\n");
		return 1;
	}
	std::printf("cxx_replaced: ok, dealloc_kind off\n");
	return 0;
}
