/* evidence_doc.h — every evidence group the docs and the reads check list (evidence_doc.c).
 * Depends on bridge/schema.h. */
#ifndef SOP_EVIDENCE_DOC_H
#define SOP_EVIDENCE_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include "bridge/schema.h"

/* The providers' groups in table order, the watch's, the top-level keys ""; at most cap into
 * out; returns how many there are. */
size_t sop__evidence_groups(const sop_evk_group **out, size_t cap);
/* The schema row of an evidence path as docs/evidence.md spells it ("proc.cpu_pct",
 * "python.threads[].window.gil_frac", "duration_s"); NULL when no group has it. For C code
 * outside the providers that reads evidence by path: its tests check each path here. */
const sop_evk *sop__evidence_row(const char *path);
/* The sop_evk_type of a top-level key of evidence: a group's own key ("host" an object,
 * "threads[]" an array: *group true) or a top-level row ("pid", "missing"); -1 when the
 * schema has no such key. */
int sop__evidence_top_type(const char *key, bool *group);
/* A row's path (sop__evidence_row) or a group's own key ("proc", "python.tasks", "threads"). */
bool sop__evidence_known(const char *path);

#endif
