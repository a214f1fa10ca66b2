# rampart — see README.md. `make` builds out/librampart.{so,a}; `make test` runs everything.
include config.mk

CC ?= cc
PREFIX ?= /usr/local
OUT ?= out$(if $(filter light,$(VARIANT)),/light)

LIB_SO := out/librampart.so
LIB_SO_LIGHT := out/light/librampart.so

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
# Hardening of the library itself; no -march: distribution binaries run on old CPUs.
HARDEN := -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fno-plt
# The compiler must not turn our own code into calls of the functions we define.
NOBUILTIN := -fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 -fPIC -fvisibility=hidden -pthread $(WARN) $(HARDEN) $(NOBUILTIN) \
	$(CONFIG_CPPFLAGS) -Iinclude $(CFLAGS)
LDFLAGS_SO := -shared -pthread -Wl,-z,now -Wl,-z,relro -Wl,-z,noexecstack -Wl,--as-needed

SRCS := $(wildcard src/*.c)
OBJS := $(patsubst src/%.c,$(OUT)/obj/%.o,$(SRCS))

.PHONY: all lib install uninstall run test check-flags clean
all: lib
lib: $(OUT)/librampart.so $(OUT)/librampart.a

# Rebuild everything when the configuration changes.
$(OUT)/config.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(ALL_CFLAGS)' | cmp -s - $@ || echo '$(CC) $(ALL_CFLAGS)' > $@
FORCE:

$(OUT)/obj/%.o: src/%.c $(wildcard src/*.h) include/rampart.h $(OUT)/config.stamp
	@mkdir -p $(@D)
	@echo 'CC $<'
	@$(CC) $(ALL_CFLAGS) -c $< -o $@
# The C++ operators let std::bad_alloc (and new-handler exceptions) unwind through them.
$(OUT)/obj/cxx.o: ALL_CFLAGS += -fexceptions

$(OUT)/librampart.so: $(OBJS)
	$(CC) $(LDFLAGS_SO) -o $@ $(OBJS)

$(OUT)/librampart.a: $(OBJS)
	rm -f $@
	ar rcs $@ $(OBJS)

install: lib
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include
	install -m 755 $(OUT)/librampart.so $(DESTDIR)$(PREFIX)/lib/
	install -m 644 $(OUT)/librampart.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/rampart.h $(DESTDIR)$(PREFIX)/include/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/librampart.so $(DESTDIR)$(PREFIX)/lib/librampart.a \
		$(DESTDIR)$(PREFIX)/include/rampart.h

# `make run` shows the demo; `make run CMD='python3 -c "print(42)"'` runs any command.
CMD ?= $(OUT)/demo
$(OUT)/demo: test/demo.c $(OUT)/librampart.so
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Iinclude -o $@ $<
run: $(OUT)/librampart.so $(OUT)/demo
	LD_PRELOAD=$(abspath $(OUT)/librampart.so) $(CMD)

include test/test.mk
include test/check.mk
-include bench/bench.mk

clean:
	rm -rf out
