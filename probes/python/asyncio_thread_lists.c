/* asyncio_thread_lists.c — the asyncio tasks of a CPython 3.14+ process as asyncio itself keeps
 * them: each thread state holds a circular list of its live tasks (_PyThreadStateImpl
 * .asyncio_tasks_head, linked through TaskObj.task_node) and the interpreter one for tasks whose
 * thread has gone; `python -m asyncio ps` walks the same lists. Where they are comes from the
 * _asyncio module's own debug offsets (the AsyncioDebug section of the executable, libpython
 * or the _asyncio extension, whichever the process has mapped), read from the file. Each list is
 * bounded, its back links checked, and re-walked twice at most when it changes under the
 * read. Without the section (3.8-3.13, or asyncio not imported) the reader walks the GC lists
 * (asyncio_gc_lists.c). Part of the task reader (asyncio_tasks_int.h); depends on elf.c and
 * remote_mem.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../procfs.h"
#include "asyncio_tasks_int.h"
#include "elf.h"

#define LIST_RETRIES 2
#define MAX_LIST_NODES (SOP_TASKS_MAX + 1u)

/* _Py_AsyncioModuleDebugOffsets (Modules/_asynciomodule.c, 3.14 and 3.15), 13 words. */
enum {
    AD_TASK_SIZE,
    AD_TASK_NAME,
    AD_TASK_AWAITED_BY,
    AD_TASK_IS_TASK,
    AD_TASK_AWAITED_BY_IS_SET,
    AD_TASK_CORO,
    AD_TASK_NODE,
    AD_INTERP_SIZE,
    AD_INTERP_TASKS_HEAD,
    AD_THREAD_SIZE,
    AD_THREAD_RUNNING_LOOP,
    AD_THREAD_RUNNING_TASK,
    AD_THREAD_TASKS_HEAD,
    AD_WORDS
};

/* The section in one mapped file; 0 or -ENOENT. */
static int section_in(tasks_reader *tr, const sop_mapping *m, uint64_t w[AD_WORDS])
{
    sop_elf e;
    if (sop__elf_open_mapped(tr->w.proc_root, tr->w.pid, m, &e) < 0)
        return -ENOENT;
    uint64_t addr, size, off;
    int rc = -ENOENT;
    if (sop__elf_section(&e, ".AsyncioDebug", &addr, &size, &off) == 0 && size >= AD_WORDS * 8 &&
        off <= e.size && AD_WORDS * 8 <= e.size - off) {
        memcpy(w, e.base + off, AD_WORDS * 8);
        rc = 0;
    }
    sop__elf_close(&e);
    return rc;
}

/* The offsets, validated against what they describe and the layout's own Task fields. */
static int find_offsets(tasks_reader *tr, uint64_t w[AD_WORDS], char *why, size_t whylen)
{
    char path[300];
    char *maps = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/%d/maps", tr->w.proc_root,
             sop__live_task(tr->w.proc_root, tr->w.pid));
    int r = sop__read_file_at(AT_FDCWD, path, SOP_MAPS_MAX_BYTES, &maps, &len);
    if (r < 0)
        return r == -ENOENT ? -ESRCH : r;
    /* the extension module (a shared build), else libpython, else the executable */
    sop_mapping m;
    r = -ENOENT;
    for (const char *p = maps; r < 0 && p && *p;) { /* _asyncio.cpython-3X-<arch>.so */
        const char *hit = strstr(p, "/_asyncio.");
        if (!hit)
            break;
        const char *eol = strchr(hit, '\n');
        size_t sl = eol ? (size_t)(eol - hit) : strlen(hit);
        char suffix[200];
        if (sl < sizeof suffix) {
            memcpy(suffix, hit, sl);
            suffix[sl] = '\0';
            if (sop__maps_find(maps, suffix, &m) == 0)
                r = section_in(tr, &m, w);
        }
        p = eol ? eol + 1 : NULL;
    }
    if (r < 0 && sop__maps_find(maps, NULL, &m) == 0)
        r = section_in(tr, &m, w);
    char exe[600];
    snprintf(path, sizeof path, "%s/%d/exe", tr->w.proc_root,
             sop__live_task(tr->w.proc_root, tr->w.pid));
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (r < 0 && n > 0) {
        exe[n] = '\0';
        char *del = strstr(exe, " (deleted)");
        if (del)
            *del = '\0';
        if (sop__maps_find(maps, exe, &m) == 0)
            r = section_in(tr, &m, w);
    }
    free(maps);
    if (r < 0)
        return r;
    const sop_pylayout *L = &tr->w.L;
    if (w[AD_TASK_SIZE] < 64 || w[AD_TASK_SIZE] > 4096 || w[AD_TASK_NODE] + 16 > w[AD_TASK_SIZE] ||
        w[AD_THREAD_SIZE] < 64 || w[AD_THREAD_SIZE] > SOP_PYLAYOUT_MAX_TSTATE ||
        w[AD_THREAD_TASKS_HEAD] + 16 > w[AD_THREAD_SIZE] || w[AD_INTERP_SIZE] < 64 ||
        w[AD_INTERP_SIZE] > (1u << 22) || w[AD_INTERP_TASKS_HEAD] + 16 > w[AD_INTERP_SIZE]) {
        snprintf(why, whylen, "asyncio debug offsets out of bounds");
        return -EINVAL;
    }
    if (w[AD_TASK_NAME] != L->task_name || w[AD_TASK_CORO] != L->task_coro) {
        snprintf(why, whylen,
                 "asyncio's Task layout (name +%llu, coro +%llu) is not the %s table's (+%u, "
                 "+%u)",
                 (unsigned long long)w[AD_TASK_NAME], (unsigned long long)w[AD_TASK_CORO],
                 L->source, L->task_name, L->task_coro);
        return -EINVAL;
    }
    return 0;
}

/* One circular list at `head` (struct llist_node {next, prev}); nodes are task + node_off.
 * 0, -EAGAIN (why) when it changed under the read, or a fatal error. */
static int walk_list(tasks_reader *tr, uint64_t head, uint64_t node_off, char *why, size_t whylen)
{
    sop_rmem *m = &tr->w.mem;
    uint64_t b[2];
    int r = sop__rmem_read(m, head, b, sizeof b);
    if (r < 0)
        return sop__tasks_fatal(r) ? r : -EAGAIN;
    uint64_t prev = head, node = b[0];
    for (uint64_t n = 0; node != head; n++) {
        if (n >= MAX_LIST_NODES) {
            snprintf(why, whylen, "more than %u tasks in one list", MAX_LIST_NODES);
            return -EAGAIN;
        }
        if (!node || (node & 7)) {
            snprintf(why, whylen, "bad link after %llu tasks", (unsigned long long)n);
            return -EAGAIN;
        }
        if ((r = sop__rmem_read(m, node, b, sizeof b)) < 0) {
            if (sop__tasks_fatal(r))
                return r;
            snprintf(why, whylen, "unreadable node after %llu tasks", (unsigned long long)n);
            return -EAGAIN;
        }
        if (b[1] != prev) {
            if ((r = sop__rmem_read_direct(m, node, b, sizeof b)) < 0 || b[1] != prev) {
                snprintf(why, whylen, "list changed under the read after %llu tasks",
                         (unsigned long long)n);
                return -EAGAIN;
            }
        }
        if ((r = sop__tasks_add_found(tr, node - node_off)) < 0)
            return r;
        prev = node;
        node = b[0];
    }
    return 0;
}

static int walk_one(tasks_reader *tr, sop_pytasks *out, uint64_t head, uint64_t node_off,
                    const char *what)
{
    char why[160] = "";
    size_t start = tr->nfound;
    int r;
    for (int tries = 0;; tries++) {
        tr->nfound = start;
        r = walk_list(tr, head, node_off, why, sizeof why);
        if (r != -EAGAIN || tries >= LIST_RETRIES)
            break;
        sop__rmem_flush(&tr->w.mem);
    }
    if (r == -EAGAIN) {
        if (out->complete)
            snprintf(out->partial, sizeof out->partial, "%s: %s", what, why);
        out->complete = false;
        return 0;
    }
    return r;
}

int sop__tasks_walk_thread_lists(tasks_reader *tr, sop_pytasks *out)
{
    uint64_t w[AD_WORDS];
    char why[200] = "";
    int r = find_offsets(tr, w, why, sizeof why);
    if (r == -ENOENT)
        return -ENOTSUP; /* no _asyncio debug offsets: the GC lists */
    if (r == -EINVAL) {
        sop__missing_add(tr->missing, "tasks", "%s; the GC lists are walked instead", why);
        return -ENOTSUP;
    }
    if (r < 0)
        return r;
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    uint64_t interp = 0;
    if ((r = sop__rmem_u64(m, tr->w.runtime + L->rt_interp_head, &interp)) < 0)
        return r == -EFAULT ? -ENOEXEC : r;
    if (!interp) {
        snprintf(out->partial, sizeof out->partial,
                 "no interpreter (not initialized or finalizing)");
        out->complete = false;
        return 0;
    }
    out->from_lists = true;
    /* every interpreter: each of its thread states' lists, then its own (tasks of threads
     * that have exited) */
    for (int ni = 0; interp && ni < MAX_INTERPS; ni++) {
        uint64_t ts = 0;
        if ((r = sop__rmem_u64(m, interp + L->is_tstate_head, &ts)) < 0)
            return sop__tasks_fatal(r) ? r : 0;
        for (int nt = 0; ts && nt < MAX_THREADS; nt++) {
            char what[64];
            snprintf(what, sizeof what, "thread state %d's tasks", nt);
            if ((r = walk_one(tr, out, ts + w[AD_THREAD_TASKS_HEAD], w[AD_TASK_NODE], what)) < 0)
                return r;
            if ((r = sop__rmem_u64(m, ts + L->ts_next, &ts)) < 0)
                return sop__tasks_fatal(r) ? r : 0;
        }
        if ((r = walk_one(tr, out, interp + w[AD_INTERP_TASKS_HEAD], w[AD_TASK_NODE],
                          "the interpreter's tasks")) < 0)
            return r;
        if (sop__rmem_u64(m, interp + L->is_next, &interp) < 0)
            break;
    }
    return 0;
}
