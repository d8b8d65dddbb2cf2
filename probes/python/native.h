/* native.h — native stacks of a target's threads (probes/python/native.c, the one home of
 * libunwind-ptrace) and their merge with the Python frames. Depends on cpython.h. */
#ifndef SOP_NATIVE_H
#define SOP_NATIVE_H

#include <stddef.h>

#include "cpython.h"

/* Called while thread `tid` is stopped (to read its Python frames consistently). */
typedef void (*sop_native_stopped_fn)(void *ctx, int tid);

/* One collection's unwinding state: the libunwind address space (shared by the threads, so
 * its caches help), the target's mappings and the symbol tables of its objects. */
typedef struct sop_native sop_native;

/* `maps` is the target's /proc/PID/maps text (copied); objects are read through
 * proc_root/PID/root. Returns 0, -ENOMEM, or -ELIBACC when libunwind cannot be loaded (it is
 * loaded with dlopen on the first open; the reason is then in err). */
int sop__native_open(int pid, const char *proc_root, const char *maps, sop_native **out, char *err,
                     size_t errlen);
void sop__native_close(sop_native *nv);

/* Interrupt thread `tid` (PTRACE_SEIZE + PTRACE_INTERRUPT; only that thread stops), call fn,
 * unwind at most 256 frames (none when nv is NULL: a stop for fn alone, *out stays NULL), detach
 * (on every path); then name the frames from the ELF symbol tables (after the detach, so the pause
 * is the unwinding only). *out is malloc'd; *pause_ms is the time the thread was stopped. Returns
 * 0, -EPERM/-EACCES when ptrace is refused, -ESRCH when the thread is gone, or another -errno; err
 * gets a reason. */
int sop__native_thread(sop_native *nv, int tid, sop_native_stopped_fn fn, void *ctx,
                       sop_nframe **out, size_t *n, double *pause_ms, char *err, size_t errlen);

/* Replace each evaluator C frame (_PyEval_EvalFrameDefault / _PyEval_EvalFrame) with the run
 * of Python frames it executes (py[] innermost first; a run ends at a frame with .entry).
 * Python frames left over go after the last evaluator frame. *out is malloc'd. Pure. */
int sop__native_merge(const sop_nframe *nat, size_t nn, const sop_pyframe *py, size_t npy,
                      sop_nframe **out, size_t *nout);

#endif
