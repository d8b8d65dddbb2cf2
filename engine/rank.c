/* rank.c — the rank identity of a target (from its allow-listed environment and this host's
 * node name) and the key figures a job-level merge compares across ranks. The keys of ev.rank
 * are the schema table sop__evk_rank below (docs/evidence.md is generated from it). Reads the
 * evidence tree only; depends on value.h, bridge/schema.h and uname(2). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bridge/schema.h"
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

/* The numbers of the identity (SOP_NA: not carried). */
typedef struct {
    int64_t rank, local_rank, world_size;
} rank_figs;

const sop_evk sop__evk_rank[] = {
    SOP_EVK_I("rank", rank_figs, rank, "", "RANK, else SLURM_PROCID"),
    SOP_EVK_I("local_rank", rank_figs, local_rank, "", "LOCAL_RANK, else SLURM_LOCALID"),
    SOP_EVK_I("world_size", rank_figs, world_size, "", "WORLD_SIZE, else SLURM_NTASKS"),
    SOP_EVK_H("job_id", SOP_EVK_TEXT, "",
              "SLURM_JOB_ID, else TORCHELASTIC_RUN_ID (unless \"none\")"),
    SOP_EVK_H("node", SOP_EVK_TEXT, "", "this host's name"),
    SOP_EVK_H("source", SOP_EVK_TEXT, "", "\"torch.distributed\" (RANK set) | \"slurm\""),
};
const size_t sop__evk_rank_n = sizeof sop__evk_rank / sizeof sop__evk_rank[0];

typedef struct {
    const sop_value *env;
    const char *job;
} rank_ctx;

static void rank_hand(sop_value *r, const sop_evk *row, const char *name, void *ctx)
{
    (void)row;
    const rank_ctx *c = ctx;
    if (strcmp(name, "job_id") == 0) {
        sop__v_set_str(r, name, c->job);
    } else if (strcmp(name, "node") == 0) {
        struct utsname u;
        if (uname(&u) == 0)
            sop__v_set_str(r, name, u.nodename);
    } else if (strcmp(name, "source") == 0) {
        sop__v_set_str(r, name, env_int(c->env, "RANK") >= 0 ? "torch.distributed" : "slurm");
    }
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
    rank_figs f = {rank >= 0 ? rank : SOP_NA, local >= 0 ? local : SOP_NA,
                   world >= 0 ? world : SOP_NA};
    rank_ctx c = {env, job};
    sop__bridge_keys(r, &f, sop__evk_rank, sop__evk_rank_n, "", rank_hand, &c);
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

/* The rank's step thread: the sampled thread most in collectives, else the one most in the
 * program's own code; NULL when no thread has a window. */
static const sop_value *step_thread(const sop_value *ev)
{
    const sop_value *threads = sop__v_get(sop__v_get(ev, "python"), "threads");
    const sop_value *best = NULL;
    double best_c = -1, best_o = -1;
    for (const sop_value *t = threads ? threads->child : NULL; t; t = t->next) {
        const sop_value *w = sop__v_get(t, "window");
        double c = 0, o = 0;
        if (!sop__v_get_num(w, "collective_frac", &c))
            continue;
        sop__v_get_num(w, "own_frac", &o);
        if (c > best_c || (c == best_c && o > best_o)) {
            best = w;
            best_c = c;
            best_o = o;
        }
    }
    return best;
}

/* Collective wait of the step thread: its share in collectives and the one it waits in, its
 * longest run in one, its share in its own code and the hottest own frame, and the window. */
static void collective_figures(sop_value *f, const sop_value *ev)
{
    const sop_value *w = step_thread(ev);
    double v = 0;
    if (!w || !sop__v_get_num(w, "collective_frac", &v))
        return;
    sop__v_set_dbl(f, "collective_frac", v);
    const char *op = sop__v_get_str(w, "collective_op");
    if (op && v > 0)
        sop__v_set_str(f, "collective", op);
    if (sop__v_get_num(w, "collective_longest_ms", &v))
        sop__v_set_dbl(f, "collective_longest_ms", v);
    if (sop__v_get_num(w, "own_frac", &v))
        sop__v_set_dbl(f, "own_frac", v);
    const char *own = sop__v_get_str(w, "own_frame");
    if (own)
        sop__v_set_str(f, "own_frame", own);
    if (sop__v_get_num(w, "own_frame_frac", &v))
        sop__v_set_dbl(f, "own_frame_frac", v);
    if (sop__v_get_num(sop__v_get(ev, "sampling"), "window_s", &v))
        sop__v_set_dbl(f, "window_s", v);
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
    if (sop__v_get_num(sop__v_get(ev, "gpu"), "busy_pct", &v))
        sop__v_set_dbl(f, "gpu_busy_frac", v / 100);
    collective_figures(f, ev);
    if (f->count == 0) {
        sop__v_free(f);
        return NULL;
    }
    return f;
}
