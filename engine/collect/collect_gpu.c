/* collect_gpu.c — the GPU part of a collection window: NVML is loaded only when the target's
 * tree shows a sign of GPU use (an open /dev/nvidia* file, libcuda mapped), read at the
 * window's polls, and read again at its end. With signs but no NVML, or a GPU of another vendor,
 * the collection says under `missing` what it could not see; with no sign, nothing at all.
 * The provider `gpu` (provider.h) at the end: the example of a provider, one file and one line
 * in SOP_PROVIDERS. Depends on probes/gpu.h, probes/proc.h, clock.h, bridge/bridge.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "clock.h"
#include "collect_gpu.h"
#include "provider.h"

static size_t tree_pids(const sop_proc *p, const sop_child_list *ch, int *out, size_t max)
{
    size_t n = 0;
    out[n++] = p->pid;
    for (size_t i = 0; ch && i < ch->n && n < max; i++)
        out[n++] = ch->items[i].pid;
    return n;
}

static bool maps_libcuda(const sop_proc *p)
{
    for (size_t i = 0; i < p->libs.n; i++)
        if (strcmp(p->libs.libs[i].name, "libcuda") == 0)
            return true;
    return false;
}

static const char *env_value(const sop_proc *p, const char *name)
{
    for (size_t i = 0; i < p->env.n; i++)
        if (strcmp(p->env.vars[i].name, name) == 0)
            return p->env.vars[i].value;
    return NULL;
}

void sop__gpu_window_start(sop_gpu_window *w, int proc_root_fd, const sop_proc *p,
                           const sop_child_list *ch)
{
    memset(w, 0, sizeof *w);
    int pids[SOP_GPU_TREE_MAX];
    size_t n = tree_pids(p, ch, pids, SOP_GPU_TREE_MAX);
    /* a quick look (the first fds of each process: a GPU is opened early, and the fds of a
     * server can be many), unless the target maps libcuda */
    w->signs.libcuda = maps_libcuda(p);
    sop__gpu_signs_read(proc_root_fd, pids, n,
                        w->signs.libcuda ? SOP_GPU_FDS_ALL : SOP_GPU_FDS_QUICK, &w->signs);
    if (w->signs.nvidia_minors || w->signs.nvidia_ctl || w->signs.libcuda) {
        w->nvml = sop__nvml_open(w->why, sizeof w->why);
    }
}

void sop__gpu_window_start_pid(sop_gpu_window *w, int proc_root_fd, int pid)
{
    memset(w, 0, sizeof *w);
    sop_child_list ch = {0};
    sop_missing scratch = {0};
    sop__children_collect(proc_root_fd, pid, &ch, &scratch);
    sop__missing_free(&scratch);
    w->pids[w->npids++] = pid;
    for (size_t i = 0; i < ch.n && w->npids < SOP_GPU_TREE_MAX; i++)
        w->pids[w->npids++] = ch.items[i].pid;
    sop__child_list_free(&ch);
    sop__gpu_signs_read(proc_root_fd, w->pids, w->npids, SOP_GPU_FDS_ALL, &w->signs);
    if (w->signs.nvidia_minors || w->signs.nvidia_ctl)
        w->nvml = sop__nvml_open(w->why, sizeof w->why);
}

void sop__gpu_window_end_pid(sop_gpu_window *w, int proc_root_fd)
{
    if (!w->nvml)
        return;
    sop_gpu *g = malloc(sizeof *g);
    if (!g)
        return;
    sop__gpu_init(g);
    sop__nvml_finish(w->nvml, proc_root_fd, w->pids, w->npids, w->signs.nvidia_minors, NULL, g);
    free(g);
}

void sop__gpu_window_tick(sop_gpu_window *w)
{
    if (w->nvml)
        sop__nvml_tick(w->nvml, sop__now_ms());
}

sop_gpu *sop__gpu_window_end(sop_gpu_window *w, int proc_root_fd, const sop_proc *p,
                             const sop_child_list *ch, sop_missing *missing)
{
    int pids[SOP_GPU_TREE_MAX];
    size_t n = tree_pids(p, ch, pids, SOP_GPU_TREE_MAX);
    sop_gpu_signs end = {0};
    /* devices opened during the window too; a tree with no sign at the start is looked at again
     * only when it has mapped libcuda since (a CUDA process maps it once CUDA starts) */
    if (sop__gpu_signs_any(&w->signs) || maps_libcuda(p))
        sop__gpu_signs_read(proc_root_fd, pids, n, SOP_GPU_FDS_ALL, &end);
    uint32_t minors = w->signs.nvidia_minors | end.nvidia_minors;
    bool nvidia =
        minors || w->signs.nvidia_ctl || end.nvidia_ctl || w->signs.libcuda || maps_libcuda(p);
    if (!w->nvml && nvidia && !w->why[0]) /* the first sign came during the window */
        w->nvml = sop__nvml_open(w->why, sizeof w->why);
    if (!w->nvml) {
        if (nvidia)
            sop__missing_add(missing, "gpu", "%s", w->why);
        else if (w->signs.other_vendor || end.other_vendor)
            sop__missing_add(missing, "gpu",
                             "%s is open without NVIDIA's CUDA device files (an AMD or "
                             "Intel GPU, or a render node): sop reads GPUs through NVML "
                             "only, so this GPU's use is not seen",
                             w->signs.other_vendor ? w->signs.other_node : end.other_node);
        return NULL;
    }
    sop_gpu *g = malloc(sizeof *g);
    if (!g)
        return NULL;
    sop__gpu_init(g);
    sop__nvml_finish(w->nvml, proc_root_fd, pids, n, minors, env_value(p, "CUDA_VISIBLE_DEVICES"),
                     g);
    if (g->note[0])
        sop__missing_add(missing, "gpu", "%s", g->note);
    return g;
}

const sop_gpu_series *sop__gpu_window_series(const sop_gpu_window *w)
{
    return sop__nvml_series(w->nvml);
}

void sop__gpu_window_free(sop_gpu_window *w)
{
    sop__nvml_close(w->nvml);
    w->nvml = NULL;
}

/* The provider: start looks for signs of GPU use (and loads NVML on them), poll reads the
 * utilisation every GPU_POLL_MS during the window, finish takes the end's readings, emit
 * writes ev.gpu. */
#define GPU_POLL_MS 250.0

typedef struct {
    sop_gpu_window w;
    long polls;
    sop_gpu *g; /* ev.gpu, or NULL */
} gpu_state;

static void *gpu_start(sop_collect_ctx *cx)
{
    gpu_state *st = calloc(1, sizeof *st);
    if (st)
        sop__gpu_window_start(&st->w, cx->root_fd, cx->proc0, cx->children0);
    return st;
}

static double gpu_poll(sop_collect_ctx *cx, void *p, double now_ms)
{
    (void)cx;
    gpu_state *st = p;
    if (!st->w.nvml)
        return INFINITY;
    /* not at the window's start: a reading is NVML's average over its last period, before */
    if (st->polls++ > 0)
        sop__gpu_window_tick(&st->w);
    return now_ms + GPU_POLL_MS;
}

static void gpu_finish(sop_collect_ctx *cx, void *p)
{
    gpu_state *st = p;
    sop_collection *c = cx->c;
    if (cx->window_ok && st->polls++ > 0) /* the window's last reading */
        sop__gpu_window_tick(&st->w);
    st->g = sop__gpu_window_end(&st->w, cx->root_fd, &c->proc, &c->children, &c->missing);
    const sop_gpu_series *gs = sop__gpu_window_series(&st->w);
    if (gs && cx->sampler && cx->pictures && (cx->gpu_lane = malloc(sizeof *cx->gpu_lane)))
        *cx->gpu_lane = *gs; /* the timeline's GPU lane */
    sop__gpu_window_free(&st->w);
}

static void gpu_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)cx;
    const gpu_state *st = p;
    if (st->g)
        sop__bridge_gpu(ev, st->g);
}

static void gpu_free(void *p)
{
    gpu_state *st = p;
    sop__gpu_window_free(&st->w);
    free(st->g);
    free(st);
}

static const sop_evk_group gpu_groups[] = {
    {"gpu",
     "engine/bridge/gpu.c (probes/gpu_nvml.c, probes/gpu_signs.c; issue 25): NVML loaded at run "
     "time; absent when it was not read (see GPU below)",
     sop__evk_gpu, &sop__evk_gpu_n},
    {0},
};

const sop_provider sop__provider_gpu = {
    .name = "gpu",
    .groups = gpu_groups,
    .start = gpu_start,
    .poll = gpu_poll,
    .finish = gpu_finish,
    .emit = gpu_emit,
    .free = gpu_free,
};
