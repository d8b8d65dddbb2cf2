/* collect_heap.h — the heap census of a collection window (engine/collect/collect_heap.c), kept out
 * of collect.c: a census at the window's start (when asked for) and at its end. */
#ifndef SOP_COLLECT_HEAP_H
#define SOP_COLLECT_HEAP_H

#include <stdbool.h>
#include <stdint.h>

#include "../probes/cgroup.h"
#include "../probes/missing.h"
#include "../probes/proc.h"

struct sop_pyheap;
struct sop_pyruntime;
struct sop_value;

typedef struct {
    struct sop_pyheap *a; /* census at the start of the window, or NULL */
    int64_t anon0;        /* RssAnon then (kB), SOP_NA when unknown */
} sop_heap_window;

/* The target's RssAnon (kB, /proc/PID/status), SOP_NA when unknown: what a census's object
 * sizes are set beside. */
int64_t sop__heap_anon_kb(const char *proc_root, int pid);
/* rt: the runtime found for this collection, or NULL (found again; see py_runtime.h). */
void sop__heap_window_start(sop_heap_window *w, const struct sop_pyruntime *rt, int pid,
                            const char *proc_root, bool forced);
/* The ev.python.heap value, or NULL when no census was wanted or none could be taken. */
struct sop_value *sop__heap_window_end(sop_heap_window *w, const struct sop_pyruntime *rt, int pid,
                                       const char *proc_root, bool forced, const sop_proc *p,
                                       const sop_cgroup *cg, double duration_s,
                                       sop_missing *missing);

/* Free what the start left when the end is not reached (the target is not CPython). */
void sop__heap_window_free(sop_heap_window *w);

#endif
