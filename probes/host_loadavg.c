/* host_loadavg.c — /proc/loadavg: the 1, 5 and 15 minute load averages. A pure parser and a
 * reader taking a /proc dir fd. Depends on probes/host.h, probes/procfs.h. */
#include "host.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int parse_load(const char **p, double *out)
{
    char *end;
    while (**p == ' ' || **p == '\t')
        (*p)++;
    double v = strtod(*p, &end);
    if (end == *p || !isfinite(v) || v < 0)
        return -EINVAL;
    *p = end;
    *out = v;
    return 0;
}

int sop__parse_loadavg(const char *text, sop_host *out)
{
    double l1, l5, l15;
    const char *p = text;
    if (parse_load(&p, &l1) < 0 || parse_load(&p, &l5) < 0 || parse_load(&p, &l15) < 0)
        return -EINVAL;
    out->load1 = l1;
    out->load5 = l5;
    out->load15 = l15;
    return 0;
}

int sop__host_read_loadavg(int proc_dirfd, sop_host *out, sop_missing *missing)
{
    char buf[256];
    long n = sop__read_small_at(proc_dirfd, "loadavg", buf, sizeof buf);
    if (n < 0) {
        sop__missing_add(missing, "host.loadavg", "loadavg: %s", sop__strerror((int)-n));
        return (int)n;
    }
    int rc = sop__parse_loadavg(buf, out);
    if (rc < 0)
        sop__missing_add(missing, "host.loadavg", "loadavg: unparsable");
    return rc;
}
