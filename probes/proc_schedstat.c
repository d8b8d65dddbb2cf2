/* proc_schedstat.c — parse /proc/PID/schedstat (and task/TID/schedstat): nanoseconds on a CPU,
 * nanoseconds waiting on a run queue, and timeslices run; and the one reader of those files
 * (the process probe, the thread snapshot and the tree's polls all read them here). Depends on
 * procfs.c. */
#include <errno.h>

#include "proc.h"
#include "procfs.h"

int sop__parse_schedstat(const char *text, sop_schedstat *out)
{
    out->run_ns = out->wait_ns = out->timeslices = SOP_NA;
    if (!text)
        return -EINVAL;
    const char *p = text;
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        v[i] = sop__parse_i64(&p);
        /* each number must end in a separator: a cut-off number is not a number */
        if (v[i] == SOP_NA || v[i] < 0 || (*p != ' ' && *p != '\n'))
            return -EINVAL;
    }
    out->run_ns = v[0];
    out->wait_ns = v[1];
    out->timeslices = v[2];
    return 0;
}

int sop__read_schedstat_at(int dirfd, const char *path, sop_schedstat *out)
{
    char buf[128]; /* three numbers: "run wait slices\n" */
    sop__parse_schedstat(NULL, out);
    long n = sop__read_seq_at(dirfd, path, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    if (n == 0)
        return -ENODATA;
    buf[n < (long)sizeof buf ? n : (long)sizeof buf - 1] = '\0';
    return sop__parse_schedstat(buf, out);
}
