#!/bin/sh
# test/systemwide/check.sh LIB PROBE RESULTS [installed] — `make check-system-wide`:
# rampart as the allocator of every program, the way /etc/ld.so.preload installs it.
# With "installed" (`make check-deb`), LIB is a library a package installed, named in
# the preload file by its own path; otherwise a copy of LIB is.
#
# In a private mount namespace (unshare -m), a file naming (a copy of) LIB is mounted
# over /etc/ld.so.preload: bound over the file where it exists, otherwise written into
# an overlay of /etc whose upper layer is a tmpfs; the host's /etc is never touched.
# There test/systemwide/session.sh runs its everyday commands three times: with an
# empty preload file (the reference), with rampart (guard=auto) and with rampart under
# RAMPART_OPTIONS=guard=mprotect. Every command's output and exit status must be the
# same in all three, and each its expected status. Then, with rampart preloaded:
# RAMPART_OPTIONS=verbose=1 makes a program print rampart's start-up line, grep finds
# librampart in its own /proc/self/maps, and PROBE (test/systemwide/secure_probe,
# installed set-user-ID root and run as nobody: AT_SECURE) has librampart mapped, gets
# its memory from rampart, and ignores RAMPART_OPTIONS (guard=mprotect leaves it on
# madvise). Without the preload file, none of this.
# Root only: anyone else gets a SKIPPED line (exit 0). RESULTS keeps every output.
set -u
LIB=$1
PROBE=$2
R=$3
HERE=$(cd "$(dirname "$0")" && pwd)

say() { echo "check-system-wide: $*"; }
fail() {
	say "FAIL: $*"
	exit 1
}

# --- inside the namespace: check.sh --inside WORK LABEL PRELOAD-FILE OPTIONS ---
if [ "${1:-}" = --inside ]; then
	W=$2 label=$3 preload=$4 opts=$5
	mount -t tmpfs -o mode=755 rampart-ns "$W/ns" || exit 1
	cp "$preload" "$W/ns/ld.so.preload" || exit 1
	if [ -e /etc/ld.so.preload ]; then
		mount --bind "$W/ns/ld.so.preload" /etc/ld.so.preload || exit 1
	else
		mkdir "$W/ns/upper" "$W/ns/work" &&
			mount -t overlay rampart-etc -o "lowerdir=/etc,upperdir=$W/ns/upper,workdir=$W/ns/work" /etc &&
			cp "$W/ns/ld.so.preload" /etc/ld.so.preload || exit 1
	fi
	# The environment every command sees: nothing inherited.
	set -- PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$W/home" LC_ALL=C TZ=UTC \
		PYTHONHASHSEED=0 GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Rampart GIT_AUTHOR_EMAIL=rampart@example.org \
		GIT_COMMITTER_NAME=Rampart GIT_COMMITTER_EMAIL=rampart@example.org \
		GIT_AUTHOR_DATE=2024-01-02T03:04:05Z GIT_COMMITTER_DATE=2024-01-02T03:04:05Z
	[ -n "$opts" ] && set -- "$@" RAMPART_OPTIONS="$opts"
	env -i "$@" sh "$HERE/session.sh" "$W" "$RES/$label"
	v=$RES/$label.verify
	{
		echo "/etc/ld.so.preload: $(cat /etc/ld.so.preload)"
		echo "verbose:"
		# sort's stderr only (rampart's start-up line), its output discarded
		env -i "$@" RAMPART_OPTIONS="$opts,verbose=1" sort /etc/passwd 2>&1 >/dev/null
		echo "maps: $(env -i "$@" grep -c librampart /proc/self/maps)"
		echo "probe:"
		env -i "$@" setpriv --reuid=65534 --regid=65534 --clear-groups "$W/bin/secure_probe" 2>&1
	} >"$v"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	say "SKIPPED: needs root (a mount namespace, mounts over /etc, a set-user-ID probe); uid is $(id -u)"
	exit 0
fi
missing=""
for t in unshare:util-linux setpriv:util-linux mount:mount su:util-linux passwd:passwd chage:passwd \
	xz:xz-utils bzip2:bzip2 gzip:gzip tar:tar perl:perl python3:python3 sqlite3:sqlite3 git:git \
	make:make gcc:gcc openssl:openssl file:file diff:diffutils awk:mawk; do
	command -v "${t%%:*}" >/dev/null 2>&1 || missing="$missing ${t#*:}"
done
[ -z "$missing" ] || fail "commands missing; install the Debian packages:$missing"
if ! unshare -m true 2>/dev/null; then
	say "SKIPPED: unshare -m refused (no CAP_SYS_ADMIN here, e.g. an unprivileged container)"
	exit 0
fi

# The work directory: the set-user-ID probe needs a file system mounted without nosuid.
W=$(mktemp -d "${TMPDIR:-/tmp}/rampart-systemwide.XXXXXX") || exit 1
if findmnt -n -o OPTIONS -T "$W" | grep -qw nosuid; then
	rmdir "$W"
	mkdir -p "$R" && W=$(mktemp -d "$(cd "$R" && pwd)/work.XXXXXX") || exit 1
fi
trap 'rm -rf "$W"' EXIT
chmod 755 "$W"
mkdir -p "$W/lib" "$W/bin" "$W/ns" "$W/home" "$R" || exit 1
R=$(cd "$R" && pwd)
if [ "${4:-}" = installed ]; then
	PRELOADED=$LIB
	[ -f "$LIB" ] || fail "no installed library $LIB"
else
	PRELOADED=$W/lib/librampart.so
	cp "$LIB" "$PRELOADED" && chmod 755 "$PRELOADED" || exit 1
fi
cp "$PROBE" "$W/bin/secure_probe" || exit 1
chown 0:0 "$W/bin/secure_probe" && chmod 4755 "$W/bin/secure_probe" || exit 1
: >"$W/preload-none"
echo "$PRELOADED" >"$W/preload-rampart"

rm -rf "$R/none" "$R/rampart" "$R/rampart-mprotect" "$R"/*.verify
for run in none:none: rampart:rampart: rampart-mprotect:rampart:guard=mprotect; do
	label=${run%%:*} rest=${run#*:}
	RES=$R unshare -m --propagation private sh "$0" --inside "$W" "$label" "$W/preload-${rest%%:*}" "${rest#*:}" ||
		fail "the $label session could not run"
done

# Each session ran every command with the expected status.
for label in none rampart rampart-mprotect; do
	[ -s "$R/$label/count" ] || fail "the $label session did not finish"
	if [ -e "$R/$label/unexpected" ]; then
		sed "s/^/  $label: /" "$R/$label/unexpected"
		fail "unexpected exit statuses in the $label session"
	fi
done
n=$(cut -d' ' -f1 "$R/none/count")
for label in rampart rampart-mprotect; do
	if ! diff -r "$R/none" "$R/$label" >"$R/$label.diff"; then
		head -n 40 "$R/$label.diff"
		fail "outputs differ between the sessions without rampart and with it ($label; $R/$label.diff)"
	fi
	say "$label session: $n commands, every output and exit status identical to the session without rampart"
done

# rampart really was in use, and only where preloaded.
v=$R/rampart.verify
grep -qxF "/etc/ld.so.preload: $PRELOADED" "$v" || fail "ld.so.preload not in place ($v)"
grep -q '^rampart: version .*guard backend madvise\|^rampart: version .*guard backend mprotect' "$v" ||
	fail "no start-up line from rampart under RAMPART_OPTIONS=verbose=1 ($v)"
grep -q '^maps: [1-9]' "$v" || fail "librampart not in grep's /proc/self/maps ($v)"
grep -q '^euid 0 ruid 65534 at_secure 1 librampart mapped allocator rampart$' "$v" ||
	fail "the set-user-ID probe does not run on rampart ($v)"
# Under guard=mprotect, ordinary programs take the option; the set-user-ID probe must
# not: it keeps what guard=auto chooses (when that is madvise, this is visible).
m=$R/rampart-mprotect.verify
grep -q '^rampart: version .*guard backend mprotect' "$m" || fail "guard=mprotect not in force ($m)"
if grep -q '^guard backend madvise$' "$v"; then
	grep -q '^guard backend madvise$' "$m" || fail "the set-user-ID probe read RAMPART_OPTIONS ($m)"
else
	say "guard=auto chose mprotect here: whether the set-user-ID probe ignores RAMPART_OPTIONS is not visible"
fi
v=$R/none.verify
if ! grep -q '^maps: 0' "$v" || grep -q '^rampart:' "$v" ||
	! grep -q '^euid 0 ruid 65534 at_secure 1 librampart absent allocator not rampart$' "$v"; then
	fail "rampart in use without the preload file ($v)"
fi
say "rampart in use through /etc/ld.so.preload: start-up line, /proc/self/maps, set-user-ID program (AT_SECURE, options ignored)"
sed -n 's/^/  /p' "$R/rampart.verify"
say "passed"
