/* ranks.h — the local ranks of a distributed job (cli/rank_discovery.c), for `run --ranks` and
 * `evidence --ranks`. Depends on include/sop.h. */
#ifndef SOP_CLI_RANKS_H
#define SOP_CLI_RANKS_H

#include <stddef.h>

#include "sop.h"

typedef struct {
    int pid, ppid;
    long rank, local_rank, world_size; /* -1: unknown */
} cli_rank;

/* Find the ranks on this node: of Slurm job `slurm_job` (NULL: of a torch.distributed launch),
 * below `launcher` when > 0. Returns how many (*out malloc'd, sorted by rank; src names how
 * they were found), or -1 after printing why. */
int cli_find_ranks(const char *slurm_job, int launcher, cli_rank **out, char *src, size_t srclen);

/* Collect the evidence of every rank at once, over the same window (one thread per rank,
 * engines[i] for rank i). evs[i] is NULL when that collection failed, errs[i] says why.
 * Returns 0, or -1 when out of memory. */
int cli_collect_ranks(const cli_rank *r, int n, const sop_collect_opts *opts, sop_engine **engines,
                      sop_evidence **evs, char (*errs)[512]);

/* `run --ranks` (evidence_only 0: each rank's report as JSON with fmt json, else the merge of
 * them in fmt) and `evidence --ranks` (evidence_only 1: each rank's evidence JSON), written to
 * output (NULL: stdout). e holds the rules (unused for evidence). Returns the exit status. */
#include <stdbool.h>
int cli_ranks_run(sop_engine *e, int launcher, const char *slurm_job, const sop_collect_opts *co,
                  sop_format fmt, const char *lang, bool evidence_only, const char *output);

#endif
