# bench/bench.mk: the benchmark suite (see bench/README.md).
#
# Included by the top-level Makefile (`include bench/bench.mk`); also works on
# its own from the repository root: `make -f bench/bench.mk bench QUICK=1`,
# which uses whichever rampart libraries already exist and builds none.
#
#   make bench              full run -> bench/results/latest.md and latest.svg
#   make bench QUICK=1      every workload once, small parameters -> out/bench/quick.md
#   make bench-deps         install the compared allocators and the tools (apt-get)
#
# Optional knobs: BENCH_ROUNDS=n, BENCH_WORKLOADS=small,tree,...,
# BENCH_ALLOCATORS=glibc,rampart,..., BENCH_TIMEOUT=seconds per run,
# BENCH_EXTRA="name=/path/lib.so ..." (more allocators, as extra columns),
# BENCH_SYSCALLS=0|1 (the strace pass counting memory system calls; default
# on, off with QUICK=1).  A run narrowed by any of them but BENCH_EXTRA (or with
# fewer than 3 rounds) is partial and writes out/bench/partial.md instead of the
# committed bench/results/latest.*.

BENCH_SAVED_GOAL := $(.DEFAULT_GOAL)
BENCH_STANDALONE := $(if $(filter bench/bench.mk ./bench/bench.mk,$(firstword $(MAKEFILE_LIST))),1,)

LIB_SO ?= out/librampart.so
LIB_SO_LIGHT ?= out/light/librampart.so
BENCH_OUT := out/bench
BENCH_CFLAGS ?= -O2 -Wall -Wextra
BENCH_PYTHON ?= python3
BENCH_PROGS := $(addprefix $(BENCH_OUT)/,launch churn prodcons tree realloc list larson startup)

BENCH_ARGS = --bindir $(BENCH_OUT) --rampart $(LIB_SO) --rampart-light $(LIB_SO_LIGHT) \
	$(if $(filter-out 0,$(QUICK)),--quick) \
	$(if $(BENCH_ROUNDS),--rounds $(BENCH_ROUNDS)) \
	$(if $(BENCH_WORKLOADS),--workloads $(BENCH_WORKLOADS)) \
	$(if $(BENCH_ALLOCATORS),--allocators $(BENCH_ALLOCATORS)) \
	$(if $(BENCH_TIMEOUT),--timeout $(BENCH_TIMEOUT)) \
	$(if $(BENCH_SYSCALLS),--syscalls $(BENCH_SYSCALLS)) \
	$(if $(strip $(BENCH_EXTRA)),--extra "$(strip $(BENCH_EXTRA))")

# Included: the library is a real prerequisite (the top-level Makefile knows
# how to build it) and the light variant is built when missing or older than
# the default one.  Standalone: use what exists.
ifeq ($(BENCH_STANDALONE),1)
BENCH_LIB_DEPS :=
else
BENCH_LIB_DEPS := $(LIB_SO) bench-light
endif

.PHONY: bench bench-build bench-light bench-deps bench-clean

bench: $(BENCH_LIB_DEPS) bench-build
	$(BENCH_PYTHON) bench/run.py $(BENCH_ARGS)

bench-build: $(BENCH_PROGS)

$(BENCH_PROGS): $(BENCH_OUT)/%: bench/%.c bench/common.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -pthread -o $@ $<

# OUT is named: test/run.sh exports OUT=out, which would send the light build there.
bench-light: $(if $(BENCH_STANDALONE),,$(LIB_SO))
	@if [ ! -f $(LIB_SO_LIGHT) ] || [ $(LIB_SO) -nt $(LIB_SO_LIGHT) ]; then \
		echo "bench: building the light variant ($(LIB_SO_LIGHT))"; \
		$(MAKE) VARIANT=light OUT=$(patsubst %/,%,$(dir $(LIB_SO_LIGHT))) lib; \
	fi

BENCH_SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

bench-deps:
	$(BENCH_SUDO) apt-get update -qq
	$(BENCH_SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 libclang-rt-14-dev \
		sqlite3 gnuplot-nox python3 gcc g++ git perl strace

bench-clean:
	rm -rf $(BENCH_OUT)

# `make bug-classes`: one heap bug per scenario (bench/bugclasses.c) under glibc, rampart,
# its light variant, Scudo where installed and every BENCH_EXTRA allocator; prints a
# Markdown table of which ones stopped the process (the README's "What it stops").
BUGCLASS_SCUDO := $(firstword $(wildcard /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-$(shell uname -m).so))
$(BENCH_OUT)/bugclasses: bench/bugclasses.c
	@mkdir -p $(@D)
	$(CC) -O0 -fno-builtin -Wall -Wextra -Werror -o $@ $< -ldl -lstdc++
.PHONY: bug-classes
bug-classes: $(BENCH_OUT)/bugclasses bench-light
	@sh bench/bugclasses.sh $(BENCH_OUT)/bugclasses rampart=$(abspath $(LIB_SO)) \
		rampart-light=$(abspath $(LIB_SO_LIGHT)) $(if $(BUGCLASS_SCUDO),scudo=$(BUGCLASS_SCUDO)) \
		$(strip $(BENCH_EXTRA))

# `make out/bench/slot_reuse_distance`: frees until a freed slot comes back, per size
# (issue 36; run it under each allocator with LD_PRELOAD). Takes rampart's size classes
# from sizeclass.h (with canaries, the default build's usable sizes).
$(BENCH_OUT)/slot_reuse_distance: bench/slot_reuse_distance.c src/slab/sizeclass.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -Isrc -DCONFIG_SLOT_CANARY=1 -o $@ $<

# An included file must not steal the top-level Makefile's default goal.
ifneq ($(BENCH_STANDALONE),1)
.DEFAULT_GOAL := $(BENCH_SAVED_GOAL)
endif

# `make bench-soak`: a long-running server's memory after churn (bench/soak.sh, issue 52):
# redis-server under jemalloc (its own), glibc, Scudo, rampart and its light variant.
# Writes out/bench/soak.md; skipped (exit 77, said) without redis-server and redis-tools.
SOAK_SCUDO := $(firstword $(wildcard /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-$(shell uname -m).so))
.PHONY: bench-soak
bench-soak: bench-light
	@mkdir -p $(BENCH_OUT)
	@sh bench/soak.sh jemalloc=- glibc=$(abspath $(LIB_SO)) $(if $(SOAK_SCUDO),scudo=$(SOAK_SCUDO)) \
		rampart=$(abspath $(LIB_SO)) rampart-light=$(abspath $(LIB_SO_LIGHT)) $(strip $(BENCH_EXTRA)) \
		| tee $(BENCH_OUT)/soak.md
