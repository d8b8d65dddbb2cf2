/* host_stat.c — /proc/stat: the aggregate "cpu" line (jiffies by state), procs_running,
 * procs_blocked, processes (forks since boot) and btime. A pure parser and a reader taking a
 * /proc dir fd. Depends on probes/host.h, probes/procfs.h. */
#include "host.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool starts(const char *line, const char *eol, const char *key)
{
    size_t n = strlen(key);
    return (size_t)(eol - line) > n && strncmp(line, key, n) == 0 && line[n] == ' ';
}

int sop__parse_host_stat(const char *text, sop_host *out)
{
    bool cpu = false;
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            break; /* a cut-off last line is no number */
        const char *p = line;
        if (starts(line, eol, "cpu")) {
            /* user nice system idle iowait irq softirq steal (guest time is inside user) */
            int64_t v[8];
            p += 3;
            int k = 0;
            while (k < 8 && (v[k] = sop__parse_i64(&p)) != SOP_NA && v[k] >= 0)
                k++;
            if (k >= 4) { /* iowait on 2.5.41+, irq/softirq 2.6.0+, steal 2.6.11+ */
                int64_t *dst[8] = {&out->cpu_user,    &out->cpu_nice,   &out->cpu_system,
                                   &out->cpu_idle,    &out->cpu_iowait, &out->cpu_irq,
                                   &out->cpu_softirq, &out->cpu_steal};
                for (int i = 0; i < 8; i++)
                    *dst[i] = i < k ? v[i] : SOP_NA;
                cpu = true;
            }
        } else if (starts(line, eol, "procs_running")) {
            p += 13;
            out->procs_running = sop__parse_i64(&p);
        } else if (starts(line, eol, "procs_blocked")) {
            p += 13;
            out->procs_blocked = sop__parse_i64(&p);
        } else if (starts(line, eol, "processes")) {
            p += 9;
            out->processes = sop__parse_i64(&p);
        } else if (starts(line, eol, "btime")) {
            p += 5;
            int64_t b = sop__parse_i64(&p);
            if (b > 0)
                out->btime = (double)b;
        }
        line = eol + 1;
    }
    return cpu ? 0 : -EINVAL;
}

int sop__host_read_stat(int proc_dirfd, sop_host *out, sop_missing *missing)
{
    char *text = NULL;
    /* a "cpuN" line per CPU and an "intr" line of every interrupt: 1 MiB covers thousands */
    int rc = sop__read_file_at(proc_dirfd, "stat", 1u << 20, &text, NULL);
    if (rc < 0) {
        sop__missing_add(missing, "host.stat", "stat: %s", sop__strerror(-rc));
        return rc;
    }
    rc = sop__parse_host_stat(text, out);
    free(text);
    if (rc < 0)
        sop__missing_add(missing, "host.stat", "stat: no cpu line (unparsable)");
    else if (isnan(out->btime))
        sop__missing_add(missing, "host.stat", "no btime in /proc/stat");
    return rc;
}
