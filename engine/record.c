/* record.c — sop_record: sample a CPython process (and its CPython descendants) over a window
 * with engine/sampler.c and write collapsed stacks or an SVG flame graph (engine/flamegraph.c).
 * Depends on sampler.h and engine.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "sampler.h"

typedef struct {
    void (*fn)(void *ctx, double done_frac);
    void *ctx;
} progress_fwd;

static void forward(void *ctx, double done, long ticks)
{
    progress_fwd *p = ctx;
    (void)ticks;
    if (p->fn)
        p->fn(p->ctx, done);
}

static bool is_svg(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && strcmp(path + n - 4, ".svg") == 0;
}

int sop_record(sop_engine *e, int pid, double duration_s, double rate_hz, const char *path,
               void (*progress)(void *ctx, double done_frac), void *ctx, sop_record_stats *stats)
{
    if (pid <= 0 || !path || !(duration_s > 0 && duration_s <= 3600) ||
        !(rate_hz >= 0 && rate_hz <= 10000))
        return sop__fail(e, SOP_EINVAL, "record needs a pid, a path, 0 < duration <= 3600 s "
                                        "and 0 < rate <= 10000 Hz");
    if (stats)
        memset(stats, 0, sizeof *stats);
    sop_missing missing = {0};
    sop_sampler *s = NULL;
    int rc = sop__sampler_open(pid, "/proc", true, &s, &missing);
    if (rc < 0) {
        char why[300] = "";
        if (missing.n)
            snprintf(why, sizeof why, ": %s", missing.items[missing.n - 1].reason);
        sop__missing_free(&missing);
        if (rc == -ESRCH || rc == -ENOENT)
            return sop__fail(e, SOP_ENOTARGET, "pid %d: no such process", pid);
        if (rc == -EPERM || rc == -EACCES)
            return sop__fail(e, SOP_EACCES, "pid %d: memory not readable%s", pid, why);
        return sop__fail(e, SOP_ENOTPYTHON, "pid %d: not a supported CPython process%s", pid, why);
    }
    sop__missing_free(&missing);
    progress_fwd pf = {progress, ctx};
    sop__sampler_run(s, sop__now_ms() + duration_s * 1e3, rate_hz, progress ? forward : NULL,
                     &pf);
    sop_sampler_stats st;
    sop__sampler_stats(s, &st);
    FILE *f = fopen(path, "w");
    if (!f) {
        int err = errno;
        sop__sampler_close(s);
        return sop__fail(e, SOP_EIO, "%s: %s", path, strerror(err));
    }
    sop_stack_count *v = NULL;
    size_t n = sop__sampler_stacks(s, &v);
    if (is_svg(path)) {
        char title[160];
        snprintf(title, sizeof title, "sopctl record --pid %d: %ld samples at %g Hz over %.1f s",
                 pid, st.ticks, st.rate_hz, st.window_s);
        rc = sop__flamegraph_write(v, n, title, f);
    } else {
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s %ld\n", v[i].stack, v[i].count);
        rc = 0;
    }
    for (size_t i = 0; i < n; i++)
        free((char *)v[i].stack);
    free(v);
    if (fclose(f) != 0 || rc < 0) {
        sop__sampler_close(s);
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
    return SOP_OK;
}
