/* kmsg.c — reads the kernel log for OOM kills, bounded: /dev/kmsg opened non-blocking and
 * syslog(2) SYSLOG_ACTION_READ_ALL ("[ 1234.567890]" stamps) in one call, else /dev/kmsg opened
 * non-blocking and read one record per read(2) until EAGAIN (at most 4 MiB, only records newer
 * than max_age_s). A parse of the whole ring is remembered (probes/kmsg_memo.c) while the
 * host's kill counter stays where it was.
 * The lines are parsed by probes/kmsg_parse.c. Depends on libc, kmsg.h, kmsg_memo.h, missing.h. */
#include "kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <time.h>
#include <unistd.h>

#include "kmsg_memo.h"

#define KMSG_MAX_BYTES (4u << 20)
#define KMSG_RECORD_MAX 8192 /* a read(2) buffer smaller than a record gets EINVAL */
#define SYSLOG_ACTION_READ_ALL 3
#define SYSLOG_ACTION_SIZE_BUFFER 10

/* Seconds since boot on the clock printk stamps with (local_clock ~ CLOCK_MONOTONIC). */
static double uptime_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
        return NAN;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* *whole is cleared when records were lost or the read was cut short. */
static int read_dev_kmsg(sop_oom_list *out, double min_up, sop_missing *missing, bool *whole)
{
    int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char *buf = malloc(KMSG_RECORD_MAX);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t total = 0;
    int lost = 0;
    /* bounded by bytes and by a record count (each read returns one record) */
    for (unsigned i = 0; i < (1u << 20) && total < KMSG_MAX_BYTES; i++) {
        ssize_t n = read(fd, buf, KMSG_RECORD_MAX - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE) { /* overwritten while we read: skip ahead */
                lost = 1;
                continue;
            }
            break; /* EAGAIN: we are at the end; anything else: stop */
        }
        if (n == 0)
            break;
        total += (size_t)n;
        buf[n] = '\0';
        char *nl = memchr(buf, '\n', (size_t)n); /* the dictionary lines after it are skipped */
        sop__kmsg_feed_line(out, buf, nl ? (size_t)(nl - buf) : (size_t)n, min_up);
    }
    if (total >= KMSG_MAX_BYTES || lost)
        *whole = false;
    if (total >= KMSG_MAX_BYTES)
        sop__missing_add(missing, "kmsg", "kernel log read stopped at %u bytes",
                         (unsigned)KMSG_MAX_BYTES);
    if (lost)
        sop__missing_add(missing, "kmsg", "some kernel log records were overwritten while read");
    free(buf);
    close(fd);
    return 0;
}

static int read_klogctl(sop_oom_list *out, double min_up, bool *whole)
{
    int size = klogctl(SYSLOG_ACTION_SIZE_BUFFER, NULL, 0);
    if (size <= 0)
        return size < 0 ? -errno : -ENODATA;
    if ((unsigned)size > KMSG_MAX_BYTES) {
        size = (int)KMSG_MAX_BYTES; /* the newest 4 MiB */
        *whole = false;
    }
    char *buf = malloc((size_t)size + 1);
    if (!buf)
        return -ENOMEM;
    int n = klogctl(SYSLOG_ACTION_READ_ALL, buf, size);
    if (n < 0) {
        int e = -errno;
        free(buf);
        return e;
    }
    buf[n] = '\0';
    /* Without printk timestamps ("[ 1234.567890]") the age of a record is unknown: let the
     * caller read /dev/kmsg, whose records always carry one. */
    const char *first = n > 0 ? strchr(buf, '[') : NULL;
    if (n > 0 && (!first || first - buf > 8)) {
        free(buf);
        return -ENOMSG;
    }
    const char *line = buf;
    for (int i = 0; i < (1 << 20) && line && *line; i++) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        sop__kmsg_feed_line(out, line, len, min_up);
        line = eol ? eol + 1 : NULL;
    }
    free(buf);
    return 0;
}

/* Read and parse the ring (records stamped before min_up skipped); *whole as above. */
static int read_ring(sop_oom_list *out, double min_up, sop_missing *missing, bool *whole)
{
    /* syslog(2) hands over the whole ring in one call; /dev/kmsg needs one read(2) per record
     * (thousands on a long-running host). Prefer the first when its lines carry timestamps. */
    int rc = read_klogctl(out, min_up, whole);
    if (rc < 0) {
        sop__oom_list_init(out, out->btime);
        *whole = true;
        int rc2 = read_dev_kmsg(out, min_up, missing, whole);
        if (rc2 < 0) {
            sop__missing_add(
                missing, "kmsg", "cannot read the kernel log: /dev/kmsg: %s; syslog(2): %s%s",
                sop__strerror(-rc2), rc == -ENOMSG ? "no timestamps" : sop__strerror(-rc),
                rc == -EPERM ? " (needs CAP_SYSLOG, or kernel.dmesg_restrict=0)" : "");
            return rc2;
        }
    }
    sop__kmsg_flush(out);
    return 0;
}

int sop__kmsg_collect(sop_oom_list *out, double btime, double max_age_s, int64_t kills_since_boot,
                      sop_missing *missing)
{
    sop__oom_list_init(out, btime);
    if (kills_since_boot == 0) {
        out->read_ok = true; /* no kill since boot: no record to find */
        return 0;
    }
    double min_up = -INFINITY;
    if (max_age_s > 0 && isfinite(max_age_s)) {
        double now = uptime_now();
        if (isfinite(now))
            min_up = now - max_age_s;
    }
    /* the parse remembered for this count of kills, when there is a place to keep it */
    sop_kmsg_key key;
    int dirfd = kills_since_boot > 0 ? sop__state_dir_open() : -1;
    bool memo = dirfd >= 0 && sop__kmsg_key_now(&key, kills_since_boot);
    if (memo && sop__kmsg_memo_get(dirfd, &key, min_up, btime, out)) {
        close(dirfd);
        out->read_ok = true;
        return 0;
    }
    bool whole = true;
    int rc = read_ring(out, memo ? -INFINITY : min_up, missing, &whole);
    if (rc == 0 && memo) {
        if (whole)
            sop__kmsg_memo_put(dirfd, &key, out);
        sop__oom_list_keep_since(out, min_up);
    }
    if (dirfd >= 0)
        close(dirfd);
    if (rc < 0)
        return rc;
    out->read_ok = true;
    return 0;
}
