# test/results.sh — counting for the test runners (test/run.sh, test/run-bins.sh), which
# source it: one line per run, then the summary line
#   LABEL: P passed, F failed, S skipped (PROGRAM: why; PROGRAM: why)
# Counts are runs (a program runs once per guard backend); each skipped program's reason
# is listed once. A run skips when the program exits 77; its reason is the text after
# the last "SKIP: " in its output (test_skip in harness.h prints it), else its last line.
passed=0
failed=0
skipped=0
failed_runs=""
skip_reasons=""
nl='
'

# skip_reason LOG: why the program in LOG skipped, on one line.
skip_reason() {
	why=$(grep 'SKIP: ' "$1" | tail -n 1 | sed 's/.*SKIP: //')
	[ -n "$why" ] || why=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1)
	[ -n "$why" ] || why="exited 77 without saying why"
	printf '%s\n' "$why" | tr -d '\r'
}

# note_skip PROGRAM WHY: counts one skipped run.
note_skip() {
	skipped=$((skipped + 1))
	case "$nl$skip_reasons$nl" in
	*"$nl$1: $2$nl"*) ;;
	*) skip_reasons="$skip_reasons${skip_reasons:+$nl}$1: $2" ;;
	esac
}

# result PROGRESS PROGRAM RUN-NAME STATUS LOG [TIME]: prints the run's line and counts it.
result() {
	case $4 in
	0)
		passed=$((passed + 1))
		echo "$1ok    $3${6:+ ($6)}"
		;;
	77)
		why=$(skip_reason "$5")
		note_skip "$2" "$why"
		echo "$1skip  $3${6:+ ($6)}: $why"
		;;
	*)
		failed=$((failed + 1))
		failed_runs="$failed_runs${failed_runs:+$nl}    $3"
		echo "$1FAIL  $3 (${6:+$6; }status $4; log: $5)"
		tail -n 20 "$5" | sed 's/^/      /'
		;;
	esac
}

# summary LABEL: the failed runs, then the summary line; the status: 0 when none failed.
summary() {
	[ -z "$failed_runs" ] || printf 'failed:\n%s\n' "$failed_runs"
	reasons=$(printf '%s' "$skip_reasons" | awk 'NR > 1 { printf "; " } { printf "%s", $0 }')
	echo "$1: $passed passed, $failed failed, $skipped skipped${reasons:+ ($reasons)}"
	[ "$failed" -eq 0 ]
}
