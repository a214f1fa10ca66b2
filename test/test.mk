# Tests: `make test` builds the library and every test, then test/run.sh runs them all
# and prints one summary line. test/tests.list names every program it runs, how each
# runs and what is known about it; the lists below come from it (test/list.awk).
#
#   test/unit/*.c     Check programs, white-box (may include src/*.h), linked with the library's objects, invariants on
#   test/fault/*.c    cmocka programs; test/fault/fake_kernel.c wraps the kernel calls (-Wl,--wrap=)
#   test/death/*.c    one death-test harness: each case commits a bug, the test passes on the right signal
#   test/system/*.c   whole-program checks (stress, fork, mlockall, VMA counts) linked like a user program
#   test/light/*.c    black-box programs linked with the light variant's librampart.a
TEST_OUT := $(OUT)/test
TEST_CFLAGS := -std=gnu11 -O1 -g -pthread -Wall -Wextra -Werror -Wno-unused-parameter \
	-fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free \
	$(CONFIG_CPPFLAGS) -Iinclude -Isrc
FAULT_WRAPS := -Wl,--wrap=mmap,--wrap=munmap,--wrap=mprotect,--wrap=madvise,--wrap=mremap,--wrap=open,--wrap=prctl,--wrap=pthread_atfork

TEST_LIST := test/tests.list
TEST_LIST_READ = awk -v what=$(1) $(2) -f test/list.awk $(TEST_LIST)
TEST_LIST_QUIET = $(call TEST_LIST_READ,$(1),-v quiet=1 $(2))
# Every program run once per backend lands in OUT/test/PROGRAM; the one run preloaded
# (the demo) in OUT/. Each is built by a rule below or in check.mk.
TEST_BINS := $(addprefix $(TEST_OUT)/,$(shell $(call TEST_LIST_QUIET,programs,-v 'runs_wanted=both light'))) \
	$(addprefix $(OUT)/,$(shell $(call TEST_LIST_QUIET,programs,-v runs_wanted=preload)))
# The directories where a test used to run by being there: a source the list does not
# name there fails the build instead of never running.
TEST_LISTED_SRCS := $(shell $(call TEST_LIST_QUIET,sources))
TEST_UNLISTED := $(filter-out $(TEST_LISTED_SRCS) test/fault/fake_kernel.c, \
	$(wildcard test/unit/*.c test/fault/*.c test/death/*.c test/system/*.c test/light/*.c))
.PHONY: test-list-check
test-list-check:
	@$(call TEST_LIST_READ,check)
	@$(if $(TEST_UNLISTED),echo "test/tests.list names no program for: $(TEST_UNLISTED)" >&2; exit 1,:)
	@$(if $(filter-out $(wildcard $(TEST_LISTED_SRCS)),$(TEST_LISTED_SRCS)), \
		echo "test/tests.list names sources that do not exist: $(filter-out $(wildcard $(TEST_LISTED_SRCS)),$(TEST_LISTED_SRCS))" >&2; exit 1,:)

# Unit tests: with the invariants checked, in the library objects and in the inline
# code they compile from its headers (Makefile: obj-inv).
UNIT_CFLAGS = $(filter-out -DCONFIG_INVARIANTS=%,$(TEST_CFLAGS)) -DCONFIG_INVARIANTS=1
$(TEST_OUT)/unit/%: test/unit/%.c $(OUT)/obj-inv/internal.a $(wildcard test/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(UNIT_CFLAGS) -o $@ $< $(OUT)/obj-inv/internal.a $$(pkg-config --cflags --libs check)

$(TEST_OUT)/fault/%: test/fault/%.c test/fault/fake_kernel.c $(OBJS) $(wildcard test/*.h test/fault/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -o $@ $< test/fault/fake_kernel.c $(OBJS) $(FAULT_WRAPS) $$(pkg-config --cflags --libs cmocka)

$(TEST_OUT)/death/%: test/death/%.c $(OUT)/librampart.a $(wildcard test/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -o $@ $< $(OUT)/librampart.a

$(TEST_OUT)/system/%: test/system/%.c $(OUT)/librampart.a $(wildcard test/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -o $@ $< $(OUT)/librampart.a

# Programs of the light profile (test/run.sh runs them with profile=light), linked with
# the one library. Black-box: only the public header, no CONFIG_*.
LIGHT_TEST_CFLAGS := $(filter-out -D% -Isrc,$(TEST_CFLAGS))

$(TEST_OUT)/light/%: test/light/%.c $(OUT)/librampart.a include/rampart.h $(wildcard test/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(LIGHT_TEST_CFLAGS) -o $@ $< $(OUT)/librampart.a

.PHONY: test test-build test-deps
# Programs built without rampart, which tests run with and without it preloaded to
# compare the two allocators on the same program (system/mlock_unpriv), or preloaded
# beside another allocator (system/passthrough_next).
PLAIN_BINS := $(patsubst test/mlock/%.c,$(TEST_OUT)/plain/%,$(wildcard test/mlock/*.c)) \
	$(patsubst test/plain/%.c,$(TEST_OUT)/plain/%,$(wildcard test/plain/*.c))
$(TEST_OUT)/plain/%: test/mlock/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(LIGHT_TEST_CFLAGS) -o $@ $<
$(TEST_OUT)/plain/%: test/plain/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(LIGHT_TEST_CFLAGS) -o $@ $<

test-build: test-list-check lib $(TEST_BINS) $(PLAIN_BINS)

# Missing Debian packages are installed first (as root) or named (otherwise): test/deps.sh.
test-deps:
	@sh test/deps.sh

test: test-deps
	@$(MAKE) --no-print-directory check-docs
	@$(MAKE) --no-print-directory test-build
	@OUT=$(OUT) CC=$(CC) sh test/run.sh

# The benchmark suite once, quick, with assertions (test/bench_smoke.sh): every workload
# ran under glibc, rampart and rampart-light (profile=light) with glibc's output, and the
# default build is left as it was. Not part of `make test`, which tests rampart; CI runs it
# as a step.
.PHONY: bench-smoke
bench-smoke: test-deps
	@$(MAKE) --no-print-directory lib
	@sh test/bench_smoke.sh

# C++ operators (src/front/cxx.c), from C++ programs: test/cxx/*. cxx_test runs linked with
# librampart.a and with librampart.so; cxx_dlopen is a C program that dlopens a C++
# plugin (libstdc++ arrives late).
CXX_TEST_FLAGS := -std=gnu++17 -O1 -g -pthread -Wall -Wextra -Werror -Iinclude
RPATH_OUT := -Wl,-rpath,$(abspath $(OUT))

$(TEST_OUT)/system/cxx_test: test/cxx/cxx_test.cpp $(OUT)/librampart.a
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -o $@ $< $(OUT)/librampart.a
$(TEST_OUT)/system/cxx_test_so: test/cxx/cxx_test.cpp $(OUT)/librampart.so
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -o $@ $< -L$(OUT) -lrampart $(RPATH_OUT)
# Each new-expression a call site of its own (call-site partitions).
$(TEST_OUT)/system/cxx_partitions: test/cxx/cxx_partitions.cpp $(OUT)/librampart.a
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -o $@ $< $(OUT)/librampart.a
$(TEST_OUT)/death/cxx_death: test/cxx/cxx_death.cpp $(OUT)/librampart.a
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -o $@ $< $(OUT)/librampart.a
# Blocks freed otherwise than they were allocated: the operators are the program's own
# (static) or the shared library's, which libstdc++'s calls reach by interposition; with
# -static-libstdc++ libstdc++'s own calls are linked to the program's operators.
$(TEST_OUT)/death/cxx_kind_death: test/cxx/cxx_kind_death.cpp $(OUT)/librampart.a
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -o $@ $< $(OUT)/librampart.a
$(TEST_OUT)/death/cxx_kind_death_static: test/cxx/cxx_kind_death.cpp $(OUT)/librampart.a
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -static-libstdc++ -o $@ $< $(OUT)/librampart.a
$(TEST_OUT)/death/cxx_kind_death_so: test/cxx/cxx_kind_death.cpp $(OUT)/librampart.so
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -o $@ $< -L$(OUT) -lrampart $(RPATH_OUT)
# A program that replaces operator new, or operator delete, and leaves the rest to
# rampart's shared library (a static link would hold both definitions).
$(TEST_OUT)/system/cxx_replaced_new_so: test/cxx/cxx_replaced.cpp $(OUT)/librampart.so
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -DREPLACE_NEW -o $@ $< -L$(OUT) -lrampart $(RPATH_OUT)
$(TEST_OUT)/system/cxx_replaced_delete_so: test/cxx/cxx_replaced.cpp $(OUT)/librampart.so
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -DREPLACE_DELETE -o $@ $< -L$(OUT) -lrampart $(RPATH_OUT)
# The caller trace leaves rampart's own frames out by other means in the shared library
# than in the static one (src/base/callers.c): trace_death runs linked with each.
$(TEST_OUT)/death/trace_death_so: test/death/trace_death.c $(OUT)/librampart.so $(wildcard test/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -o $@ $< -L$(OUT) -lrampart $(RPATH_OUT)
# (death/trace_death_so is a line of test/tests.list.)

# The callers list against addr2line (test/callers.h): programs built as a user's
# optimised build is, but with calls that stay calls (a sibling call leaves no frame of
# its caller to list). call_line_death from C, with librampart.a and librampart.so (and
# statically: check.mk); cxx_callers from C++, with the shared libstdc++ and
# librampart.so, and with -static-libstdc++ and librampart.a.
CALLERS_FLAGS := -O2 -fno-optimize-sibling-calls
$(TEST_OUT)/death/call_line_death: TEST_CFLAGS += $(CALLERS_FLAGS)
$(TEST_OUT)/death/call_line_death_so: test/death/call_line_death.c $(OUT)/librampart.so $(wildcard test/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) $(CALLERS_FLAGS) -o $@ $< -L$(OUT) -lrampart $(RPATH_OUT)
$(TEST_OUT)/death/cxx_callers: test/cxx/cxx_callers_death.cpp test/callers.h $(OUT)/librampart.so
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) $(CALLERS_FLAGS) -o $@ $< -L$(OUT) -lrampart $(RPATH_OUT)
$(TEST_OUT)/death/cxx_callers_static: test/cxx/cxx_callers_death.cpp test/callers.h $(OUT)/librampart.a
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) $(CALLERS_FLAGS) -static-libstdc++ -o $@ $< $(OUT)/librampart.a

$(TEST_OUT)/cxx/libcxx_plugin.so: test/cxx/cxx_plugin.cpp
	@mkdir -p $(@D)
	$(call say,CXX,$<)$(CXX) $(CXX_TEST_FLAGS) -shared -fPIC -o $@ $<
$(TEST_OUT)/system/cxx_dlopen: test/cxx/cxx_dlopen.c $(TEST_OUT)/cxx/libcxx_plugin.so $(OUT)/librampart.so
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -o $@ $< -Wl,--no-as-needed -L$(OUT) -lrampart $(RPATH_OUT) -ldl

# `make sizeclass-table` prints the slab size-class table (Markdown) from src/slab/sizeclass.c;
# docs/slab.md (Size classes) tells readers to run it. PAGE=16384 shows it for another page size.
.PHONY: sizeclass-table
$(OUT)/tools/sizeclass_table: test/tools/sizeclass_table.c src/slab/sizeclass.c src/slab/sizeclass.h $(OUT)/config.stamp
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -Wall -Wextra -Werror $(CONFIG_CPPFLAGS) -Isrc -o $@ test/tools/sizeclass_table.c src/slab/sizeclass.c
sizeclass-table: $(OUT)/tools/sizeclass_table
	@$(OUT)/tools/sizeclass_table $(PAGE)

# test/spill/: a size class going on past its own region into spill regions (docs/slab.md,
# "Capacity"). Its library sets aside regions of 16 MiB (and nursery cells of 4 pages, so
# the nursery still fits beside them) and 8 spill regions, so that a class fills its
# region and every spill region in a few tens of MiB. A sub-make builds that library and
# the white-box test into OUT/spill, with this build's other options (a build without a
# nursery or without spill regions keeps it so: the test then skips); the program lands
# in OUT/test/system/, as test/tests.list says.
SPILL_CONFIG := CONFIG_SLAB_REGION_SHIFT=24 \
	CONFIG_SLAB_NURSERY_PAGES=$(if $(filter 0,$(CONFIG_SLAB_NURSERY_PAGES)),0,4) \
	CONFIG_SLAB_SPILL_REGIONS=$(if $(filter 0,$(CONFIG_SLAB_SPILL_REGIONS)),0,8)
ifeq ($(SPILL_BUILD),)
$(TEST_OUT)/system/spill_check: FORCE
	@$(MAKE) --no-print-directory SPILL_BUILD=1 $(SPILL_CONFIG) OUT=$(OUT)/spill $(OUT)/spill/test/spill/spill_check
	@mkdir -p $(@D)
	@cmp -s $(OUT)/spill/test/spill/spill_check $@ || cp $(OUT)/spill/test/spill/spill_check $@
endif
$(TEST_OUT)/spill/%: test/spill/%.c $(OUT)/obj/internal.a $(wildcard test/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(TEST_CFLAGS) -o $@ $< $(OUT)/obj/internal.a
