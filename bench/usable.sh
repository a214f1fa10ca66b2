#!/bin/sh
# usable.sh — instructions per malloc_usable_size call, by callgrind (bench/usable.c).
# Usage: sh bench/usable.sh PROGRAM N name=LIBRARY ...   (name=glibc: no preload)
# For each allocator and kind: callgrind's total with N and with 2N calls; the
# difference over N is the cost of one call (start-up and set-up cancel). The redis
# row is the two questions of a malloc/usable/usable/free round: (redis - plain) / 2.
set -eu
prog=$1 n=$2
shift 2
count() { # lib kind calls -> total instructions; nothing when the program failed
	out=$(mktemp) rc=0
	if [ "$1" = none ]; then
		valgrind --tool=callgrind --callgrind-out-file=/dev/null "$prog" "$2" "$3" >/dev/null 2>"$out" || rc=$?
	else
		# valgrind keeps the client's LD_PRELOAD (adding its own)
		LD_PRELOAD="$1" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$prog" "$2" "$3" >/dev/null 2>"$out" || rc=$?
	fi
	[ "$rc" = 0 ] && sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out"
	rm -f "$out"
}
per() { # lib kind -> per-call instructions (one decimal); n/a when a run failed
	a=$(count "$1" "$2" "$n" || :) b=$(count "$1" "$2" $((2 * n)) || :)
	if [ -z "$a" ] || [ -z "$b" ]; then echo n/a; return; fi
	echo "$a $b $n" | awk '{ printf "%.1f", ($2 - $1) / $3 }'
}
printf '| allocator | small | mid | large | redis round: 2 questions, each |\n|---|---:|---:|---:|---:|\n'
for spec in "$@"; do
	name=${spec%%=*} lib=${spec#*=}
	[ "$name" = glibc ] && lib=none
	s=$(per "$lib" small) m=$(per "$lib" mid) l=$(per "$lib" large)
	r=$(per "$lib" redis) p=$(per "$lib" plain)
	q=n/a
	[ "$r" = n/a ] || [ "$p" = n/a ] || q=$(echo "$r $p" | awk '{ printf "%.1f", ($1 - $2) / 2 }')
	printf '| %s | %s | %s | %s | %s |\n' "$name" "$s" "$m" "$l" "$q"
done
