/* rank.c — the rank identity of a target (from its allow-listed environment and this host's
 * node name) and the key figures a job-level merge compares across ranks. The keys of ev.rank
 * are the schema table sop__evk_rank below (docs/evidence.md is generated from it). Reads the
 * evidence tree only; depends on value.h, bridge/schema.h and uname(2). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bridge/schema.h"
#include "evidence_reads.h"
#include "rank_identity.h"

/* The evidence paths rank.c reads besides its figures' (below): test_rank checks every path
 * against the schema (sop__rank_paths). */
#define ENV_PATH "proc.env"

/* The object at a path of plain segments ("proc.env"); NULL when a segment is absent. */
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

typedef struct {
    const sop_value *env;
    const char *job;
} rank_ctx;

/* The writers of the rows that are not numbers (defined below the table; ctx a rank_ctx). */
static void w_job_id(sop_value *o, const char *name, const void *base, void *ctx);
static void w_node(sop_value *o, const char *name, const void *base, void *ctx);
static void w_source(sop_value *o, const char *name, const void *base, void *ctx);

const sop_evk sop__evk_rank[] = {
    SOP_EVK_I("rank", rank_figs, rank, "", "RANK, else SLURM_PROCID"),
    SOP_EVK_I("local_rank", rank_figs, local_rank, "", "LOCAL_RANK, else SLURM_LOCALID"),
    SOP_EVK_I("world_size", rank_figs, world_size, "", "WORLD_SIZE, else SLURM_NTASKS"),
    SOP_EVK_W("job_id", SOP_EVK_TEXT, w_job_id, "",
              "SLURM_JOB_ID, else TORCHELASTIC_RUN_ID (unless \"none\")"),
    SOP_EVK_W("node", SOP_EVK_TEXT, w_node, "", "this host's name"),
    SOP_EVK_W("source", SOP_EVK_TEXT, w_source, "", "\"torch.distributed\" (RANK set) | \"slurm\""),
};
const size_t sop__evk_rank_n = sizeof sop__evk_rank / sizeof sop__evk_rank[0];

static void w_job_id(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    sop__v_set_str(o, name, ((const rank_ctx *)ctx)->job);
}

static void w_node(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    (void)ctx;
    struct utsname u;
    if (uname(&u) == 0)
        sop__v_set_str(o, name, u.nodename);
}

static void w_source(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    const rank_ctx *c = ctx;
    sop__v_set_str(o, name, env_int(c->env, "RANK") >= 0 ? "torch.distributed" : "slurm");
}

void sop__rank_identity(sop_value *ev)
{
    const sop_value *env = sop__v_path(ev, ENV_PATH);
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
    sop__bridge_keys(r, &f, sop__evk_rank, sop__evk_rank_n, "", NULL, &c);
}

/* ---- the key figures: where each comes from, as evidence paths of the schema ---------------- */

typedef struct {
    const char *figure; /* the key in the report's `figures` (engine/merge/merge.c compares them) */
    const char *path;   /* an evidence path of docs/evidence.md (test_rank checks the schema) */
    sop_fold from;      /* VALUE; MAX or SUM over the path's array (python.threads[]) */
    double per;         /* figure = value / per */
    double cap;         /* at most (0: no cap) */
} fig_source;

/* The first source of a figure that has a value wins. */
static const fig_source SOURCES[] = {
    {"cpu_pct", "proc.cpu_pct", SOP_FOLD_VALUE, 1, 0},
    {"runnable_load", "sched.runnable_load", SOP_FOLD_VALUE, 1, 0},
    {"data_wait_frac", "python.loader.main_data_wait_frac", SOP_FOLD_VALUE, 1, 0},
    {"data_wait_frac", "python.threads[].window.data_wait_frac", SOP_FOLD_MAX, 1, 0},
    {"dstate_frac", "python.threads[].window.io_wait_frac", SOP_FOLD_MAX, 1, 0},
    {"rss_kb", "proc.rss_kb", SOP_FOLD_VALUE, 1, 0},
    {"gil_frac", "python.threads[].window.gil_frac", SOP_FOLD_SUM, 1, 1},
    {"loop_stretch_ms", "python.loop.longest_block_ms", SOP_FOLD_VALUE, 1, 0},
    {"loop_stretch_ms", "python.threads[].window.loop_longest_block_ms", SOP_FOLD_MAX, 1, 0},
    {"gpu_busy_frac", "gpu.busy_pct", SOP_FOLD_VALUE, 100, 0},
};
#define NSOURCES (sizeof SOURCES / sizeof SOURCES[0])

/* The step thread (the sampled thread most in collectives, else most in its own code) is
 * chosen in STEP_ARRAY by STEP_BY then STEP_THEN; its window gives these figures. */
#define STEP_ARRAY "python.threads"
#define STEP_WINDOW STEP_ARRAY "[].window"
#define STEP_BY STEP_WINDOW ".collective_frac"
#define STEP_THEN STEP_WINDOW ".own_frac"
typedef struct {
    const char *figure, *path;
    bool text;
} step_source;
static const step_source STEP[] = {
    {"collective_frac", STEP_BY, false},
    {"collective", STEP_WINDOW ".collective_op", true}, /* only while it waits in one */
    {"collective_longest_ms", STEP_WINDOW ".collective_longest_ms", false},
    {"own_frac", STEP_THEN, false},
    {"own_frame", STEP_WINDOW ".own_frame", true},
    {"own_frame_frac", STEP_WINDOW ".own_frame_frac", false},
};
#define NSTEP (sizeof STEP / sizeof STEP[0])
#define WINDOW_PATH "sampling.window_s"

size_t sop__rank_paths(const char **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < NSOURCES; i++)
        if (n < cap)
            out[n++] = SOURCES[i].path;
    for (size_t i = 0; i < NSTEP; i++)
        if (n < cap)
            out[n++] = STEP[i].path;
    static const char *const more[] = {WINDOW_PATH, ENV_PATH};
    for (size_t i = 0; i < 2; i++)
        if (n < cap)
            out[n++] = more[i];
    return n;
}

/* The step thread's window; NULL when no thread has one. */
static const sop_value *step_window(const sop_value *ev)
{
    const sop_value *best = NULL;
    double best_c = -1, best_o = -1;
    const sop_value *threads = sop__v_path(ev, STEP_ARRAY);
    const char *win = sop__evkey_leaf(STEP_WINDOW);
    for (const sop_value *t = threads ? threads->child : NULL; t; t = t->next) {
        const sop_value *w = sop__v_get(t, win);
        double c = 0, o = 0;
        if (!sop__v_get_num(w, sop__evkey_leaf(STEP_BY), &c))
            continue;
        sop__v_get_num(w, sop__evkey_leaf(STEP_THEN), &o);
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
    const sop_value *w = step_window(ev);
    double v = 0, coll = 0;
    if (!w || !sop__v_get_num(w, sop__evkey_leaf(STEP_BY), &coll))
        return;
    for (size_t i = 0; i < NSTEP; i++) {
        const char *key = sop__evkey_leaf(STEP[i].path);
        if (STEP[i].text) {
            const char *s = sop__v_get_str(w, key);
            if (s && (strcmp(STEP[i].figure, "collective") != 0 || coll > 0))
                sop__v_set_str(f, STEP[i].figure, s);
        } else if (sop__v_get_num(w, key, &v)) {
            sop__v_set_dbl(f, STEP[i].figure, v);
        }
    }
    if (sop__v_fold(ev, WINDOW_PATH, SOP_FOLD_VALUE, &v))
        sop__v_set_dbl(f, "window_s", v);
}

sop_value *sop__rank_figures(const sop_value *ev)
{
    sop_value *f = sop__v_obj();
    if (!f)
        return NULL;
    for (size_t i = 0; i < NSOURCES; i++) {
        const fig_source *s = &SOURCES[i];
        if (sop__v_get(f, s->figure))
            continue; /* an earlier source gave it */
        double v = 0;
        if (!sop__v_fold(ev, s->path, s->from, &v))
            continue;
        v /= s->per;
        sop__v_set_dbl(f, s->figure, s->cap > 0 && v > s->cap ? s->cap : v);
    }
    collective_figures(f, ev);
    if (f->count == 0) {
        sop__v_free(f);
        return NULL;
    }
    return f;
}
