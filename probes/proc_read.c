/* proc_read.c — read a small /proc text file with one read() when that is provably enough:
 * files shown in one piece (stat, status, io, schedstat, limits, smaps_rollup) and short
 * record lists come back whole from the first read, so the read() that would only see EOF is
 * skipped — about 15% of the cost of a per-thread file. Depends on libc. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "proc.h"

/* A seq_file fills a page-sized buffer per read; a short read below this cannot have been
 * cut at a page boundary by a following record of the lists we read (pids, lines < 1 KiB). */
#define SEQ_SURELY_WHOLE 3072

long sop__read_seq_at(int dirfd, const char *path, char *buf, size_t cap)
{
    if (cap < 2)
        return -EINVAL;
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            close(fd);
            buf[n] = '\0';
            return e;
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n < cap - 1 && n < SEQ_SURELY_WHOLE)
            break; /* short and small: the whole file */
    }
    close(fd);
    buf[n] = '\0';
    return (long)n;
}
