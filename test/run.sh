#!/bin/sh
# Runs every built test program under both guard backends, then the quick benchmark,
# and ends with one line: "tests: N passed, M failed" (", K skipped" when a program
# exited with 77, the Automake convention for a test that cannot run here and says why).
OUT=${OUT:-out}
T=$OUT/test
pass=0
fail=0
skip=0
failed=""
n=0
bench=0
[ -f bench/bench.mk ] && [ -z "$SKIP_BENCH" ] && bench=1

# Tenths of a second since the epoch (GNU date).
now() { t=$(date +%s%N); echo $((t / 100000000)); }

# How many runs there will be, for the [n/N] count.
total=$((2 + 2 * bench))
for bin in "$T"/unit/* "$T"/fault/* "$T"/death/* "$T"/system/* "$T"/light/*; do
	[ -x "$bin" ] && total=$((total + 2))
done
width=${#total}

run() { # name, command...
	name=$1
	shift
	log=$OUT/test/logs/$(echo "$name" | tr '/ =' '___').log
	mkdir -p "$OUT/test/logs"
	n=$((n + 1))
	start=$(now)
	rc=0
	"$@" >"$log" 2>&1 || rc=$?
	case $rc in 0) status=ok ;; 77) status=skip ;; *) status=FAIL ;; esac
	took=$(($(now) - start))
	progress=$(printf '[%*d/%d]' "$width" "$n" "$total")
	time=$(printf '%d.%d s' $((took / 10)) $((took % 10)))
	if [ $status = ok ]; then
		pass=$((pass + 1))
		echo "$progress ok    $name ($time)"
	elif [ $status = skip ]; then
		skip=$((skip + 1))
		echo "$progress skip  $name ($time): $(tail -n 1 "$log")"
	else
		fail=$((fail + 1))
		failed="$failed $name"
		echo "$progress FAIL  $name ($time; log: $log)"
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
run "make install DESTDIR=... PREFIX=/usr: pkg-config, a program built with it, rampart-run, uninstall" \
	env OUT="$OUT" sh test/packaging/install_check.sh
run "config.mk: a wrong value is a build error naming the option" sh test/packaging/config_check.sh

if [ $bench = 1 ]; then
	run "bench QUICK=1" make --no-print-directory bench QUICK=1
	# The quick bench builds the light variant too: it must land in $OUT/light, never
	# over the default build that the user runs next.
	run "default build intact after the bench" grep -q -- "-DCONFIG_SLOT_QUARANTINE=1 " "$OUT/config.stamp"
fi

if [ "$skip" -gt 0 ]; then
	echo "tests: $pass passed, $fail failed, $skip skipped"
else
	echo "tests: $pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
