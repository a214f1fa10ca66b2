#!/bin/sh
# bugclasses.sh PROGRAM NAME=LIBRARY[?OPTIONS]... — run bench/bugclasses.c's scenarios with
# no preload (glibc) and with each LIBRARY preloaded, with RAMPART_OPTIONS=OPTIONS (empty
# when none is given: nothing is inherited), and print one Markdown table: a row a
# scenario, a column an allocator. Used by `make bug-classes`, whose rampart-light is
# the rampart library with ?profile=light.
set -eu
prog=$1; shift
tmp=${TMPDIR:-/tmp}/bugclasses.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
names=glibc
"$prog" > "$tmp/glibc"
for pair in "$@"; do
	name=${pair%%=*}; lib=${pair#*=}; opts=
	case $lib in *\?*) opts=${lib#*\?} lib=${lib%%\?*} ;; esac
	if [ ! -e "$lib" ]; then echo "bugclasses: $lib: no such library ($name left out)" >&2; continue; fi
	names="$names $name"
	RAMPART_OPTIONS=$opts LD_PRELOAD=$lib "$prog" > "$tmp/$name"
done
printf '| scenario |'; for n in $names; do printf ' %s |' "$n"; done; echo
printf '|---|'; for n in $names; do printf -- '---|'; done; echo
cut -f1 "$tmp/glibc" | while IFS= read -r scenario; do
	printf '| %s |' "$scenario"
	for n in $names; do
		printf ' %s |' "$(awk -F'\t' -v s="$scenario" '$1 == s { print $2 }' "$tmp/$n")"
	done
	echo
done
