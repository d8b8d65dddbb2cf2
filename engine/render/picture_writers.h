/* picture_writers.h — the window's pictures written from the sampler's data: the timeline
 * (timeline.c), the flame graph (flamegraph.c) and speedscope's file (speedscope.c). Declared
 * here, in render/, beside their code; the data types they draw are the sampler's
 * (sample/sampler.h, a floor below). Depends on sampler.h. */
#ifndef SOP_PICTURE_WRITERS_H
#define SOP_PICTURE_WRITERS_H

#include <stddef.h>
#include <stdio.h>

#include "sampler.h"

/* The timeline as a self-contained SVG: a lane per thread (engine/render/timeline.c). flags:
 * SOP_FG_INLINE. Returns 0 or -errno. */
int sop__timeline_write(const sop_thread_info *thr, size_t nthr, const sop_timeline_ev *ev,
                        size_t nev, double window_s, double rate_hz, const char *title,
                        unsigned flags, FILE *f);
/* The same with a GPU lane under the threads: the busy share of the GPUs the tree uses at each
 * NVML reading (probes/gpu.h's series; t_ms on sop__now_ms's clock, t0_ms the window's start). */
typedef struct sop_timeline_gpu {
    const double *t_ms;
    const float *busy_pct;
    size_t n;
    double t0_ms;
} sop_timeline_gpu;
/* tasks/ntasks: the names of the events' task bytes (NULL, 0: no task lanes); an event loop's
 * thread then gets, under its lane, a lane per coroutine its callbacks ran (which task ran
 * when). */
int sop__timeline_write_gpu(const sop_thread_info *thr, size_t nthr, const sop_timeline_ev *ev,
                            size_t nev, double window_s, double rate_hz, const char *title,
                            const sop_timeline_gpu *gpu, const char *const *tasks, size_t ntasks,
                            unsigned flags, FILE *f);

/* A self-contained interactive SVG flame graph of collapsed stacks (engine/render/flamegraph.c).
 * SOP_FG_IDLE keeps idle samples (left out by default); SOP_FG_INLINE leaves out the XML
 * declaration (for an HTML page). Returns 0 or -errno. */
#define SOP_FG_IDLE 0x1u
#define SOP_FG_INLINE 0x2u
int sop__flamegraph_write(const sop_stack_count *stacks, size_t n, const char *title,
                          unsigned flags, FILE *f);
/* The same stacks in speedscope's JSON file format: a sampled profile per thread, weights in
 * samples (engine/render/speedscope.c). flags: SOP_FG_IDLE. Returns 0 or -errno. */
int sop__speedscope_write(const sop_stack_count *stacks, size_t n, const char *name, unsigned flags,
                          FILE *f);

#endif
