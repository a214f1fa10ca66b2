# test/check.mk — proofs beyond `make test` (issue #12): other compilers, sanitizers,
# musl, arm64 under emulation, seccomp, fuzzing. Each `check-*` target builds into an
# OUT directory of its own (out-clang, out-ubsan, ...) and never touches out/.
#
#   make check-clang   the whole suite built with clang/clang++ (-Werror), run
#   make check-ubsan   the whole suite with -fsanitize=undefined -fno-sanitize-recover
#   make check-tsan    test/tsan/* (internal entry points) under ThreadSanitizer
#   make check-musl    the library built with musl-gcc; death, system and API tests
#                      linked statically against it, both backends
#   make check-arm64   cross-built for arm64, the static tests run under qemu-aarch64,
#                      where the start-up probe must choose mprotect
#   make check-seccomp rampart under a seccomp filter built from test/seccomp/syscalls.list,
#                      which also generates the system-call table of docs/seccomp.md
#   make check-uring   test/uring/uring_check (io_uring fixed buffers) under both backends
#   make check-system-wide  (root) an everyday shell session with rampart in
#                      /etc/ld.so.preload, in a private mount namespace, against the same
#                      session without it; glibc programs linked statically with rampart
#   make check-deb     (root) the Debian packages (debian/) built twice, compared byte
#                      for byte, checked by lintian, installed, the system-wide session
#                      run on the packaged library, purged; into out-deb/
#   make check-fuzz    the operation-sequence fuzzer (test/fuzz/) for 30 s per backend;
#                      make fuzz FUZZ_SECONDS=n runs it longer
#   make check-real    Python's own regression tests (libpython3.11-testsuite) with
#                      glibc and preloaded rampart, both backends; compared module by
#                      module. REAL_SHORT=1: the short subset CI runs
#   make check-configs the suite built with each config.mk switch turned off on its own
#   make check         all of the above that exist
#
# Every build of a check-* target into an OUT of its own checks the invariants the code
# states (CONFIG_INVARIANTS=1, base/common.h): a broken one is fatal, so the suite fails.
# The test run gets it in its environment too, so that a make it runs (the packaging
# check) sees the same configuration and rebuilds nothing.
CHECK_INVARIANTS := CONFIG_INVARIANTS=1

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

# The suite of `make test`, for a build in another OUT.
CHECK_RUN = OUT=$(1) $(CHECK_INVARIANTS) sh test/run.sh

.PHONY: check-seccomp check-seccomp-readme seccomp-table
.PHONY: check-real
.PHONY: check check-clang check-ubsan check-tsan tsan-build static-build check-musl check-arm64 check-uring check-system-wide
.PHONY: check-deb

# test/portable/api_check.c: the public interface without a test framework. In
# test/tests.list (system/api_check) and in every static build.
$(TEST_OUT)/system/api_check: test/portable/api_check.c $(OUT)/librampart.a test/harness.h test/site.h include/rampart.h
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -o $@ $< $(OUT)/librampart.a

# test/portable/header_check.c: rampart.h under a user's strict flags, as C and as C++.
# Not TEST_CFLAGS: their -fno-builtin hides what the compiler knows of malloc, which is
# what made gcc warn in callers of malloc_object_size. A warning fails the build.
HEADER_CHECK_FLAGS := -O2 -Wall -Wextra -Wpedantic -Werror -Iinclude $(CHECK_TEST_CFLAGS)
$(TEST_OUT)/system/header_check: test/portable/header_check.c $(OUT)/librampart.a include/rampart.h
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) -std=c99 $(HEADER_CHECK_FLAGS) -o $@ $< $(OUT)/librampart.a -pthread
$(TEST_OUT)/portable/header_check_cxx.o: test/portable/header_check.c include/rampart.h
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) -x c++ -std=c++11 $(HEADER_CHECK_FLAGS) -c -o $@ $<
# The C++ half is a compile check only (no program to run), so it is no line of
# test/tests.list; the C half is (system/header_check).
test-build: $(TEST_OUT)/portable/header_check_cxx.o

# test/uring/uring_check.c: rampart's blocks as io_uring fixed buffers (liburing):
# round trips, blocks freed while registered, ranges reaching into guards, and all of
# it again under mlockall. In test/tests.list (system/uring_check; it exits 77, counted
# as skipped, where io_uring is disabled). check-uring runs it alone under both backends.
$(TEST_OUT)/system/uring_check: test/uring/uring_check.c $(OUT)/librampart.a test/harness.h include/rampart.h
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -o $@ $< $(OUT)/librampart.a -luring

check-uring: $(TEST_OUT)/system/uring_check
	@set -e; for g in madvise mprotect; do echo "uring_check guard=$$g"; \
		st=0; RAMPART_OPTIONS=guard=$$g $(TEST_OUT)/system/uring_check || st=$$?; \
		if [ $$st = 77 ]; then echo "check-uring: SKIPPED (io_uring unavailable)"; exit 0; fi; \
		[ $$st = 0 ] || exit $$st; done

# check-system-wide (root; test/systemwide/): out/librampart.so named in
# /etc/ld.so.preload inside a private mount namespace; a session of everyday commands
# (test/systemwide/session.sh) gives the same outputs and exit statuses as without
# rampart, under both backends; a set-user-ID program runs on rampart. First, without
# root: glibc programs linked statically with librampart.a (static_glibc, api_check),
# both backends. Everything it builds or writes goes to out-systemwide/.
SW_OUT := out-systemwide
$(SW_OUT)/secure_probe: test/systemwide/secure_probe.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -Wall -Wextra -Werror -o $@ $< -ldl
$(SW_OUT)/static/%: test/systemwide/%.c $(OUT)/librampart.a $(wildcard test/*.h) include/rampart.h
	$(STATIC_LINK)
$(SW_OUT)/static/%: test/portable/%.c $(OUT)/librampart.a $(wildcard test/*.h) include/rampart.h
	$(STATIC_LINK)
check-system-wide: lib $(SW_OUT)/secure_probe $(SW_OUT)/static/static_glibc $(SW_OUT)/static/api_check
	sh test/run-bins.sh glibc-static $(SW_OUT)/static
	sh test/systemwide/check.sh $(OUT)/librampart.so $(SW_OUT)/secure_probe $(SW_OUT)/results

# check-deb (root; test/packaging/deb_check.sh says what it asserts): dpkg-buildpackage
# twice, in two directories under out-deb/ (the .deb files land there), the builds
# compared; lintian; dpkg -i; the session of check-system-wide with the packaged
# library in /etc/ld.so.preload; dpkg --purge, leaving no file behind. Not root or no
# dpkg: SKIPPED, exit 77 (an error for make, not a pass).
check-deb: $(SW_OUT)/secure_probe
	sh test/packaging/deb_check.sh out-deb $(SW_OUT)/secure_probe

# The framework-free tests test/tests.list marks static (death, system, portable), linked
# statically with this build's librampart.a: for other C libraries and other architectures.
STATIC_SRCS := $(shell $(call TEST_LIST_QUIET,static))
STATIC_BINS = $(patsubst %.c,$(TEST_OUT)/static/%,$(notdir $(STATIC_SRCS)))
STATIC_LINK = @mkdir -p $(@D); $(CC) -static $(TEST_CFLAGS) -o $@ $< $(OUT)/librampart.a
$(TEST_OUT)/static/%: test/death/%.c $(OUT)/librampart.a $(wildcard test/*.h)
	$(STATIC_LINK)
$(TEST_OUT)/static/%: test/system/%.c $(OUT)/librampart.a $(wildcard test/*.h)
	$(STATIC_LINK)
$(TEST_OUT)/static/%: test/portable/%.c $(OUT)/librampart.a $(wildcard test/*.h)
	$(STATIC_LINK)
static-build: $(STATIC_BINS)
# Built as test.mk builds it for make test (CALLERS_FLAGS: calls stay calls).
$(TEST_OUT)/static/call_line_death: TEST_CFLAGS += $(CALLERS_FLAGS)

# clang 14 does not pass sizes to operator delete unless asked (clang 19 does); the
# C++ tests ask for 2^40 and 48-byte alignments on purpose, which clang warns about.
CLANG_CXXFLAGS := -fsized-deallocation -Wno-builtin-assume-aligned-alignment -Wno-non-power-of-two-alignment
check-clang:
	$(MAKE) --no-print-directory OUT=out-clang CC=clang CXX=clang++ $(CHECK_INVARIANTS) \
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
	$(MAKE) --no-print-directory OUT=out-ubsan CC='clang $(UBSAN)' CXX='clang++ $(UBSAN)' $(CHECK_INVARIANTS) \
		CHECK_TEST_CFLAGS='-fno-sanitize=object-size -DTEST_SANITIZED=1' CHECK_CXXFLAGS='$(CLANG_CXXFLAGS)' test-build
	$(call CHECK_RUN,out-ubsan)

# TSan brings its own malloc: the programs link every object but the public entry points.
TSAN_OBJS = $(filter-out $(OUT)/obj/front/api.o $(OUT)/obj/front/cxx.o,$(OBJS))
TSAN_BINS = $(patsubst test/tsan/%.c,$(TEST_OUT)/tsan/%,$(wildcard test/tsan/*.c))
$(TEST_OUT)/tsan/%: test/tsan/%.c $(TSAN_OBJS) $(wildcard src/*/*.h)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $< $(TSAN_OBJS)
tsan-build: $(TSAN_BINS)

check-tsan:
	$(MAKE) --no-print-directory OUT=out-tsan CC='clang -fsanitize=thread' $(CHECK_INVARIANTS) tsan-build
	@set -e; for b in out-tsan/test/tsan/*; do for g in madvise mprotect; do \
		echo "tsan: $${b##*/} guard=$$g"; \
		TSAN_OPTIONS=halt_on_error=1:exitcode=66 RAMPART_OPTIONS=guard=$$g $$b; \
	done; done

# musl: musl-gcc (Debian's musl-tools) wraps gcc with musl's headers and libc.
check-musl:
	$(MAKE) --no-print-directory OUT=out-musl CC=musl-gcc $(CHECK_INVARIANTS) lib static-build
	sh test/run-bins.sh musl out-musl/test/static

# arm64 under qemu-user, which accepts MADV_GUARD_INSTALL and ignores it: the probe
# must see that the page stays readable and choose mprotect, asserted by api_check
# (EXPECT_BACKEND) under guard=auto and under guard=madvise. qemu 7.2 (Debian 12)
# keeps a descriptor for every page of a reservation, so the default 12.5 TiB slab
# reservation would take minutes and gigabytes: this build reserves 256 MiB per
# (arena, class) and 1 GiB of metadata. Tests that cannot run under the emulator are
# not run and counted as skipped with their reason: test/tests.list ("arm64:" and
# "reexec"). The emulated CPU (-cpu max) has memory tagging. qemu-user ignores guard
# markers, so both passes use the mprotect backend: the first (guard=madvise) runs the
# suite with small blocks tagged and tag checks synchronous (mte_death asserts it;
# programs marked "arm64-mte:" run untagged, with the reason), the second
# (guard=mprotect) runs it all with mte=off, as on an arm64 CPU without MTE. Tagging is
# emulated in software and makes a program several times slower under qemu: one tagged
# pass keeps the target near its old time. mte_death also runs on a CPU without MTE
# (cortex-a72), where the accesses must go on as on x86_64 (docs/mte.md).
ARM64_CC := aarch64-linux-gnu-gcc
ARM64_CONFIG := CONFIG_SLAB_REGION_SHIFT=28 CONFIG_META_RESERVE=1073741824
QEMU_ARM64_PLAIN := qemu-aarch64 -L /usr/aarch64-linux-gnu
QEMU_ARM64 := $(QEMU_ARM64_PLAIN) -cpu max
check-arm64:
	$(MAKE) --no-print-directory OUT=out-arm64 CC=$(ARM64_CC) $(ARM64_CONFIG) $(CHECK_INVARIANTS) lib static-build
	@printf 'int main(void) { return 0; }\n' | $(ARM64_CC) -static -x c - -o out-arm64/emu_probe
	@if ! $(QEMU_ARM64) out-arm64/emu_probe; then \
		echo "check-arm64: SKIPPED: $(QEMU_ARM64) cannot run an arm64 program here"; exit 0; fi; \
	set -e; \
	echo "arm64: api_check with guard=auto must choose mprotect"; \
	EXPECT_BACKEND=mprotect $(QEMU_ARM64) out-arm64/test/static/api_check > out-arm64/test/api_check_auto.log 2>&1 \
		|| { cat out-arm64/test/api_check_auto.log; exit 1; }; \
	grep -E "^(guard backend|api_check)" out-arm64/test/api_check_auto.log; \
	echo "arm64: mte_death must find memory tagging sync, and off on a CPU without MTE"; \
	$(QEMU_ARM64) out-arm64/test/static/mte_death 2>/dev/null | grep -x "mte_death: 0 failed (memory tagging sync)"; \
	$(QEMU_ARM64_PLAIN) -cpu cortex-a72 out-arm64/test/static/mte_death 2>/dev/null \
		| grep -x "mte_death: 0 failed (memory tagging off)"; \
	echo "arm64: a tag-check mode the program chose (glibc.mem.tagging) is kept"; \
	$(ARM64_CC) -static -O2 -Wall -Wextra -Werror -Iinclude -o out-arm64/mte_keep_mode test/arm64/mte_keep_mode.c \
		out-arm64/librampart.a -lpthread; \
	GLIBC_TUNABLES=glibc.mem.tagging=1 MTE_EXPECT=async $(QEMU_ARM64) out-arm64/mte_keep_mode; \
	GLIBC_TUNABLES=glibc.mem.tagging=3 MTE_EXPECT=sync $(QEMU_ARM64) out-arm64/mte_keep_mode; \
	SKIP_ARCH=arm64 MTE_OFF_BACKEND=mprotect EXTRA_ENV=EXPECT_BACKEND=mprotect \
		sh test/run-bins.sh arm64 out-arm64/test/static $(QEMU_ARM64)

# seccomp: one list (test/seccomp/syscalls.list) gives the allow-list of seccomp_check
# (a header generated here) and the table of docs/seccomp.md (`make seccomp-table`
# rewrites it; check-seccomp-readme fails while they differ; check-docs runs it).
# seccomp_check is in test/tests.list.
SECCOMP_LIST := test/seccomp/syscalls.list
SECCOMP_DOC := docs/seccomp.md
SECCOMP_GEN = awk -v mode=$(1) -f test/seccomp/gen.awk $(SECCOMP_LIST)
# The document's table: from its header row to the first line that is not a table row.
SECCOMP_DOC_TABLE = awk '/^\| operation \| madvise backend \| mprotect backend \|$$/ { t = 1 } \
	t && !/^\|/ { exit } t' $(SECCOMP_DOC)
$(TEST_OUT)/seccomp/syscalls.h: $(SECCOMP_LIST) test/seccomp/gen.awk
	@mkdir -p $(@D)
	$(call SECCOMP_GEN,header) > $@
$(TEST_OUT)/system/seccomp_check: test/seccomp/seccomp_check.c $(TEST_OUT)/seccomp/syscalls.h $(OUT)/librampart.a
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -I$(TEST_OUT)/seccomp -o $@ $< $(OUT)/librampart.a

check-seccomp-readme:
	@mkdir -p $(OUT)
	@$(call SECCOMP_GEN,readme) > $(OUT)/seccomp-table.md.tmp
	@$(SECCOMP_DOC_TABLE) | diff -u - $(OUT)/seccomp-table.md.tmp \
		|| { echo "$(SECCOMP_DOC)'s system-call table differs from $(SECCOMP_LIST): run make seccomp-table"; exit 1; }
	@rm -f $(OUT)/seccomp-table.md.tmp; echo "$(SECCOMP_DOC) system-call table matches $(SECCOMP_LIST)"
seccomp-table:
	@mkdir -p $(OUT)
	@$(call SECCOMP_GEN,readme) > $(OUT)/seccomp-table.md.tmp
	@awk -v table=$(OUT)/seccomp-table.md.tmp \
		'/^\| operation \| madvise backend \| mprotect backend \|$$/ { while ((getline l < table) > 0) print l; skip = 1; next } \
		skip && /^\|/ { next } { skip = 0; print }' $(SECCOMP_DOC) > $(SECCOMP_DOC).tmp && mv $(SECCOMP_DOC).tmp $(SECCOMP_DOC)
	@rm -f $(OUT)/seccomp-table.md.tmp; echo "$(SECCOMP_DOC) system-call table written from $(SECCOMP_LIST)"
# Documents: every relative link of README.md, docs/, test/README.md and bench/ resolves
# (files and #headings), README.md stays within 400 lines, docs/seccomp.md's table is
# the one syscalls.list gives, and every file a comment in src/ or a page of docs/ names
# exists (test/check-paths.sh). No build; part of make test.
.PHONY: check-docs
check-docs: check-seccomp-readme
	@sh test/check-docs.sh
	@sh test/check-paths.sh

check-seccomp: check-seccomp-readme $(TEST_OUT)/system/seccomp_check
	RAMPART_OPTIONS=guard=madvise $(TEST_OUT)/system/seccomp_check
	RAMPART_OPTIONS=guard=mprotect $(TEST_OUT)/system/seccomp_check

# Fuzzing (test/fuzz/): libFuzzer (clang's -fsanitize=fuzzer, Debian's libclang-rt-14-dev)
# drives fuzz_ops.c, which runs operation sequences on the public functions against a
# shadow model. The fuzzer is linked with librampart.a and no ASan (ASan would replace
# malloc; see fuzz_ops.c), so libFuzzer's own allocations run on rampart too. The
# library and the harness get libFuzzer's coverage instrumentation and UBSan in trap
# mode (no runtime; see below), into out-fuzz/. `make fuzz` runs it FUZZ_SECONDS per guard
# backend from the committed seeds (test/fuzz/corpus, never written) with new inputs in
# out-fuzz/corpus-BACKEND; test/fuzz/run.sh prints executions, exec/s, cov and ft.
# fuzz_replay runs the same harness over test/fuzz/corpus and test/fuzz/crashes without
# libFuzzer: in test/tests.list (system/fuzz_replay).
# `make fuzz-seeds` rewrites the seed corpus from replay.c (--write-seeds).
.PHONY: fuzz check-fuzz fuzz-build fuzz-seeds
FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN := $(shell sed -n 's/^\#define FUZZ_MAX_LEN //p' test/fuzz/fuzz_ops.h)
FUZZ_SRCS := test/fuzz/fuzz_ops.c test/fuzz/fuzz_ops.h include/rampart.h src/slab/sizeclass.h
FUZZ_CC := clang -fsanitize=fuzzer-no-link -fsanitize=undefined -fsanitize-trap=undefined

$(TEST_OUT)/system/fuzz_replay: test/fuzz/replay.c $(FUZZ_SRCS) $(OUT)/librampart.a
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -DFUZZ_DIR='"$(abspath test/fuzz)"' -o $@ $< test/fuzz/fuzz_ops.c $(OUT)/librampart.a

# Linked by hand with libFuzzer's runtime: `clang -fsanitize=fuzzer` (and
# fuzzer-no-link) also links UBSan's full runtime, whose .preinit_array hook calls
# dlsym, hence malloc, before getenv works, so rampart started without RAMPART_OPTIONS
# (both runs used madvise; run.sh now checks the backend in use). UBSan in trap mode
# needs no runtime: a check that fails is SIGILL, which libFuzzer catches. librampart.a
# comes after libFuzzer so that its C++ operators (cxx.o) serve libFuzzer's new/delete.
FUZZ_RT = $(shell clang -print-file-name=libclang_rt.fuzzer-$(shell uname -m).a)
$(OUT)/fuzz/fuzz_ops.o: $(FUZZ_SRCS) $(OUT)/config.stamp
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -c -o $@ test/fuzz/fuzz_ops.c
$(OUT)/fuzz/fuzz_ops: $(OUT)/fuzz/fuzz_ops.o $(OUT)/librampart.a
	$(call say,LD,$@)clang -pthread -o $@ $< -Wl,--whole-archive $(FUZZ_RT) -Wl,--no-whole-archive \
		$(OUT)/librampart.a -lstdc++ -lm
fuzz-build: lib $(OUT)/fuzz/fuzz_ops

fuzz:
	@$(MAKE) --no-print-directory OUT=out-fuzz CC='$(FUZZ_CC)' $(CHECK_INVARIANTS) fuzz-build
	@sh test/fuzz/run.sh out-fuzz/fuzz/fuzz_ops out-fuzz $(FUZZ_SECONDS) $(FUZZ_MAX_LEN)
check-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=30

fuzz-seeds: $(TEST_OUT)/system/fuzz_replay
	rm -f test/fuzz/corpus/*
	@mkdir -p test/fuzz/corpus
	$(TEST_OUT)/system/fuzz_replay --write-seeds test/fuzz/corpus

# Real programs' own test suites: Python's regression tests with PYTHONMALLOC=malloc
# (every object from malloc), without rampart and preloaded under each backend.
# A module that fails only under rampart fails the check unless test/real/python-known.txt
# lists it (or each of its tests that failed) with the reason; python-ignore.txt names
# tests left out of every configuration. The broad list is test/real/python-broad.txt,
# REAL_SHORT=1 takes test/real/python-short.txt. Logs and XML: out-real/real-{broad,short}/;
# REAL_ARGS=--no-run compares the last run's logs again (python_check.py --help).
REAL_SHORT ?=
REAL_JOBS ?= 2
REAL_ARGS ?=
REAL_SET := $(if $(REAL_SHORT),short,broad)
check-real:
	$(MAKE) --no-print-directory OUT=out-real $(CHECK_INVARIANTS) lib
	python3 test/real/python_check.py --lib out-real/librampart.so \
		--out out-real/real-$(REAL_SET) --modules test/real/python-$(REAL_SET).txt --jobs $(REAL_JOBS) $(REAL_ARGS)

# The suite built with each on/off switch of config.mk turned off on its own (canaries,
# zero-on-free with the check that needs it, the nursery, spill regions, labels) and one
# arena: a user who turns one off gets a library that builds under -Werror and tests
# that assert what that build promises. A case whose protection is compiled out says so
# ("n/a"); a program with nothing left to test exits 77, counted as skipped. Each into
# out-configs/<name>. Then the protections a profile sets at run time, which no build
# switches any more: the suite run again on one build (out-configs/runtime) with the
# options of each RUNTIME_SETS entry first in RAMPART_OPTIONS (test/run.sh, TEST_OPTIONS;
# ':' between options): the light profile, and strong without its slot quarantine (the
# one that changes most paths). A program asks the library what is on (test/profile.h).
# CONFIGS= picks some, by name.
CONFIG_SETS := nocanary:CONFIG_SLOT_CANARY=0 \
	nozero:CONFIG_ZERO_ON_FREE=0,CONFIG_WRITE_AFTER_FREE_CHECK=0 \
	nonursery:CONFIG_SLAB_NURSERY_PAGES=0 \
	nospill:CONFIG_SLAB_SPILL_REGIONS=0 \
	arenas1:CONFIG_SLAB_ARENAS=1 \
	nolabel:CONFIG_LABEL_MEMORY=0
RUNTIME_SETS := light:profile=light \
	noslotq:slot_quarantine_bytes=0
CONFIGS ?= $(foreach c,$(CONFIG_SETS) $(RUNTIME_SETS),$(firstword $(subst :, ,$(c))))
.PHONY: check-configs
check-configs:
	@failed=; for c in $(CONFIG_SETS); do \
		name=$${c%%:*}; vars=$$(echo "$${c#*:}" | tr , ' '); \
		case " $(CONFIGS) " in *" $$name "*) ;; *) continue ;; esac; \
		echo "=== check-configs: $$name ($$vars)"; \
		$(MAKE) --no-print-directory OUT=out-configs/$$name $$vars $(CHECK_INVARIANTS) test-build && \
			OUT=out-configs/$$name $(CHECK_INVARIANTS) sh test/run.sh || failed="$$failed $$name"; \
	done; \
	built=; for c in $(RUNTIME_SETS); do \
		name=$${c%%:*}; opts=$${c#*:}; \
		case " $(CONFIGS) " in *" $$name "*) ;; *) continue ;; esac; \
		echo "=== check-configs: $$name (RAMPART_OPTIONS=$$opts,...)"; \
		if [ -z "$$built" ]; then \
			$(MAKE) --no-print-directory OUT=out-configs/runtime $(CHECK_INVARIANTS) test-build || \
				{ failed="$$failed $$name"; continue; }; built=1; \
		fi; \
		OUT=out-configs/runtime TEST_OPTIONS=$$opts $(CHECK_INVARIANTS) sh test/run.sh || failed="$$failed $$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "check-configs: failed:$$failed"; exit 1; fi; echo "check-configs: all passed"

check: check-clang check-ubsan check-tsan check-musl check-arm64 check-seccomp check-uring check-system-wide check-deb check-fuzz check-real check-configs
