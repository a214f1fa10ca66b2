#!/bin/sh
# partition_cost.sh — instructions per operation of a few workloads under each set of
# rampart options, by callgrind: what call-site partitions cost (issue 49), side by side
# with partitions=1 in one run. Instruction counts, not times: the machine is shared.
# Usage: sh bench/partition_cost.sh LIBRARY OPTIONS...   (each OPTIONS a RAMPART_OPTIONS
#        value, e.g. partitions=1 partitions=16 profile=light,partitions=1 profile=light)
# Needs out/bench/ (make bench-build). For each workload and options: callgrind's total
# with N and with 2N operations; the difference over N is the cost of one operation
# (start-up and set-up cancel). Every process draws its own secret, so which of a
# workload's call sites share a partition changes from run to run (tree's two sites
# share one in 1 run in 16 under strong, 1 in 4 under light): each figure is the
# median of REPEAT such differences (5; the environment variable sets it). An operation: churn, one free and one malloc; list, a
# node appended, walked and freed in each of 2 rounds; tree, a key's node and name made,
# renamed or not, and torn down, over 2 rounds; larson, one block swapped in (4 threads).
set -eu
lib=$1
shift
B=out/bench
count() { # options program args... -> total instructions; nothing when it failed
	opts=$1
	shift
	out=$(mktemp) rc=0
	# valgrind keeps the client's LD_PRELOAD (adding its own)
	RAMPART_OPTIONS=$opts LD_PRELOAD=$lib valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$@" >/dev/null 2>"$out" || rc=$?
	[ "$rc" = 0 ] && sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out"
	rm -f "$out"
}
once() { # options n command-with-N... -> instructions per operation, one difference
	opts=$1 n=$2
	shift 2
	a=$(count "$opts" $(echo "$@" | sed "s/\bN\b/$n/") || :)
	b=$(count "$opts" $(echo "$@" | sed "s/\bN\b/$((2 * n))/") || :)
	if [ -z "$a" ] || [ -z "$b" ]; then echo n/a; return; fi
	echo "$a $b $n" | awk '{ printf "%.1f\n", ($2 - $1) / $3 }'
}
per() { # options n command-with-N... -> the median of REPEAT differences
	r=0
	while [ $r -lt "${REPEAT:-5}" ]; do once "$@"; r=$((r + 1)); done | sort -n |
		awk '{ v[NR] = $1 } END { if (NR == 0 || v[1] == "n/a") print "n/a"; else print v[int((NR + 1) / 2)] }'
}
printf '| options | churn (8 B - 1 KiB) | list | tree | larson (4 threads) |\n|---|---:|---:|---:|---:|\n'
for opts in "$@"; do
	c=$(per "$opts" 200000 "$B/churn N 10000 8 1024")
	l=$(per "$opts" 50000 "$B/list N 2")
	t=$(per "$opts" 20000 "$B/tree N 2")
	r=$(per "$opts" 20000 "$B/larson N 1000 16 1024 4")
	printf '| %s | %s | %s | %s | %s |\n' "$opts" "$c" "$l" "$t" "$r"
done
