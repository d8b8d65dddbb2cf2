/* severity.h — the one order of severities (high, warn, info) and the one sort of findings by
 * it, shared by the rule runner, the report and the merge. Depends on value.h. */
#ifndef SOP_SEVERITY_H
#define SOP_SEVERITY_H

#include "value.h"

/* 0 for "high", 1 for "warn", 2 for anything else ("info", NULL). */
int sop__severity_rank(const char *severity);

/* Detach the members of array `arr` (objects with a "severity") and relink them most severe
 * first, keeping their order within a severity. NULL, a non-array or a short array: nothing. */
void sop__sort_by_severity(sop_value *arr);

#endif
