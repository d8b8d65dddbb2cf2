/* trust.c — may this rule file be run? Rules are code run inside sopctl: when sopctl runs as
 * root, a rule or plugin file that another user could have written (owned by someone else,
 * or writable by group or others) is refused, like cron and sudo refuse such files.
 * Depends on libc only. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rules.h"

int sop__rules_file_trusted(const struct stat *st, char *why, size_t whylen)
{
    if (geteuid() != 0)
        return 0; /* an unprivileged user can only hurt itself */
    if (st->st_uid != 0) {
        snprintf(why, whylen,
                 "refused: running as root, and the file belongs to uid %u "
                 "(chown root, or run as that user)",
                 (unsigned)st->st_uid);
        return -1;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, whylen,
                 "refused: running as root, and the file is writable by %s "
                 "(mode %04o; chmod go-w)",
                 (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777));
        return -1;
    }
    return 0;
}
