/* rank.h — what one report carries so that reports of many ranks can be merged into one
 * job-level report (engine/merge/merge.c): the rank identity of the target (ROSTER contract:
 * target.rank/local_rank/world_size/node/job_id) and its key figures. Depends on value.h. */
#ifndef SOP_RANK_H
#define SOP_RANK_H

#include "value.h"

/* Add ev.rank = {rank local_rank world_size job_id node launcher} from the allow-listed
 * environment the process probe kept (torch.distributed's RANK/LOCAL_RANK/WORLD_SIZE, else
 * Slurm's SLURM_PROCID/SLURM_LOCALID/SLURM_NTASKS; SLURM_JOB_ID, else TORCHELASTIC_RUN_ID) and
 * this host's node name. Adds nothing when the process carries no rank. */
void sop__rank_identity(sop_value *ev);

/* The key figures of the evidence a merge compares across ranks, as a new object (NULL when
 * none): cpu_pct, runnable_load (ev.sched, when present), data_wait_frac, dstate_frac, rss_kb,
 * gil_frac, loop_stretch_ms. Absent evidence gives an absent figure. */
sop_value *sop__rank_figures(const sop_value *ev);

/* The evidence paths (docs/evidence.md, e.g. "python.threads[].window.gil_frac") rank.c reads:
 * at most cap into out; returns how many. For the test that checks them against the schema. */
#include <stddef.h>
size_t sop__rank_paths(const char **out, size_t cap);

#endif
