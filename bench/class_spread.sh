#!/bin/sh
# class_spread.sh PROGRAM RUNS [LIBRARY] — run bench/class_spread.c's PROGRAM RUNS times
# (with LIBRARY preloaded, if given) and print, for pairs of sizes, log2 of the span
# (max - min) of malloc(a) - malloc(b) over the runs, and how many distinct values it took.
# 0 distinct spreads mean a fixed layout; 2^k means a leaked block of one size narrows
# the other's address to about 2^k bytes.
set -eu
prog=$1 runs=$2 lib=${3:-}
i=0
while [ "$i" -lt "$runs" ]; do
	if [ -n "$lib" ]; then LD_PRELOAD=$lib "$prog"; else "$prog"; fi
	i=$((i + 1))
done | awk -v pairs="1000:32 64:32 128:16 4096:32 1000:128 20000:32 100000:32 100000:1000" '
{
	for (f = 1; f <= NF; f++) { split($f, kv, "="); a[NR, kv[1]] = kv[2] }
}
END {
	np = split(pairs, p, " ")
	for (j = 1; j <= np; j++) {
		split(p[j], s, ":")
		min = ""; max = ""; delete seen; distinct = 0
		for (r = 1; r <= NR; r++) {
			d = a[r, s[1]] - a[r, s[2]]
			if (min == "" || d < min) min = d
			if (max == "" || d > max) max = d
			if (!(d in seen)) { seen[d] = 1; distinct++ }
		}
		span = max - min
		printf "malloc(%s) - malloc(%s): span 2^%.1f, %d distinct of %d runs\n", s[1], s[2], (span > 0 ? log(span) / log(2) : 0), distinct, NR
	}
}'
