/* sample_window.h — what the evidence of one sampled window is made of: the aggregation
 * (sample_agg.h), the sampled processes as read at the window's edges, the open files, and the
 * loop's own counts. engine/sample/sampler.c fills it (sop__sampler_window); the evidence rows
 * read it (engine/bridge/window.c). Depends on sample_agg.h, sampler.h, sampler_files.h,
 * probes/proc.h (sop_io), probes/missing.h. */
#ifndef SOP_SAMPLE_WINDOW_H
#define SOP_SAMPLE_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "missing.h"
#include "proc.h"
#include "sample_agg.h"
#include "sampler.h"
#include "sampler_files.h"

/* One sampled process (index 0: the target; then its CPython descendants). */
typedef struct {
    int pid;
    const char *comm, *cmdline;
    bool gone;               /* exited during the window */
    double start_time_s;     /* epoch seconds, from its stat starttime; NaN if unread */
    double found_at_s;       /* wall clock when the sampler attached to it (the window's start) */
    const sop_io *io0, *io1; /* /proc/PID/io at the window's start and end; NULL when unread */
} sop_window_proc;

typedef struct {
    const sop_agg *agg;
    const sop_window_proc *procs;
    int nprocs;
    const sop_open_file *files; /* open at the window's end (pos0: at its start) */
    size_t nfiles;
    sop_sampler_stats stats; /* ticks, missed, rate, self CPU, window_s (and the agg's counts) */
    const char *proc_root;   /* source lines of hot frames are read through PID/root */
    /* the target's anonymous memory (kB) at times (ms, monotonic) over the window */
    const double *trace_ms;
    const int64_t *trace_kb;
    size_t ntrace;
    /* where a figure left out says why (a counter of the target's that looked written, not
     * counted); NULL: left out silently */
    sop_missing *missing;
} sop_window;

/* The window of s: w's parts point into s (valid until it closes) and into procs, which the
 * caller gives (one per sampled process); a figure left out because a counter of the target's
 * looked written is noted in missing (may be NULL). */
void sop__sampler_window(const sop_sampler *s, sop_window_proc procs[SOP_SAMPLER_MAX_PROCS],
                         sop_missing *missing, sop_window *w);

#endif
