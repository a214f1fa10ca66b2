#!/bin/sh
# placement.sh — how many places an allocator's first large blocks take relative to the
# C library (issue 36): bench/placement.c run RUNS times (default 200) under each
# allocator given as name=lib.so, printing per size the distinct offsets from printf
# and their spread (log2 of max - min). Usage, from the repository root:
#   sh bench/placement.sh rampart=out/librampart.so hardened=../shared/anchors/libhardened_malloc.so
set -eu
RUNS=${RUNS:-200}
OUT=${OUT:-out}
mkdir -p "$OUT/bench"
prog="$OUT/bench/placement"
${CC:-cc} -O1 -Wall -Wextra -o "$prog" bench/placement.c -ldl
printf '| allocator | runs | 200,000 B | 1 MiB | 64 MiB |\n|---|---|---|---|---|\n'
for spec in "$@"; do
	name=${spec%%=*}
	lib=${spec#*=}
	[ -n "$lib" ] && [ ! -e "$lib" ] && { echo "no $lib" >&2; exit 1; }
	tmp=$(mktemp)
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		if [ -n "$lib" ]; then LD_PRELOAD="$lib" "$prog"; else "$prog"; fi >>"$tmp"
		i=$((i + 1))
	done
	python3 - "$name" "$tmp" <<'PY'
import math, sys
name, path = sys.argv[1], sys.argv[2]
rows = [list(map(int, l.split())) for l in open(path) if l.strip()]
cells = []
for k in range(3):
    v = [r[k] for r in rows]
    spread = max(v) - min(v)
    cells.append("%d distinct (spread 2^%.1f)" % (len(set(v)), math.log2(spread) if spread else 0))
print("| %s | %d | %s |" % (name, len(rows), " | ".join(cells)))
PY
	rm -f "$tmp"
done
