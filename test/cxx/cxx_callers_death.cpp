// cxx_callers_death — the callers list of a C++ program's heap bugs names the program's
// own calls, and addr2line their lines: a double delete, and an array from new[]
// deleted by delete (a sized delete with the element's size), each in a function of its
// own called from another. The first frame listed must be the delete's line in the
// first function, the second the call's line in the other (the calls are the last
// statements of their functions: a return address lies on the next line), and no frame
// rampart's own. Where the C library is a shared object, its frame of
// __libc_start_main carries that name and its offset (callers_libc_names says why not
// elsewhere).
//
// Built -O2 -fno-optimize-sibling-calls (test.mk) twice: with the shared libstdc++ and
// librampart.so (cxx_callers), and with -static-libstdc++ and librampart.a
// (cxx_callers_static), where the operators and the unwinder's tables come from the
// program itself.
#include "../callers.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

static void escape(void *p) { asm volatile("" : : "r"(p) : "memory"); }
// Hide where a pointer came from, so the compiler does not diagnose the bug we commit.
static int *hide(int *p)
{
	asm volatile("" : "+r"(p) : : "memory");
	return p;
}

// The bugs and their callers. Each *_LINE is the line of the call it names: keep them so.
enum { DELETE_LINE = __LINE__ + 5 };
__attribute__((noinline)) void cxx_callers_double_delete(int *p)
{
	int *again = hide(p);
	delete p;
	delete again;
}
enum { DELETE_CALL_LINE = __LINE__ + 3 };
__attribute__((noinline)) void cxx_callers_delete_caller(int *p)
{
	cxx_callers_double_delete(p);
}

enum { MISMATCH_LINE = __LINE__ + 3 };
__attribute__((noinline)) void cxx_callers_scalar_delete(int *p)
{
	delete p; // from new int[1000]: operator delete(p, sizeof(int))
}
enum { MISMATCH_CALL_LINE = __LINE__ + 3 };
__attribute__((noinline)) void cxx_callers_mismatch_caller(int *p)
{
	cxx_callers_scalar_delete(p);
}

static void commit(int which)
{
	int *p = which ? new int[1000] : new int(7);
	escape(p);
	if (which) cxx_callers_mismatch_caller(p);
	else cxx_callers_delete_caller(p);
}

// Frame f must be fn's call at line, in this program's file.
static bool frame_is(const callers_frame &f, const char *exe, const char *fn, int line)
{
	char got_fn[256], file[256];
	int got_line = 0;
	bool missing = false;
	if (!callers_where(f.module, f.off, got_fn, sizeof got_fn, file, sizeof file, &got_line, &missing)) {
		if (missing) {
			std::fprintf(stderr, "SKIP: addr2line (binutils) is not installed: test/deps.sh installs it\n");
			std::exit(77);
		}
		std::printf("      addr2line knows nothing of %s+0x%lx\n", f.module, f.off);
		return false;
	}
	bool ok = !std::strcmp(f.module, exe) && !f.scanned && !std::strcmp(got_fn, fn) &&
		  !std::strcmp(file, "cxx_callers_death.cpp") && got_line == line;
	if (!ok)
		std::printf("      %s+0x%lx%s is %s at %s:%d; expected %s at cxx_callers_death.cpp:%d\n", f.module, f.off,
			    f.scanned ? " [scanned]" : "", got_fn, file, got_line, fn, line);
	return ok;
}

struct Case {
	const char *name, *says, *fn, *caller;
	int line, call_line;
};
static const Case cases[] = {
	{"double delete", "rampart: fatal: ", "cxx_callers_double_delete", "cxx_callers_delete_caller", DELETE_LINE,
	 DELETE_CALL_LINE},
	// The kind is checked before the size (dealloc_kind): the mismatch of new[] and delete.
	{"new[] freed by delete", "rampart: fatal: operator delete of a block allocated by operator new[]",
	 "cxx_callers_scalar_delete", "cxx_callers_mismatch_caller", MISMATCH_LINE, MISMATCH_CALL_LINE},
};

int main()
{
	static char out[16384];
	char exe[512];
	int failed = 0;
	if (!callers_exe(exe, sizeof exe)) return 1;
	for (int c = 0; c < 2; c++) {
		const Case &k = cases[c];
		callers_frame f[16];
		int st = callers_child(commit, c, out, sizeof out);
		int n = callers_parse(out, f, 16), own = 0;
		for (int i = 0; i < n && i < 16; i++) own += callers_own(&f[i], exe, callers_bias());
		bool ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && std::strstr(out, k.says) && n >= 2 && n <= 16 &&
			  !own;
		ok = n >= 1 && frame_is(f[0], exe, k.fn, k.line) && ok;
		ok = n >= 2 && frame_is(f[1], exe, k.caller, k.call_line) && ok;
		const char *why = nullptr;
		int named = -1;
		if (callers_libc_names(&why)) {
			named = callers_named(f, n < 16 ? n : 16, "__libc_start_main");
			ok = named >= 0 && ok;
		}
		std::printf("%s  %s: %d frames, #0 at line %d, #1 at line %d, %d of rampart's; ", ok ? "ok  " : "FAIL",
			    k.name, n, k.line, k.call_line, own);
		if (named >= 0) std::printf("#%d named (__libc_start_main+0x%lx)\n", named, f[named].symbol_off);
		else if (why) std::printf("no name asked for: %s\n", why);
		else std::printf("no frame named __libc_start_main at its address\n");
		if (!ok) std::printf("      child stderr:\n%s", out);
		failed += !ok;
	}
	std::printf("2 cases, %d failed\n", failed);
	return failed;
}
