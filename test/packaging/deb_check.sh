#!/bin/sh
# test/packaging/deb_check.sh OUTDIR PROBE — `make check-deb`: rampart shipped as a
# distribution ships it (debian/).
#
#  1. The source tree (the files git knows, as they are in the work tree) is copied
#     twice, to OUTDIR/a/rampart-V and OUTDIR/b/elsewhere/rampart-V, and
#     `dpkg-buildpackage -us -uc -b` builds the packages in each: the .deb files land
#     in OUTDIR/a and OUTDIR/b/elsewhere, never beside the source tree.
#  2. Build flags: every compile line of the library carries every flag of
#     dpkg-buildflags' CPPFLAGS and CFLAGS, the link line every flag of its LDFLAGS,
#     and both the library's own (-fvisibility=hidden, -fstack-protector-strong,
#     _FORTIFY_SOURCE, -z now); the packaged library is BIND_NOW with RELRO, and the
#     static library defines no global symbol but the interface and __rampart_* ones.
#  3. Reproducible: librampart.so (as linked, and as packaged) is byte-identical in
#     the two builds, whose directories differ in path and depth.
#  4. ABI: dpkg-gensymbols, at the level debian/rules uses (-c4), fails against the
#     built library when the symbols file lists one symbol more (a symbol removed
#     from the library) and when it lists one fewer (a symbol added).
#  5. lintian on the .changes: no error or warning (overrides: debian/*.lintian-overrides).
#  6. As root: the three packages installed with dpkg -i; no maintainer script names
#     /etc/ld.so.preload, which stays as it was; ldconfig knows librampart.so.1; a
#     program built with pkg-config (shared and static) runs on rampart; rampart-run
#     preloads the packaged path; then test/systemwide/check.sh runs the everyday
#     session with the packaged library named in /etc/ld.so.preload (inside its
#     private mount namespace); then dpkg --purge, and the file lists of /usr, /etc,
#     /opt and /var/lib/dpkg/info are the same as before the install.
# Not root, or not a Debian system (no dpkg): SKIPPED with the reason, exit 77, which
# make reports as an error: never a pass. Missing build tools: FAIL naming the packages.
set -u
OUT=$1
PROBE=$2
SRC=$(pwd)
PKGS="librampart1 librampart-dev rampart-tools"

say() { echo "check-deb: $*"; }
fail() {
	say "FAIL: $*"
	exit 1
}
skip() {
	say "SKIPPED: $*"
	exit 77
}

command -v dpkg >/dev/null 2>&1 || skip "no dpkg: not a Debian system"
[ "$(id -u)" = 0 ] || skip "needs root (dpkg -i, dpkg --purge, the system-wide session); uid is $(id -u)"
missing=""
for t in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian pkg-config:pkg-config cc:gcc; do
	command -v "${t%%:*}" >/dev/null 2>&1 || missing="$missing ${t#*:}"
done
[ -z "$missing" ] || fail "commands missing; install the Debian packages:$missing"
for p in $PKGS; do
	if dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$'; then
		fail "$p is installed on this machine; this check installs and purges it: dpkg --purge $PKGS first"
	fi
done

VERSION=$(dpkg-parsechangelog -l debian/changelog -S Version) || fail "debian/changelog unreadable"
UPSTREAM=${VERSION%-*}
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
LIBDIR=/usr/lib/$MULTIARCH
rm -rf "$OUT"
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
A=$OUT/a
B=$OUT/b/elsewhere

# --- 1. two builds ---
copy_tree() { # copy_tree DEST
	mkdir -p "$1" || exit 1
	if git rev-parse --git-dir >/dev/null 2>&1; then
		# shellcheck disable=SC2016
		git ls-files -z --cached --others --exclude-standard |
			xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
			tar --null -T - -cf - | tar -C "$1" -xf - || fail "copying the source tree"
	else
		tar --exclude=./.git --exclude='./out*' -cf - . | tar -C "$1" -xf - || fail "copying the source tree"
	fi
}
start=$(date +%s)
for d in "$A" "$B"; do
	copy_tree "$d/rampart-$UPSTREAM"
	(cd "$d/rampart-$UPSTREAM" && dpkg-buildpackage -us -uc -b) >"$d/build.log" 2>&1 || {
		tail -n 40 "$d/build.log"
		fail "dpkg-buildpackage in $d failed ($d/build.log)"
	}
done
for p in $PKGS; do
	[ -f "$A/${p}_${VERSION}_$ARCH.deb" ] || fail "no $p package in $A"
done
say "built $PKGS $VERSION twice ($A, $B) in $(($(date +%s) - start)) s"

# --- 2. build flags ---
# dpkg-buildflags as debian/rules calls it: in the build directory, with its options.
maint=$(sed -n 's/^export DEB_BUILD_MAINT_OPTIONS = //p' debian/rules)
flags() { (cd "$A/rampart-$UPSTREAM" && DEB_BUILD_MAINT_OPTIONS=$maint dpkg-buildflags --get "$1"); }
lines=$(grep -E '^(cc|gcc|[a-z0-9_-]+-gcc) .* -c src/[a-z]+/[a-z_]+\.c ' "$A/build.log")
n=$(printf '%s\n' "$lines" | grep -c .)
[ "$n" -ge 10 ] || fail "only $n compile lines of the library in the build log (V=1?)"
for f in $(flags CPPFLAGS) $(flags CFLAGS) -fvisibility=hidden -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
	-fno-plt -fPIC -Werror; do
	printf '%s\n' "$lines" | grep -vqF -- " $f " && fail "a compile line lacks $f"
done
link=$(grep -E ' -shared .*-o out/librampart\.so ' "$A/build.log") || fail "no link line in the build log"
for f in $(flags LDFLAGS) -Wl,-z,now -Wl,-z,relro; do
	printf '%s\n' "$link" | grep -qF -- " $f " || fail "the link line lacks $f"
done
X=$OUT/extract
mkdir -p "$X/a" "$X/b" || exit 1
for p in $PKGS; do dpkg-deb -x "$A/${p}_${VERSION}_$ARCH.deb" "$X/a" || exit 1; done
dpkg-deb -x "$B/librampart1_${VERSION}_$ARCH.deb" "$X/b" || exit 1
so=$LIBDIR/librampart.so.$UPSTREAM
readelf -dW "$X/a$so" | grep -q 'FLAGS.*BIND_NOW\|FLAGS_1.*NOW' || fail "$so is not BIND_NOW"
readelf -lW "$X/a$so" | grep -q GNU_RELRO || fail "$so has no RELRO segment"
iface=$(sed -n 's/^ \([^ @]*\)@Base .*/\1/p' debian/librampart1.symbols | sort)
leaked=$(nm -g --defined-only "$X/a$LIBDIR/librampart.a" | awk 'NF == 3 { print $3 }' | sort -u | grep -v '^__rampart_' |
	grep -vxF "$iface")
[ -z "$leaked" ] || fail "librampart.a defines global symbols outside the interface: $(printf '%s ' $leaked)"
nm -g --defined-only "$X/a$LIBDIR/librampart.a" | grep -q ' __rampart_' || fail "librampart.a: no renamed symbols"
say "flags: $n compile lines with dpkg-buildflags' CPPFLAGS and CFLAGS and the library's own; link with its LDFLAGS; BIND_NOW, RELRO; librampart.a exports only the interface"

# --- 3. reproducible ---
cmp "$A/rampart-$UPSTREAM/out/librampart.so" "$B/rampart-$UPSTREAM/out/librampart.so" ||
	fail "librampart.so differs between the builds in $A and $B"
cmp "$X/a$so" "$X/b$so" || fail "the packaged $so differs between the builds in $A and $B"
same=""
for p in $PKGS; do cmp -s "$A/${p}_${VERSION}_$ARCH.deb" "$B/${p}_${VERSION}_$ARCH.deb" && same="$same $p"; done
say "reproducible: librampart.so ($(sha256sum <"$X/a$so" | cut -c1-16)...) byte-identical from $A and $B; identical .deb files:${same:- none}"

# --- 4. the symbols file fails the build on a change ---
syms=debian/librampart1.symbols
gensym() { # gensym TEMPLATE: dpkg-gensymbols as dh_makeshlibs runs it, on the packaged library
	(cd "$A/rampart-$UPSTREAM" && dpkg-gensymbols -plibrampart1 -Pdebian/librampart1 -v"$VERSION" -c4 \
		-O"$OUT/symbols.out" -I"$1") >"$OUT/gensymbols.log" 2>&1
}
gensym "$SRC/$syms" || { cat "$OUT/gensymbols.log"; fail "dpkg-gensymbols fails with $syms itself"; }
sed 's/^\( rampart_version@Base .*\)$/\1\n rampart_symbol_removed@Base 1.0.0/' "$syms" >"$OUT/symbols.removed"
grep -v '^ rampart_version@Base' "$syms" >"$OUT/symbols.added"
gensym "$OUT/symbols.removed" && fail "dpkg-gensymbols -c4 accepts a symbol missing from the library"
grep -q 'disappeared' "$OUT/gensymbols.log" || fail "no 'disappeared' from dpkg-gensymbols ($OUT/gensymbols.log)"
gensym "$OUT/symbols.added" && fail "dpkg-gensymbols -c4 accepts a symbol the symbols file does not list"
grep -q 'new symbols' "$OUT/gensymbols.log" || fail "no 'new symbols' from dpkg-gensymbols ($OUT/gensymbols.log)"
say "symbols: $(echo "$iface" | wc -l) symbols; a symbol removed or added fails dpkg-gensymbols -c4"

# --- 5. lintian ---
start=$(date +%s)
lintian --fail-on error,warning --display-info "$A/rampart_${VERSION}_$ARCH.changes" >"$OUT/lintian.log" 2>&1 || {
	cat "$OUT/lintian.log"
	fail "lintian reports errors or warnings"
}
grep '^[EWIP]:' "$OUT/lintian.log"
say "lintian: no error, no warning ($(($(date +%s) - start)) s)"

# --- 6. install, use, purge ---
for p in $PKGS; do
	mkdir -p "$X/control/$p" && dpkg-deb -e "$A/${p}_${VERSION}_$ARCH.deb" "$X/control/$p" || exit 1
done
scripts=$(cd "$X/control" && ls -d ./*/preinst ./*/postinst ./*/prerm ./*/postrm ./*/config 2>/dev/null)
if [ -n "$scripts" ]; then
	# shellcheck disable=SC2086
	(cd "$X/control" && grep -l 'ld\.so\.preload' $scripts) && fail "a maintainer script names ld.so.preload"
fi
preload_state() { if [ -e /etc/ld.so.preload ]; then sha256sum /etc/ld.so.preload; else echo absent; fi; }
snapshot() { find /usr /etc /opt /var/lib/dpkg/info -xdev 2>/dev/null | LC_ALL=C sort; }
snapshot >"$OUT/files.before"
preload_before=$(preload_state)
installed=""
# shellcheck disable=SC2086
cleanup() { [ -n "$installed" ] && dpkg --purge $PKGS >/dev/null 2>&1; }
trap cleanup EXIT
installed=yes
debs=""
for p in $PKGS; do debs="$debs $A/${p}_${VERSION}_$ARCH.deb"; done
# shellcheck disable=SC2086
dpkg -i $debs >"$OUT/dpkg-install.log" 2>&1 || { cat "$OUT/dpkg-install.log"; fail "dpkg -i failed"; }
[ "$(preload_state)" = "$preload_before" ] || fail "installing changed /etc/ld.so.preload"
ldconfig -p | grep -qF "librampart.so.1 (" || fail "ldconfig does not know librampart.so.1"
[ -f /usr/share/doc/librampart1/README.Debian ] && grep -q 'rampart-run --system' /usr/share/doc/librampart1/README.Debian ||
	fail "README.Debian missing or silent on rampart-run --system"

T=$OUT/use
mkdir -p "$T"
# shellcheck disable=SC2046
cc $(pkg-config --cflags rampart) -o "$T/uses_rampart" test/packaging/uses_rampart.c $(pkg-config --libs rampart) ||
	fail "building against the packaged library with pkg-config"
# /lib may be a link to /usr/lib (merged /usr): compare the files the paths lead to.
loaded=$(ldd "$T/uses_rampart" | sed -n 's/^[[:space:]]*librampart\.so\.1 => \([^ ]*\) .*/\1/p')
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$LIBDIR/librampart.so.1")" ] ||
	fail "the program does not load $LIBDIR/librampart.so.1 (ldd: ${loaded:-nothing})"
"$T/uses_rampart" || fail "the program built with pkg-config does not run on rampart"
# shellcheck disable=SC2046
cc $(pkg-config --cflags rampart) -o "$T/uses_rampart_static" test/packaging/uses_rampart.c \
	-Wl,-Bstatic -lrampart -Wl,-Bdynamic -pthread || fail "linking the packaged librampart.a"
"$T/uses_rampart_static" || fail "the program linked with librampart.a does not run on rampart"
rampart-run -o verbose=1 sort /etc/hostname 2>&1 >/dev/null | grep -q '^rampart: version' ||
	fail "rampart-run does not preload rampart"
rampart-run --system | grep -qF "{ echo $LIBDIR/librampart.so.1; grep -vxF $LIBDIR/librampart.so.1 " ||
	fail "rampart-run --system does not name the packaged library"
# The dry run names it too, and leaves /etc/ld.so.preload alone (checked below).
rampart-run --enable | grep -qF "$LIBDIR/librampart.so.1" || fail "rampart-run --enable does not name the packaged library"
say "installed: $PKGS; pkg-config builds (shared and static) and rampart-run run on $LIBDIR/librampart.so.1"

start=$(date +%s)
sh test/systemwide/check.sh "$LIBDIR/librampart.so.1" "$PROBE" "$OUT/systemwide" installed ||
	fail "the system-wide session with the packaged library"
say "system-wide session with $LIBDIR/librampart.so.1 in /etc/ld.so.preload: $(($(date +%s) - start)) s"

# shellcheck disable=SC2086
dpkg --purge $PKGS >"$OUT/dpkg-purge.log" 2>&1 || { cat "$OUT/dpkg-purge.log"; fail "dpkg --purge failed"; }
installed=""
for p in $PKGS; do
	dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep -qv '^not-installed$' && fail "$p still known to dpkg"
done
[ "$(preload_state)" = "$preload_before" ] || fail "/etc/ld.so.preload changed"
snapshot >"$OUT/files.after"
if ! diff "$OUT/files.before" "$OUT/files.after" >"$OUT/files.diff"; then
	head -n 40 "$OUT/files.diff"
	fail "the file lists of /usr, /etc, /opt, /var/lib/dpkg/info differ before the install and after the purge ($OUT/files.diff)"
fi
ldconfig -p | grep -qF "librampart.so.1 (" && fail "ldconfig still lists librampart.so.1 after the purge"
say "purged: /usr, /etc, /opt and /var/lib/dpkg/info hold the same $(wc -l <"$OUT/files.after") paths as before; /etc/ld.so.preload untouched"
say "passed"
