#!/bin/sh
# pkg/ldconfig.sh DESTDIR LIBDIR SONAME — the end of `make install` and `make
# uninstall`: run ldconfig when the library goes into (or leaves) a directory the
# dynamic loader searches, so that a program linked with -lrampart finds
# librampart.so.1 at once; otherwise say why it was not run and what to do.
destdir=$1 libdir=$2 soname=$3
say() { echo "ldconfig: $*"; }
if [ -n "$destdir" ]; then
	say "not run (DESTDIR is set): run ldconfig on the system $libdir ends up in"
	exit 0
fi
PATH=$PATH:/sbin:/usr/sbin
if ! command -v ldconfig >/dev/null 2>&1; then
	say "not found: $libdir/$soname is found by programs that name $libdir in their run path only"
	exit 0
fi
# The directories the loader searches: ldconfig -v lists each as "DIR: (from ...)".
want=$(readlink -f "$libdir")
searched=no
for d in $(ldconfig -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p'); do
	[ "$(readlink -f "$d")" = "$want" ] && searched=yes && break
done
if [ $searched = no ]; then
	say "not run: the loader does not search $libdir; add it to a file in /etc/ld.so.conf.d/ and run ldconfig, or link with -Wl,-rpath,$libdir"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	say "not run (not root): run ldconfig as root, or programs do not find $soname in $libdir"
	exit 0
fi
ldconfig || exit 1
say "run: the loader's cache is up to date for $libdir"
