/* host_diskstats.c — /proc/diskstats: reads, writes, sectors and milliseconds of each whole
 * disk (partitions left out: a whole disk is one /sys/block lists). A pure parser taking the
 * "is a whole disk" test as a callback, and a reader taking a /proc dir fd. Depends on
 * probes/host.h, probes/procfs.h. */
#include "host.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool sop__disk_name_wanted(const char *name)
{
    /* loop and ram devices are whole "disks" to the kernel but never where a job's IO goes
     * in a way worth a row; dm-, md, nvme, sd, vd, xvd, zram are kept. */
    return strncmp(name, "loop", 4) != 0 && strncmp(name, "ram", 3) != 0 && name[0] != '\0';
}

int sop__parse_diskstats(const char *text, sop_disk_filter whole, void *ctx, sop_host *out)
{
    out->ndisks = 0;
    bool any = false;
    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            break; /* a cut-off last line is no record */
        const char *p = line;
        int64_t major = sop__parse_i64(&p), minor = sop__parse_i64(&p);
        while (*p == ' ' || *p == '\t')
            p++;
        const char *name = p;
        while (p < eol && *p != ' ' && *p != '\t')
            p++;
        size_t nlen = (size_t)(p - name);
        /* reads merged sectors ms, writes merged sectors ms, in-flight, io_ms */
        int64_t f[10];
        int k = 0;
        while (k < 10 && (f[k] = sop__parse_i64(&p)) != SOP_NA && f[k] >= 0)
            k++;
        line = eol + 1;
        if (major == SOP_NA || minor == SOP_NA || nlen == 0 || nlen >= sizeof out->disks[0].name ||
            k < 10)
            continue;
        any = true;
        char nm[sizeof out->disks[0].name];
        memcpy(nm, name, nlen);
        nm[nlen] = '\0';
        if (!sop__disk_name_wanted(nm) || (whole && !whole(ctx, nm)))
            continue;
        if (f[0] == 0 && f[4] == 0)
            continue; /* never read nor written since boot (an unused zram, a cd drive) */
        if (out->ndisks >= SOP_DISKS_MAX)
            break;
        sop_disk *d = &out->disks[out->ndisks++];
        memset(d, 0, sizeof *d);
        d->util_pct = d->r_await_ms = d->w_await_ms = d->read_kb_per_s = d->write_kb_per_s =
            d->reads_per_s = d->writes_per_s = NAN;
        memcpy(d->name, nm, nlen + 1);
        d->reads = f[0];
        d->read_sectors = f[2];
        d->read_ms = f[3];
        d->writes = f[4];
        d->write_sectors = f[6];
        d->write_ms = f[7];
        d->io_ms = f[9];
    }
    return any || text[0] == '\0' ? 0 : -EINVAL;
}

/* A whole disk has a /sys/block entry (its '/' written '!', e.g. cciss!c0d0); a partition
 * has none. */
static bool in_sys_block(void *ctx, const char *name)
{
    char n[64];
    snprintf(n, sizeof n, "%s", name);
    for (char *c = n; *c; c++)
        if (*c == '/')
            *c = '!';
    return faccessat(*(int *)ctx, n, F_OK, 0) == 0;
}

int sop__host_read_diskstats(int proc_dirfd, sop_host *out, sop_missing *missing)
{
    char *text = NULL;
    int rc = sop__read_file_at(proc_dirfd, "diskstats", 1u << 20, &text, NULL);
    if (rc < 0) {
        sop__missing_add(missing, "host.diskstats", "diskstats: %s", sop__strerror(-rc));
        return rc;
    }
    int sys = open("/sys/block", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sys < 0) {
        /* disks cannot be told from partitions: none is reported rather than double counts */
        sop__missing_add(missing, "host.diskstats", "diskstats: /sys/block: %s",
                         sop__strerror(errno));
        out->ndisks = 0;
        free(text);
        return -errno;
    }
    rc = sop__parse_diskstats(text, in_sys_block, &sys, out);
    close(sys);
    free(text);
    if (rc < 0)
        sop__missing_add(missing, "host.diskstats", "diskstats: unparsable");
    return rc;
}
