/* py_walk.c — sop__python_collect: walk interpreters -> thread states -> frames of a CPython
 * process from outside with remote_mem.c, given the runtime py_runtime.c found (layouts from
 * py_layouts.c), never stopping the target (native.c does, with SOP_PY_NATIVE). The walk of
 * one thread is shared with the repeated sampler (py_sample.c) through py_walk_int.h. Every
 * loop is bounded; a torn read is retried, then reported. Depends on libc. */
#include "cpython.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../procfs.h"
#include "../zalloc.h"
#include "linetable.h"
#include "native.h"
#include "py_layouts.h"
#include "py_names.h"
#include "py_runtime.h"
#include "py_walk_int.h"
#include "remote_mem.h"

/* ---- small helpers ------------------------------------------------------------------- */

static void no_python(void *ctx, int tid)
{
    (void)ctx;
    (void)tid;
}

/* Every task of the process that is not one of py's Python threads, into py->others; with
 * nv (--native) each one's native stack, its state read before the stop. */
static void collect_others(walker *w, sop_python *py, sop_native *nv, bool *ptrace_refused)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%d/task", w->proc_root, w->pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    size_t cap = 0;
    while ((de = readdir(d)) != NULL && py->nothers < MAX_THREADS) {
        int tid = atoi(de->d_name);
        if (tid <= 0)
            continue;
        bool python = false;
        for (size_t i = 0; i < py->nthreads && !python; i++)
            python = py->threads[i].tid == tid;
        if (python)
            continue;
        if (py->nothers == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            sop_ostask *n = realloc(py->others, ncap * sizeof *n);
            if (!n)
                break;
            py->others = n;
            cap = ncap;
        }
        sop_ostask *o = &py->others[py->nothers++];
        memset(o, 0, sizeof *o);
        o->tid = tid;
        sop__pywalk_task_comm(w, tid, o->name, sizeof o->name);
        o->os_state = sop__pywalk_task_state(w, tid);
        if (!nv)
            continue;
        if (*ptrace_refused) {
            snprintf(o->native_error, sizeof o->native_error, "ptrace refused");
            continue;
        }
        char err[160] = "";
        int nr = sop__native_thread(nv, tid, no_python, NULL, &o->native, &o->nnative, &o->pause_ms,
                                    err, sizeof err);
        if (nr == -EPERM || nr == -EACCES)
            *ptrace_refused = true;
        if (nr < 0)
            snprintf(o->native_error, sizeof o->native_error, "%s", err);
        for (size_t k = 0; k < o->nnative; k++)
            o->native[k].py_index = -1;
    }
    closedir(d);
}

/* ---- code objects ------------------------------------------------------------------- */

/* ---- frames ------------------------------------------------------------------------- */

static int push_frame(sop_pythread *t, size_t *cap, const code_entry *c, int line, bool entry)
{
    if (t->nframes == *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        sop_pyframe *nf = realloc(t->frames, ncap * sizeof *nf);
        if (!nf)
            return -ENOMEM;
        t->frames = nf;
        *cap = ncap;
    }
    sop_pyframe *f = &t->frames[t->nframes++];
    f->func = c->func;
    f->file = c->file;
    f->line = line;
    f->entry = entry;
    f->obj = 0;
    return 0;
}

/* threading's Thread._bootstrap: its first local is the Thread object. */
static bool is_thread_bootstrap(const code_entry *c)
{
    size_t n = strlen(c->file);
    return (strcmp(c->func, "Thread._bootstrap") == 0 || strcmp(c->func, "_bootstrap") == 0) &&
           n >= 12 && strcmp(c->file + n - 12, "threading.py") == 0;
}

/* Walk the frames of the thread state at `tstate` into t. Returns 0, -EAGAIN for a torn read
 * (reason in why), -ESRCH when the process is gone, -ENOMEM. On 3.8-3.10 every frame must be
 * live (ob_refcnt > 0) and executing: a frame freed while we read (its f_back then links the
 * free list, which ends in NULL) is a torn read, never the end of the stack. */
/* The thread state's fields the walk needs (read as part of the chain): t->thread_id, the
 * thread's own tid (*raw_tid, its PID namespace's; the caller maps and checks it) and its
 * newest frame (*f; through the cframe on 3.11-3.12). 0, -ESRCH or -EAGAIN with why. */
static int read_tstate(walker *w, uint64_t tstate, uint8_t *ts, size_t tsz, sop_pythread *t,
                       int64_t *raw_tid, uint64_t *f, char *why, size_t whylen)
{
    const sop_pylayout *L = &w->L;
    int r = sop__pywalk_chain_read(w, tstate, ts, tsz);
    if (r < 0) {
        snprintf(why, whylen, "thread state unreadable (%s)", sop__strerror(-r));
        return r == -ESRCH ? r : -EAGAIN;
    }
    t->thread_id = sop__pywalk_rd64(ts, L->ts_thread_id);
    *raw_tid = L->ts_native_thread_id ? (int64_t)sop__pywalk_rd64(ts, L->ts_native_thread_id) : 0;
    *f = sop__pywalk_rd64(ts, L->ts_frame);
    if (L->frames == SOP_PYFRAME_CFRAME && *f) {
        uint64_t cf = *f;
        if ((r = sop__pywalk_chain_read(w, cf + L->cf_current_frame, f, sizeof *f)) < 0) {
            snprintf(why, whylen, "cframe unreadable (%s)", sop__strerror(-r));
            return r == -ESRCH ? r : -EAGAIN;
        }
        /* 3.11-3.12: with no evaluator running, the thread's cframe is its root_cframe, inside
         * the thread state, and has no frame. Any other cframe is an evaluator's, on the C
         * stack, and names the frame it runs: none there means the cframe was read after that
         * evaluator returned (its stack memory reused), not a thread without Python. */
        if (!*f && (cf < tstate || cf >= tstate + L->ts_size)) {
            snprintf(why, whylen, "an evaluator's cframe without a frame (read after it returned)");
            return -EAGAIN;
        }
    }
    return 0;
}

/* One frame of the chain as read. */
typedef struct {
    uint64_t code, prev;
    int64_t addr_bytes; /* the instruction's offset in the code, for its line */
    bool entry, skip;   /* an evaluator's first frame; a shim frame (not shown) */
    int owner;          /* 3.11+: who owns the frame; -1 before */
} frame_fields;

/* Read frame f (at depth) into ff. 0, -ESRCH, or -EAGAIN with why (unreadable, or a 3.8-3.10
 * frame object not executing). A shim frame marks the frame before it as an entry. */
static int read_frame(walker *w, sop_pythread *t, uint64_t f, size_t depth, frame_fields *ff,
                      char *why, size_t whylen)
{
    const sop_pylayout *L = &w->L;
    uint8_t fb[SOP_PYLAYOUT_MAX_FRAME_READ];
    int r;
    ff->entry = true;
    ff->skip = false;
    ff->owner = -1;
    if (L->frames == SOP_PYFRAME_OBJECT) {
        size_t fo_len = L->fo_lasti + 4;
        if (L->fo_state && L->fo_state + 1 > fo_len)
            fo_len = L->fo_state + 1;
        if ((r = sop__pywalk_chain_read(w, f, fb, fo_len)) < 0)
            goto unreadable;
        ff->code = sop__pywalk_rd64(fb, L->fo_code);
        ff->prev = sop__pywalk_rd64(fb, L->fo_back);
        int lasti = rd32(fb, L->fo_lasti);
        ff->addr_bytes = L->lines == SOP_PYLINES_310 ? (int64_t)lasti * 2 : lasti;
        if (L->fo_state) {
            /* The newest frame may be between `tstate->frame = f` and the flag being set (or
             * the reverse on return), seen for milliseconds when the target is descheduled
             * there: then it only has to be alive and have a caller (whose frame must be
             * executing). Not a lone frame: one just taken off the free list is alive before
             * its f_back is set, and the list's last link is NULL. Older frames are mid-call. */
            int64_t refcnt = (int64_t)sop__pywalk_rd64(fb, 0);
            int8_t st = (int8_t)fb[L->fo_state];
            bool live = (L->fo_state_enum ? (st == 0 || st == 2) : st == 1) ||
                        (depth == 0 && ff->prev != 0);
            if (refcnt <= 0 || refcnt > ((int64_t)1 << 40) || !live) {
                snprintf(why, whylen,
                         "frame at depth %zu not executing (freed or reused while read)", depth);
                return -EAGAIN;
            }
        }
        return 0;
    }
    if ((r = sop__pywalk_chain_read(w, f, fb, L->if_owner + 1)) < 0)
        goto unreadable;
    ff->code = sop__pywalk_ref(L, sop__pywalk_rd64(fb, L->if_code));
    ff->prev = sop__pywalk_rd64(fb, L->if_previous);
    uint64_t instr = sop__pywalk_rd64(fb, L->if_instr);
    ff->owner = fb[L->if_owner];
    ff->addr_bytes = (int64_t)(instr - (ff->code + L->co_code_adaptive));
    if (L->if_is_entry >= 0)
        ff->entry = fb[L->if_is_entry] != 0;
    else
        ff->entry = false; /* decided when the older frame is seen */
    if (L->owner_shim_min >= 0 && ff->owner >= L->owner_shim_min) {
        ff->skip = true; /* shim frame of a C call into the evaluator */
        if (t->nframes)
            t->frames[t->nframes - 1].entry = true;
    }
    return 0;
unreadable:
    if (r == -ESRCH)
        return r;
    snprintf(why, whylen, "frame at depth %zu unreadable (%s)", depth, sop__strerror(-r));
    return -EAGAIN;
}

/* Frame f's code, line and (asyncio) object appended to t. 0; 1 when the frame is not shown
 * (3.13: f_executable not a code object); -ESRCH, -ENOMEM, or -EAGAIN with why. */
static int keep_frame(walker *w, sop_pythread *t, size_t *cap, uint64_t f, size_t depth,
                      const frame_fields *ff, uint64_t *boot_frame, char *why, size_t whylen)
{
    const sop_pylayout *L = &w->L;
    int err = 0;
    code_entry *c = sop__pywalk_code(w, ff->code, &err);
    if (!c) {
        if (err == -ESRCH)
            return err;
        if (L->minor >= 13 && err == -EINVAL)
            return 1; /* 3.13: f_executable may be something other than a code object */
        snprintf(why, whylen, "code object at depth %zu unreadable (%s)", depth,
                 err == -EINVAL ? "not a code object" : sop__strerror(-err));
        return -EAGAIN;
    }
    int line = -1;
    if (ff->addr_bytes >= -2 && ff->addr_bytes < INT_MAX) {
        if (!c->memo || c->memo_addr != (int)ff->addr_bytes) {
            c->memo_line = sop__py_addr2line(L->lines, c->lines, c->nlines, c->firstlineno,
                                             (int)ff->addr_bytes);
            c->memo_addr = (int)ff->addr_bytes;
            c->memo = true;
        }
        line = c->memo_line;
    }
    if (push_frame(t, cap, c, line, ff->entry) < 0)
        return -ENOMEM;
    uint64_t self = 0; /* which callback: one bounded read, 0 when it fails */
    if (c->handle_run && sop__rmem_u64(&w->mem, f + L->frame_localsplus, &self) == 0)
        t->frames[t->nframes - 1].obj = sop__pywalk_ref(L, self);
    uint64_t end_time = 0, bits = 0; /* which turn of the loop: two reads */
    if (c->turn_slot &&
        sop__rmem_u64(&w->mem, f + L->frame_localsplus + 8u * (c->turn_slot - 1u), &end_time) ==
            0 &&
        (end_time = sop__pywalk_ref(L, end_time)) != 0 &&
        sop__rmem_u64(&w->mem, end_time + L->float_value, &bits) == 0)
        t->frames[t->nframes - 1].obj = bits;
    if (is_thread_bootstrap(c))
        *boot_frame = f;
    return 0;
}

/* A whole chain read: does it end where a real stack ends? 0, or -EAGAIN with why. */
static int chain_complete(const walker *w, sop_pythread *t, bool want_base, bool reached_base,
                          int oldest_owner, char *why, size_t whylen)
{
    if (want_base && !reached_base && !t->truncated && w->frame_set.n) {
        snprintf(why, whylen, "chain ends at depth %zu before the thread's base frame", t->nframes);
        return -EAGAIN;
    }
    /* A chain cannot start in a generator's or coroutine's frame: something resumed it, and
     * that frame is its `previous` while it runs. Ending there, the read met a coroutine that
     * was just suspended (its `previous` cleared) while the thread state still named it: a
     * torn chain (a busy event loop on another CPU shows it every few reads), not the stack. */
    if (!t->truncated && oldest_owner == SOP_PYFRAME_OWNED_BY_GENERATOR) {
        snprintf(why, whylen, "chain ends in a suspended coroutine's frame at depth %zu",
                 t->nframes ? t->nframes - 1 : 0);
        return -EAGAIN;
    }
    /* Frames, but none of them Python code: only the evaluator's entry shims (3.12+), which
     * live on the C stack. A thread running Python has its code frames below the shim; a shim
     * alone is one already returned from, its memory reused, read through a stale pointer. */
    if (!t->truncated && !t->nframes && w->frame_set.n) {
        snprintf(why, whylen, "chain holds only the evaluator's entry frames (%zu)",
                 w->frame_set.n);
        return -EAGAIN;
    }
    if (t->nframes && !t->truncated)
        t->frames[t->nframes - 1].entry = true;
    return 0;
}

static int walk_thread(walker *w, uint64_t tstate, sop_pythread *t, uint64_t *boot_frame,
                       int64_t *raw_tid, char *why, size_t whylen)
{
    const sop_pylayout *L = &w->L;
    uint8_t ts[SOP_PYLAYOUT_MAX_TSTATE];
    size_t cap = 0;
    free(t->frames);
    t->frames = NULL;
    t->nframes = 0;
    t->truncated = false;
    w->nchain = 0;
    w->chain_reads = 0;
    size_t tsz = L->ts_size < sizeof ts ? L->ts_size : sizeof ts;
    uint64_t f = 0;
    int r = read_tstate(w, tstate, ts, tsz, t, raw_tid, &f, why, whylen);
    if (r < 0)
        return r;
    sop__addr_set_clear(&w->frame_set);
    int oldest_owner = -1; /* 3.11+: the owner of the oldest frame kept */
    /* 3.15+: every chain ends in the thread's base frame (inside its thread state): reaching
     * it proves the walk complete; a chain that ends anywhere else was torn. */
    uint64_t base = L->ts_base_frame ? sop__pywalk_rd64(ts, L->ts_base_frame) : 0;
    bool reached_base = false;
    for (size_t depth = 0; f; depth++) {
        if (t->nframes >= MAX_FRAMES || depth >= 4 * MAX_FRAMES) {
            t->truncated = true;
            break;
        }
        if (base && f == base) {
            reached_base = true;
            break;
        }
        int added = sop__addr_set_add(&w->frame_set, f);
        if (added < 0)
            return -ENOMEM;
        if (added == 0) {
            snprintf(why, whylen, "frame chain loops at depth %zu", depth);
            return -EAGAIN;
        }
        frame_fields ff;
        if ((r = read_frame(w, t, f, depth, &ff, why, whylen)) < 0)
            return r;
        if (!ff.skip) {
            if ((r = keep_frame(w, t, &cap, f, depth, &ff, boot_frame, why, whylen)) < 0)
                return r;
            if (r == 0 && ff.owner >= 0)
                oldest_owner = ff.owner;
        }
        f = ff.prev;
    }
    return chain_complete(w, t, base != 0, reached_base, oldest_owner, why, whylen);
}

/* ---- the runtime ----------------------------------------------------------------------- */

/* The runtime for this walk: `found` when given (found earlier for this process image, see
 * sop__pyruntime_current), its notes added again; else found now (py_runtime.c). */
int sop__pywalk_use_runtime(walker *w, const sop_pyruntime *found, sop_python *py)
{
    sop_pyruntime fresh;
    if (found) {
        sop__pyruntime_replay(found, w->missing);
    } else {
        sop__pyruntime_find_in(w->pid, w->proc_root, w->maps, &w->mem, &fresh, w->missing);
        found = &fresh;
    }
    snprintf(py->version, sizeof py->version, "%s", found->version);
    snprintf(py->executable, sizeof py->executable, "%s", found->executable);
    snprintf(py->libpython, sizeof py->libpython, "%s", found->libpython);
    snprintf(py->layout, sizeof py->layout, "%s", found->layout);
    if (found->rc == 0) {
        w->L = found->L;
        w->runtime = found->runtime;
        w->code_type = found->code_type;
    }
    return found->rc;
}

/* ---- GIL and GC ---------------------------------------------------------------------- */

/* ---- the collection ------------------------------------------------------------------ */

static uint64_t chain_hash(const walker *w)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < w->nchain; i++)
        h = (h ^ w->chain[i]) * 1099511628211ull;
    return h;
}

/* Walk until verified: a walk counts only when the whole chain it read (thread state, cframe,
 * frames) came from one snapshot -- one process_vm_readv of all those pages, taken after the
 * previous walk showed where they are -- and every frame in it was live (3.8-3.10). A walk
 * that met a freed frame, left the snapshot (the stack grew) or found nothing consistent is
 * followed by a new snapshot of the chain it read, up to w->max_attempts walks; then the
 * thread is partial (j->rc -EAGAIN, reason in j->why) with the frames of the last walk.
 * Without snapshots (/proc/PID/mem fallback) two walks in a row must read the same chain; a
 * stand-in memory (tests, fuzzing) does not move, so its first clean walk counts. */
void sop__pywalk_with_retry(void *ctx, int tid)
{
    thread_job *j = ctx;
    walker *w = j->w;
    (void)tid;
    int attempts = w->max_attempts > 0 ? w->max_attempts : 1;
    if (w->mem.source && attempts > 2)
        attempts = 2; /* a stand-in memory does not move: a second walk would read the same */
    bool snapshot = false;
    uint64_t prev_hash = 0;
    j->retries = 0;
    for (int a = 0;; a++) {
        j->boot_frame = 0;
        j->rc = walk_thread(w, j->tstate, j->t, &j->boot_frame, &j->raw_tid, j->why, sizeof j->why);
        if (j->rc == -ESRCH || j->rc == -ENOMEM)
            return;
        if (j->rc == 0) {
            uint64_t h = chain_hash(w);
            if (j->stopped)
                return; /* a stopped thread's chain cannot change: one clean walk is exact */
            if (w->mem.source || (snapshot && w->chain_reads == 0) ||
                (w->mem.use_mem_fd && a > 0 && h == prev_hash))
                return; /* verified */
            prev_hash = h;
        } else {
            prev_hash = 0;
        }
        if (a + 1 >= attempts)
            break;
        j->retries++;
        snapshot = sop__rmem_snapshot(&w->mem, w->chain, w->chain_len, w->nchain) > 0;
        if (!snapshot)
            sop__rmem_flush(&w->mem);
    }
    if (j->rc == 0) {
        j->rc = -EAGAIN;
        snprintf(j->why, sizeof j->why, "stack changed during each of %d reads", attempts);
    }
}

/* Under --native: the thread is now stopped; read its frames afresh (not from pages cached
 * before the stop), so that they match the native stack being unwound. */
static void walk_stopped(void *ctx, int tid)
{
    thread_job *j = ctx;
    sop__rmem_flush(&j->w->mem);
    j->stopped = true;
    sop__pywalk_with_retry(ctx, tid);
    j->stopped = false;
}

void sop__python_free(sop_python *py)
{
    if (!py)
        return;
    for (size_t i = 0; i < py->nthreads; i++) {
        free(py->threads[i].frames);
        free(py->threads[i].native);
    }
    free(py->threads);
    for (size_t i = 0; i < py->nothers; i++)
        free(py->others[i].native);
    free(py->others);
    while (py->strings) {
        struct sop_pystrings *next = py->strings->next;
        free(py->strings);
        py->strings = next;
    }
    free(py);
}

/* Batch the first reads of every thread's walk (cframe, newest frame and the page below it,
 * its code object) into a few syscalls: the walk is pointer chasing, but across threads the
 * same step can be read at once. Purely a cache warm-up: the walk validates everything. */
static void prefetch_first_frames(walker *w, const uint64_t *tstates, size_t nts)
{
    const sop_pylayout *L = &w->L;
    uint64_t *a = calloc(2 * nts + 1, sizeof *a);
    if (!a)
        return;
    size_t k = 0;
    for (size_t i = 0; i < nts; i++) {
        uint64_t f = 0;
        if (sop__rmem_u64(&w->mem, tstates[i] + L->ts_frame, &f) == 0 && f)
            a[k++] = f;
    }
    if (L->frames == SOP_PYFRAME_CFRAME) {
        sop__rmem_prefetch(&w->mem, a, k, 16);
        size_t k2 = 0;
        for (size_t i = 0; i < k; i++) {
            uint64_t f = 0;
            if (sop__rmem_u64(&w->mem, a[i] + L->cf_current_frame, &f) == 0 && f)
                a[k2++] = f;
        }
        k = k2;
    }
    size_t nf = k;
    for (size_t i = 0; i < nf; i++) /* older frames sit below the newest (3.11+ data stack) */
        if (L->frames != SOP_PYFRAME_OBJECT && a[i] > 4096)
            a[k++] = a[i] - 4096;
    sop__rmem_prefetch(&w->mem, a, k, 128);
    size_t nc = 0;
    for (size_t i = 0; i < nf; i++) {
        uint64_t c = 0;
        uint32_t off = L->frames == SOP_PYFRAME_OBJECT ? L->fo_code : L->if_code;
        if (sop__rmem_u64(&w->mem, a[i] + off, &c) == 0 && (c = sop__pywalk_ref(L, c)) != 0)
            a[nc++] = c;
    }
    sop__rmem_prefetch(&w->mem, a, nc, L->co_read_size);
    free(a);
}

/* The thread states of every interpreter, newest first as the lists run, with the
 * interpreter each belongs to; each interpreter's GIL holder and id. */
typedef struct {
    uint64_t *ts;     /* MAX_THREADS */
    uint16_t *interp; /* per thread state: index into holders / ids */
    size_t n;
    uint64_t holders[MAX_INTERPS];
    int64_t ids[MAX_INTERPS];
    size_t ninterp;
    uint64_t last_interp; /* the main interpreter (the list's last) */
    sop_addr_set seen;
} tstate_list;

static void tstate_list_free(tstate_list *l)
{
    sop__addr_set_free(&l->seen);
    free(l->interp);
    sop__zfree(l->ts);
}

/* Walk the interpreters from interp and their thread-state lists (each bounded; a loop is a
 * torn read). 0, or -ESRCH / -ENOMEM (l freed by the caller). */
static int list_tstates(walker *w, uint64_t interp, tstate_list *l)
{
    const sop_pylayout *L = &w->L;
    l->ts = sop__zalloc(MAX_THREADS, sizeof *l->ts);
    l->interp = calloc(MAX_THREADS, sizeof *l->interp);
    if (sop__addr_set_init(&l->seen, THREAD_SET_SLOTS) < 0 || !l->ts || !l->interp)
        return -ENOMEM;
    int rc = 0;
    for (int ni = 0; interp && ni < MAX_INTERPS; ni++) {
        size_t k = l->ninterp++;
        l->holders[k] = sop__pywalk_gil_holder(w, interp);
        if (sop__rmem_read(&w->mem, interp + L->is_id, &l->ids[k], 8) < 0 || l->ids[k] < 0)
            l->ids[k] = -1;
        l->last_interp = interp;
        uint64_t ts = 0;
        if ((rc = sop__rmem_u64(&w->mem, interp + L->is_tstate_head, &ts)) < 0)
            break;
        while (ts && l->n < MAX_THREADS) {
            int added = sop__addr_set_add(&l->seen, ts);
            if (added < 0) {
                rc = -ENOMEM;
                break;
            }
            if (added == 0) {
                sop__missing_add(w->missing, "python", "thread list loops (torn read)");
                break;
            }
            l->interp[l->n] = (uint16_t)k;
            l->ts[l->n++] = ts;
            if ((rc = sop__rmem_u64(&w->mem, ts + L->ts_next, &ts)) < 0)
                break;
        }
        if (l->n >= MAX_THREADS)
            sop__missing_add(w->missing, "python", "more than %d threads; rest skipped",
                             MAX_THREADS);
        if (rc == -ESRCH || rc == -ENOMEM ||
            sop__rmem_u64(&w->mem, interp + L->is_next, &interp) < 0)
            break;
    }
    return rc == -ESRCH || rc == -ENOMEM ? rc : 0;
}

/* Thread i of the list (0: the oldest): its OS thread id (believed only when it is a task of
 * this process), interpreter, name, GIL and OS state. */
static void thread_identity(walker *w, unsigned flags, sop_python *py, sop_pythread *t,
                            const thread_job *j, const tstate_list *l, size_t i,
                            const tid_pair *nsmap, size_t nns)
{
    const sop_pylayout *L = &w->L;
    uint64_t tsa = j->tstate;
    if (j->raw_tid > 0 && j->raw_tid < INT32_MAX)
        t->tid = (int)j->raw_tid;
    if (!t->tid && t->thread_id && L->ts_native_thread_id == 0) {
        int32_t tid = 0;
        if (sop__rmem_read(&w->mem, t->thread_id + GLIBC_PTHREAD_TID_OFFSET, &tid, sizeof tid) ==
                0 &&
            tid > 0)
            t->tid = tid;
    }
    /* The target numbers its threads in its own PID namespace (a container): use ours. */
    if (nsmap && t->tid > 0) {
        int mapped = 0;
        for (size_t m = 0; m < nns; m++)
            if (nsmap[m].ns_tid == t->tid)
                mapped = nsmap[m].tid;
        t->tid = mapped;
    }
    /* A tid is only believed when it is a task of this process: a torn or stale value must
     * never send --native to some other process's thread. */
    if (t->tid > 0 && !sop__pywalk_task_exists(w, t->tid))
        t->tid = 0;
    /* The main interpreter is the last of the list (its id is 0 on every version). */
    size_t li = l->n - 1 - i;
    t->interp_id = l->ids[l->interp[li]];
    bool sub = tsa && l->interp[li] != l->ninterp - 1;
    if (sub && L->minor <= 12) {
        /* A borrowed thread state with no frame is run by no thread now: no scan. */
        t->tid = t->nframes ? sop__pywalk_tid_from_stacks(w, tsa, t->tid) : 0;
        t->tid_from_stack = true;
    }
    /* Names: threading.Thread._name of the `self` of threading's _bootstrap frame; the
     * process's first thread is the one CPython initialized in: "MainThread". A
     * subinterpreter's thread state takes the name of the main interpreter's thread state on
     * the same OS thread (listed before it: the threading thread that runs it). */
    uint64_t self = 0;
    if (j->boot_frame && sop__rmem_u64(&w->mem, j->boot_frame + L->frame_localsplus, &self) == 0 &&
        (self = sop__pywalk_ref(L, self)) != 0)
        (void)sop__py_instance_str_attr(&w->mem, L, self, "_name", t->name, sizeof t->name);
    for (size_t k = 0; sub && !t->name[0] && t->tid > 0 && k < py->nthreads; k++)
        if (py->threads[k].tid == t->tid && py->threads[k].interp_id == 0 &&
            !py->threads[k].name_from_comm)
            snprintf(t->name, sizeof t->name, "%s", py->threads[k].name);
    if (!t->name[0] && t->tid == w->pid)
        snprintf(t->name, sizeof t->name, "MainThread");
    if (!t->name[0] && t->tid > 0) { /* not a threading thread: the kernel's name */
        sop__pywalk_task_comm(w, t->tid, t->name, sizeof t->name);
        t->name_from_comm = t->name[0] != '\0';
    }
    for (size_t h = 0; h < l->ninterp; h++)
        if (l->holders[h] && l->holders[h] == tsa)
            t->gil = true;
    /* The OS state before --native interrupts the thread (the stop would read as activity
     * otherwise). */
    t->os_state =
        t->tid > 0 && !(flags & SOP_PY_SKIP_OS_STATE) ? sop__pywalk_task_state(w, t->tid) : '?';
}

/* --native: stop this thread only, re-read its Python frames while it is still, unwind, merge.
 * --exact (without --native): a stack that could not be verified while running is read
 * stopped. A refusal of ptrace is remembered (*refused) and not tried again. */
static void thread_stopped_reads(walker *w, unsigned flags, sop_pythread *t, thread_job *j,
                                 sop_native *nv, bool *refused)
{
    if (flags & SOP_PY_NATIVE) {
        if (!nv) {
            snprintf(t->native_error, sizeof t->native_error, "unwinder unavailable");
        } else if (*refused) {
            snprintf(t->native_error, sizeof t->native_error, "ptrace refused");
        } else if (t->tid > 0) {
            sop_nframe *nat = NULL;
            size_t nn = 0;
            char err[160] = "";
            int nr = sop__native_thread(nv, t->tid, walk_stopped, j, &nat, &nn, &t->pause_ms, err,
                                        sizeof err);
            if (nr == -EPERM || nr == -EACCES) {
                *refused = true;
                sop__missing_add(w->missing, "native", "ptrace refused: %s", err);
                snprintf(t->native_error, sizeof t->native_error, "ptrace refused: %.140s", err);
            } else if (nr < 0) {
                snprintf(t->native_error, sizeof t->native_error, "%s", err);
                sop__missing_add(w->missing, "native", "thread %d: %s", t->tid, err);
            } else {
                sop__native_merge(nat, nn, t->frames, t->nframes, &t->native, &t->nnative);
            }
            free(nat);
        } else {
            snprintf(t->native_error, sizeof t->native_error, "OS thread id unknown");
        }
    }
    if ((flags & SOP_PY_EXACT) && !(flags & SOP_PY_NATIVE) && j->rc == -EAGAIN && t->tid > 0 &&
        !*refused) {
        sop_nframe *nat = NULL;
        size_t nn = 0;
        char err[160] = "";
        int retries = j->retries;
        int nr = sop__native_thread(NULL, t->tid, walk_stopped, j, &nat, &nn, &t->pause_ms, err,
                                    sizeof err);
        j->retries += retries;
        free(nat);
        if (nr == 0) {
            t->stopped = true;
        } else {
            if (nr == -EPERM || nr == -EACCES)
                *refused = true;
            sop__missing_add(w->missing, "python", "thread %d: exact read refused: %s", t->tid,
                             err);
        }
    }
}

/* The walk's outcome on t: its re-reads, and a stack left partial (with why). */
static void thread_outcome(walker *w, sop_python *py, sop_pythread *t, thread_job *j)
{
    /* (under --native, j holds the walk made while the thread was stopped) */
    t->walk_retries = j->retries;
    py->walk_retries += j->retries;
    if (j->rc == 0 && py->finalizing && t->tid <= 0 && t->nframes) {
        /* At shutdown a daemon thread's OS thread exits when it next wants the GIL and leaves
         * its thread state (and frames) behind: not a running stack. */
        j->rc = -EAGAIN;
        snprintf(j->why, sizeof j->why,
                 "interpreter finalizing: no OS thread runs this thread state (a daemon "
                 "thread stopped at shutdown)");
    }
    if (j->rc == -EAGAIN) {
        t->partial = true;
        snprintf(t->partial_reason, sizeof t->partial_reason, "%s", j->why);
        py->threads_partial++;
        sop__missing_add(w->missing, "python", "thread %d: partial stack: %s", t->tid, j->why);
    }
}

/* Every thread of the list, oldest (the main thread) first: walked, named, native or exact
 * reads where asked. 0, or -ESRCH / -ENOMEM. */
static int walk_threads(walker *w, unsigned flags, sop_python *py, const tstate_list *l,
                        sop_native *nv, bool *refused)
{
    tid_pair *nsmap = NULL;
    size_t nns = 0;
    if (sop__pywalk_in_other_pidns(w) && (nsmap = calloc(MAX_THREADS, sizeof *nsmap)) != NULL)
        nns = sop__pywalk_ns_tid_map(w, nsmap, MAX_THREADS);
    int rc = 0;
    for (size_t k = 0; k < l->n; k++) {
        sop_pythread *t = &py->threads[py->nthreads];
        memset(t, 0, sizeof *t);
        thread_job j = {w, l->ts[l->n - 1 - k], t, 0, 0, 0, "", 0, false};
        sop__pywalk_with_retry(&j, 0);
        if (j.rc == -ESRCH || j.rc == -ENOMEM) {
            /* t is not counted in nthreads: free the frames a partial walk left in it */
            free(t->frames);
            t->frames = NULL;
            t->nframes = 0;
            rc = j.rc;
            break;
        }
        thread_identity(w, flags, py, t, &j, l, k, nsmap, nns);
        thread_stopped_reads(w, flags, t, &j, nv, refused);
        thread_outcome(w, py, t, &j);
        py->nthreads++;
    }
    free(nsmap);
    return rc;
}

static int collect(walker *w, unsigned flags, sop_python *py)
{
    const sop_pylayout *L = &w->L;
    int rc = w->runtime ? 0 : sop__pywalk_use_runtime(w, w->found, py); /* given when a fake */
    if (rc < 0)
        return rc;
    uint64_t interp;
    rc = sop__rmem_u64(&w->mem, w->runtime + L->rt_interp_head, &interp);
    if (rc < 0)
        return rc == -EFAULT ? -ENOEXEC : rc;
    if (!interp) {
        sop__missing_add(w->missing, "python", "no interpreter (not initialized or finalizing)");
        return 0;
    }
    uint64_t finalizing = 0;
    if (L->rt_finalizing &&
        sop__rmem_read(&w->mem, w->runtime + L->rt_finalizing, &finalizing, 8) == 0 && finalizing)
        py->finalizing = true;
    tstate_list l = {0};
    rc = list_tstates(w, interp, &l);
    if (rc == 0 && l.last_interp && !(flags & SOP_PY_SKIP_GC))
        sop__pywalk_read_gc(w, l.last_interp, py, !(flags & SOP_PY_SKIP_FROZEN));
    if (rc == 0 && !(py->threads = calloc(l.n ? l.n : 1, sizeof *py->threads)))
        rc = -ENOMEM;
    if (rc < 0) {
        tstate_list_free(&l);
        return rc;
    }
    prefetch_first_frames(w, l.ts, l.n);
    bool ptrace_refused = false;
    sop_native *nv = NULL;
    char nerr[256] = "out of memory";
    if ((flags & SOP_PY_NATIVE) &&
        sop__native_open(w->pid, w->proc_root, w->maps, &nv, nerr, sizeof nerr) < 0)
        sop__missing_add(w->missing, "native", "%s", nerr);
    rc = walk_threads(w, flags, py, &l, nv, &ptrace_refused);
    if (rc == 0 && (flags & SOP_PY_ALL_TASKS))
        collect_others(w, py, (flags & SOP_PY_NATIVE) ? nv : NULL, &ptrace_refused);
    sop__native_close(nv);
    tstate_list_free(&l);
    if (rc < 0)
        return rc;
    /* Activity from the OS state; a thread holding the GIL counts as active. */
    for (size_t i = 0; i < py->nthreads; i++) {
        sop_pythread *t = &py->threads[i];
        t->active = t->os_state == 'R' || t->gil;
        if (t->gil && t->tid > 0)
            py->gil_holder_tid = t->tid;
    }
    return 0;
}

/* The collection proper. With `fake` (fuzzing, tests) the layout and runtime address are
 * given and memory is read through fake->source: no maps, no ELF images. */
typedef struct {
    sop_rmem_source source;
    void *ctx;
    const sop_pylayout *L;
    uint64_t runtime;
} fake_target;

static int collect_at(int pid, const char *proc_root, unsigned flags, const fake_target *fake,
                      const sop_pyruntime *rt, const char *maps, sop_python **out,
                      sop_missing *missing)
{
    *out = NULL;
    walker w;
    memset(&w, 0, sizeof w);
    w.pid = pid;
    w.proc_root = proc_root ? proc_root : "/proc";
    w.missing = missing;
    char path[300];
    size_t len;
    int rc;
    if (!fake && maps && *maps) {
        w.maps = maps;
    } else if (!fake) {
        snprintf(path, sizeof path, "%s/%d/maps", w.proc_root, sop__live_task(w.proc_root, pid));
        rc = sop__read_file_at(AT_FDCWD, path, SOP_MAPS_MAX_BYTES, &w.maps_own, &len);
        w.maps = w.maps_own;
        if (rc < 0) {
            if (rc == -ENOENT)
                rc = -ESRCH;
            sop__missing_add(missing, "python", "%s: %s", path, sop__strerror(-rc));
            return rc;
        }
    }
    sop_python *py = calloc(1, sizeof *py);
    w.py = py;
    w.code_index = calloc(CODE_SLOTS, sizeof *w.code_index);
    int set_rc = sop__addr_set_init(&w.frame_set, FRAME_SET_SLOTS);
    w.chain = sop__zalloc(CHAIN_MAX, sizeof *w.chain);
    w.chain_len = sop__zalloc(CHAIN_MAX, sizeof *w.chain_len);
    w.max_attempts = DUMP_WALK_ATTEMPTS;
    if (!py || !w.code_index || set_rc < 0 || !w.chain || !w.chain_len ||
        sop__rmem_open(&w.mem, pid, w.proc_root) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    if (fake) {
        w.mem.source = fake->source;
        w.mem.source_ctx = fake->ctx;
        w.L = *fake->L;
        w.runtime = fake->runtime;
    }
    py->gil_holder_tid = SOP_NA;
    py->gc_enabled = py->gc_collecting = py->gc_frozen = SOP_NA;
    for (int g = 0; g < 3; g++)
        py->gc_threshold[g] = py->gc_count[g] = py->gc_collections[g] = SOP_NA;
    if (rt && sop__pyruntime_current(rt, pid, w.proc_root))
        w.found = rt;
    rc = collect(&w, flags, py);
    if (rc == -EFAULT || rc == -EAGAIN || rc == 0) {
        /* Reads that failed because the target exited count as "gone". */
        snprintf(path, sizeof path, "%s/%d", w.proc_root, pid);
        if (access(path, F_OK) < 0)
            rc = -ESRCH;
    }
    switch (rc) {
    case 0:
        break;
    case -ENOEXEC:
        sop__missing_add(missing, "python", "not a CPython process");
        break;
    case -ESRCH:
        sop__missing_add(missing, "python", "process %d exited during the read", pid);
        break;
    case -EPERM:
    case -EACCES:
        sop__missing_add(missing, "python", "memory of %d not readable: %s", pid,
                         sop__strerror(-rc));
        break;
    case -ENOTSUP:
        break; /* reason already added */
    default:
        sop__missing_add(missing, "python", "read failed: %s", sop__strerror(-rc));
    }
out:
    sop__pywalk_free_codes(&w);
    sop__addr_set_free(&w.frame_set);
    sop__zfree(w.chain);
    sop__zfree(w.chain_len);
    free(w.maps_own);
    sop__rmem_close(&w.mem);
    if (rc < 0) {
        sop__python_free(py);
        return rc;
    }
    *out = py;
    return 0;
}

int sop__python_collect(int pid, const char *proc_root, unsigned flags, sop_python **out,
                        sop_missing *missing)
{
    return collect_at(pid, proc_root, flags, NULL, NULL, NULL, out, missing);
}

int sop__python_collect_with(const sop_pyruntime *rt, int pid, const char *proc_root,
                             const char *maps, unsigned flags, sop_python **out,
                             sop_missing *missing)
{
    return collect_at(pid, proc_root, flags, NULL, rt, maps, out, missing);
}

int sop__python_collect_fake(sop_rmem_source source, void *ctx, int minor, uint64_t runtime,
                             unsigned flags, sop_python **out, sop_missing *missing)
{
    const sop_pylayout *L = sop__pylayout_table(minor);
    if (!L || !runtime) {
        *out = NULL;
        return -ENOTSUP;
    }
    fake_target fake = {source, ctx, L, runtime};
    /* pid 0 under an absent root: every /proc look-up (task states, tids) fails harmlessly. */
    return collect_at(0, "/nonexistent-sop-fake-root", flags & ~SOP_PY_NATIVE, &fake, NULL, NULL,
                      out, missing);
}
