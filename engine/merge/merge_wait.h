/* merge_wait.h — the job-level reading of collective wait (engine/merge/merge_wait.c): from each
 * rank's figures (engine/bridge/rank_identity.c: collective_frac, collective,
 * collective_longest_ms, own_frac, own_frame, data_wait_frac, window_s), a hang (every rank but one
 * sat in one collective for the whole window), else the straggler the others wait for, else a
 * balanced job. Pure: value trees in, value tree out; engine/merge/merge.c renders it. */
#ifndef SOP_MERGE_WAIT_H
#define SOP_MERGE_WAIT_H

#include <stdbool.h>
#include <stddef.h>

#include "value.h"

typedef struct {
    const char *label, *node; /* borrowed */
    long rank;                /* -1: none */
    double pid;               /* <= 0: none */
    const sop_value *figures; /* the report's figures (borrowed; NULL: none) */
} sop_wait_rank;

/* Reads ranks r[0..n) (sorted by rank), the world size (<= 0: unknown). Sets on `job` one of
 * "hang", "straggler" (with "by": "collective_wait") or "balanced", and "collective" (the
 * per-rank wait figures); returns true when collective evidence decided the headline (the
 * outlier-and-finding straggler is then not looked for), with *problem set for a hang or a
 * straggler. */
bool sop__merge_wait(sop_value *job, const sop_wait_rank *r, size_t n, long world, const char *lang,
                     bool *problem);

#endif
