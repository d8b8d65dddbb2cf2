/* elf.c — ELF64 symbols and sections of a target's executable / libpython, read from the file
 * (mmap'd read-only, every offset checked against the file size), and the lookup of mappings
 * in /proc/PID/maps. Depends on libc and <elf.h>. */
#include "elf.h"

#include "../target_file.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ELF_MAX_FILE (1ull << 30)
#define ELF_MAX_SECTIONS 4096u
#define ELF_MAX_SYMBOLS (1u << 22)

static bool in_file(const sop_elf *e, uint64_t off, uint64_t len)
{
    return off <= e->size && len <= e->size - off;
}

static const Elf64_Ehdr *ehdr(const sop_elf *e)
{
    return (const Elf64_Ehdr *)e->base;
}

static const Elf64_Shdr *shdr_at(const sop_elf *e, unsigned i)
{
    const Elf64_Ehdr *h = ehdr(e);
    if (i >= h->e_shnum)
        return NULL;
    uint64_t off = h->e_shoff + (uint64_t)i * h->e_shentsize;
    if (!in_file(e, off, sizeof(Elf64_Shdr)))
        return NULL;
    return (const Elf64_Shdr *)(e->base + off);
}

int sop__elf_from_buffer(const uint8_t *buf, size_t size, sop_elf *e)
{
    memset(e, 0, sizeof *e);
    e->base = buf;
    e->size = size;
    /* Tables are read in place: a buffer or table offset not 8-aligned (the ELF64 ABI
     * requires it) is refused rather than read misaligned. */
    if (size < sizeof(Elf64_Ehdr) || ((uintptr_t)buf & 7) || memcmp(buf, ELFMAG, SELFMAG) != 0 ||
        buf[EI_CLASS] != ELFCLASS64 || buf[EI_DATA] != ELFDATA2LSB)
        return -ENOEXEC;
    const Elf64_Ehdr *h = ehdr(e);
    if (h->e_type != ET_EXEC && h->e_type != ET_DYN)
        return -ENOEXEC;
    if ((h->e_shoff & 7) || (h->e_shentsize & 7) || (h->e_phoff & 7) || (h->e_phentsize & 7))
        return -ENOEXEC;
    if (h->e_shnum > ELF_MAX_SECTIONS || (h->e_shnum && h->e_shentsize < sizeof(Elf64_Shdr)) ||
        !in_file(e, h->e_shoff, (uint64_t)h->e_shnum * h->e_shentsize))
        return -ENOEXEC;
    if (h->e_phentsize < sizeof(Elf64_Phdr) || h->e_phnum > 256 ||
        !in_file(e, h->e_phoff, (uint64_t)h->e_phnum * h->e_phentsize))
        return -ENOEXEC;
    e->type = h->e_type;
    e->min_load_vaddr = UINT64_MAX;
    for (unsigned i = 0; i < h->e_phnum; i++) {
        const Elf64_Phdr *p = (const Elf64_Phdr *)(buf + h->e_phoff + (uint64_t)i * h->e_phentsize);
        if (p->p_type == PT_LOAD && p->p_vaddr < e->min_load_vaddr)
            e->min_load_vaddr = p->p_vaddr & ~(uint64_t)0xfff;
    }
    if (e->min_load_vaddr == UINT64_MAX)
        return -ENOEXEC;
    return 0;
}

/* Map the regular file open on fd (which this takes over and closes). */
static int elf_map_fd(int fd, sop_elf *e)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (uint64_t)st.st_size > ELF_MAX_FILE) {
        close(fd);
        return -ENOEXEC;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED)
        return -err;
    int r = sop__elf_from_buffer(p, (size_t)st.st_size, e);
    if (r < 0) {
        munmap(p, (size_t)st.st_size);
        memset(e, 0, sizeof *e);
        return r;
    }
    e->type |= 0x8000; /* mark: we own the mapping */
    return 0;
}

int sop__elf_open(const char *path, sop_elf *e)
{
    memset(e, 0, sizeof *e);
    /* O_NONBLOCK: a FIFO at the path must not block the open (it is refused by fstat). */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    return elf_map_fd(fd, e);
}

int sop__elf_open_mapped(const char *proc_root, int pid, const sop_mapping *m, sop_elf *e)
{
    memset(e, 0, sizeof *e);
    struct stat st;
    int fd = sop__target_open_mapped(proc_root, pid, m, ELF_MAX_FILE, &st);
    if (fd == -EINVAL || fd == -EFBIG)
        return -ENOEXEC;
    if (fd < 0)
        return fd;
    return elf_map_fd(fd, e);
}

int sop__elf_open_target(const char *proc_root, int pid, const char *path, sop_elf *e)
{
    memset(e, 0, sizeof *e);
    struct stat st;
    int fd = sop__target_open(proc_root, pid, path, ELF_MAX_FILE, &st);
    if (fd == -EINVAL || fd == -EFBIG)
        return -ENOEXEC; /* not a regular file, or too large */
    if (fd < 0)
        return fd;
    return elf_map_fd(fd, e);
}

void sop__elf_close(sop_elf *e)
{
    if (e->base && (e->type & 0x8000))
        munmap((void *)e->base, e->size);
    memset(e, 0, sizeof *e);
}

/* The section-name string table entry of section s, or NULL. */
static const char *section_name(const sop_elf *e, const Elf64_Shdr *s)
{
    const Elf64_Shdr *strs = shdr_at(e, ehdr(e)->e_shstrndx);
    if (!strs || !in_file(e, strs->sh_offset, strs->sh_size) || s->sh_name >= strs->sh_size)
        return NULL;
    const char *n = (const char *)e->base + strs->sh_offset + s->sh_name;
    if (!memchr(n, '\0', strs->sh_size - s->sh_name))
        return NULL;
    return n;
}

int sop__elf_section(const sop_elf *e, const char *name, uint64_t *addr, uint64_t *size,
                     uint64_t *offset)
{
    for (unsigned i = 0; i < ehdr(e)->e_shnum; i++) {
        const Elf64_Shdr *s = shdr_at(e, i);
        const char *n = s ? section_name(e, s) : NULL;
        if (n && strcmp(n, name) == 0) {
            if (addr)
                *addr = s->sh_addr;
            if (size)
                *size = s->sh_size;
            if (offset)
                *offset = s->sh_offset;
            return 0;
        }
    }
    return -ENOENT;
}

static int search_symtab(const sop_elf *e, uint32_t type, const char *name, uint64_t *value,
                         uint64_t *size)
{
    size_t nlen = strlen(name);
    for (unsigned i = 0; i < ehdr(e)->e_shnum; i++) {
        const Elf64_Shdr *s = shdr_at(e, i);
        if (!s || s->sh_type != type || s->sh_entsize < sizeof(Elf64_Sym) ||
            ((s->sh_offset | s->sh_entsize) & 7))
            continue;
        const Elf64_Shdr *str = shdr_at(e, s->sh_link);
        if (!str || !in_file(e, s->sh_offset, s->sh_size) ||
            !in_file(e, str->sh_offset, str->sh_size))
            continue;
        uint64_t count = s->sh_size / s->sh_entsize;
        if (count > ELF_MAX_SYMBOLS)
            count = ELF_MAX_SYMBOLS;
        const char *strtab = (const char *)e->base + str->sh_offset;
        for (uint64_t k = 0; k < count; k++) {
            const Elf64_Sym *sym = (const Elf64_Sym *)(e->base + s->sh_offset + k * s->sh_entsize);
            if (sym->st_shndx == SHN_UNDEF || sym->st_name == 0 ||
                sym->st_name + nlen >= str->sh_size)
                continue;
            if (memcmp(strtab + sym->st_name, name, nlen + 1) == 0) {
                *value = sym->st_value;
                if (size)
                    *size = sym->st_size;
                return 0;
            }
        }
    }
    return -ENOENT;
}

int sop__elf_symbol(const sop_elf *e, const char *name, uint64_t *value, uint64_t *size)
{
    if (search_symtab(e, SHT_DYNSYM, name, value, size) == 0)
        return 0;
    return search_symtab(e, SHT_SYMTAB, name, value, size);
}

static int sym_cmp(const void *a, const void *b)
{
    const sop_elf_sym *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->size < y->size ? 1 : x->size > y->size ? -1 : 0;
}

int sop__elf_func_symbols(const sop_elf *e, sop_elf_sym **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0, k = 0;
    sop_elf_sym *v = NULL;
    for (unsigned i = 0; i < ehdr(e)->e_shnum; i++) {
        const Elf64_Shdr *s = shdr_at(e, i);
        if (!s || (s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM) ||
            s->sh_entsize < sizeof(Elf64_Sym) || ((s->sh_offset | s->sh_entsize) & 7))
            continue;
        const Elf64_Shdr *str = shdr_at(e, s->sh_link);
        if (!str || !in_file(e, s->sh_offset, s->sh_size) ||
            !in_file(e, str->sh_offset, str->sh_size) || str->sh_size == 0)
            continue;
        uint64_t count = s->sh_size / s->sh_entsize;
        const char *strtab = (const char *)e->base + str->sh_offset;
        for (uint64_t j = 0; j < count && k < ELF_MAX_SYMBOLS; j++) {
            const Elf64_Sym *sym = (const Elf64_Sym *)(e->base + s->sh_offset + j * s->sh_entsize);
            if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF ||
                sym->st_size == 0 || sym->st_name >= str->sh_size ||
                !memchr(strtab + sym->st_name, '\0', str->sh_size - sym->st_name))
                continue;
            if (k == cap) {
                size_t ncap = cap ? cap * 2 : 1024;
                sop_elf_sym *nv = realloc(v, ncap * sizeof *nv);
                if (!nv) {
                    free(v);
                    return -ENOMEM;
                }
                v = nv;
                cap = ncap;
            }
            v[k].value = sym->st_value;
            v[k].size = sym->st_size;
            v[k].name = strtab + sym->st_name;
            k++;
        }
    }
    if (k)
        qsort(v, k, sizeof *v, sym_cmp);
    *out = v;
    *n = k;
    return 0;
}

const sop_elf_sym *sop__elf_sym_at(const sop_elf_sym *syms, size_t n, uint64_t vaddr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) { /* first symbol with value > vaddr */
        size_t mid = lo + (hi - lo) / 2;
        if (syms[mid].value <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Walk back over a few candidates (aliases and nested symbols share addresses). */
    for (size_t i = lo, steps = 0; i > 0 && steps < 64; i--, steps++) {
        const sop_elf_sym *s = &syms[i - 1];
        if (vaddr >= s->value && vaddr - s->value < s->size)
            return s;
    }
    return NULL;
}

int sop__elf_find_version(const sop_elf *e, int minor, char *out, size_t cap)
{
    uint64_t off, size;
    if (sop__elf_section(e, ".rodata", NULL, &size, &off) < 0 || !in_file(e, off, size))
        return -ENOENT;
    const char *p = (const char *)e->base + off, *end = p + size;
    /* PY_VERSION is a literal "3.X.Y[a|b|rcN]\0", possibly tail-merged by the linker into a
     * longer string (e.g. ".../Python-3.8.18"): accept any non-digit, non-dot before it. */
    for (const char *q = p + 1; q + 6 < end; q++) {
        q = memchr(q, '3', (size_t)(end - q - 6));
        if (!q)
            break;
        if ((q[-1] >= '0' && q[-1] <= '9') || q[-1] == '.' || q[1] != '.')
            continue;
        const char *r = q + 2;
        int mi = 0, nd = 0;
        while (r < end && *r >= '0' && *r <= '9' && nd < 3)
            mi = mi * 10 + (*r++ - '0'), nd++;
        if (nd == 0 || r >= end || *r != '.' || (minor >= 0 ? mi != minor : (mi < 6 || mi > 19)))
            continue;
        r++;
        nd = 0;
        while (r < end && *r >= '0' && *r <= '9' && nd < 3)
            r++, nd++;
        if (nd == 0)
            continue;
        while (r < end && r - q < 16 &&
               ((*r >= 'a' && *r <= 'z') || (*r >= '0' && *r <= '9') || *r == '+'))
            r++;
        if (r >= end || *r != '\0' || (size_t)(r - q) >= cap)
            continue;
        memcpy(out, q, (size_t)(r - q));
        out[r - q] = '\0';
        return 0;
    }
    return -ENOENT;
}

int sop__maps_find(const char *maps, const char *suffix, sop_mapping *out)
{
    const size_t cap = sizeof out->path;
    const char *line = maps;
    size_t slen = suffix ? strlen(suffix) : 0;
    for (int guard = 0; line && *line && guard < 1000000; guard++) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        /* No field before the path holds a '/': the first one starts it. Lines whose path
         * does not match are passed over without parsing the rest (a maps file has hundreds). */
        const char *p = memchr(line, '/', len);
        if (p) {
            size_t plen = len - (size_t)(p - line);
            const char *base = p;
            for (size_t i = 0; i < plen; i++)
                if (p[i] == '/')
                    base = p + i + 1;
            bool match;
            /* a deleted file's path ends in " (deleted)": the suffix is matched before it */
            size_t mlen = plen;
            if (mlen > 10 && memcmp(p + mlen - 10, " (deleted)", 10) == 0)
                mlen -= 10;
            if (suffix)
                match = mlen >= slen && memcmp(p + mlen - slen, suffix, slen) == 0;
            else
                match = (size_t)(p + plen - base) > 9 && memcmp(base, "libpython", 9) == 0;
            unsigned long long lo, hi, off, ino;
            unsigned dmaj, dmin;
            int pathpos = -1;
            char perms[8];
            if (match && plen < cap &&
                sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &dmaj,
                       &dmin, &ino, &pathpos) >= 7 &&
                line + pathpos == p && off == 0 && lo < hi) {
                memcpy(out->path, p, plen);
                out->path[plen] = '\0';
                out->lo = lo;
                out->hi = hi;
                out->dev_major = dmaj;
                out->dev_minor = dmin;
                out->ino = ino;
                return 0;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return -ENOENT;
}

uint64_t sop__elf_bias(const sop_elf *e, uint64_t map_start)
{
    return map_start - e->min_load_vaddr;
}
