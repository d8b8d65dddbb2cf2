/* proc_maps.c — find the notable libraries mapped into a process from /proc/PID/maps: BLAS and
 * OpenMP runtimes, allocators, libpython, torch, numpy, uvloop, tokenizers, CUDA. Each file
 * is listed once (deduplicated by path). Depends on libc. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proc.h"

typedef struct {
    const char *kind, *name;
    const char *prefix;   /* basename starts with this ... */
    const char *contains; /* ... or contains this (when prefix is NULL) */
    const char *dir;      /* and, when set, the path contains this directory */
} lib_rule;

static const lib_rule lib_rules[] = {
    {"blas", "libopenblas", NULL, "openblas", NULL}, /* also scipy_openblas64_, wheel copies */
    {"blas", "libmkl", "libmkl_", NULL, NULL},
    {"blas", "libblis", "libblis", NULL, NULL},
    {"blas", "libflexiblas", "libflexiblas", NULL, NULL},
    {"blas", "libblas", "libblas.", NULL, NULL}, /* reference BLAS: slow, single thread */
    {"openmp", "libgomp", "libgomp", NULL, NULL},
    {"openmp", "libiomp5", "libiomp5", NULL, NULL},
    {"openmp", "libomp", "libomp.", NULL, NULL},
    {"openmp", "libomp", "libomp-", NULL, NULL},
    {"allocator", "libjemalloc", "libjemalloc", NULL, NULL},
    {"allocator", "libtcmalloc", "libtcmalloc", NULL, NULL},
    {"allocator", "libmimalloc", "libmimalloc", NULL, NULL},
    {"python", "libpython", "libpython", NULL, NULL},
    {"torch", "libtorch", "libtorch", NULL, NULL},
    {"numpy", "numpy", "_multiarray_umath", NULL, NULL},
    {"uvloop", "uvloop", "loop.", NULL, "/uvloop/"},
    {"tokenizers", "tokenizers", "tokenizers.", NULL, "/tokenizers/"},
    {"cuda", "libcudart", "libcudart", NULL, NULL},
    {"cuda", "libcuda", "libcuda.", NULL, NULL},
};

static const lib_rule *match_lib(const char *path, size_t len)
{
    const char *base = path;
    for (size_t i = 0; i < len; i++)
        if (path[i] == '/')
            base = path + i + 1;
    size_t blen = (size_t)(path + len - base);
    for (size_t r = 0; r < sizeof lib_rules / sizeof lib_rules[0]; r++) {
        const lib_rule *lr = &lib_rules[r];
        if (lr->prefix) {
            size_t n = strlen(lr->prefix);
            if (blen < n || memcmp(base, lr->prefix, n) != 0)
                continue;
        } else {
            size_t n = strlen(lr->contains);
            bool hit = false;
            for (size_t i = 0; i + n <= blen && !hit; i++)
                hit = memcmp(base + i, lr->contains, n) == 0;
            if (!hit)
                continue;
        }
        if (lr->dir) {
            size_t n = strlen(lr->dir);
            bool hit = false;
            for (size_t i = 0; i + n <= len && !hit; i++)
                hit = memcmp(path + i, lr->dir, n) == 0;
            if (!hit)
                continue;
        }
        return lr;
    }
    return NULL;
}

int sop__parse_maps(const char *text, sop_libs *out)
{
    out->n = 0;
    if (!text)
        return -EINVAL;
    const char *prev = NULL;
    size_t prev_len = 0;
    const char *line = text;
    while (*line) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            break; /* cut-off line: the path may be cut */
        /* address perms offset dev inode, then the path (if any) */
        const char *p = line;
        int fields = 0;
        while (p < eol && fields < 5) {
            while (p < eol && *p != ' ')
                p++;
            while (p < eol && *p == ' ')
                p++;
            fields++;
        }
        if (fields == 5 && p < eol && *p == '/') {
            size_t len = (size_t)(eol - p);
            /* consecutive mappings of one file: decide once */
            if (!(prev && prev_len == len && memcmp(prev, p, len) == 0)) {
                prev = p;
                prev_len = len;
                const lib_rule *lr = match_lib(p, len);
                bool seen = false;
                for (size_t i = 0; lr && i < out->n && !seen; i++)
                    seen =
                        strlen(out->libs[i].path) == len && memcmp(out->libs[i].path, p, len) == 0;
                if (lr && !seen && len < sizeof out->libs[0].path && out->n < SOP_LIBS_MAX) {
                    sop_lib *l = &out->libs[out->n++];
                    snprintf(l->kind, sizeof l->kind, "%s", lr->kind);
                    snprintf(l->name, sizeof l->name, "%s", lr->name);
                    memcpy(l->path, p, len);
                    l->path[len] = '\0';
                }
            }
        }
        line = eol + 1;
    }
    return 0;
}
