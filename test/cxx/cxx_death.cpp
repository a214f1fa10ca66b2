// cxx_death — C++ bugs that rampart's operator delete family must turn into
// "rampart: fatal: ..." and SIGABRT. Each case runs in a forked child; the program
// exits 0 when every child died the right way.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

static void escape(void *p) { asm volatile("" : : "r"(p) : "memory"); }
// Hide where a pointer came from, so the compiler does not diagnose the bug we commit.
template <class T> static T *hide(T *p)
{
	asm volatile("" : "+r"(p) : : "memory");
	return p;
}

// Sizes chosen so that the wrong size is wrong for any size-class or page rounding.
static const std::size_t N = 300000;

struct Base {
	char head[16];
	~Base() {} // not virtual: deleting a Derived through a Base* passes sizeof(Base)
};
struct Derived : Base {
	char tail[N];
};

static void sized_delete_wrong_size()
{
	void *p = ::operator new(N);
	escape(p);
	::operator delete(p, std::size_t(16));
}
static void sized_delete_small_wrong_size()
{
	void *p = ::operator new(24);
	escape(p);
	::operator delete(p, N);
}
static void sized_array_delete_wrong_size()
{
	void *p = ::operator new[](N);
	escape(p);
	::operator delete[](p, 2 * N);
}
static void delete_derived_through_base()
{
	Base *b = new Derived;
	escape(b);
	delete b; // ::operator delete(b, sizeof(Base))
}
static void aligned_sized_delete_wrong_size()
{
	std::align_val_t al{std::size_t(1) << 20};
	void *p = ::operator new(N, al);
	escape(p);
	::operator delete(p, std::size_t(64), al);
}
static void aligned_sized_delete_wrong_alignment()
{
	void *p = ::operator new(N, std::align_val_t(std::size_t(1) << 20));
	escape(p);
	::operator delete(p, N, std::align_val_t(std::size_t(4) << 20));
}
static void aligned_delete_misaligned_pointer()
{
	char *p = static_cast<char *>(::operator new(N, std::align_val_t(4096)));
	escape(p);
	::operator delete(hide(p + 64), std::align_val_t(4096));
}
static void aligned_new_not_power_of_two()
{
	escape(::operator new(64, std::align_val_t(48)));
}
static void aligned_delete_not_power_of_two()
{
	void *p = ::operator new(N, std::align_val_t(64));
	escape(p);
	::operator delete(p, std::align_val_t(96));
}
static void double_delete()
{
	int *p = new int[100000];
	escape(p);
	int *again = hide(p);
	delete[] p;
	delete[] again;
}
static void delete_of_stack_object()
{
	char buf[64];
	escape(buf);
	::operator delete(hide(static_cast<void *>(buf)), sizeof buf);
}

struct Case {
	const char *name;
	void (*fn)();
	const char *says; // stderr must also contain this (nullptr: any fatal line)
};
static const Case cases[] = {
	// A block's report shows the size passed and the block's (a slot's: its usable size).
	{"sized delete, wrong size", sized_delete_wrong_size, ": passed size 16, the block's size 300000\n"},
	{"sized delete of a small block, wrong size", sized_delete_small_wrong_size,
	 ": passed size 300000, the block's size "},
	{"sized delete[], wrong size", sized_array_delete_wrong_size, ": passed size 600000, the block's size 300000\n"},
	{"delete of a Derived through a Base* (no virtual destructor)", delete_derived_through_base,
	 ": passed size 16, the block's size 300016\n"},
	{"aligned sized delete, wrong size", aligned_sized_delete_wrong_size,
	 ": passed size 64 aligned to 1048576, the block's size 300000 aligned to 1048576\n"},
	// Unless the block happens to be 4 MiB aligned, the pointer check comes first.
	{"aligned sized delete, wrong alignment", aligned_sized_delete_wrong_alignment, nullptr},
	{"aligned delete of a misaligned pointer", aligned_delete_misaligned_pointer, nullptr},
	{"aligned new, alignment not a power of two", aligned_new_not_power_of_two, nullptr},
	{"aligned delete, alignment not a power of two", aligned_delete_not_power_of_two, nullptr},
	{"double delete[]", double_delete, nullptr},
	{"sized delete of a stack object", delete_of_stack_object, nullptr},
};

static bool run_case(const Case &c)
{
	int fds[2];
	if (pipe(fds) != 0) return false;
	std::fflush(nullptr);
	pid_t pid = fork();
	if (pid < 0) return false;
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		c.fn();
		_exit(0); // survived: the bug went unnoticed
	}
	close(fds[1]);
	char out[1024];
	std::size_t len = 0;
	ssize_t r;
	while (len < sizeof out - 1 && (r = read(fds[0], out + len, sizeof out - 1 - len)) > 0) len += (std::size_t)r;
	out[len] = 0;
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	bool ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && std::strstr(out, "rampart: fatal: ") &&
		  (!c.says || std::strstr(out, c.says));
	std::printf("%s  %s\n", ok ? "ok  " : "FAIL", c.name);
	if (!ok) {
		if (WIFSIGNALED(status)) std::printf("      child died of signal %d\n", WTERMSIG(status));
		else std::printf("      child exited with %d\n", WEXITSTATUS(status));
		std::printf("      stderr: %s\n", out);
	}
	return ok;
}

int main()
{
	int failed = 0;
	for (const Case &c : cases)
		if (!run_case(c)) failed++;
	std::printf("cxx_death: %d of %zu cases failed\n", failed, sizeof cases / sizeof cases[0]);
	return failed ? 1 : 0;
}
