#!/bin/sh
# test/fuzz/run.sh FUZZER OUTDIR SECONDS MAX_LEN — runs the libFuzzer binary for SECONDS
# under each guard backend, starting from the committed seeds (test/fuzz/corpus, read
# only) and the scratch corpus OUTDIR/corpus-BACKEND, where new inputs go. Prints one
# summary line per backend; exits 1 if a run found anything.
#
# A crash is saved by libFuzzer as OUTDIR/artifacts-BACKEND/crash-*, except when rampart
# itself aborts (its fatal path resets SIGABRT, so libFuzzer's handler never runs): the
# harness writes each input to FUZZ_LAST_INPUT first, and that file is kept here as
# crash-rampart-fatal-<sha1>. Copy it to test/fuzz/crashes/ to make it a test of
# `make test` (test/fuzz/replay.c runs that directory).
fuzzer=$1
out=$2
seconds=$3
max_len=$4
status=0
for backend in madvise mprotect; do
	corpus=$out/corpus-$backend
	artifacts=$out/artifacts-$backend
	log=$out/fuzz-$backend.log
	last=$out/last-input-$backend
	mkdir -p "$corpus" "$artifacts"
	echo "fuzz guard=$backend: ${seconds} s from test/fuzz/corpus ($(ls test/fuzz/corpus | wc -l) seeds) and $corpus ($(ls "$corpus" | wc -l) inputs); log: $log"
	RAMPART_OPTIONS=guard=$backend FUZZ_LAST_INPUT=$last "$fuzzer" -max_len="$max_len" \
		-max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
		-artifact_prefix="$artifacts/" "$corpus" test/fuzz/corpus >"$log" 2>&1
	rc=$?
	# libFuzzer's last status line: "#N DONE cov: C ft: F corp: K/Sb lim: L exec/s: E rss: R".
	done_line=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -n 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(echo "$done_line" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$done_line" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$done_line" | sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p')
	rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
	backend_used=$(sed -n 's/^fuzz_ops: guard backend \([a-z]*\).*/\1/p' "$log" | head -n 1)
	# The backend asked for must be the one in use (rampart reads RAMPART_OPTIONS at its
	# first allocation: if that came before getenv worked, both runs would be one).
	# madvise falls back to mprotect, with a warning, on kernels without guard markers.
	if [ "$rc" -eq 0 ] && [ "$backend_used" != "$backend" ]; then
		if [ "$backend" = madvise ] && grep -q '^rampart: warning' "$log"; then
			echo "fuzz guard=$backend: note: the kernel has no guard markers, the run used $backend_used"
		else
			echo "fuzz guard=$backend: FAILED: the run used the ${backend_used:-?} backend"
			status=1
			continue
		fi
	fi
	if [ "$rc" -eq 0 ]; then
		echo "fuzz guard=$backend: ok: ${execs:-?} executions (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?} inputs, peak RSS ${rss:-?} MB, backend in use ${backend_used:-?}"
		continue
	fi
	status=1
	if grep -q '^rampart: fatal' "$log" && [ -f "$last" ]; then
		sum=$(sha1sum <"$last" | cut -c1-40)
		cp "$last" "$artifacts/crash-rampart-fatal-$sum"
	fi
	echo "fuzz guard=$backend: FAILED (exit $rc) after ${execs:-?} executions; the log ends:"
	tail -n 30 "$log" | sed 's/^/    /'
	echo "fuzz guard=$backend: inputs kept:"
	ls -1 "$artifacts" | sed "s|^|    $artifacts/|"
done
exit $status
