# rampart — see README.md. `make` builds out/librampart.{so,a}; `make test` runs everything.
include config.mk

CC ?= cc
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# The version is the header's (RAMPART_VERSION); the SONAME carries its major number.
VERSION := $(shell sed -n 's/^\#define RAMPART_VERSION "\(.*\)"/\1/p' include/rampart.h)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))
SONAME := librampart.so.$(SOMAJOR)
OUT ?= out$(if $(filter light,$(VARIANT)),/light)

LIB_SO := out/librampart.so

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
# Hardening of the library itself; no -march: distribution binaries run on old CPUs.
# A stronger level given in CFLAGS/CPPFLAGS (-fstack-protector-all, _FORTIFY_SOURCE=3)
# is kept; anything weaker is overridden (these come after the caller's flags).
FORTIFY := $(if $(filter -D_FORTIFY_SOURCE=3,$(CPPFLAGS) $(CFLAGS)),,-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2)
STACK_PROTECTOR := $(if $(filter -fstack-protector-all,$(CFLAGS)),,-fstack-protector-strong)
HARDEN := $(STACK_PROTECTOR) $(FORTIFY) -fno-plt
# The compiler must not turn our own code into calls of the functions we define.
NOBUILTIN := -fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free
# Unwind tables for every function, whatever the caller's flags say: the callers listed
# after an error are found by unwinding from rampart's own frames into the program's
# (src/base/callers.c). They are the default of x86_64 and arm64 compilers already.
UNWIND := -fasynchronous-unwind-tables
# Reproducible: the build directory's path leaves no trace in the objects (debug info,
# __FILE__), so a build elsewhere gives the same bytes.
REPRODUCIBLE := -ffile-prefix-map=$(CURDIR)=.
# A distribution's CPPFLAGS, CFLAGS and LDFLAGS (dpkg-buildflags) are honoured: they come
# first and the library's own flags after them, so where they conflict (visibility,
# -fPIC, builtins, warnings, the configuration's -D, -z now) the library's win. Objects
# built for link-time optimisation also carry machine code (-ffat-lto-objects): the
# static library keeps only that, with its symbols renamed (below).
CFLAGS ?= -O2 -g
LTO_FAT := $(if $(filter -flto%,$(CFLAGS)),-ffat-lto-objects)
ALL_CFLAGS := -std=gnu11 $(CPPFLAGS) $(CFLAGS) $(LTO_FAT) -fPIC -fvisibility=hidden -pthread $(WARN) $(HARDEN) \
	$(NOBUILTIN) $(UNWIND) $(REPRODUCIBLE) $(CONFIG_CPPFLAGS) -Iinclude -Isrc
LDFLAGS_SO := $(LDFLAGS) -shared -Wl,-soname,$(SONAME) -pthread -Wl,-z,now -Wl,-z,relro -Wl,-z,noexecstack \
	-Wl,--as-needed -Wl,--sort-section=name

# Quiet build lines ("CC src/front/api.c"); `make V=1` shows every command in full.
ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '%-4s %s\n' '$(1)' '$(2)';
endif

SRCS := $(wildcard src/*/*.c)
OBJS := $(patsubst src/%.c,$(OUT)/obj/%.o,$(SRCS))

.PHONY: all lib man install uninstall run test check-flags clean
all: lib man
lib: $(OUT)/librampart.so $(OUT)/librampart.a $(OUT)/$(SONAME)

# Rebuild everything when the configuration changes.
$(OUT)/config.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(CC) $(ALL_CFLAGS)' | cmp -s - $@ || echo '$(CC) $(ALL_CFLAGS)' > $@
FORCE:
# Relink when the link flags (the SONAME) change.
$(OUT)/link.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(LDFLAGS_SO)' | cmp -s - $@ || echo '$(LDFLAGS_SO)' > $@

$(OUT)/obj/%.o: src/%.c $(wildcard src/*/*.h) include/rampart.h $(OUT)/config.stamp
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(ALL_CFLAGS) -c $< -o $@
# The C++ operators let std::bad_alloc (and new-handler exceptions) unwind through them.
$(OUT)/obj/front/cxx.o: ALL_CFLAGS += -fexceptions

$(OUT)/librampart.so: $(OBJS) $(OUT)/link.stamp
	$(call say,LD,$@)$(CC) $(LDFLAGS_SO) -o $@ $(OBJS)
# Programs linked with -L$(OUT) -lrampart need the SONAME at run time.
$(OUT)/$(SONAME): $(OUT)/librampart.so
	$(Q)ln -sf librampart.so $@

# The static library renames its internal symbols (every global one but the interface:
# those the shared library hides) to __rampart_NAME in every member, so a program that
# defines its own `fatal`, `lock_wait` or `os_page` still links with it. It also moves
# its code (every section named .text or .text.*) into sections of its own, rampart_text
# and, for what the compiler marked unlikely (.text.unlikely, clang's .text.unlikely.),
# rampart_text_cold, whose bounds the linker defines in the program: the callers listed
# after a fatal error (src/base/callers.c) start outside them. Programs that call the
# internals by name link internal.a: the objects as compiled.
# objcopy cannot rename inside the compiler's LTO sections, so they are left out.
OBJCOPY ?= $(shell $(CC) -print-prog-name=objcopy)
STATIC_NO_LTO := $(if $(LTO_FAT),-R '.gnu.lto_*' -R '.gnu.debuglto_*' -N __gnu_lto_slim -N __gnu_lto_v1)
static_sections = $$(readelf -SW $(1) | awk '{ for (i = 1; i <= NF; i++) if ($$i ~ /^\.text/) { \
	print "--rename-section", $$i "=" ($$i ~ /^\.text\.unlikely/ ? "rampart_text_cold" : "rampart_text"); next } }')
$(OUT)/librampart.a: $(OBJS) Makefile
	$(Q)rm -rf $@ $(OUT)/static && mkdir -p $(OUT)/static
	$(Q)readelf -sW $(OBJS) | awk '($$5 == "GLOBAL" || $$5 == "WEAK") && $$6 == "HIDDEN" && $$7 != "UND" \
		{ print $$8, "__rampart_" $$8 }' | sort -u > $(OUT)/static/renames
	$(Q)for o in $(OBJS); do $(OBJCOPY) --redefine-syms=$(OUT)/static/renames $(call static_sections,$$o) $(STATIC_NO_LTO) \
		$$o $(OUT)/static/$${o##*/} || exit 1; done
	$(call say,AR,$@)ar rcs $@ $(addprefix $(OUT)/static/,$(notdir $(OBJS)))
$(OUT)/obj/internal.a: $(OBJS)
	$(Q)rm -f $@
	$(call say,AR,$@)ar rcs $@ $(OBJS)

# The unit tests reach inside the library, so they link its objects compiled once more
# with the invariants checked (CONFIG_INVARIANTS=1, base/common.h), whatever this build
# says: `make test` checks them where the release build compiles them out.
INV_CFLAGS := $(filter-out -DCONFIG_INVARIANTS=%,$(ALL_CFLAGS)) -DCONFIG_INVARIANTS=1
INV_OBJS := $(patsubst src/%.c,$(OUT)/obj-inv/%.o,$(SRCS))
$(OUT)/obj-inv/%.o: src/%.c $(wildcard src/*/*.h) include/rampart.h $(OUT)/config.stamp
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(INV_CFLAGS) -c $< -o $@
$(OUT)/obj-inv/front/cxx.o: INV_CFLAGS += -fexceptions
$(OUT)/obj-inv/internal.a: $(INV_OBJS)
	$(Q)rm -f $@
	$(call say,AR,$@)ar rcs $@ $(INV_OBJS)

# rampart(3) and rampart.conf(5) with their option lists generated from the option table
# (base/option_table.h) and this build's defaults, by a program run on the build machine
# (HOST_CC: a cross build cannot run what CC makes): rampart.conf(5) ships with the
# library (librampart1), rampart(3) only with the development files. The install
# substitutes the paths into them.
HOST_CC ?= cc
MAN_GEN := $(OUT)/man/rampart.3 $(OUT)/man/rampart.conf.5
man: $(MAN_GEN)
$(OUT)/tools/options_man: pkg/options_man.c src/base/option_table.h src/base/common.h $(OUT)/config.stamp
	@mkdir -p $(@D)
	$(call say,CC,$<)$(HOST_CC) -std=gnu11 -O1 -Wall -Wextra -Werror $(CONFIG_CPPFLAGS) -Isrc -o $@ $<
$(MAN_GEN): $(OUT)/man/%: pkg/% $(OUT)/tools/options_man
	@mkdir -p $(@D)
	$(Q)$(OUT)/tools/options_man > $@.options
	$(call say,GEN,$@)sed -e '/^@OPTIONS@$$/{r $@.options' -e 'd;}' pkg/$* > $@.tmp
	$(Q)grep -q '^\.TP$$' $@.tmp && ! grep -q '@OPTIONS@' $@.tmp && mv $@.tmp $@

# Installed: librampart.so.X.Y.Z with the SONAME and development symlinks, the static
# library, the header, rampart.pc, rampart-run and the man pages (DESTDIR honoured).
# The policy file itself is the administrator's: never installed. Then ldconfig where
# the loader searches LIBDIR and DESTDIR is empty; otherwise a line says why not
# (pkg/ldconfig.sh).
POLICY_SHOWN := $(if $(CONFIG_POLICY_PATH),$(CONFIG_POLICY_PATH),(none in this build))
install: lib man
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(OUT)/librampart.so $(DESTDIR)$(LIBDIR)/librampart.so.$(VERSION)
	ln -sf librampart.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/librampart.so
	install -m 644 $(OUT)/librampart.a $(DESTDIR)$(LIBDIR)/
	install -m 644 include/rampart.h $(DESTDIR)$(INCLUDEDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' \
		-e 's|@VERSION@|$(VERSION)|g' pkg/rampart.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/rampart.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/rampart.pc
	sed -e 's|@LIB@|$(LIBDIR)/$(SONAME)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@POLICY@|$(POLICY_SHOWN)|g' \
		pkg/rampart-run.in \
		> $(DESTDIR)$(BINDIR)/rampart-run
	chmod 755 $(DESTDIR)$(BINDIR)/rampart-run
	sed -e 's|@LIB@|$(LIBDIR)/$(SONAME)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@POLICY@|$(POLICY_SHOWN)|g' \
		$(OUT)/man/rampart.3 > $(DESTDIR)$(MANDIR)/man3/rampart.3
	sed -e 's|@LIB@|$(LIBDIR)/$(SONAME)|g' -e 's|@VERSION@|$(VERSION)|g' pkg/rampart-run.1 \
		> $(DESTDIR)$(MANDIR)/man1/rampart-run.1
	sed -e 's|@LIB@|$(LIBDIR)/$(SONAME)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@POLICY@|$(POLICY_SHOWN)|g' \
		$(OUT)/man/rampart.conf.5 > $(DESTDIR)$(MANDIR)/man5/rampart.conf.5
	chmod 644 $(DESTDIR)$(MANDIR)/man3/rampart.3 $(DESTDIR)$(MANDIR)/man1/rampart-run.1 \
		$(DESTDIR)$(MANDIR)/man5/rampart.conf.5
	@sh pkg/ldconfig.sh "$(DESTDIR)" "$(LIBDIR)" "$(SONAME)"

# The installed rampart(3) and rampart.conf(5) list the options help=1 prints (also part
# of `make test`).
.PHONY: check-man
check-man: lib man $(OUT)/demo
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(MAKE) --no-print-directory -s install DESTDIR="$$tmp" PREFIX=/usr >/dev/null && \
	sh test/packaging/man_check.sh "$$tmp/usr/share/man/man3/rampart.3" "$$tmp/usr/lib/$(SONAME)" $(OUT)/demo && \
	sh test/packaging/man_check.sh "$$tmp/usr/share/man/man5/rampart.conf.5" "$$tmp/usr/lib/$(SONAME)" $(OUT)/demo

# uninstall removes the files, then, where they are left empty, the directories below
# the usual ones that install may have made for them (pkgconfig, man1, man3, man5: on a
# fresh Debian /usr/local has lib, include, bin and share/man, but none of these),
# whoever made them: nothing tells which install made; the usual ones stay. Then
# ldconfig, as at install.
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/librampart.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/librampart.so $(DESTDIR)$(LIBDIR)/librampart.a \
		$(DESTDIR)$(INCLUDEDIR)/rampart.h $(DESTDIR)$(PKGCONFIGDIR)/rampart.pc \
		$(DESTDIR)$(BINDIR)/rampart-run $(DESTDIR)$(MANDIR)/man3/rampart.3 \
		$(DESTDIR)$(MANDIR)/man1/rampart-run.1 $(DESTDIR)$(MANDIR)/man5/rampart.conf.5
	for d in $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5; do \
		[ ! -d "$$d" ] || rmdir --ignore-fail-on-non-empty "$$d" || exit 1; done
	@sh pkg/ldconfig.sh "$(DESTDIR)" "$(LIBDIR)" "$(SONAME)"

# `make run` shows the demo; `make run CMD='python3 -c "print(42)"'` runs any command.
CMD ?= $(OUT)/demo
$(OUT)/demo: test/demo.c $(OUT)/librampart.so
	$(call say,CC,$<)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Iinclude -o $@ $<
run: $(OUT)/librampart.so $(OUT)/demo
	LD_PRELOAD=$(abspath $(OUT)/librampart.so) $(CMD)

include test/test.mk
include test/check.mk
-include bench/bench.mk

clean:
	rm -rf out
