#!/bin/sh
# check-paths: every file a comment in src/ or a page of docs/ names exists, so that a
# rename or a removal cannot leave a pointer to nothing behind. Part of check-docs (and
# so of make test); no build, well under a second.
#
# What counts as naming a file: a word ending in .c, .h, .cpp, .sh, .awk, .mk or .md,
# read in C comments (a name wrapped after '_' or '/' at a line's end is joined with
# the next line) and anywhere in docs/*.md:
#   - with a folder, when its first part is one of the project's: src/, test/, bench/,
#     pkg/, include/, docs/, debian/ (from the top), a layer of src/ (large/region_
#     quarantine.c), or ./ and ../ (from the file's own folder); it must exist there;
#   - without a folder (slab_life.c), it must be the name of some file of the tree.
# Anything else is passed over: another project's files are named with their own path
# (compiler-rt/lib/scudo/...), system headers in angle brackets (<sys/mman.h>).
# Misses are better than false alarms: nothing else is guessed at.
#
# test/check-paths.known lists names known to be missing for now, one a line:
#   FILE NAME  why
# which are then not counted (a note says when one is no longer needed).
set -eu
known=test/check-paths.known
files=$( (find src test bench pkg include docs debian -type f; find . -maxdepth 1 -type f | sed 's|^\./||') 2>/dev/null)
{
	printf '%s\n' "$files" | sed 's/^/FILE /'
	[ -f "$known" ] && grep -v '^#' "$known" | sed '/^[[:space:]]*$/d; s/^/KNOWN /'
	for f in $(printf '%s\n' "$files" | grep -E '^src/.*\.[ch]$'); do
		awk -v name="$f" '
		# The comment text of each line (a /* */ comment may span lines).
		{
			line = $0; text = ""
			while (line != "") {
				if (in_c) {
					e = index(line, "*/")
					if (e) { text = text substr(line, 1, e - 1) " "; line = substr(line, e + 2); in_c = 0 }
					else { text = text line; line = "" }
				} else {
					s = index(line, "/*"); d = index(line, "//")
					if (d && (!s || d < s)) { text = text substr(line, d + 2); line = "" }
					else if (s) { line = substr(line, s + 2); in_c = 1 }
					else line = ""
				}
			}
			sub(/^[ \t]*\*+[ \t]?/, "", text)
			if (pending != "") { sub(/^[ \t]+/, "", text); text = pending text; pending = "" }
			else at = FNR
			if (text ~ /[_\/]$/) { pending = text; next }
			if (text != "") print "TEXT " name ":" at " " text
		}' "$f"
	done
	for f in docs/*.md; do
		awk -v name="$f" '{ print "TEXT " name ":" FNR " " $0 }' "$f"
	done
} | awk -v known="$known" '
function dir_of(p) { return p ~ /\// ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "." }
# a/b/../c -> a/c, ./a -> a
function normal(p,    n, part, out, i, k) {
	n = split(p, part, "/"); k = 0
	for (i = 1; i <= n; i++) {
		if (part[i] == "." || part[i] == "") continue
		if (part[i] == ".." && k > 0 && out[k] != "..") { k--; continue }
		out[++k] = part[i]
	}
	p = ""
	for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
	return p
}
$1 == "FILE" { have[$2] = 1; base = $2; sub(/.*\//, "", base); have_base[base] = 1; next }
$1 == "KNOWN" { is_known[$2 " " $3] = 1; next }
$1 == "TEXT" {
	where = $2; file = where; sub(/:[0-9]+$/, "", file)
	text = substr($0, length($1) + length($2) + 3)
	while (match(text, /[A-Za-z0-9_.\/+-]*[A-Za-z0-9_]\.(c|h|cpp|sh|awk|mk|md)([^A-Za-z0-9_]|$)/)) {
		before = RSTART > 2 ? substr(text, RSTART - 2, 2) : RSTART > 1 ? substr(text, RSTART - 1, 1) : ""
		word = substr(text, RSTART, RLENGTH)
		after = substr(text, RSTART + RLENGTH, 1)
		text = substr(text, RSTART + RLENGTH)
		# A header in angle brackets, a member (p->f.h), or part of a longer word (m.c.at).
		if (before ~ /<$/ || before == "->" || (word ~ /[.\/-]$/ && after ~ /[A-Za-z0-9_]/)) continue
		sub(/[^A-Za-z0-9_]$/, "", word)
		top = word; sub(/\/.*/, "", top)
		if (word !~ /\//) {
			if (word in have_base) continue
			path = word
		} else if (top == "." || top == "..") {
			path = normal(dir_of(file) "/" word)
			if (path in have) continue
		} else if (top ~ /^(src|test|bench|pkg|include|docs|debian)$/) {
			path = normal(word)
			if (path in have) continue
		} else if (top ~ /^(base|os|guard|slab|large|front)$/) {
			path = "src/" word
			if (path in have) continue
		} else {
			continue
		}
		if ((file " " word) in is_known) { used[file " " word] = 1; continue }
		printf "check-paths: %s names %s, which does not exist\n", where, word
		bad++
	}
}
END {
	for (k in is_known)
		if (!(k in used)) printf "check-paths: note: %s no longer needs its line in %s\n", k, known
	if (bad) exit 1
	print "check-paths: every file named in src/ comments and docs/ exists"
}'
