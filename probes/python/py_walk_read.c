/* py_walk_read.c — how the walk reads: a chain of remote memory through the walker's cache
 * (noted for the snapshot), and the text pool that keeps the frames' names with the sop_python.
 * The bottom of the walk (py_walk_int.h); depends on remote_mem.c. */
#include "cpython.h"

#include <stdlib.h>
#include <string.h>

#include "py_walk_int.h"
#include "remote_mem.h"

const char *sop__pywalk_pool_add(sop_python *py, const char *s)
{
    size_t n = strlen(s) + 1;
    struct sop_pystrings *c = py->strings;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 60000 ? n : 60000;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = py->strings;
        c->used = 0;
        c->cap = cap;
        py->strings = c;
    }
    char *d = c->data + c->used;
    memcpy(d, s, n);
    c->used += n;
    return d;
}

/* Read len bytes of the chain at addr through the cache, noting it for the snapshot. */
int sop__pywalk_chain_read(walker *w, uint64_t addr, void *buf, size_t len)
{
    uint64_t before = w->mem.off_snapshot;
    int r = sop__rmem_read(&w->mem, addr, buf, len);
    w->chain_reads += w->mem.off_snapshot - before;
    if (w->nchain < CHAIN_MAX) {
        w->chain[w->nchain] = addr;
        w->chain_len[w->nchain++] = len;
    }
    return r;
}
