/* proc_mapped.c — files a process maps, from /proc/PID/maps (sizes) or /proc/PID/smaps (sizes
 * and resident kB): data files (np.memmap, safetensors, torch.load(mmap=True)), shared memory
 * (/dev/shm, memfd, SysV) and libraries told apart, summed per path, the largest kept.
 * The full smaps is read only when maps shows big data/shared mappings (bounded bytes).
 * sop__mapped_growth: per file, the resident kB gained between two snapshots (the faulted file).
 * Depends on procfs.c. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"
#include "zalloc.h"

#define PATHS_MAX 4096 /* distinct paths aggregated before the largest are kept */

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Shared memory: POSIX (/dev/shm, multiprocessing.shared_memory), memfd, SysV. */
static bool shmem_path(const char *path)
{
    return starts_with(path, "/dev/shm/") || starts_with(path, "/memfd:") ||
           starts_with(path, "/SYSV");
}

/* A shared object by name: "libfoo.so", "libfoo.so.1.2", "_foo.cpython-311-x86_64-linux-gnu.so". */
static bool lib_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *so = strstr(base, ".so");
    return so && (so[3] == '\0' || so[3] == '.' || so[3] == ' ');
}

/* One header line "start-end perms offset dev inode path". Returns true for a file mapping
 * and fills *size_kb, *exec and path (cut to cap). */
static bool parse_header(const char *line, const char *eol, int64_t *size_kb, bool *exec,
                         char *path, size_t cap)
{
    char *end;
    unsigned long long lo = strtoull(line, &end, 16);
    if (*end != '-')
        return false;
    unsigned long long hi = strtoull(end + 1, &end, 16);
    if (*end != ' ' || hi < lo)
        return false;
    const char *p = end + 1;
    if (eol - p < 5)
        return false;
    *exec = p[2] == 'x';
    /* skip perms, offset, dev */
    for (int f = 0; f < 3; f++) {
        while (p < eol && *p != ' ')
            p++;
        while (p < eol && *p == ' ')
            p++;
    }
    unsigned long long inode = strtoull(p, &end, 10);
    p = end;
    while (p < eol && *p == ' ')
        p++;
    if (p >= eol || *p != '/')
        return false; /* anonymous, [heap], [stack], [vdso], [anon:...] */
    if (inode == 0 && !shmem_path(p))
        return false;
    if (starts_with(p, "/dev/") && !starts_with(p, "/dev/shm/"))
        return false; /* device memory (/dev/zero, GPU drivers) is no file data */
    size_t n = (size_t)(eol - p);
    if (n >= cap)
        n = cap - 1;
    memcpy(path, p, n);
    path[n] = '\0';
    *size_kb = (int64_t)((hi - lo) / 1024);
    return true;
}

/* "Key:   123 kB" at line -> value, or SOP_NA when the line is not that key. */
static int64_t field_kb(const char *line, const char *key)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || line[k] != ':')
        return SOP_NA;
    const char *p = line + k + 1;
    return sop__parse_i64(&p);
}

static int by_weight(const void *a, const void *b)
{
    const sop_mapped_file *x = a, *y = b;
    int64_t rx = x->rss_kb == SOP_NA ? 0 : x->rss_kb, ry = y->rss_kb == SOP_NA ? 0 : y->rss_kb;
    if (rx != ry)
        return rx < ry ? 1 : -1;
    if (x->size_kb != y->size_kb)
        return x->size_kb < y->size_kb ? 1 : -1;
    return strcmp(x->path, y->path);
}

/* Sums saturate: the text is the kernel's, but a damaged or hostile file must not overflow. */
static void add_kb(int64_t *sum, int64_t v)
{
    if (v == SOP_NA)
        return;
    if (*sum == SOP_NA)
        *sum = v;
    else if (__builtin_add_overflow(*sum, v, sum))
        *sum = v > 0 ? INT64_MAX : INT64_MIN + 1; /* INT64_MIN is SOP_NA */
}

void sop__mapped_init(sop_mapped *out)
{
    memset(out, 0, sizeof *out);
    out->data_size_kb = out->data_rss_kb = out->shmem_size_kb = out->shmem_rss_kb = SOP_NA;
    out->lib_size_kb = out->lib_rss_kb = SOP_NA;
}

int sop__parse_mapped(const char *text, sop_mapped *out)
{
    sop__mapped_init(out);
    if (!text)
        return -EINVAL;
    sop_mapped_file *all = sop__zalloc(PATHS_MAX, sizeof *all); /* touched as filled */
    if (!all)
        return -ENOMEM;
    size_t n = 0;
    sop_mapped_file *cur = NULL; /* the entry the current VMA's fields add to */
    bool any = false;
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        if ((*line >= '0' && *line <= '9') || (*line >= 'a' && *line <= 'f')) {
            cur = NULL;
            int64_t size_kb = 0;
            bool exec = false;
            char path[SOP_PATH_MAX];
            if (parse_header(line, eol, &size_kb, &exec, path, sizeof path)) {
                any = true;
                for (size_t i = 0; i < n; i++)
                    if (strcmp(all[i].path, path) == 0) {
                        cur = &all[i];
                        break;
                    }
                if (!cur && n < PATHS_MAX) {
                    cur = &all[n++];
                    snprintf(cur->path, sizeof cur->path, "%s", path);
                    cur->rss_kb = cur->pss_kb = cur->swap_kb = cur->rss_growth_kb = SOP_NA;
                    snprintf(cur->kind, sizeof cur->kind, "%s",
                             shmem_path(path) ? "shmem"
                             : lib_name(path) ? "lib"
                                              : "data");
                } else if (!cur) {
                    out->truncated = true;
                }
                if (cur) {
                    add_kb(&cur->size_kb, size_kb);
                    cur->vmas++;
                    if (exec && strcmp(cur->kind, "data") == 0)
                        snprintf(cur->kind, sizeof cur->kind, "lib"); /* executables, .so */
                }
            }
        } else if (cur) {
            int64_t v;
            if ((v = field_kb(line, "Rss")) != SOP_NA) {
                add_kb(&cur->rss_kb, v);
                out->resident = true;
            } else if ((v = field_kb(line, "Pss")) != SOP_NA) {
                add_kb(&cur->pss_kb, v);
            } else if ((v = field_kb(line, "Swap")) != SOP_NA) {
                add_kb(&cur->swap_kb, v);
            }
        }
        line = *eol ? eol + 1 : eol;
    }
    for (size_t i = 0; i < n; i++) {
        const sop_mapped_file *f = &all[i];
        bool lib = strcmp(f->kind, "lib") == 0, shm = strcmp(f->kind, "shmem") == 0;
        add_kb(lib   ? &out->lib_size_kb
               : shm ? &out->shmem_size_kb
                     : &out->data_size_kb,
               f->size_kb);
        if (out->resident)
            add_kb(lib   ? &out->lib_rss_kb
                   : shm ? &out->shmem_rss_kb
                         : &out->data_rss_kb,
                   f->rss_kb == SOP_NA ? 0 : f->rss_kb);
        if (!lib)
            out->files_total++;
    }
    /* keep the largest data and shared files (libraries are listed in proc.libs) */
    qsort(all, n, sizeof *all, by_weight);
    for (size_t i = 0; i < n && out->n < SOP_MAPPED_MAX; i++)
        if (strcmp(all[i].kind, "lib") != 0)
            out->files[out->n++] = all[i];
    if ((int64_t)out->n < out->files_total)
        out->truncated = true;
    sop__zfree(all);
    return any ? 0 : -ENODATA;
}

int64_t sop__mapped_big_kb(const sop_mapped *m)
{
    int64_t s = 0;
    add_kb(&s, m->data_size_kb);
    add_kb(&s, m->shmem_size_kb);
    return s;
}

void sop__mapped_growth(sop_mapped *now, const sop_mapped *before)
{
    for (size_t i = 0; i < now->n; i++) {
        sop_mapped_file *f = &now->files[i];
        f->rss_growth_kb = SOP_NA;
        if (!now->resident || !before || !before->resident || f->rss_kb == SOP_NA)
            continue;
        for (size_t j = 0; j < before->n; j++) {
            const sop_mapped_file *b = &before->files[j];
            if (strcmp(b->path, f->path) == 0) {
                if (b->rss_kb != SOP_NA &&
                    __builtin_sub_overflow(f->rss_kb, b->rss_kb, &f->rss_growth_kb))
                    f->rss_growth_kb = SOP_NA;
                break;
            }
        }
    }
}
