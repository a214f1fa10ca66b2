# test/seccomp/gen.awk — reads syscalls.list (see there).
#   awk -v mode=readme -f gen.awk syscalls.list   the README table (Markdown)
#   awk -v mode=header -f gen.awk syscalls.list   a C header: ALLOWED_SYSCALLS, a list of
#                                                 __NR_ values for a seccomp filter
BEGIN { FS = " \\| " }
/^#/ || /^[ \t]*$/ { next }
$1 == "row" {
	rows[++nrows] = "| " $2 " | " $3 " | " $4 " |"
	for (col = 3; col <= 4; col++) {
		text = $col
		while (match(text, /`[a-z_][a-z_0-9]*/)) {
			names[substr(text, RSTART + 1, RLENGTH - 1)] = 1
			text = substr(text, RSTART + RLENGTH)
		}
	}
	next
}
{
	split($0, w, /[ \t]+/)
	if (w[1] == "not-syscall") { for (i = 2; i in w; i++) skip[w[i]] = 1; next }
	if (w[1] == "test") { for (i = 2; i in w; i++) test[w[i]] = 1; next }
	printf "syscalls.list:%d: unknown line\n", NR > "/dev/stderr"
	bad = 1
}
END {
	if (bad) exit 1
	if (mode == "readme") {
		print "| operation | madvise backend | mprotect backend |"
		print "|---|---|---|"
		for (i = 1; i <= nrows; i++) print rows[i]
		exit 0
	}
	print "/* Generated from test/seccomp/syscalls.list by test/seccomp/gen.awk: do not edit. */"
	print "#include <sys/syscall.h>"
	print "struct allowed_syscall { const char *name; long nr; };"
	emit("rampart_syscalls", names, skip)
	emit("test_syscalls", test, none)
}
function emit(array, set, exclude,    n, count, sorted, i) {
	count = 0
	for (n in set) if (!(n in exclude)) sorted[++count] = n
	# a stable order: insertion sort by name
	for (i = 2; i <= count; i++) {
		n = sorted[i]
		for (j = i - 1; j >= 1 && sorted[j] > n; j--) sorted[j + 1] = sorted[j]
		sorted[j + 1] = n
	}
	print "static const struct allowed_syscall " array "[] = {"
	for (i = 1; i <= count; i++) {
		print "#ifdef __NR_" sorted[i]
		print "\t{\"" sorted[i] "\", __NR_" sorted[i] "},"
		print "#endif"
	}
	print "};"
}
