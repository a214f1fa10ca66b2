#!/bin/sh
# flags_check.sh: the Makefile honours a distribution's CPPFLAGS, CFLAGS and LDFLAGS
# (dpkg-buildflags) without losing its own flags: given flags that contradict them
# (-fvisibility=default, -fno-PIC, -Wno-error, a weaker _FORTIFY_SOURCE, -z lazy),
# every compile and link line carries the caller's flags and, after them, the
# library's own, which win; stronger hardening from the caller (-fstack-protector-all,
# _FORTIFY_SOURCE=3) is not weakened; with -flto the objects keep machine code and
# the static library keeps its symbol renaming without the LTO sections. Parses only
# (make -n); `make check-deb` checks a real build.
set -u
unset MAKEFLAGS MFLAGS MAKELEVEL
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
	echo "$*"
	fail=1
}
# dry LOG VAR=VALUE...: the commands `make lib` would run, into LOG
dry() {
	log=$1
	shift
	make --no-print-directory -n -B V=1 OUT="$tmp/out" "$@" lib >"$tmp/$log" 2>&1 || { cat "$tmp/$log"; bad "make -n $*"; }
}
# after LINE FIRST LAST: FIRST occurs in LINE, and LAST occurs after it
after() {
	printf '%s\n' "$1" | awk -v a=" $2 " -v b=" $3 " '{ i = index($0, a); if (!i) exit 1; \
		rest = substr($0, i + length(a) - 1); if (!index(rest, b)) exit 1 }'
}
compile_line() { grep -E ' -c src/front/api\.c ' "$tmp/$1"; }
link_line() { grep -E ' -shared .* -o [^ ]*/librampart\.so ' "$tmp/$1"; }

dry weak CPPFLAGS='-DDISTRO_CPP -D_FORTIFY_SOURCE=1' \
	CFLAGS='-O1 -g -DDISTRO_C -fvisibility=default -fno-PIC -fno-stack-protector -Wno-error' \
	LDFLAGS='-Wl,-z,lazy -Wl,-z,norelro -Wl,--distro-ld-marker'
c=$(compile_line weak) || bad "no compile line for api.c"
for f in -DDISTRO_CPP -DDISTRO_C -O1 -g; do
	printf '%s\n' "$c" | grep -qF -- " $f " || bad "compile line lacks the caller's $f"
done
for pair in -fvisibility=default:-fvisibility=hidden -fno-PIC:-fPIC -fno-stack-protector:-fstack-protector-strong \
	-Wno-error:-Werror -D_FORTIFY_SOURCE=1:-U_FORTIFY_SOURCE -U_FORTIFY_SOURCE:-D_FORTIFY_SOURCE=2 \
	-DDISTRO_C:-fno-builtin-malloc -DDISTRO_C:-ffile-prefix-map=$(pwd)=.; do
	after "$c" "${pair%%:*}" "${pair#*:}" || bad "compile line: ${pair#*:} does not follow ${pair%%:*}"
done
l=$(link_line weak) || bad "no link line"
for pair in -Wl,-z,lazy:-Wl,-z,now -Wl,-z,norelro:-Wl,-z,relro -Wl,--distro-ld-marker:-shared; do
	after "$l" "${pair%%:*}" "${pair#*:}" || bad "link line: ${pair#*:} does not follow ${pair%%:*}"
done
grep -q -- '--redefine-syms=' "$tmp/weak" || bad "the static library's symbols are not renamed"

dry strong CPPFLAGS='-D_FORTIFY_SOURCE=3' CFLAGS='-O2 -fstack-protector-all'
c=$(compile_line strong) || bad "no compile line for api.c"
printf '%s\n' "$c" | grep -qE -- ' -D_FORTIFY_SOURCE=2 | -U_FORTIFY_SOURCE ' && bad "_FORTIFY_SOURCE=3 overridden: $c"
printf '%s\n' "$c" | grep -qF -- ' -fstack-protector-strong ' && bad "-fstack-protector-all overridden: $c"

dry lto CFLAGS='-O2 -flto=auto' LDFLAGS='-flto=auto'
c=$(compile_line lto) || bad "no compile line for api.c"
after "$c" -flto=auto -ffat-lto-objects || bad "-flto without -ffat-lto-objects: $c"
grep -q -- "--redefine-syms=.*-R '.gnu.lto_\*'" "$tmp/lto" || bad "the static library keeps LTO sections"

dry plain
grep -qF -- '-ffat-lto-objects' "$tmp/plain" && bad "-ffat-lto-objects without -flto"
[ $fail = 0 ] && echo "build flags: the caller's CPPFLAGS, CFLAGS and LDFLAGS first, the library's own after them; stronger hardening kept; LTO objects fat, none in librampart.a"
exit $fail
