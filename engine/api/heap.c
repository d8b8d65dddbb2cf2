/* heap.c — sop_heap: one census of the target's Python objects (two, `duration_s` apart, for
 * the growth per type), with the anonymous memory read next to each, rendered as the
 * ev.python.heap JSON or as text. Depends on the heap probe, bridge/heap_rows.c, json.c. */
#include "bridge_heap.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api_int.h"
#include "collect_heap.h"
#include "engine.h"
#include "escape.h"
#include "evidence_reads.h"
#include "json.h"
#include "procfs.h"
#include "sop.h"
#include "strbuf.h"
#include "value.h"

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* "12.3 MiB" */
static void human(char *out, size_t cap, double bytes)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    double v = fabs(bytes);
    while (v >= 1024 && k < 4)
        v /= 1024, k++;
    snprintf(out, cap, "%s%.*f %s", bytes < 0 ? "-" : "", k ? 1 : 0, v, u[k]);
}

/* Text from the target with control characters as \xNN. */
static void put_text(sop_sb *b, const char *s)
{
    sop__sb_put_escaped(b, s ? s : "", false);
}

static void render_types(sop_sb *b, const sop_value *arr, bool deltas)
{
    sop__sb_printf(b, "  %12s %12s  %s\n", deltas ? "count +/-" : "count",
                   deltas ? "bytes +/-" : "est. bytes", "type");
    for (const sop_value *t = arr ? arr->child : NULL; t; t = t->next) {
        double c = 0, by = 0;
        sop__v_get_num(t, SOP_EVKEY("python.heap.types[].count"), &c); /* growth[]: the same keys */
        sop__v_get_num(t, SOP_EVKEY("python.heap.types[].bytes"), &by);
        char hb[32];
        human(hb, sizeof hb, by);
        sop__sb_printf(b, deltas ? "  %+12.0f %12s  " : "  %12.0f %12s  ", c, hb);
        put_text(b, sop__v_get_str(t, SOP_EVKEY("python.heap.types[].name")));
        sop__sb_puts(b, "\n");
    }
}

static void render_text(sop_sb *b, const sop_value *v, int pid)
{
    double objects = 0, bytes = 0, ms = 0, anon = -1, expl = -1, pause = 0;
    sop__v_get_num(v, SOP_EVKEY("python.heap.objects"), &objects);
    sop__v_get_num(v, SOP_EVKEY("python.heap.bytes"), &bytes);
    sop__v_get_num(v, SOP_EVKEY("python.heap.census_ms"), &ms);
    const sop_value *complete = sop__v_get(v, SOP_EVKEY("python.heap.complete"));
    const sop_value *stopped = sop__v_get(v, SOP_EVKEY("python.heap.stopped"));
    char hb[32];
    human(hb, sizeof hb, bytes);
    sop__sb_printf(b, "Python heap of process %d (CPython ", pid);
    put_text(b, sop__v_get_str(v, SOP_EVKEY("python.heap.version")));
    sop__sb_printf(b, "): %.0f objects tracked by the GC, ~%s\n", objects, hb);
    if (complete && complete->b) {
        sop__sb_printf(b, "census complete");
    } else {
        sop__sb_printf(b, "census PARTIAL: ");
        put_text(b, sop__v_get_str(v, SOP_EVKEY("python.heap.partial")));
    }
    sop__sb_printf(b, "; read in %.0f ms", ms);
    if (stopped && stopped->b && sop__v_get_num(v, SOP_EVKEY("python.heap.pause_ms"), &pause))
        sop__sb_printf(b, ", process stopped for %.0f ms\n", pause);
    else
        sop__sb_printf(b, " without stopping the process\n");
    if (sop__v_get_num(v, SOP_EVKEY("python.heap.anon_kb"), &anon) &&
        sop__v_get_num(v, SOP_EVKEY("python.heap.explained"), &expl)) {
        human(hb, sizeof hb, anon * 1024);
        sop__sb_printf(b, "anonymous memory %s; Python objects explain %.0f%% of it\n", hb,
                       100 * expl);
    }
    const sop_value *np = sop__v_get(v, SOP_EVKEY("python.heap.numpy"));
    double arrays = 0, nbytes = 0;
    if (np && sop__v_get_num(np, SOP_EVKEY("python.heap.numpy.arrays"), &arrays) &&
        sop__v_get_num(np, SOP_EVKEY("python.heap.numpy.nbytes"), &nbytes)) {
        human(hb, sizeof hb, nbytes);
        sop__sb_printf(b,
                       "numpy: %.0f arrays owning %s of data (reached through lists, tuples "
                       "and dicts)\n",
                       arrays, hb);
    }
    sop__sb_puts(b, "\n");
    render_types(b, sop__v_get(v, SOP_EVKEY("python.heap.types")), false);
    const sop_value *growth = sop__v_get(v, SOP_EVKEY("python.heap.growth"));
    if (growth) {
        double w = 0, grew = 0, ag = 0, ge = -1;
        sop__v_get_num(v, SOP_EVKEY("python.heap.window_s"), &w);
        sop__v_get_num(v, SOP_EVKEY("python.heap.bytes_growth"), &grew);
        human(hb, sizeof hb, grew);
        sop__sb_printf(b, "\ngrowth over %.1f s: Python objects %s", w, hb);
        if (sop__v_get_num(v, SOP_EVKEY("python.heap.anon_growth_kb"), &ag)) {
            human(hb, sizeof hb, ag * 1024);
            sop__sb_printf(b, ", anonymous memory %s", hb);
            if (sop__v_get_num(v, SOP_EVKEY("python.heap.growth_explained"), &ge))
                sop__sb_printf(b, " (Python objects explain %.0f%% of it)", 100 * ge);
        }
        sop__sb_printf(b, "\n");
        render_types(b, growth, true);
    }
}

int sop_heap(sop_engine *e, int pid, unsigned flags, int top, double duration_s, sop_format fmt,
             char **out)
{
    (void)e;
    if (!out || pid <= 0 || top < 0 || !(duration_s >= 0) || duration_s > 3600)
        return SOP_EINVAL;
    *out = NULL;
    if (top == 0)
        top = 20;
    unsigned hflags = (flags & SOP_HEAP_STOP_TARGET) ? SOP_HEAP_STOP : 0;
    sop_missing missing = {0};
    sop_pyheap *a = NULL, *b = NULL;
    int64_t anon0 = sop__heap_anon_kb("/proc", pid), anon1 = SOP_NA;
    int r = sop__heap_census(pid, "/proc", hflags, &a, &missing);
    if (r == 0 && duration_s > 0) {
        sleep_s(duration_s);
        anon1 = sop__heap_anon_kb("/proc", pid);
        r = sop__heap_census(pid, "/proc", hflags, &b, &missing);
    }
    int rc = sop__status_of_remote_read(r);
    sop_value *v = NULL;
    if (r == 0) {
        v = sop__bridge_heap(a, b, duration_s, anon0, anon1, (size_t)top);
    } else {
        v = sop__v_obj();
    }
    if (v && missing.n) {
        sop_value *arr = sop__v_arr_at(v, "missing");
        for (size_t i = 0; arr && i < missing.n; i++) {
            sop_value *m = sop__v_obj();
            sop__v_set_str(m, "probe", missing.items[i].probe);
            sop__v_set_str(m, "reason", missing.items[i].reason);
            sop__v_push(arr, m);
        }
    }
    if (!v) {
        rc = SOP_ENOMEM;
    } else if (fmt == SOP_FORMAT_JSON) {
        sop__v_set_int(v, "pid", pid);
        char *j = sop__json_print(v, 1);
        *out = j ? sop__json_escape_controls(j) : NULL;
        free(j);
        if (!*out)
            rc = SOP_ENOMEM;
    } else {
        sop_sb sb = {0};
        if (r == 0)
            render_text(&sb, v, pid);
        for (size_t i = 0; i < missing.n; i++) {
            sop__sb_printf(&sb, "%smissing %s: ", i == 0 ? "\n" : "", missing.items[i].probe);
            put_text(&sb, missing.items[i].reason);
            sop__sb_puts(&sb, "\n");
        }
        *out = sop__sb_take(&sb);
        if (!*out)
            rc = SOP_ENOMEM;
    }
    sop__v_free(v);
    sop__heap_free(a);
    sop__heap_free(b);
    sop__missing_free(&missing);
    return rc;
}
