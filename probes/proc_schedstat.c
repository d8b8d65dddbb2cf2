/* proc_schedstat.c — parse /proc/PID/schedstat (and task/TID/schedstat): nanoseconds on a CPU,
 * nanoseconds waiting on a run queue, and timeslices run. Depends on procfs.c. */
#include <errno.h>

#include "proc.h"

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
