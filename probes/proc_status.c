/* proc_status.c — parse /proc/PID/status: memory (kB), threads, context switches, the CPU
 * affinity list and the real uid. One pass over the text; a cut-off last line is ignored.
 * Depends on proc_kv.c, procfs.c. */
#include <errno.h>
#include <string.h>

#include "proc.h"
#include "proc_kv.h"

int sop__parse_status(const char *text, sop_status *out)
{
    memset(out, 0, sizeof *out);
    out->vm_peak_kb = out->vm_size_kb = out->vm_lck_kb = out->vm_pin_kb = SOP_NA;
    out->vm_hwm_kb = out->vm_rss_kb = out->rss_anon_kb = out->rss_file_kb = SOP_NA;
    out->rss_shmem_kb = out->vm_swap_kb = out->threads = SOP_NA;
    out->voluntary_ctxt_switches = out->nonvoluntary_ctxt_switches = SOP_NA;
    out->cpus_allowed_count = out->uid = SOP_NA;
    if (!text)
        return -EINVAL;
    const sop_kv_slot slots[] = {
        {"VmPeak", &out->vm_peak_kb},
        {"VmSize", &out->vm_size_kb},
        {"VmLck", &out->vm_lck_kb},
        {"VmPin", &out->vm_pin_kb},
        {"VmHWM", &out->vm_hwm_kb},
        {"VmRSS", &out->vm_rss_kb},
        {"RssAnon", &out->rss_anon_kb},
        {"RssFile", &out->rss_file_kb},
        {"RssShmem", &out->rss_shmem_kb},
        {"VmSwap", &out->vm_swap_kb},
        {"Threads", &out->threads},
        {"voluntary_ctxt_switches", &out->voluntary_ctxt_switches},
        {"nonvoluntary_ctxt_switches", &out->nonvoluntary_ctxt_switches},
        {"Uid", &out->uid}, /* real, effective, saved, fs: the first is the real uid */
    };
    int found = sop__kv_scan(text, slots, sizeof slots / sizeof slots[0]);
    size_t len = 0;
    const char *cpus = sop__kv_str(text, "Cpus_allowed_list", &len);
    if (cpus) {
        int c = sop__cpulist_count(cpus); /* counts up to the end of its line */
        out->cpus_allowed_count = c >= 0 ? c : SOP_NA;
        if (len < sizeof out->cpus_allowed_list) { /* a cut list would mislead: keep it whole */
            memcpy(out->cpus_allowed_list, cpus, len);
            out->cpus_allowed_list[len] = '\0';
        }
        found++;
    }
    return found ? 0 : -ENODATA;
}
