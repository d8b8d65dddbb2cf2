/* proc_smaps.c — parse /proc/PID/smaps_rollup (kB): the whole address space summed by the
 * kernel in one read. The full smaps is never read (too slow on big processes).
 * Depends on proc_kv.c, procfs.c. */
#include <errno.h>
#include <string.h>

#include "proc.h"
#include "proc_kv.h"

int sop__parse_smaps_rollup(const char *text, sop_smaps *out)
{
    out->rss_kb = out->pss_kb = out->pss_anon_kb = out->pss_file_kb = SOP_NA;
    out->pss_shmem_kb = out->shared_clean_kb = out->shared_dirty_kb = SOP_NA;
    out->private_clean_kb = out->private_dirty_kb = out->anonymous_kb = SOP_NA;
    out->swap_kb = out->locked_kb = SOP_NA;
    if (!text)
        return -EINVAL;
    const sop_kv_slot slots[] = {
        {"Rss", &out->rss_kb},
        {"Pss", &out->pss_kb},
        {"Pss_Anon", &out->pss_anon_kb},
        {"Pss_File", &out->pss_file_kb},
        {"Pss_Shmem", &out->pss_shmem_kb},
        {"Shared_Clean", &out->shared_clean_kb},
        {"Shared_Dirty", &out->shared_dirty_kb},
        {"Private_Clean", &out->private_clean_kb},
        {"Private_Dirty", &out->private_dirty_kb},
        {"Anonymous", &out->anonymous_kb},
        {"Swap", &out->swap_kb},
        {"Locked", &out->locked_kb},
    };
    return sop__kv_scan(text, slots, sizeof slots / sizeof slots[0]) ? 0 : -ENODATA;
}
