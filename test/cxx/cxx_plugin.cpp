// cxx_plugin — a C++ shared object that test/cxx/cxx_dlopen.c loads with dlopen into a
// C program linked with librampart.so: libstdc++ arrives after rampart was bound, so
// rampart's weak references to it are null and the late lookup must find it.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <new>

static volatile std::size_t huge_size = SIZE_MAX / 2;
static void escape(void *p) { asm volatile("" : : "r"(p) : "memory"); }
static int handler_calls;
static void uninstalling_handler()
{
	handler_calls++;
	std::set_new_handler(nullptr);
}

// 0 on success, otherwise the number of the first failed check.
extern "C" __attribute__((visibility("default"))) int cxx_plugin_run()
{
	Dl_info info{};
	void *(*plain)(std::size_t) = &::operator new;
	if (!dladdr(reinterpret_cast<void *>(plain), &info) || !info.dli_fname || !std::strstr(info.dli_fname, "librampart"))
		return 1;
	bool caught = false;
	try {
		escape(::operator new(huge_size));
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	if (!caught) return 2;
	std::set_new_handler(uninstalling_handler);
	caught = false;
	try {
		escape(new char[huge_size]);
	} catch (const std::bad_alloc &) {
		caught = true;
	}
	if (!caught || handler_calls != 1) return 3;
	if (::operator new(huge_size, std::nothrow) != nullptr) return 4;
	char *p = new char[1000];
	escape(p);
	::operator delete[](p, 1000);
	return 0;
}
