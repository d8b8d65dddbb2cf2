/* watch.c — sop_watch: a thread of its own that owns an engine and diagnoses one pid at a fixed
 * rate (a run starts every interval) and on demand (sop_watch_trigger), handing each report to
 * a callback. pthreads only: no signals, no global state. Each window's evidence carries the
 * memory readings of the windows before it (ev.watch, watch_history.c). Depends on engine.h
 * (collect, evaluate), clock.h, watch_history.h and libc. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api_int.h"
#include "clock.h"
#include "engine.h"
#include "render.h"
#include "watch_history.h"

struct sop_watch {
    pthread_t thread;
    pid_t owner; /* the process whose thread this is: in a fork()ed child the watch is inert */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sop_engine *engine; /* used by the watch thread only */
    sop_watch_config cfg;
    sop_watch_fn fn;
    void *user;
    char *strings; /* copies of cfg.collect.proc_root / cgroup_root */
    /* under mu */
    bool stop;
    volatile int stop_window; /* the collection's stop (sop_collect_opts.stop): set when freed */
    bool pending;
    bool detached; /* sop_watch_free was called from the callback: the thread frees w */
    _Atomic unsigned long long runs;
    _Atomic unsigned long long failed;
    /* The last successful run, kept for sop_watch_openmetrics; under last_mu. */
    pthread_mutex_t last_mu;
    sop_report *last_report;
    sop_evidence *last_evidence;
    sop_watch_history history; /* the watch thread's: earlier windows' memory, for ev.watch */
};

void sop_watch_config_init(sop_watch_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    sop_collect_opts_init(&cfg->collect);
}

static void watch_destroy(sop_watch *w)
{
    sop_engine_free(w->engine);
    sop_report_free(w->last_report);
    sop_evidence_free(w->last_evidence);
    pthread_mutex_destroy(&w->last_mu);
    free(w->strings);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static void run_once(sop_watch *w, int on_demand)
{
    sop_engine *e = w->engine;
    int pid = w->cfg.pid > 0 ? w->cfg.pid : (int)getpid();
    double t0 = sop__now_ms();
    sop_evidence *ev = NULL;
    sop_report *r = NULL;
    int rc = sop_collect(e, pid, &w->cfg.collect, &ev);
    if (rc == 0) {
        sop__watch_history_note(&w->history, ev->tree); /* ev.watch: the trend across windows */
        rc = sop_evaluate(e, ev, &r);
    }
    sop_watch_event event = {
        .pid = pid,
        .seq = atomic_load(&w->runs) + 1,
        .on_demand = on_demand,
        .rc = rc,
        .error = rc ? sop_last_error(e) : "",
        .evidence = ev,
        .report = rc ? NULL : r,
        .run_ms = sop__now_ms() - t0,
    };
    if (rc != 0 && !event.error[0])
        event.error = sop_strerror(rc);
    atomic_fetch_add(&w->runs, 1);
    if (rc != 0)
        atomic_fetch_add(&w->failed, 1);
    sop_report *drop_r = r;
    sop_evidence *drop_ev = ev;
    if (rc == 0) {
        /* Reports and evidence are immutable: keep this pair (before the callback, so that
         * sop_watch_openmetrics there shows this run), free the one it replaces after it. */
        pthread_mutex_lock(&w->last_mu);
        drop_r = w->last_report;
        drop_ev = w->last_evidence;
        w->last_report = r;
        w->last_evidence = ev;
        pthread_mutex_unlock(&w->last_mu);
    }
    w->fn(&event, w->user);
    sop_report_free(drop_r);
    sop_evidence_free(drop_ev);
}

/* CLOCK_MONOTONIC in seconds: the clock the condition variable waits on (clock.h). */
static double mono_s(void)
{
    return sop__now_ms() / 1e3;
}

static struct timespec timespec_of(double secs)
{
    double whole = floor(secs);
    struct timespec ts = {(time_t)whole, (long)((secs - whole) * 1e9)};
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* When the next periodic run starts, after a run that started at started_s and ended at now_s.
 * Fixed rate on the monotonic clock: runs start an interval apart (next += interval), however
 * long each takes. A run that ends past the next start makes the next one start at once, and
 * the schedule goes on from there: late runs are not made up with a burst. An on-demand run
 * during which a periodic one fell due takes its place (the next is an interval after its
 * start, not a second run right after it); one in between leaves the schedule as it was. */
static double next_start_s(double next_s, double interval_s, int on_demand, double started_s,
                           double now_s)
{
    if (on_demand && next_s > now_s)
        return next_s;
    next_s = on_demand ? started_s + interval_s : next_s + interval_s;
    return next_s > now_s ? next_s : now_s;
}

static void *watch_main(void *arg)
{
    sop_watch *w = arg;
    bool periodic = w->cfg.interval_s > 0;
    double next_s = mono_s() + w->cfg.interval_s; /* the first periodic run: an interval on */
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && !w->pending) {
            if (!periodic) {
                pthread_cond_wait(&w->cv, &w->mu);
                continue;
            }
            struct timespec next = timespec_of(next_s);
            if (pthread_cond_timedwait(&w->cv, &w->mu, &next) == ETIMEDOUT)
                break;
        }
        if (w->stop)
            break;
        int on_demand = w->pending;
        w->pending = false;
        pthread_mutex_unlock(&w->mu);
        double started_s = mono_s();
        run_once(w, on_demand);
        if (periodic)
            next_s = next_start_s(next_s, w->cfg.interval_s, on_demand, started_s, mono_s());
        pthread_mutex_lock(&w->mu);
    }
    bool detached = w->detached;
    pthread_mutex_unlock(&w->mu);
    if (detached)
        watch_destroy(w);
    return NULL;
}

int sop_watch_new(sop_engine *e, const sop_watch_config *cfg, sop_watch_fn fn, void *user,
                  sop_watch **out)
{
    if (out)
        *out = NULL;
    if (!e || !cfg || !fn || !out || cfg->pid < 0 ||
        !(cfg->interval_s >= 0 && cfg->interval_s <= 86400) ||
        !(cfg->collect.duration_s >= 0 && cfg->collect.duration_s <= 3600) ||
        !(cfg->collect.rate_hz >= 0 && cfg->collect.rate_hz <= SOP_RATE_MAX_HZ)) {
        sop_engine_free(e);
        return SOP_EINVAL;
    }
    if (!e->loaded) {
        sop_engine_free(e);
        return SOP_ENORULES;
    }
    sop_watch *w = calloc(1, sizeof *w);
    if (!w) {
        sop_engine_free(e);
        return SOP_ENOMEM;
    }
    w->owner = getpid();
    w->engine = e;
    w->cfg = *cfg;
    /* The strings of the options are the caller's; copy what a run reads later. */
    w->cfg.collect.proc_root = NULL;
    w->cfg.collect.cgroup_root = NULL;
    w->cfg.collect.stop = &w->stop_window; /* sop_watch_free ends a window in progress */
    w->fn = fn;
    w->user = user;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int bad = pthread_mutex_init(&w->mu, NULL);
    bad |= pthread_mutex_init(&w->last_mu, NULL);
    bad |= pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (bad) {
        sop_engine_free(e);
        free(w);
        return SOP_EINTERNAL;
    }
    if (cfg->collect.proc_root || cfg->collect.cgroup_root) {
        /* Rare (tests point at fixture trees): one copy that lives as long as the watch. */
        size_t a = cfg->collect.proc_root ? strlen(cfg->collect.proc_root) + 1 : 0;
        size_t b = cfg->collect.cgroup_root ? strlen(cfg->collect.cgroup_root) + 1 : 0;
        char *buf = malloc(a + b);
        if (!buf) {
            watch_destroy(w);
            return SOP_ENOMEM;
        }
        if (a) {
            memcpy(buf, cfg->collect.proc_root, a);
            w->cfg.collect.proc_root = buf;
        }
        if (b) {
            memcpy(buf + a, cfg->collect.cgroup_root, b);
            w->cfg.collect.cgroup_root = buf + a;
        }
        w->strings = buf;
    }
    /* The thread must not take the process's signals: block them all while creating it, so
     * it inherits an all-blocked mask (the caller's mask is restored right after). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    *out = w; /* before the thread starts: a callback may use the handle */
    int rc = pthread_create(&w->thread, NULL, watch_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        *out = NULL;
        watch_destroy(w);
        return SOP_EINTERNAL;
    }
    return SOP_OK;
}

/* In a child of fork() the watch's thread does not exist and its locks may have been copied
 * held: the watch is inert there (no lock is taken, nothing is joined or freed). */
static bool forked_away(const sop_watch *w)
{
    return w->owner != getpid();
}

int sop_watch_trigger(sop_watch *w)
{
    if (!w || forked_away(w))
        return SOP_EINVAL;
    pthread_mutex_lock(&w->mu);
    w->pending = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return SOP_OK;
}

int sop_watch_openmetrics(sop_watch *w, char **out)
{
    if (!w || !out)
        return SOP_EINVAL;
    *out = NULL;
    if (forked_away(w))
        return SOP_EINVAL;
    char *families = NULL;
    pthread_mutex_lock(&w->last_mu);
    if (w->last_report)
        families = sop__openmetrics_render(w->last_report->tree,
                                           w->last_evidence ? w->last_evidence->tree : NULL);
    bool oom = w->last_report && !families;
    pthread_mutex_unlock(&w->last_mu);
    if (oom)
        return SOP_ENOMEM;
    static const char fmt[] =
        "%s# TYPE sop_watch_runs counter\n# HELP sop_watch_runs Runs of the watch so far\n"
        "sop_watch_runs_total %llu\n"
        "# TYPE sop_watch_failed_runs counter\n"
        "# HELP sop_watch_failed_runs Runs whose collection or evaluation failed\n"
        "sop_watch_failed_runs_total %llu\n";
    unsigned long long runs = atomic_load(&w->runs), failed = atomic_load(&w->failed);
    const char *f = families ? families : "";
    int n = snprintf(NULL, 0, fmt, f, runs, failed);
    *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (*out)
        snprintf(*out, (size_t)n + 1, fmt, f, runs, failed);
    free(families);
    return *out ? SOP_OK : SOP_ENOMEM;
}

unsigned long long sop_watch_runs(const sop_watch *w)
{
    return w ? atomic_load(&((sop_watch *)w)->runs) : 0;
}

void sop_watch_free(sop_watch *w)
{
    if (!w || forked_away(w))
        return; /* the parent's copy: its thread and engine are the parent's to stop */
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    __atomic_store_n(&w->stop_window, 1, __ATOMIC_RELAXED); /* a window in progress ends */
    if (pthread_equal(pthread_self(), w->thread)) {
        /* From the callback: the thread ends after it returns and frees the watch itself. */
        w->detached = true;
        pthread_mutex_unlock(&w->mu);
        pthread_detach(w->thread);
        return;
    }
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    watch_destroy(w);
}
