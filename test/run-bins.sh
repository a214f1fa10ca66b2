#!/bin/sh
# test/run-bins.sh NAME DIR [WRAPPER...] — runs every program in DIR under both guard
# backends (through WRAPPER, e.g. an emulator, when given), as test/run.sh does for
# `make test`, and ends with "NAME: P passed, F failed, S skipped (PROGRAM: why; ...)"
# (test/results.sh). Logs go to DIR/../logs-NAME/.
# EXTRA_ENV (optional) is passed to every program through env(1).
# SKIP_ARCH=arm64: the programs test/tests.list says cannot run there are not run; each
# counts as skipped (once per backend) with the list's reason; those it marks
# "arm64-mte:" run with memory tagging off (mte=off), with a note line saying why.
# MTE_OFF_BACKEND=mprotect: that backend's pass runs every program with mte=off.
name=$1
dir=$2
shift 2
logs=$dir/../logs-$name
mkdir -p "$logs"
. test/results.sh

skips=""
mteoff=""
if [ -n "$SKIP_ARCH" ]; then
	skips=$(awk -v what=skips -v arch="$SKIP_ARCH" -f test/list.awk test/tests.list) || exit 1
	[ "$SKIP_ARCH" = arm64 ] && { mteoff=$(awk -v what=mteoff -f test/list.awk test/tests.list) || exit 1; }
fi
tab=$(printf '\t')

for backend in madvise mprotect; do
	for bin in "$dir"/*; do
		[ -x "$bin" ] || continue
		b=${bin##*/}
		why=$(printf '%s\n' "$skips" | sed -n "s/^$b$tab//p")
		if [ -n "$why" ]; then
			note_skip "$b" "not run under $SKIP_ARCH: $why"
			echo "skip  $name: $b guard=$backend: not run under $SKIP_ARCH: $why"
			continue
		fi
		log=$logs/$b.$backend.log
		opts=guard=$backend
		mtewhy=$(printf '%s\n' "$mteoff" | sed -n "s/^$b$tab//p")
		[ "$backend" = "$MTE_OFF_BACKEND" ] && opts=$opts,mte=off
		if [ -n "$mtewhy" ] && [ "$backend" != "$MTE_OFF_BACKEND" ]; then
			opts=$opts,mte=off
			echo "note  $name: $b guard=$backend: memory tagging off: $mtewhy"
		fi
		st=0
		timeout -k 10 "${TEST_TIMEOUT:-600}" env RAMPART_OPTIONS=$opts $EXTRA_ENV \
			"$@" "$bin" >"$log" 2>&1 </dev/null || st=$?
		result "" "$b" "$name: $b guard=$backend" "$st" "$log"
	done
done
summary "$name"
