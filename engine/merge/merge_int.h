/* merge_int.h — what the job-level merge (engine/merge/merge.c, the analysis) and its writers
 * (engine/merge/merge_render.c) share: the key figures compared across ranks. Depends on nothing.
 */
#ifndef SOP_MERGE_INT_H
#define SOP_MERGE_INT_H

/* The key figures (engine/bridge/rank_identity.c) and what a difference must at least be to count.
 * Which rule families explain each is the pack's data (explains{} in rules.lua), carried by every
 * report. */
typedef struct {
    const char *key, *en, *zh;
    double min_diff; /* absolute */
    double min_rel;  /* relative to the median (0: none) */
} figure_def;

#define NFIG 9
extern const figure_def sop__merge_figs[NFIG];
#define FIGS sop__merge_figs

#endif
