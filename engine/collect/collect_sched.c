/* collect_sched.c — the evidence group `sched`, in one file: the whole tree's CPU time and
 * run-queue wait over the window (target + descendants, every thread including those that
 * came and went), its runnable load against the effective CPUs, and per process the threads,
 * their names and the thread-pool libraries mapped. The tree is polled at the window's start,
 * every TREE_POLL_MS during it and at its end (probes/proc_tree.c), so threads and workers
 * that come and go keep their time. The provider, the rows (docs/evidence.md is generated from
 * them) and their writers: the figures are sums over the threads, so each level first fills a
 * small struct of them, which the table's plain rows read. Depends on probes/proc_tree.h,
 * bridge/schema.h, provider.h, clock.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/schema.h"
#include "clock.h"
#include "collect_sched.h"
#include "provider.h"

#define TREE_POLL_MS 250.0

typedef struct {
    sop_tree_sched t;
    bool valid; /* at least two polls and a schedstat: ev.sched is written */
} sched_state;

static double poll_tree(sop_collect_ctx *cx, sched_state *st, bool final, sop_missing *missing)
{
    double now = sop__now_ms();
    if (sop__tree_poll(cx->root_fd, cx->pid, &st->t, final, final ? cx->maps : NULL, missing) ==
        0) {
        if (st->t.polls == 1)
            st->t.first_poll_ms = now;
        st->t.last_poll_ms = now;
    }
    return now;
}

static void *sched_start(sop_collect_ctx *cx)
{
    if (!(cx->o->duration_s > 0))
        return NULL;
    return calloc(1, sizeof(sched_state));
}

static double sched_poll(sop_collect_ctx *cx, void *p, double now_ms)
{
    (void)now_ms;
    sop_missing scratch = {0}; /* a poll's failures: only the last one's count */
    double now = poll_tree(cx, p, false, &scratch);
    sop__missing_free(&scratch);
    return now + TREE_POLL_MS;
}

static void sched_finish(sop_collect_ctx *cx, void *p)
{
    sched_state *st = p;
    if (!cx->window_ok)
        return;
    poll_tree(cx, st, true, &cx->c->missing);
    if (st->t.polls >= 2 && !st->t.no_schedstat)
        st->valid = true;
    else if (st->t.no_schedstat)
        sop__missing_add(&cx->c->missing, "sched",
                         "no task schedstat readable (kernel without schedstats?)");
}

/* ---- the evidence group ---- */

#define TOP_THREADS 16 /* per process, busiest (cpu + wait) first */
#define NAMES_MAX 16   /* distinct thread names per process */

static double busy_s(const sop_tree_thread *th)
{
    return sop__tree_thread_cpu_s(th) + sop__tree_thread_wait_s(th);
}

static int by_busy_desc(const void *a, const void *b)
{
    double x = busy_s(*(const sop_tree_thread *const *)a);
    double y = busy_s(*(const sop_tree_thread *const *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

typedef struct {
    const char *name;
    int64_t count;
    double cpu_s, wait_s;
} name_sum;

/* The figures of the whole tree, of one process, of one of its libraries and of one of its
 * top threads: the levels' rows read them (fields, and writers for the arrays). */
typedef struct {
    double window_s;
    int64_t polls, effective_cpus;
    double capacity_cpus, cpu_s, runqueue_wait_s, runnable_load;
    int64_t threads, threads_seen;
    bool cut;
} tree_figs;

typedef struct {
    int64_t pid, ppid; /* ppid SOP_NA when not > 0 */
    char comm[16], cmdline[256];
    int64_t threads, threads_seen, threads_born, threads_exited;
    double cpu_s, wait_s, load;
    bool exited, born, names_cut;
} proc_figs;

typedef struct {
    char kind[16], name[32];
} lib_figs;

typedef struct {
    int64_t tid;
    double cpu_s, wait_s;
    bool exited;
    const char *name;
} top_figs;

/* The writers of the rows that are arrays or text (defined below the table). */
static void write_procs(sop_value *o, const char *name, const void *base, void *ctx);
static void write_libs(sop_value *o, const char *name, const void *base, void *ctx);
static void write_names(sop_value *o, const char *name, const void *base, void *ctx);
static void write_name_text(sop_value *o, const char *name, const void *base, void *ctx);
static void write_top(sop_value *o, const char *name, const void *base, void *ctx);
static void write_top_name(sop_value *o, const char *name, const void *base, void *ctx);

#define H SOP_EVK_H
static const sop_evk sop__evk_sched[] = {
    SOP_EVK_D("window_s", tree_figs, window_s, "s", "time between the first and the last poll"),
    SOP_EVK_I("polls", tree_figs, polls, "", "polls taken (every 250 ms)"),
    SOP_EVK_I("effective_cpus", tree_figs, effective_cpus, "CPUs", "= ev.effective_cpus"),
    SOP_EVK_D("capacity_cpus", tree_figs, capacity_cpus, "CPUs",
              "the same with a CFS quota as a fraction (1.5)"),
    SOP_EVK_D("cpu_s", tree_figs, cpu_s, "s",
              "CPU time of all threads in the window (task schedstat run time)"),
    SOP_EVK_D("runqueue_wait_s", tree_figs, runqueue_wait_s, "s",
              "time they sat runnable waiting for a CPU (schedstat run-queue delay)"),
    SOP_EVK_D("runnable_load", tree_figs, runnable_load, "",
              "(cpu_s + runqueue_wait_s) / window_s: threads wanting a CPU on average; it "
              "cannot exceed the job's own runnable threads, whatever else the host runs, so "
              "load > effective_cpus is the job's own oversubscription"),
    SOP_EVK_I("threads", tree_figs, threads, "", "alive at the end"),
    SOP_EVK_I("threads_seen", tree_figs, threads_seen, "", "all seen in the window"),
    SOP_EVK_TRUE("cut", tree_figs, cut,
                 "true: more than 8192 threads or 64 processes; the rest not counted"),
    SOP_EVK_W("procs", SOP_EVK_ARR, write_procs, "",
              "the target and every descendant, every thread, polled every 250 ms, so threads "
              "and workers that came and went keep their time"),
    SOP_EVK_I("procs[].pid", proc_figs, pid, "", ""),
    SOP_EVK_I("procs[].ppid", proc_figs, ppid, "", ""),
    SOP_EVK_T("procs[].comm", proc_figs, comm, ""),
    SOP_EVK_T("procs[].cmdline", proc_figs, cmdline, ""),
    SOP_EVK_I("procs[].threads", proc_figs, threads, "", "alive at the end"),
    SOP_EVK_I("procs[].threads_seen", proc_figs, threads_seen, "", "all seen in the window"),
    SOP_EVK_I("procs[].threads_born", proc_figs, threads_born, "", "not seen by the first poll"),
    SOP_EVK_I("procs[].threads_exited", proc_figs, threads_exited, "", "not seen by the last poll"),
    SOP_EVK_D("procs[].cpu_s", proc_figs, cpu_s, "s", "as cpu_s, this process"),
    SOP_EVK_D("procs[].wait_s", proc_figs, wait_s, "s", "as runqueue_wait_s, this process"),
    SOP_EVK_D("procs[].load", proc_figs, load, "", "as runnable_load, this process"),
    SOP_EVK_TRUE("procs[].exited", proc_figs, exited, "true: gone by the last poll"),
    SOP_EVK_TRUE("procs[].born", proc_figs, born, "true: not there at the first poll"),
    SOP_EVK_W("procs[].libs", SOP_EVK_ARR, write_libs, "",
              "thread-pool libraries mapped: blas, openmp, torch"),
    SOP_EVK_S("procs[].libs[].kind", lib_figs, kind, ""),
    SOP_EVK_S("procs[].libs[].name", lib_figs, name, ""),
    SOP_EVK_W("procs[].names", SOP_EVK_ARR, write_names, "",
              "threads grouped by name, at most 16 names"),
    SOP_EVK_W("procs[].names[].name", SOP_EVK_TEXT, write_name_text, "", ""),
    SOP_EVK_I("procs[].names[].count", name_sum, count, "", "threads of that name"),
    SOP_EVK_D("procs[].names[].cpu_s", name_sum, cpu_s, "s", ""),
    SOP_EVK_D("procs[].names[].wait_s", name_sum, wait_s, "s", ""),
    SOP_EVK_TRUE("procs[].names_cut", proc_figs, names_cut,
                 "true: more than 16 names; the rest not listed"),
    SOP_EVK_W("procs[].top", SOP_EVK_ARR, write_top, "", "the 16 busiest threads (cpu + wait)"),
    SOP_EVK_I("procs[].top[].tid", top_figs, tid, "", ""),
    SOP_EVK_W("procs[].top[].name", SOP_EVK_TEXT, write_top_name, "", ""),
    SOP_EVK_D("procs[].top[].cpu_s", top_figs, cpu_s, "s", ""),
    SOP_EVK_D("procs[].top[].wait_s", top_figs, wait_s, "s", ""),
    SOP_EVK_TRUE("procs[].top[].exited", top_figs, exited, "true: gone by the last poll"),
};
static const size_t sop__evk_sched_n = sizeof sop__evk_sched / sizeof sop__evk_sched[0];
#undef H

static void set(sop_value *o, const void *base, const char *prefix, void *ctx)
{
    sop__bridge_keys(o, base, sop__evk_sched, sop__evk_sched_n, prefix, NULL, ctx);
}

/* What one process's array rows need. */
typedef struct {
    const sop_tree_proc *p;
    const name_sum *names;
    size_t nnames;
    const sop_tree_thread **top;
    size_t ntop;
} proc_ctx;

static void write_libs(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const sop_tree_proc *p = ((const proc_ctx *)ctx)->p;
    if (!p->nlibs)
        return;
    sop_value *libs = sop__v_arr_at(o, name);
    for (size_t i = 0; libs && i < p->nlibs; i++) {
        sop_value *l = sop__v_obj();
        lib_figs f;
        snprintf(f.kind, sizeof f.kind, "%s", p->libs[i].kind);
        snprintf(f.name, sizeof f.name, "%s", p->libs[i].name);
        if (l)
            set(l, &f, "procs[].libs[].", NULL);
        sop__v_push(libs, l);
    }
}

static void write_name_text(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const name_sum *)base)->name));
}

static void write_names(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const proc_ctx *c = ctx;
    sop_value *nm = sop__v_arr_at(o, name);
    for (size_t k = 0; nm && k < c->nnames; k++) {
        sop_value *e = sop__v_obj();
        if (e)
            set(e, &c->names[k], "procs[].names[].", NULL);
        sop__v_push(nm, e);
    }
}

static void write_top_name(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const top_figs *)base)->name));
}

static void write_top(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const proc_ctx *c = ctx;
    sop_value *top = sop__v_arr_at(o, name);
    for (size_t i = 0; top && i < c->ntop; i++) {
        const sop_tree_thread *th = c->top[i];
        top_figs f = {th->tid, sop__tree_thread_cpu_s(th), sop__tree_thread_wait_s(th), !th->alive,
                      th->name};
        sop_value *e = sop__v_obj();
        if (e)
            set(e, &f, "procs[].top[].", NULL);
        sop__v_push(top, e);
    }
}

static void bridge_proc(sop_value *arr, const sop_tree_sched *t, const sop_tree_proc *p,
                        double window_s, const sop_tree_thread **scratch)
{
    sop_value *o = sop__v_obj();
    if (!o)
        return;
    size_t n = 0;
    int64_t alive = 0, born = 0, exited = 0;
    double cpu = 0, wait = 0;
    name_sum names[NAMES_MAX];
    size_t nnames = 0;
    bool names_cut = false;
    for (size_t i = 0; i < t->nthreads; i++) {
        const sop_tree_thread *th = &t->threads[i];
        if (th->pid != p->pid)
            continue;
        scratch[n++] = th;
        alive += th->alive;
        born += !th->at_start;
        exited += !th->alive;
        double c = sop__tree_thread_cpu_s(th), w = sop__tree_thread_wait_s(th);
        cpu += c;
        wait += w;
        size_t k = 0;
        while (k < nnames && strcmp(names[k].name, th->name) != 0)
            k++;
        if (k == nnames) {
            if (nnames == NAMES_MAX) {
                names_cut = true;
                continue;
            }
            names[nnames++] = (name_sum){th->name, 0, 0, 0};
        }
        names[k].count++;
        names[k].cpu_s += c;
        names[k].wait_s += w;
    }
    qsort(scratch, n, sizeof *scratch, by_busy_desc);
    proc_figs f = {.pid = p->pid,
                   .ppid = p->ppid > 0 ? p->ppid : SOP_NA,
                   .threads = alive,
                   .threads_seen = (int64_t)n,
                   .threads_born = born,
                   .threads_exited = exited,
                   .cpu_s = cpu,
                   .wait_s = wait,
                   .load = window_s > 0 ? (cpu + wait) / window_s : NAN,
                   .exited = !p->alive,
                   .born = !p->at_start,
                   .names_cut = names_cut};
    memcpy(f.comm, p->comm, sizeof f.comm);
    memcpy(f.cmdline, p->cmdline, sizeof f.cmdline);
    f.comm[sizeof f.comm - 1] = f.cmdline[sizeof f.cmdline - 1] = '\0';
    proc_ctx c = {p, names, nnames, scratch, n < TOP_THREADS ? n : TOP_THREADS};
    set(o, &f, "procs[].", &c);
    sop__v_push(arr, o);
}

/* procs[], built where the walk reaches its row (ctx: the tree). */
static void write_procs(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_tree_sched *t = ctx;
    double window_s = ((const tree_figs *)base)->window_s;
    sop_value *procs = sop__v_arr_at(o, name);
    const sop_tree_thread **scratch = malloc((t->nthreads ? t->nthreads : 1) * sizeof *scratch);
    for (size_t i = 0; procs && scratch && i < t->nprocs; i++)
        bridge_proc(procs, t, &t->procs[i], window_s, scratch);
    free(scratch);
}

void sop__bridge_sched(sop_value *ev, const sop_tree_sched *t, int64_t effective_cpus,
                       double capacity_cpus)
{
    if (!t || t->polls < 2)
        return;
    double window_s = (t->last_poll_ms - t->first_poll_ms) / 1e3;
    if (!(window_s > 0))
        return;
    sop_value *o = sop__v_obj_at(ev, "sched");
    if (!o)
        return;
    double cpu = 0, wait = 0;
    int64_t alive = 0;
    for (size_t i = 0; i < t->nthreads; i++) {
        cpu += sop__tree_thread_cpu_s(&t->threads[i]);
        wait += sop__tree_thread_wait_s(&t->threads[i]);
        alive += t->threads[i].alive;
    }
    tree_figs f = {window_s,
                   t->polls,
                   effective_cpus,
                   capacity_cpus,
                   cpu,
                   wait,
                   (cpu + wait) / window_s,
                   alive,
                   (int64_t)t->nthreads,
                   t->dropped};
    set(o, &f, "", (void *)t);
}

static void sched_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    const sched_state *st = p;
    if (st->valid)
        sop__bridge_sched(ev, &st->t, cx->c->effective_cpus, cx->c->capacity_cpus);
}

static void sched_free(void *p)
{
    sched_state *st = p;
    sop__tree_free(&st->t);
    free(st);
}

static const sop_evk_group sched_groups[] = {
    {"sched",
     "engine/collect/collect_sched.c (probes/proc_tree.c): whole-tree scheduling over the "
     "window; absent with --duration 0, or when no task/TID/schedstat was readable",
     sop__evk_sched, &sop__evk_sched_n},
    {0},
};

const sop_provider sop__provider_sched = {
    .name = "sched",
    .probes = SOP_PROBE_THREADS,
    .groups = sched_groups,
    .start = sched_start,
    .poll = sched_poll,
    .finish = sched_finish,
    .emit = sched_emit,
    .free = sched_free,
};
