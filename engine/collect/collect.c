/* collect.c — one collection, a small scheduler over the evidence providers (provider.h,
 * docs/providers.md): snapshot the target, its threads, children, cgroup and host; start every
 * provider that is on; run the window (the sampler's ticks, or a sleep) polling each provider
 * when it asks; snapshot again and compute rates; finish every provider, then let each emit
 * its keys, in table order. The top-level keys of `ev` it writes itself are the schema table
 * sop__evk_top below (documentation and the reads check only). Depends on the probes' headers,
 * provider.h, sampler.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bridge/bridge.h"
#include "bridge/schema.h"
#include "clock.h"
#include "collect.h"
#include "engine.h"
#include "evidence.h"
#include "picture_writers.h"
#include "provider.h"
#include "python/cpython.h"
#include "render.h"
#include "sampler.h"
#include "zalloc.h"

#define KMSG_MAX_AGE_S (7.0 * 24 * 3600)

typedef struct {
    sop_host host;
    sop_proc proc;
    sop_thread_list threads;
    sop_child_list children;
    sop_cgroup cgroup;
    char *maps; /* the process's maps text, for the providers (cx.maps) */
} snapshot;

/* Is the process of the open /proc/PID directory still there? The directory stays bound to
 * the process it was opened for: once that one is gone, reads through it fail even if the
 * number has been given to a new process. */
static bool target_alive(int pid_fd)
{
    char buf[64];
    return sop__read_small_at(pid_fd, "stat", buf, sizeof buf) > 0;
}

bool sop__collect_target_alive(const sop_collect_ctx *cx)
{
    return target_alive(cx->pid_fd);
}

/* Has the process of snapshot p exited, its parent not yet reaping it? A zombie leader with a
 * live thread runs on (its main thread returned); one with none is as dead as a reaped pid: an
 * OOM kill leaves that state until the parent waits, which a busy host can delay. */
static bool exited_unreaped(const char *proc_root, int pid, const sop_proc *p)
{
    return (p->stat.state == 'Z' || p->stat.state == 'X') && sop__live_task(proc_root, pid) == pid;
}

static void snapshot_free(snapshot *s)
{
    sop__thread_list_free(&s->threads);
    sop__child_list_free(&s->children);
    free(s->maps);
    s->maps = NULL;
    memset(&s->threads, 0, sizeof s->threads);
    memset(&s->children, 0, sizeof s->children);
}

#define STOP_SLICE_MS 50.0 /* a stop request is seen within this long */

static bool stop_asked(const volatile int *stop)
{
    return stop && __atomic_load_n(stop, __ATOMIC_RELAXED); /* set from another thread */
}

/* Sleep to deadline_ms, or until *stop turns nonzero (looked at every STOP_SLICE_MS). */
static void sleep_until_ms(double deadline_ms, const volatile int *stop)
{
    for (;;) {
        double left = deadline_ms - sop__now_ms();
        if (left <= 0 || stop_asked(stop))
            return;
        if (stop && left > STOP_SLICE_MS)
            left = STOP_SLICE_MS;
        struct timespec ts = {(time_t)(left / 1e3), (long)(fmod(left, 1e3) * 1e6)};
        nanosleep(&ts, NULL);
    }
}

/* Returns 0, or the negative errno of the process probe when the target is gone/unreadable.
 * first: the window's first snapshot, taken to measure rates against (children's memory left
 * out: the evidence shows the last snapshot's). */
static int take(int proc_root_fd, int pid_fd, int pid, const sop_collect_opts *o, bool first,
                snapshot *s, sop_missing *missing)
{
    memset(s, 0, sizeof *s);
    int rc = sop__proc_collect_maps(pid_fd, pid, &s->proc, &s->maps, missing);
    if (rc != 0)
        return rc;
    if (o->probes & SOP_PROBE_THREADS)
        sop__threads_collect(pid_fd, &s->threads, missing);
    if (o->children && (o->probes & SOP_PROBE_CHILDREN))
        sop__children_collect_ex(proc_root_fd, pid, !first, &s->children, missing);
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

/* The providers of one collection: their states (NULL: off) and when each wants a poll. */
typedef struct {
    sop_collect_ctx *cx;
    void *st[SOP_NPROVIDERS];
    double due_ms[SOP_NPROVIDERS];
} providers;

static void start_all(providers *ps)
{
    sop_collect_ctx *cx = ps->cx;
    for (size_t i = 0; i < sop__nproviders; i++) {
        const sop_provider *p = sop__providers[i];
        ps->due_ms[i] = INFINITY;
        if ((cx->o->probes & p->probes) != p->probes)
            continue;
        ps->st[i] = p->start ? p->start(cx) : &sop__provider_on;
    }
}

/* Polls the providers whose time has come; on a sampler's tick also those that asked for
 * every tick. */
static void poll_due(providers *ps, bool sampler_tick)
{
    double now = sop__now_ms();
    for (size_t i = 0; i < sop__nproviders; i++) {
        const sop_provider *p = sop__providers[i];
        if (!ps->st[i] || !p->poll || !(ps->due_ms[i] <= now))
            continue;
        if (ps->due_ms[i] == SOP_POLL_EVERY_TICK && !sampler_tick)
            continue;
        ps->due_ms[i] = p->poll(ps->cx, ps->st[i], now);
    }
}

static void first_polls(providers *ps)
{
    double now = sop__now_ms();
    for (size_t i = 0; i < sop__nproviders; i++)
        if (ps->st[i] && sop__providers[i]->poll)
            ps->due_ms[i] = sop__providers[i]->poll(ps->cx, ps->st[i], now);
}

static bool any_polls(const providers *ps)
{
    for (size_t i = 0; i < sop__nproviders; i++)
        if (ps->st[i] && ps->due_ms[i] != INFINITY)
            return true;
    return false;
}

static void on_tick(void *ctx, double done_frac, long ticks)
{
    (void)done_frac, (void)ticks;
    poll_due(ctx, true);
}

/* Without a sampler (or after it): sleep to each poll the providers asked for, then to the end. */
static void wait_until_ms(providers *ps, double deadline_ms)
{
    for (;;) {
        double next = INFINITY;
        for (size_t i = 0; i < sop__nproviders; i++)
            if (ps->st[i] && isfinite(ps->due_ms[i]) && ps->due_ms[i] < next)
                next = ps->due_ms[i];
        if (!(next < deadline_ms) || stop_asked(ps->cx->o->stop))
            break;
        sleep_until_ms(next, ps->cx->o->stop);
        poll_due(ps, false);
    }
    sleep_until_ms(deadline_ms, ps->cx->o->stop);
}

static void finish_all(providers *ps)
{
    for (size_t i = 0; i < sop__nproviders; i++)
        if (ps->st[i] && sop__providers[i]->finish)
            sop__providers[i]->finish(ps->cx, ps->st[i]);
}

static void free_all(providers *ps)
{
    for (size_t i = 0; i < sop__nproviders; i++) {
        if (ps->st[i] && ps->st[i] != &sop__provider_on && sop__providers[i]->free)
            sop__providers[i]->free(ps->st[i]);
        ps->st[i] = NULL;
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

static sop_value *to_tree(providers *ps)
{
    const sop_collection *c = ps->cx->c;
    sop_value *ev = sop__v_obj();
    if (!ev)
        return NULL;
    sop__v_set_int(ev, "schema", 1);
    sop__v_set_int(ev, "pid", c->pid);
    sop__v_set_dbl(ev, "duration_s", c->duration_s);
    sop__v_set_dbl(ev, "collected_at", c->collected_at);
    sop__v_set_bool(ev, "alive", c->alive);
    for (size_t i = 0; i < sop__nproviders; i++) {
        const sop_provider *p = sop__providers[i];
        void *st = c->alive ? ps->st[i] : p->post_mortem ? &sop__provider_on : NULL;
        if (st && p->emit)
            p->emit(ps->cx, st, ev);
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
    sop__python_free(c->python);
    c->python = NULL;
    sop__sampler_close(c->sampling);
    c->sampling = NULL;
    sop__missing_free(&c->missing);
}

/* The pid is gone: a post-mortem is possible when the kernel log remembers killing it. */
static int post_mortem(int pid, bool zombie, sop_collection *c, char *err, size_t errlen)
{
    sop__host_collect(&c->host, &c->missing);
    /* the boot time the process start times use (see collect_target.c's kmsg_finish) */
    sop__kmsg_collect(&c->ooms, sop__proc_btime_s(), KMSG_MAX_AGE_S, c->host.oom_kill, &c->missing);
    for (size_t i = 0; i < c->ooms.n; i++)
        if (c->ooms.items[i].pid == pid)
            return 0;
    snprintf(err, errlen, "pid %d: %s (and no OOM kill of it in the kernel log)", pid,
             zombie ? "has exited (a zombie its parent has not reaped)" : "no such process");
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

/* A CPython target is sampled over the window (its sampler into cx->sampler); anything else
 * is simply waited on. */
static void open_sampler(sop_collect_ctx *cx)
{
    const sop_collect_opts *o = cx->o;
    if (cx->rt && o->rate_hz > 0) {
        sop_missing scratch = {0};
        if (sop__sampler_open(cx->pid, cx->proc_root, cx->rt,
                              o->children && (o->probes & SOP_PROBE_CHILDREN), &cx->sampler,
                              &scratch) < 0)
            cx->sampler = NULL;
        sop__missing_free(&scratch);
    }
    if (cx->sampler && cx->pictures)
        sop__sampler_keep_timeline(cx->sampler);
}

/* The window from t0 (ms): sampled and polled until its end, then the second snapshot b and
 * the rates between a and b. True when b is the current state; false when the target left
 * during the window (c->missing says so; a stays the state). */
static bool run_window(providers *ps, snapshot *a, snapshot *b, double t0)
{
    sop_collect_ctx *cx = ps->cx;
    const sop_collect_opts *o = cx->o;
    sop_collection *c = cx->c;
    if (cx->sampler)
        sop__sampler_run(cx->sampler, t0 + o->duration_s * 1e3, o->rate_hz,
                         any_polls(ps) ? on_tick : NULL, ps, o->stop);
    /* the window is the asked duration whatever the rate (or a target that left early) */
    wait_until_ms(ps, t0 + o->duration_s * 1e3);
    sop_missing scratch = {0};
    int rc2 = take(cx->root_fd, cx->pid_fd, cx->pid, o, false, b, &scratch);
    double secs = (sop__now_ms() - t0) / 1e3;
    if (rc2 == 0 && (!b->proc.have_stat || !target_alive(cx->pid_fd) ||
                     exited_unreaped(cx->proc_root, cx->pid, &b->proc)))
        rc2 = -ESRCH; /* gone while read: a partial second snapshot is no current state */
    if (rc2 != 0) {
        sop__missing_free(&scratch);
        sop__missing_add(&c->missing, "window",
                         "the target exited during the %.1f s window; rates not measured",
                         o->duration_s);
        if (a->children.n) /* the first snapshot stands; it left their memory out (take) */
            sop__missing_add(&c->missing, "children",
                             "smaps_rollup read only at the window's end: pss and private "
                             "figures absent");
        return false;
    }
    /* The second snapshot is the current state; its failures replace the first's. */
    sop__missing_free(&c->missing);
    c->missing = scratch;
    double hz = (double)sysconf(_SC_CLK_TCK);
    sop__proc_rates(&b->proc, &a->proc, secs, hz);
    sop__threads_rates(&b->threads, &a->threads, secs, hz);
    sop__children_rates(&b->children, &a->children, secs, hz);
    sop__cgroup_rates(&b->cgroup, &a->cgroup, secs);
    sop__host_rates(&b->host, &a->host, secs);
    c->duration_s = secs;
    cx->window_ok = true;
    return true;
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
    /* Mapped fresh rather than cleared on the stack: of its 110 KiB only the parts written
     * (the process, host and cgroup snapshots; the OOM records a log holds) become resident. */
    sop_collection *c = sop__zalloc(1, sizeof *c);
    if (!c) {
        close(root_fd);
        snprintf(err, errlen, "out of memory");
        return SOP_ENOMEM;
    }
    c->pid = pid;
    c->alive = true;
    c->effective_cpus = SOP_NA;
    c->capacity_cpus = NAN;
    int rc = 0;
    int pid_fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    sop_collect_ctx cx = {.pid = pid,
                          .root_fd = root_fd,
                          .pid_fd = pid_fd,
                          .proc_root = proc_root,
                          .o = o,
                          .c = c,
                          .pictures = pictures && (o->flags & SOP_COLLECT_PICTURES)};
    providers ps = {.cx = &cx};
    /* take() clears a snapshot before it fills it: here only what snapshot_free reads (b is
     * taken only when there is a window). */
    snapshot a, b;
    double t_run = 0;
    a.threads = b.threads = (sop_thread_list){0};
    a.children = b.children = (sop_child_list){0};
    a.maps = b.maps = NULL;
    if (pid_fd < 0) {
        c->alive = false;
        rc = post_mortem(pid, false, c, err, errlen);
        goto done;
    }
    rc = take(root_fd, pid_fd, pid, o, o->duration_s > 0, &a, &c->missing);
    bool zombie = rc == 0 && exited_unreaped(proc_root, pid, &a.proc);
    if (zombie || rc == -ESRCH || rc == -ENOENT) {
        c->alive = false;
        snapshot_free(&a);
        rc = post_mortem(pid, zombie, c, err, errlen);
        goto done;
    }
    if (rc != 0) {
        snprintf(err, errlen, "pid %d: %s", pid, sop__strerror(-rc));
        rc = rc == -EACCES || rc == -EPERM ? SOP_EACCES : SOP_EIO;
        goto done;
    }
    double t0 = sop__now_ms();
    snapshot *now = &a;
    c->duration_s = 0;
    cx.proc0 = &a.proc;
    cx.children0 = &a.children;
    cx.maps = a.maps;
    start_all(&ps);
    if (o->duration_s > 0)
        open_sampler(&cx);
    first_polls(&ps);
    if (o->duration_s > 0) {
        /* the start's readers are done with its maps text (200 KB for a process with torch) */
        free(a.maps);
        a.maps = NULL;
        cx.maps = NULL;
        t_run = sop__now_ms(); /* the sampler's timeline starts here */
        if (run_window(&ps, &a, &b, t0))
            now = &b;
    }
    cx.maps = now->maps;
    c->host = now->host;
    c->proc = now->proc;
    c->threads = now->threads;
    c->children = now->children;
    c->cgroup = now->cgroup;
    memset(&now->threads, 0, sizeof now->threads);
    memset(&now->children, 0, sizeof now->children);
    cx.proc0 = NULL;
    cx.children0 = NULL;
    finish_all(&ps);
    rc = 0;
    sop__sampler_close(cx.sampler); /* kept (c->sampling) only with the stacks it explains */
    cx.sampler = NULL;
done:
    snapshot_free(&a);
    snapshot_free(&b);
    if (pid_fd >= 0)
        close(pid_fd);
    close(root_fd);
    if (rc == 0) {
        c->collected_at = sop__wall_s();
        sop_value *tree = to_tree(&ps);
        if (!tree) {
            rc = SOP_ENOMEM;
            snprintf(err, errlen, "out of memory");
        } else {
            sop__v_set_dbl(tree, "collect_ms",
                           sop__now_ms() - t_start - (c->duration_s > 0 ? c->duration_s * 1e3 : 0));
            *out = tree;
            if (cx.pictures && c->sampling) {
                sop_timeline_gpu lane = {0};
                if (cx.gpu_lane)
                    lane = (sop_timeline_gpu){cx.gpu_lane->t_ms, cx.gpu_lane->busy_pct,
                                              cx.gpu_lane->n, t_run};
                *pictures = render_pictures(c->sampling, pid, &lane);
            }
        }
    }
    free(cx.gpu_lane);
    sop__collection_free(c);
    sop__zfree(c);
    free_all(&ps);
    return rc;
}
