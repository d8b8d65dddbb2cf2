/* tasks.h — `sopctl tasks`: every asyncio task of a process (probes/python/asyncio_read.c)
 * rendered as JSON (docs/asyncio.md, "sopctl tasks --json") or as text, as a list or as the
 * tree of which task awaits which. Depends on the tasks probe, value.h and json.c. */
#ifndef SOP_ENGINE_TASKS_H
#define SOP_ENGINE_TASKS_H

#include <stdbool.h>

#include "../probes/missing.h"
#include "../probes/python/asyncio_tasks.h"

/* From engine/bridge/text.c (bridge.h pulls probes/proc.h, whose names clash with sop.h). */
struct sop_value;
struct sop_value *sop__bridge_text(const char *s);

/* The JSON tree of `t` (NULL: only pid and missing); with_tree adds the nested "tree". */
struct sop_value *sop__tasks_value(const sop_pytasks *t, const sop_missing *missing, int pid,
                                   bool with_tree);
/* Text of `t` for `pid` (cmdline shown as read); tree: indented by who awaits whom. */
char *sop__tasks_text(const sop_pytasks *t, const sop_missing *missing, int pid,
                      const char *cmdline, bool tree);

#endif
