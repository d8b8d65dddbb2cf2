/* proc_limits.c — parse /proc/PID/limits: open files (soft, hard), locked memory, address
 * space and processes (soft). "unlimited" is -1. Depends on procfs.c. */
#include <errno.h>
#include <string.h>

#include "proc.h"

/* Parse one limit value at *p: a number, or "unlimited" (-1). */
static int64_t limit_value(const char **p)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, "unlimited", 9) == 0) {
        *p = s + 9;
        return -1;
    }
    *p = s;
    int64_t v = sop__parse_i64(p);
    return v != SOP_NA && v >= 0 ? v : SOP_NA;
}

int sop__parse_limits(const char *text, sop_limits *out)
{
    out->nofile_soft = out->nofile_hard = out->memlock_bytes = out->as_bytes = SOP_NA;
    out->nproc = SOP_NA;
    if (!text)
        return -EINVAL;
    int found = 0;
    const char *line = text;
    while (*line) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            break; /* cut-off line: its numbers may be cut too */
        static const char *const names[] = {"Max open files", "Max locked memory",
                                            "Max address space", "Max processes"};
        for (int i = 0; i < 4; i++) {
            size_t n = strlen(names[i]);
            if (strncmp(line, names[i], n) != 0 || (line[n] != ' ' && line[n] != '\t'))
                continue;
            const char *p = line + n;
            int64_t soft = limit_value(&p);
            int64_t hard = limit_value(&p);
            switch (i) {
            case 0:
                out->nofile_soft = soft;
                out->nofile_hard = hard;
                break;
            case 1:
                out->memlock_bytes = soft;
                break;
            case 2:
                out->as_bytes = soft;
                break;
            default:
                out->nproc = soft;
                break;
            }
            found++;
            break;
        }
        line = eol + 1;
    }
    return found ? 0 : -ENODATA;
}
