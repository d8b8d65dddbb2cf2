/* watch_history.c — the watch's memory of its earlier windows (watch_history.h): a bounded ring
 * of each window's RSS / anonymous / shared memory and time, written into the next window's
 * evidence as ev.watch (schema rows below: docs and the reads check; the values are written
 * here by hand). Depends on value.h and bridge/schema.h. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "bridge/schema.h"
#include "evidence_reads.h"
#include "watch_history.h"

#define H(key, type, unit, doc) SOP_EVK_H(key, type, unit, doc)
const sop_evk sop__evk_watch[] = {
    H("windows", SOP_EVK_INT, "",
      "windows of this watch on this process so far, this one included"),
    H("history", SOP_EVK_ARR, "",
      "the last windows on this process (at most 16), oldest first, this window last: the "
      "readings a trend across windows is judged on (mem.growth)"),
    H("history[].at_s", SOP_EVK_NUM, "s", "that window's collected_at"),
    H("history[].rss_kb", SOP_EVK_INT, "kB", "proc.rss_kb then"),
    H("history[].anon_kb", SOP_EVK_INT, "kB", "proc.anon_kb (RssAnon) then"),
    H("history[].shmem_kb", SOP_EVK_INT, "kB", "proc.shmem_kb (RssShmem) then"),
};
const size_t sop__evk_watch_n = sizeof sop__evk_watch / sizeof sop__evk_watch[0];
#undef H

static double num_at(const sop_value *o, const char *key)
{
    double v;
    return o && sop__v_get_num(o, key, &v) ? v : NAN;
}

static void set_kb(sop_value *o, const char *key, double v)
{
    if (!isnan(v))
        sop__v_set_int(o, key, (int64_t)v);
}

void sop__watch_history_note(sop_watch_history *h, sop_value *tree)
{
    if (!h || !tree)
        return;
    const sop_value *alive = sop__v_get(tree, SOP_EVKEY("alive"));
    const sop_value *proc = sop__v_get(tree, SOP_EVKEY("proc"));
    if ((alive && alive->type == SOP_V_BOOL && !alive->b) || !proc)
        return;
    double start = num_at(proc, SOP_EVKEY("proc.start_time_s"));
    /* another process under the pid (or no start time to tell): start again. The start time is
     * boot time + ticks: equal to well under a second for the same process. */
    if (h->n > 0 && !(fabs(start - h->start_time_s) < 0.5)) {
        h->n = h->head = 0;
        h->windows = 0;
    }
    h->start_time_s = start;
    sop_watch_point p = {
        .at_s = num_at(tree, SOP_EVKEY("collected_at")),
        .rss_kb = num_at(proc, SOP_EVKEY("proc.rss_kb")),
        .anon_kb = num_at(proc, SOP_EVKEY("proc.anon_kb")),
        .shmem_kb = num_at(proc, SOP_EVKEY("proc.shmem_kb")),
    };
    if (h->n < SOP_WATCH_HISTORY) {
        h->pt[(h->head + h->n) % SOP_WATCH_HISTORY] = p;
        h->n++;
    } else {
        h->pt[h->head] = p;
        h->head = (h->head + 1) % SOP_WATCH_HISTORY;
    }
    h->windows++;
    sop_value *w = sop__v_obj();
    sop_value *arr = w ? sop__v_arr_at(w, "history") : NULL;
    if (!arr) {
        sop__v_free(w);
        return;
    }
    sop__v_set_int(w, "windows", (int64_t)h->windows);
    for (int i = 0; i < h->n; i++) {
        const sop_watch_point *q = &h->pt[(h->head + i) % SOP_WATCH_HISTORY];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set_dbl(o, "at_s", q->at_s);
        set_kb(o, "rss_kb", q->rss_kb);
        set_kb(o, "anon_kb", q->anon_kb);
        set_kb(o, "shmem_kb", q->shmem_kb);
        sop__v_push(arr, o);
    }
    sop__v_set(tree, "watch", w);
}
