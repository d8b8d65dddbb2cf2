/* collect.c — one collection: snapshot the target, its threads, children, cgroup and host;
 * wait out the window; snapshot again and compute rates; add the kernel log, the allocator,
 * NUMA placement and the CPython state; hand the result to the bridge. The top-level keys of
 * `ev` it writes itself are the schema table sop__evk_top below: documentation and the reads
 * check only, written by hand in to_tree (they sit between the groups). Depends on the probes'
 * headers and bridge/schema.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../probes/cpu_budget.h"
#include "bridge/bridge.h"
#include "bridge/schema.h"
#include "clock.h"
#include "collect_gpu.h"
#include "collect_heap.h"
#include "collect_tasks.h"
#include "engine.h"
#include "evidence.h"
#include "python/python.h"
#include "rank.h"
#include "sampler.h"

#define KMSG_MAX_AGE_S (7.0 * 24 * 3600)

typedef struct {
    sop_host host;
    sop_proc proc;
    sop_thread_list threads;
    sop_child_list children;
    sop_cgroup cgroup;
} snapshot;

/* Is the process of the open /proc/PID directory still there? The directory stays bound to
 * the process it was opened for: once that one is gone, reads through it fail even if the
 * number has been given to a new process. */
static bool target_alive(int pid_fd)
{
    char buf[64];
    return sop__read_small_at(pid_fd, "stat", buf, sizeof buf) > 0;
}

static void snapshot_free(snapshot *s)
{
    sop__thread_list_free(&s->threads);
    sop__child_list_free(&s->children);
    memset(&s->threads, 0, sizeof s->threads);
    memset(&s->children, 0, sizeof s->children);
}

static void sleep_until_ms(double deadline_ms)
{
    for (;;) {
        double left = deadline_ms - sop__now_ms();
        if (left <= 0)
            return;
        struct timespec ts = {(time_t)(left / 1e3), (long)(fmod(left, 1e3) * 1e6)};
        nanosleep(&ts, NULL);
    }
}

/* Returns 0, or the negative errno of the process probe when the target is gone/unreadable. */
static int take(int proc_root_fd, int pid_fd, int pid, const sop_collect_opts *o, snapshot *s,
                sop_missing *missing)
{
    memset(s, 0, sizeof *s);
    int rc = sop__proc_collect(pid_fd, pid, &s->proc, missing);
    if (rc != 0)
        return rc;
    if (o->probes & SOP_PROBE_THREADS)
        sop__threads_collect(pid_fd, &s->threads, missing);
    if (o->children && (o->probes & SOP_PROBE_CHILDREN))
        sop__children_collect(proc_root_fd, pid, &s->children, missing);
    if (o->probes & SOP_PROBE_CGROUP)
        sop__cgroup_collect(pid_fd, o->cgroup_root ? o->cgroup_root : "/sys/fs/cgroup", &s->cgroup,
                            missing);
    else
        sop__cgroup_init(&s->cgroup);
    if (o->probes & SOP_PROBE_HOST)
        sop__host_collect(&s->host, missing);
    else
        sop__host_init(&s->host);
    return 0;
}

/* The CPUs the job may use, once for everyone (probes/cpu_budget.c). */
static void cpu_budget(sop_collection *c)
{
    sop_cpu_budget b;
    sop__cpu_budget(c->host.ncpu, c->proc.status.cpus_allowed_list,
                    c->proc.status.cpus_allowed_count, c->cgroup.cpuset, c->cgroup.cpuset_count,
                    c->cgroup.quota_cpus, &b);
    c->effective_cpus = b.effective_cpus;
    c->capacity_cpus = b.capacity_cpus;
}

/* Whole-tree scheduling: polled at the window's start, every TREE_POLL_MS during it and at its
 * end, so threads and workers that come and go keep their time. */
#define TREE_POLL_MS 250.0
typedef struct {
    int root_fd, pid;
    sop_tree_sched *t;
    double next_ms;
    sop_gpu_window *gpu; /* its utilisation is read at the same polls (engine/collect_gpu.c) */
    long gpu_polls;
    sop_tasks_window *tasks; /* asyncio tasks: first read once the sampler sees a loop run */
    const sop_sampler *sampler;
    const char *proc_root;
} tree_poller;

static void tree_poll(tree_poller *tp, bool final, sop_missing *missing)
{
    /* not at the window's start: a reading is NVML's average over its last period, before */
    if (tp->gpu && tp->gpu_polls++ > 0)
        sop__gpu_window_tick(tp->gpu);
    if (!tp->t) {
        tp->next_ms = sop__now_ms() + TREE_POLL_MS;
        return;
    }
    sop_missing scratch = {0};
    double now = sop__now_ms();
    if (sop__tree_poll(tp->root_fd, tp->pid, tp->t, final, final ? missing : &scratch) == 0) {
        if (tp->t->polls == 1)
            tp->t->first_poll_ms = now;
        tp->t->last_poll_ms = now;
    }
    sop__missing_free(&scratch);
    tp->next_ms = now + TREE_POLL_MS;
}

static void tree_progress(void *ctx, double done_frac, long ticks)
{
    (void)done_frac, (void)ticks;
    tree_poller *tp = ctx;
    if (tp->tasks && tp->tasks->wanted && !tp->tasks->begun &&
        sop__sampler_saw_asyncio(tp->sampler))
        sop__tasks_window_begin(tp->tasks, tp->pid, tp->proc_root);
    if (sop__now_ms() >= tp->next_ms)
        tree_poll(tp, false, NULL);
}

static void tree_wait_until_ms(tree_poller *tp, double deadline_ms)
{
    while ((tp->t || (tp->gpu && tp->gpu->nvml)) && tp->next_ms < deadline_ms) {
        sleep_until_ms(tp->next_ms);
        tree_poll(tp, false, NULL);
    }
    sleep_until_ms(deadline_ms);
}

/* Remove member `key` of obj (a probe the caller turned off leaves its part absent). */
static void drop_key(sop_value *obj, const char *key)
{
    sop_value *prev = NULL;
    for (sop_value *v = obj ? obj->child : NULL; v; prev = v, v = v->next) {
        if (!v->key || strcmp(v->key, key) != 0)
            continue;
        if (prev)
            prev->next = v->next;
        else
            obj->child = v->next;
        if (obj->last == v)
            obj->last = prev;
        obj->count--;
        v->next = NULL;
        sop__v_free(v);
        return;
    }
}

#define H SOP_EVK_H
const sop_evk sop__evk_top[] = {
    H("schema", SOP_EVK_INT, "", "1"),
    H("pid", SOP_EVK_INT, "", "target pid"),
    H("duration_s", SOP_EVK_NUM, "s", "observation window (0 = one snapshot)"),
    H("collected_at", SOP_EVK_NUM, "s", "wall-clock seconds since the epoch"),
    H("alive", SOP_EVK_BOOL, "",
      "false when the pid was gone (post-mortem from the kernel log only)"),
    H("collect_ms", SOP_EVK_NUM, "ms", "time the collection itself took, without the window"),
    H("effective_cpus", SOP_EVK_INT, "CPUs",
      "the CPUs both the affinity and the cgroup cpuset allow (the intersection of the two "
      "lists; their counts when a list is unreadable), at most ncpu and ceil(quota); computed "
      "once (probes/cpu_budget.c) and read by every rule; absent when the pid was gone"),
    H("missing", SOP_EVK_ARR, "", "what a probe could not read, and why"),
    H("missing[].probe", SOP_EVK_TEXT, "", ""),
    H("missing[].reason", SOP_EVK_TEXT, "", ""),
};
const size_t sop__evk_top_n = sizeof sop__evk_top / sizeof sop__evk_top[0];
#undef H

static sop_value *to_tree(const sop_collection *c, double now, unsigned probes)
{
    sop_value *ev = sop__v_obj();
    if (!ev)
        return NULL;
    sop__v_set_int(ev, "schema", 1);
    sop__v_set_int(ev, "pid", c->pid);
    sop__v_set_dbl(ev, "duration_s", c->duration_s);
    sop__v_set_dbl(ev, "collected_at", c->collected_at);
    sop__v_set_bool(ev, "alive", c->alive);
    sop__bridge_host(ev, &c->host, &c->ooms, now);
    if (c->alive) {
        sop__bridge_proc(ev, &c->proc, &c->threads, &c->children, now);
        sop__bridge_family(ev, c->have_parent ? &c->parent : NULL, &c->siblings, now);
        if (!(probes & SOP_PROBE_THREADS))
            drop_key(ev, "threads");
        if (probes & SOP_PROBE_CGROUP)
            sop__bridge_cgroup(ev, &c->cgroup);
        sop__v_set_int(ev, "effective_cpus", c->effective_cpus);
        if (c->sched)
            sop__bridge_sched(ev, c->sched, c->effective_cpus, c->capacity_cpus);
        if (probes & SOP_PROBE_ALLOC)
            sop__bridge_alloc(ev, &c->alloc);
        if (probes & SOP_PROBE_HOST)
            sop__bridge_numa(ev, &c->numa);
        if (c->gpu)
            sop__bridge_gpu(ev, c->gpu);
        if (c->python)
            sop__bridge_python(ev, c->python);
        if (c->sampling)
            sop__sampler_bridge(c->sampling, ev);
        sop__rank_identity(ev);
    }
    sop_value *missing = sop__v_arr_at(ev, "missing");
    for (size_t i = 0; i < c->missing.n; i++) {
        sop_value *m = sop__v_obj();
        sop__v_set_str(m, "probe", c->missing.items[i].probe);
        sop__v_set(m, "reason", sop__bridge_text(c->missing.items[i].reason));
        sop__v_push(missing, m);
    }
    return ev;
}

void sop__collection_free(sop_collection *c)
{
    sop__thread_list_free(&c->threads);
    sop__child_list_free(&c->children);
    sop__child_list_free(&c->siblings);
    sop__python_free(c->python);
    c->python = NULL;
    sop__sampler_close(c->sampling);
    c->sampling = NULL;
    sop__v_free(c->heap);
    c->heap = NULL;
    free(c->gpu);
    c->gpu = NULL;
    sop__v_free(c->tasks);
    c->tasks = NULL;
    sop__tree_free(c->sched);
    free(c->sched);
    c->sched = NULL;
    sop__missing_free(&c->missing);
}

/* A Python thread is active when the OS has it running or runnable, or it holds the GIL. */
static void mark_active_threads(sop_python *py, const sop_thread_list *threads)
{
    for (size_t i = 0; i < py->nthreads; i++) {
        sop_pythread *t = &py->threads[i];
        for (size_t j = 0; j < threads->n; j++)
            if (threads->items[j].tid == t->tid) {
                t->active = t->gil || threads->items[j].stat.state == 'R';
                break;
            }
    }
}

/* The pid is gone: a post-mortem is possible when the kernel log remembers killing it. */
static int post_mortem(int pid, sop_collection *c, char *err, size_t errlen)
{
    sop__host_collect(&c->host, &c->missing);
    sop__kmsg_collect(&c->ooms, c->host.btime, KMSG_MAX_AGE_S, &c->missing);
    for (size_t i = 0; i < c->ooms.n; i++)
        if (c->ooms.items[i].pid == pid)
            return 0;
    snprintf(err, errlen, "pid %d: no such process (and no OOM kill of it in the kernel log)", pid);
    return SOP_ENOTARGET;
}

/* The window's flame graph and timeline as inline SVG for an HTML page; NULL on failure. */
static char *render_pictures(const sop_sampler *s, int pid, const sop_timeline_gpu *gpu)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("<h2>Flame graph</h2>\n", f);
    int rc = sop__record_pictures(s, pid, 1u, 0, NULL, f);
    fputs("<h2>Timeline</h2>\n", f);
    if (rc == 0)
        rc = sop__record_pictures(s, pid, 2u, 0, gpu, f);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int sop__collect(int pid, const sop_collect_opts *o, sop_value **out, char **pictures, char *err,
                 size_t errlen)
{
    *out = NULL;
    if (pictures)
        *pictures = NULL;
    double t_start = sop__now_ms();
    const char *proc_root = o->proc_root ? o->proc_root : "/proc";
    int root_fd = open(proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        snprintf(err, errlen, "%s: %s", proc_root, sop__strerror(errno));
        return SOP_EIO;
    }
    char name[32];
    snprintf(name, sizeof name, "%d", pid);
    sop_collection c;
    memset(&c, 0, sizeof c);
    c.pid = pid;
    c.alive = true;
    c.effective_cpus = SOP_NA;
    c.capacity_cpus = NAN;
    sop__numa_init(&c.numa);
    int rc = 0;
    int pid_fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snapshot a, b;
    double t_run = 0;
    sop_gpu_series *gpu_lane_buf = NULL; /* a copy of the window's GPU readings, for pictures */
    sop_timeline_gpu gpu_lane = {0};
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (pid_fd < 0) {
        c.alive = false;
        rc = post_mortem(pid, &c, err, errlen);
        goto done;
    }
    rc = take(root_fd, pid_fd, pid, o, &a, &c.missing);
    if (rc == -ESRCH || rc == -ENOENT) {
        c.alive = false;
        snapshot_free(&a);
        rc = post_mortem(pid, &c, err, errlen);
        goto done;
    }
    if (rc != 0) {
        snprintf(err, errlen, "pid %d: %s", pid, sop__strerror(-rc));
        rc = rc == -EACCES || rc == -EPERM ? SOP_EACCES : SOP_EIO;
        goto done;
    }
    double t0 = sop__now_ms();
    snapshot *now = &a;
    c.duration_s = 0;
    sop_sampler *sampler = NULL;
    bool want_heap = o->python && (o->probes & SOP_PROBE_PYTHON);
    sop_heap_window hw = {0};
    /* The CPython runtime is found once, here, for the census, the sampler and the stacks;
     * each adds the reasons finding it gave where it would have found it itself, and finds
     * it again if the process has exec'd since (py_runtime.h). */
    sop_pyruntime rt_found, *rt = NULL;
    if (o->python && (o->probes & SOP_PROBE_PYTHON)) {
        sop_missing scratch = {0};
        sop__pyruntime_find(pid, proc_root, &rt_found, &scratch);
        sop__missing_free(&scratch);
        rt = &rt_found;
    }
    if (want_heap)
        sop__heap_window_start(&hw, rt, pid, proc_root, (o->probes & SOP_PROBE_HEAP) != 0);
    sop_gpu_window gw;
    sop__gpu_window_start(&gw, root_fd, &a.proc, &a.children);
    sop_tasks_window tw = {0};
    if (want_heap && o->duration_s > 0)
        sop__tasks_window_start(&tw, pid, proc_root);
    tree_poller tp = {root_fd, pid, NULL, 0, &gw, 0, tw.wanted ? &tw : NULL, NULL, proc_root};
    if (o->duration_s > 0 && (o->probes & SOP_PROBE_THREADS)) {
        tp.t = calloc(1, sizeof *tp.t);
        tree_poll(&tp, false, NULL);
    }
    if (o->duration_s > 0) {
        /* A CPython target is sampled over the window; anything else is simply waited on. */
        if (o->python && (o->probes & SOP_PROBE_PYTHON) && o->rate_hz > 0) {
            sop_missing scratch = {0};
            if (sop__sampler_open(pid, proc_root, rt,
                                  o->children && (o->probes & SOP_PROBE_CHILDREN), &sampler,
                                  &scratch) < 0)
                sampler = NULL;
            sop__missing_free(&scratch);
        }
        if (sampler && pictures && (o->flags & SOP_COLLECT_PICTURES))
            sop__sampler_keep_timeline(sampler);
        t_run = sop__now_ms(); /* the sampler's timeline starts here */
        tp.sampler = sampler;
        if (sampler)
            sop__sampler_run(sampler, t0 + o->duration_s * 1e3, o->rate_hz,
                             tp.t || gw.nvml || tp.tasks ? tree_progress : NULL, &tp);
        /* the window is the asked duration whatever the rate (or a target that left early) */
        tree_wait_until_ms(&tp, t0 + o->duration_s * 1e3);
        sop_missing scratch = {0};
        int rc2 = take(root_fd, pid_fd, pid, o, &b, &scratch);
        double secs = (sop__now_ms() - t0) / 1e3;
        if (rc2 == 0 && (!b.proc.have_stat || !target_alive(pid_fd)))
            rc2 = -ESRCH; /* gone while read: a partial second snapshot is no current state */
        if (rc2 == 0) {
            /* The second snapshot is the current state; its failures replace the first's. */
            sop__missing_free(&c.missing);
            c.missing = scratch;
            double hz = (double)sysconf(_SC_CLK_TCK);
            sop__proc_rates(&b.proc, &a.proc, secs, hz);
            sop__threads_rates(&b.threads, &a.threads, secs, hz);
            sop__children_rates(&b.children, &a.children, secs, hz);
            sop__cgroup_rates(&b.cgroup, &a.cgroup, secs);
            sop__host_rates(&b.host, &a.host, secs);
            now = &b;
            c.duration_s = secs;
            tree_poll(&tp, true, &c.missing);
            if (tp.t && tp.t->polls >= 2 && !tp.t->no_schedstat) {
                c.sched = tp.t;
                tp.t = NULL;
            } else if (tp.t && tp.t->no_schedstat) {
                sop__missing_add(&c.missing, "sched",
                                 "no task schedstat readable (kernel without schedstats?)");
            }
        } else {
            sop__missing_free(&scratch);
            sop__missing_add(&c.missing, "window",
                             "the target exited during the %.1f s window; rates not measured",
                             o->duration_s);
        }
    }
    c.host = now->host;
    c.proc = now->proc;
    c.threads = now->threads;
    c.children = now->children;
    c.cgroup = now->cgroup;
    memset(&now->threads, 0, sizeof now->threads);
    memset(&now->children, 0, sizeof now->children);
    cpu_budget(&c);
    c.gpu = sop__gpu_window_end(&gw, root_fd, &c.proc, &c.children, &c.missing);
    const sop_gpu_series *gs = sop__gpu_window_series(&gw);
    if (gs && sampler && pictures && (o->flags & SOP_COLLECT_PICTURES) &&
        (gpu_lane_buf = malloc(sizeof *gpu_lane_buf))) { /* the timeline's GPU lane */
        *gpu_lane_buf = *gs;
        gpu_lane =
            (sop_timeline_gpu){gpu_lane_buf->t_ms, gpu_lane_buf->busy_pct, gpu_lane_buf->n, t_run};
    }
    sop__gpu_window_free(&gw);
    if (o->children && (o->probes & SOP_PROBE_CHILDREN) && c.proc.have_stat)
        sop__siblings_collect(root_fd, pid, c.proc.stat.ppid, &c.parent, &c.have_parent,
                              &c.siblings, &c.missing);
    if (o->probes & SOP_PROBE_ALLOC)
        sop__alloc_detect(&c.proc, &c.alloc);
    if (o->probes & SOP_PROBE_HOST)
        sop__numa_collect(root_fd, pid_fd, &c.numa, &c.missing);
    bool alive_now = target_alive(pid_fd);
    if (o->python && (o->probes & SOP_PROBE_PYTHON) && !alive_now)
        sop__missing_add(&c.missing, "python", "the target exited; Python stacks not read");
    if (o->python && (o->probes & SOP_PROBE_PYTHON) && alive_now) {
        /* Right after the thread snapshot, whose OS states stand in for the probe's own reads. */
        unsigned flags = c.threads.n ? SOP_PY_SKIP_OS_STATE : 0;
        int prc = sop__python_collect_with(rt, pid, proc_root, flags, &c.python, &c.missing);
        if (prc == -ENOEXEC)
            sop__missing_add(&c.missing, "python", "not a CPython process");
        /* The walker finds the target by number: if ours is gone now, the number may belong
         * to another process already (pid reuse). Keep nothing it read. */
        if (!target_alive(pid_fd) && c.python) {
            sop__python_free(c.python);
            c.python = NULL;
            sop__missing_add(&c.missing, "python",
                             "the target exited during the read; stacks discarded (pid reuse)");
        }
        if (c.python && flags)
            mark_active_threads(c.python, &c.threads);
        if (c.python && want_heap)
            c.heap = sop__heap_window_end(
                &hw, rt, pid, proc_root, (o->probes & SOP_PROBE_HEAP) != 0, &c.proc,
                (o->probes & SOP_PROBE_CGROUP) ? &c.cgroup : NULL, c.duration_s, &c.missing);
        if (c.python && want_heap)
            c.tasks = sop__tasks_window_end(&tw, pid, proc_root, c.duration_s, &c.missing);
    }
    sop__heap_window_free(&hw);
    sop__tasks_window_free(&tw);
    if (o->kernel_log && (o->probes & SOP_PROBE_KMSG))
        sop__kmsg_collect(&c.ooms, c.host.btime, KMSG_MAX_AGE_S, &c.missing);
    rc = 0;
    if (sampler && c.python) {
        c.sampling = sampler;
        sampler = NULL;
    }
    sop__sampler_close(sampler);
    sop__tree_free(tp.t);
    free(tp.t);
    tp.t = NULL;
done:
    snapshot_free(&a);
    snapshot_free(&b);
    if (pid_fd >= 0)
        close(pid_fd);
    close(root_fd);
    if (rc == 0) {
        c.collected_at = sop__wall_s();
        sop_value *tree = to_tree(&c, c.collected_at, c.alive ? o->probes : SOP_PROBE_ALL);
        if (tree && c.heap) { /* ev.python.heap: the tree takes it over */
            sop__v_set(sop__v_obj_at(tree, "python"), "heap", c.heap);
            c.heap = NULL;
        }
        if (tree && c.tasks) { /* ev.python.tasks */
            sop__v_set(sop__v_obj_at(tree, "python"), "tasks", c.tasks);
            c.tasks = NULL;
        }
        if (!tree) {
            rc = SOP_ENOMEM;
            snprintf(err, errlen, "out of memory");
        } else {
            sop__v_set_dbl(tree, "collect_ms",
                           sop__now_ms() - t_start - (c.duration_s > 0 ? c.duration_s * 1e3 : 0));
            *out = tree;
            if (pictures && (o->flags & SOP_COLLECT_PICTURES) && c.sampling)
                *pictures = render_pictures(c.sampling, pid, &gpu_lane);
        }
    }
    free(gpu_lane_buf);
    sop__collection_free(&c);
    return rc;
}
