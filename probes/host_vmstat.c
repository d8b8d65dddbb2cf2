/* host_vmstat.c — /proc/vmstat: swap-in/out, page fault and OOM kill counters ("name value" lines).
 * A pure parser and a reader taking a /proc dir fd. Depends on probes/host.h, probes/procfs.h. */
#include "host.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sop__parse_vmstat(const char *text, sop_host *out)
{
    struct {
        const char *key;
        int64_t *dst;
    } want[] = {{"pswpin", &out->pswpin},
                {"pswpout", &out->pswpout},
                {"pgfault", &out->pgfault},
                {"pgmajfault", &out->pgmajfault},
                {"oom_kill", &out->oom_kill}};
    int found = 0;
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            break; /* a cut-off last line is no number */
        const char *sp = memchr(line, ' ', (size_t)(eol - line));
        if (sp)
            for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
                if (line[0] == want[i].key[0] && strlen(want[i].key) == (size_t)(sp - line) &&
                    strncmp(line, want[i].key, (size_t)(sp - line)) == 0) {
                    const char *p = sp;
                    *want[i].dst = sop__parse_i64(&p);
                    found++;
                    break;
                }
        line = eol + 1;
    }
    return found ? 0 : -EINVAL;
}

int sop__host_read_vmstat(int proc_dirfd, sop_host *out, sop_missing *missing)
{
    char *text = NULL;
    int rc = sop__read_file_at(proc_dirfd, "vmstat", 1u << 16, &text, NULL); /* ~4 KB, 180 lines */
    if (rc < 0) {
        sop__missing_add(missing, "host.vmstat", "vmstat: %s", sop__strerror(-rc));
        return rc;
    }
    rc = sop__parse_vmstat(text, out);
    free(text);
    if (rc < 0)
        sop__missing_add(missing, "host.vmstat", "vmstat: unparsable");
    return rc;
}
