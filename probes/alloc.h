/* alloc.h — which allocator a process uses and its knobs: from the mapped libraries and the
 * allow-listed environment (LD_PRELOAD, MALLOC_ARENA_MAX, PYTHONMALLOC). Depends on proc.h. */
#ifndef SOP_ALLOC_H
#define SOP_ALLOC_H

#include "proc.h"

typedef struct {
    char allocator[16]; /* glibc jemalloc tcmalloc mimalloc */
    char source[16];    /* "maps", "LD_PRELOAD", "default" */
    char ld_preload[256], malloc_arena_max[32], pythonmalloc[32];
    sop_malloc_heaps heaps; /* glibc only; SOP_NA when not measured */
} sop_alloc;

void sop__alloc_detect(const sop_proc *proc, sop_alloc *out);

/* Count glibc's 64 MiB arena heaps in /proc/PID/maps text (pure). Returns 0, -EINVAL. */
int sop__parse_malloc_heaps(const char *maps, sop_malloc_heaps *out);

#endif
