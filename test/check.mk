# test/check.mk — proofs beyond `make test` (issue #12): other compilers, sanitizers,
# musl, arm64 under emulation, seccomp, fuzzing. Each `check-*` target builds into an
# OUT directory of its own (out-clang, out-ubsan, ...) and never touches out/.
#
#   make check-clang   the whole suite built with clang/clang++ (-Werror), run
#   make check-ubsan   the whole suite with -fsanitize=undefined -fno-sanitize-recover
#   make check-tsan    test/tsan/* (internal entry points) under ThreadSanitizer
#   make check-musl    the library built with musl-gcc; death, system and API tests
#                      linked statically against it, both backends
#   make check         all of the above that exist
#
# A sanitizer build puts its flags into CC and CXX (library, tests, the demo and the
# links alike). CHECK_TEST_CFLAGS adds flags for the test programs only;
# CHECK_CXXFLAGS for the C++ test programs.
#
# Every test program is built with -fno-builtin: a compiler may drop an allocation
# whose result is only compared with NULL, and clang does (aligned_alloc in C, the
# new-expression `new (std::nothrow) char[huge]` in C++), so a test of the failure
# path would see a pointer rampart never returned.
CHECK_TEST_CFLAGS ?=
CHECK_CXXFLAGS ?=
TEST_CFLAGS += -fno-builtin $(CHECK_TEST_CFLAGS)
LIGHT_TEST_CFLAGS += -fno-builtin $(CHECK_TEST_CFLAGS)
CXX_TEST_FLAGS += -fno-builtin $(CHECK_TEST_CFLAGS) $(CHECK_CXXFLAGS)

# The suite of `make test` without the benchmark, for a build in another OUT.
CHECK_RUN = SKIP_BENCH=1 OUT=$(1) sh test/run.sh

.PHONY: check check-clang check-ubsan check-tsan tsan-build static-build check-musl

# test/portable/api_check.c: the public interface without a test framework. Part of
# `make test` (run.sh picks it up among the system tests) and of every static build.
$(TEST_OUT)/system/api_check: test/portable/api_check.c $(OUT)/librampart.a test/harness.h include/rampart.h
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(OUT)/librampart.a
test-build: $(TEST_OUT)/system/api_check

# Every framework-free test (death, system, portable), linked statically with this
# build's librampart.a: for other C libraries and other architectures.
STATIC_SRCS := $(wildcard test/death/*.c test/system/*.c test/portable/*.c)
STATIC_BINS = $(patsubst %.c,$(TEST_OUT)/static/%,$(notdir $(STATIC_SRCS)))
STATIC_LINK = @mkdir -p $(@D); $(CC) -static $(TEST_CFLAGS) -o $@ $< $(OUT)/librampart.a
$(TEST_OUT)/static/%: test/death/%.c $(OUT)/librampart.a $(wildcard test/*.h)
	$(STATIC_LINK)
$(TEST_OUT)/static/%: test/system/%.c $(OUT)/librampart.a $(wildcard test/*.h)
	$(STATIC_LINK)
$(TEST_OUT)/static/%: test/portable/%.c $(OUT)/librampart.a $(wildcard test/*.h)
	$(STATIC_LINK)
static-build: $(STATIC_BINS)

# clang 14 does not pass sizes to operator delete unless asked (clang 19 does); the
# C++ tests ask for 2^40 and 48-byte alignments on purpose, which clang warns about.
CLANG_CXXFLAGS := -fsized-deallocation -Wno-builtin-assume-aligned-alignment -Wno-non-power-of-two-alignment
check-clang:
	$(MAKE) --no-print-directory OUT=out-clang CC=clang CXX=clang++ \
		CHECK_CXXFLAGS='$(CLANG_CXXFLAGS)' test-build
	$(call CHECK_RUN,out-clang)

# clang's minimal UBSan runtime: it reports "ubsan: <check> by <pc>" and aborts. The
# full runtime is unusable here: it calls dlsym, hence malloc, from .preinit_array,
# before getenv works, so rampart would start (and read RAMPART_OPTIONS) too early;
# it also pulls libstdc++ into C programs. librampart.so takes the runtime from the
# program that loads it. The death tests overflow blocks on purpose: no object-size
# check in the test programs (the library keeps it).
UBSAN := -fsanitize=undefined -fsanitize-minimal-runtime -fno-sanitize-recover=all
check-ubsan:
	$(MAKE) --no-print-directory OUT=out-ubsan CC='clang $(UBSAN)' CXX='clang++ $(UBSAN)' \
		CHECK_TEST_CFLAGS=-fno-sanitize=object-size CHECK_CXXFLAGS='$(CLANG_CXXFLAGS)' test-build
	$(call CHECK_RUN,out-ubsan)

# TSan brings its own malloc: the programs link every object but the public entry points.
TSAN_OBJS = $(filter-out $(OUT)/obj/api.o $(OUT)/obj/cxx.o,$(OBJS))
TSAN_BINS = $(patsubst test/tsan/%.c,$(TEST_OUT)/tsan/%,$(wildcard test/tsan/*.c))
$(TEST_OUT)/tsan/%: test/tsan/%.c $(TSAN_OBJS) $(wildcard src/*.h)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(TSAN_OBJS)
tsan-build: $(TSAN_BINS)

check-tsan:
	$(MAKE) --no-print-directory OUT=out-tsan CC='clang -fsanitize=thread' tsan-build
	@set -e; for b in out-tsan/test/tsan/*; do for g in madvise mprotect; do \
		echo "tsan: $${b##*/} guard=$$g"; \
		TSAN_OPTIONS=halt_on_error=1:exitcode=66 RAMPART_OPTIONS=guard=$$g $$b; \
	done; done

# musl: musl-gcc (Debian's musl-tools) wraps gcc with musl's headers and libc.
check-musl:
	$(MAKE) --no-print-directory OUT=out-musl CC=musl-gcc lib static-build
	sh test/run-bins.sh musl out-musl/test/static

check: check-clang check-ubsan check-tsan check-musl
