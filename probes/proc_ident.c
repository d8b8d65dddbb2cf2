/* proc_ident.c — who a sampled process or thread is, read by path under a proc root (the
 * sampler attaching to a target and its CPython workers): the comm of a process or task, the
 * cmdline as one line, /proc/PID/stat, the start time in epoch seconds, /proc/PID/io. Readers only:
 * parsing is proc_cmdline.c, proc_stat.c and proc_io.c. Depends on procfs.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "proc.h"
#include "procfs.h"

int sop__comm_read(const char *proc_root, int pid, int tid, char *out, size_t cap)
{
    char path[256];
    if (tid)
        snprintf(path, sizeof path, "%s/%d/task/%d/comm", proc_root, pid, tid);
    else
        snprintf(path, sizeof path, "%s/%d/comm", proc_root, pid);
    out[0] = '\0';
    long n = sop__read_small_at(AT_FDCWD, path, out, cap);
    if (n <= 0) {
        out[0] = '\0';
        return n < 0 ? (int)n : -ENODATA;
    }
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

int sop__cmdline_read(const char *proc_root, int pid, char *out, size_t cap)
{
    char path[256], buf[SOP_CMDLINE_MAX];
    snprintf(path, sizeof path, "%s/%d/cmdline", proc_root, pid);
    out[0] = '\0';
    long n = sop__read_small_at(AT_FDCWD, path, buf, cap < sizeof buf ? cap : sizeof buf);
    if (n <= 0)
        return n < 0 ? (int)n : -ENODATA;
    return sop__parse_cmdline(buf, (size_t)n, out, cap);
}

int sop__stat_read(const char *proc_root, int pid, int tid, sop_stat *out)
{
    char path[256], buf[1024];
    if (tid)
        snprintf(path, sizeof path, "%s/%d/task/%d/stat", proc_root, pid, tid);
    else
        snprintf(path, sizeof path, "%s/%d/stat", proc_root, pid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    if (n <= 0)
        return n < 0 ? (int)n : -ENODATA;
    return sop__parse_stat(buf, out);
}

double sop__start_time_read(const char *proc_root, int pid)
{
    sop_stat st;
    if (sop__stat_read(proc_root, pid, 0, &st) != 0 || st.starttime_ticks == SOP_NA)
        return NAN;
    double btime = sop__proc_btime_s();
    return isnan(btime) ? NAN : btime + (double)st.starttime_ticks / sop__proc_ticks_per_s();
}

int sop__io_read(const char *proc_root, int pid, sop_io *out)
{
    char path[256], buf[1024];
    snprintf(path, sizeof path, "%s/%d/io", proc_root, pid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    if (n <= 0)
        return n < 0 ? (int)n : -ENODATA;
    return sop__parse_io(buf, out);
}
