/* window.c — the evidence of one sampled window (window.h): ev.sampling, ev.io_files, and in
 * ev.python each thread's window (shares, top stacks, the exact distribution, hot leaves and
 * entries), the GC window, the longest asyncio loop stretch, the workers and the loader. Reads
 * the aggregation (engine/sample/sample_agg.h) through its queries; the one file read here is a hot
 * frame's source line (engine/sample/source_line.c). The keys of ev.sampling and ev.io_files are
 * the tables sop__evk_sampling and sop__evk_io_files below (docs/evidence.md is generated from
 * them); those under ev.python are rows of sop__evk_python (engine/bridge/python.c), walked
 * here with the figures of window.h as plain rows; sites, lists (top stacks, dist, leaves,
 * entries), a worker's io and env are rows with their own writers, defined here: static for
 * this file's tables, sop__win_* (window.h) for python.c's. Two one-row hand callbacks are left
 * (a top stack's text, a leaf's sites): no name is compared to choose what to write.
 * Depends on value.h, bridge.h, schema.h. */
#include "window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "bridge.h"
#include "schema.h"
#include "source_line.h"

#define TOP_STACKS 5
#define TOP_LEAVES 8               /* per thread in the evidence */
#define SOURCE_READS_MAX 256       /* source lines read per window (hot leaves and callers) */
#define SOURCE_MAX_BYTES (8 << 20) /* a .py file larger than this is not read */

/* ev.sampling's figures: the loop's counts as the table's plain rows read them. */
typedef struct {
    double rate_hz;
    int64_t samples, missed, thread_samples, samples_partial, walk_retries;
    double self_cpu_ms, window_s;
    int64_t processes;
} sampling_figs;

/* The writers of the rows of ev.sampling and ev.io_files that are not plain fields (defined
 * below the tables): sampling's get the sop_window as ctx, io_files[]' the open file as base and
 * a file_ctx. */
static void w_anon_trace_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_anon_trace_s(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_pid(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_fd(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_path(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_advance(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_mount(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_fs_kind(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_source(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_disk_util_pct(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_disk_r_await_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_file_disk_read_kb_per_s(sop_value *o, const char *name, const void *base, void *ctx);

#define D(k, f, u, d) SOP_EVK_D(k, sampling_figs, f, u, d)
#define I(k, f, u, d) SOP_EVK_I(k, sampling_figs, f, u, d)
const sop_evk sop__evk_sampling[] = {
    D("rate_hz", rate_hz, "Hz", "ticks per second asked for (--rate)"),
    I("samples", samples, "", "ticks taken"),
    I("missed", missed, "", "ticks skipped because a tick overran (or failed)"),
    I("thread_samples", thread_samples, "", "one per thread per tick"),
    I("samples_partial", samples_partial, "",
      "of those, stacks not verified complete within 48 snapshot re-reads"),
    I("walk_retries", walk_retries, "", "those re-reads"),
    D("self_cpu_ms", self_cpu_ms, "ms", "sopctl's CPU time in the sampling loop"),
    D("window_s", window_s, "s", "the sampled window"),
    I("processes", processes, "", "processes sampled: the target and its CPython workers"),
    SOP_EVK_W("anon_trace_kb", SOP_EVK_ARR, w_anon_trace_kb, "kB",
              "[13]: the target's anonymous memory (statm resident - shared) at 13 evenly spaced "
              "times over the window, first to last reading: the note below"),
    SOP_EVK_W("anon_trace_s", SOP_EVK_NUM, w_anon_trace_s, "s",
              "the time from its first to its last reading"),
};
const size_t sop__evk_sampling_n = sizeof sop__evk_sampling / sizeof sop__evk_sampling[0];
#undef D
#undef I

#define W SOP_EVK_W
const sop_evk sop__evk_io_files[] = {
    W("pid", SOP_EVK_INT, w_file_pid, "", "the process holding it: the target or a worker"),
    W("fd", SOP_EVK_INT, w_file_fd, "", ""),
    W("path", SOP_EVK_TEXT, w_file_path, "", ""),
    SOP_EVK_I("size_bytes", sop_open_file, size, "B", ""),
    SOP_EVK_I("pos_bytes", sop_open_file, pos, "B", "read position at the window's end"),
    W("advance_bytes_per_s", SOP_EVK_NUM, w_file_advance, "B/s",
      "read position moved over the window"),
    W("mount", SOP_EVK_TEXT, w_file_mount, "", "mount point"),
    SOP_EVK_S("fstype", sop_open_file, fstype, ""),
    W("fs_kind", SOP_EVK_TEXT, w_file_fs_kind, "",
      "\"local\"|\"network\"|\"fuse\"|\"overlay\"|\"memory\"|\"virtual\""),
    W("source", SOP_EVK_TEXT, w_file_source, "", "the mount's source"),
    SOP_EVK_S("disk", sop_open_file, disk, "the whole disk behind it (host.disks[].name)"),
    W("disk_util_pct", SOP_EVK_NUM, w_file_disk_util_pct, "%", "that disk's host.disks[].util_pct"),
    W("disk_r_await_ms", SOP_EVK_NUM, w_file_disk_r_await_ms, "ms", "its r_await_ms"),
    W("disk_read_kb_per_s", SOP_EVK_NUM, w_file_disk_read_kb_per_s, "kB/s", "its read_kb_per_s"),
};
const size_t sop__evk_io_files_n = sizeof sop__evk_io_files / sizeof sop__evk_io_files[0];
#undef W

static double frac(long a, long n)
{
    return n > 0 ? (double)a / (double)n : NAN;
}

/* The most counted site of one kind for a thread: its frame text, and its share of the
 * thread's samples (NaN when none). */
static const char *top_site(const sop_window *s, size_t ti, int kind, double *share)
{
    const sop_agg_site *best = sop__agg_top_site(s->agg, ti, kind);
    *share = best ? frac(best->count, s->agg->thrs[ti].n) : NAN;
    return best ? best->frame : NULL;
}

/* One site of leaves[] ({func file line code}, rows leaves[].*.), with the source line when
 * `code` (at most SOURCE_READS_MAX reads per window). */
typedef struct {
    const sop_window *s;
    const sop_agg_thread *t;
    const sop_agg_frame *a;
    bool code;
    int *reads;
} site_ctx;

void sop__win_site_func(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set(o, name, sop__bridge_text(((const site_ctx *)ctx)->a->func));
}

void sop__win_site_file(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set(o, name, sop__bridge_text(((const site_ctx *)ctx)->a->file));
}

void sop__win_site_line(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const sop_agg_frame *a = ((const site_ctx *)ctx)->a;
    if (a->line >= 0)
        sop__v_set_int(o, name, a->line);
}

/* The site's source line, when asked for and while the window's reads last. */
void sop__win_site_code(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const site_ctx *c = ctx;
    const sop_agg_frame *a = c->a;
    if (!c->code || *c->reads >= SOURCE_READS_MAX)
        return;
    char text[192];
    (*c->reads)++;
    if (sop__source_line(c->s->proc_root, c->s->procs[c->t->proc].pid, a->file, a->line,
                         SOURCE_MAX_BYTES, text, sizeof text) == 0 &&
        text[0])
        sop__v_set(o, name, sop__bridge_text(text));
}

static sop_value *site_value(const site_ctx *c, const char *leaves_prefix)
{
    sop_value *o = sop__v_obj();
    char pre[64];
    snprintf(pre, sizeof pre, "%s*.", leaves_prefix);
    if (o)
        sop__bridge_keys(o, NULL, sop__evk_python, sop__evk_python_n, pre, NULL, (void *)c);
    return o;
}

/* One of leaves[]: its counts, then the row "*": leaf, entry (when there is one), caller. */
typedef struct {
    const sop_window *s;
    const sop_agg_thread *t;
    const sop_agg_leaf *e;
    int *reads;
    const char *prefix; /* "...leaves[]." */
} leaf_ctx;

static void leaf_hand(sop_value *o, const sop_evk *row, const char *name, void *ctx)
{
    (void)row;
    (void)name;
    const leaf_ctx *c = ctx;
    const sop_agg_leaf *e = c->e;
    site_ctx leaf = {c->s, c->t, &e->leaf, true, c->reads};
    sop__v_set(o, "leaf", site_value(&leaf, c->prefix));
    if (e->entry.func) {
        site_ctx entry = {c->s, c->t, &e->entry, false, c->reads};
        sop__v_set(o, "entry", site_value(&entry, c->prefix));
    }
    if (e->caller.func) {
        site_ctx caller = {c->s, c->t, &e->caller, e->entry.func != NULL, c->reads};
        sop__v_set(o, "caller", site_value(&caller, c->prefix));
    }
}

/* kB per page, for minor-fault counts. */
static int64_t page_kb(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? page / 1024 : 4;
}

/* The thread's most sampled (leaf, entry, caller) sites, with the source lines of leaf and
 * caller; its keys the leaves[] rows under `prefix` (a thread window's). */
static void thr_leaves(const sop_window *s, size_t ti, sop_value *w, int *reads, const char *prefix)
{
    const sop_agg_thread *t = &s->agg->thrs[ti];
    const sop_agg_leaf *top[TOP_LEAVES];
    int ntop = sop__agg_top_leaves(s->agg, ti, top, TOP_LEAVES);
    sop_value *arr = ntop > 0 ? sop__v_arr_at(w, "leaves") : NULL;
    char pre[64];
    snprintf(pre, sizeof pre, "%sleaves[].", prefix);
    for (int k = 0; arr && k < ntop; k++) {
        const sop_agg_leaf *e = top[k];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        bool faults = t->last_minflt != SOP_NA; /* the thread's minor faults were read */
        sop_window_count_figs f = {e->count, e->active, faults ? e->fresh : SOP_NA,
                                   faults ? e->fresh_pages * page_kb() : SOP_NA};
        leaf_ctx c = {s, t, e, reads, pre};
        sop__bridge_keys(o, &f, sop__evk_python, sop__evk_python_n, pre, leaf_hand, &c);
        sop__v_push(arr, o);
    }
}

/* Per library entry point the thread called (sop__agg_entries), the most sampled first; its
 * keys the entries[] rows under `prefix` (a thread window's). */
void sop__win_entry_func(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set(o, name, sop__bridge_text(((const sop_agg_frame *)ctx)->func));
}

void sop__win_entry_file(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set(o, name, sop__bridge_text(((const sop_agg_frame *)ctx)->file));
}

static void thr_entries(const sop_window *s, size_t ti, sop_value *w, const char *prefix)
{
    sop_agg_entry v[TOP_LEAVES];
    int n = sop__agg_entries(s->agg, ti, v, TOP_LEAVES);
    sop_value *arr = n ? sop__v_arr_at(w, "entries") : NULL;
    char pre[64];
    snprintf(pre, sizeof pre, "%sentries[].", prefix);
    for (int best = 0; arr && best < n; best++) {
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop_window_entry_figs f = {v[best].count, v[best].active, v[best].top_active,
                                   v[best].sites};
        sop__bridge_keys(o, &f, sop__evk_python, sop__evk_python_n, pre, NULL,
                         (void *)v[best].entry);
        sop__v_push(arr, o);
    }
}

/* The thread's whole distribution of samples, for exact shares (plugins/common.lua share()):
 * every distinct stack it was seen in (not only the top ones), its frames interned once:
 * dist = {samples, stored, frames = ["func (file)", ...], stacks = [{count, ids = [root..leaf]}]}
 * (ids are 1-based into frames). `stored` < samples when the stack table was full. */
#define DIST_FRAMES_MAX 4096
#define DIST_FRAME_SLOTS (2 * DIST_FRAMES_MAX)
typedef struct {
    const char *p;
    size_t len;
    int id;
} dist_slot;

static int dist_intern(dist_slot *slots, sop_value *frames, int *nframes, const char *p, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    size_t i = h & (DIST_FRAME_SLOTS - 1);
    for (size_t n = 0; n < DIST_FRAME_SLOTS; n++, i = (i + 1) & (DIST_FRAME_SLOTS - 1)) {
        dist_slot *d = &slots[i];
        if (!d->p) {
            if (*nframes >= DIST_FRAMES_MAX)
                return -1;
            d->p = p;
            d->len = len;
            d->id = ++*nframes;
            sop__v_push(frames, sop__v_strn(p, len));
            return d->id;
        }
        if (d->len == len && memcmp(d->p, p, len) == 0)
            return d->id;
    }
    return -1;
}

static void thr_dist(const sop_window *s, size_t ti, sop_value *w)
{
    dist_slot *slots = calloc(DIST_FRAME_SLOTS, sizeof *slots);
    sop_value *d = sop__v_obj();
    if (!slots || !d) {
        free(slots);
        sop__v_free(d);
        return;
    }
    sop_value *frames = sop__v_arr_at(d, "frames"), *stacks = sop__v_arr_at(d, "stacks");
    int nframes = 0;
    long stored = 0;
    bool cut = false;
    const uint32_t *mine;
    size_t ns = sop__agg_thread_stacks(s->agg, ti, &mine);
    for (size_t j = 0; frames && stacks && j < ns; j++) {
        const sop_agg_stack *e = &s->agg->stacks[mine[j]];
        sop_value *st = sop__v_obj(), *ids = st ? sop__v_arr_at(st, "ids") : NULL;
        if (!ids) {
            sop__v_free(st);
            break;
        }
        sop__v_set_int(st, "count", e->count);
        for (const char *p = e->stack; *p;) {
            const char *end = strchr(p, ';');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            int id = dist_intern(slots, frames, &nframes, p, len);
            if (id < 0)
                cut = true;
            else
                sop__v_push(ids, sop__v_num(id));
            p += len + (end ? 1 : 0);
        }
        stored += e->count;
        sop__v_push(stacks, st);
    }
    sop__v_set_int(d, "samples", s->agg->thrs[ti].n);
    sop__v_set_int(d, "stored", stored);
    if (cut)
        sop__v_set_bool(d, "frames_cut", true);
    sop__v_set(w, "dist", d);
    free(slots);
}

/* What one thread window's writers need: its sites are found with its figures (their shares). */
typedef struct {
    const sop_window *s;
    size_t ti;
    int *reads;
    const char *prefix; /* of the window's rows */
    const char *import_module, *logging_site, *fault_site, *gpu_sync_site, *collective_op,
        *own_frame; /* the most sampled frame of each kind, or NULL */
} thr_ctx;

static void stack_hand(sop_value *o, const sop_evk *row, const char *name, void *ctx)
{
    (void)row;
    sop__v_set_str(o, name, ((const sop_agg_stack *)ctx)->stack); /* the only hand row */
}

static void set_site(sop_value *w, const char *name, const char *site)
{
    if (site)
        sop__v_set(w, name, sop__bridge_text(site));
}

void sop__win_import_module(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    set_site(o, name, ((const thr_ctx *)ctx)->import_module);
}

void sop__win_logging_site(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    set_site(o, name, ((const thr_ctx *)ctx)->logging_site);
}

void sop__win_fault_site(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    set_site(o, name, ((const thr_ctx *)ctx)->fault_site);
}

void sop__win_gpu_sync_site(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    set_site(o, name, ((const thr_ctx *)ctx)->gpu_sync_site);
}

void sop__win_collective_op(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    set_site(o, name, ((const thr_ctx *)ctx)->collective_op);
}

void sop__win_own_frame(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    set_site(o, name, ((const thr_ctx *)ctx)->own_frame);
}

void sop__win_top_stacks(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const thr_ctx *c = ctx;
    const sop_agg_stack *top[TOP_STACKS];
    int ntop = sop__agg_top_stacks(c->s->agg, c->ti, top, TOP_STACKS);
    sop_value *arr = sop__v_arr_at(o, name);
    char pre[64];
    snprintf(pre, sizeof pre, "%stop_stacks[].", c->prefix);
    for (int k = 0; arr && k < ntop; k++) {
        sop_value *e = sop__v_obj();
        if (!e)
            break;
        sop_window_count_figs f = {top[k]->count, SOP_NA, SOP_NA, SOP_NA};
        sop__bridge_keys(e, &f, sop__evk_python, sop__evk_python_n, pre, stack_hand,
                         (void *)top[k]);
        sop__v_push(arr, e);
    }
}

void sop__win_dist(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)base;
    const thr_ctx *c = ctx;
    thr_dist(c->s, c->ti, o);
}

void sop__win_leaves(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)base;
    const thr_ctx *c = ctx;
    thr_leaves(c->s, c->ti, o, c->reads, c->prefix);
}

void sop__win_entries(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)base;
    const thr_ctx *c = ctx;
    thr_entries(c->s, c->ti, o, c->prefix);
}

/* One thread's window, its keys the window rows under `prefix` (threads[].window. or
 * workers[].threads[].window.) of sop__evk_python. */
static sop_value *thr_window(const sop_window *s, size_t ti, int *reads, const char *prefix)
{
    const sop_agg_thread *t = &s->agg->thrs[ti];
    sop_value *w = sop__v_obj();
    if (!w)
        return NULL;
    long n = t->n;
    sop_window_figs f = {
        .samples = t->n,
        .alternation_pairs = t->alt_pairs > 0 ? t->alt_pairs : SOP_NA,
        .alternation_frac = t->alt_pairs > 0 ? frac(t->alts, t->alt_pairs) : NAN,
        .native_rechecks = t->rechecks > 0 ? t->rechecks : SOP_NA,
        .recheck_gil_frac = t->rechecks > 0 ? frac(t->recheck_gil, t->rechecks) : NAN,
        .gil_rechecks = t->held_rechecks > 0 ? t->held_rechecks : SOP_NA,
        .gil_kept_frac = t->held_rechecks > 0 ? frac(t->held_kept, t->held_rechecks) : NAN,
        .active_frac = frac(t->active, n),
        .gil_frac = frac(t->gil, n),
        .runnable_nogil_frac = frac(t->runnable_nogil, n),
        .gil_wait_frac = frac(t->gil_wait, n),
        .running_frac = frac(t->state_r, n),
        .io_wait_frac = frac(t->state_d, n),
        .data_wait_frac = frac(t->data_wait, n),
        .checkpoint_frac = frac(t->ckpt, n),
        .loop_longest_block_ms = t->is_loop ? t->longest_ms : NAN,
        .import_frac = frac(t->import, n),
        .logging_frac = frac(t->logging, n),
        .logging_format_frac = frac(t->log_format, n),
        .logging_write_frac = frac(t->log_write, n),
        .subprocess_frac = frac(t->subprocess, n),
        .subprocess_spawn_frac = frac(t->spawn, n),
        .majflt_frac = frac(t->majflt_smp, n),
        .fault_wait_frac = frac(t->fault_wait, n),
        .gpu_wait_frac = NAN,
        .gpu_sync_site_frac = NAN,
        .fresh_frac = t->last_minflt != SOP_NA ? frac(t->fresh_smp, n) : NAN,
        .fresh_kb = t->last_minflt != SOP_NA ? t->fresh_pages * page_kb() : SOP_NA,
        .collective_frac = frac(t->coll, n),
        .collective_longest_ms = t->coll > 0 ? t->coll_longest_ms : NAN,
        .own_frac = frac(t->own, n),
        .lock_wait_frac = frac(t->waits[SOP_WC_LOCK], n),
        .lock_timed_frac = frac(t->waits[SOP_WC_LOCK_TIMED], n),
        .net_wait_frac = frac(t->waits[SOP_WC_NET], n),
        .read_wait_frac = frac(t->waits[SOP_WC_READ], n),
        .timer_wait_frac = frac(t->waits[SOP_WC_TIMER], n),
        .child_wait_frac = frac(t->waits[SOP_WC_CHILD], n),
        .signal_wait_frac = frac(t->waits[SOP_WC_SIGNAL], n),
    };
    thr_ctx c = {s, ti, reads, prefix, NULL, NULL, NULL, NULL, NULL, NULL};
    c.import_module = top_site(s, ti, SOP_AGG_SITE_IMPORT, &f.import_module_frac);
    c.logging_site = top_site(s, ti, SOP_AGG_SITE_LOG, &f.logging_site_frac);
    c.fault_site = top_site(s, ti, SOP_AGG_SITE_FAULT, &f.fault_site_frac);
    if (t->proc >= 0 && t->proc < SOP_SAMPLER_MAX_PROCS && s->agg->proc_gpu[t->proc]) {
        /* only for a process that uses a GPU: CPU-only evidence stays as it was */
        f.gpu_wait_frac = frac(t->gpu_wait, n);
        c.gpu_sync_site = top_site(s, ti, SOP_AGG_SITE_GPU, &f.gpu_sync_site_frac);
    }
    c.collective_op = top_site(s, ti, SOP_AGG_SITE_COLL, &f.collective_op_frac);
    c.own_frame = top_site(s, ti, SOP_AGG_SITE_OWN, &f.own_frame_frac);
    sop__bridge_keys(w, &f, sop__evk_python, sop__evk_python_n, prefix, NULL, &c);
    return w;
}

static sop_value *find_member(sop_value *obj, const char *key)
{
    for (sop_value *v = obj ? obj->child : NULL; v; v = v->next)
        if (v->key && strcmp(v->key, key) == 0)
            return v;
    return NULL;
}

/* A worker's IO over the window: rates and mean request sizes from /proc/PID/io. */
static void bridge_io(sop_value *o, const sop_window_proc *pe, double secs)
{
    if (!pe->io0 || !pe->io1 || !(secs > 0))
        return;
    const sop_io *a = pe->io0, *b = pe->io1;
    sop_value *io = sop__v_obj_at(o, "io");
    if (!io)
        return;
    if (b->read_bytes != SOP_NA && a->read_bytes != SOP_NA)
        sop__v_set_dbl(io, "read_bytes_per_s", (double)(b->read_bytes - a->read_bytes) / secs);
    if (b->write_bytes != SOP_NA && a->write_bytes != SOP_NA)
        sop__v_set_dbl(io, "write_bytes_per_s", (double)(b->write_bytes - a->write_bytes) / secs);
    if (b->rchar != SOP_NA && a->rchar != SOP_NA && b->syscr != SOP_NA && a->syscr != SOP_NA) {
        int64_t calls = b->syscr - a->syscr;
        sop__v_set_dbl(io, "rchar_per_s", (double)(b->rchar - a->rchar) / secs);
        sop__v_set_dbl(io, "syscr_per_s", (double)calls / secs);
        if (calls > 0)
            sop__v_set_dbl(io, "mean_read_bytes", (double)(b->rchar - a->rchar) / (double)calls);
    }
    if (b->wchar != SOP_NA && a->wchar != SOP_NA && b->syscw != SOP_NA && a->syscw != SOP_NA) {
        int64_t calls = b->syscw - a->syscw;
        sop__v_set_dbl(io, "wchar_per_s", (double)(b->wchar - a->wchar) / secs);
        sop__v_set_dbl(io, "syscw_per_s", (double)calls / secs);
        if (calls > 0)
            sop__v_set_dbl(io, "mean_write_bytes", (double)(b->wchar - a->wchar) / (double)calls);
    }
}

/* ev.io_files: the files open at the window's end, what they sit on, and the disk behind. */
typedef struct {
    const sop_open_file *f;
    double window_s;
    const sop_value *disk; /* host.disks[] of f->disk, or NULL */
} file_ctx;

static void w_file_pid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ((const sop_open_file *)base)->pid);
}

static void w_file_fd(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ((const sop_open_file *)base)->fd);
}

static void w_file_path(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const sop_open_file *)base)->path));
}

static void w_file_advance(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_open_file *f = base;
    double window_s = ((const file_ctx *)ctx)->window_s;
    if (f->pos != SOP_NA && f->pos0 != SOP_NA && window_s > 0)
        sop__v_set_dbl(o, name, (double)(f->pos - f->pos0) / window_s);
}

static void w_file_mount(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const sop_open_file *)base)->mountpoint));
}

static void w_file_fs_kind(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_open_file *f = base;
    if (f->fstype[0])
        sop__v_set_str(o, name, sop__fs_kind(f->fstype));
}

static void w_file_source(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const sop_open_file *)base)->source));
}

/* disk_*: the figure `key` of host.disks[] for the file's disk, when there is one. */
static void disk_figure(sop_value *o, const char *name, const file_ctx *c, const char *key)
{
    double v;
    if (c->disk && sop__v_get_num(c->disk, key, &v))
        sop__v_set_dbl(o, name, v);
}

static void w_file_disk_util_pct(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    disk_figure(o, name, ctx, "util_pct");
}

static void w_file_disk_r_await_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    disk_figure(o, name, ctx, "r_await_ms");
}

static void w_file_disk_read_kb_per_s(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    disk_figure(o, name, ctx, "read_kb_per_s");
}

static void bridge_files(const sop_window *s, sop_value *ev)
{
    if (!s->nfiles)
        return;
    sop_value *arr = sop__v_arr_at(ev, "io_files");
    const sop_value *host = find_member(ev, "host");
    const sop_value *disks = host ? sop__v_get(host, "disks") : NULL;
    for (size_t i = 0; arr && i < s->nfiles; i++) {
        file_ctx c = {&s->files[i], s->stats.window_s, NULL};
        for (const sop_value *d = disks ? disks->child : NULL; d && c.f->disk[0]; d = d->next) {
            const char *name = sop__v_get_str(d, "name");
            if (name && strcmp(name, c.f->disk) == 0 && !c.disk)
                c.disk = d;
        }
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__bridge_keys(o, c.f, sop__evk_io_files, sop__evk_io_files_n, "", NULL, &c);
        sop__v_push(arr, o);
    }
}

/* ev.python.gc.window: the target's GC over the sampled window. */
/* loop.frames[] {func file line}: the callback's frames of the longest stretch, innermost
 * first (from "func\tfile\tline\n" lines). */
static void loop_frames(sop_value *lp, const char *text)
{
    sop_value *arr = NULL;
    for (const char *p = text; p && *p;) {
        const char *t1 = strchr(p, '\t'), *nl = strchr(p, '\n');
        const char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t1 || !t2 || !nl || t2 > nl)
            break;
        if (!arr && !(arr = sop__v_arr_at(lp, "frames")))
            return;
        sop_value *f = sop__v_obj();
        if (!f)
            return;
        sop__v_set(f, "func", sop__v_strn(p, (size_t)(t1 - p)));
        sop__v_set(f, "file", sop__v_strn(t1 + 1, (size_t)(t2 - t1 - 1)));
        sop__v_set_int(f, "line", strtol(t2 + 1, NULL, 10));
        sop__v_push(arr, f);
        p = nl + 1;
    }
}

/* The rate of a counter the target keeps in its own memory (CPython's GIL switch_number, its
 * GC's collection counts), from its reads at the first and last tick, secs apart. Unlike the
 * kernel's counters, the target can write these: a count that went back (backs: reads below
 * the one before) or grew faster than max_per_s is no measurement. Then NaN (the key is left
 * out, nil to the rules) and a note in missing saying so; else the rate. */
static double target_counter_rate(const sop_window *s, const char *what, int64_t first,
                                  int64_t last, long backs, double secs, double max_per_s)
{
    if (last < first || backs > 0) {
        if (s->missing)
            sop__missing_add(s->missing, "python",
                             "the %s went back during the window (%lld at the first read, %lld "
                             "at the last, %.1f s apart): not a measurement; left out",
                             what, (long long)first, (long long)last, secs);
        return NAN;
    }
    if ((double)(last - first) > max_per_s * secs) {
        if (s->missing)
            sop__missing_add(s->missing, "python",
                             "the %s moved by %lld in %.1f s (beyond %.0f/s): not a "
                             "measurement; left out",
                             what, (long long)(last - first), secs, max_per_s);
        return NAN;
    }
    return (double)(last - first) / secs;
}

typedef struct {
    const sop_window *s;
    const sop_agg *a;
} gc_ctx;

/* gc.window.collections and collections_per_s: the counts at the last tick minus the first, and
 * their rates; both left out when a rate is no measurement. */
void sop__win_gc_collections(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)base;
    const gc_ctx *c = ctx;
    const sop_agg *s = c->a;
    double secs = (s->gc_last_ms - s->gc_first_ms) / 1e3;
    if (s->gc_first[0] == SOP_NA || !(secs > 0))
        return;
    double rate[3];
    bool ok = true;
    for (int g = 0; g < 3; g++) {
        char what[48];
        snprintf(what, sizeof what, "GC collection count of generation %d", g);
        rate[g] = target_counter_rate(c->s, what, s->gc_first[g], s->gc_last[g], 0, secs,
                                      SOP_GC_COLLECTIONS_MAX_PER_S);
        ok &= !isnan(rate[g]);
    }
    if (!ok)
        return; /* the counts are the same counters: left out with their rates */
    sop_value *n = sop__v_arr_at(o, "collections");
    sop_value *r = sop__v_arr_at(o, "collections_per_s");
    for (int g = 0; g < 3; g++) {
        sop__v_push(n, sop__v_num((double)(s->gc_last[g] - s->gc_first[g])));
        sop__v_push(r, sop__v_num(rate[g]));
    }
}

static void bridge_gc(const sop_window *win, sop_value *py)
{
    const sop_agg *s = win->agg;
    if (s->gc_samples == 0)
        return;
    sop_value *gc = sop__v_obj_at(py, "gc");
    sop_value *w = gc ? sop__v_obj_at(gc, "window") : NULL;
    if (!w)
        return;
    sop_gc_window_figs f = {s->gc_samples, frac(s->gc_collecting, s->gc_samples), s->gc_longest_ms};
    gc_ctx c = {win, s};
    sop__bridge_keys(w, &f, sop__evk_python, sop__evk_python_n, "gc.window.", NULL, &c);
}

void sop__win_loop_frame(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const sop_agg_thread *t = ctx;
    if (t->longest_frame[0])
        sop__v_set_str(o, name, t->longest_frame);
}

void sop__win_loop_frames(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)base;
    loop_frames(o, ((const sop_agg_thread *)ctx)->longest_stack);
}

/* What one worker's writers need. */
typedef struct {
    const sop_window *s;
    int p; /* its index in s->procs */
    int *reads;
    const sop_value *kid; /* its ev.children[] entry, or NULL */
} worker_ctx;

typedef struct {
    const worker_ctx *w;
    size_t ti; /* the thread's index in the aggregation */
} worker_thread_ctx;

void sop__win_worker_tid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const worker_thread_ctx *c = ctx;
    sop__v_set_int(o, name, c->w->s->agg->thrs[c->ti].tid);
}

void sop__win_worker_window(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const worker_thread_ctx *c = ctx;
    sop__v_set(o, name, thr_window(c->w->s, c->ti, c->w->reads, "workers[].threads[].window."));
}

static const sop_window_proc *worker_proc(const worker_ctx *c)
{
    return &c->s->procs[c->p];
}

void sop__win_worker_comm(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set(o, name, sop__bridge_text(worker_proc(ctx)->comm));
}

void sop__win_worker_cmdline(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set(o, name, sop__bridge_text(worker_proc(ctx)->cmdline));
}

/* Its sampled threads: the rows workers[].threads[]. */
void sop__win_worker_threads(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const worker_ctx *c = ctx;
    const sop_window *s = c->s;
    sop_value *ta = sop__v_arr_at(o, name);
    for (size_t i = 0; i < s->agg->nthrs; i++) {
        const sop_agg_thread *t = &s->agg->thrs[i];
        if (t->proc != c->p)
            continue;
        sop_value *to = sop__v_obj();
        if (!to)
            break;
        worker_thread_ctx tc = {c, i};
        sop__bridge_keys(to, t, sop__evk_python, sop__evk_python_n, "workers[].threads[].", NULL,
                         &tc);
        sop__v_push(ta, to);
    }
}

void sop__win_worker_exited(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    if (worker_proc(ctx)->gone)
        sop__v_set_bool(o, name, true);
}

/* How it was started: fork children keep the parent's command line. */
void sop__win_worker_start_method(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const worker_ctx *c = ctx;
    const sop_window_proc *pe = worker_proc(c);
    const char *how = strstr(pe->cmdline, "multiprocessing.spawn")        ? "spawn"
                      : strstr(pe->cmdline, "multiprocessing.forkserver") ? "forkserver"
                      : strcmp(pe->cmdline, c->s->procs[0].cmdline) == 0  ? "fork"
                                                                          : NULL;
    sop__v_set_str(o, name, how);
}

void sop__win_worker_io(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)base;
    const worker_ctx *c = ctx;
    bridge_io(o, worker_proc(c), c->s->stats.window_s);
}

/* Its allow-listed tuning variables, from its ev.children[] entry. */
void sop__win_worker_env(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const worker_ctx *c = ctx;
    if (!c->kid)
        return;
    const sop_value *env = sop__v_get(c->kid, "env");
    sop_value *oe = env && env->child ? sop__v_obj_at(o, name) : NULL;
    for (const sop_value *e = env ? env->child : NULL; oe && e; e = e->next)
        if (e->key && sop__v_get_str(env, e->key))
            sop__v_set_str(oe, e->key, sop__v_get_str(env, e->key));
}

#define TRACE_POINTS 13

/* sampling.anon_trace_*: the trace's first time and its span, when it has two readings apart. */
static bool trace_span(const sop_window *s, double *t0, double *span)
{
    size_t n = s->ntrace;
    if (n < 2 || !(s->trace_ms[n - 1] > s->trace_ms[0]))
        return false;
    *t0 = s->trace_ms[0];
    *span = s->trace_ms[n - 1] - *t0;
    return true;
}

/* sampling.anon_trace_kb: the readings nearest to 13 evenly spaced times. */
static void w_anon_trace_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const sop_window *s = ctx;
    double t0, span;
    if (!trace_span(s, &t0, &span))
        return;
    size_t n = s->ntrace;
    sop_value *arr = sop__v_arr_at(o, name);
    size_t j = 0;
    for (int k = 0; arr && k < TRACE_POINTS; k++) {
        double t = t0 + span * k / (TRACE_POINTS - 1);
        while (j + 1 < n && fabs(s->trace_ms[j + 1] - t) <= fabs(s->trace_ms[j] - t))
            j++;
        sop__v_push(arr, sop__v_num((double)s->trace_kb[j]));
    }
}

static void w_anon_trace_s(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    double t0, span;
    if (trace_span(ctx, &t0, &span))
        sop__v_set_dbl(o, name, span / 1e3);
}

/* python.concurrency: counted per tick, so threads born and ended in the window count. */
static void bridge_concurrency(const sop_window *s, sop_value *py)
{
    const sop_agg *a = s->agg;
    if (a->conc_ticks <= 0)
        return;
    sop_concurrency_figs f = {.ticks = a->conc_ticks,
                              .wanting_max = a->conc_wanting_max,
                              .wanting_mean = (double)a->conc_wanting_sum / (double)a->conc_ticks,
                              .runnable_mean = (double)a->conc_runnable_sum / (double)a->conc_ticks,
                              .contended_frac = frac(a->conc_contended, a->conc_ticks),
                              .two_plus_frac = frac(a->conc_ge2, a->conc_ticks),
                              .gil_interval_us = a->gil_interval_us,
                              .gil_switches_per_s = NAN};
    double sw_secs = (a->gil_sw_last_ms - a->gil_sw_first_ms) / 1e3;
    if (a->gil_sw_first != SOP_NA && sw_secs >= 0.1)
        f.gil_switches_per_s =
            target_counter_rate(s, "GIL switch counter", a->gil_sw_first, a->gil_sw_last,
                                a->gil_sw_backs, sw_secs, SOP_GIL_SWITCHES_MAX_PER_S);
    for (size_t i = 0; i < a->nthrs; i++)
        if (a->thrs[i].proc == 0) {
            f.threads++;
            f.threads_wanting += a->thrs[i].wanted_gil;
        }
    sop_value *o = sop__v_obj_at(py, "concurrency");
    if (o)
        sop__bridge_keys(o, &f, sop__evk_python, sop__evk_python_n, "concurrency.", NULL, NULL);
}

void sop__win_lock_site(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set(o, name, sop__bridge_text(((const sop_agg_lock *)ctx)->site_txt));
}

/* The holder's most seen frame. */
void sop__win_lock_holder(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const sop_agg_lock *l = ctx;
    int best = -1;
    for (int i = 0; i < l->nholders; i++)
        if (best < 0 || l->holders[i].count > l->holders[best].count)
            best = i;
    if (best >= 0)
        sop__v_set(o, name, sop__bridge_text(l->holders[best].frame));
}

/* python.locks[]: the lock sites, most waited first (at most 8). */
static void bridge_locks(const sop_agg *a, sop_value *py)
{
    if (a->nlocks == 0 || a->conc_ticks <= 0)
        return;
    bool used[SOP_AGG_LOCKS_MAX] = {false};
    sop_value *arr = sop__v_arr_at(py, "locks");
    for (int k = 0; arr && k < 8; k++) {
        int best = -1;
        for (size_t i = 0; i < a->nlocks; i++)
            if (!used[i] && (best < 0 || a->locks[i].waiter_sum > a->locks[best].waiter_sum))
                best = (int)i;
        if (best < 0)
            break;
        used[best] = true;
        const sop_agg_lock *l = &a->locks[best];
        long hmax = 0;
        for (int i = 0; i < l->nholders; i++)
            if (l->holders[i].count > hmax)
                hmax = l->holders[i].count;
        sop_lock_figs f = {
            .ticks = l->ticks,
            .waiters_max = l->waiter_max,
            .threads = l->ntids,
            .waiters_mean = (double)l->waiter_sum / (double)a->conc_ticks,
            .wait_frac = l->ntids > 0
                             ? (double)l->waiter_sum / ((double)l->ntids * (double)a->conc_ticks)
                             : NAN,
            .multi_frac = frac(l->multi, a->conc_ticks),
            .one_word_frac = frac(l->one_word, l->multi),
            .held_frac = frac(l->held, l->ticks),
            .crowded_frac = frac(l->crowded, l->ticks),
            .holder_running_frac = frac(l->holder_run, l->held),
            .holder_native_frac = frac(l->held_native, l->held),
            .holder_frac = frac(hmax, l->held),
        };
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__bridge_keys(o, &f, sop__evk_python, sop__evk_python_n, "locks[].", NULL, (void *)l);
        sop__v_push(arr, o);
    }
}

void sop__bridge_window(sop_value *ev, const sop_window *s)
{
    const sop_agg *a = s->agg;
    sop_value *smp = sop__v_obj_at(ev, "sampling");
    if (smp) {
        sampling_figs f = {s->stats.rate_hz,        s->stats.ticks,           s->stats.missed,
                           s->stats.thread_samples, s->stats.samples_partial, s->stats.walk_retries,
                           s->stats.self_cpu_ms,    s->stats.window_s,        s->nprocs};
        sop__bridge_keys(smp, &f, sop__evk_sampling, sop__evk_sampling_n, "", NULL, (void *)s);
    }
    bridge_files(s, ev);
    int reads = 0; /* source lines read for this window */
    sop_value *py = find_member(ev, "python");
    if (!py)
        return;
    /* per-thread windows of the target */
    sop_value *threads = find_member(py, "threads");
    for (sop_value *t = threads ? threads->child : NULL; t; t = t->next) {
        double tid;
        if (!sop__v_get_num(t, "tid", &tid))
            continue;
        for (size_t i = 0; i < a->nthrs; i++)
            if (a->thrs[i].proc == 0 && a->thrs[i].tid == (int)tid)
                sop__v_set(t, "window", thr_window(s, i, &reads, "threads[].window."));
    }
    bridge_gc(s, py);
    bridge_concurrency(s, py);
    bridge_locks(a, py);
    /* the event loop that went longest without its selector */
    int best = -1;
    for (size_t i = 0; i < a->nthrs; i++)
        if (a->thrs[i].proc == 0 && a->thrs[i].is_loop &&
            (best < 0 || a->thrs[i].longest_ms > a->thrs[best].longest_ms))
            best = (int)i;
    if (best >= 0) {
        sop_value *lp = sop__v_obj_at(py, "loop");
        const sop_agg_thread *t = &a->thrs[best];
        sop_loop_figs f = {t->tid, t->longest_ms};
        if (lp)
            sop__bridge_keys(lp, &f, sop__evk_python, sop__evk_python_n, "loop.", NULL, (void *)t);
    }
    if (s->nprocs < 2)
        return;
    /* workers: CPython descendants sampled with the target */
    sop_value *wk = sop__v_arr_at(py, "workers");
    long wn = 0, wr = 0, wd = 0, ws = 0;
    const sop_value *kids = find_member(ev, "children");
    for (int p = 1; wk && p < s->nprocs; p++) {
        const sop_window_proc *pe = &s->procs[p];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        worker_ctx c = {s, p, &reads, NULL};
        sop_worker_figs f = {.pid = pe->pid,
                             .cpu_frac = NAN,
                             .io_frac = NAN,
                             .idle_frac = NAN,
                             .samples = a->proc_samples[p],
                             .start_time_s = pe->start_time_s, /* its age when the window started */
                             .age_s = NAN,
                             .read_bytes_per_s = NAN,
                             .rchar_per_s = NAN,
                             .cpu_pct = NAN};
        /* the process's main thread (tid == pid) says what the worker does */
        sop_agg_states st;
        if (sop__agg_thread_states(a, p, pe->pid, &st)) {
            f.cpu_frac = frac(st.running, st.n);
            f.io_frac = frac(st.io, st.n);
            f.idle_frac = frac(st.idle, st.n);
            wn += st.n, wr += st.running, wd += st.io, ws += st.idle;
        }
        if (!isnan(pe->start_time_s) && pe->found_at_s >= pe->start_time_s)
            f.age_s = pe->found_at_s - pe->start_time_s;
        /* IO over the window, from ev.children (the process probe's rates) */
        for (const sop_value *k = kids ? kids->child : NULL; k && !c.kid; k = k->next) {
            double kp;
            if (sop__v_get_num(k, "pid", &kp) && (int)kp == pe->pid)
                c.kid = k;
        }
        if (c.kid) {
            sop__v_get_num(c.kid, "read_bytes_per_s", &f.read_bytes_per_s);
            sop__v_get_num(c.kid, "rchar_per_s", &f.rchar_per_s);
            sop__v_get_num(c.kid, "cpu_pct", &f.cpu_pct);
        }
        sop__bridge_keys(o, &f, sop__evk_python, sop__evk_python_n, "workers[].", NULL, &c);
        sop__v_push(wk, o);
    }
    /* the consumer side: the target's main thread waiting for batches */
    sop_value *ld = sop__v_obj_at(py, "loader");
    if (!ld)
        return;
    sop_loader_figs f = {s->nprocs - 1, NAN, NAN, frac(wr, wn), frac(wd, wn), frac(ws, wn)};
    double eff;
    if (sop__v_get_num(ev, "effective_cpus", &eff) && eff > 0)
        f.workers_per_cpu = (double)(s->nprocs - 1) / eff;
    for (size_t i = 0; i < a->nthrs; i++) {
        const sop_agg_thread *t = &a->thrs[i];
        if (t->proc == 0 && t->tid == s->procs[0].pid)
            f.main_data_wait_frac = frac(t->data_wait, t->n);
    }
    sop__bridge_keys(ld, &f, sop__evk_python, sop__evk_python_n, "loader.", NULL, NULL);
}
