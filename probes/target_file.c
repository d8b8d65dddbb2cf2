/* target_file.c — open a target's file as the target could (target_file.h): a component walk
 * from /proc/PID/root with O_PATH|O_NOFOLLOW, symlinks read and expanded here (an absolute one
 * restarts at the target's root, ".." stops there, so nothing resolves outside the target's
 * view, magic links included), search/read permission checked against the target's fs
 * credentials at every step, then the last component opened O_NONBLOCK|O_NOFOLLOW and checked
 * to be the very file that was vetted. Works without openat2 (any kernel). Depends on libc and
 * procfs.c. */
#include "target_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procfs.h"

#define LINKS_MAX 40    /* as the kernel's MAXSYMLINKS */
#define DEPTH_MAX 256   /* directories deep */
#define STEPS_MAX 4096  /* components looked at, all symlink expansions together */
#define PATH_BUF (8192) /* the path still to resolve, with expansions */
#define STATUS_BUF (16384)

static int parse_id_line(const char *status, const char *key, unsigned long *fs)
{
    const char *p = status;
    size_t kl = strlen(key);
    while (p && *p) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ':') {
            /* real, effective, saved, filesystem */
            const char *q = p + kl + 1;
            unsigned long v[4];
            for (int i = 0; i < 4; i++) {
                char *end;
                while (*q == ' ' || *q == '\t')
                    q++;
                if (*q < '0' || *q > '9')
                    return -EINVAL;
                v[i] = strtoul(q, &end, 10);
                q = end;
            }
            *fs = v[3];
            return 0;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -EINVAL;
}

static const char *find_line(const char *status, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = status; p && *p;) {
        if (strncmp(p, key, kl) == 0 && p[kl] == ':')
            return p + kl + 1;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return NULL;
}

int sop__creds_parse(const char *status, sop_creds *c)
{
    memset(c, 0, sizeof *c);
    unsigned long u, g;
    if (!status || parse_id_line(status, "Uid", &u) < 0 || parse_id_line(status, "Gid", &g) < 0)
        return -EINVAL;
    c->fsuid = (uid_t)u;
    c->fsgid = (gid_t)g;
    const char *q = find_line(status, "Groups");
    while (q && *q && *q != '\n' && c->ngroups < SOP_CREDS_GROUPS_MAX) {
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q < '0' || *q > '9')
            break;
        char *end;
        c->groups[c->ngroups++] = (gid_t)strtoul(q, &end, 10);
        q = end;
    }
    q = find_line(status, "CapEff");
    if (q) {
        while (*q == ' ' || *q == '\t')
            q++;
        unsigned long long caps = strtoull(q, NULL, 16);
        c->dac_override = (caps & 0x6ull) != 0; /* CAP_DAC_OVERRIDE (1), CAP_DAC_READ_SEARCH (2) */
    }
    return 0;
}

bool sop__creds_may(const sop_creds *c, const struct stat *st, int want)
{
    if (c->dac_override)
        return true; /* reading files and searching directories: both capabilities allow it */
    unsigned bits;
    bool in_group = st->st_gid == c->fsgid;
    for (int i = 0; !in_group && i < c->ngroups; i++)
        in_group = st->st_gid == c->groups[i];
    if (st->st_uid == c->fsuid)
        bits = (st->st_mode >> 6) & 7;
    else if (in_group)
        bits = (st->st_mode >> 3) & 7;
    else
        bits = st->st_mode & 7;
    return (bits & (unsigned)want) == (unsigned)want;
}

/* The walk's state: a stack of O_PATH directory fds, dirs[0] the target's root. */
typedef struct {
    int dirs[DEPTH_MAX];
    int depth;
} walk;

static void walk_pop_to(walk *w, int depth)
{
    while (w->depth > depth)
        close(w->dirs[w->depth--]);
}

/* Replace the path left to resolve (rest) with link + "/" + rest, in buf. */
static int expand(char *buf, size_t cap, const char *link, size_t ll, const char *rest)
{
    size_t rl = strlen(rest);
    if (ll + 1 + rl + 1 > cap)
        return -ENAMETOOLONG;
    memmove(buf + ll + 1, rest, rl + 1);
    memcpy(buf, link, ll);
    buf[ll] = '/';
    return 0;
}

static int open_in_root(int rootfd, const sop_creds *cr, const char *path, uint64_t max_bytes,
                        struct stat *st)
{
    walk w = {.depth = 0};
    w.dirs[0] = rootfd;
    char *buf = malloc(PATH_BUF);
    if (!buf)
        return -ENOMEM;
    if (strlen(path) >= PATH_BUF) {
        free(buf);
        return -ENAMETOOLONG;
    }
    strcpy(buf, path);
    int rc = -ENOENT, links = 0, steps = 0;
    struct stat ds;
    if (fstat(rootfd, &ds) < 0 || !sop__creds_may(cr, &ds, 1)) {
        free(buf);
        return -EACCES;
    }
    char *p = buf;
    for (;;) {
        if (++steps > STEPS_MAX) {
            rc = -ELOOP;
            break;
        }
        while (*p == '/')
            p++;
        if (!*p) { /* the path names a directory */
            rc = -EINVAL;
            break;
        }
        char *slash = strchr(p, '/');
        char *rest = slash ? slash + 1 : p + strlen(p);
        if (slash)
            *slash = '\0';
        bool last = true;
        for (const char *r = rest; *r; r++)
            if (*r != '/') {
                last = false;
                break;
            }
        if (strcmp(p, ".") == 0 || strcmp(p, "..") == 0) {
            if (p[1] == '.' && w.depth > 0)
                walk_pop_to(&w, w.depth - 1);
            if (last) {
                rc = -EINVAL;
                break;
            }
            p = rest;
            continue;
        }
        int fd = openat(w.dirs[w.depth], p, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            rc = -errno;
            break;
        }
        struct stat cs;
        if (fstat(fd, &cs) < 0) {
            rc = -errno;
            close(fd);
            break;
        }
        if (S_ISLNK(cs.st_mode)) {
            char link[4096];
            ssize_t ll = readlinkat(fd, "", link, sizeof link);
            close(fd);
            if (ll <= 0 || (size_t)ll >= sizeof link) {
                rc = ll < 0 ? -errno : -ENAMETOOLONG;
                break;
            }
            if (++links > LINKS_MAX) {
                rc = -ELOOP;
                break;
            }
            if (link[0] == '/')
                walk_pop_to(&w, 0); /* absolute: from the target's root, never the host's */
            rc = expand(buf, PATH_BUF, link, (size_t)ll, rest);
            if (rc < 0)
                break;
            p = buf;
            rc = -ENOENT;
            continue;
        }
        if (!last) {
            if (!S_ISDIR(cs.st_mode)) {
                close(fd);
                rc = -ENOTDIR;
                break;
            }
            if (!sop__creds_may(cr, &cs, 1)) {
                close(fd);
                rc = -EACCES;
                break;
            }
            if (w.depth + 1 >= DEPTH_MAX) {
                close(fd);
                rc = -ENAMETOOLONG;
                break;
            }
            w.dirs[++w.depth] = fd;
            p = rest;
            continue;
        }
        /* The last component: vet it on the O_PATH fd, then open it for reading. */
        close(fd);
        if (!S_ISREG(cs.st_mode)) {
            rc = -EINVAL;
            break;
        }
        if (!sop__creds_may(cr, &cs, 4)) {
            rc = -EACCES;
            break;
        }
        if ((uint64_t)cs.st_size > max_bytes) {
            rc = -EFBIG;
            break;
        }
        fd = openat(w.dirs[w.depth], p, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) {
            rc = -errno;
            break;
        }
        if (fstat(fd, st) < 0 || st->st_dev != cs.st_dev || st->st_ino != cs.st_ino ||
            !S_ISREG(st->st_mode) || (uint64_t)st->st_size > max_bytes) {
            close(fd);
            rc = -ESTALE; /* swapped between the check and the open */
            break;
        }
        rc = fd;
        break;
    }
    walk_pop_to(&w, 0);
    free(buf);
    return rc;
}

int sop__target_open(const char *proc_root, int pid, const char *path, uint64_t max_bytes,
                     struct stat *st)
{
    if (!path || path[0] != '/')
        return -EINVAL;
    char dir[512];
    pid = sop__live_task(proc_root, pid); /* a zombie leader has no root, its threads do */
    if (snprintf(dir, sizeof dir, "%s/%d", proc_root, pid) >= (int)sizeof dir)
        return -ENAMETOOLONG;
    int piddir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (piddir < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    char *status = malloc(STATUS_BUF);
    if (!status) {
        close(piddir);
        return -ENOMEM;
    }
    long n = sop__read_small_at(piddir, "status", status, STATUS_BUF);
    sop_creds cr;
    int rc = n > 0 ? sop__creds_parse(status, &cr) : (n < 0 ? (int)n : -ESRCH);
    free(status);
    if (rc < 0) {
        close(piddir);
        return rc == -ENOENT ? -ESRCH : rc;
    }
    int rootfd = openat(piddir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int e = errno;
    close(piddir);
    if (rootfd < 0)
        return -e;
    rc = open_in_root(rootfd, &cr, path, max_bytes, st);
    close(rootfd); /* dirs[0] */
    return rc;
}

/* The mapped file itself, through map_files: refused without CAP_SYS_ADMIN (or
 * CAP_CHECKPOINT_RESTORE), then -EPERM. */
static int open_map_file(const char *proc_root, int pid, const sop_mapping *m, uint64_t max_bytes,
                         struct stat *st)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%d/map_files/%llx-%llx", proc_root, pid,
             (unsigned long long)m->lo, (unsigned long long)m->hi);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : -errno;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || (uint64_t)st->st_size > max_bytes) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}

/* Is the file at st the one maps names (same inode on the same device)? A different device is
 * not held against it: an overlay (a container's root) reports its own. */
static bool same_file(const sop_mapping *m, const struct stat *st)
{
    if (!m->ino)
        return true;
    if (major(st->st_dev) != m->dev_major || minor(st->st_dev) != m->dev_minor)
        return true;
    return (uint64_t)st->st_ino == m->ino;
}

int sop__target_open_mapped(const char *proc_root, int pid, const sop_mapping *m,
                            uint64_t max_bytes, struct stat *st)
{
    pid = sop__live_task(proc_root, pid);
    int fd = open_map_file(proc_root, pid, m, max_bytes, st);
    if (fd >= 0) {
        if (same_file(m, st) || !m->ino)
            return fd;
        close(fd); /* the range was unmapped and reused since maps was read */
    }
    if (fd == -EINVAL)
        return -EINVAL;
    char path[sizeof m->path];
    snprintf(path, sizeof path, "%s", m->path);
    char *del = strstr(path, " (deleted)");
    if (del && del[10] == '\0')
        *del = '\0';
    /* A chroot in our mount namespace: maps names its files with the chroot's path in front,
     * its root link names that path. */
    char link[300], root[512];
    snprintf(link, sizeof link, "%s/%d/root", proc_root, pid);
    ssize_t n = readlink(link, root, sizeof root - 1);
    int rc = -ENOENT;
    if (n > 1 && root[0] == '/') {
        root[n] = '\0';
        size_t rl = (size_t)n;
        if (strncmp(path, root, rl) == 0 && path[rl] == '/') {
            rc = sop__target_open(proc_root, pid, path + rl, max_bytes, st);
            if (rc >= 0 && !same_file(m, st)) {
                close(rc);
                rc = -ESTALE;
            }
            if (rc >= 0)
                return rc;
        }
    }
    int rc2 = sop__target_open(proc_root, pid, path, max_bytes, st);
    if (rc2 >= 0 && !same_file(m, st)) {
        close(rc2);
        rc2 = -ESTALE;
    }
    /* Say why the first way failed when the plain path does not exist there. */
    return rc2 == -ENOENT && rc != -ENOENT ? rc : rc2;
}
