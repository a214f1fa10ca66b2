#!/bin/sh
# bss_pages.sh: the small variables of the shared library's .bss share at most two pages.
# Each page a process first writes is a page fault, and every process started with
# rampart writes nearly all of them; the whole pages and the buffers used only with a
# policy file or a trace are kept after them (STATIC_APART in src/base/common.h, linked
# with --sort-section=name). Reads the built library's symbol table (nm).
set -u
lib=${OUT:-out}/librampart.so
[ -f "$lib" ] || { echo "$lib not built"; exit 1; }
command -v nm >/dev/null || { echo "SKIP: no nm (binutils)" >&2; exit 77; }
# lld without a linker script ignores --sort-section: the layout is then the link order's.
if readelf -p .comment "$lib" 2>/dev/null | grep -q 'Linker: LLD'; then
	echo "SKIP: linked by lld, which ignores --sort-section=name (the small variables then lie where the link put them)" >&2
	exit 77
fi
# Variables under 1 KiB in .bss (nm types b and B, thread-local ones left out: they live
# in each thread's block, not in the library's pages).
pages=$(nm -S "$lib" | awk '($3 == "b" || $3 == "B") && length($2) > 0 {
	size = 0; n = split(toupper($2), d, "")
	for (i = 1; i <= n; i++) size = size * 16 + index("0123456789ABCDEF", d[i]) - 1
	if (size >= 1024) next
	addr = 0; n = split(toupper($1), d, "")
	for (i = 1; i <= n; i++) addr = addr * 16 + index("0123456789ABCDEF", d[i]) - 1
	if (addr < 4096) next   # .tbss: offsets in the thread-local block
	print int(addr / 4096)
}' | sort -u | wc -l)
echo "small .bss variables of $lib lie on $pages page(s)"
[ "$pages" -ge 1 ] && [ "$pages" -le 2 ]
