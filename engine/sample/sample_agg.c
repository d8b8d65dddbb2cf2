/* sample_agg.c — the aggregation of a sampled window (sample_agg.h): each thread sample is
 * classified (state, data wait, checkpoint, §7 faults, §8 runtime marks, asyncio stretches)
 * and counted per thread, per stack and per (leaf, entry, caller) site; each is also held for
 * the tick's cross-thread view, which sample_agg_tick.c counts. Pure: no /proc, no clock (times
 * come in). Depends on sampler_runtime.c and libc. */
#include "sample_agg.h"

#include <stdlib.h>
#include <string.h>

#include "gpu_wait.h"
#include "sampler_runtime.h"
#include "zalloc.h"

static uint64_t fnv(const char *s, uint32_t seed)
{
    uint64_t h = 1469598103934665603ull ^ seed;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* ---- classification of one stack --------------------------------------------------- */

static bool asyncio_file(const char *f, const char *name)
{
    char suffix[64];
    snprintf(suffix, sizeof suffix, "asyncio/%s", name);
    return ends_with(f, suffix);
}

static bool loop_machinery(const sop_pyframe *f)
{
    return ends_with(f->file, "selectors.py") || strstr(f->file, "/asyncio/") != NULL ||
           strstr(f->file, "/uvloop/") != NULL || strncmp(f->file, "uvloop/", 7) == 0;
}

/* A frame of DataLoader's consumer side waiting for a batch, or any multiprocessing queue get. */
static bool data_wait_frame(const sop_pyframe *f)
{
    return strstr(f->func, "_try_get_data") || strstr(f->func, "_get_data") ||
           (ends_with(f->file, "multiprocessing/queues.py") && strstr(f->func, "get"));
}

/* Checkpoint-style IO: torch.save / torch.load, pickle's Python implementation, joblib dumps. */
static bool ckpt_frame(const sop_pyframe *f)
{
    return ends_with(f->file, "torch/serialization.py") || ends_with(f->file, "/pickle.py") ||
           ends_with(f->file, "joblib/numpy_pickle.py") ||
           (ends_with(f->file, "safetensors/torch.py") &&
            (strstr(f->func, "save") || strstr(f->func, "load")));
}

/* A frame of the distributed package: torch.distributed (collectives, c10d, DDP comm hooks,
 * FSDP, RPC), torch.nn.parallel (DDP), DeepSpeed's comm layer. By package, not by function. */
static bool dist_frame(const sop_pyframe *f)
{
    const char *file = f->file ? f->file : "";
    return strstr(file, "/torch/distributed/") || strncmp(file, "torch/distributed/", 18) == 0 ||
           strstr(file, "/torch/nn/parallel/") || strstr(file, "/deepspeed/comm/");
}

static bool library_file(const char *f);

/* The collective a sample waits in: the innermost distributed-package frame, when nothing but
 * library plumbing runs inside it (DDP's forward calling the user's model is compute, not a
 * wait: the model's frames, or torch.nn.modules, are inside it). NULL: not in one. */
static const sop_pyframe *coll_frame(const sop_pysample *p)
{
    for (size_t i = 0; i < p->nframes && i < 64; i++) {
        const sop_pyframe *f = &p->frames[i];
        if (dist_frame(f))
            return f;
        if (!f->file || !library_file(f->file) || strstr(f->file, "/torch/nn/modules/"))
            return NULL;
    }
    return NULL;
}

static void end_coll(sop_agg_thread *t, double end_ms)
{
    if (!t->coll_in)
        return;
    if (end_ms - t->coll_t0_ms > t->coll_longest_ms)
        t->coll_longest_ms = end_ms - t->coll_t0_ms;
    t->coll_in = false;
}

static void count_site(sop_agg *a, int ti, int kind, const char *frame);
static void count_site_cap(sop_agg *a, int ti, int kind, const char *frame, size_t cap);

/* Collective wait: the sample's collective (its stretch: consecutive samples in the same one),
 * else the innermost frame of the program's own code. */
static void coll_sample(sop_agg *a, int ti, const sop_pysample *p, double now_ms)
{
    sop_agg_thread *t = &a->thrs[ti];
    const sop_pyframe *c = coll_frame(p);
    if (c) {
        const char *fn = c->func ? c->func : "?";
        t->coll++;
        if (t->coll_in && strcmp(t->coll_cur, fn) != 0)
            end_coll(t, now_ms);
        if (!t->coll_in) {
            t->coll_in = true;
            t->coll_t0_ms = now_ms;
            snprintf(t->coll_cur, sizeof t->coll_cur, "%s", fn);
        }
        count_site(a, ti, SOP_AGG_SITE_COLL, fn);
        return;
    }
    end_coll(t, now_ms);
    for (size_t i = 0; i < p->nframes && i < 256; i++) {
        const sop_pyframe *f = &p->frames[i];
        if (!f->file || library_file(f->file))
            continue;
        t->own++;
        char key[384];
        snprintf(key, sizeof key, "%s (%s:%d)", f->func ? f->func : "?", f->file, f->line);
        count_site_cap(a, ti, SOP_AGG_SITE_OWN, key,
                       SOP_AGG_SITES_MAX * 3 / 4); /* room for the rest */
        break;
    }
}

static void end_stretch(sop_agg_thread *t, double end_ms)
{
    if (!t->in_stretch)
        return;
    double ms = end_ms - t->stretch_t0_ms;
    if (ms > t->longest_ms) {
        t->longest_ms = ms;
        int best = -1;
        for (int i = 0; i < t->ncur; i++)
            if (best < 0 || t->cur[i].count > t->cur[best].count)
                best = i;
        snprintf(t->longest_frame, sizeof t->longest_frame, "%s",
                 best >= 0 ? t->cur[best].frame : "?");
        memcpy(t->longest_stack, t->stretch_stack, sizeof t->longest_stack);
    }
    t->in_stretch = false;
    t->ncur = 0;
}

/* The asyncio part: a stretch is consecutive samples where the loop thread is inside one
 * callback (not back in the selector, not between callbacks, not in another callback); its
 * frame is the innermost non-loop frame most seen in it. True when the sample is inside a
 * callback (t->stretch_cb names it, "" when it is all asyncio's own). */
static bool loop_sample(sop_agg_thread *t, const sop_pysample *p, double now_ms)
{
    int dispatch = -1;
    bool loop = false, selector = false;
    uint64_t turn = 0; /* which turn of the loop (_run_once's sop_pyframe.obj); 0: unread */
    for (size_t i = 0; i < p->nframes; i++) {
        const sop_pyframe *f = &p->frames[i];
        if (!t->runs_asyncio && f->file &&
            (strstr(f->file, "/asyncio/") || strstr(f->file, "/uvloop/")))
            t->runs_asyncio = true;
        if (dispatch < 0 && asyncio_file(f->file, "events.py") &&
            (strcmp(f->func, "Handle._run") == 0 || strcmp(f->func, "_run") == 0))
            dispatch = (int)i;
        if (asyncio_file(f->file, "base_events.py") &&
            (strstr(f->func, "run_forever") || strstr(f->func, "_run_once"))) {
            loop = true;
            if (!turn && strstr(f->func, "_run_once"))
                turn = f->obj;
        }
        if (ends_with(f->file, "selectors.py"))
            selector = true;
    }
    if (!loop) {
        end_stretch(t, now_ms);
        return false;
    }
    t->is_loop = true;
    if (selector) {
        end_stretch(t, now_ms);
        return false;
    }
    /* Between callbacks (in _run_once, not inside Handle._run): the loop came back. */
    if (dispatch < 0) {
        end_stretch(t, now_ms);
        return false;
    }
    /* Which callback: its outermost frame outside the loop machinery (a coroutine of a Task,
     * a protocol method); "" when it is all asyncio's own; and the Handle the loop runs it
     * from. Another callback than the one the stretch started in means the loop went round in
     * between (a busy loop running many short callbacks is not blocked): the stretch ends
     * there and a new one starts. One coroutine resumed at each of its awaits (a keep-alive
     * connection's handler) has the same name every time, but each resumption is run from
     * a new Handle; and as a new Handle may be given the address of the one before, the
     * turn of the loop tells them apart too (one turn's Handles are all alive at once). */
    char cb[256] = "";
    for (int i = dispatch - 1; i >= 0; i--)
        if (!loop_machinery(&p->frames[i])) {
            snprintf(cb, sizeof cb, "%s (%s)", p->frames[i].func, p->frames[i].file);
            break;
        }
    uint64_t handle = p->frames[dispatch].obj;
    if (t->in_stretch &&
        (strcmp(cb, t->stretch_cb) != 0 || handle != t->stretch_obj || turn != t->stretch_turn))
        end_stretch(t, now_ms);
    if (!t->in_stretch) {
        t->in_stretch = true;
        t->stretch_t0_ms = now_ms;
        t->ncur = 0;
        snprintf(t->stretch_cb, sizeof t->stretch_cb, "%s", cb);
        t->stretch_obj = handle;
        t->stretch_turn = turn;
    }
    t->stretch_last_ms = now_ms;
    const sop_pyframe *user = NULL;
    for (int i = 0; i < dispatch && !user; i++)
        if (!loop_machinery(&p->frames[i]))
            user = &p->frames[i];
    if (!user)
        user = &p->frames[0];
    char key[384];
    snprintf(key, sizeof key, "%s (%s:%d)", user->func, user->file, user->line);
    int at = -1, best = 0;
    for (int i = 0; i < t->ncur; i++) {
        if (strcmp(t->cur[i].frame, key) == 0)
            at = i;
        if (t->cur[i].count > best)
            best = (int)t->cur[i].count;
    }
    if (at >= 0) {
        t->cur[at].count++;
    } else if (t->ncur < SOP_AGG_LOOP_CAND) {
        at = t->ncur++;
        snprintf(t->cur[at].frame, sizeof t->cur[at].frame, "%s", key);
        t->cur[at].count = 1;
    }
    if (at >= 0 && t->cur[at].count >= best) { /* keep a stack of the most seen frame */
        size_t n = 0;
        t->stretch_stack[0] = '\0';
        for (int i = 0; i < dispatch; i++) {
            const sop_pyframe *f = &p->frames[i];
            int w = snprintf(t->stretch_stack + n, sizeof t->stretch_stack - n, "%s\t%s\t%d\n",
                             f->func, f->file, f->line);
            if (w < 0 || (size_t)w >= sizeof t->stretch_stack - n) {
                t->stretch_stack[n] = '\0'; /* no cut frame: the outer ones are left out */
                break;
            }
            n += (size_t)w;
        }
    }
    return true;
}

/* Append src to the stack text, ';' kept as the separator only. */
static size_t put_name(char *dst, size_t at, size_t cap, const char *src)
{
    for (; *src && at + 1 < cap; src++)
        dst[at++] = *src == ';' ? ':' : (*src == '\n' ? ' ' : *src);
    dst[at] = '\0';
    return at;
}

static void count_stack(sop_agg *a, int ti, const sop_pysample *p, sop_sample_state st)
{
    char *b = a->buf;
    size_t cap = sizeof a->buf, at = 0;
    b[0] = '\0';
    /* A stack that changed during every read of the tick is not one stack: its frames are
     * counted as such, never as a (torn) stack of their own. */
    size_t nframes = p->torn ? 0 : p->nframes;
    if (p->torn)
        at = put_name(b, at, cap, "(stack changed while read)");
    else if (p->nframes == 0)
        at = put_name(b, at, cap, "(no Python frame)");
    for (size_t k = nframes; k-- > 0;) { /* root (outermost) first */
        const sop_pyframe *f = &p->frames[k];
        if (at && at + 1 < cap) {
            b[at++] = ';';
            b[at] = '\0';
        }
        at = put_name(b, at, cap, f->func);
        at = put_name(b, at, cap, " (");
        at = put_name(b, at, cap, base_name(f->file));
        at = put_name(b, at, cap, ")");
    }
    uint64_t h = fnv(b, (uint32_t)ti);
    size_t i = h & (SOP_AGG_STACK_SLOTS - 1);
    for (size_t n = 0; n < SOP_AGG_STACK_SLOTS; n++, i = (i + 1) & (SOP_AGG_STACK_SLOTS - 1)) {
        sop_agg_stack *e = &a->stacks[i];
        if (!e->stack) {
            if (a->nstacks >= SOP_AGG_STACK_SLOTS / 2)
                break;
            e->stack = strdup(b);
            if (!e->stack)
                break;
            e->hash = h;
            e->thr = (uint32_t)ti;
            e->count = 1;
            e->by_state[st] = 1;
            a->stack_used[a->nstacks++] = (uint32_t)i;
            return;
        }
        if (e->hash == h && e->thr == (uint32_t)ti && strcmp(e->stack, b) == 0) {
            e->count++;
            e->by_state[st]++;
            return;
        }
    }
    a->other++;
}

/* Count frame for (ti, kind); a new entry only while fewer than `cap` sites are taken. */
static void count_site_cap(sop_agg *a, int ti, int kind, const char *frame, size_t cap)
{
    for (size_t i = 0; i < a->nsites; i++) {
        sop_agg_site *e = &a->sites[i];
        if (e->thr == (uint32_t)ti && e->kind == kind && strcmp(e->frame, frame) == 0) {
            e->count++;
            return;
        }
    }
    if (!a->sites || a->nsites >= cap || a->nsites >= SOP_AGG_SITES_MAX)
        return;
    sop_agg_site *e = &a->sites[a->nsites++];
    e->thr = (uint32_t)ti;
    e->kind = kind;
    snprintf(e->frame, sizeof e->frame, "%s", frame);
    e->count = 1;
}

static void count_site(sop_agg *a, int ti, int kind, const char *frame)
{
    count_site_cap(a, ti, kind, frame, SOP_AGG_SITES_MAX);
}

/* §8: imports, logging, subprocess launching (engine/sample/sampler_runtime.c). */
static void runtime_sample(sop_agg *a, int ti, const sop_pysample *p)
{
    sop_agg_thread *t = &a->thrs[ti];
    sop_runtime_marks m;
    sop__runtime_marks(p->frames, p->nframes, &m);
    t->import += m.import;
    t->logging += m.logging;
    t->log_format += m.log_format;
    t->log_write += m.log_write;
    t->subprocess += m.subprocess;
    t->spawn += m.spawn;
    if (m.import_top)
        count_site(a, ti, SOP_AGG_SITE_IMPORT, m.import_top);
    if (m.log_site) {
        char key[384];
        snprintf(key, sizeof key, "%s (%s:%d)", m.log_site->func, m.log_site->file,
                 m.log_site->line);
        count_site(a, ti, SOP_AGG_SITE_LOG, key);
    }
}

/* Library code: the standard library, installed packages, and code with a pseudo file name
 * ("<frozen ...>", numpy's "<__array_function__ internals>"). The rest is the program's own. */
static bool library_file(const char *f)
{
    return f[0] == '<' || strstr(f, "/site-packages/") || strstr(f, "/dist-packages/") ||
           strstr(f, "/lib/python3") || strstr(f, "/lib64/python3");
}

/* §7 mapped files: a sample whose thread is in D state, or took major faults since its
 * previous sample, waits on storage; it is charged to the innermost frame of the program's
 * own code (the line that touched the mapping), else the innermost frame. */
static void fault_sample(sop_agg *a, int ti, const sop_pysample *p)
{
    sop_agg_thread *t = &a->thrs[ti];
    bool faulted = false;
    if (p->majflt != SOP_NA) {
        faulted = t->last_majflt != SOP_NA && p->majflt > t->last_majflt;
        t->last_majflt = p->majflt;
    }
    if (faulted)
        t->majflt_smp++;
    if (!faulted && p->state != 'D')
        return;
    t->fault_wait++;
    const sop_pyframe *f = NULL;
    for (size_t i = 0; i < p->nframes && i < 256 && !f; i++)
        if (p->frames[i].file && !library_file(p->frames[i].file))
            f = &p->frames[i];
    if (!f && p->nframes > 0)
        f = &p->frames[0];
    if (!f || !f->func || !f->file)
        return;
    char key[384];
    snprintf(key, sizeof key, "%s (%s:%d)", f->func, f->file, f->line);
    count_site(a, ti, SOP_AGG_SITE_FAULT, key);
}

static bool site_eq(const sop_agg_frame *fr, const sop_pyframe *f)
{
    if (!f)
        return fr->func == NULL;
    return fr->func && fr->line == f->line && strcmp(fr->func, f->func) == 0 &&
           strcmp(fr->file, f->file) == 0;
}

static bool site_set(sop_agg_frame *fr, const sop_pyframe *f)
{
    if (!f)
        return true;
    fr->func = strdup(f->func);
    fr->file = strdup(f->file);
    fr->line = f->line;
    return fr->func && fr->file;
}

static void site_free(sop_agg_frame *fr)
{
    free(fr->func);
    free(fr->file);
}

static uint64_t hash_frame(uint64_t h, const sop_pyframe *f)
{
    if (!f)
        return h * 31u + 7u;
    h = fnv(f->func, (uint32_t)h) ^ (fnv(f->file, (uint32_t)(h >> 32)) * 3u);
    return h * 1099511628211ull + (uint64_t)(unsigned)f->line;
}

/* Minor faults the thread took since its previous sample (0 for its first or unread). */
static int64_t fresh_pages(sop_agg_thread *t, const sop_pysample *p)
{
    int64_t d = 0;
    if (p->minflt != SOP_NA) {
        if (t->last_minflt != SOP_NA && p->minflt > t->last_minflt)
            d = p->minflt - t->last_minflt;
        t->last_minflt = p->minflt;
    }
    t->fresh_pages += d;
    if (d >= SOP_AGG_FRESH_PAGES)
        t->fresh_smp++;
    return d;
}

static void count_leaf(sop_agg *a, int ti, const sop_pysample *p, bool active, int64_t pages)
{
    long fresh = pages >= SOP_AGG_FRESH_PAGES;
    if (p->nframes == 0)
        return;
    const sop_pyframe *leaf = &p->frames[0], *caller = NULL, *entry = NULL;
    for (size_t i = 0; i < p->nframes; i++)
        if (!library_file(p->frames[i].file)) {
            caller = &p->frames[i];
            entry = i > 0 ? &p->frames[i - 1] : NULL;
            break;
        }
    uint64_t h = hash_frame(hash_frame(hash_frame((uint64_t)ti + 1, leaf), entry), caller);
    h = h ? h : 1;
    size_t i = h & (SOP_AGG_LEAF_SLOTS - 1);
    for (size_t n = 0; n < SOP_AGG_LEAF_SLOTS; n++, i = (i + 1) & (SOP_AGG_LEAF_SLOTS - 1)) {
        sop_agg_leaf *e = &a->leaves[i];
        if (!e->hash) {
            if (a->nleaves >= SOP_AGG_LEAF_SLOTS / 2)
                return;
            if (!site_set(&e->leaf, leaf) || !site_set(&e->entry, entry) ||
                !site_set(&e->caller, caller)) {
                site_free(&e->leaf), site_free(&e->entry), site_free(&e->caller);
                memset(e, 0, sizeof *e);
                return;
            }
            e->hash = h;
            e->thr = (uint32_t)ti;
            e->count = 1;
            e->active = active;
            e->fresh = fresh;
            e->fresh_pages = pages;
            a->leaf_used[a->nleaves++] = (uint32_t)i;
            return;
        }
        if (e->hash == h && e->thr == (uint32_t)ti && site_eq(&e->leaf, leaf) &&
            site_eq(&e->entry, entry) && site_eq(&e->caller, caller)) {
            e->count++;
            e->active += active;
            e->fresh += fresh;
            e->fresh_pages += pages;
            return;
        }
    }
}

/* ---- GPU waits ------------------------------------------------------------------------ */

/* Does line `line` of `file` (process proc) wait for the device? Answers are kept per (process,
 * file, line): each line is read once per window. */
static bool sync_line(sop_agg *a, int proc, const sop_pyframe *f)
{
    if (!a->line_fn || !f->file || f->line <= 0)
        return false;
    if (!a->lines) {
        a->lines = calloc(SOP_AGG_LINE_SLOTS, sizeof *a->lines);
        if (!a->lines)
            return false;
    }
    uint64_t key = fnv(f->file, (uint32_t)proc) * 1099511628211ull + (uint64_t)(unsigned)f->line;
    key = key ? key : 1;
    size_t i = key & (SOP_AGG_LINE_SLOTS - 1);
    for (size_t n = 0; n < SOP_AGG_LINE_SLOTS; n++, i = (i + 1) & (SOP_AGG_LINE_SLOTS - 1)) {
        sop_agg_line *e = &a->lines[i];
        if (e->key == key)
            return e->sync;
        if (!e->key) {
            char text[512];
            bool sync = a->line_fn(a->line_ctx, proc, f->file, f->line, text, sizeof text) == 0 &&
                        sop__gpu_sync_line(text);
            if (a->nlines < SOP_AGG_LINE_SLOTS / 2) {
                e->key = key;
                e->sync = sync;
                a->nlines++;
            }
            return sync;
        }
    }
    return false;
}

/* A sample of a GPU-using process is a GPU wait when the thread runs without the GIL (not
 * waiting for it, not in D state, not waiting for a batch) and either sleeps in a syscall on a
 * GPU device fd (inside the driver), or its innermost frame is a line that waits for the
 * device (a copy to the host, a synchronize) while it runs (the spin wait: R, no syscall) or
 * sleeps in a syscall such a wait uses. See docs/gpu-wait.md for what stays uncertain. */
static bool gpu_wait_sample(sop_agg *a, int proc, const sop_pysample *p, bool data_wait)
{
    if (proc < 0 || proc >= SOP_SAMPLER_MAX_PROCS || !a->proc_gpu[proc])
        return false;
    if (p->gil || p->gil_wait || p->state == 'D' || data_wait)
        return false;
    if (p->gpu_fd)
        return true;
    if (p->nframes == 0)
        return false;
    if (p->state != 'R' && !sop__gpu_wait_syscall(p->syscall_nr))
        return false;
    return sync_line(a, proc, &p->frames[0]);
}

/* The GPU wait's site: the innermost frame of the program's own code (the line that asked for
 * the value or the synchronisation), else the innermost frame. */
static void gpu_site(sop_agg *a, int ti, const sop_pysample *p)
{
    const sop_pyframe *f = NULL;
    for (size_t i = 0; i < p->nframes && i < 256 && !f; i++)
        if (p->frames[i].file && !library_file(p->frames[i].file))
            f = &p->frames[i];
    if (!f && p->nframes > 0)
        f = &p->frames[0];
    if (!f || !f->func || !f->file)
        return;
    char key[384];
    snprintf(key, sizeof key, "%s (%s:%d)", f->func, f->file, f->line);
    count_site(a, ti, SOP_AGG_SITE_GPU, key);
}

void sop__agg_gpu_proc(sop_agg *a, int proc, bool uses_gpu)
{
    if (proc >= 0 && proc < SOP_SAMPLER_MAX_PROCS)
        a->proc_gpu[proc] = uses_gpu;
}

void sop__agg_line_reader(sop_agg *a, sop_agg_line_fn fn, void *ctx)
{
    a->line_fn = fn;
    a->line_ctx = ctx;
}

/* ---- the tick's cross-thread view (counted in sample_agg_tick.c) ---------------------- */

static uint64_t hash_func(const sop_pyframe *f)
{
    return fnv(f->func ? f->func : "", (uint32_t)fnv(f->file ? f->file : "", 17));
}

static void frame_txt(char *out, size_t cap, const sop_pyframe *f)
{
    snprintf(out, cap, "%s (%s:%d)", f->func ? f->func : "?", f->file ? f->file : "?", f->line);
}

/* Hold thread ti's sample of the current tick for sop__agg_tick. */
static void tick_note(sop_agg *a, int ti, const sop_pysample *p, bool waits)
{
    if (!a->tick || a->ntick >= SOP_AGG_TICK_THREADS)
        return;
    sop_agg_tick_thr *e = &a->tick[a->ntick++];
    e->thr = (uint32_t)ti;
    e->gil = p->gil;
    e->gil_wait = p->gil_wait;
    e->run = p->state == 'R';
    e->waits = waits;
    e->addr = waits ? p->futex_addr : 0;
    e->site = e->site_func = 0;
    e->nfuncs = 0;
    e->site_txt[0] = e->leaf_txt[0] = '\0';
    if (p->nframes > 0)
        frame_txt(e->leaf_txt, sizeof e->leaf_txt, &p->frames[0]);
    for (size_t i = 0; i < p->nframes && i < 256; i++) {
        const sop_pyframe *f = &p->frames[i];
        if (e->nfuncs < SOP_AGG_TICK_FUNCS)
            e->funcs[e->nfuncs++] = hash_func(f);
        if (!e->site && f->file && !library_file(f->file)) {
            e->site = hash_func(f) * 1099511628211ull + (uint64_t)(unsigned)f->line;
            e->site = e->site ? e->site : 1;
            e->site_func = hash_func(f);
            frame_txt(e->site_txt, sizeof e->site_txt, f);
        }
    }
}

/* ---- samples, the window (its threads: sample_agg_threads.c; queries: sample_agg_query.c) */

void sop__agg_free(sop_agg *a)
{
    if (!a)
        return;
    for (size_t k = 0; a->stacks && a->stack_used && k < a->nstacks; k++)
        free(a->stacks[a->stack_used[k]].stack);
    sop__zfree(a->stacks);
    sop__zfree(a->sites);
    for (size_t k = 0; a->leaves && a->leaf_used && k < a->nleaves; k++) {
        sop_agg_leaf *e = &a->leaves[a->leaf_used[k]];
        site_free(&e->leaf);
        site_free(&e->entry);
        site_free(&e->caller);
    }
    sop__zfree(a->leaves);
    sop__zfree(a->stack_used);
    sop__zfree(a->leaf_used);
    sop__agg_by_thread_free(a->by_thr);
    sop__zfree(a->tick);
    sop__zfree(a->locks);
    sop__zfree(a->thrs);
    free(a->timeline);
    for (size_t i = 0; i < a->ntask_names; i++)
        free(a->task_names[i]);
    free(a->lines);
    free(a);
}

/* 1 + the index of the callback's coroutine in the timeline's names ("func (file)" from the
 * stretch's "func (path)"), interned; the last slot stands for every later one ("other"). */
static uint8_t task_index(sop_agg *a, const char *cb)
{
    char name[160];
    const char *open = strrchr(cb, '(');
    if (open) {
        const char *path = open + 1, *slash = strrchr(path, '/');
        int n = (int)(open - cb) < 96 ? (int)(open - cb) : 96;
        snprintf(name, sizeof name, "%.*s(%.60s", n, cb, slash ? slash + 1 : path);
    } else {
        snprintf(name, sizeof name, "%.150s", cb);
    }
    for (size_t i = 0; i < a->ntask_names; i++)
        if (strcmp(a->task_names[i], name) == 0)
            return (uint8_t)(i + 1);
    if (a->ntask_names + 1 >= SOP_AGG_TASK_NAMES) {
        if (a->ntask_names + 1 == SOP_AGG_TASK_NAMES &&
            (a->task_names[a->ntask_names] = strdup("(other coroutines)")))
            a->ntask_names++;
        return (uint8_t)a->ntask_names;
    }
    if (!(a->task_names[a->ntask_names] = strdup(name)))
        return 0;
    return (uint8_t)++a->ntask_names;
}

void sop__agg_recheck(sop_agg *a, int ti, bool held_gil, bool holds_gil)
{
    if (ti < 0 || (size_t)ti >= a->nthrs)
        return;
    sop_agg_thread *t = &a->thrs[ti];
    if (held_gil) {
        t->held_rechecks++;
        t->held_kept += holds_gil;
    } else {
        t->rechecks++;
        t->recheck_gil += holds_gil;
    }
}

void sop__agg_sample(sop_agg *a, int ti, const sop_pysample *p, double now_ms)
{
    if (ti < 0 || (size_t)ti >= a->nthrs)
        return;
    sop_agg_thread *t = &a->thrs[ti];
    t->n++;
    a->thread_samples++;
    if (t->proc >= 0 && t->proc < SOP_SAMPLER_MAX_PROCS)
        a->proc_samples[t->proc]++;
    bool run = p->state == 'R';
    if (run || p->gil)
        t->active++;
    if (p->gil)
        t->gil++;
    if ((run && !p->gil) || p->gil_wait)
        t->runnable_nogil++;
    if (p->gil_wait)
        t->gil_wait++;
    bool waits = p->futex_wait && !p->gil && !p->gil_wait && !run;
    if (waits)
        t->futex_wait++;
    if (!run && !p->gil && p->wait > SOP_WC_NONE && p->wait < SOP_WC_N)
        t->waits[p->wait]++;
    if (p->gil || p->gil_wait)
        t->wanted_gil = true;
    int cur = p->gil ? 1 : run && !p->gil_wait ? 2 : 0;
    if (cur && t->prev_st) {
        bool ran = p->cpu_ticks == SOP_NA || t->prev_cpu == SOP_NA || p->cpu_ticks > t->prev_cpu;
        if (ran) {
            t->alt_pairs++;
            t->alts += cur != t->prev_st;
        }
    }
    t->prev_st = cur;
    t->prev_cpu = p->cpu_ticks;
    if (t->proc == 0)
        tick_note(a, ti, p, waits);
    if (run)
        t->state_r++;
    else if (p->state == 'D')
        t->state_d++;
    else if (p->state == 'S')
        t->state_s++;
    if (p->nframes == 0)
        t->no_frames++;
    if (p->torn) {
        t->torn++;
        a->samples_partial++;
    }
    a->walk_retries += p->retries;
    bool data_wait = false;
    for (size_t i = 0; i < p->nframes && i < 64; i++)
        if (data_wait_frame(&p->frames[i])) {
            t->data_wait++;
            data_wait = true;
            break;
        }
    bool gpu = gpu_wait_sample(a, t->proc, p, data_wait);
    if (gpu) {
        t->gpu_wait++;
        gpu_site(a, ti, p);
    }
    sop_sample_state st = p->gil            ? SOP_ST_GIL
                          : p->gil_wait     ? SOP_ST_GIL_WAIT
                          : p->state == 'D' ? SOP_ST_DISK
                          : data_wait       ? SOP_ST_BATCH
                          : gpu             ? SOP_ST_GPU
                          : run             ? SOP_ST_NATIVE
                                            : SOP_ST_IDLE;
    bool kept = false;
    if (a->keep_timeline) {
        if (a->ntimeline == a->timeline_cap && a->timeline_cap < SOP_AGG_TIMELINE_MAX) {
            size_t cap = a->timeline_cap ? a->timeline_cap * 2 : 4096;
            sop_timeline_ev *g = realloc(a->timeline, cap * sizeof *g);
            if (g) {
                a->timeline = g;
                a->timeline_cap = cap;
            }
        }
        if (a->ntimeline < a->timeline_cap) {
            a->timeline[a->ntimeline++] =
                (sop_timeline_ev){(float)(now_ms - a->t0_ms), (uint16_t)ti, (uint8_t)st, 0};
            kept = true;
        }
    }
    for (size_t i = 0; i < p->nframes && i < 256; i++)
        if (ckpt_frame(&p->frames[i])) {
            t->ckpt++;
            break;
        }
    runtime_sample(a, ti, p);
    fault_sample(a, ti, p);
    if (loop_sample(t, p, now_ms) && kept && t->stretch_cb[0])
        a->timeline[a->ntimeline - 1].task = task_index(a, t->stretch_cb);
    coll_sample(a, ti, p, now_ms);
    count_stack(a, ti, p, st);
    count_leaf(a, ti, p, run || p->gil, fresh_pages(t, p));
}

void sop__agg_finish(sop_agg *a, double end_ms)
{
    for (size_t i = 0; i < a->nthrs; i++) {
        end_stretch(&a->thrs[i], end_ms);
        end_coll(&a->thrs[i], end_ms);
    }
    if (a->gc_in_stretch && end_ms - a->gc_stretch_t0_ms > a->gc_longest_ms)
        a->gc_longest_ms = end_ms - a->gc_stretch_t0_ms; /* still collecting at the window's end */
}
