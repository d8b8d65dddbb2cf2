/* fake_nvml.c — a stand-in for libnvidia-ml.so.1 in CI (no GPU): implements the NVML functions
 * sop calls (probes/gpu_nvml.c), with values scripted by the text file named in
 * $SOP_FAKE_NVML. Built twice by tests/CMakeLists.txt: fake_nvml (the current, versioned
 * symbols) and, with -DFAKE_NVML_OLD, fake_nvml_old (only the unversioned first versions, the
 * process list in its 16-byte v1 layout), to test the fallbacks.
 *
 * Script lines (# starts a comment; numbers decimal):
 *   driver TEXT                      nvmlSystemGetDriverVersion
 *   init_error CODE                  nvmlInit answers CODE (9 = driver not loaded)
 *   device IDX key=value...          name= uuid= minor= mem_total_mib= mem_used_mib= sm_clock=
 *                                    sm_clock_max= temp= power_mw= pcie_rx= pcie_tx=
 *                                    reasons= (clock-event bits, decimal) mig=1 (MIG mode on)
 *   mig IDX key=value...             a MIG device of device IDX: uuid= gi= ci= mem_total_mib=
 *                                    mem_used_mib= (nvmlDeviceGetHandleByUUID finds it; its
 *                                    utilisation is NOT_SUPPORTED, as on a real MIG device; the
 *                                    parent keeps its scripted utilisation, which sop must not
 *                                    take for the job's). Not in fake_nvml_old (no MIG functions).
 *   util IDX V1 V2 ...               SM utilisation of successive calls (the last one repeats)
 *   mem_util IDX V1 V2 ...           memory utilisation, likewise
 *   proc IDX PID MEM_MIB [SM_UTIL]   a compute process (SM_UTIL: a per-process sample)
 * $SOP_FAKE_NVML_LOG, when set, gets one line "util IDX SM MEM" per utilisation call, so a test
 * can compute the mean of what sop was given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* exported for dlsym only: no header declares them */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define EXPORT __attribute__((visibility("default")))
#define DEV_MAX 8
#define SEQ_MAX 64
#define PROC_MAX 32

typedef struct {
    int present;
    char name[96], uuid[96];
    unsigned minor, sm_clock, sm_clock_max, temp, power_mw, pcie_rx, pcie_tx;
    unsigned long long mem_total, mem_used, reasons;
    int mig_mode;
    unsigned util[SEQ_MAX], mem_util[SEQ_MAX];
    int nutil, nmem, calls;
} fake_dev;

typedef struct {
    int dev;
    unsigned pid;
    unsigned long long mem;
    int sm; /* -1: no sample */
} fake_proc;

#define MIG_MAX 16
typedef struct {
    int parent;
    char uuid[96];
    unsigned gi, ci;
    unsigned long long mem_total, mem_used;
} fake_mig;

static fake_dev devs[DEV_MAX];
static fake_mig migs[MIG_MAX];
static int nmig;
static fake_proc procs[PROC_MAX];
static int ndev, nproc, init_error, loaded;
static char driver[80] = "999.99";

static void load(void)
{
    if (loaded)
        return;
    loaded = 1;
    const char *path = getenv("SOP_FAKE_NVML");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *s = line, *save = NULL;
        line[strcspn(line, "#\n")] = '\0';
        char *w = strtok_r(s, " \t", &save);
        if (!w)
            continue;
        if (strcmp(w, "driver") == 0) {
            char *v = strtok_r(NULL, " \t", &save);
            if (v)
                snprintf(driver, sizeof driver, "%s", v);
        } else if (strcmp(w, "init_error") == 0) {
            char *v = strtok_r(NULL, " \t", &save);
            init_error = v ? atoi(v) : 0;
        } else if (strcmp(w, "device") == 0 || strcmp(w, "util") == 0 ||
                   strcmp(w, "mem_util") == 0) {
            char *v = strtok_r(NULL, " \t", &save);
            int i = v ? atoi(v) : -1;
            if (i < 0 || i >= DEV_MAX)
                continue;
            fake_dev *d = &devs[i];
            if (w[0] == 'd') {
                d->present = 1;
                if (i + 1 > ndev)
                    ndev = i + 1;
                for (char *kv = strtok_r(NULL, " \t", &save); kv;
                     kv = strtok_r(NULL, " \t", &save)) {
                    char *eq = strchr(kv, '=');
                    if (!eq)
                        continue;
                    *eq = '\0';
                    const char *val = eq + 1;
                    unsigned long long n = strtoull(val, NULL, 10);
                    if (!strcmp(kv, "name"))
                        snprintf(d->name, sizeof d->name, "%s", val);
                    else if (!strcmp(kv, "uuid"))
                        snprintf(d->uuid, sizeof d->uuid, "%s", val);
                    else if (!strcmp(kv, "minor"))
                        d->minor = (unsigned)n;
                    else if (!strcmp(kv, "mem_total_mib"))
                        d->mem_total = n << 20;
                    else if (!strcmp(kv, "mem_used_mib"))
                        d->mem_used = n << 20;
                    else if (!strcmp(kv, "sm_clock"))
                        d->sm_clock = (unsigned)n;
                    else if (!strcmp(kv, "sm_clock_max"))
                        d->sm_clock_max = (unsigned)n;
                    else if (!strcmp(kv, "temp"))
                        d->temp = (unsigned)n;
                    else if (!strcmp(kv, "power_mw"))
                        d->power_mw = (unsigned)n;
                    else if (!strcmp(kv, "pcie_rx"))
                        d->pcie_rx = (unsigned)n;
                    else if (!strcmp(kv, "pcie_tx"))
                        d->pcie_tx = (unsigned)n;
                    else if (!strcmp(kv, "reasons"))
                        d->reasons = n;
                    else if (!strcmp(kv, "mig"))
                        d->mig_mode = (int)n;
                }
            } else {
                unsigned *seq = w[0] == 'u' ? d->util : d->mem_util;
                int *nseq = w[0] == 'u' ? &d->nutil : &d->nmem;
                for (char *t = strtok_r(NULL, " \t", &save); t && *nseq < SEQ_MAX;
                     t = strtok_r(NULL, " \t", &save))
                    seq[(*nseq)++] = (unsigned)atoi(t);
            }
        } else if (strcmp(w, "mig") == 0 && nmig < MIG_MAX) {
            char *v = strtok_r(NULL, " \t", &save);
            int i = v ? atoi(v) : -1;
            if (i < 0 || i >= DEV_MAX)
                continue;
            fake_mig *m = &migs[nmig++];
            m->parent = i;
            for (char *kv = strtok_r(NULL, " \t", &save); kv; kv = strtok_r(NULL, " \t", &save)) {
                char *eq = strchr(kv, '=');
                if (!eq)
                    continue;
                *eq = '\0';
                const char *val = eq + 1;
                unsigned long long n = strtoull(val, NULL, 10);
                if (!strcmp(kv, "uuid"))
                    snprintf(m->uuid, sizeof m->uuid, "%s", val);
                else if (!strcmp(kv, "gi"))
                    m->gi = (unsigned)n;
                else if (!strcmp(kv, "ci"))
                    m->ci = (unsigned)n;
                else if (!strcmp(kv, "mem_total_mib"))
                    m->mem_total = n << 20;
                else if (!strcmp(kv, "mem_used_mib"))
                    m->mem_used = n << 20;
            }
        } else if (strcmp(w, "proc") == 0 && nproc < PROC_MAX) {
            char *a = strtok_r(NULL, " \t", &save), *b = strtok_r(NULL, " \t", &save);
            char *c = strtok_r(NULL, " \t", &save), *e = strtok_r(NULL, " \t", &save);
            if (!a || !b || !c)
                continue;
            procs[nproc].dev = atoi(a);
            procs[nproc].pid = (unsigned)strtoul(b, NULL, 10);
            procs[nproc].mem = strtoull(c, NULL, 10) << 20;
            procs[nproc].sm = e ? atoi(e) : -1;
            nproc++;
        }
    }
    fclose(f);
}

static fake_dev *dev_of(void *h)
{
    fake_dev *d = h;
    return d >= devs && d < devs + DEV_MAX && d->present ? d : NULL;
}

static fake_mig *mig_of(void *h)
{
    fake_mig *m = h;
    return m >= migs && m < migs + nmig ? m : NULL;
}

#define CHECK_DEV(h)                                                                               \
    fake_dev *d = dev_of(h);                                                                       \
    if (!d)                                                                                        \
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */

static int do_init(void)
{
    loaded = 0;
    ndev = nproc = nmig = init_error = 0;
    memset(devs, 0, sizeof devs);
    load();
    return init_error;
}
static int do_count(unsigned *n)
{
    *n = (unsigned)ndev;
    return 0;
}
static int do_handle(unsigned i, void **h)
{
    if (i >= (unsigned)ndev || !devs[i].present)
        return 2;
    *h = &devs[i];
    return 0;
}

#ifdef FAKE_NVML_OLD
EXPORT int nvmlInit(void)
{
    return do_init();
}
EXPORT int nvmlDeviceGetCount(unsigned *n)
{
    return do_count(n);
}
EXPORT int nvmlDeviceGetHandleByIndex(unsigned i, void **h)
{
    return do_handle(i, h);
}
#else
EXPORT int nvmlInit_v2(void)
{
    return do_init();
}
EXPORT int nvmlDeviceGetCount_v2(unsigned *n)
{
    return do_count(n);
}
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h)
{
    return do_handle(i, h);
}
#endif
EXPORT int nvmlShutdown(void)
{
    return 0;
}

EXPORT const char *nvmlErrorString(int r)
{
    switch (r) {
    case 0:
        return "Success";
    case 9:
        return "Driver Not Loaded";
    case 18:
        return "RM has detected an NVML/RM version mismatch.";
    default:
        return "Unknown Error";
    }
}

EXPORT int nvmlSystemGetDriverVersion(char *out, unsigned len)
{
    snprintf(out, len, "%s", driver);
    return 0;
}

EXPORT int nvmlDeviceGetName(void *h, char *out, unsigned len)
{
    CHECK_DEV(h);
    snprintf(out, len, "%s", d->name);
    return 0;
}
EXPORT int nvmlDeviceGetUUID(void *h, char *out, unsigned len)
{
    fake_mig *m = mig_of(h);
    if (m) {
        snprintf(out, len, "%s", m->uuid);
        return 0;
    }
    CHECK_DEV(h);
    snprintf(out, len, "%s", d->uuid);
    return 0;
}
EXPORT int nvmlDeviceGetMinorNumber(void *h, unsigned *out)
{
    CHECK_DEV(h);
    *out = d->minor;
    return 0;
}
EXPORT int nvmlDeviceGetMemoryInfo(void *h, unsigned long long *m /* total, free, used */)
{
    fake_mig *g = mig_of(h);
    if (g) {
        m[0] = g->mem_total;
        m[1] = g->mem_total - g->mem_used;
        m[2] = g->mem_used;
        return 0;
    }
    CHECK_DEV(h);
    m[0] = d->mem_total;
    m[1] = d->mem_total - d->mem_used;
    m[2] = d->mem_used;
    return 0;
}
EXPORT int nvmlDeviceGetUtilizationRates(void *h, unsigned *u /* gpu, memory */)
{
    if (mig_of(h))
        return 3; /* NVML_ERROR_NOT_SUPPORTED: no utilisation per MIG device */
    CHECK_DEV(h);
    if (!d->nutil)
        return 3; /* NVML_ERROR_NOT_SUPPORTED */
    int k = d->calls++;
    u[0] = d->util[k < d->nutil ? k : d->nutil - 1];
    u[1] = d->nmem ? d->mem_util[k < d->nmem ? k : d->nmem - 1] : 0;
    const char *log = getenv("SOP_FAKE_NVML_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "util %d %u %u\n", (int)(d - devs), u[0], u[1]);
        fclose(f);
    }
    return 0;
}
EXPORT int nvmlDeviceGetClockInfo(void *h, int type, unsigned *out)
{
    CHECK_DEV(h);
    if (type != 1)
        return 3;
    *out = d->sm_clock;
    return 0;
}
EXPORT int nvmlDeviceGetMaxClockInfo(void *h, int type, unsigned *out)
{
    CHECK_DEV(h);
    if (type != 1)
        return 3;
    *out = d->sm_clock_max;
    return 0;
}
EXPORT int nvmlDeviceGetCurrentClocksThrottleReasons(void *h, unsigned long long *out)
{
    CHECK_DEV(h);
    *out = d->reasons;
    return 0;
}
EXPORT int nvmlDeviceGetTemperature(void *h, int sensor, unsigned *out)
{
    CHECK_DEV(h);
    if (sensor != 0)
        return 3;
    *out = d->temp;
    return 0;
}
EXPORT int nvmlDeviceGetPowerUsage(void *h, unsigned *out)
{
    CHECK_DEV(h);
    *out = d->power_mw;
    return 0;
}
EXPORT int nvmlDeviceGetPcieThroughput(void *h, int counter, unsigned *out)
{
    CHECK_DEV(h);
    *out = counter == 1 ? d->pcie_rx : d->pcie_tx;
    return 0;
}

/* The process lists: v2 layout {pid, mem, gi, ci} (24 bytes), v1 {pid, mem} (16 bytes). */
typedef struct {
    unsigned pid;
    unsigned long long mem;
    unsigned gi, ci;
} info_v2;
typedef struct {
    unsigned pid;
    unsigned long long mem;
} info_v1;

static int list(void *h, unsigned *count, void *out, int v1)
{
    CHECK_DEV(h);
    unsigned n = 0;
    for (int i = 0; i < nproc; i++)
        if (&devs[procs[i].dev] == d)
            n++;
    if (*count < n) {
        *count = n;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    unsigned k = 0;
    for (int i = 0; i < nproc; i++) {
        if (&devs[procs[i].dev] != d)
            continue;
        if (v1) {
            info_v1 e = {procs[i].pid, procs[i].mem};
            memcpy((char *)out + k * sizeof e, &e, sizeof e);
        } else {
            info_v2 e = {procs[i].pid, procs[i].mem, 0xffffffffu, 0xffffffffu};
            memcpy((char *)out + k * sizeof e, &e, sizeof e);
        }
        k++;
    }
    *count = k;
    return 0;
}
#ifdef FAKE_NVML_OLD
EXPORT int nvmlDeviceGetComputeRunningProcesses(void *h, unsigned *c, void *o)
{
    return list(h, c, o, 1);
}
#else
EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned *c, void *o)
{
    return list(h, c, o, 0);
}
EXPORT int nvmlDeviceGetComputeRunningProcesses_v2(void *h, unsigned *c, void *o)
{
    return list(h, c, o, 0);
}
EXPORT int nvmlDeviceGetComputeRunningProcesses(void *h, unsigned *c, void *o)
{
    return list(h, c, o, 1);
}
EXPORT int nvmlDeviceGetGraphicsRunningProcesses_v3(void *h, unsigned *c, void *o)
{
    CHECK_DEV(h);
    (void)o;
    *c = 0; /* no graphics processes */
    return 0;
}

typedef struct {
    unsigned pid;
    unsigned long long ts;
    unsigned sm, mem, enc, dec;
} util_sample;
EXPORT int nvmlDeviceGetProcessUtilization(void *h, util_sample *out, unsigned *count,
                                           unsigned long long last_seen)
{
    CHECK_DEV(h);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    unsigned long long now = (unsigned long long)tv.tv_sec * 1000000ULL + (unsigned)tv.tv_usec;
    if (last_seen > now)
        return 6; /* NVML_ERROR_NOT_FOUND: nothing newer */
    unsigned k = 0, want = 0;
    for (int i = 0; i < nproc; i++)
        want += &devs[procs[i].dev] == d && procs[i].sm >= 0;
    if (!out || *count < want) { /* NVML's way to ask for the size */
        *count = want;
        return want ? 7 : 6;
    }
    for (int i = 0; i < nproc; i++) {
        if (&devs[procs[i].dev] != d || procs[i].sm < 0)
            continue;
        util_sample s = {procs[i].pid, now, (unsigned)procs[i].sm, 0, 0, 0};
        out[k++] = s;
    }
    *count = k;
    return k ? 0 : 6;
}

/* MIG */
EXPORT int nvmlDeviceGetHandleByUUID(const char *uuid, void **h)
{
    for (int i = 0; i < nmig; i++)
        if (!strcmp(migs[i].uuid, uuid)) {
            *h = &migs[i];
            return 0;
        }
    for (int i = 0; i < ndev; i++)
        if (devs[i].present && !strcmp(devs[i].uuid, uuid)) {
            *h = &devs[i];
            return 0;
        }
    return 6; /* NVML_ERROR_NOT_FOUND */
}
EXPORT int nvmlDeviceGetDeviceHandleFromMigDeviceHandle(void *h, void **parent)
{
    fake_mig *m = mig_of(h);
    if (!m)
        return 2;
    *parent = &devs[m->parent];
    return 0;
}
EXPORT int nvmlDeviceGetMigMode(void *h, unsigned *current, unsigned *pending)
{
    int on = 0;
    CHECK_DEV(h);
    on = d->mig_mode;
    for (int i = 0; i < nmig; i++)
        on = on || &devs[migs[i].parent] == d;
    *current = *pending = (unsigned)on;
    return 0;
}
EXPORT int nvmlDeviceGetMaxMigDeviceCount(void *h, unsigned *count)
{
    CHECK_DEV(h);
    *count = 7;
    return 0;
}
EXPORT int nvmlDeviceGetMigDeviceHandleByIndex(void *h, unsigned index, void **out)
{
    CHECK_DEV(h);
    unsigned k = 0;
    for (int i = 0; i < nmig; i++)
        if (&devs[migs[i].parent] == d && k++ == index) {
            *out = &migs[i];
            return 0;
        }
    return 6;
}
EXPORT int nvmlDeviceGetGpuInstanceId(void *h, unsigned *id)
{
    fake_mig *m = mig_of(h);
    if (!m)
        return 2;
    *id = m->gi;
    return 0;
}
EXPORT int nvmlDeviceGetComputeInstanceId(void *h, unsigned *id)
{
    fake_mig *m = mig_of(h);
    if (!m)
        return 2;
    *id = m->ci;
    return 0;
}
#endif
