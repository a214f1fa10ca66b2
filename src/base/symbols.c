/* symbols.c — naming an address from the dynamic symbol table (symbols.h). */
#include "base/symbols.h"

#include <elf.h>

#define MAX_SYMBOLS (1u << 20) /* more than any object has: a damaged count stops here */

struct dynsyms {
	uintptr_t symtab, strtab, strsz, hash, gnu_hash;
};

static bool in_module(const struct module *m, uintptr_t a, uintptr_t n)
{
	return a >= m->lo && a <= m->hi && n <= m->hi - a;
}

/* An address the dynamic section holds. glibc's loader adds the bias to them in place;
 * musl's loader and the vDSO leave them as the file has them. One that lies inside the
 * module is taken as it is, another is biased. */
static uintptr_t dyn_addr(const struct module *m, uintptr_t v)
{
	return v >= m->lo && v < m->hi ? v : v + m->bias;
}

static bool read_dynamic(const struct module *m, struct peek *pk, struct dynsyms *d)
{
	*d = (struct dynsyms){0};
	for (uintptr_t a = m->dyn; a + sizeof(Elf64_Dyn) <= m->dyn_end; a += sizeof(Elf64_Dyn)) {
		Elf64_Dyn e;
		if (!peek_bytes(pk, a, &e, sizeof e) || e.d_tag == DT_NULL) break;
		uintptr_t v = (uintptr_t)e.d_un.d_val;
		switch (e.d_tag) {
		case DT_SYMTAB: d->symtab = dyn_addr(m, v); break;
		case DT_STRTAB: d->strtab = dyn_addr(m, v); break;
		case DT_STRSZ: d->strsz = v; break;
		case DT_HASH: d->hash = dyn_addr(m, v); break;
		case DT_GNU_HASH: d->gnu_hash = dyn_addr(m, v); break;
		case DT_SYMENT: if (v != sizeof(Elf64_Sym)) return false; break;
		default: break;
		}
	}
	return d->symtab && d->strtab && in_module(m, d->strtab, d->strsz) && (d->hash || d->gnu_hash);
}

/* How many symbols .dynsym holds: DT_HASH says it (nchain); DT_GNU_HASH through the
 * chain of its highest bucket, whose last entry has its low bit set. */
static uint32_t count_symbols(const struct module *m, struct peek *pk, const struct dynsyms *d)
{
	uint32_t w[4];
	if (d->hash) return in_module(m, d->hash, 8) && peek_bytes(pk, d->hash + 4, &w[0], 4) ? w[0] : 0;
	if (!in_module(m, d->gnu_hash, 16) || !peek_bytes(pk, d->gnu_hash, w, sizeof w)) return 0;
	uint32_t nbuckets = w[0], symoffset = w[1], bloom = w[2];
	uintptr_t buckets = d->gnu_hash + 16 + (uintptr_t)bloom * 8, chains = buckets + (uintptr_t)nbuckets * 4;
	if (nbuckets > MAX_SYMBOLS || bloom > MAX_SYMBOLS || !in_module(m, buckets, (uintptr_t)nbuckets * 4)) return 0;
	uint32_t last = 0, b;
	for (uint32_t i = 0; i < nbuckets; i++) {
		if (!peek_bytes(pk, buckets + i * 4u, &b, 4)) return 0;
		if (b > last) last = b;
	}
	if (last < symoffset) return symoffset;
	for (; last < MAX_SYMBOLS; last++) {
		uintptr_t at = chains + (uintptr_t)(last - symoffset) * 4;
		if (!in_module(m, at, 4) || !peek_bytes(pk, at, &b, 4)) return 0;
		if (b & 1) return last + 1;
	}
	return 0;
}

bool symbol_of(const struct module *m, struct peek *pk, uintptr_t pc, char name[SYMBOL_NAME], uintptr_t *off)
{
	struct dynsyms d;
	if (!m->dyn || !read_dynamic(m, pk, &d)) return false;
	uint32_t n = count_symbols(m, pk, &d);
	if (n > MAX_SYMBOLS || !in_module(m, d.symtab, (uintptr_t)n * sizeof(Elf64_Sym))) return false;
	for (uint32_t i = 1; i < n; i++) {
		Elf64_Sym s;
		if (!peek_bytes(pk, d.symtab + i * sizeof s, &s, sizeof s)) return false;
		uintptr_t start = m->bias + s.st_value;
		if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || pc - start >= s.st_size ||
		    s.st_name >= d.strsz)
			continue;
		size_t k = 0;
		for (; k < SYMBOL_NAME - 1 && s.st_name + k < d.strsz; k++)
			if (!peek_bytes(pk, d.strtab + s.st_name + k, &name[k], 1) || !name[k]) break;
		name[k] = 0;
		*off = pc - start;
		return k > 0;
	}
	return false;
}
