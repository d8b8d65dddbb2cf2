/* asyncio_gc_lists.c — the asyncio tasks found on the main interpreter's GC lists (the
 * generations and the permanent one), walked as the heap census does: bounded in objects,
 * back links checked, a list that changes under the walk re-walked twice at most, a running
 * collection waited for a little. Part of the task reader (asyncio_tasks_int.h); depends on
 * remote_mem.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "asyncio_tasks_int.h"

#define MAX_LIST_OBJECTS (1ull << 27)
#define LIST_RETRIES 2

/* Walk one GC list (as heap_walk.c's walk_list); 0, -EAGAIN (why), or a fatal read error. */
static int walk_list(tasks_reader *tr, uint64_t head, uint64_t *walked, char *why, size_t whylen)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    uint64_t prev = head, node = 0;
    *walked = 0;
    int r = sop__rmem_u64(m, head, &node);
    if (r < 0)
        return r;
    node &= ~(uint64_t)3;
    uint8_t b[32];
    for (uint64_t n = 0; node != head; n++) {
        if (n >= MAX_LIST_OBJECTS) {
            snprintf(why, whylen, "more than %llu objects", (unsigned long long)MAX_LIST_OBJECTS);
            return -EAGAIN;
        }
        if (tr->max_objects && tr->seen + n >= tr->max_objects) {
            snprintf(why, whylen, "stopped after %llu GC objects (the read's bound)",
                     (unsigned long long)tr->max_objects);
            *walked = n;
            return -E2BIG;
        }
        if (!node || (node & 7)) {
            snprintf(why, whylen, "bad link after %llu objects", (unsigned long long)n);
            return -EAGAIN;
        }
        if ((r = sop__rmem_read(m, node, b, sizeof b)) < 0) {
            if (sop__tasks_fatal(r))
                return r;
            snprintf(why, whylen, "unreadable node after %llu objects", (unsigned long long)n);
            return -EAGAIN;
        }
        uint64_t next = sop__pywalk_rd64(b, 0) & ~(uint64_t)3,
                 back = sop__pywalk_rd64(b, 8) & ~(uint64_t)3;
        if (back != prev) {
            if ((r = sop__rmem_read_direct(m, node, b, sizeof b)) < 0 ||
                (sop__pywalk_rd64(b, 8) & ~(uint64_t)3) != prev) {
                snprintf(why, whylen, "list changed under the walk after %llu objects",
                         (unsigned long long)n);
                return -EAGAIN;
            }
            next = sop__pywalk_rd64(b, 0) & ~(uint64_t)3;
        }
        uint64_t type = sop__pywalk_rd64(b, L->gc_head_size + L->ob_type);
        if (sop__tasks_type_kind(tr, type, NULL) == K_TASK &&
            (r = sop__tasks_add_found(tr, node + L->gc_head_size)) < 0)
            return r;
        (*walked)++;
        prev = node;
        node = next;
    }
    return 0;
}

int sop__tasks_walk_gc(tasks_reader *tr, sop_pytasks *out)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    uint64_t interp = 0, last = 0;
    int r = sop__rmem_u64(m, tr->w.runtime + L->rt_interp_head, &interp);
    if (r < 0)
        return r == -EFAULT ? -ENOEXEC : r;
    for (int i = 0; interp && i < MAX_INTERPS; i++) { /* the main interpreter is the last */
        last = interp;
        if (sop__rmem_u64(m, interp + L->is_next, &interp) < 0)
            break;
    }
    if (!last) {
        snprintf(out->partial, sizeof out->partial,
                 "no interpreter (not initialized or finalizing)");
        out->complete = false;
        return 0;
    }
    if (!L->gc_gen_size) { /* the runtime's check found no generation lists (py_runtime.c) */
        snprintf(out->partial, sizeof out->partial, "GC generation lists not found");
        out->complete = false;
        return 0;
    }
    uint64_t gc = L->rt_gc ? tr->w.runtime + L->rt_gc : last + L->is_gc;
    static const char *const lists[] = {"generation 0", "generation 1", "generation 2",
                                        "permanent generation"};
    for (int g = 0; g < 4; g++) {
        uint64_t head =
            g < 3 ? gc + L->gc_generations + (uint32_t)g * L->gc_gen_size : gc + L->gc_permanent;
        uint64_t walked = 0;
        char why[160] = "";
        size_t start = tr->nfound;
        for (int tries = 0;; tries++) {
            for (int k = 0; k < 20; k++) { /* a collection moves objects: wait a little */
                int32_t collecting = 0;
                if (sop__rmem_read_direct(m, gc + L->gc_collecting, &collecting, 4) < 0 ||
                    collecting != 1)
                    break;
                usleep(5000);
            }
            tr->nfound = start;
            r = walk_list(tr, head, &walked, why, sizeof why);
            if (r != -EAGAIN || tries >= LIST_RETRIES)
                break;
            sop__rmem_flush(m);
        }
        out->objects += walked;
        tr->seen += walked;
        if (r == -EAGAIN || r == -E2BIG) {
            if (out->complete)
                snprintf(out->partial, sizeof out->partial, "%s: %s", lists[g], why);
            out->complete = false;
            if (r == -E2BIG)
                break;
        } else if (r < 0) {
            return r;
        }
    }
    return 0;
}
