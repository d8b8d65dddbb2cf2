/* procfs.c — small-file reading relative to a directory fd, and the number helpers the
 * parsers share. Depends on libc only. */
#include "procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sop__read_file_at(int dirfd, const char *path, size_t max_bytes, char **out, size_t *len)
{
    *out = NULL;
    if (len)
        *len = 0;
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    size_t cap = 4096 < max_bytes ? 4096 : max_bytes, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (n == cap) {
            if (cap >= max_bytes)
                break; /* truncated: the parsers cope with a cut file */
            size_t ncap = cap * 2 < max_bytes ? cap * 2 : max_bytes;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                close(fd);
                return -ENOMEM;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            free(buf);
            close(fd);
            return e;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

/* A seq_file fills a page-sized buffer per read; a short read below this cannot have been
 * cut at a page boundary by a following record of the lists we read (pids, lines < 1 KiB). */
#define SEQ_SURELY_WHOLE 3072

static long read_small(int dirfd, const char *path, char *buf, size_t cap, bool seq)
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
        if (seq && n < cap - 1 && n < SEQ_SURELY_WHOLE)
            break; /* short and small: the whole file, skip the read() that sees EOF */
    }
    close(fd);
    buf[n] = '\0';
    return (long)n;
}

long sop__read_small_at(int dirfd, const char *path, char *buf, size_t cap)
{
    return read_small(dirfd, path, buf, cap, false);
}

long sop__read_seq_at(int dirfd, const char *path, char *buf, size_t cap)
{
    return read_small(dirfd, path, buf, cap, true);
}

int64_t sop__parse_i64(const char **p)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    int neg = 0;
    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    if (!isdigit((unsigned char)*s))
        return SOP_NA;
    int64_t v = 0;
    while (isdigit((unsigned char)*s)) {
        int d = *s++ - '0';
        if (v > (INT64_MAX - d) / 10) { /* saturate rather than wrap */
            v = INT64_MAX;
            while (isdigit((unsigned char)*s))
                s++;
            break;
        }
        v = v * 10 + d;
    }
    *p = s;
    return neg ? -v : v;
}

int64_t sop__kv_i64(const char *text, const char *key)
{
    size_t klen = strlen(key);
    const char *line = text;
    while (line && *line) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            const char *p = line + klen + 1;
            return sop__parse_i64(&p);
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return SOP_NA;
}

int sop__cpulist_count(const char *list)
{
    int count = 0;
    const char *p = list;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0' || *p == '\n')
        return 0;
    while (*p && *p != '\n') {
        int64_t a = sop__parse_i64(&p);
        if (a == SOP_NA || a < 0)
            return -1;
        int64_t b = a;
        if (*p == '-') {
            p++;
            b = sop__parse_i64(&p);
            if (b == SOP_NA || b < a)
                return -1;
        }
        if (b - a > 1 << 20)
            return -1;
        count += (int)(b - a + 1);
        if (*p == ',')
            p++;
        else if (*p && *p != '\n' && *p != ' ')
            return -1;
        else
            break;
    }
    return count;
}

int sop__live_task(const char *proc_root, int pid)
{
    char path[300], buf[512];
    proc_root = proc_root ? proc_root : "/proc";
    snprintf(path, sizeof path, "%s/%d/stat", proc_root, pid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    const char *p = n > 0 ? strrchr(buf, ')') : NULL;
    if (!p || p[1] != ' ' || (p[2] != 'Z' && p[2] != 'X'))
        return pid; /* a live leader (or nothing to say): the process's own directory */
    snprintf(path, sizeof path, "%s/%d/task", proc_root, pid);
    DIR *d = opendir(path);
    if (!d)
        return pid;
    int live = pid;
    struct dirent *de;
    for (int k = 0; live == pid && k < 65536 && (de = readdir(d)) != NULL; k++) {
        int tid = atoi(de->d_name);
        if (tid <= 0 || tid == pid)
            continue;
        snprintf(path, sizeof path, "%s/%d/task/%d/stat", proc_root, pid, tid);
        n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
        p = n > 0 ? strrchr(buf, ')') : NULL;
        if (p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X')
            live = tid;
    }
    closedir(d);
    return live;
}
