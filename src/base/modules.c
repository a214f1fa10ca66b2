/* modules.c — the loaded objects, from /proc/self/maps and their ELF headers (modules.h). */
#define _GNU_SOURCE
#include "base/modules.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A mapping of an object the trace can name: a file, or the vDSO (the kernel's ELF
 * image, which holds arm64's signal return). [stack], [heap] and the rest are not. */
static bool object_mapping(const char *path)
{
	return (path[0] && path[0] != '[') || strcmp(path, "[vdso]") == 0;
}

static void copy_name(char *dst, const char *src)
{
	size_t k = 0;
	for (; src[k] && k < MODULE_NAME - 1; k++) dst[k] = src[k];
	dst[k] = 0;
}

bool modules_read(struct modules *ms, uintptr_t sp, uintptr_t own)
{
	struct maps_reader *mr = &ms->reader;
	struct maps_line *l = &ms->line;
	uintptr_t phdr = (uintptr_t)getauxval(AT_PHDR);
	/* The run of mappings being read: its first line, and its module once it has code. */
	uintptr_t run_lo = 0, run_hdr = 0, run_bias = 0;
	int run_module = -1;
	char run_name[MODULE_NAME] = "";
	ms->n = ms->nr = 0;
	ms->own = ms->program = -1;
	ms->stack_lo = ms->stack_hi = 0;
	sp = address_untagged(sp);
	if (!maps_open(mr)) return false;
	while (maps_next(mr, l)) {
		if (sp >= l->start && sp < l->end) ms->stack_lo = l->start, ms->stack_hi = l->end;
		if (!object_mapping(l->path)) {
			if (!l->path[0]) continue; /* anonymous (a .bss): the run goes on */
			run_name[0] = 0;
			run_module = -1;
			continue;
		}
		if (strncmp(l->path, run_name, MODULE_NAME - 1) != 0) { /* a new run */
			copy_name(run_name, l->path);
			run_lo = l->start;
			run_hdr = l->offset == 0 ? l->start : 0;
			/* Until its headers say otherwise (modules_elf): the file's offset 0 where
			 * it is mapped, what a file whose addresses are its offsets expects. */
			run_bias = l->start - l->offset;
			run_module = -1;
		}
		if (run_module >= 0) ms->m[run_module].hi = l->end;
		if (!l->r || !l->x) continue;
		if (run_module < 0) {
			if (ms->n == MODULES_MAX) continue;
			run_module = (int)ms->n++;
			struct module *m = &ms->m[run_module];
			memset(m, 0, sizeof *m);
			m->lo = run_lo, m->hi = l->end, m->hdr = run_hdr, m->bias = run_bias;
		}
		if (ms->nr < MODULE_RANGES)
			ms->r[ms->nr++] = (struct exec_range){l->start, l->end, (unsigned)run_module};
	}
	maps_close(mr);
	for (unsigned i = 0; i < ms->n; i++) {
		if (own >= ms->m[i].lo && own < ms->m[i].hi) ms->own = (int)i;
		if (phdr >= ms->m[i].lo && phdr < ms->m[i].hi) ms->program = (int)i;
	}
	return ms->stack_hi != 0;
}

/* A module is known again by where its run of mappings starts. */
void modules_names(struct modules *ms, const unsigned *which, size_t n, char (*names)[MODULE_NAME])
{
	char last[MODULE_NAME] = "";
	for (size_t k = 0; k < n; k++) copy_name(names[k], "?");
	if (!maps_open(&ms->reader)) return;
	while (maps_next(&ms->reader, &ms->line)) {
		const char *path = ms->line.path;
		if (!object_mapping(path)) {
			if (path[0]) last[0] = 0;
			continue;
		}
		if (strncmp(path, last, MODULE_NAME - 1) == 0) continue; /* not a run's first mapping */
		copy_name(last, path);
		for (size_t k = 0; k < n; k++)
			if (ms->m[which[k]].lo == ms->line.start) copy_name(names[k], path);
	}
	maps_close(&ms->reader);
}

int modules_find(const struct modules *ms, uintptr_t pc)
{
	for (unsigned i = 0; i < ms->nr; i++)
		if (pc >= ms->r[i].start && pc < ms->r[i].end) return (int)ms->r[i].module;
	return -1;
}

bool modules_mapping_of(struct modules *ms, uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	bool found = false;
	if (!maps_open(&ms->reader)) return false;
	while (maps_next(&ms->reader, &ms->line))
		if (addr >= ms->line.start && addr < ms->line.end) {
			*lo = ms->line.start, *hi = ms->line.end;
			found = true;
		}
	maps_close(&ms->reader);
	return found;
}

/* Is [a, a + n) inside module m? */
static bool inside(const struct module *m, uintptr_t a, uintptr_t n)
{
	return a >= m->lo && a <= m->hi && n <= m->hi - a;
}

/* The raw calls, like procmaps.c's: no wrapper of the program's may run here. */
static bool pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	int saved = errno;
	long r = syscall(SYS_pread64, fd, buf, n, (off_t)off);
	errno = saved;
	return r == (long)n;
}

/* A program linked statically has no .eh_frame_hdr (gcc asks the linker for one only
 * where the program is dynamic): its .eh_frame is found by its section header, in the
 * file /proc/self/exe opens (the program's own inode, even if its path was replaced
 * since), checked to be the file mapped by comparing the ELF header with the mapped one. */
static void eh_frame_from_file(struct module *m, const Elf64_Ehdr *mapped)
{
	int saved = errno;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/exe", O_RDONLY | O_CLOEXEC);
	errno = saved;
	if (fd < 0) return;
	Elf64_Ehdr e;
	Elf64_Shdr strtab, s;
	if (pread_all(fd, &e, sizeof e, 0) && memcmp(&e, mapped, sizeof e) == 0 && e.e_shentsize == sizeof s &&
	    e.e_shstrndx < e.e_shnum &&
	    pread_all(fd, &strtab, sizeof strtab, e.e_shoff + (uint64_t)e.e_shstrndx * sizeof s)) {
		for (unsigned i = 1; i < e.e_shnum && i < 1024; i++) {
			char name[sizeof ".eh_frame"];
			if (!pread_all(fd, &s, sizeof s, e.e_shoff + (uint64_t)i * sizeof s)) break;
			if (!(s.sh_flags & SHF_ALLOC) || /* PROGBITS, or x86-64's UNWIND type */
			    !pread_all(fd, name, sizeof name, strtab.sh_offset + s.sh_name) ||
			    memcmp(name, ".eh_frame", sizeof name) != 0)
				continue;
			if (inside(m, m->bias + s.sh_addr, s.sh_size))
				m->eh_frame = m->bias + s.sh_addr, m->eh_frame_end = m->eh_frame + s.sh_size;
			break;
		}
	}
	saved = errno;
	(void)syscall(SYS_close, fd);
	errno = saved;
}

bool modules_elf(struct modules *ms, unsigned i, struct peek *pk)
{
	struct module *m = &ms->m[i];
	if (m->elf_read) return m->elf_ok;
	m->elf_read = true;
	Elf64_Ehdr e;
	if (!m->hdr || !peek_bytes(pk, m->hdr, &e, sizeof e) || memcmp(e.e_ident, ELFMAG, SELFMAG) != 0 ||
	    e.e_ident[EI_CLASS] != ELFCLASS64 || (e.e_type != ET_EXEC && e.e_type != ET_DYN) ||
	    e.e_phentsize != sizeof(Elf64_Phdr) || e.e_phnum > 256 ||
	    !inside(m, m->hdr + e.e_phoff, (uintptr_t)e.e_phnum * sizeof(Elf64_Phdr)))
		return false;
	/* The bias from the segment that maps the file's start: that segment's address in
	 * the file is where the header now is. */
	Elf64_Phdr eh_frame_hdr = {0}, dynamic = {0};
	bool biased = false;
	for (unsigned k = 0; k < e.e_phnum; k++) {
		Elf64_Phdr p;
		if (!peek_bytes(pk, m->hdr + e.e_phoff + k * sizeof p, &p, sizeof p)) return false;
		if (p.p_type == PT_LOAD && p.p_offset == 0 && !biased) {
			m->bias = m->hdr - align_down(p.p_vaddr, os_page);
			biased = true;
		}
		if (p.p_type == PT_GNU_EH_FRAME) eh_frame_hdr = p;
		if (p.p_type == PT_DYNAMIC) dynamic = p;
	}
	if (!biased) return false;
	if (eh_frame_hdr.p_memsz && inside(m, m->bias + eh_frame_hdr.p_vaddr, eh_frame_hdr.p_memsz))
		m->eh_hdr = m->bias + eh_frame_hdr.p_vaddr;
	else if ((int)i == ms->program)
		eh_frame_from_file(m, &e);
	if (dynamic.p_memsz && inside(m, m->bias + dynamic.p_vaddr, dynamic.p_memsz))
		m->dyn = m->bias + dynamic.p_vaddr, m->dyn_end = m->dyn + dynamic.p_memsz;
	m->elf_ok = true;
	return true;
}
