/* elf.h — reading the ELF64 file of a target's executable or libpython (through
 * /proc/PID/root, so containers work): symbols from .dynsym/.symtab, a named section, the
 * load bias from /proc/PID/maps, and the PY_VERSION string. Every offset is validated
 * against the file size. Depends on libc only. */
#ifndef SOP_ELF_H
#define SOP_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../target_file.h"

typedef struct {
    const uint8_t *base; /* read-only mapping of the whole file */
    size_t size;
    uint16_t type;           /* ET_EXEC / ET_DYN */
    uint64_t min_load_vaddr; /* lowest PT_LOAD p_vaddr, page-aligned */
} sop_elf;

/* Map and validate `path` (ELF64 little-endian x86-64 or aarch64). Files above 1 GiB are
 * refused. Returns 0, -ENOEXEC for not-ELF64/malformed, or -errno. */
int sop__elf_open(const char *path, sop_elf *e);
/* Same for `path` as the target PID sees it, opened as the target could read it
 * (target_file.h: inside proc_root/PID/root, no symlink out of it, the target's uid allowed,
 * a regular file, non-blocking). -ENOEXEC also for a FIFO, device or oversized file. */
int sop__elf_open_target(const char *proc_root, int pid, const char *path, sop_elf *e);
/* Same for a file the target has mapped (sop__target_open_mapped: the mapping itself, else
 * its path inside the target's root), so a chrooted, containerized or deleted file is read. */
int sop__elf_open_mapped(const char *proc_root, int pid, const sop_mapping *m, sop_elf *e);
/* Same over a caller buffer (tests); the buffer must outlive e. */
int sop__elf_from_buffer(const uint8_t *buf, size_t size, sop_elf *e);
void sop__elf_close(sop_elf *e);

/* Find a defined symbol (dynsym first, then symtab). Returns 0 and its st_value/st_size, or
 * -ENOENT. */
int sop__elf_symbol(const sop_elf *e, const char *name, uint64_t *value, uint64_t *size);
/* Every defined function symbol (dynsym and symtab, deduplicated) sorted by address: *out
 * is malloc'd (caller frees); names point into the mapping (valid while e is open). At most
 * 4M symbols. Returns 0 or -ENOMEM. */
typedef struct {
    uint64_t value, size;
    const char *name;
} sop_elf_sym;
int sop__elf_func_symbols(const sop_elf *e, sop_elf_sym **out, size_t *n);
/* The function symbol containing vaddr (value <= vaddr < value + size), or NULL. Pure. */
const sop_elf_sym *sop__elf_sym_at(const sop_elf_sym *syms, size_t n, uint64_t vaddr);

/* Find a section by name; returns 0 with its sh_addr/sh_size/sh_offset or -ENOENT. */
int sop__elf_section(const sop_elf *e, const char *name, uint64_t *addr, uint64_t *size,
                     uint64_t *offset);
/* Find the PY_VERSION literal "3.<minor>.<micro>" (NUL-framed) in .rodata for the given
 * minor (-1: any 6..19); writes it into out. Returns 0 or -ENOENT. */
int sop__elf_find_version(const sop_elf *e, int minor, char *out, size_t cap);

/* From /proc/PID/maps text: the first file-offset-0 mapping whose path ends with `suffix`
 * (e.g. "/libpython3.11.so.1.0" or a full path) — or, when suffix is NULL, whose basename
 * starts with "libpython" — into *out (path, range, device, inode). Pure. Returns 0 or
 * -ENOENT. */
int sop__maps_find(const char *maps, const char *suffix, sop_mapping *out);
/* Load bias = start of the offset-0 mapping minus the lowest PT_LOAD vaddr. */
uint64_t sop__elf_bias(const sop_elf *e, uint64_t map_start);

#endif
