#!/bin/sh
# man_check.sh MANPAGE LIBRARY PROGRAM: the option list of an installed rampart(3) or
# rampart.conf(5) (generated from the option table at build time) says, entry for entry, what the
# library's help=1 prints for the same build: the same keys, values, doc strings and
# defaults, in the same order. PROGRAM is any program that allocates.
set -eu
man=$1 lib=$2 prog=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ".TP", "\fBkey\fP=\fIvalues\fP", "doc (default ...)" -> "  key=values  doc (default ...)"
awk '/^\.SH OPTIONS/ { on = 1; next } /^\.SH/ { on = 0 }
	on && /^\.TP$/ { getline head; getline doc
		gsub(/\\f[BIP]/, "", head); print "  " head "  " doc }' "$man" > "$tmp/man"
RAMPART_OPTIONS=help=1 LD_PRELOAD="$lib" "$prog" 2>&1 >/dev/null | grep '^  [a-z_]*=' > "$tmp/help" || true
if [ ! -s "$tmp/man" ] || [ ! -s "$tmp/help" ]; then
	echo "man_check: no option list (man page: $(wc -l < "$tmp/man") entries, help=1: $(wc -l < "$tmp/help") lines)"
	exit 1
fi
if ! cmp -s "$tmp/man" "$tmp/help"; then
	echo "man_check: $man lists other options than help=1 prints (- man page, + help=1):"
	diff -u "$tmp/man" "$tmp/help" | sed 1,2d
	exit 1
fi
echo "man_check: the man page lists the $(wc -l < "$tmp/man") options help=1 prints"
