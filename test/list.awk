# test/list.awk — the one reader of test/tests.list (its format is described there).
#   awk -v what=WHAT -f test/list.awk test/tests.list
# WHAT:
#   programs  PROGRAM of every line whose RUNS is one of runs_wanted (-v runs_wanted="both light";
#             unset: every line)
#   sources   SOURCE of every line
#   static    SOURCE of every line with the fact static
#   run       "PROGRAM RUNS SOURCE" of every line, in order
#   skips     "NAME<TAB>WHY" for every static program that check-`arch` leaves out
#             (-v arch=arm64), NAME being PROGRAM's last part, as the static build names it
#   mteoff    "NAME<TAB>WHY" for every static program that check-arm64 runs with memory
#             tagging off (RAMPART_OPTIONS=mte=off; "arm64-mte: WHY")
#   check     nothing; exits 1 after naming every malformed line
# Whatever WHAT, a malformed line makes the exit status 1, and is named on stderr
# unless -v quiet=1 (make's lists: test-list-check names them once).
BEGIN {
	bad = 0
	known_runs["both"] = 1
	known_runs["light"] = 1
	known_runs["preload"] = 1
	known_runs["sh"] = 1
	known_fact["static"] = 1
	known_fact["reexec"] = 1
	reexec_why["arm64"] = "re-executes /proc/self/exe, which qemu-user without binfmt_misc cannot run"
}

function complain(msg) {
	if (!quiet) printf "test/tests.list:%d: %s\n", FNR, msg > "/dev/stderr"
	bad = 1
}

/^[ \t]*(#|$)/ { next }

{
	prog = $1; src = $2; runs = $3
	if (NF < 3) { complain("wants PROGRAM SOURCE RUNS"); next }
	if (!(runs in known_runs)) { complain("RUNS is " runs ", not both, light, preload or sh") ; next }
	if (prog in seen) { complain(prog " is listed twice (first on line " seen[prog] ")"); next }
	seen[prog] = FNR
	delete fact
	delete why
	for (i = 4; i <= NF; i++) {
		if ($i ~ /:$/) {
			a = substr($i, 1, length($i) - 1)
			w = ""
			for (j = i + 1; j <= NF; j++) w = w (w == "" ? "" : " ") $j
			if (w == "") complain(a ": wants a reason")
			why[a] = w
			break
		}
		if (!($i in known_fact)) { complain("unknown fact " $i " (static, reexec or ARCH: WHY)"); continue }
		fact[$i] = 1
	}
	if (("arm64" in why) && !("static" in fact)) complain("arm64: only static programs run under check-arm64")
	if (("arm64-mte" in why) && !("static" in fact)) complain("arm64-mte: only static programs run under check-arm64")

	if (what == "programs" && (runs_wanted == "" || index(" " runs_wanted " ", " " runs " "))) print prog
	else if (what == "sources") print src
	else if (what == "static" && ("static" in fact)) print src
	else if (what == "run") print prog, runs, src
	else if (what == "mteoff" && ("static" in fact) && ("arm64-mte" in why)) {
		name = prog
		sub(/.*\//, "", name)
		print name "\t" why["arm64-mte"]
	}
	else if (what == "skips" && ("static" in fact)) {
		name = prog
		sub(/.*\//, "", name)
		if (arch in why) print name "\t" why[arch]
		else if (("reexec" in fact) && (arch in reexec_why)) print name "\t" reexec_why[arch]
	}
}

END { exit bad }
