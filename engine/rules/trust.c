/* trust.c — may this rule file be run? Rules are code run inside sopctl: when sopctl runs as
 * root, a rule or plugin file that another user could have written (owned by someone else,
 * or writable by group or others) is refused, like cron and sudo refuse such files; so is a
 * directory on the way from the rules file's directory to a plugin, and a symbolic link there.
 * Depends on libc only. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rules.h"

/* The one trust test: `what` ("file", "directory") names the thing in the reason. */
static int trusted(const struct stat *st, const char *what, char *why, size_t whylen)
{
    if (geteuid() != 0)
        return 0; /* an unprivileged user can only hurt itself */
    if (st->st_uid != 0) {
        snprintf(why, whylen,
                 "refused: running as root, and the %s belongs to uid %u "
                 "(chown root, or run as that user)",
                 what, (unsigned)st->st_uid);
        return -1;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, whylen,
                 "refused: running as root, and the %s is writable by %s "
                 "(mode %04o; chmod go-w)",
                 what, (st->st_mode & S_IWOTH) ? "others" : "its group",
                 (unsigned)(st->st_mode & 07777));
        return -1;
    }
    return 0;
}

int sop__rules_file_trusted(const struct stat *st, char *why, size_t whylen)
{
    return trusted(st, "file", why, whylen);
}

/* Open `name` in dfd without following a link: a directory (on the way) or the plugin file.
 * Returns the fd, -ENOENT when it is not there (why left empty), or another -errno with
 * "<path> <reason>" in why. The file's content is never read here. */
static int open_step(int dfd, const char *name, const char *path, int is_dir, char *why,
                     size_t whylen)
{
    /* O_NONBLOCK: a FIFO must not block the open; O_NOFOLLOW: a link is refused, not followed */
    int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | (is_dir ? O_DIRECTORY : O_NONBLOCK);
    int fd = openat(dfd, name, flags);
    struct stat st;
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT)
            return -ENOENT;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            snprintf(why, whylen,
                     "%s refused: a symbolic link (plugins and their directories are "
                     "opened without following links)",
                     path);
        else if (err == ENOTDIR && is_dir)
            snprintf(why, whylen, "%s is not a directory", path);
        else
            snprintf(why, whylen, "%s: %s", path, strerror(err));
        return -err;
    }
    char reason[200] = "";
    if (fstat(fd, &st) != 0)
        snprintf(reason, sizeof reason, "cannot be checked: %s", strerror(errno));
    else if (is_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        snprintf(reason, sizeof reason, "is not a %s", is_dir ? "directory" : "regular file");
    else
        trusted(&st, is_dir ? "directory" : "file", reason, sizeof reason); /* empty when so */
    if (reason[0]) {
        snprintf(why, whylen, "%s %s", path, reason);
        close(fd);
        return -EPERM;
    }
    return fd;
}

int sop__rules_open_plugin(const char *dir, const char *rel, char *why, size_t whylen)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, rel) >= (int)sizeof path) {
        snprintf(why, whylen, "%s/%s: %s", dir, rel, strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    /* The rules file's own directory (links followed, as in the path the rules file was read
     * from) is where each step starts; each step below it is opened relative to the one above,
     * so what was checked is what is read. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        int err = errno;
        if (err != ENOENT)
            snprintf(why, whylen, "%s: %s", dir, strerror(err));
        return -err;
    }
    size_t dirlen = strlen(dir) + 1; /* path + dirlen: rel, split in place at each '/' */
    char *step = path + dirlen;
    for (;;) {
        char *slash = strchr(step, '/');
        if (slash)
            *slash = '\0'; /* path now ends at this step: the reason names it */
        int fd = open_step(dfd, step, path, slash != NULL, why, whylen);
        close(dfd);
        if (fd < 0 || !slash)
            return fd;
        *slash = '/';
        dfd = fd;
        step = slash + 1;
    }
}
