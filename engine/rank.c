/* rank.c — the rank identity of a target (from its allow-listed environment and this host's
 * node name) and the key figures a job-level merge compares across ranks. Reads the evidence
 * tree only; depends on value.h and uname(2). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "rank.h"

/* A non-negative integer, or -1. */
static long env_int(const sop_value *env, const char *name)
{
    const char *s = sop__v_get_str(env, name);
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0 || v > 1L << 30)
        return -1;
    return v;
}

static long first_int(const sop_value *env, const char *a, const char *b)
{
    long v = env_int(env, a);
    return v >= 0 ? v : env_int(env, b);
}

void sop__rank_identity(sop_value *ev)
{
    const sop_value *env = sop__v_get(sop__v_get(ev, "proc"), "env");
    if (!env)
        return;
    long rank = first_int(env, "RANK", "SLURM_PROCID");
    long local = first_int(env, "LOCAL_RANK", "SLURM_LOCALID");
    long world = first_int(env, "WORLD_SIZE", "SLURM_NTASKS");
    const char *job = sop__v_get_str(env, "SLURM_JOB_ID");
    const char *run_id = sop__v_get_str(env, "TORCHELASTIC_RUN_ID");
    if (!job && run_id && strcmp(run_id, "none") != 0)
        job = run_id;
    if (rank < 0 && local < 0 && !job)
        return;
    sop_value *r = sop__v_obj_at(ev, "rank");
    if (!r)
        return;
    if (rank >= 0)
        sop__v_set_int(r, "rank", rank);
    if (local >= 0)
        sop__v_set_int(r, "local_rank", local);
    if (world >= 0)
        sop__v_set_int(r, "world_size", world);
    sop__v_set_str(r, "job_id", job);
    struct utsname u;
    if (uname(&u) == 0)
        sop__v_set_str(r, "node", u.nodename);
    sop__v_set_str(r, "source", env_int(env, "RANK") >= 0 ? "torch.distributed" : "slurm");
}

/* The window figure `key` of every sampled Python thread: their maximum or their sum. */
static bool threads_window(const sop_value *ev, const char *key, bool sum, double *out)
{
    const sop_value *threads = sop__v_get(sop__v_get(ev, "python"), "threads");
    bool any = false;
    double acc = 0;
    for (const sop_value *t = threads ? threads->child : NULL; t; t = t->next) {
        double v = 0;
        if (!sop__v_get_num(sop__v_get(t, "window"), key, &v))
            continue;
        acc = !any ? v : sum ? acc + v : (v > acc ? v : acc);
        any = true;
    }
    if (any)
        *out = acc;
    return any;
}

sop_value *sop__rank_figures(const sop_value *ev)
{
    sop_value *f = sop__v_obj();
    if (!f)
        return NULL;
    const sop_value *proc = sop__v_get(ev, "proc");
    const sop_value *py = sop__v_get(ev, "python");
    double v = 0;
    if (sop__v_get_num(proc, "cpu_pct", &v))
        sop__v_set_dbl(f, "cpu_pct", v);
    if (sop__v_get_num(sop__v_get(ev, "sched"), "runnable_load", &v))
        sop__v_set_dbl(f, "runnable_load", v);
    if (sop__v_get_num(sop__v_get(py, "loader"), "main_data_wait_frac", &v) ||
        threads_window(ev, "data_wait_frac", false, &v))
        sop__v_set_dbl(f, "data_wait_frac", v);
    if (threads_window(ev, "io_wait_frac", false, &v))
        sop__v_set_dbl(f, "dstate_frac", v);
    if (sop__v_get_num(proc, "rss_kb", &v))
        sop__v_set_dbl(f, "rss_kb", v);
    if (threads_window(ev, "gil_frac", true, &v))
        sop__v_set_dbl(f, "gil_frac", v > 1 ? 1 : v);
    if (sop__v_get_num(sop__v_get(py, "loop"), "longest_block_ms", &v) ||
        threads_window(ev, "loop_longest_block_ms", false, &v))
        sop__v_set_dbl(f, "loop_stretch_ms", v);
    if (f->count == 0) {
        sop__v_free(f);
        return NULL;
    }
    return f;
}
