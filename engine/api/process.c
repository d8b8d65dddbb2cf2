/* process.c — sop_process_read: who a process is and whether its thread group still runs, for
 * the CLI's rank discovery and the watch's restart check. A reader over the probes' parser
 * (probes/proc_ident.c, proc_stat.c) and live-task walk (probes/procfs.c); depends on them. */
#include <stdio.h>
#include <string.h>

#include "proc.h"
#include "procfs.h"
#include "sop.h"

int sop_process_read(int pid, sop_process *out)
{
    if (!out || pid <= 0)
        return SOP_EINVAL;
    memset(out, 0, sizeof *out);
    sop_stat st;
    if (sop__stat_read("/proc", pid, 0, &st) != 0)
        return SOP_ENOTARGET;
    out->pid = pid;
    out->ppid = st.ppid;
    out->state = st.state;
    snprintf(out->comm, sizeof out->comm, "%s", st.comm);
    out->start_ticks = st.starttime_ticks > 0 ? (unsigned long long)st.starttime_ticks : 0;
    if (st.state != 'Z' && st.state != 'X') {
        out->alive = 1;
    } else { /* a zombie leader: alive while another task of the group runs */
        int task = sop__live_task("/proc", pid);
        sop_stat ts;
        out->alive = task != pid && sop__stat_read("/proc", pid, task, &ts) == 0 &&
                     ts.state != 'Z' && ts.state != 'X';
    }
    return SOP_OK;
}
