/* proc_dir.c — list the numeric entries of a /proc directory (task/ TIDs, /proc PIDs) with
 * getdents64 into a stack buffer, bounded. Shared by the thread and children probes.
 * Depends on libc. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc.h"

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

long sop__list_numeric_at(int dirfd, const char *path, int **out, size_t max)
{
    *out = NULL;
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[16384] __attribute__((aligned(8)));
    size_t n = 0, cap = 0;
    int *ids = NULL;
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (got < 0) {
            int e = errno;
            close(fd);
            free(ids);
            return -e;
        }
        if (got == 0)
            break;
        for (long off = 0; off < got && n < max;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            if (d->d_reclen == 0)
                break;
            off += d->d_reclen;
            long v = 0;
            const char *s = d->d_name;
            if (*s < '1' || *s > '9')
                continue;
            for (; *s >= '0' && *s <= '9' && v <= INT32_MAX; s++)
                v = v * 10 + (*s - '0');
            if (*s || v > INT32_MAX)
                continue;
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                int *ni = realloc(ids, ncap * sizeof *ni);
                if (!ni) {
                    close(fd);
                    free(ids);
                    return -ENOMEM;
                }
                ids = ni;
                cap = ncap;
            }
            ids[n++] = (int)v;
        }
        if (n >= max)
            break;
    }
    close(fd);
    *out = ids;
    return (long)n;
}
