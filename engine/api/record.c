/* record.c — sop_record: sample a CPython process (and its CPython descendants) over a window
 * with engine/sample/sampler.c and write collapsed stacks, an interactive SVG flame graph
 * (engine/render/flamegraph.c), a timeline (engine/render/timeline.c), speedscope JSON
 * (engine/render/speedscope.c) or one HTML page with both pictures (engine/render/html.c). Depends
 * on sampler.h and engine.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_int.h"
#include "clock.h"
#include "collect_gpu.h"
#include "engine.h"
#include "escape.h"
#include "picture_writers.h"
#include "render.h"
#include "sampler.h"

typedef struct {
    void (*fn)(void *ctx, double done_frac);
    void *ctx;
    sop_gpu_window *gpu; /* the timeline's GPU lane: read at each progress call (250 ms) */
} progress_fwd;

static void forward(void *ctx, double done, long ticks)
{
    progress_fwd *p = ctx;
    (void)ticks;
    if (p->gpu)
        sop__gpu_window_tick(p->gpu);
    if (p->fn)
        p->fn(p->ctx, done);
}

static bool ends_in(const char *path, const char *suffix)
{
    size_t n = strlen(path), k = strlen(suffix);
    return n >= k && strcmp(path + n - k, suffix) == 0;
}

sop_record_format sop__record_format_of(const char *path)
{
    if (ends_in(path, ".speedscope.json"))
        return SOP_RECORD_SPEEDSCOPE;
    if (ends_in(path, ".svg"))
        return SOP_RECORD_SVG;
    if (ends_in(path, ".html") || ends_in(path, ".htm"))
        return SOP_RECORD_HTML;
    return SOP_RECORD_COLLAPSED;
}

int sop_record(sop_engine *e, int pid, double duration_s, double rate_hz, const char *path,
               void (*progress)(void *ctx, double done_frac), void *ctx, sop_record_stats *stats)
{
    return sop_record_ex(e, pid, duration_s, rate_hz, path, SOP_RECORD_BY_NAME, 0, progress, ctx,
                         stats);
}

int sop_record_ex(sop_engine *e, int pid, double duration_s, double rate_hz, const char *path,
                  sop_record_format fmt, unsigned flags,
                  void (*progress)(void *ctx, double done_frac), void *ctx, sop_record_stats *stats)
{
    if (pid <= 0 || !path || !(duration_s > 0 && duration_s <= 3600) ||
        !(rate_hz >= 0 && rate_hz <= SOP_RATE_MAX_HZ))
        return sop__fail(e, SOP_EINVAL,
                         "record needs a pid, a path, 0 < duration <= 3600 s "
                         "and 0 < rate <= 10000 Hz");
    if (stats)
        memset(stats, 0, sizeof *stats);
    sop_missing missing = {0};
    sop_sampler *s = NULL;
    int rc = sop__sampler_open(pid, "/proc", NULL, true, &s, &missing);
    if (rc < 0) {
        char why[300] = "";
        if (missing.n)
            snprintf(why, sizeof why, ": %s", missing.items[missing.n - 1].reason);
        sop__missing_free(&missing);
        return sop__fail_python_open(e, pid, rc, why);
    }
    sop__missing_free(&missing);
    if (fmt == SOP_RECORD_BY_NAME)
        fmt = sop__record_format_of(path);
    if (fmt == SOP_RECORD_HTML || (flags & SOP_RECORD_TIMELINE))
        sop__sampler_keep_timeline(s);
    progress_fwd pf = {progress, ctx, NULL};
    /* the timeline's GPU lane, when the tree holds an NVIDIA device open
     * (engine/collect/collect_gpu.c) */
    sop_gpu_window gw;
    memset(&gw, 0, sizeof gw);
    int root_fd = -1;
    if (fmt == SOP_RECORD_SVG && (flags & SOP_RECORD_TIMELINE) &&
        (root_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        sop__gpu_window_start_pid(&gw, root_fd, pid);
        pf.gpu = gw.nvml ? &gw : NULL;
    }
    double t_run = sop__now_ms();
    sop__sampler_run(s, t_run + duration_s * 1e3, rate_hz, progress || pf.gpu ? forward : NULL, &pf,
                     NULL);
    if (pf.gpu)
        sop__gpu_window_end_pid(&gw, root_fd);
    if (root_fd >= 0)
        close(root_fd);
    sop_sampler_stats st;
    sop__sampler_stats(s, &st);
    /* 0600: a profile names the target's functions and files */
    int ofd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
    FILE *f = ofd >= 0 ? fdopen(ofd, "w") : NULL;
    if (!f) {
        int err = errno;
        if (ofd >= 0)
            close(ofd);
        sop__sampler_close(s);
        sop__gpu_window_free(&gw);
        return sop__fail(e, SOP_EIO, "%s: %s", path, strerror(err));
    }
    sop_stack_count *v = NULL;
    size_t n = sop__sampler_stacks(s, &v);
    char title[200];
    unsigned fg = flags & SOP_RECORD_IDLE ? SOP_FG_IDLE : 0;
    if (fmt == SOP_RECORD_SVG && (flags & SOP_RECORD_TIMELINE)) {
        sop_thread_info *thr = NULL;
        const sop_timeline_ev *ev = NULL;
        size_t nthr = sop__sampler_threads(s, &thr), nev = sop__sampler_timeline(s, &ev);
        snprintf(title, sizeof title,
                 "sopctl record --timeline --pid %d: a lane per thread, %ld samples at %g Hz "
                 "over %.1f s",
                 pid, st.ticks, st.rate_hz, st.window_s);
        const sop_gpu_series *gs = pf.gpu ? sop__gpu_window_series(&gw) : NULL;
        sop_timeline_gpu lane = {gs ? gs->t_ms : NULL, gs ? gs->busy_pct : NULL, gs ? gs->n : 0,
                                 t_run};
        const char *const *tasks = NULL;
        size_t ntasks = sop__sampler_task_names(s, &tasks);
        rc = sop__timeline_write_gpu(thr, nthr, ev, nev, st.window_s, st.rate_hz, title, &lane,
                                     tasks, ntasks, 0, f);
        free(thr);
    } else if (fmt == SOP_RECORD_SVG) {
        snprintf(title, sizeof title, "sopctl record --pid %d: %ld samples at %g Hz over %.1f s%s",
                 pid, st.ticks, st.rate_hz, st.window_s, fg & SOP_FG_IDLE ? "" : ", idle left out");
        rc = sop__flamegraph_write(v, n, title, fg, f);
    } else if (fmt == SOP_RECORD_SPEEDSCOPE) {
        snprintf(title, sizeof title, "sopctl record --pid %d (%.1f s at %g Hz)", pid, st.window_s,
                 st.rate_hz);
        rc = sop__speedscope_write(v, n, title, fg, f);
    } else if (fmt == SOP_RECORD_HTML) {
        snprintf(title, sizeof title, "sopctl record --pid %d", pid);
        sop__html_begin(f, title);
        fputs("<h2>Flame graph</h2>\n<p class=\"hint\">Click a frame to zoom, Ctrl-F or "
              "<em>Search</em> to highlight; hover for samples and percent.</p>\n",
              f);
        rc = sop__record_pictures(s, pid, 1u, flags, NULL, f);
        fputs("<h2>Timeline</h2>\n", f);
        if (rc == 0)
            rc = sop__record_pictures(s, pid, 2u, flags, NULL, f);
        sop__html_end(f);
    } else {
        sop_sb line = {0};
        for (size_t i = 0; i < n; i++) {
            long c = v[i].count;
            if (!fg)
                c -= v[i].by_state[SOP_ST_IDLE] + v[i].by_state[SOP_ST_BATCH];
            if (c <= 0)
                continue;
            sop__esc_collapsed(&line, v[i].stack);
            char *esc = sop__sb_take(&line);
            fprintf(f, "%s %ld\n", esc ? esc : "?", c);
            free(esc);
        }
        rc = 0;
    }
    for (size_t i = 0; i < n; i++)
        free((char *)v[i].stack);
    free(v);
    if (ferror(f))
        rc = -1;
    if (fclose(f) != 0 || rc < 0) {
        sop__sampler_close(s);
        sop__gpu_window_free(&gw);
        return sop__fail(e, SOP_EIO, "%s: write failed", path);
    }
    if (stats) {
        stats->samples = st.ticks;
        stats->missed = st.missed;
        stats->thread_samples = st.thread_samples;
        stats->samples_partial = st.samples_partial;
        stats->stacks = (long)n;
        stats->self_cpu_ms = st.self_cpu_ms;
        stats->window_s = st.window_s;
    }
    sop__sampler_close(s);
    sop__gpu_window_free(&gw);
    return SOP_OK;
}
