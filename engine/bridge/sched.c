/* sched.c (bridge) — adds ev.sched: the whole tree's CPU time and run-queue wait over the
 * window (target + descendants, every thread including those that came and went), its
 * runnable load against the effective CPUs, and per process the threads, their names and the
 * thread-pool libraries mapped. Keys per docs/evidence.md. Depends on probes/proc_tree.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"

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
    sop__v_set_int(o, "pid", p->pid);
    if (p->ppid > 0)
        sop__v_set_int(o, "ppid", p->ppid);
    if (p->comm[0])
        sop__v_set(o, "comm", sop__bridge_text(p->comm));
    if (p->cmdline[0])
        sop__v_set(o, "cmdline", sop__bridge_text(p->cmdline));
    sop__v_set_int(o, "threads", alive);
    sop__v_set_int(o, "threads_seen", (int64_t)n);
    sop__v_set_int(o, "threads_born", born);
    sop__v_set_int(o, "threads_exited", exited);
    sop__v_set_dbl(o, "cpu_s", cpu);
    sop__v_set_dbl(o, "wait_s", wait);
    if (window_s > 0)
        sop__v_set_dbl(o, "load", (cpu + wait) / window_s);
    if (!p->alive)
        sop__v_set_bool(o, "exited", true);
    if (!p->at_start)
        sop__v_set_bool(o, "born", true);
    if (p->nlibs) {
        sop_value *libs = sop__v_arr_at(o, "libs");
        for (size_t i = 0; libs && i < p->nlibs; i++) {
            sop_value *l = sop__v_obj();
            sop__v_set_str(l, "kind", p->libs[i].kind);
            sop__v_set_str(l, "name", p->libs[i].name);
            sop__v_push(libs, l);
        }
    }
    sop_value *nm = sop__v_arr_at(o, "names");
    for (size_t k = 0; nm && k < nnames; k++) {
        sop_value *e = sop__v_obj();
        sop__v_set(e, "name", sop__bridge_text(names[k].name));
        sop__v_set_int(e, "count", names[k].count);
        sop__v_set_dbl(e, "cpu_s", names[k].cpu_s);
        sop__v_set_dbl(e, "wait_s", names[k].wait_s);
        sop__v_push(nm, e);
    }
    if (names_cut)
        sop__v_set_bool(o, "names_cut", true);
    qsort(scratch, n, sizeof *scratch, by_busy_desc);
    sop_value *top = sop__v_arr_at(o, "top");
    for (size_t i = 0; top && i < n && i < TOP_THREADS; i++) {
        sop_value *e = sop__v_obj();
        sop__v_set_int(e, "tid", scratch[i]->tid);
        sop__v_set(e, "name", sop__bridge_text(scratch[i]->name));
        sop__v_set_dbl(e, "cpu_s", sop__tree_thread_cpu_s(scratch[i]));
        sop__v_set_dbl(e, "wait_s", sop__tree_thread_wait_s(scratch[i]));
        if (!scratch[i]->alive)
            sop__v_set_bool(e, "exited", true);
        sop__v_push(top, e);
    }
    sop__v_push(arr, o);
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
    sop__v_set_dbl(o, "window_s", window_s);
    sop__v_set_int(o, "polls", t->polls);
    sop__v_set_int(o, "effective_cpus", effective_cpus);
    sop__v_set_dbl(o, "capacity_cpus", capacity_cpus);
    sop__v_set_dbl(o, "cpu_s", cpu);
    sop__v_set_dbl(o, "runqueue_wait_s", wait);
    sop__v_set_dbl(o, "runnable_load", (cpu + wait) / window_s);
    sop__v_set_int(o, "threads", alive);
    sop__v_set_int(o, "threads_seen", (int64_t)t->nthreads);
    if (t->dropped)
        sop__v_set_bool(o, "cut", true);
    sop_value *procs = sop__v_arr_at(o, "procs");
    const sop_tree_thread **scratch = malloc((t->nthreads ? t->nthreads : 1) * sizeof *scratch);
    for (size_t i = 0; procs && scratch && i < t->nprocs; i++)
        bridge_proc(procs, t, &t->procs[i], window_s, scratch);
    free(scratch);
}
