/* collect.h — one collection of a live target's evidence (engine/collect/collect.c): the
 * snapshot, or two snapshots around a sampled window, handed to every evidence group's
 * provider and turned into the evidence tree. */
#ifndef SOP_COLLECT_H
#define SOP_COLLECT_H

#include <stddef.h>

#include "sop.h"
#include "value.h"

/* Gather the evidence tree for pid per opts. Returns 0, SOP_ENOTARGET, SOP_EACCES, SOP_ENOMEM;
 * err gets the detail. pictures (may be NULL): with SOP_COLLECT_PICTURES, the flame graph and
 * timeline of the window as inline SVG (malloc'd), else NULL. */
int sop__collect(int pid, const sop_collect_opts *opts, sop_value **out, char **pictures, char *err,
                 size_t errlen);

#endif
