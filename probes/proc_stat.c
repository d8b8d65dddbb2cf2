/* proc_stat.c — parse /proc/PID/stat (and task/TID/stat). The comm may hold spaces and ')',
 * so fields are read from the LAST ')'. A cut-off line fills what it has. Depends on procfs.c. */
#include <errno.h>
#include <string.h>

#include "proc.h"

static void stat_init(sop_stat *s)
{
    memset(s, 0, sizeof *s);
    s->minflt = s->majflt = s->utime_ticks = s->stime_ticks = SOP_NA;
    s->cutime_ticks = s->cstime_ticks = SOP_NA;
    s->priority = s->nice = s->num_threads = s->starttime_ticks = SOP_NA;
    s->vsize_bytes = s->rss_pages = s->processor = s->blkio_ticks = SOP_NA;
}

int sop__parse_stat(const char *text, sop_stat *out)
{
    stat_init(out);
    if (!text)
        return -EINVAL;
    const char *open = strchr(text, '(');
    const char *close = strrchr(text, ')');
    if (!open || !close || close < open)
        return -EINVAL;
    const char *p = text;
    int64_t pid = sop__parse_i64(&p);
    if (pid == SOP_NA || pid <= 0 || pid > INT32_MAX)
        return -EINVAL;
    out->pid = (int)pid;
    size_t clen = (size_t)(close - open - 1);
    if (clen >= sizeof out->comm)
        clen = sizeof out->comm - 1;
    memcpy(out->comm, open + 1, clen);
    out->comm[clen] = '\0';

    p = close + 1;
    while (*p == ' ')
        p++;
    if (*p == '\0' || *p == '\n')
        return -EINVAL; /* no state: nothing usable after the comm */
    out->state = *p++;

    /* Field numbers as in proc(5); field 3 is the state just read. */
    int64_t *slot[43] = {0};
    int64_t ppid = SOP_NA;
    slot[4] = &ppid;
    slot[10] = &out->minflt;
    slot[12] = &out->majflt;
    slot[14] = &out->utime_ticks;
    slot[15] = &out->stime_ticks;
    slot[16] = &out->cutime_ticks;
    slot[17] = &out->cstime_ticks;
    slot[18] = &out->priority;
    slot[19] = &out->nice;
    slot[20] = &out->num_threads;
    slot[22] = &out->starttime_ticks;
    slot[23] = &out->vsize_bytes;
    slot[24] = &out->rss_pages;
    slot[39] = &out->processor;
    slot[42] = &out->blkio_ticks;
    for (int field = 4; field <= 42; field++) {
        if (*p != ' ')
            break; /* end of text, or malformed */
        while (*p == ' ')
            p++;
        if (*p == '\0' || *p == '\n')
            break;
        const char *tok = p;
        int64_t v = sop__parse_i64(&p);
        if (p == tok) { /* not a number: skip the token, leave the field absent */
            while (*p && *p != ' ' && *p != '\n')
                p++;
            continue;
        }
        if (*p != ' ' && *p != '\n')
            break; /* cut off in the middle of a number, or junk glued to it */
        if (slot[field])
            *slot[field] = v;
    }
    out->ppid = ppid != SOP_NA && ppid >= 0 && ppid <= INT32_MAX ? (int)ppid : -1;
    return 0;
}
