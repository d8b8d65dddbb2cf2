/* process.c — sop_process_read: who a process is and whether its thread group still runs, for
 * the CLI's rank discovery and the watch's restart check; sop_process_env: its allow-listed
 * environment variables by name (the ranks a launcher started). Readers over the probes'
 * parsers (probes/proc_ident.c, proc_stat.c, proc_environ.c) and live-task walk
 * (probes/procfs.c); depends on them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int sop_process_env(int pid, const char *const *names, size_t n, char *values, size_t value_size)
{
    if (pid <= 0 || (n && (!names || !values || value_size == 0)))
        return SOP_EINVAL;
    for (size_t i = 0; i < n; i++)
        values[i * value_size] = '\0';
    char dir[32];
    snprintf(dir, sizeof dir, "/proc/%d", pid);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == EACCES || errno == EPERM ? SOP_EACCES : SOP_ENOTARGET;
    char *buf = NULL;
    size_t len = 0;
    int rc = sop__read_file_at(dfd, "environ", SOP_ENVIRON_MAX_BYTES, &buf, &len);
    close(dfd);
    if (rc < 0) {
        free(buf);
        return rc == -ENOMEM                   ? SOP_ENOMEM
               : rc == -EACCES || rc == -EPERM ? SOP_EACCES
                                               : SOP_ENOTARGET;
    }
    int set = 0;
    for (size_t i = 0; i < n; i++)
        if (names[i] && sop__environ_get(buf, len, names[i], values + i * value_size, value_size))
            set++;
    free(buf);
    return set;
}
