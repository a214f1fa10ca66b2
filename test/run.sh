#!/bin/sh
# Runs every built test program under both guard backends, then the quick benchmark,
# and ends with one line: "tests: N passed, M failed".
OUT=${OUT:-out}
T=$OUT/test
pass=0
fail=0
failed=""

run() { # name, command...
	name=$1
	shift
	log=$OUT/test/logs/$(echo "$name" | tr '/ =' '___').log
	mkdir -p "$OUT/test/logs"
	if "$@" >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "ok    $name"
	else
		fail=$((fail + 1))
		failed="$failed $name"
		echo "FAIL  $name (log: $log)"
		tail -n 20 "$log" | sed 's/^/      /'
	fi
}

for backend in madvise mprotect; do
	for bin in "$T"/unit/* "$T"/fault/* "$T"/death/* "$T"/system/* "$T"/light/*; do
		[ -x "$bin" ] || continue
		# A hung program fails (timeout exits 124, or 137 after the kill) instead of
		# blocking the suite; every program is meant to finish well within a minute.
		run "${bin#$T/} guard=$backend" timeout -k 10 "${TEST_TIMEOUT:-300}" \
			env RAMPART_OPTIONS=guard=$backend CK_VERBOSITY=normal "$bin"
	done
done
run "demo (make run)" env LD_PRELOAD="$(pwd)/$OUT/librampart.so" "$OUT/demo"

if [ -f bench/bench.mk ] && [ -z "$SKIP_BENCH" ]; then
	run "bench QUICK=1" make --no-print-directory bench QUICK=1
	# The quick bench builds the light variant too: it must land in $OUT/light, never
	# over the default build that the user runs next.
	run "default build intact after the bench" grep -q -- "-DCONFIG_SLOT_QUARANTINE=1 " "$OUT/config.stamp"
fi

echo "tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
