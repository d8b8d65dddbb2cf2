/* bridge.h — the one place that turns evidence into the `ev` tree (and from there into Lua
 * tables and JSON). One file per evidence group adds its keys to the top-level object `ev`,
 * following docs/evidence.md; engine/rules/lua_value.c moves trees in and out of Lua. Absent
 * values (SOP_NA, NaN) are left out, never written as 0. */
#ifndef SOP_BRIDGE_H
#define SOP_BRIDGE_H

#include "evidence.h"
#include "value.h"

struct sop_python;

void sop__bridge_host(sop_value *ev, const sop_host *h, const sop_oom_list *ooms, double now);
void sop__bridge_proc(sop_value *ev, const sop_proc *p, const sop_thread_list *threads,
                      const sop_child_list *children, double now);
/* `parent` (an object) and `siblings[]` (the parent's other children), shaped as children[]. */
void sop__bridge_family(sop_value *ev, const sop_child *parent, const sop_child_list *siblings,
                        double now);
void sop__bridge_cgroup(sop_value *ev, const sop_cgroup *cg);

/* Adds ev.python (same shape as the `dump` JSON minus pid). */
void sop__bridge_python(sop_value *ev, const struct sop_python *py);
/* The threads array of ev.python and of `sopctl dump --json` (native stacks when present). */
sop_value *sop__bridge_python_threads(const struct sop_python *py);
sop_value *sop__bridge_python_gc(const struct sop_python *py);
sop_value *sop__bridge_python_walk(const struct sop_python *py);
sop_value *sop__bridge_python_others(const struct sop_python *py);

/* ev.python.tasks from the tasks read at the window's start (`a`, NULL when not read) and at
 * its end (`b`; NULL gives NULL), window_s apart (engine/bridge/tasks_rows.c). */
struct sop_pytasks;
sop_value *sop__bridge_tasks(const struct sop_pytasks *a, const struct sop_pytasks *b,
                             double window_s);

/* ev.python.heap from a census `a` and, when `b` is not NULL, a second one `window_s` later
 * (growth per type, of the objects and of the anonymous memory, anon_kb* SOP_NA when unknown);
 * at most `top` types in each list. Also the body of `sopctl heap --json`. */
struct sop_pyheap;
sop_value *sop__bridge_heap(const struct sop_pyheap *a, const struct sop_pyheap *b, double window_s,
                            int64_t anon_kb0, int64_t anon_kb1, size_t top);

/* Copy `s` into a string value with invalid UTF-8 replaced, so JSON and Lua both accept it;
 * control characters are kept (renderers escape them). */
sop_value *sop__bridge_text(const char *s);

#endif
