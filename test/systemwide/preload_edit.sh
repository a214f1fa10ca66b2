#!/bin/sh
# test/systemwide/preload_edit.sh — rampart-run --enable and --disable, and the commands
# `rampart-run --system` prints for doing the same by hand, against an /etc/ld.so.preload
# that lists other libraries: every other line stays as it was, only rampart's line is
# added or removed, the change is made by a rename (a new inode, no temporary file left
# in /etc) with the old file's mode and owner, and nothing changes without --yes.
#
# In a private mount namespace (unshare -m), /etc is covered by an overlay whose upper
# layer is a tmpfs, as test/systemwide/check.sh does where there is no preload file: the
# rename that replaces the file cannot be made over a bind mount. The host's /etc is
# never written. Also the commands --system prints that make '* passthrough' the policy
# file's last rule: its other rules stay. Root only: anyone else, or where unshare -m is refused, skips (77).
set -u
OUT=${OUT:-out}
CC=${CC:-cc}
HERE=$(cd "$(dirname "$0")" && pwd)
F=/etc/ld.so.preload

fail() {
	echo "preload_edit: FAIL: $*"
	exit 1
}
skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# --- inside the namespace: preload_edit.sh --inside WORK ---------------------------
if [ "${1:-}" = --inside ]; then
	W=$2
	LIB=$W/lib/librampart.so.1
	RR="sh $W/rampart-run"
	mount -t tmpfs -o mode=755 rampart-ns "$W/ns" && mkdir "$W/ns/upper" "$W/ns/work" &&
		mount -t overlay rampart-etc -o "lowerdir=/etc,upperdir=$W/ns/upper,workdir=$W/ns/work" /etc ||
		fail "cannot mount an overlay over /etc"
	same() { cmp -s "$1" "$2" || { echo "--- $1"; cat "$1"; echo "--- $2"; cat "$2"; fail "$3"; }; }
	state() { stat -c '%a %u:%g' "$F"; }
	left() { ls -A /etc | grep '^\.ld\.so\.preload' && fail "a temporary file is left in /etc"; }

	# An administrator's file: a comment, two libraries, two entries on one line. (One
	# comment only: glibc 2.36 blanks the second comment of the file short of its end.)
	cat >"$W/orig" <<EOF
# preloaded by the administrator
$W/lib/other1.so
$W/lib/other2.so:$W/lib/other1.so
EOF
	cp "$W/orig" "$F" && chown 0:4242 "$F" && chmod 640 "$F" || fail "cannot write the test's $F"
	ino=$(stat -c %i "$F")

	# The dry run changes nothing and says what it would do.
	out=$($RR --enable 2>&1) || fail "--enable (dry run) failed: $out"
	echo "$out" | grep -qF "add: $LIB (before line 2)" || fail "--enable (dry run) says: $out"
	echo "$out" | grep -q "^Nothing changed" || fail "--enable (dry run) does not say nothing changed: $out"
	same "$F" "$W/orig" "--enable without --yes changed $F"
	[ "$(stat -c %i "$F")" = "$ino" ] || fail "--enable without --yes replaced $F"

	# --enable --yes: rampart's line before the first entry, the rest byte for byte.
	{ sed -n 1p "$W/orig"; echo "$LIB"; sed 1d "$W/orig"; } >"$W/enabled"
	out=$($RR --enable --yes 2>&1) || fail "--enable --yes failed: $out"
	same "$F" "$W/enabled" "--enable --yes"
	[ "$(state)" = "640 0:4242" ] || fail "--enable --yes: mode and owner $(state), were 640 0:4242"
	[ "$(stat -c %i "$F")" != "$ino" ] || fail "--enable --yes wrote into the file instead of renaming a new one"
	left
	# Every program now loads rampart and the administrator's libraries.
	v=$(RAMPART_OPTIONS=verbose=1 sh -c 'grep -c -e librampart -e other1 /proc/self/maps' 2>&1)
	echo "$v" | grep -q '^rampart: version' || fail "no rampart start-up line from a program: $v"
	[ "$(grep -c -e librampart.so.1 -e other1.so /proc/self/maps)" -ge 2 ] || fail "rampart or other1.so not mapped"
	out=$($RR --enable --yes 2>&1) || fail "--enable --yes again failed: $out"
	echo "$out" | grep -q '^unchanged' || fail "--enable --yes again: $out"
	same "$F" "$W/enabled" "--enable --yes twice"

	# --disable: the dry run changes nothing; --yes gives the administrator's file back.
	out=$($RR --disable 2>&1) || fail "--disable (dry run) failed: $out"
	echo "$out" | grep -qF "remove line 2: $LIB" || fail "--disable (dry run) says: $out"
	same "$F" "$W/enabled" "--disable without --yes changed $F"
	out=$($RR --disable --yes 2>&1) || fail "--disable --yes failed: $out"
	same "$F" "$W/orig" "--disable --yes"
	[ "$(state)" = "640 0:4242" ] || fail "--disable --yes: mode and owner $(state)"
	left
	out=$($RR --disable --yes 2>&1) || fail "--disable --yes again failed: $out"
	echo "$out" | grep -q '^unchanged' || fail "--disable --yes again: $out"

	# rampart's entry on a line with another one and a comment: only the entry goes,
	# also when named by another path (an earlier install).
	printf '%s\n' "$W/lib/other1.so /usr/local/lib/librampart.so.1:$W/lib/other2.so # kept" >"$F"
	$RR --disable --yes >/dev/null 2>&1 || fail "--disable --yes of a shared line failed"
	printf '%s\n' "$W/lib/other1.so $W/lib/other2.so # kept" >"$W/want"
	same "$F" "$W/want" "--disable --yes of a shared line"
	# --enable with another rampart path there: that entry replaced, the line kept.
	printf '%s\n' "/usr/local/lib/librampart.so.1" "$W/lib/other1.so" >"$F"
	$RR --enable --yes >/dev/null 2>&1 || fail "--enable --yes over another rampart path failed"
	printf '%s\n' "$LIB" "$W/lib/other1.so" >"$W/want"
	same "$F" "$W/want" "--enable --yes over another rampart path"

	# No file: --enable --yes makes one (mode 644), --disable --yes removes it again.
	rm -f "$F"
	$RR --enable --yes >/dev/null 2>&1 || fail "--enable --yes without a file failed"
	echo "$LIB" >"$W/want"
	same "$F" "$W/want" "--enable --yes without a file"
	[ "$(state)" = "644 0:0" ] || fail "a new $F has mode and owner $(state)"
	$RR --disable --yes >/dev/null 2>&1 || fail "--disable --yes of rampart alone failed"
	[ ! -e "$F" ] || fail "--disable --yes left $F with no entry in it"

	# Not root: refused, nothing written. A link: refused.
	cp "$W/orig" "$F"
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups $RR --enable --yes 2>&1) &&
		fail "--enable --yes as nobody succeeded: $out"
	echo "$out" | grep -q "run it as root" || fail "--enable --yes as nobody says: $out"
	same "$F" "$W/orig" "--enable --yes as nobody"
	mv "$F" "$W/target" && ln -s "$W/target" "$F"
	out=$($RR --enable --yes 2>&1) && fail "--enable --yes through a symbolic link succeeded: $out"
	same "$W/target" "$W/orig" "--enable --yes through a symbolic link"
	rm -f "$F"

	# The commands --system prints for doing it by hand: the same lines kept.
	$RR --system >"$W/system" || fail "--system failed"
	block() { awk -v n="$1" '/^  f=\/etc\/ld\.so\.preload$/ { k++; on = 1 } on && /^$/ { on = 0 }
		on && /^  / && k == n { sub(/^  /, ""); print }' "$W/system"; }
	block 1 >"$W/by-hand-enable"
	block 2 >"$W/by-hand-disable"
	grep -q "echo $LIB" "$W/by-hand-enable" || fail "--system prints no enable commands: $(cat "$W/system")"
	cp "$W/orig" "$F"
	sh "$W/by-hand-enable" || fail "--system's enable commands failed"
	{ echo "$LIB"; cat "$W/orig"; } >"$W/want"
	same "$F" "$W/want" "--system's enable commands"
	sh "$W/by-hand-disable" || fail "--system's disable commands failed"
	same "$F" "$W/orig" "--system's disable commands"
	[ ! -e "$F.new" ] || fail "--system's commands leave $F.new"
	# Its '* passthrough' switch keeps the policy file's other rules.
	C=/etc/rampart.conf
	printf '%s\n' "# the administrator's rules" "/opt/app/bin/*  sized_free=off" >"$W/rules"
	cp "$W/rules" "$C"
	awk '/^  c=\/etc\/rampart\.conf$/ { on = 1 } on && !/^  / { on = 0 } on { sub(/^  /, ""); print }' \
		"$W/system" >"$W/by-hand-passthrough"
	grep -q passthrough "$W/by-hand-passthrough" || fail "--system prints no passthrough commands"
	sh "$W/by-hand-passthrough" || fail "--system's passthrough commands failed"
	{ cat "$W/rules"; echo '* passthrough'; } >"$W/want"
	same "$C" "$W/want" "--system's passthrough commands"
	echo "preload_edit: --enable, --disable and --system's commands keep every other entry"
	exit 0
fi

# --- outside --------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "needs root (a mount namespace, an overlay over /etc); uid is $(id -u)"
for t in unshare setpriv mount; do
	command -v "$t" >/dev/null 2>&1 || skip "no $t (util-linux, mount)"
done
unshare -m true 2>/dev/null || skip "unshare -m refused (no CAP_SYS_ADMIN here)"
[ -f "$OUT/librampart.so" ] || fail "$OUT/librampart.so not built"

before() { if [ -e "$F" ]; then sha256sum "$F"; else echo absent; fi; }
host=$(before)
W=$(mktemp -d /tmp/rampart-preload-edit.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
mkdir "$W/ns" "$W/lib"
cp "$OUT/librampart.so" "$W/lib/librampart.so.1" || exit 1
for n in other1 other2; do
	echo "int rampart_test_$n;" | "$CC" -shared -fPIC -x c -o "$W/lib/$n.so" - || fail "cannot build $n.so"
done
# The script as `make install` writes it (Makefile), naming the copy.
sed -e "s|@LIB@|$W/lib/librampart.so.1|g" -e 's|@VERSION@|test|g' -e 's|@POLICY@|/etc/rampart.conf|g' \
	pkg/rampart-run.in >"$W/rampart-run" || exit 1
unshare -m --propagation private sh "$HERE/preload_edit.sh" --inside "$W"
st=$?
[ "$(before)" = "$host" ] || fail "the host's $F changed"
exit $st
