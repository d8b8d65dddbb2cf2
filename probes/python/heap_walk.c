/* heap_walk.c — sop__heap_census: walk the GC lists of the main interpreter (generations 0-2
 * and the permanent generation) from outside, resolve each type pointer once (validated as a
 * real type object), count objects per type and estimate their sizes. Every walk is bounded,
 * each node's back link is checked (which also catches loops), a list that turns out
 * inconsistent is re-walked (twice at most) and otherwise kept as far as it got, marked
 * partial. The type index is heap_types.c, the byte counts heap_sizes.c (shared through
 * heap_walk_int.h). Layouts from py_layouts.c; reads through remote_mem.c's page cache.
 * Depends on libc, py_runtime.c (the runtime found for the collection), py_names.c. */
#include "heap_census.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpython.h"
#include "heap_walk_int.h"
#include "py_names.h"

/* Walk the list whose head is at `head`. Returns 0 when walked end to end, -EAGAIN when it
 * met inconsistent data (then *why says where), or a fatal read error (-ESRCH, -EPERM, ...).
 * Counts go to the entries' gcount/gbytes; *walked gets the objects counted. */
static int walk_list(heap_walker *w, uint64_t head, uint64_t *walked, char *why, size_t whylen)
{
    const sop_pylayout *L = &w->L;
    uint64_t prev = head, node = 0;
    *walked = 0;
    int r = sop__rmem_u64(&w->mem, head, &node);
    if (r < 0)
        return r;
    node &= ~(uint64_t)3;
    uint8_t b[NODE_READ];
    for (uint64_t n = 0; node != head; n++) {
        if (n >= MAX_LIST_OBJECTS) {
            snprintf(why, whylen, "more than %llu objects", (unsigned long long)MAX_LIST_OBJECTS);
            return -EAGAIN;
        }
        if (!node || (node & 7)) {
            snprintf(why, whylen, "bad link after %llu objects", (unsigned long long)n);
            return -EAGAIN;
        }
        if ((r = sop__rmem_read(&w->mem, node, b, sizeof b)) < 0) {
            if (fatal(r))
                return r;
            snprintf(why, whylen, "unreadable node after %llu objects", (unsigned long long)n);
            return -EAGAIN;
        }
        if (w->deadline_ms > 0 && (n & 1023) == 1023 && now_ms() > w->deadline_ms) {
            snprintf(why, whylen,
                     "the pause budget of %.0f ms under --stop was spent after %llu "
                     "objects",
                     STOP_PAUSE_MS, (unsigned long long)n);
            return -ETIME;
        }
        uint64_t next = rd64(b, 0) & ~(uint64_t)3, back = rd64(b, 8) & ~(uint64_t)3;
        if (back != prev) {
            /* The back link disagrees: a stale cached page, or the list moved. */
            if ((r = sop__rmem_read_direct(&w->mem, node, b, sizeof b)) < 0 ||
                (rd64(b, 8) & ~(uint64_t)3) != prev) {
                snprintf(why, whylen, "list changed under the walk after %llu objects",
                         (unsigned long long)n);
                return -EAGAIN;
            }
            next = rd64(b, 0) & ~(uint64_t)3;
        }
        uint64_t obj = node + L->gc_head_size;
        uint64_t type = rd64(b, L->gc_head_size + L->ob_type);
        type_entry *e = sop__heap_resolve_type(w, type, false, &r);
        if (e && e->untracked) {
            e = NULL;
            r = -EINVAL;
        }
        if (!e) {
            if (fatal(r))
                return r;
            snprintf(why, whylen, "%s after %llu objects",
                     r == -E2BIG ? "too many types" : "not a type", (unsigned long long)n);
            return -EAGAIN;
        }
        e->gcount++;
        e->gbytes += sop__heap_object_bytes(w, e, obj, b);
        if (e->kind == KIND_LIST || e->kind == KIND_TUPLE || e->kind == KIND_DICT) {
            if ((r = sop__heap_scan_container(w, e, obj, b, 3)) < 0)
                return r;
        } else if (e->flags & TPFLAGS_HEAPTYPE) {
            if ((r = sop__heap_scan_instance(w, e, obj)) < 0)
                return r;
        }
        (*walked)++;
        prev = node;
        node = next;
    }
    return 0;
}

static int cmp_types(const void *pa, const void *pb)
{
    const sop_heap_type *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    return strcmp(a->name, b->name);
}

static const char *const LIST_NAMES[SOP_HEAP_LISTS] = {"generation 0", "generation 1",
                                                       "generation 2", "permanent generation"};

static int census(heap_walker *w, unsigned flags, int pid, const char *proc_root, sop_pyheap *h)
{
    const sop_pylayout *L = &w->L;
    uint64_t interp = 0, last = 0;
    int r = sop__rmem_u64(&w->mem, w->runtime + L->rt_interp_head, &interp);
    if (r < 0)
        return r == -EFAULT ? -ENOEXEC : r;
    for (int i = 0; interp && i < MAX_INTERPS; i++) { /* the main interpreter is the last */
        last = interp;
        if (sop__rmem_u64(&w->mem, interp + L->is_next, &interp) < 0)
            break;
    }
    if (!last) {
        snprintf(h->partial, sizeof h->partial, "no interpreter (not initialized or finalizing)");
        sop__missing_add(w->missing, "heap", "%s", h->partial);
        return 0;
    }
    if (!L->gc_gen_size) { /* the runtime's check found no generation lists (py_runtime.c) */
        snprintf(h->partial, sizeof h->partial, "GC generation lists not found: no census");
        sop__missing_add(w->missing, "heap", "%s", h->partial);
        return 0;
    }
    uint64_t gc = L->rt_gc ? w->runtime + L->rt_gc : last + L->is_gc;
    sop_stopped st;
    memset(&st, 0, sizeof st);
    if (flags & SOP_HEAP_STOP) {
        char err[160] = "";
        r = sop__stop_process(pid, proc_root, &st, err, sizeof err);
        if (r < 0) {
            sop__missing_add(w->missing, "heap", "could not stop the process: %s", err);
            return r;
        }
        h->stopped = true;
    }
    double t0 = now_ms();
    h->complete = true;
    w->scan_left = CENSUS_SCAN_ITEMS;
    w->deadline_ms = h->stopped ? t0 + STOP_PAUSE_MS : 0;
    int rc = 0;
    for (int g = 0; g < SOP_HEAP_LISTS; g++) {
        uint64_t head =
            g < 3 ? gc + L->gc_generations + (uint32_t)g * L->gc_gen_size : gc + L->gc_permanent;
        uint64_t walked = 0;
        char why[160] = "";
        int tries = 0;
        for (;;) {
            /* A collection in progress moves objects between lists: wait for it a little. */
            for (int k = 0; k < 20; k++) {
                int32_t collecting = 0;
                if (sop__rmem_read_direct(&w->mem, gc + L->gc_collecting, &collecting, 4) < 0 ||
                    collecting != 1)
                    break;
                usleep(5000);
            }
            for (size_t i = 0; i < w->ntypes; i++)
                w->types[i].gcount = w->types[i].gbytes = 0;
            r = walk_list(w, head, &walked, why, sizeof why);
            if (r != -EAGAIN || ++tries > LIST_RETRIES)
                break;
            h->restarts++;
            sop__rmem_flush(&w->mem);
        }
        if (r < 0 && r != -EAGAIN && r != -ETIME) {
            rc = r;
            break;
        }
        /* Keep what was counted, complete or not. */
        for (size_t i = 0; i < w->ntypes; i++) {
            w->types[i].t.count += w->types[i].gcount;
            w->types[i].t.bytes += w->types[i].gbytes;
            if (g == SOP_HEAP_LISTS - 1)
                w->types[i].t.frozen += w->types[i].gcount;
        }
        h->list_objects[g] = walked;
        h->list_complete[g] = r == 0;
        h->objects += walked;
        if ((r == -EAGAIN || r == -ETIME) && h->complete) {
            h->complete = false;
            snprintf(h->partial, sizeof h->partial, "%s: %s (%llu objects counted there)",
                     LIST_NAMES[g], why, (unsigned long long)walked);
        }
        if (r == -ETIME)
            break; /* the lists after it are not walked: the target is resumed now */
    }
    if (w->scan_left == 0 && h->complete) {
        h->complete = false;
        snprintf(h->partial, sizeof h->partial,
                 "the read budget of %llu container items was spent: untracked objects "
                 "(str, bytes, int, arrays) are undercounted",
                 (unsigned long long)CENSUS_SCAN_ITEMS);
    }
    h->census_ms = now_ms() - t0;
    if (h->stopped)
        h->pause_ms = sop__resume_process(&st);
    if (rc < 0)
        return rc;
    int32_t en = 0;
    if (sop__rmem_read(&w->mem, gc + L->gc_enabled, &en, 4) == 0 && (en == 0 || en == 1))
        h->gc_enabled = en;
    if (!h->complete)
        sop__missing_add(w->missing, "heap", "census partial: %s", h->partial);
    size_t n = 0;
    h->types = calloc(w->ntypes ? w->ntypes : 1, sizeof *h->types);
    if (!h->types)
        return -ENOMEM;
    for (size_t i = 0; i < w->ntypes; i++) {
        if (!w->types[i].t.count)
            continue;
        h->types[n++] = w->types[i].t;
        h->bytes += w->types[i].t.bytes;
        if (w->types[i].untracked) /* what was kept: a restarted list's first try is not */
            h->untracked += w->types[i].t.count;
    }
    h->ntypes = n;
    qsort(h->types, n, sizeof *h->types, cmp_types);
    h->numpy_seen = w->numpy_seen;
    h->numpy_arrays = w->numpy_arrays;
    h->numpy_nbytes = w->numpy_nbytes;
    h->reads = w->mem.reads;
    return 0;
}

void sop__heap_free(sop_pyheap *h)
{
    if (!h)
        return;
    free(h->types);
    free(h);
}

static int census_at(int pid, const char *proc_root, unsigned flags, sop_rmem_source source,
                     void *ctx, int minor, uint64_t runtime, const sop_pyruntime *rt,
                     sop_pyheap **out, sop_missing *missing)
{
    *out = NULL;
    heap_walker w;
    memset(&w, 0, sizeof w);
    w.missing = missing;
    sop_pyheap *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    h->gc_enabled = INT64_MIN;
    int rc;
    if (source) {
        const sop_pylayout *L = sop__pylayout_table(minor);
        if (!L || !runtime) {
            free(h);
            return -ENOTSUP;
        }
        w.L = *L;
        w.runtime = runtime;
        snprintf(h->version, sizeof h->version, "3.%d", minor);
        flags &= ~SOP_HEAP_STOP;
    } else {
        sop_pyruntime fresh;
        const sop_pyruntime *found = sop__pyruntime_reuse(rt, pid, proc_root, &fresh, missing);
        if ((rc = found->rc) < 0) {
            free(h);
            return rc;
        }
        w.L = found->L;
        w.runtime = found->runtime;
        snprintf(h->version, sizeof h->version, "%s", found->version);
    }
    snprintf(h->layout, sizeof h->layout, "%s", w.L.source);
    if (!w.L.gc_head_size) {
        sop__missing_add(missing, "heap", "layout %s has no heap fields", w.L.source);
        free(h);
        return -ENOTSUP;
    }
    if (sop__rmem_open(&w.mem, pid, proc_root) < 0) {
        free(h);
        return -ENOMEM;
    }
    w.mem.source = source;
    w.mem.source_ctx = ctx;
    rc = census(&w, flags, pid, proc_root, h);
    if (!source && (rc == 0 || rc == -EFAULT)) {
        char path[300];
        snprintf(path, sizeof path, "%s/%d", proc_root ? proc_root : "/proc", pid);
        if (access(path, F_OK) < 0)
            rc = -ESRCH;
    }
    sop__rmem_close(&w.mem);
    free(w.types);
    free(w.index);
    free(w.seen);
    free(w.bad);
    if (rc < 0) {
        if (rc == -ESRCH)
            sop__missing_add(missing, "heap", "process %d exited during the census", pid);
        else if (rc == -EPERM || rc == -EACCES)
            sop__missing_add(missing, "heap", "memory of %d not readable: %s", pid,
                             sop__strerror(-rc));
        sop__heap_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

int sop__heap_census(int pid, const char *proc_root, unsigned flags, sop_pyheap **out,
                     sop_missing *missing)
{
    return sop__heap_census_with(NULL, pid, proc_root, flags, out, missing);
}

int sop__heap_census_with(const sop_pyruntime *rt, int pid, const char *proc_root, unsigned flags,
                          sop_pyheap **out, sop_missing *missing)
{
    return census_at(pid, proc_root ? proc_root : "/proc", flags, NULL, NULL, 0, 0, rt, out,
                     missing);
}

int sop__heap_census_fake(sop_rmem_source source, void *ctx, int minor, uint64_t runtime,
                          sop_pyheap **out, sop_missing *missing)
{
    if (!source) {
        *out = NULL;
        return -EINVAL;
    }
    return census_at(0, "/nonexistent-sop-fake-root", 0, source, ctx, minor, runtime, NULL, out,
                     missing);
}
