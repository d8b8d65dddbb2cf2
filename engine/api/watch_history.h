/* watch_history.h — what a watch remembers of its earlier windows on one process (the memory
 * readings of the last SOP_WATCH_HISTORY windows), written into each window's evidence as
 * ev.watch so that a rule can judge a trend across windows (mem.growth). Depends on value.h. */
#ifndef SOP_WATCH_HISTORY_H
#define SOP_WATCH_HISTORY_H

#include "value.h"

#define SOP_WATCH_HISTORY 16

typedef struct {
    double at_s;                      /* collected_at */
    double rss_kb, anon_kb, shmem_kb; /* NaN: not read */
} sop_watch_point;

typedef struct {
    sop_watch_point pt[SOP_WATCH_HISTORY]; /* a ring: the oldest at head once full */
    int n, head;
    double start_time_s;        /* the process the ring belongs to (proc.start_time_s) */
    unsigned long long windows; /* windows on that process so far */
} sop_watch_history;

/* Add this window's readings (from `tree`, an evidence tree of a live target) to h, then set
 * tree.watch = {windows, history: [the last ones, oldest first, this one last]}. A window of
 * another process (start time changed) starts the history again; a dead target's window adds
 * nothing and gets no `watch`. */
void sop__watch_history_note(sop_watch_history *h, sop_value *tree);

#endif
