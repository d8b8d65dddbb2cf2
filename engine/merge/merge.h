/* merge.h — the job-level merge as the API uses it: the analysis of the merged reports
 * (engine/merge/merge.c) as a value tree, and its writers in each format
 * (engine/merge/merge_render.c), each a malloc'd string or NULL. */
#ifndef SOP_MERGE_H
#define SOP_MERGE_H

#include <stdbool.h>

#include "sop.h"
#include "value.h"

/* The job tree (the JSON form) of the reports merged so far, texts in lang; *problem: a rank
 * has a warn/high finding or a node or rank is missing. NULL when out of memory. */
sop_value *sop__merge_analyse(const sop_merge *m, const char *lang, bool *problem);

char *sop__merge_md(const sop_value *job, const char *lang);
char *sop__merge_json(const sop_value *job, const char *lang);
char *sop__merge_text(const sop_value *job, const char *lang);

#endif
