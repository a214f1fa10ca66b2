#!/bin/sh
# check-docs: every relative link of the documents a user reads resolves (the file, and
# for a link into a Markdown file with #anchor, a heading of that name); the README
# stays a user's page (at most README_MAX_LINES lines). Cheap: no build, a second.
# The system-call table of docs/seccomp.md is checked by `make check-seccomp-readme`.
set -eu
max=${README_MAX_LINES:-400}
fail=0
lines=$(wc -l < README.md)
if [ "$lines" -gt "$max" ]; then
	echo "check-docs: README.md has $lines lines (at most $max: internals belong in docs/)"
	fail=1
fi
# GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces
# to '-'.
anchors() {
	sed -n 's/^#\{1,6\} \(.*\)$/\1/p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
for doc in README.md docs/*.md test/README.md bench/README.md bench/journal/*.md; do
	dir=$(dirname "$doc")
	# Inline links and images outside code spans: ](target)
	for link in $(sed 's/`[^`]*`//g' "$doc" | grep -o '](\([^)#][^) ]*\|#[^) ]*\))' | sed 's/^](//; s/)$//'); do
		case $link in
		http://*|https://*|mailto:*) continue ;;
		esac
		path=${link%%#*}
		anchor=
		case $link in *'#'*) anchor=${link#*#} ;; esac
		if [ -z "$path" ]; then target=$doc; else target=$dir/$path; fi
		if [ ! -e "$target" ]; then
			echo "check-docs: $doc: link to $link: no file $target"
			fail=1
			continue
		fi
		if [ -n "$anchor" ] && [ -f "$target" ]; then
			case $target in *.md) ;; *) continue ;; esac
			if ! anchors "$target" | grep -qx -- "$anchor"; then
				echo "check-docs: $doc: link to $link: no heading #$anchor in $target"
				fail=1
			fi
		fi
	done
done
[ $fail -eq 0 ] && echo "check-docs: links resolve, README.md $lines lines (at most $max)"
exit $fail
