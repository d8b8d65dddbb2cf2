/* collect_tasks.h — the asyncio tasks of a collection window (engine/collect/collect_tasks.c), kept
 * out of collect.c: read at the window's start and at its end, when the target has loaded asyncio's
 * C module (_asyncio in its maps), into ev.python.tasks. */
#ifndef SOP_COLLECT_TASKS_H
#define SOP_COLLECT_TASKS_H

#include <stdbool.h>

#include "../probes/missing.h"

struct sop_pytasks;
struct sop_value;

typedef struct {
    struct sop_pytasks *a; /* the tasks at the window's start, or NULL */
    bool wanted;           /* the target has _asyncio loaded */
    bool begun;            /* a thread was seen running asyncio: the first read is done */
} sop_tasks_window;

/* At the window's start: notes whether _asyncio is loaded (one read of the maps), reads nothing. */
void sop__tasks_window_start(sop_tasks_window *w, int pid, const char *proc_root, const char *maps);
/* The first read, once, when a thread of the target is seen running asyncio (the sampler). */
void sop__tasks_window_begin(sop_tasks_window *w, int pid, const char *proc_root);
/* The end read and the evidence, only when the first read was done; NULL otherwise. */
/* The ev.python.tasks value, or NULL when the target has no asyncio or the read failed. */
struct sop_value *sop__tasks_window_end(sop_tasks_window *w, int pid, const char *proc_root,
                                        double duration_s, sop_missing *missing);
void sop__tasks_window_free(sop_tasks_window *w);

#endif
