/* native.h — native stacks of a target's threads (probes/python/native.c, the one home of
 * libunwind-ptrace) and their merge with the Python frames. Depends on python.h. */
#ifndef SOP_NATIVE_H
#define SOP_NATIVE_H

#include <stddef.h>

#include "python.h"

/* Called while thread `tid` is stopped (to read its Python frames consistently). */
typedef void (*sop_native_stopped_fn)(void *ctx, int tid);

/* Interrupt thread `tid` of `pid` (PTRACE_SEIZE + PTRACE_INTERRUPT; only that thread stops),
 * call fn, unwind at most 256 native frames, detach (on every path). `maps` (the target's
 * /proc/PID/maps text) names the library of each frame. *out is malloc'd (caller frees);
 * *pause_ms is the time between the stop and the detach. Returns 0, -EPERM/-EACCES when
 * ptrace is refused, -ESRCH when the thread is gone, or another -errno; err gets a reason. */
int sop__native_thread(int pid, int tid, sop_native_stopped_fn fn, void *ctx, const char *maps,
                       sop_nframe **out, size_t *n, double *pause_ms, char *err, size_t errlen);

/* Replace each evaluator C frame (_PyEval_EvalFrameDefault / _PyEval_EvalFrame) with the run
 * of Python frames it executes (py[] innermost first; a run ends at a frame with .entry).
 * Python frames left over go after the last evaluator frame. *out is malloc'd. Pure. */
int sop__native_merge(const sop_nframe *nat, size_t nn, const sop_pyframe *py, size_t npy,
                      sop_nframe **out, size_t *nout);

#endif
