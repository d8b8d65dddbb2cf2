/* host_psi.c — pressure stall information, /proc/pressure/{cpu,memory,io}: "some" and "full"
 * avg10/avg60/avg300 (%) and total (us). Kernels without PSI (< 4.20, or psi=0) simply lack
 * the files: that is a missing entry, not an error. Depends on probes/host.h, procfs.h. */
#include "host.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" line, after the kind word. */
static int parse_psi_line(const char *p, const char *eol, sop_psi_line *out)
{
    sop_psi_line l = {NAN, NAN, NAN, SOP_NA, false};
    int seen = 0;
    while (p < eol) {
        while (p < eol && *p == ' ')
            p++;
        if (p >= eol)
            break;
        const char *eq = memchr(p, '=', (size_t)(eol - p));
        if (!eq)
            return eol[0] == '\0' ? -ENODATA : -EINVAL; /* "avg6" cut at the end of the text */
        size_t klen = (size_t)(eq - p);
        const char *v = eq + 1;
        char *end;
        if (klen == 5 && strncmp(p, "total", 5) == 0) {
            const char *q = v;
            int64_t t = sop__parse_i64(&q);
            if (t == SOP_NA || t < 0)
                return -EINVAL;
            l.total_us = t;
            end = (char *)q;
            seen |= 8;
        } else {
            double d = strtod(v, &end);
            if (end == v || !isfinite(d) || d < 0 || d > 100 * 1024.0)
                return -EINVAL;
            if (klen == 5 && strncmp(p, "avg10", 5) == 0)
                l.avg10 = d, seen |= 1;
            else if (klen == 5 && strncmp(p, "avg60", 5) == 0)
                l.avg60 = d, seen |= 2;
            else if (klen == 6 && strncmp(p, "avg300", 6) == 0)
                l.avg300 = d, seen |= 4;
        }
        if (end > eol)
            return -EINVAL;
        p = end;
        if (p < eol && *p != ' ')
            return -EINVAL;
    }
    if (seen != 15) /* a cut line (truncated read) is left out, not half-filled */
        return -ENODATA;
    l.present = true;
    *out = l;
    return 0;
}

int sop__parse_psi(const char *text, sop_psi *out)
{
    sop_psi r;
    memset(&r, 0, sizeof r);
    r.some = r.full = (sop_psi_line){NAN, NAN, NAN, SOP_NA, false};
    const char *line = text;
    for (int i = 0; i < 8 && line && *line; i++) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        int rc = 0;
        if (strncmp(line, "some ", 5) == 0)
            rc = parse_psi_line(line + 5, eol, &r.some);
        else if (strncmp(line, "full ", 5) == 0)
            rc = parse_psi_line(line + 5, eol, &r.full);
        if (rc == -EINVAL)
            return rc;
        line = *eol ? eol + 1 : NULL;
    }
    if (!r.some.present && !r.full.present)
        return -ENODATA;
    r.present = true;
    *out = r;
    return 0;
}

int sop__host_read_psi(int proc_dirfd, sop_host *out, sop_missing *missing)
{
    static const char *const names[3] = {"cpu", "memory", "io"};
    sop_psi *dst[3] = {&out->psi_cpu, &out->psi_memory, &out->psi_io};
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        char path[32], buf[512];
        snprintf(path, sizeof path, "pressure/%s", names[i]);
        long n = sop__read_small_at(proc_dirfd, path, buf, sizeof buf);
        if (n < 0) {
            /* ENOENT: kernel without PSI; EOPNOTSUPP: psi=0 on the command line */
            sop__missing_add(missing, "host.psi", "/proc/%s: %s", path, sop__strerror((int)-n));
            if (n != -ENOENT && n != -EOPNOTSUPP)
                rc = (int)n;
            continue;
        }
        if (sop__parse_psi(buf, dst[i]) < 0)
            sop__missing_add(missing, "host.psi", "/proc/%s: unparsable", path);
    }
    return rc;
}
