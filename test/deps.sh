#!/bin/sh
# Makes sure what `make test` needs is installed (Debian and derivatives).
#
# The list is the one .ci/run installs (liburing-dev: test/uring/uring_check; binutils:
# addr2line, which the callers tests ask for each frame's line); the allocators, python3
# and sqlite3 are for `make bench-smoke`, which checks it too.
# As root, missing packages are installed with apt-get; otherwise the exact command
# is printed and the script fails. On a system without dpkg nothing can be checked:
# a note says so and the tests run anyway. RAMPART_SKIP_DEPS=1 skips the check.
PACKAGES="build-essential binutils clang pkg-config check libcmocka-dev liburing-dev g++ python3 sqlite3 time strace \
libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 libclang-rt-14-dev"

[ -n "$RAMPART_SKIP_DEPS" ] && exit 0
if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "note: no dpkg here; cannot check the test dependencies (Debian names: $PACKAGES)"
	exit 0
fi

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)
	case "$status" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
	echo "installing the packages the tests need:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing >/dev/null && exit 0
	echo "apt-get failed; install these packages and run make test again:$missing" >&2
	exit 1
fi
echo "make test needs these packages, which are not installed:$missing" >&2
echo "install them as root, then run make test again:" >&2
echo "    sudo apt-get install$missing" >&2
echo "(or run make test as root, which installs them; RAMPART_SKIP_DEPS=1 skips this check)" >&2
exit 1
