/* gpu.h — what a collection learns about the GPUs of a target's tree (ev.gpu): the signs of
 * GPU use seen in /proc (probes/gpu_signs.c: open /dev/nvidiaN, /dev/kfd, /dev/dri/renderD*
 * files) and the NVML readings (probes/gpu_nvml.c, the one file that knows NVML: loaded at
 * run time, sampled over the window). Keys per docs/evidence.md (engine/bridge/gpu.c).
 * Depends on libc and probes/missing.h. */
#ifndef SOP_GPU_H
#define SOP_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "missing.h"

#define SOP_GPU_DEVICES_MAX 16
#define SOP_GPU_PROCS_MAX 64
#define SOP_GPU_TREE_MAX 256 /* processes of the tree looked at */

/* Signs of GPU use in the tree, from /proc alone. */
typedef struct {
    uint32_t nvidia_minors; /* bit N: some process of the tree holds /dev/nvidiaN open (N < 32) */
    bool nvidia_ctl;        /* /dev/nvidiactl or /dev/nvidia-uvm open */
    bool libcuda;           /* libcuda.so* mapped (set by the caller from proc.libs) */
    bool other_vendor;      /* /dev/kfd or /dev/dri/renderD* open (AMD, Intel, ...) */
    char other_node[64];    /* the first such node, for the missing reason */
} sop_gpu_signs;

typedef struct {
    int64_t index;
    char uuid[96];
    char name[96];
    bool used_by_tree;
    int64_t mem_used_kb, mem_total_kb;
    double util_sm_pct, util_sm_max_pct, util_mem_pct; /* over the window's readings */
    int64_t util_samples;
    double idle_frac; /* share of readings with SM utilisation < 5% */
    int64_t sm_clock_mhz, sm_clock_max_mhz;
    char throttle[160]; /* comma-separated reasons; "" when none */
    int64_t temperature_c;
    double power_w;
    int64_t other_procs; /* processes on it that are not the tree's (NVML's lists) */
    double tree_util_sm_pct, tree_idle_frac; /* the tree's own share, when shared (per process) */
    /* MIG: the GPU is partitioned (nvmlDeviceGetMigMode); the instance CUDA_VISIBLE_DEVICES names
     * on it ("" when none) and that instance's memory. The device's utilisation is then not the
     * tree's (NVML has none per instance): util_* are left unset. */
    bool mig_enabled;
    char mig_uuid[96];
    int64_t mig_mem_used_kb, mig_mem_total_kb;
    /* internal: NVML's per-process samples were read, others ran kernels in the window */
    bool proc_figures, others_active;
} sop_gpu_device;

typedef struct {
    int64_t pid;    /* in sop's PID namespace (NVML's pid mapped through NSpid) */
    int64_t device; /* index */
    int64_t mem_kb;
    double util_sm_pct; /* NaN when NVML gives none */
} sop_gpu_proc;

/* A per-tick series of the busy share (mean SM utilisation over the used devices), for the
 * timeline's GPU lane. */
#define SOP_GPU_SERIES_MAX 4096
typedef struct {
    double t_ms[SOP_GPU_SERIES_MAX]; /* sop__now_ms() of the reading */
    float busy_pct[SOP_GPU_SERIES_MAX];
    size_t n;
} sop_gpu_series;

typedef struct sop_gpu {
    bool have; /* NVML answered: ev.gpu is written */
    char source[8];
    char library[256];
    char driver_version[80];
    char cuda_visible_devices[128];
    sop_gpu_device devices[SOP_GPU_DEVICES_MAX];
    size_t ndevices;
    sop_gpu_proc procs[SOP_GPU_PROCS_MAX];
    size_t nprocs;
    int64_t tree_mem_kb;
    double busy_pct, idle_frac;
    char busy_source[16]; /* "device" | "process": where busy_pct/idle_frac come from */
    char note[320];       /* what NVML could not tell (MIG), for the collection's `missing` */
} sop_gpu;

void sop__gpu_init(sop_gpu *g);

/* ---- probes/gpu_signs.c: the tree's open device files (pure /proc reading) ---- */
/* Look at the fd links of each pid in `pids` (a proc-root dir fd); adds to *out. Bounded: at
 * most SOP_GPU_TREE_MAX pids, the first `max_fds` fds of each (at most 65536; a readlink costs
 * about a microsecond, so a quick look takes the first SOP_GPU_FDS_QUICK). */
#define SOP_GPU_FDS_QUICK 1024
#define SOP_GPU_FDS_ALL 65536
void sop__gpu_signs_read(int proc_root_fd, const int *pids, size_t npids, size_t max_fds,
                         sop_gpu_signs *out);
bool sop__gpu_signs_any(const sop_gpu_signs *s);
/* The host pid chain of pid from /proc/PID/status NSpid (outermost first, as seen from the
 * proc root's namespace); returns how many (0 when unread). */
size_t sop__gpu_nspid(int proc_root_fd, int pid, int64_t *out, size_t max);

/* ---- probes/gpu_nvml.c: NVML, loaded at run time ---- */
typedef struct sop_nvml sop_nvml;
/* Load and initialise NVML (dlopen of $SOP_NVML_LIBRARY or "libnvidia-ml.so.1"). NULL with
 * the reason in `why` when it cannot be loaded or answers an error. */
sop_nvml *sop__nvml_open(char *why, size_t whylen);
/* One utilisation reading of every device (a window tick). Cheap: one call per device. */
void sop__nvml_tick(sop_nvml *n, double now_ms);
/* The readings of the end of the window and the means of the ticks into *out; `tree` the pids
 * of the target's tree (for procs[] and used_by_tree), `minors` the /dev/nvidiaN bits held,
 * `cvd` the target's CUDA_VISIBLE_DEVICES (NULL when unset). */
void sop__nvml_finish(sop_nvml *n, int proc_root_fd, const int *tree, size_t ntree, uint32_t minors,
                      const char *cvd, sop_gpu *out);
/* The busy series of the ticks over the used devices (after finish; NULL when none); valid
 * until sop__nvml_close. */
const sop_gpu_series *sop__nvml_series(const sop_nvml *n);
/* What sop__nvml_finish spent, ms: NVML's process lists, the device reads, the per-process
 * utilisation (tests/gpu/nvml_tick_bench prints them). */
void sop__nvml_cost(const sop_nvml *n, double out[3]);
void sop__nvml_close(sop_nvml *n);

#endif
