#!/bin/sh
# make install into a scratch DESTDIR with PREFIX=/usr, then: the files and symlinks are
# there, pkg-config finds rampart (sysroot pointing there), a program built with its
# flags runs with rampart, rampart-run preloads it, and make uninstall removes it all.
set -eu
OUT=${OUT:-out}
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make --no-print-directory OUT="$OUT" CC="$CC" install DESTDIR="$tmp" PREFIX=/usr >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; exit 1; }
lib=$tmp/usr/lib
grep -q "^ldconfig: not run (DESTDIR is set)" "$tmp/install.log" || { cat "$tmp/install.log"; echo "no word on ldconfig"; exit 1; }
for f in "$lib"/librampart.so.1 "$lib"/librampart.so "$lib"/librampart.a "$tmp"/usr/include/rampart.h \
	"$lib"/pkgconfig/rampart.pc "$tmp"/usr/bin/rampart-run "$tmp"/usr/share/man/man3/rampart.3 \
	"$tmp"/usr/share/man/man1/rampart-run.1 "$tmp"/usr/share/man/man5/rampart.conf.5; do
	[ -e "$f" ] || { echo "missing: $f"; exit 1; }
done
[ "$(readlink "$lib/librampart.so")" = librampart.so.1 ] || { echo "librampart.so link"; exit 1; }
readlink "$lib/librampart.so.1" | grep -q '^librampart\.so\.1\.[0-9]*\.[0-9]*$' || { echo "SONAME link"; exit 1; }
readelf -d "$lib/librampart.so.1" | grep -q 'Library soname: \[librampart.so.1\]' || { echo "SONAME"; exit 1; }

export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$tmp" PKG_CONFIG_LIBDIR="$lib/pkgconfig"
libs=$(echo $(pkg-config --libs rampart))
cflags=$(echo $(pkg-config --cflags rampart))
echo "pkg-config: --cflags '$cflags' --libs '$libs' --modversion $(pkg-config --modversion rampart)"
[ "$libs" = "-L$lib -lrampart" ] || { echo "unexpected --libs"; exit 1; }
[ "$(pkg-config --modversion rampart)" = "$(sed -n 's/^#define RAMPART_VERSION "\(.*\)"/\1/p' include/rampart.h)" ] ||
	{ echo "modversion"; exit 1; }

# shellcheck disable=SC2086
"$CC" $cflags -o "$tmp/uses_rampart" test/packaging/uses_rampart.c $libs -Wl,-rpath,"$lib"
readelf -d "$tmp/uses_rampart" | grep -q 'NEEDED.*\[librampart.so.1\]' || { echo "not linked to librampart.so.1"; exit 1; }
"$tmp/uses_rampart"

# rampart-run preloads the library into a program that does not link it (the installed
# path does not exist outside DESTDIR: RAMPART_LIB names it).
"$CC" -o "$tmp/plain" -x c - <<'C'
#include <stdlib.h>
int main(void) { free(malloc(100)); return 0; }
C
report=$(RAMPART_LIB="$lib/librampart.so.1" "$tmp/usr/bin/rampart-run" -o verbose=1 --stats -- "$tmp/plain" x 2>&1)
echo "$report" | grep -q "rampart: version .*; guard backend" || { echo "rampart-run: no verbose line: $report"; exit 1; }
echo "$report" | grep -q "statistics (pid" || { echo "rampart-run: no report: $report"; exit 1; }
system=$("$tmp/usr/bin/rampart-run" --system)
for want in ld.so.preload "/etc/rampart.conf (rampart.conf(5))" "* passthrough" init=/bin/busybox \
	"rampart-run --enable --yes" "rampart-run --disable --yes" "grep -vxF /usr/lib/librampart.so.1 "; do
	echo "$system" | grep -qF -- "$want" || { echo "--system lacks '$want'"; exit 1; }
done
sh test/packaging/man_check.sh "$tmp"/usr/share/man/man3/rampart.3 "$lib/librampart.so.1" "$tmp/plain"
# The page the library's own package ships lists them too.
sh test/packaging/man_check.sh "$tmp"/usr/share/man/man5/rampart.conf.5 "$lib/librampart.so.1" "$tmp/plain"
grep -q '^\.I /etc/rampart.conf$' "$tmp"/usr/share/man/man5/rampart.conf.5 || { echo "rampart.conf(5): path"; exit 1; }
"$tmp/usr/bin/rampart-run" --version | grep -q "rampart-run [0-9]" || { echo "--version"; exit 1; }
if RAMPART_LIB=/nonexistent "$tmp/usr/bin/rampart-run" true 2>/dev/null; then echo "missing library accepted"; exit 1; fi
# A missing program, a missing value: named in one line, with the shell's exit statuses
# (the shell's own message carried its line number in the script).
expect() { # status, stderr wanted, arguments...
	want_st=$1 want=$2
	shift 2
	st=0
	got=$("$tmp/usr/bin/rampart-run" "$@" 2>&1 >/dev/null) || st=$?
	[ "$st" = "$want_st" ] && [ "$got" = "$want" ] ||
		{ echo "rampart-run $*: status $st, '$got'; wanted $want_st, '$want'"; exit 1; }
}
export RAMPART_LIB="$lib/librampart.so.1"
expect 127 "rampart-run: no-such-program-x: command not found (not in PATH)" no-such-program-x
expect 127 "rampart-run: ./no/such/file: no such file" ./no/such/file
expect 126 "rampart-run: $tmp: not an executable file" "$tmp"
expect 2 "rampart-run: -o needs a value, as in -o key=value (RAMPART_OPTIONS=help=1 lists the keys)" -o
expect 0 "" -- true
[ "$("$tmp/usr/bin/rampart-run" echo hi)" = hi ] || { echo "rampart-run echo (a shell builtin too) did not run"; exit 1; }
unset RAMPART_LIB

make --no-print-directory OUT="$OUT" CC="$CC" uninstall DESTDIR="$tmp" PREFIX=/usr >/dev/null
left=$(find "$tmp/usr" -type f -o -type l)
[ -z "$left" ] || { echo "left after uninstall: $left"; exit 1; }
echo "install, pkg-config, rampart-run and uninstall: ok"
