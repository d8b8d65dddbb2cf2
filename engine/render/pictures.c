/* pictures.c — the window's two pictures inline for an HTML page: the flame graph
 * (flamegraph.c) and the timeline of its threads (timeline.c), from a sampler's stacks and
 * timeline. Used by the collection (a report's pictures) and by `record` (an HTML page).
 * Depends on engine/sample/sampler.h. */
#include <stdio.h>
#include <stdlib.h>

#include "picture_writers.h"
#include "render.h"
#include "sampler.h"
#include "sop.h"

int sop__record_pictures(const sop_sampler *s, int pid, unsigned what, unsigned flags,
                         const sop_timeline_gpu *gpu, FILE *f)
{
    sop_sampler_stats st;
    sop__sampler_stats(s, &st);
    char title[200];
    int rc = 0;
    if (what & 1u) {
        sop_stack_count *v = NULL;
        size_t n = sop__sampler_stacks(s, &v);
        snprintf(title, sizeof title, "pid %d: %ld samples at %g Hz over %.1f s%s", pid, st.ticks,
                 st.rate_hz, st.window_s, flags & SOP_RECORD_IDLE ? "" : ", idle samples left out");
        rc = sop__flamegraph_write(v, n, title,
                                   SOP_FG_INLINE | (flags & SOP_RECORD_IDLE ? SOP_FG_IDLE : 0), f);
        for (size_t i = 0; i < n; i++)
            free((char *)v[i].stack);
        free(v);
    }
    if ((what & 2u) && rc == 0) {
        sop_thread_info *thr = NULL;
        const sop_timeline_ev *ev = NULL;
        size_t nthr = sop__sampler_threads(s, &thr), nev = sop__sampler_timeline(s, &ev);
        snprintf(title, sizeof title, "pid %d and its workers, a lane per thread, over %.1f s", pid,
                 st.window_s);
        const char *const *tasks = NULL;
        size_t ntasks = sop__sampler_task_names(s, &tasks);
        rc = sop__timeline_write_gpu(thr, nthr, ev, nev, st.window_s, st.rate_hz, title, gpu, tasks,
                                     ntasks, SOP_FG_INLINE, f);
        free(thr);
    }
    return rc;
}
