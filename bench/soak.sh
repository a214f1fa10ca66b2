#!/bin/sh
# bench/soak.sh — what a long-running server keeps resident after churn (issue 52).
#
# Debian's redis-server, preloaded with each allocator in turn (redis links jemalloc;
# "glibc" is rampart with passthrough=1, which hands every call to glibc's malloc;
# "rampart-light" is the library of the "rampart" row, when there is one, with
# profile=light: one library serves both profiles), on a loopback port of its own. Its values over one keyspace of 200,000 keys are overwritten
# six times, the size changing between rounds (100, 2,000, 300, 8,000, 50, 1,200 bytes;
# 300,000 SETs a round from 20 clients, redis-benchmark -r). Then INFO memory's
# used_memory (the live data redis counts) and /proc/PID/status (VmRSS, VmHWM) are read,
# and the server is shut down. One Markdown table on stdout: RSS at the end over the live
# data is what the allocator keeps beyond what the program holds.
#
#   sh bench/soak.sh NAME=LIB[?OPTIONS] ...   (LIB "-": no preload, redis's own jemalloc;
#                                              OPTIONS: RAMPART_OPTIONS for that run, as in
#                                              bench/run.py; LIB@OPTIONS is still taken)
#
# make bench-soak passes rampart-light BENCH_LIGHT (bench.mk); the row runs the rampart
# row's library (without that row's options) with its own options, so that the two rows
# differ by the profile alone.
#
# Needs redis-server and redis-tools (Debian); where either is missing it says so and
# exits 77. SOAK_SETS changes the SETs per round (a quick check: SOAK_SETS=20000).
set -eu
command -v redis-server >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1 &&
	command -v redis-cli >/dev/null 2>&1 || {
	echo "soak: SKIP: redis-server and redis-tools are not installed (apt-get install redis-server redis-tools)" >&2
	exit 77
}
SETS=${SOAK_SETS:-300000}
SIZES="100 2000 300 8000 50 1200"
PORT=$((20000 + $$ % 20000))
DIR=$(mktemp -d)
trap 'redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT

kib_of() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$2/status"; }

# The rampart row's library, for the light row.
RAMPART_LIB=
for spec in "$@"; do
	case $spec in rampart=*) RAMPART_LIB=${spec#rampart=} RAMPART_LIB=${RAMPART_LIB%%\?*} RAMPART_LIB=${RAMPART_LIB%%@*} ;; esac
done

echo "| allocator | live data (used_memory) | RSS at the end | RSS ÷ live | peak RSS (VmHWM) | time |"
echo "|---|---:|---:|---:|---:|---:|"
for spec in "$@"; do
	name=${spec%%=*}
	lib=${spec#*=}
	opts=
	case $lib in
	*\?*) opts=${lib#*\?} lib=${lib%%\?*} ;;
	*@*) opts=${lib#*@} lib=${lib%%@*} ;;
	esac
	case $name in
	glibc) opts=passthrough=1 ;;
	rampart-light)
		opts=profile=light${opts:+,$opts}
		[ -z "$RAMPART_LIB" ] || lib=$RAMPART_LIB
		;;
	esac
	# ld.so only warns about a preload it cannot find, and redis would run on its jemalloc.
	[ "$lib" = - ] || [ -f "$lib" ] || { echo "soak: $name: no library at $lib" >&2; exit 1; }
	start=$(date +%s.%N)
	if [ "$lib" = - ]; then
		redis-server --port $PORT --save '' --appendonly no --dir "$DIR" >"$DIR/log" 2>&1 &
	else
		RAMPART_OPTIONS=$opts LD_PRELOAD=$lib redis-server --port $PORT --save '' --appendonly no --dir "$DIR" \
			>"$DIR/log" 2>&1 &
	fi
	pid=$!
	i=0
	until redis-cli -p $PORT ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "soak: $name: the server did not start:" >&2; cat "$DIR/log" >&2; exit 1; }
		sleep 0.1
	done
	for size in $SIZES; do
		redis-benchmark -p $PORT -t set -n "$SETS" -r 200000 -d "$size" -c 20 -q >/dev/null
	done
	used=$(redis-cli -p $PORT info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }')
	rss=$(kib_of VmRSS $pid)
	hwm=$(kib_of VmHWM $pid)
	end=$(date +%s.%N)
	redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true
	wait $pid 2>/dev/null || true
	awk -v n="$name" -v u="$used" -v r="$rss" -v h="$hwm" -v s="$start" -v e="$end" 'BEGIN {
		printf "| %s | %.0f MB | %.0f MB | %.2f | %.0f MB | %.1f s |\n", n, u / 1e6, r * 1024 / 1e6, r * 1024 / u, h * 1024 / 1e6, e - s }'
done
