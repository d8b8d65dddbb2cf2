/* pyspy_trace.c — py-spy's chrome trace (the Trace Event Format's JSON array, opened by
 * chrome://tracing and Perfetto): per thread, a "B" event when a frame enters its stack and an
 * "E" when it leaves, at the time of the sample that saw it, as py-spy writes them (cat
 * "py-spy", args filename and line). Events are written as they come; a thread's open frames
 * are kept to compare with its next sample. Bounded: past EVENTS_MAX the trace stops changing.
 * Depends on pyspy_formats.h, value.h, json.h, escape.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h" /* sop__bridge_text */
#include "escape.h"
#include "json.h"
#include "pyspy_formats.h"
#include "sop.h"
#include "value.h"

#define THREADS_MAX 4096
#define EVENTS_MAX (4l << 20) /* some 600 MB of JSON */

typedef struct {
    char *func, *file;
    int line;
} tframe;

typedef struct {
    int pid, tid;
    tframe *frames; /* outermost first */
    size_t n, cap;
} tthread;

struct sop_pyspy_trace {
    FILE *out;
    unsigned flags;
    tthread *threads;
    size_t nthreads;
    long events, dropped;
};

sop_pyspy_trace *sop__pyspy_trace_new(FILE *out, unsigned flags)
{
    sop_pyspy_trace *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->threads = calloc(THREADS_MAX, sizeof *t->threads);
    if (!t->threads) {
        free(t);
        return NULL;
    }
    t->out = out;
    t->flags = flags;
    fputc('[', out);
    return t;
}

static void put_event(sop_pyspy_trace *t, const tthread *th, const tframe *f, const char *ph,
                      double ts_us)
{
    sop_value *ev = sop__v_obj();
    if (!ev)
        return;
    sop_value *args = sop__v_obj_at(ev, "args");
    sop__v_set(args, "filename", sop__bridge_text(f->file));
    if (t->flags & SOP_PYSPY_NOLINENO)
        sop__v_set(args, "line", sop__v_null());
    else
        sop__v_set_int(args, "line", f->line > 0 ? f->line : 0);
    sop__v_set_str(ev, "cat", "py-spy");
    sop__v_set(ev, "name", sop__bridge_text(f->func));
    sop__v_set_str(ev, "ph", ph);
    sop__v_set_int(ev, "pid", th->pid);
    sop__v_set_int(ev, "tid", th->tid);
    sop__v_set_int(ev, "ts", (int64_t)(ts_us > 0 ? ts_us : 0));
    char *json = sop__json_print(ev, 0);
    sop__v_free(ev);
    char *clean = json ? sop__json_escape_controls(json) : NULL;
    free(json);
    if (clean)
        fprintf(t->out, "%s%s", t->events ? "," : "", clean);
    free(clean);
    t->events++;
}

static tthread *thread_of(sop_pyspy_trace *t, int pid, int tid)
{
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].pid == pid && t->threads[i].tid == tid)
            return &t->threads[i];
    if (t->nthreads >= THREADS_MAX)
        return NULL;
    tthread *th = &t->threads[t->nthreads++];
    th->pid = pid;
    th->tid = tid;
    return th;
}

static bool same(const sop_pyspy_trace *t, const tframe *a, const sop_pyframe *b)
{
    return strcmp(a->func, b->func ? b->func : "?") == 0 &&
           strcmp(a->file, b->file ? b->file : "") == 0 &&
           ((t->flags & SOP_PYSPY_NOLINENO) || a->line == b->line);
}

void sop__pyspy_trace_sample(sop_pyspy_trace *t, int pid, const sop_pysample *p, double ts_us)
{
    if (p->torn) /* a stack that changed while read: no change seen */
        return;
    tthread *th = thread_of(t, pid, p->tid);
    if (!th)
        return;
    size_t n = p->nframes, common = 0;
    while (common < th->n && common < n && same(t, &th->frames[common], &p->frames[n - 1 - common]))
        common++;
    long need = (long)(th->n - common + n - common);
    if (t->events + need > EVENTS_MAX) {
        t->dropped += need;
        return;
    }
    if (n > th->cap) {
        tframe *g = realloc(th->frames, n * sizeof *g);
        if (!g)
            return;
        th->frames = g;
        th->cap = n;
    }
    for (size_t k = th->n; k-- > common;) { /* left: innermost first */
        put_event(t, th, &th->frames[k], "E", ts_us);
        free(th->frames[k].func);
        free(th->frames[k].file);
    }
    th->n = common;
    for (size_t k = common; k < n; k++) { /* entered: outermost first */
        const sop_pyframe *f = &p->frames[n - 1 - k];
        tframe *d = &th->frames[k];
        d->func = strdup(f->func ? f->func : "?");
        d->file = strdup(f->file ? f->file : "");
        d->line = f->line;
        if (!d->func || !d->file) {
            free(d->func);
            free(d->file);
            return;
        }
        th->n = k + 1;
        put_event(t, th, d, "B", ts_us);
    }
}

int sop__pyspy_trace_end(sop_pyspy_trace *t, double ts_us)
{
    for (size_t i = 0; i < t->nthreads; i++) {
        tthread *th = &t->threads[i];
        for (size_t k = th->n; k-- > 0;)
            put_event(t, th, &th->frames[k], "E", ts_us);
    }
    fputs("]\n", t->out);
    return ferror(t->out) ? -EIO : 0;
}

long sop__pyspy_trace_dropped(const sop_pyspy_trace *t)
{
    return t->dropped;
}

void sop__pyspy_trace_free(sop_pyspy_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nthreads; i++) {
        for (size_t k = 0; k < t->threads[i].n; k++) {
            free(t->threads[i].frames[k].func);
            free(t->threads[i].frames[k].file);
        }
        free(t->threads[i].frames);
    }
    free(t->threads);
    free(t);
}
