#!/bin/sh
# test/bench_smoke.sh (`make bench-smoke`): the benchmark suite once, quick
# (`make bench QUICK=1`), as a check that it still works and that rampart runs real
# programs right. It passes only if
#  - every workload ran (none left out for a missing tool) under glibc, rampart and
#    rampart-light, and each such run succeeded, its output equal to glibc's (bench/run.py
#    compares every run's output with the first allocator's, glibc);
#  - rampart-light is the default library run with RAMPART_OPTIONS=profile=light, and the
#    report says that profile was in effect (what the library printed with verbose=1);
#  - no run of any built-in allocator failed (bench/run.py's exit status);
#  - the default build in out/ is the one it found: the quick run builds nothing over it.
# Other allocators (scudo, mimalloc, ...) run where installed; they are not required.
log=out/bench/smoke.log
mkdir -p out/bench
stamp_before=$(cat out/config.stamp 2>/dev/null)
fail=0
complain() {
	echo "bench-smoke: FAIL: $*"
	fail=1
}

make --no-print-directory bench QUICK=1 >"$log" 2>&1
st=$?
cat "$log"
[ "$st" = 0 ] || complain "make bench QUICK=1 exited $st (log: $log)"

grep 'bench: note: workload .* skipped' "$log" | sed 's/^bench: note: /missing: /' | while read -r line; do
	echo "bench-smoke: FAIL: $line"
done
grep -q 'bench: note: workload .* skipped' "$log" && fail=1

# "bench: quick run: 14 workload(s) x 7 allocator(s) x 1 round(s); allocators: glibc ..."
workloads=$(sed -n 's/^bench: quick run: \([0-9]*\) workload.*/\1/p' "$log")
[ -n "$workloads" ] || complain "no 'bench: quick run:' line in $log"
for a in glibc rampart rampart-light; do
	ok=$(grep -c "^bench: \[ *[0-9]*/[0-9]*\] [^ ]* *$a  *round .*  ok  " "$log")
	[ "$ok" = "${workloads:-?}" ] || complain "$a: $ok of ${workloads:-?} workloads ran and printed glibc's output"
done

report=out/bench/quick.md
grep -q '^  - rampart-light: `[^`]*/out/librampart.so`, `RAMPART_OPTIONS=profile=light`; in effect: profile light ' "$report" ||
	complain "$report does not say that rampart-light ran out/librampart.so with profile=light in effect"

[ "$(cat out/config.stamp 2>/dev/null)" = "$stamp_before" ] ||
	complain "out/config.stamp changed: the quick run rebuilt the default build"

if [ $fail = 0 ]; then
	echo "bench-smoke: ok: $workloads workloads under glibc, rampart and rampart-light (profile=light), every output equal to glibc's; the default build untouched"
fi
exit $fail
