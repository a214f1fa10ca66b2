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
# BENCH_EXTRA="name=/path/lib.so name2=/path/lib.so?OPTIONS ..." (more allocators, as
# extra columns; what follows a '?' is that column's RAMPART_OPTIONS),
# BENCH_SYSCALLS=0|1 (the strace pass counting memory system calls; default
# on, off with QUICK=1), BENCH_OUTPUT=path.md (where the report goes).  A run
# narrowed by any of them but BENCH_EXTRA (or with fewer than 3 rounds) is partial
# and writes out/bench/partial.md instead of the committed bench/results/latest.*.
#
# The rampart-light column is the same library as rampart, run with
# RAMPART_OPTIONS=profile=light (BENCH_LIGHT, LIB?OPTIONS); no second build.  The
# rampart column is BENCH_RAMPART, by default $(LIB_SO) with no options (its default
# profile); BENCH_RAMPART='$(LIB_SO)?profile=strong' names the profile.

BENCH_SAVED_GOAL := $(.DEFAULT_GOAL)
BENCH_STANDALONE := $(if $(filter bench/bench.mk ./bench/bench.mk,$(firstword $(MAKEFILE_LIST))),1,)

LIB_SO ?= out/librampart.so
BENCH_RAMPART ?= $(LIB_SO)
BENCH_LIGHT ?= $(LIB_SO)?profile=light
BENCH_OUT := out/bench
BENCH_CFLAGS ?= -O2 -Wall -Wextra
BENCH_PYTHON ?= python3
BENCH_PROGS := $(addprefix $(BENCH_OUT)/,launch churn prodcons tree realloc list larson startup)

BENCH_ARGS = --bindir $(BENCH_OUT) --rampart '$(BENCH_RAMPART)' --rampart-light '$(BENCH_LIGHT)' \
	$(if $(filter-out 0,$(QUICK)),--quick) \
	$(if $(BENCH_ROUNDS),--rounds $(BENCH_ROUNDS)) \
	$(if $(BENCH_WORKLOADS),--workloads $(BENCH_WORKLOADS)) \
	$(if $(BENCH_ALLOCATORS),--allocators $(BENCH_ALLOCATORS)) \
	$(if $(BENCH_TIMEOUT),--timeout $(BENCH_TIMEOUT)) \
	$(if $(BENCH_SYSCALLS),--syscalls $(BENCH_SYSCALLS)) \
	$(if $(BENCH_OUTPUT),--output '$(BENCH_OUTPUT)') \
	$(if $(strip $(BENCH_EXTRA)),--extra "$(strip $(BENCH_EXTRA))")

# Included: the library is a real prerequisite (the top-level Makefile knows
# how to build it).  Standalone: use what exists.
ifeq ($(BENCH_STANDALONE),1)
BENCH_LIB_DEPS :=
else
BENCH_LIB_DEPS := $(LIB_SO)
endif

# LIB?OPTIONS with LIB made absolute, for bench/bugclasses.sh and bench/soak.sh.
bench_abs = $(abspath $(firstword $(subst ?, ,$(1))))$(if $(findstring ?,$(1)),?$(word 2,$(subst ?, ,$(1))))

.PHONY: bench bench-build bench-deps bench-clean

bench: $(BENCH_LIB_DEPS) bench-build
	$(BENCH_PYTHON) bench/run.py $(BENCH_ARGS)

bench-build: $(BENCH_PROGS)

$(BENCH_PROGS): $(BENCH_OUT)/%: bench/%.c bench/common.h bench/clock.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -pthread -o $@ $<

BENCH_SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

bench-deps:
	$(BENCH_SUDO) apt-get update -qq
	$(BENCH_SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 libclang-rt-14-dev \
		sqlite3 gnuplot-nox python3 gcc g++ git perl strace

bench-clean:
	rm -rf $(BENCH_OUT)

# `make bug-classes`: one heap bug per scenario (bench/bugclasses.c) under glibc, rampart,
# rampart with profile=light, Scudo where installed and every BENCH_EXTRA allocator; prints a
# Markdown table of which ones stopped the process (the README's "What it stops").
# set -f: a '?' of LIB?OPTIONS is no pattern for the shell.
BUGCLASS_SCUDO := $(firstword $(wildcard /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-$(shell uname -m).so))
$(BENCH_OUT)/bugclasses: bench/bugclasses.c
	@mkdir -p $(@D)
	$(CC) -O0 -fno-builtin -Wall -Wextra -Werror -o $@ $< -ldl -lstdc++
.PHONY: bug-classes
bug-classes: $(BENCH_OUT)/bugclasses $(BENCH_LIB_DEPS)
	@set -f; sh bench/bugclasses.sh $(BENCH_OUT)/bugclasses 'rampart=$(call bench_abs,$(BENCH_RAMPART))' \
		'rampart-light=$(call bench_abs,$(BENCH_LIGHT))' $(if $(BUGCLASS_SCUDO),scudo=$(BUGCLASS_SCUDO)) \
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
# redis-server under jemalloc (its own), glibc, Scudo, rampart and rampart with profile=light.
# Writes out/bench/soak.md; skipped (exit 77, said) without redis-server and redis-tools.
SOAK_SCUDO := $(firstword $(wildcard /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.scudo_standalone-$(shell uname -m).so))
.PHONY: bench-soak
bench-soak: $(BENCH_LIB_DEPS)
	@mkdir -p $(BENCH_OUT)
	@set -f; sh bench/soak.sh jemalloc=- glibc=$(abspath $(LIB_SO)) $(if $(SOAK_SCUDO),scudo=$(SOAK_SCUDO)) \
		'rampart=$(call bench_abs,$(BENCH_RAMPART))' 'rampart-light=$(call bench_abs,$(BENCH_LIGHT))' $(strip $(BENCH_EXTRA)) \
		| tee $(BENCH_OUT)/soak.md
