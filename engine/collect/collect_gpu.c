/* collect_gpu.c — the evidence group `gpu`, in one file: the GPU part of a collection window.
 * NVML is loaded only when the target's tree shows a sign of GPU use (an open /dev/nvidia*
 * file, libcuda mapped), read at the window's polls, and read again at its end. With signs but
 * no NVML, or a GPU of another vendor, the collection says under `missing` what it could not
 * see; with no sign, nothing at all. Then the rows of ev.gpu (docs/evidence.md is generated
 * from them: the NVML library and driver, the devices the tree uses, the tree's processes on
 * them; the two lists are rows with their own writers, devices[].used_by_tree the one hand row)
 * and the provider `gpu` (provider.h). Depends on probes/gpu.h, probes/proc.h, clock.h,
 * bridge/schema.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "bridge/schema.h"
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

/* ---- the evidence group ---- */

/* The writers of the two lists (defined below the table); base is the sop_gpu. */
static void w_devices(sop_value *o, const char *name, const void *base, void *ctx);
static void w_procs(sop_value *o, const char *name, const void *base, void *ctx);

#define DI(k, f, u, d) SOP_EVK_I(k, sop_gpu_device, f, u, d)
#define DD(k, f, u, d) SOP_EVK_D(k, sop_gpu_device, f, u, d)
#define PI(k, f, u, d) SOP_EVK_I(k, sop_gpu_proc, f, u, d)
#define H SOP_EVK_H
#define W SOP_EVK_W
static const sop_evk sop__evk_gpu[] = {
    SOP_EVK_S("source", sop_gpu, source, "\"nvml\""),
    SOP_EVK_T("library", sop_gpu, library,
              "the NVML library loaded ($SOP_NVML_LIBRARY, else libnvidia-ml.so.1)"),
    SOP_EVK_T("driver_version", sop_gpu, driver_version, "the NVIDIA driver's version"),
    SOP_EVK_T("cuda_visible_devices", sop_gpu, cuda_visible_devices,
              "CUDA_VISIBLE_DEVICES of the target (absent when unset)"),
    W("devices", SOP_EVK_ARR, w_devices, "",
      "the devices the tree uses (its open /dev/nvidiaN files, NVML's process lists); when "
      "neither names one, every visible device with used_by_tree false"),
    DI("devices[].index", index, "", "NVML's index (nvidia-smi's numbering)"),
    SOP_EVK_T("devices[].uuid", sop_gpu_device, uuid, "\"GPU-...\""),
    SOP_EVK_T("devices[].name", sop_gpu_device, name, "product name"),
    H("devices[].used_by_tree", SOP_EVK_BOOL, "",
      "true: a process of the tree holds it open or runs on it"),
    DI("devices[].mem_used_kb", mem_used_kb, "kB", "device memory in use (all processes)"),
    DI("devices[].mem_total_kb", mem_total_kb, "kB", "device memory"),
    DD("devices[].util_sm_pct", util_sm_pct, "%",
       "window: mean of the SM utilisation readings (NVML's share of time a kernel ran)"),
    DD("devices[].util_sm_max_pct", util_sm_max_pct, "%", "window: the highest reading"),
    DD("devices[].util_mem_pct", util_mem_pct, "%",
       "window: mean memory-controller utilisation (share of time memory was read or written)"),
    DI("devices[].util_samples", util_samples, "", "utilisation readings in the window"),
    DD("devices[].idle_frac", idle_frac, "",
       "window: share of the readings with SM utilisation < 5%"),
    DI("devices[].sm_clock_mhz", sm_clock_mhz, "MHz", "SM clock at the end of the window"),
    DI("devices[].sm_clock_max_mhz", sm_clock_max_mhz, "MHz", "the SM clock's maximum"),
    SOP_EVK_S("devices[].throttle", sop_gpu_device, throttle,
              "active clock throttle reasons, comma-separated (sw_power_cap, hw_slowdown, "
              "hw_thermal, sw_thermal, hw_power_brake, sync_boost, display_clocks); absent "
              "when none (idle and application-clock settings are not counted)"),
    DI("devices[].temperature_c", temperature_c, "C", "GPU temperature"),
    DD("devices[].power_w", power_w, "W", "power draw"),
    DI("devices[].other_procs", other_procs, "",
       "processes on the device that are not the tree's (NVML's process lists): the device's "
       "figures are then not the tree's alone"),
    DD("devices[].tree_util_sm_pct", tree_util_sm_pct, "%",
       "window, on a shared device: the tree's own SM utilisation (its processes' summed "
       "per-process samples, over the device's sample times)"),
    DD("devices[].tree_idle_frac", tree_idle_frac, "",
       "window, on a shared device: share of the device's sample times the tree's processes "
       "used < 5%"),
    SOP_EVK_TRUE("devices[].mig_enabled", sop_gpu_device, mig_enabled,
                 "the GPU is partitioned into MIG instances (nvmlDeviceGetMigMode, or "
                 "CUDA_VISIBLE_DEVICES names a MIG device on it): its util_* figures are then "
                 "absent (NVML has none per instance; the whole GPU's are not the tree's) and "
                 "`missing` says so"),
    SOP_EVK_S("devices[].mig_uuid", sop_gpu_device, mig_uuid,
              "the MIG device CUDA_VISIBLE_DEVICES names on this GPU (\"MIG-...\"; the old "
              "form MIG-GPU-<uuid>/<gi>/<ci> as given where unresolved)"),
    DI("devices[].mig_mem_used_kb", mig_mem_used_kb, "kB", "memory in use in that MIG instance"),
    DI("devices[].mig_mem_total_kb", mig_mem_total_kb, "kB", "that MIG instance's memory"),
    W("procs", SOP_EVK_ARR, w_procs, "",
      "processes of the target's tree on a GPU (NVML's compute and graphics process lists)"),
    PI("procs[].pid", pid, "", "host pid (NVML's pid mapped through NSpid)"),
    PI("procs[].device", device, "", "devices[].index it runs on"),
    PI("procs[].mem_kb", mem_kb, "kB", "device memory it holds"),
    SOP_EVK_D("procs[].util_sm_pct", sop_gpu_proc, util_sm_pct, "%",
              "its SM utilisation over the window, where NVML gives per-process figures"),
    SOP_EVK_I("tree_mem_kb", sop_gpu, tree_mem_kb, "kB", "sum of procs[].mem_kb"),
    SOP_EVK_D("busy_pct", sop_gpu, busy_pct, "%",
              "the tree's GPU use: mean over the devices it uses of util_sm_pct where it is "
              "alone on the device (or the only one running kernels), else tree_util_sm_pct; "
              "absent when a shared device has no per-process figures, or a device is in MIG "
              "mode (another job's load is never counted as the tree's)"),
    SOP_EVK_D("idle_frac", sop_gpu, idle_frac, "", "the same mean of idle_frac / tree_idle_frac"),
    SOP_EVK_S("busy_source", sop_gpu, busy_source,
              "\"device\": busy_pct is the devices' own figures (the tree alone on them); "
              "\"process\": some device is shared and NVML's per-process samples were used"),
};
static const size_t sop__evk_gpu_n = sizeof sop__evk_gpu / sizeof sop__evk_gpu[0];
#undef DI
#undef DD
#undef PI
#undef H
#undef W

static void device_hand(sop_value *o, const sop_evk *row, const char *name, void *ctx)
{
    (void)row;
    sop__v_set_bool(o, name, ((const sop_gpu_device *)ctx)->used_by_tree);
}

/* An empty list says "none", unlike an absent one: both lists are set even when empty. */
static void w_devices(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_gpu *g = base;
    sop_value *arr = sop__v_arr();
    if (!arr)
        return;
    for (size_t i = 0; i < g->ndevices && i < SOP_GPU_DEVICES_MAX; i++) {
        sop_value *e = sop__v_obj();
        if (!e)
            break;
        sop__bridge_keys(e, &g->devices[i], sop__evk_gpu, sop__evk_gpu_n, "devices[].", device_hand,
                         (void *)&g->devices[i]);
        sop__v_push(arr, e);
    }
    sop__v_set(o, name, arr);
}

static void w_procs(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_gpu *g = base;
    sop_value *arr = sop__v_arr();
    if (!arr)
        return;
    for (size_t i = 0; i < g->nprocs && i < SOP_GPU_PROCS_MAX; i++) {
        sop_value *e = sop__v_obj();
        if (!e)
            break;
        sop__bridge_keys(e, &g->procs[i], sop__evk_gpu, sop__evk_gpu_n, "procs[].", NULL, NULL);
        sop__v_push(arr, e);
    }
    sop__v_set(o, name, arr);
}

/* ev.gpu (nothing when g->have is false). */
static void gpu_attach(sop_value *ev, const sop_gpu *g)
{
    if (!g || !g->have)
        return;
    sop_value *o = sop__v_obj_at(ev, "gpu");
    if (o)
        sop__bridge_keys(o, g, sop__evk_gpu, sop__evk_gpu_n, "", NULL, NULL);
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
        gpu_attach(ev, st->g);
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
     "engine/collect/collect_gpu.c (probes/gpu_nvml.c, probes/gpu_signs.c; issue 25): NVML "
     "loaded at run time; absent when it was not read (see GPU below)",
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
