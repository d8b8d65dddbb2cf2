/* timeline.c — the playbook's §6.1 gantt drawn from the samples: one lane per thread of the
 * target and of its CPython workers over the window, each sample coloured by what the thread
 * did (running Python with the GIL, waiting for the GIL, native code, disk, waiting for a
 * DataLoader batch, idle), and under them, when NVML was read, a lane of the GPUs' busy share.
 * A starved loader shows as a main-thread lane of batch waits over
 * worker lanes that are busy or idle. Under an event loop's thread, a lane per coroutine its
 * callbacks ran (the task's outermost coroutine; up to TL_TASK_LANES): which task ran when.
 * Self-contained SVG, no script. Depends on sampler.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

#include "picture_writers.h"
#include "sampler.h"

#define TL_WIDTH 1200.0
#define TL_LABEL 300.0 /* the lane labels' column */
#define TL_PAD 10.0
#define TL_LANE 18
#define TL_TOP 64
#define TL_MAX_LANES 256
#define TL_TASK_LANES 8 /* coroutine lanes under one loop thread, the most seen first */
#define TL_TASK_FILL "#3b7dd8"

static const char *const ST_NAME[SOP_ST_N] = {"running Python (GIL held)", "waiting for the GIL",
                                              "native code (no GIL)",      "disk (D state)",
                                              "waiting for a batch",       "idle",
                                              "waiting for the GPU"};
static const char *const ST_KEY[SOP_ST_N] = {"gil",   "gil-wait", "native", "disk",
                                             "batch", "idle",     "gpu"};
static const char *const ST_FILL[SOP_ST_N] = {"#e8661c", "#8a7ae0", "#4fb85a", "#a0703a",
                                              "#2fb5d0", "#d8d8d8", "#be3c96"};

/* XML text: escape.h's one escaper for SVG. */
static void put_xml(FILE *f, const char *s)
{
    sop__esc_xml(f, s, strlen(s), (size_t)-1);
}

/* ASCII-only copy of a name for a label (invalid or wide text from the target stays out of
 * the fixed-width column). */
static void label_text(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src && *src && i + 1 < cap; src++)
        dst[i++] = (unsigned char)*src >= 0x20 && (unsigned char)*src < 0x7f ? *src : '?';
    dst[i] = '\0';
}

static double nice_step(double span_s)
{
    static const double steps[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1,   2,
                                   5,    10,   20,   30,  60,  120, 300, 600};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
        if (span_s / steps[i] <= 12)
            return steps[i];
    return 600;
}

/* The GPU lane at y: one bar per NVML reading, over the time it stands for (a reading is
 * NVML's average over its last sample period: from the reading before it, the first one from
 * the window's start; the polls are 250 ms apart), its height the busy share. Readings up to 0.5 s
 * past the window's end (the end-of-window reading) are drawn up to the end. */
static void gpu_lane(FILE *f, const sop_timeline_gpu *g, double y, double x0, double scale,
                     double window_s)
{
    double end = window_s * 1e3, sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        double t = g->t_ms[i] - g->t0_ms;
        if (t > 0 && t <= end + 500) {
            sum += g->busy_pct[i];
            k++;
        }
    }
    double mean = k ? sum / (double)k : 0;
    fprintf(f,
            "<g class=\"gpu-lane\" data-readings=\"%zu\" data-mean-pct=\"%.1f\">\n"
            "<rect x=\"0\" y=\"%.1f\" width=\"%g\" height=\"%d\" fill=\"#eef6e0\"/>"
            "<text x=\"%g\" y=\"%.1f\">GPU busy (NVML) %.0f%%</text>\n",
            k, mean, y, TL_WIDTH, TL_LANE, TL_PAD, y + TL_LANE - 5, mean);
    double prev = -1;
    for (size_t i = 0; i < g->n; i++) {
        double t = g->t_ms[i] - g->t0_ms;
        if (t <= 0 || t > end + 500) {
            prev = t;
            continue;
        }
        double t0 = prev > 0 ? prev : 0, t1 = t < end ? t : end;
        prev = t;
        if (t1 <= t0)
            continue;
        double b = g->busy_pct[i] < 0 ? 0 : g->busy_pct[i] > 100 ? 100 : g->busy_pct[i];
        double h = (TL_LANE - 4) * b / 100.0, w = (t1 - t0) * scale;
        fprintf(f,
                "<rect class=\"gpu\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                "fill=\"#76b900\"><title>GPU %.0f%% busy, %.2f-%.2f s</title></rect>\n",
                x0 + t0 * scale, y + 2 + (TL_LANE - 4) - h, w < 0.3 ? 0.3 : w, h, b, t0 / 1e3,
                t1 / 1e3);
    }
    fputs("</g>\n", f);
}

int sop__timeline_write(const sop_thread_info *thr, size_t nthr, const sop_timeline_ev *ev,
                        size_t nev, double window_s, double rate_hz, const char *title,
                        unsigned flags, FILE *f)
{
    return sop__timeline_write_gpu(thr, nthr, ev, nev, window_s, rate_hz, title, NULL, NULL, 0,
                                   flags, f);
}

/* The end (ms) of a run of one thread's samples ending before by[j] (b: its last): a sample
 * stands for the interval after it, up to the thread's next sample, which a late sampler
 * catching up takes sooner than the nominal interval; never past the window. */
static double run_end(const sop_timeline_ev *const *by, size_t j, size_t b, double dt_ms,
                      double window_s)
{
    double t1 = by[j - 1]->t_ms + dt_ms;
    if (j < b && by[j]->t_ms < t1)
        t1 = by[j]->t_ms;
    return t1 > window_s * 1e3 ? window_s * 1e3 : t1;
}

/* The coroutine lanes of one thread's samples by[a..b): the task indices seen (1-based, at most
 * TL_TASK_LANES, the most seen first) into idx; their count. */
static size_t task_lanes(const sop_timeline_ev *const *by, size_t a, size_t b, size_t ntasks,
                         uint8_t *idx, long *count)
{
    long per[256] = {0};
    for (size_t i = a; i < b; i++)
        if (by[i]->task && by[i]->task <= ntasks)
            per[by[i]->task]++;
    size_t n = 0;
    while (n < TL_TASK_LANES) {
        int best = 0;
        for (int k = 1; k < 256; k++)
            if (per[k] > (best ? per[best] : 0))
                best = k;
        if (!best)
            break;
        idx[n] = (uint8_t)best;
        count[n++] = per[best];
        per[best] = 0;
    }
    return n;
}

/* One coroutine's lane under its loop thread's: runs of consecutive samples in which the
 * thread ran a callback of that coroutine. */
static void task_lane(FILE *f, const sop_timeline_ev *const *by, size_t a, size_t b, uint8_t task,
                      long count, const char *name, const sop_thread_info *t, double y, double x0,
                      double scale, double dt_ms, double window_s)
{
    char label[80];
    label_text(label, sizeof label, name);
    fprintf(f, "<g class=\"task-lane\" data-tid=\"%d\" data-samples=\"%ld\" data-task=\"", t->tid,
            count);
    put_xml(f, label);
    fprintf(f,
            "\">\n<rect x=\"0\" y=\"%.1f\" width=\"%g\" height=\"%d\" fill=\"#f1f5fc\"/>"
            "<text x=\"%g\" y=\"%.1f\">  task ",
            y, TL_WIDTH, TL_LANE, TL_PAD + 12, y + TL_LANE - 5);
    put_xml(f, label);
    fprintf(f, " %ld</text>\n", count);
    for (size_t i = a; i < b;) {
        if (by[i]->task != task) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < b && by[j]->task == task && by[j]->t_ms - by[j - 1]->t_ms <= 1.5 * dt_ms)
            j++;
        double t1 = run_end(by, j, b, dt_ms, window_s);
        double xa = x0 + by[i]->t_ms * scale, w = (t1 - by[i]->t_ms) * scale;
        fprintf(f,
                "<rect class=\"task\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                "fill=\"%s\"><title>tid %d ran ",
                xa, y + 2, w < 0.3 ? 0.3 : w, TL_LANE - 4, TL_TASK_FILL, t->tid);
        put_xml(f, label);
        fprintf(f, ", %.2f-%.2f s (%zu samples)</title></rect>\n", by[i]->t_ms / 1e3, t1 / 1e3,
                j - i);
        i = j;
    }
    fputs("</g>\n", f);
}

int sop__timeline_write_gpu(const sop_thread_info *thr, size_t nthr, const sop_timeline_ev *ev,
                            size_t nev, double window_s, double rate_hz, const char *title,
                            const sop_timeline_gpu *gpu, const char *const *tasks, size_t ntasks,
                            unsigned flags, FILE *f)
{
    int glanes = gpu && gpu->n ? 1 : 0;
    if (!(window_s > 0))
        window_s = 1;
    if (!(rate_hz > 0))
        rate_hz = 100;
    /* the samples of each thread, in time order (ev is in time order already) */
    size_t *off = calloc(nthr + 1, sizeof *off), *fill = calloc(nthr + 1, sizeof *fill);
    const sop_timeline_ev **by = malloc((nev + 1) * sizeof *by);
    if (!off || !fill || !by) {
        free(off), free(fill), free(by);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nev; i++)
        if (ev[i].thr < nthr)
            off[ev[i].thr + 1]++;
    for (size_t k = 0; k < nthr; k++)
        off[k + 1] += off[k];
    for (size_t i = 0; i < nev; i++)
        if (ev[i].thr < nthr)
            by[off[ev[i].thr] + fill[ev[i].thr]++] = &ev[i];
    size_t lanes = 0;
    for (size_t k = 0; k < nthr; k++) {
        uint8_t idx[TL_TASK_LANES];
        long cnt[TL_TASK_LANES];
        if (off[k + 1] > off[k])
            lanes += 1 + (tasks ? task_lanes(by, off[k], off[k + 1], ntasks, idx, cnt) : 0);
    }
    if (lanes > TL_MAX_LANES)
        lanes = TL_MAX_LANES;
    int height = TL_TOP + (int)(lanes + (size_t)glanes) * TL_LANE + 40;
    double x0 = TL_LABEL, span = TL_WIDTH - TL_PAD - TL_LABEL, scale = span / (window_s * 1e3);
    double dt_ms = 1e3 / rate_hz;
    if (!(flags & SOP_FG_INLINE))
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n", f);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" id=\"sop-tl\" "
            "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"monospace\" "
            "font-size=\"11\">\n<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" "
            "fill=\"#ffffff\"/>\n<text x=\"%d\" y=\"20\" text-anchor=\"middle\" "
            "font-size=\"14\">",
            (int)TL_WIDTH, height, (int)TL_WIDTH, height, (int)(TL_WIDTH / 2));
    put_xml(f, title);
    fputs("</text>\n", f);
    double lx = TL_PAD;
    for (int s = 0; s < SOP_ST_N; s++) {
        fprintf(f,
                "<rect x=\"%g\" y=\"30\" width=\"12\" height=\"10\" fill=\"%s\"/><text "
                "x=\"%g\" y=\"39\">%s</text>\n",
                lx, ST_FILL[s], lx + 16, ST_NAME[s]);
        lx += 16 + 7.0 * (double)strlen(ST_NAME[s]) + 14;
    }
    /* the time axis */
    double step = nice_step(window_s);
    for (double t = 0; t <= window_s + 1e-9; t += step) {
        double x = x0 + t * 1e3 * scale;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\"/>"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%gs</text>\n",
                x, TL_TOP - 6, x, TL_TOP + (int)(lanes + (size_t)glanes) * TL_LANE, x, TL_TOP - 8,
                t);
    }
    size_t lane = 0;
    for (size_t k = 0; k < nthr && lane < lanes; k++) {
        size_t a = off[k], b = off[k + 1];
        if (a == b)
            continue;
        double y = TL_TOP + (double)lane * TL_LANE;
        long per[SOP_ST_N] = {0};
        for (size_t i = a; i < b; i++)
            per[by[i]->state < SOP_ST_N ? by[i]->state : SOP_ST_IDLE]++;
        int top = 0;
        for (int s = 1; s < SOP_ST_N; s++)
            if (per[s] > per[top])
                top = s;
        char comm[40], name[40];
        label_text(comm, sizeof comm, thr[k].comm);
        label_text(name, sizeof name, thr[k].name);
        fprintf(f,
                "<g class=\"lane\" data-pid=\"%d\" data-tid=\"%d\" data-worker=\"%d\" "
                "data-top=\"%s\" data-top-pct=\"%.1f\"",
                thr[k].pid, thr[k].tid, thr[k].proc > 0, ST_KEY[top],
                100.0 * (double)per[top] / (double)(b - a));
        for (int s = 0; s < SOP_ST_N; s++)
            fprintf(f, " data-%s=\"%ld\"", ST_KEY[s], per[s]);
        fprintf(f, ">\n<rect x=\"0\" y=\"%.1f\" width=\"%g\" height=\"%d\" fill=\"%s\"/>", y,
                TL_WIDTH, TL_LANE, lane % 2 ? "#f6f6f6" : "#ffffff");
        fprintf(f, "<text x=\"%g\" y=\"%.1f\">%s%d ", TL_PAD, y + TL_LANE - 5,
                thr[k].proc > 0 ? "worker " : "", thr[k].tid);
        put_xml(f, name);
        if (thr[k].proc > 0 || thr[k].tid == thr[k].pid) {
            fputs(" [", f);
            put_xml(f, comm);
            fputs("]", f);
        }
        fprintf(f, " %.0f%% %s</text>\n", 100.0 * (double)per[top] / (double)(b - a), ST_KEY[top]);
        /* runs of one state: consecutive samples no more than 1.5 intervals apart */
        for (size_t i = a; i < b;) {
            size_t j = i + 1;
            while (j < b && by[j]->state == by[i]->state &&
                   by[j]->t_ms - by[j - 1]->t_ms <= 1.5 * dt_ms)
                j++;
            double t1 = run_end(by, j, b, dt_ms, window_s);
            double xa = x0 + by[i]->t_ms * scale, w = (t1 - by[i]->t_ms) * scale;
            int s = by[i]->state < SOP_ST_N ? by[i]->state : SOP_ST_IDLE;
            if (w < 0.3)
                w = 0.3;
            fprintf(f,
                    "<rect class=\"r s-%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                    "height=\"%d\" fill=\"%s\"><title>tid %d: %s, %.2f-%.2f s (%zu "
                    "samples)</title></rect>\n",
                    ST_KEY[s], xa, y + 2, w, TL_LANE - 4, ST_FILL[s], thr[k].tid, ST_NAME[s],
                    by[i]->t_ms / 1e3, t1 / 1e3, j - i);
            i = j;
        }
        fputs("</g>\n", f);
        lane++;
        uint8_t idx[TL_TASK_LANES];
        long cnt[TL_TASK_LANES];
        size_t nt = tasks ? task_lanes(by, a, b, ntasks, idx, cnt) : 0;
        for (size_t q = 0; q < nt && lane < lanes; q++, lane++)
            task_lane(f, by, a, b, idx[q], cnt[q], tasks[idx[q] - 1], &thr[k],
                      TL_TOP + (double)lane * TL_LANE, x0, scale, dt_ms, window_s);
    }
    if (glanes)
        gpu_lane(f, gpu, TL_TOP + (double)lane * TL_LANE, x0, scale, window_s);
    size_t shown = 0;
    for (size_t k = 0; k < nthr; k++)
        shown += off[k + 1] > off[k];
    if (shown > lanes)
        fprintf(f, "<text x=\"%g\" y=\"%d\" fill=\"#666\">%zu more threads not drawn</text>\n",
                TL_PAD, height - 12, shown - lanes);
    fputs("</svg>\n", f);
    free(off), free(fill), free(by);
    return ferror(f) ? -EIO : 0;
}
