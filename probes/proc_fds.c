/* proc_fds.c — count the open file descriptors of a process: the entries of /proc/PID/fd,
 * read with getdents64 into a stack buffer (no per-entry allocation), bounded; and, for the
 * growth over a window, the set of descriptor numbers open at its start and what the ones not
 * in it at its end are (sockets, pipes, files: their link targets, a bounded number read).
 * Depends on libc. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc.h"

#define FDS_COUNT_MAX (1 << 22) /* well above any nofile limit seen in practice */

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

int64_t sop__proc_count_fds(int proc_dirfd)
{
    sop_fd_scan s;
    int rc = sop__proc_fd_scan(proc_dirfd, NULL, NULL, &s);
    return rc < 0 ? rc : s.count;
}

/* The kind of one descriptor from its link target, and the file's path when it is one. */
static void fd_kind(int fddir, const char *name, sop_fd_scan *out)
{
    char target[256];
    ssize_t n = readlinkat(fddir, name, target, sizeof target - 1);
    if (n < 0)
        return; /* closed since the listing */
    target[n] = '\0';
    if (strncmp(target, "socket:", 7) == 0) {
        out->sockets++;
    } else if (strncmp(target, "pipe:", 5) == 0) {
        out->pipes++;
    } else if (target[0] == '/') {
        out->files++;
        for (size_t i = 0; i < out->npaths; i++)
            if (strcmp(out->paths[i].path, target) == 0) {
                out->paths[i].count++;
                return;
            }
        if (out->npaths < SOP_FD_SCAN_PATHS) {
            snprintf(out->paths[out->npaths].path, sizeof out->paths[0].path, "%.127s", target);
            out->paths[out->npaths++].count = 1;
        }
    } else {
        out->other++;
    }
}

static bool in_set(const sop_fd_set *set, int64_t num)
{
    return num >= 0 && num < SOP_FD_SET_BITS && (set->w[num / 64] >> (num % 64) & 1u);
}

int sop__proc_fd_scan(int proc_dirfd, sop_fd_set *record, const sop_fd_set *before,
                      sop_fd_scan *out)
{
    memset(out, 0, sizeof *out);
    out->max_fd = -1;
    int fd = openat(proc_dirfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[16384] __attribute__((aligned(8)));
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (got < 0) {
            int e = errno;
            close(fd);
            return -e;
        }
        if (got == 0)
            break;
        for (long off = 0; off < got;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            if (d->d_reclen == 0)
                break;
            off += d->d_reclen;
            if (d->d_name[0] < '0' || d->d_name[0] > '9')
                continue;
            int64_t num = strtoll(d->d_name, NULL, 10);
            out->count++;
            if (num > out->max_fd)
                out->max_fd = num;
            if (record && num >= 0 && num < SOP_FD_SET_BITS)
                record->w[num / 64] |= (uint64_t)1 << (num % 64);
            if (before && !in_set(before, num)) {
                out->fresh++;
                if (out->fresh <= SOP_FD_SCAN_LINKS)
                    fd_kind(fd, d->d_name, out);
            }
        }
        if (out->count >= FDS_COUNT_MAX)
            break;
    }
    close(fd);
    return 0;
}
