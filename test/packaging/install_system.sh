#!/bin/sh
# test/packaging/install_system.sh — `make install` into the system's library path with
# DESTDIR empty (PREFIX=/usr/local, which the loader searches on Debian) runs ldconfig:
# a program built with pkg-config's flags, with no run path, starts on rampart at once;
# `make uninstall` removes every file and the directories install made (/usr/local
# lists exactly the paths it listed before), and the loader's cache forgets the library.
#
# In a private mount namespace (unshare -m), /usr/local and /etc (where ldconfig writes
# its cache) are covered by overlays whose upper layers are on a tmpfs: the host's are
# never written. Root only: anyone else, or where unshare -m is refused, skips (77).
set -u
OUT=${OUT:-out}
CC=${CC:-cc}
HERE=$(cd "$(dirname "$0")" && pwd)

fail() {
	echo "install_system: FAIL: $*"
	exit 1
}

if [ "${1:-}" = --inside ]; then
	W=$2
	mount -t tmpfs -o mode=755 rampart-ns "$W/ns" || fail "tmpfs"
	for d in /etc /usr/local; do
		n=$(echo "$d" | tr / _)
		mkdir "$W/ns/u$n" "$W/ns/w$n" &&
			mount -t overlay "rampart$n" -o "lowerdir=$d,upperdir=$W/ns/u$n,workdir=$W/ns/w$n" "$d" ||
			fail "cannot mount an overlay over $d"
	done
	find /usr/local | LC_ALL=C sort >"$W/before"
	make --no-print-directory OUT="$OUT" CC="$CC" install PREFIX=/usr/local >"$W/install.log" 2>&1 ||
		{ cat "$W/install.log"; fail "make install"; }
	grep -q "^ldconfig: run" "$W/install.log" || { cat "$W/install.log"; fail "make install did not run ldconfig"; }
	ldconfig -p | grep -q "librampart.so.1 (.*=> /usr/local/lib/librampart.so.1$" ||
		fail "ldconfig's cache lacks /usr/local/lib/librampart.so.1"
	export PKG_CONFIG_PATH=/usr/local/lib/pkgconfig
	# shellcheck disable=SC2046
	"$CC" $(pkg-config --cflags rampart) -o "$W/uses_rampart" test/packaging/uses_rampart.c \
		$(pkg-config --libs rampart) || fail "building with pkg-config"
	readelf -d "$W/uses_rampart" | grep -q 'RUNPATH\|RPATH' && fail "the program has a run path"
	"$W/uses_rampart" || fail "a program linked with -lrampart does not start after make install"

	make --no-print-directory OUT="$OUT" CC="$CC" uninstall PREFIX=/usr/local >"$W/uninstall.log" 2>&1 ||
		{ cat "$W/uninstall.log"; fail "make uninstall"; }
	find /usr/local | LC_ALL=C sort >"$W/after"
	if ! cmp -s "$W/before" "$W/after"; then
		diff "$W/before" "$W/after"
		fail "make uninstall left /usr/local other than it was (> left behind, < removed)"
	fi
	ldconfig -p | grep -q librampart && fail "ldconfig's cache still names librampart after make uninstall"
	echo "install_system: make install ran ldconfig (a program starts without a run path); make uninstall left /usr/local as it was"
	exit 0
fi

skip() {
	echo "SKIP: $*" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (a mount namespace, overlays over /usr/local and /etc); uid is $(id -u)"
for t in unshare mount ldconfig pkg-config readelf; do
	command -v "$t" >/dev/null 2>&1 || PATH=$PATH:/sbin:/usr/sbin command -v "$t" >/dev/null 2>&1 || skip "no $t"
done
unshare -m true 2>/dev/null || skip "unshare -m refused (no CAP_SYS_ADMIN here)"
PATH=$PATH:/sbin:/usr/sbin ldconfig -v -N -X 2>/dev/null | grep -q '^/usr/local/lib:' ||
	skip "the loader does not search /usr/local/lib here"
W=$(mktemp -d /tmp/rampart-install-system.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
mkdir "$W/ns"
PATH=$PATH:/sbin:/usr/sbin unshare -m --propagation private sh "$HERE/install_system.sh" --inside "$W"
