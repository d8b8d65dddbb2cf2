/* gpu_nvml.c — the one file that knows NVML (NVIDIA's management library). Loaded at run time
 * with dlopen ($SOP_NVML_LIBRARY, else "libnvidia-ml.so.1"): no build dependency, no CUDA
 * headers; the few types and functions used are declared here from NVML's public reference.
 * Versioned symbols are resolved newest first. Reads per device name, UUID, minor number,
 * memory, utilisation (at the window's ticks), clocks, clock-event reasons, temperature,
 * power, PCIe throughput; per process memory and SM utilisation; MIG devices named by
 * CUDA_VISIBLE_DEVICES (their parent GPU, the instance's memory; no utilisation: NVML has none per
 * instance). Depends on libc, libdl. */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "na.h"

/* ---- NVML's types, as its reference gives them ---- */
typedef int nvml_ret;                 /* nvmlReturn_t */
typedef struct nvml_dev_st *nvml_dev; /* nvmlDevice_t */
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
typedef struct {
    unsigned long long total, free, used;
} nvml_memory;
typedef struct {
    unsigned int gpu, memory;
} nvml_utilization;
typedef struct { /* nvmlProcessInfo_v1_t: the unversioned call */
    unsigned int pid;
    unsigned long long used_gpu_memory;
} nvml_proc_v1;
typedef struct { /* nvmlProcessInfo_v2_t: the _v2 and _v3 calls */
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
} nvml_proc_v2;
typedef struct { /* nvmlProcessUtilizationSample_t */
    unsigned int pid;
    unsigned long long timestamp; /* CPU time, microseconds */
    unsigned int sm_util, mem_util, enc_util, dec_util;
} nvml_proc_util;
#define NVML_CLOCK_SM 1
#define NVML_TEMPERATURE_GPU 0

/* Clock-event (throttle) reason bits; idle and the applications-clocks setting are not
 * slowdowns and are left out. */
static const struct {
    unsigned long long bit;
    const char *name;
} reasons[] = {
    {0x4ULL, "sw_power_cap"},     {0x8ULL, "hw_slowdown"}, {0x10ULL, "sync_boost"},
    {0x20ULL, "sw_thermal"},      {0x40ULL, "hw_thermal"}, {0x80ULL, "hw_power_brake"},
    {0x100ULL, "display_clocks"},
};

typedef nvml_ret (*fn_void)(void);
typedef const char *(*fn_errstr)(nvml_ret);
typedef nvml_ret (*fn_text)(char *, unsigned int);
typedef nvml_ret (*fn_uint)(unsigned int *);
typedef nvml_ret (*fn_handle)(unsigned int, nvml_dev *);
typedef nvml_ret (*fn_dev_text)(nvml_dev, char *, unsigned int);
typedef nvml_ret (*fn_dev_uint)(nvml_dev, unsigned int *);
typedef nvml_ret (*fn_dev_mem)(nvml_dev, nvml_memory *);
typedef nvml_ret (*fn_dev_util)(nvml_dev, nvml_utilization *);
typedef nvml_ret (*fn_dev_clock)(nvml_dev, int, unsigned int *);
typedef nvml_ret (*fn_dev_ull)(nvml_dev, unsigned long long *);
typedef nvml_ret (*fn_dev_procs)(nvml_dev, unsigned int *, void *);
typedef nvml_ret (*fn_dev_putil)(nvml_dev, nvml_proc_util *, unsigned int *, unsigned long long);
typedef nvml_ret (*fn_by_uuid)(const char *, nvml_dev *);
typedef nvml_ret (*fn_dev_dev)(nvml_dev, nvml_dev *);
typedef nvml_ret (*fn_dev_mode)(nvml_dev, unsigned int *, unsigned int *);
typedef nvml_ret (*fn_dev_index)(nvml_dev, unsigned int, nvml_dev *);
#define NVML_DEVICE_MIG_ENABLE 1
#define MIG_SCAN_MAX 64 /* MIG devices looked at under one GPU (an H100 has at most 7) */

#define TICKS_MAX SOP_GPU_SERIES_MAX
#define PROCS_READ_MAX 256
#define PROC_SAMPLES_MAX 65536

struct sop_nvml {
    void *lib;
    char path[256];
    fn_void shutdown;
    fn_errstr errstr;
    fn_text driver_version;
    fn_dev_text name, uuid;
    fn_dev_uint minor, power;
    fn_dev_mem memory;
    fn_dev_util util;
    fn_dev_clock clock, max_clock, temperature;
    fn_dev_ull reasons;
    fn_dev_procs compute[3], graphics[3]; /* newest first; NULL where absent */
    size_t proc_size[3];
    fn_dev_putil proc_util;
    /* MIG (optional: absent in a driver before MIG) */
    fn_by_uuid by_uuid;
    fn_dev_dev mig_parent;
    fn_dev_mode mig_mode;
    fn_dev_uint mig_max, mig_gi, mig_ci;
    fn_dev_index mig_by_index;
    unsigned ndev;
    nvml_dev dev[SOP_GPU_DEVICES_MAX];
    unsigned long long t0_us; /* window start, for the per-process samples */
    int root_fd;              /* the proc root, during sop__nvml_finish */
    double cost_ms[3];        /* sop__nvml_finish: process lists, device reads, per-process */
    /* utilisation readings per tick and device; -1 = no reading */
    size_t nticks;
    double *tick_ms;
    short (*sm)[SOP_GPU_DEVICES_MAX];
    short (*mem)[SOP_GPU_DEVICES_MAX];
    sop_gpu_series *series;
};

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static unsigned long long wall_us(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned long long)tv.tv_usec;
}

static const char *err_text(const sop_nvml *n, nvml_ret r)
{
    const char *s = n->errstr ? n->errstr(r) : NULL;
    return s && s[0] ? s : "error";
}

#define SYM(field, name) (n->field = (__typeof__(n->field))dlsym(n->lib, name))

static sop_nvml *load(const char *path, char *why, size_t whylen)
{
    sop_nvml *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    snprintf(n->path, sizeof n->path, "%s", path);
    n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        const char *e = dlerror();
        snprintf(why, whylen, "NVML not loaded (%s): no NVIDIA GPU figures", e ? e : path);
        free(n);
        return NULL;
    }
    fn_void init = (fn_void)dlsym(n->lib, "nvmlInit_v2");
    if (!init)
        init = (fn_void)dlsym(n->lib, "nvmlInit");
    fn_uint count = (fn_uint)dlsym(n->lib, "nvmlDeviceGetCount_v2");
    if (!count)
        count = (fn_uint)dlsym(n->lib, "nvmlDeviceGetCount");
    fn_handle handle = (fn_handle)dlsym(n->lib, "nvmlDeviceGetHandleByIndex_v2");
    if (!handle)
        handle = (fn_handle)dlsym(n->lib, "nvmlDeviceGetHandleByIndex");
    SYM(shutdown, "nvmlShutdown");
    SYM(errstr, "nvmlErrorString");
    if (!init || !count || !handle || !n->shutdown) {
        snprintf(why, whylen, "%s is not a usable NVML (nvmlInit/nvmlDeviceGetCount missing)",
                 path);
        dlclose(n->lib);
        free(n);
        return NULL;
    }
    nvml_ret r = init();
    if (r != NVML_SUCCESS) {
        snprintf(why, whylen, "NVML failed to initialise: %s (%d)", err_text(n, r), r);
        dlclose(n->lib);
        free(n);
        return NULL;
    }
    unsigned c = 0;
    r = count(&c);
    if (r != NVML_SUCCESS) {
        snprintf(why, whylen, "NVML could not count the devices: %s (%d)", err_text(n, r), r);
        n->shutdown();
        free(n);
        return NULL;
    }
    for (unsigned i = 0; i < c && n->ndev < SOP_GPU_DEVICES_MAX; i++)
        if (handle(i, &n->dev[n->ndev]) == NVML_SUCCESS)
            n->ndev++;
    SYM(driver_version, "nvmlSystemGetDriverVersion");
    SYM(name, "nvmlDeviceGetName");
    SYM(uuid, "nvmlDeviceGetUUID");
    SYM(minor, "nvmlDeviceGetMinorNumber");
    SYM(power, "nvmlDeviceGetPowerUsage");
    SYM(memory, "nvmlDeviceGetMemoryInfo");
    SYM(util, "nvmlDeviceGetUtilizationRates");
    SYM(clock, "nvmlDeviceGetClockInfo");
    SYM(max_clock, "nvmlDeviceGetMaxClockInfo");
    SYM(temperature, "nvmlDeviceGetTemperature");
    if (!SYM(reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
        SYM(reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    SYM(compute[0], "nvmlDeviceGetComputeRunningProcesses_v3");
    SYM(compute[1], "nvmlDeviceGetComputeRunningProcesses_v2");
    SYM(compute[2], "nvmlDeviceGetComputeRunningProcesses");
    SYM(graphics[0], "nvmlDeviceGetGraphicsRunningProcesses_v3");
    SYM(graphics[1], "nvmlDeviceGetGraphicsRunningProcesses_v2");
    SYM(graphics[2], "nvmlDeviceGetGraphicsRunningProcesses");
    n->proc_size[0] = n->proc_size[1] = sizeof(nvml_proc_v2);
    n->proc_size[2] = sizeof(nvml_proc_v1);
    SYM(proc_util, "nvmlDeviceGetProcessUtilization");
    SYM(by_uuid, "nvmlDeviceGetHandleByUUID");
    SYM(mig_parent, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
    SYM(mig_mode, "nvmlDeviceGetMigMode");
    SYM(mig_max, "nvmlDeviceGetMaxMigDeviceCount");
    SYM(mig_by_index, "nvmlDeviceGetMigDeviceHandleByIndex");
    SYM(mig_gi, "nvmlDeviceGetGpuInstanceId");
    SYM(mig_ci, "nvmlDeviceGetComputeInstanceId");
    return n;
}

/* NVML is loaded and initialised once per process (nvmlInit costs ~15 ms on an H200 host, and
 * a watch collects every window) and never shut down; each window gets its own copy of the
 * handles with its own readings. */
static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static sop_nvml *lib; /* the loaded library, or NULL */

sop_nvml *sop__nvml_open(char *why, size_t whylen)
{
    const char *env = getenv("SOP_NVML_LIBRARY");
    const char *path = env && env[0] ? env : "libnvidia-ml.so.1";
    pthread_mutex_lock(&lib_lock);
    if (lib && strcmp(lib->path, path) != 0)
        lib = NULL; /* another library asked for: the first stays loaded */
    if (!lib)
        lib = load(path, why, whylen);
    sop_nvml *n = lib ? malloc(sizeof *n) : NULL;
    if (n)
        *n = *lib;
    else if (lib)
        snprintf(why, whylen, "out of memory");
    pthread_mutex_unlock(&lib_lock);
    if (n)
        n->t0_us = wall_us();
    return n;
}

void sop__nvml_tick(sop_nvml *n, double now_ms)
{
    if (!n || !n->util || n->nticks >= TICKS_MAX)
        return;
    if (!n->tick_ms) {
        n->tick_ms = calloc(TICKS_MAX, sizeof *n->tick_ms);
        n->sm = calloc(TICKS_MAX, sizeof *n->sm);
        n->mem = calloc(TICKS_MAX, sizeof *n->mem);
        if (!n->tick_ms || !n->sm || !n->mem) {
            n->util = NULL; /* no readings rather than a crash */
            return;
        }
    }
    size_t k = n->nticks++;
    n->tick_ms[k] = now_ms;
    for (unsigned i = 0; i < n->ndev; i++) {
        nvml_utilization u;
        bool ok = n->util(n->dev[i], &u) == NVML_SUCCESS && u.gpu <= 100 && u.memory <= 100;
        n->sm[k][i] = ok ? (short)u.gpu : -1;
        n->mem[k][i] = ok ? (short)u.memory : -1;
    }
}

/* Is device i visible under CUDA_VISIBLE_DEVICES (indices, UUID prefixes, or MIG devices:
 * `mig_parents` bit i when an entry names a MIG device of device i)? */
static bool visible(const char *cvd, unsigned index, const char *uuid, uint32_t mig_parents)
{
    if (!cvd)
        return true;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", cvd);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (t[0] >= '0' && t[0] <= '9') {
            char *end;
            long v = strtol(t, &end, 10);
            if (v < 0)
                return false; /* CUDA stops at the first invalid entry */
            if ((unsigned long)v == index)
                return true;
        } else if (strncmp(t, "GPU-", 4) == 0 && uuid[0] && strncmp(uuid, t, strlen(t)) == 0) {
            return true;
        } else if (strncmp(t, "MIG-", 4) == 0) {
            if (index < 32 && (mig_parents & (1u << index)))
                return true;
        } else if (strncmp(t, "GPU-", 4) != 0) {
            return false;
        }
    }
    return false;
}

/* The MIG devices CUDA_VISIBLE_DEVICES names, by parent device index. */
typedef struct {
    uint32_t parents;                     /* bit i: an entry names a MIG device of device i */
    char uuid[SOP_GPU_DEVICES_MAX][96];   /* the first such entry's MIG UUID, per parent */
    nvml_dev handle[SOP_GPU_DEVICES_MAX]; /* its MIG handle; NULL where not resolved */
    bool unresolved;                      /* some MIG entry named no device NVML has */
    bool old_driver;                      /* ... because this NVML has no MIG functions */
} mig_map;

static int index_of(const sop_nvml *n, nvml_dev h)
{
    char want[96] = "", have[96];
    for (unsigned i = 0; i < n->ndev; i++)
        if (n->dev[i] == h)
            return (int)i;
    /* a handle need not be the same pointer: compare UUIDs */
    if (!n->uuid || n->uuid(h, want, sizeof want) != NVML_SUCCESS || !want[0])
        return -1;
    want[sizeof want - 1] = '\0';
    for (unsigned i = 0; i < n->ndev; i++)
        if (n->uuid(n->dev[i], have, sizeof have) == NVML_SUCCESS &&
            strncmp(have, want, sizeof have) == 0)
            return (int)i;
    return -1;
}

/* The MIG device "MIG-GPU-<uuid>/<gi>/<ci>" (CUDA's form before driver 470): its parent by
 * UUID, the device among the parent's MIG devices with those instance ids. */
static int resolve_old_mig(const sop_nvml *n, const char *t, nvml_dev *mig)
{
    char parent[96];
    const char *slash = strchr(t + 4, '/');
    size_t len = slash ? (size_t)(slash - (t + 4)) : strlen(t + 4);
    if (len >= sizeof parent)
        return -1;
    memcpy(parent, t + 4, len);
    parent[len] = '\0';
    int pi = -1;
    char have[96];
    for (unsigned i = 0; n->uuid && i < n->ndev && pi < 0; i++)
        if (n->uuid(n->dev[i], have, sizeof have) == NVML_SUCCESS &&
            strncmp(have, parent, sizeof have) == 0)
            pi = (int)i;
    unsigned gi, ci, max = 0;
    if (pi < 0 || !slash || sscanf(slash, "/%u/%u", &gi, &ci) != 2 || !n->mig_max ||
        !n->mig_by_index || !n->mig_gi || !n->mig_ci ||
        n->mig_max(n->dev[pi], &max) != NVML_SUCCESS)
        return pi;
    for (unsigned k = 0; k < max && k < MIG_SCAN_MAX; k++) {
        nvml_dev h;
        unsigned g, c;
        if (n->mig_by_index(n->dev[pi], k, &h) == NVML_SUCCESS &&
            n->mig_gi(h, &g) == NVML_SUCCESS && n->mig_ci(h, &c) == NVML_SUCCESS && g == gi &&
            c == ci) {
            *mig = h;
            break;
        }
    }
    return pi;
}

static void resolve_migs(const sop_nvml *n, const char *cvd, mig_map *m)
{
    memset(m, 0, sizeof *m);
    if (!cvd)
        return;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", cvd);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (strncmp(t, "MIG-", 4) != 0)
            continue;
        nvml_dev mig = NULL, parent;
        int pi = -1;
        if (strncmp(t, "MIG-GPU-", 8) == 0) {
            pi = resolve_old_mig(n, t, &mig);
        } else if (!n->by_uuid || !n->mig_parent) {
            m->unresolved = m->old_driver = true;
            continue;
        } else if (n->by_uuid(t, &mig) == NVML_SUCCESS &&
                   n->mig_parent(mig, &parent) == NVML_SUCCESS) {
            pi = index_of(n, parent);
        } else {
            mig = NULL;
        }
        if (pi < 0 || pi >= SOP_GPU_DEVICES_MAX) {
            m->unresolved = true;
            continue;
        }
        if (m->parents & (1u << pi))
            continue; /* the first entry on that GPU */
        m->parents |= 1u << pi;
        m->handle[pi] = mig;
        snprintf(m->uuid[pi], sizeof m->uuid[pi], "%s", t);
        char own[96];
        if (mig && n->uuid && n->uuid(mig, own, sizeof own) == NVML_SUCCESS && own[0]) {
            own[sizeof own - 1] = '\0';
            snprintf(m->uuid[pi], sizeof m->uuid[pi], "%s", own);
        }
    }
}

/* The MIG facts of device i: MIG mode, the named instance and its memory. The device's
 * utilisation readings are then not the tree's: NVML has none per MIG instance
 * (nvmlDeviceGetUtilizationRates answers NOT_SUPPORTED on one), and the whole GPU's are
 * shared with the other instances. */
static void read_mig(const sop_nvml *n, unsigned i, const mig_map *m, sop_gpu_device *d)
{
    unsigned cur, pend;
    if (n->mig_mode && n->mig_mode(n->dev[i], &cur, &pend) == NVML_SUCCESS &&
        cur == NVML_DEVICE_MIG_ENABLE)
        d->mig_enabled = true;
    if (i < 32 && (m->parents & (1u << i))) {
        d->mig_enabled = true;
        snprintf(d->mig_uuid, sizeof d->mig_uuid, "%s", m->uuid[i]);
        nvml_memory mem;
        if (m->handle[i] && n->memory && n->memory(m->handle[i], &mem) == NVML_SUCCESS) {
            d->mig_mem_used_kb = (int64_t)(mem.used / 1024);
            d->mig_mem_total_kb = (int64_t)(mem.total / 1024);
        }
    }
    if (d->mig_enabled) {
        d->util_sm_pct = d->util_sm_max_pct = d->util_mem_pct = d->idle_frac = NAN;
        d->util_samples = SOP_NA;
    }
}

typedef struct {
    int tree_pid;
    int64_t ns[8];
    size_t nns;
} pid_map;

/* The tree process NVML's pid names. NVML gives pids of the namespace it runs in (the host's
 * when sop runs there): first the pid as sop sees it; else, for a driver that gives the pids
 * of the process's own (deeper) namespace, a deeper NSpid entry — only when that number is no
 * process sop can see, so a host process with the same number is never taken for it. */
static int tree_pid_of(const pid_map *m, size_t nm, unsigned nvml_pid, int proc_root_fd)
{
    for (size_t i = 0; i < nm; i++)
        if (m[i].ns[0] == (int64_t)nvml_pid)
            return m[i].tree_pid;
    int found = 0;
    for (size_t i = 0; i < nm; i++)
        for (size_t j = 1; j < m[i].nns; j++)
            if (m[i].ns[j] == (int64_t)nvml_pid) {
                if (found && found != m[i].tree_pid)
                    return 0; /* two tree processes have that inner number: ambiguous */
                found = m[i].tree_pid;
            }
    if (found) {
        char name[16];
        snprintf(name, sizeof name, "%u", nvml_pid);
        if (proc_root_fd < 0 || faccessat(proc_root_fd, name, F_OK, 0) == 0)
            return 0;
    }
    return found;
}

static void add_proc(sop_gpu *out, int pid, unsigned dev, unsigned long long mem)
{
    for (size_t i = 0; i < out->nprocs; i++)
        if (out->procs[i].pid == pid && out->procs[i].device == (int64_t)dev)
            return; /* also in the other list */
    if (out->nprocs >= SOP_GPU_PROCS_MAX)
        return;
    sop_gpu_proc *p = &out->procs[out->nprocs++];
    p->pid = pid;
    p->device = dev;
    p->mem_kb = mem == NVML_VALUE_NOT_AVAILABLE ? SOP_NA : (int64_t)(mem / 1024);
    p->util_sm_pct = NAN;
}

/* The tree's processes on device index i (both lists, newest call first). */
static void read_procs(sop_nvml *n, unsigned i, const pid_map *m, size_t nm, sop_gpu *out,
                       bool *used, int64_t *others)
{
    unsigned char buf[PROCS_READ_MAX * sizeof(nvml_proc_v2)];
    unsigned seen[PROCS_READ_MAX]; /* other processes, once each (they may be in both lists) */
    size_t nseen = 0;
    *others = 0;
    for (int list = 0; list < 2; list++) {
        fn_dev_procs *fns = list ? n->graphics : n->compute;
        for (int v = 0; v < 3; v++) {
            if (!fns[v])
                continue;
            unsigned cnt = PROCS_READ_MAX;
            if (fns[v](n->dev[i], &cnt, buf) != NVML_SUCCESS)
                break; /* NOT_SUPPORTED, or more than we read: leave it */
            for (unsigned k = 0; k < cnt && k < PROCS_READ_MAX; k++) {
                unsigned pid;
                unsigned long long mem;
                if (v < 2) {
                    nvml_proc_v2 e;
                    memcpy(&e, buf + k * sizeof e, sizeof e);
                    pid = e.pid, mem = e.used_gpu_memory;
                } else {
                    nvml_proc_v1 e;
                    memcpy(&e, buf + k * sizeof e, sizeof e);
                    pid = e.pid, mem = e.used_gpu_memory;
                }
                int tp = tree_pid_of(m, nm, pid, n->root_fd);
                if (tp > 0) {
                    add_proc(out, tp, i, mem);
                    *used = true;
                    continue;
                }
                size_t q = 0;
                while (q < nseen && seen[q] != pid)
                    q++;
                if (q == nseen && nseen < PROCS_READ_MAX) {
                    seen[nseen++] = pid;
                    (*others)++;
                }
            }
            break;
        }
    }
}

/* Per-process SM shares on device index i since t0 (NVML keeps a sample per process and
 * driver period; the buffer is sized by a first call, bounded): each tree process's mean, and
 * the tree's own share of the device over the device's sample times (samples bucketed by
 * 100 ms: one driver period), when d is shared. */
static void read_proc_util(sop_nvml *n, unsigned i, const pid_map *m, size_t nm, sop_gpu *out,
                           sop_gpu_device *d)
{
    if (!n->proc_util)
        return;
    unsigned cnt = 0;
    nvml_ret r = n->proc_util(n->dev[i], NULL, &cnt, n->t0_us);
    nvml_proc_util *s = NULL;
    if (r == NVML_ERROR_INSUFFICIENT_SIZE || (r == NVML_SUCCESS && cnt > 0)) {
        if (cnt == 0 || cnt > PROC_SAMPLES_MAX)
            cnt = PROC_SAMPLES_MAX;
        cnt += 16; /* samples may arrive between the two calls */
        s = calloc(cnt, sizeof *s);
        if (!s)
            return;
        r = n->proc_util(n->dev[i], s, &cnt, n->t0_us);
    }
    if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_FOUND) { /* not supported (MIG, old GPUs) */
        free(s);
        return;
    }
    if (r != NVML_SUCCESS || !s)
        cnt = 0; /* NOT_FOUND: no process ran a kernel since the window started */
    if (cnt > PROC_SAMPLES_MAX)
        cnt = PROC_SAMPLES_MAX;
    for (size_t p = 0; p < out->nprocs; p++) {
        sop_gpu_proc *gp = &out->procs[p];
        if (gp->device != (int64_t)i)
            continue;
        double sum = 0;
        int k = 0;
        for (unsigned j = 0; j < cnt; j++)
            if (tree_pid_of(m, nm, s[j].pid, n->root_fd) == gp->pid && s[j].sm_util <= 100) {
                sum += s[j].sm_util;
                k++;
            }
        gp->util_sm_pct = k ? sum / k : 0.0; /* listed but no sample since t0: no kernel ran */
    }
    /* the tree's share: its summed samples per 100 ms bucket of the device's sample times */
    unsigned long long *bucket = cnt ? calloc(cnt, sizeof *bucket) : NULL;
    double *tree = cnt ? calloc(cnt, sizeof *tree) : NULL;
    size_t nb = 0;
    for (unsigned j = 0; bucket && tree && j < cnt; j++) {
        if (s[j].sm_util > 100)
            continue;
        bool ours = tree_pid_of(m, nm, s[j].pid, n->root_fd) > 0;
        if (!ours && s[j].sm_util > 0)
            d->others_active = true;
        unsigned long long b = s[j].timestamp / 100000ULL;
        size_t q = 0;
        while (q < nb && bucket[q] != b)
            q++;
        if (q == nb)
            bucket[nb++] = b;
        if (ours)
            tree[q] += s[j].sm_util;
    }
    double sum = 0;
    size_t idle = 0;
    for (size_t q = 0; q < nb; q++) {
        double v = tree[q] > 100 ? 100 : tree[q];
        sum += v;
        idle += v < 5;
    }
    d->proc_figures = true;
    d->tree_util_sm_pct = nb ? sum / (double)nb : 0.0;
    d->tree_idle_frac = nb ? (double)idle / (double)nb : 1.0;
    free(bucket);
    free(tree);
    free(s);
}

static void throttle_text(unsigned long long bits, char *out, size_t cap)
{
    out[0] = '\0';
    size_t len = 0;
    for (size_t k = 0; k < sizeof reasons / sizeof reasons[0]; k++)
        if (bits & reasons[k].bit) {
            int w = snprintf(out + len, cap - len, "%s%s", len ? "," : "", reasons[k].name);
            if (w < 0 || (size_t)w >= cap - len)
                break;
            len += (size_t)w;
        }
}

static void read_device(sop_nvml *n, unsigned i, sop_gpu_device *d)
{
    nvml_dev h = n->dev[i];
    unsigned u;
    d->index = i;
    if (n->name)
        n->name(h, d->name, sizeof d->name);
    if (n->uuid)
        n->uuid(h, d->uuid, sizeof d->uuid);
    d->name[sizeof d->name - 1] = d->uuid[sizeof d->uuid - 1] = '\0';
    nvml_memory mem;
    if (n->memory && n->memory(h, &mem) == NVML_SUCCESS) {
        d->mem_used_kb = (int64_t)(mem.used / 1024);
        d->mem_total_kb = (int64_t)(mem.total / 1024);
    }
    if (n->clock && n->clock(h, NVML_CLOCK_SM, &u) == NVML_SUCCESS)
        d->sm_clock_mhz = u;
    if (n->max_clock && n->max_clock(h, NVML_CLOCK_SM, &u) == NVML_SUCCESS)
        d->sm_clock_max_mhz = u;
    unsigned long long bits;
    if (n->reasons && n->reasons(h, &bits) == NVML_SUCCESS)
        throttle_text(bits, d->throttle, sizeof d->throttle);
    if (n->temperature && n->temperature(h, NVML_TEMPERATURE_GPU, &u) == NVML_SUCCESS)
        d->temperature_c = u;
    if (n->power && n->power(h, &u) == NVML_SUCCESS)
        d->power_w = u / 1000.0;
    /* No PCIe throughput: nvmlDeviceGetPcieThroughput counts bytes over 20 ms, blocking, per
     * direction: on an H200 the device reads at the window's end took 45 ms with it. */
    /* the window's utilisation readings */
    double sum = 0, sum_mem = 0, max = -1;
    int64_t k = 0, km = 0, idle = 0;
    for (size_t t = 0; t < n->nticks; t++) {
        if (n->sm[t][i] >= 0) {
            sum += n->sm[t][i];
            max = n->sm[t][i] > max ? n->sm[t][i] : max;
            idle += n->sm[t][i] < 5;
            k++;
        }
        if (n->mem[t][i] >= 0) {
            sum_mem += n->mem[t][i];
            km++;
        }
    }
    d->util_samples = k;
    if (k) {
        d->util_sm_pct = sum / (double)k;
        d->util_sm_max_pct = max;
        d->idle_frac = (double)idle / (double)k;
    }
    if (km)
        d->util_mem_pct = sum_mem / (double)km;
}

static void device_init(sop_gpu_device *d)
{
    memset(d, 0, sizeof *d);
    d->index = d->mem_used_kb = d->mem_total_kb = d->util_samples = SOP_NA;
    d->sm_clock_mhz = d->sm_clock_max_mhz = d->temperature_c = SOP_NA;
    d->util_sm_pct = d->util_sm_max_pct = d->util_mem_pct = d->idle_frac = d->power_w = NAN;
    d->tree_util_sm_pct = d->tree_idle_frac = NAN;
    d->other_procs = SOP_NA;
    d->mig_mem_used_kb = d->mig_mem_total_kb = SOP_NA;
}

void sop__nvml_finish(sop_nvml *n, int proc_root_fd, const int *tree, size_t ntree, uint32_t minors,
                      const char *cvd, sop_gpu *out)
{
    if (!n)
        return;
    if (n->nticks == 0) /* --duration 0: one reading now */
        sop__nvml_tick(n, NAN);
    out->have = true;
    snprintf(out->source, sizeof out->source, "nvml");
    snprintf(out->library, sizeof out->library, "%s", n->path);
    if (n->driver_version &&
        n->driver_version(out->driver_version, sizeof out->driver_version) != NVML_SUCCESS)
        out->driver_version[0] = '\0';
    out->driver_version[sizeof out->driver_version - 1] = '\0';
    if (cvd)
        snprintf(out->cuda_visible_devices, sizeof out->cuda_visible_devices, "%s", cvd);
    n->root_fd = proc_root_fd;
    pid_map map[SOP_GPU_TREE_MAX];
    size_t nm = 0;
    for (size_t i = 0; i < ntree && nm < SOP_GPU_TREE_MAX; i++) {
        map[nm].tree_pid = tree[i];
        map[nm].nns = sop__gpu_nspid(proc_root_fd, tree[i], map[nm].ns, 8);
        if (map[nm].nns == 0) { /* status unread: its own number at least */
            map[nm].ns[0] = tree[i];
            map[nm].nns = 1;
        }
        nm++;
    }
    bool used[SOP_GPU_DEVICES_MAX] = {false}, alone[SOP_GPU_DEVICES_MAX] = {false};
    int64_t others[SOP_GPU_DEVICES_MAX] = {0};
    bool any_used = false;
    mig_map migs;
    resolve_migs(n, cvd, &migs);
    for (unsigned i = 0; i < n->ndev; i++) {
        unsigned minor;
        if (n->minor && n->minor(n->dev[i], &minor) == NVML_SUCCESS && minor < 32 &&
            (minors & (1u << minor)))
            used[i] = true;
        double c0 = mono_ms();
        read_procs(n, i, map, nm, out, &used[i], &others[i]);
        n->cost_ms[0] += mono_ms() - c0;
        any_used = any_used || used[i];
    }
    /* The tree's busy share: a device's own figures where the tree is alone on it (or the only
     * one running kernels in the window); NVML's per-process samples where it is shared; none
     * where it is shared and those are missing, or none of the tree's processes was found in
     * NVML's lists (it cannot then be told from the others). */
    double busy = 0, idle = 0;
    int nbusy = 0;
    bool by_process = false, unknown = false;
    for (unsigned i = 0; i < n->ndev && out->ndevices < SOP_GPU_DEVICES_MAX; i++) {
        sop_gpu_device d;
        device_init(&d);
        if (any_used && !used[i])
            continue;
        double c0 = mono_ms();
        read_device(n, i, &d);
        n->cost_ms[1] += mono_ms() - c0;
        if (!any_used && !visible(cvd, i, d.uuid, migs.parents))
            continue;
        read_mig(n, i, &migs, &d);
        d.used_by_tree = used[i];
        d.other_procs = others[i];
        bool ours_listed = false;
        for (size_t p = 0; p < out->nprocs; p++)
            ours_listed = ours_listed || out->procs[p].device == (int64_t)i;
        c0 = mono_ms();
        if (others[i] > 0 && ours_listed && !d.mig_enabled) /* shared: who ran the kernels */
            read_proc_util(n, i, map, nm, out, &d);
        n->cost_ms[2] += mono_ms() - c0;
        if (d.mig_enabled) {
            unknown = unknown || used[i];
            size_t len = strlen(out->note);
            if (len < sizeof out->note - 1)
                snprintf(
                    out->note + len, sizeof out->note - len,
                    "%sGPU %u is in MIG mode%s%s: NVML gives no utilisation per MIG instance, "
                    "so the job's GPU busy share is unknown (the whole GPU's is not the job's)",
                    len ? "; " : "", i, d.mig_uuid[0] ? ", the job's instance " : "", d.mig_uuid);
        } else if (used[i]) {
            if (others[i] == 0 || (d.proc_figures && !d.others_active)) {
                alone[i] = true;
                if (!isnan(d.util_sm_pct)) {
                    busy += d.util_sm_pct;
                    idle += d.idle_frac;
                    nbusy++;
                }
            } else if (d.proc_figures) {
                busy += d.tree_util_sm_pct;
                idle += d.tree_idle_frac;
                nbusy++;
                by_process = true;
            } else {
                unknown = true;
            }
        }
        if (!d.proc_figures || !d.others_active)
            d.tree_util_sm_pct = d.tree_idle_frac = NAN; /* only said where it differs */
        out->devices[out->ndevices++] = d;
    }
    if (migs.unresolved) {
        size_t len = strlen(out->note);
        if (len < sizeof out->note - 1)
            snprintf(out->note + len, sizeof out->note - len, "%s%s", len ? "; " : "",
                     migs.old_driver
                         ? "CUDA_VISIBLE_DEVICES names MIG devices but this NVML has no "
                           "nvmlDeviceGetHandleByUUID/nvmlDeviceGetDeviceHandleFromMigDeviceHandle "
                           "(a driver before MIG): those devices are not seen"
                         : "CUDA_VISIBLE_DEVICES names a MIG device NVML does not know: it is not "
                           "seen");
    }
    if (nbusy && !unknown) {
        out->busy_pct = busy / nbusy;
        out->idle_frac = idle / nbusy;
        snprintf(out->busy_source, sizeof out->busy_source, "%s",
                 by_process ? "process" : "device");
    }
    if (out->nprocs) {
        out->tree_mem_kb = 0;
        for (size_t p = 0; p < out->nprocs; p++)
            if (out->procs[p].mem_kb != SOP_NA)
                out->tree_mem_kb += out->procs[p].mem_kb;
    }
    /* the busy lane: per tick, the mean SM utilisation over the used devices the tree is alone
     * on (a shared device's readings are not the tree's) */
    if (any_used && n->nticks && !isnan(n->tick_ms[0]) &&
        (n->series = calloc(1, sizeof *n->series))) {
        for (size_t t = 0; t < n->nticks; t++) {
            double s = 0;
            int k = 0;
            for (unsigned i = 0; i < n->ndev; i++)
                if (used[i] && alone[i] && n->sm[t][i] >= 0) {
                    s += n->sm[t][i];
                    k++;
                }
            if (!k)
                continue;
            n->series->t_ms[n->series->n] = n->tick_ms[t];
            n->series->busy_pct[n->series->n++] = (float)(s / k);
        }
    }
}

void sop__nvml_cost(const sop_nvml *n, double out[3])
{
    for (int k = 0; k < 3; k++)
        out[k] = n ? n->cost_ms[k] : NAN;
}

const sop_gpu_series *sop__nvml_series(const sop_nvml *n)
{
    return n && n->series && n->series->n ? n->series : NULL;
}

void sop__nvml_close(sop_nvml *n)
{
    if (!n)
        return;
    /* NVML stays loaded and initialised for the next window (sop__nvml_open) */
    free(n->tick_ms);
    free(n->sm);
    free(n->mem);
    free(n->series);
    free(n);
}
