#!/bin/sh
# Runs every program test/tests.list names, as its RUNS column says (most once under each
# guard backend), and ends with one line (test/results.sh):
#   tests: P passed, F failed, S skipped (PROGRAM: why; ...)
# A program that exits 77 cannot run here and is counted as skipped, with the reason it
# printed. A listed program that was not built fails.
# TESTS='system/slot_reuse death/*' (also `make test TESTS=...`) runs only the programs
# that match one of its patterns. TEST_OPTIONS='profile=light' runs every program with
# those options before the backend in RAMPART_OPTIONS (check-configs' run-time sets).
OUT=${OUT:-out}
T=$OUT/test
. test/results.sh

list=$(awk -v what=run -f test/list.awk test/tests.list) || exit 1
if [ -n "$TESTS" ]; then
	list=$(set -f; printf '%s\n' "$list" | while read -r prog rest; do
		for pattern in $TESTS; do
			case $prog in $pattern) echo "$prog $rest"; break ;; esac
		done
	done)
	[ -n "$list" ] || { echo "no program in test/tests.list matches TESTS='$TESTS'"; exit 1; }
fi

# Tenths of a second since the epoch (GNU date).
now() { t=$(date +%s%N); echo $((t / 100000000)); }

# How many runs there will be, for the [n/N] count.
total=0
while read -r prog runs src; do
	case $runs in both | light) total=$((total + 2)) ;; preload | sh) total=$((total + 1)) ;; esac
done <<EOF
$list
EOF
width=${#total}
n=0

run() { # program, run name, command...
	prog=$1
	name=$2
	shift 2
	log=$T/logs/$(echo "$name" | tr '/ =' '___').log
	mkdir -p "$T/logs"
	n=$((n + 1))
	start=$(now)
	rc=0
	"$@" >"$log" 2>&1 </dev/null || rc=$?
	took=$(($(now) - start))
	result "$(printf '[%*d/%d] ' "$width" "$n" "$total")" "$prog" "$name" "$rc" "$log" \
		"$(printf '%d.%d s' $((took / 10)) $((took % 10)))"
}

while read -r prog runs src; do
	case $runs in
	both | light)
		profile=${TEST_OPTIONS:+$TEST_OPTIONS,}
		[ "$runs" = light ] && profile=profile=light,$profile
		for backend in madvise mprotect; do
			# A hung program fails (timeout exits 124, or 137 after the kill) instead of
			# blocking the suite; every program is meant to finish well within a minute.
			if [ -x "$T/$prog" ]; then
				run "$prog" "$prog $profile""guard=$backend" timeout -k 10 "${TEST_TIMEOUT:-300}" \
					env RAMPART_OPTIONS=$profile"guard=$backend" CK_VERBOSITY=normal "$T/$prog"
			else
				run "$prog" "$prog guard=$backend" sh -c "echo '$T/$prog was not built (make test-build)'; exit 1"
			fi
		done
		;;
	preload)
		run "$prog" "$prog (make run)" env LD_PRELOAD="$(pwd)/$OUT/librampart.so" "$OUT/$prog"
		;;
	sh)
		run "$prog" "$prog ($src)" env OUT="$OUT" sh "$src"
		;;
	esac
done <<EOF
$list
EOF

summary tests
