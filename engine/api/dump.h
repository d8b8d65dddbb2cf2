/* dump.h — `sopctl dump`: the CPython stacks of a process rendered as the contract's JSON
 * ("Stacks") or as py-spy-like text. Depends on the python probe, the bridge and json.c. */
#ifndef SOP_DUMP_H
#define SOP_DUMP_H

#include "../probes/missing.h"
#include "../probes/python/cpython.h"

/* From engine/bridge/python.c (declared in bridge.h too, repeated here because bridge.h
 * pulls probes/proc.h, whose sop_status clashes with include/sop.h's). */
struct sop_value;
struct sop_value *sop__bridge_python_threads(const struct sop_python *py);
struct sop_value *sop__bridge_python_gc(const struct sop_python *py);
struct sop_value *sop__bridge_python_walk(const struct sop_python *py);
struct sop_value *sop__bridge_python_others(const struct sop_python *py);
struct sop_value *sop__bridge_text(const char *s);

/* Render `py` (NULL when unreadable; then only the missing list) for `pid`. `missing` may be
 * NULL. *out is malloc'd, owned by the caller. Returns 0 or SOP_ENOMEM. */
int sop__dump_render(const sop_python *py, const sop_missing *missing, int pid, const char *cmdline,
                     int json, char **out);

#endif
