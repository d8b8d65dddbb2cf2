/* host_meminfo.c — /proc/meminfo: memory, page cache, dirty/writeback, swap, shmem, mlocked and
 * huge pages. A pure parser and a reader taking a /proc dir fd. Depends on probes/host.h and
 * probes/proc_kv.h. */
#include "host.h"

#include <errno.h>

#include "proc_kv.h"

int sop__parse_meminfo(const char *text, sop_host *out)
{
    const sop_kv_slot slots[] = {
        {"MemTotal", &out->mem_total_kb},
        {"MemFree", &out->mem_free_kb},
        {"MemAvailable", &out->mem_available_kb},
        {"Cached", &out->cached_kb},
        {"Dirty", &out->dirty_kb},
        {"Writeback", &out->writeback_kb},
        {"SwapTotal", &out->swap_total_kb},
        {"SwapFree", &out->swap_free_kb},
        {"Shmem", &out->shmem_kb},
        {"Mlocked", &out->mlocked_kb},
        {"HugePages_Total", &out->hugepages_total},
        {"HugePages_Free", &out->hugepages_free},
    };
    if (sop__kv_scan(text, slots, sizeof slots / sizeof slots[0]) == 0)
        return -EINVAL;
    /* a missing or zero MemTotal means the text is not what we think */
    if (out->mem_total_kb == SOP_NA || out->mem_total_kb <= 0) {
        out->mem_total_kb = SOP_NA;
        return -EINVAL;
    }
    return 0;
}

int sop__host_read_meminfo(int proc_dirfd, sop_host *out, sop_missing *missing)
{
    char buf[8192]; /* ~1.5 KB on 6.x kernels */
    long n = sop__read_small_at(proc_dirfd, "meminfo", buf, sizeof buf);
    if (n < 0) {
        sop__missing_add(missing, "host.meminfo", "meminfo: %s", sop__strerror((int)-n));
        return (int)n;
    }
    int rc = sop__parse_meminfo(buf, out);
    if (rc < 0)
        sop__missing_add(missing, "host.meminfo", "meminfo: no MemTotal (unparsable)");
    return rc;
}
