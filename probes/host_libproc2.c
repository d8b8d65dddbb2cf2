/* host_libproc2.c — the host counters libproc2 (procps-ng 4) reads for us: /proc/meminfo,
 * /proc/vmstat, /proc/stat (cpu jiffies, procs_running/blocked, btime) and /proc/diskstats.
 * The only file that includes libproc2 headers. libproc2 (and its chain: libsystemd, lz4, zstd,
 * gcrypt...) is loaded with dlopen by the first host read, so a command that reads no host
 * counters (version, dump, check, an embedding launcher loading libsop) never maps it.
 * Depends on libproc2 (at run time), libdl and probes/host.h. */
#include "host.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <libproc2/diskstats.h>
#include <libproc2/meminfo.h>
#include <libproc2/stat.h>
#include <libproc2/vmstat.h>

/* libproc2 hands back unsigned longs; a counter that does not fit int64 is not a counter. */
static int64_t u2i(unsigned long long v)
{
    return v > (unsigned long long)INT64_MAX ? SOP_NA : (int64_t)v;
}

/* The libproc2 functions the readers call, resolved once by p2_load_once. */
static struct {
    __typeof__(procps_meminfo_new) *meminfo_new;
    __typeof__(procps_meminfo_unref) *meminfo_unref;
    __typeof__(procps_meminfo_select) *meminfo_select;
    __typeof__(procps_vmstat_new) *vmstat_new;
    __typeof__(procps_vmstat_unref) *vmstat_unref;
    __typeof__(procps_vmstat_select) *vmstat_select;
    __typeof__(procps_stat_new) *stat_new;
    __typeof__(procps_stat_unref) *stat_unref;
    __typeof__(procps_stat_select) *stat_select;
    __typeof__(procps_diskstats_new) *diskstats_new;
    __typeof__(procps_diskstats_unref) *diskstats_unref;
    __typeof__(procps_diskstats_reap) *diskstats_reap;
} P;
static pthread_once_t p2_once = PTHREAD_ONCE_INIT;
static char p2_error[256];

static void p2_load_once(void)
{
    void *lib = dlopen("libproc2.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = dlopen("libproc2.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(p2_error, sizeof p2_error, "libproc2 cannot be loaded (%s)", e ? e : "not found");
        return;
    }
#define P2_SYM(field)                                                                              \
    do {                                                                                           \
        *(void **)&P.field = dlsym(lib, "procps_" #field);                                         \
        if (!P.field) {                                                                            \
            snprintf(p2_error, sizeof p2_error, "libproc2 lacks procps_%s", #field);               \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    P2_SYM(meminfo_new);
    P2_SYM(meminfo_unref);
    P2_SYM(meminfo_select);
    P2_SYM(vmstat_new);
    P2_SYM(vmstat_unref);
    P2_SYM(vmstat_select);
    P2_SYM(stat_new);
    P2_SYM(stat_unref);
    P2_SYM(stat_select);
    P2_SYM(diskstats_new);
    P2_SYM(diskstats_unref);
    P2_SYM(diskstats_reap);
#undef P2_SYM
}

/* Each reader makes its own context and drops it: a context keeps an open fd and its
 * "re-read only when older than 1 s" caching (meminfo_get) would make a second sample of a
 * short window stale. procps_*_select always re-reads, so we use it. */

static int read_meminfo(sop_host *out, sop_missing *missing)
{
    struct meminfo_info *info = NULL;
    int rc = P.meminfo_new(&info);
    if (rc < 0) {
        sop__missing_add(missing, "host.meminfo", "libproc2 meminfo: %s", sop__strerror(-rc));
        return rc;
    }
    enum meminfo_item items[] = {
        MEMINFO_MEM_TOTAL,  MEMINFO_MEM_FREE,      MEMINFO_MEM_AVAILABLE,  MEMINFO_MEM_CACHED,
        MEMINFO_MEM_DIRTY,  MEMINFO_MEM_WRITEBACK, MEMINFO_SWAP_TOTAL,     MEMINFO_SWAP_FREE,
        MEMINFO_MEM_SHARED, MEMINFO_MEM_LOCKED,    MEMINFO_MEM_HUGE_TOTAL, MEMINFO_MEM_HUGE_FREE,
    };
    int n = (int)(sizeof items / sizeof items[0]);
    struct meminfo_stack *st = P.meminfo_select(info, items, n);
    if (!st) {
        rc = errno ? -errno : -EIO;
        sop__missing_add(missing, "host.meminfo", "libproc2 meminfo select failed");
        P.meminfo_unref(&info);
        return rc;
    }
#define MV(i) u2i(MEMINFO_VAL(i, ul_int, st, info))
    out->mem_total_kb = MV(0);
    out->mem_free_kb = MV(1);
    out->mem_available_kb = MV(2);
    out->cached_kb = MV(3);
    out->dirty_kb = MV(4);
    out->writeback_kb = MV(5);
    out->swap_total_kb = MV(6);
    out->swap_free_kb = MV(7);
    out->shmem_kb = MV(8);
    out->mlocked_kb = MV(9);
    out->hugepages_total = MV(10);
    out->hugepages_free = MV(11);
#undef MV
    if (out->mem_total_kb == 0) { /* a zero MemTotal means the file was not what we think */
        sop__missing_add(missing, "host.meminfo", "MemTotal reads 0");
        out->mem_total_kb = SOP_NA;
    }
    P.meminfo_unref(&info);
    return 0;
}

static int read_vmstat(sop_host *out, sop_missing *missing)
{
    struct vmstat_info *info = NULL;
    int rc = P.vmstat_new(&info);
    if (rc < 0) {
        sop__missing_add(missing, "host.vmstat", "libproc2 vmstat: %s", sop__strerror(-rc));
        return rc;
    }
    enum vmstat_item items[] = {VMSTAT_PSWPIN, VMSTAT_PSWPOUT, VMSTAT_PGFAULT, VMSTAT_PGMAJFAULT};
    struct vmstat_stack *st = P.vmstat_select(info, items, 4);
    if (!st) {
        sop__missing_add(missing, "host.vmstat", "libproc2 vmstat select failed");
        P.vmstat_unref(&info);
        return -EIO;
    }
    out->pswpin = u2i(VMSTAT_VAL(0, ul_int, st, info));
    out->pswpout = u2i(VMSTAT_VAL(1, ul_int, st, info));
    out->pgfault = u2i(VMSTAT_VAL(2, ul_int, st, info));
    out->pgmajfault = u2i(VMSTAT_VAL(3, ul_int, st, info));
    P.vmstat_unref(&info);
    return 0;
}

static int read_stat(sop_host *out, sop_missing *missing)
{
    struct stat_info *info = NULL;
    int rc = P.stat_new(&info);
    if (rc < 0) {
        sop__missing_add(missing, "host.stat", "libproc2 stat: %s", sop__strerror(-rc));
        return rc;
    }
    enum stat_item items[] = {
        STAT_TIC_USER,         STAT_TIC_NICE,         STAT_TIC_SYSTEM,       STAT_TIC_IDLE,
        STAT_TIC_IOWAIT,       STAT_TIC_IRQ,          STAT_TIC_SOFTIRQ,      STAT_TIC_STOLEN,
        STAT_SYS_PROC_RUNNING, STAT_SYS_PROC_BLOCKED, STAT_SYS_TIME_OF_BOOT, STAT_SYS_PROC_CREATED,
    };
    struct stat_stack *st = P.stat_select(info, items, (int)(sizeof items / sizeof items[0]));
    if (!st) {
        sop__missing_add(missing, "host.stat", "libproc2 stat select failed");
        P.stat_unref(&info);
        return -EIO;
    }
#define SV(i) u2i(STAT_VAL(i, ull_int, st, info))
    out->cpu_user = SV(0);
    out->cpu_nice = SV(1);
    out->cpu_system = SV(2);
    out->cpu_idle = SV(3);
    out->cpu_iowait = SV(4);
    out->cpu_irq = SV(5);
    out->cpu_softirq = SV(6);
    out->cpu_steal = SV(7);
#undef SV
    out->procs_running = u2i(STAT_VAL(8, ul_int, st, info));
    out->procs_blocked = u2i(STAT_VAL(9, ul_int, st, info));
    unsigned long btime = STAT_VAL(10, ul_int, st, info);
    out->processes = u2i(STAT_VAL(11, ul_int, st, info));
    if (btime > 0)
        out->btime = (double)btime;
    else
        sop__missing_add(missing, "host.stat", "no btime in /proc/stat");
    P.stat_unref(&info);
    return 0;
}

static int read_diskstats(sop_host *out, sop_missing *missing)
{
    struct diskstats_info *info = NULL;
    int rc = P.diskstats_new(&info);
    if (rc < 0) {
        sop__missing_add(missing, "host.diskstats", "libproc2 diskstats: %s", sop__strerror(-rc));
        return rc;
    }
    enum diskstats_item items[] = {
        DISKSTATS_NAME,      DISKSTATS_TYPE,         DISKSTATS_READS,
        DISKSTATS_WRITES,    DISKSTATS_READ_SECTORS, DISKSTATS_WRITE_SECTORS,
        DISKSTATS_READ_TIME, DISKSTATS_WRITE_TIME,   DISKSTATS_IO_TIME,
    };
    struct diskstats_reaped *r =
        P.diskstats_reap(info, items, (int)(sizeof items / sizeof items[0]));
    if (!r) {
        sop__missing_add(missing, "host.diskstats", "libproc2 diskstats reap failed");
        P.diskstats_unref(&info);
        return -EIO;
    }
    out->ndisks = 0;
    for (int i = 0; i < r->total && out->ndisks < SOP_DISKS_MAX; i++) {
        struct diskstats_stack *st = r->stacks[i];
        const char *name = DISKSTATS_VAL(0, str, st, info);
        /* DISKSTATS_TYPE_DISK: libproc2 found /sys/block/NAME, i.e. not a partition */
        if (!name || DISKSTATS_VAL(1, s_int, st, info) != DISKSTATS_TYPE_DISK ||
            !sop__disk_name_wanted(name))
            continue;
        if (DISKSTATS_VAL(2, ul_int, st, info) == 0 && DISKSTATS_VAL(3, ul_int, st, info) == 0)
            continue; /* never read nor written since boot (an unused zram, a cd drive) */
        sop_disk *d = &out->disks[out->ndisks++];
        memset(d, 0, sizeof *d);
        d->util_pct = d->r_await_ms = d->w_await_ms = d->read_kb_per_s = d->write_kb_per_s =
            d->reads_per_s = d->writes_per_s = NAN;
        snprintf(d->name, sizeof d->name, "%s", name);
        d->reads = u2i(DISKSTATS_VAL(2, ul_int, st, info));
        d->writes = u2i(DISKSTATS_VAL(3, ul_int, st, info));
        d->read_sectors = u2i(DISKSTATS_VAL(4, ul_int, st, info));
        d->write_sectors = u2i(DISKSTATS_VAL(5, ul_int, st, info));
        d->read_ms = u2i(DISKSTATS_VAL(6, ul_int, st, info));
        d->write_ms = u2i(DISKSTATS_VAL(7, ul_int, st, info));
        d->io_ms = u2i(DISKSTATS_VAL(8, ul_int, st, info));
    }
    P.diskstats_unref(&info);
    return 0;
}

int sop__host_libproc2(sop_host *out, sop_missing *missing)
{
    pthread_once(&p2_once, p2_load_once);
    if (p2_error[0]) {
        sop__missing_add(missing, "host", "%s", p2_error);
        return -ELIBACC;
    }
    int rc = 0, r;
    if ((r = read_meminfo(out, missing)) < 0)
        rc = r;
    if ((r = read_vmstat(out, missing)) < 0)
        rc = r;
    if ((r = read_stat(out, missing)) < 0)
        rc = r;
    if ((r = read_diskstats(out, missing)) < 0)
        rc = r;
    return rc;
}
