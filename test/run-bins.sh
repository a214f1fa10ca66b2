#!/bin/sh
# test/run-bins.sh NAME DIR [WRAPPER...] — runs every program in DIR under both guard
# backends (through WRAPPER, e.g. an emulator, when given), like test/run.sh does for
# `make test`, and ends with "NAME: N passed, M failed". Logs go to DIR/../logs-NAME/.
# EXTRA_ENV (optional) is passed to every program through env(1).
name=$1
dir=$2
shift 2
logs=$dir/../logs-$name
mkdir -p "$logs"
pass=0
fail=0
skipped=0
for backend in madvise mprotect; do
	for bin in "$dir"/*; do
		[ -x "$bin" ] || continue
		b=${bin##*/}
		log=$logs/$b.$backend.log
		timeout -k 10 "${TEST_TIMEOUT:-600}" env RAMPART_OPTIONS=guard=$backend $EXTRA_ENV \
			"$@" "$bin" >"$log" 2>&1
		st=$?
		if [ $st = 0 ]; then
			pass=$((pass + 1))
			echo "ok    $name: $b guard=$backend"
		elif [ $st = 77 ]; then # the program says why it cannot run here
			skipped=$((skipped + 1))
			echo "skip  $name: $b guard=$backend: $(grep SKIPPED "$log" | tail -n 1)"
		else
			fail=$((fail + 1))
			echo "FAIL  $name: $b guard=$backend (log: $log)"
			tail -n 20 "$log" | sed 's/^/      /'
		fi
	done
done
if [ $skipped -gt 0 ]; then echo "$name: $pass passed, $fail failed, $skipped skipped"; else echo "$name: $pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
