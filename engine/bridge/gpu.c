/* gpu.c (bridge) — adds ev.gpu: the NVML library and driver, the devices the target's tree
 * uses (memory, utilisation over the window, clocks, throttling, temperature, power, PCIe)
 * and the tree's processes on them; its keys are the table sop__evk_gpu below
 * (docs/evidence.md is generated from it): the two lists are rows with their own writers
 * (SOP_EVK_W), devices[].used_by_tree the one hand row. Absent when NVML was not read (the
 * collection then says why under `missing` when the tree shows signs of GPU use).
 * Depends on engine/core/value.h, probes/gpu.h, schema.h. */
#include "bridge.h"
#include "schema.h"

/* The writers of the two lists (defined below the table); base is the sop_gpu. */
static void w_devices(sop_value *o, const char *name, const void *base, void *ctx);
static void w_procs(sop_value *o, const char *name, const void *base, void *ctx);

#define DI(k, f, u, d) SOP_EVK_I(k, sop_gpu_device, f, u, d)
#define DD(k, f, u, d) SOP_EVK_D(k, sop_gpu_device, f, u, d)
#define PI(k, f, u, d) SOP_EVK_I(k, sop_gpu_proc, f, u, d)
#define H SOP_EVK_H
#define W SOP_EVK_W
const sop_evk sop__evk_gpu[] = {
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
const size_t sop__evk_gpu_n = sizeof sop__evk_gpu / sizeof sop__evk_gpu[0];
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

void sop__bridge_gpu(sop_value *ev, const sop_gpu *g)
{
    if (!g || !g->have)
        return;
    sop_value *o = sop__v_obj_at(ev, "gpu");
    if (o)
        sop__bridge_keys(o, g, sop__evk_gpu, sop__evk_gpu_n, "", NULL, NULL);
}
