/* target_file.h — opening a file for reading *as the target sees it and could read it*: the
 * path is resolved inside the target's root (/proc/PID/root) one component at a time, symlinks
 * expanded by hand and never followed out of that root, every directory searchable and the
 * file readable by the target's fs uid/gids (or its CAP_DAC_* capabilities), a regular file
 * only, opened O_NONBLOCK|O_NOFOLLOW, size-bounded. Used for source lines and ELF files, so a
 * root sopctl never reads, for an unprivileged target, a file that target could not read
 * itself, and a FIFO or device planted at a path never blocks it. Depends on libc only. */
#ifndef SOP_TARGET_FILE_H
#define SOP_TARGET_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SOP_CREDS_GROUPS_MAX 64

/* The credentials the kernel checks file access against (from /proc/PID/status). */
typedef struct {
    uid_t fsuid;
    gid_t fsgid;
    gid_t groups[SOP_CREDS_GROUPS_MAX];
    int ngroups;       /* more than SOP_CREDS_GROUPS_MAX: the rest are not honoured */
    bool dac_override; /* CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH in CapEff */
} sop_creds;

/* Parse the Uid:, Gid:, Groups: and CapEff: lines of a /proc/PID/status text. Returns 0, or
 * -EINVAL when Uid or Gid is missing or malformed. Pure. */
int sop__creds_parse(const char *status, sop_creds *c);

/* Would a process with these credentials be allowed `want` (4 read, 1 search/execute, or
 * both) on a file with this owner and mode? Mode bits only (ACLs are not consulted: a file
 * readable only through an ACL is refused). Pure. */
bool sop__creds_may(const sop_creds *c, const struct stat *st, int want);

/* Open `path` (absolute, as the target PID sees it) for reading through
 * `proc_root`/PID/root. Returns an fd (O_RDONLY|O_CLOEXEC|O_NONBLOCK; caller closes) with *st
 * filled, or -errno: -EACCES (the target could not read it), -ELOOP (more than 40 symlinks),
 * -EINVAL (not a regular file, or a path that is not absolute), -EFBIG (over max_bytes),
 * -ESTALE (replaced while being opened), -ENOENT/-ENOTDIR, -ESRCH (the target is gone). */
int sop__target_open(const char *proc_root, int pid, const char *path, uint64_t max_bytes,
                     struct stat *st);

/* One file mapping of the target as /proc/PID/maps names it: the path (the reader's view of
 * it: a chrooted target's files carry the chroot's prefix, a container's are in its own mount
 * namespace; " (deleted)" when unlinked), the range, and the device and inode of the file. */
typedef struct {
    char path[512];
    uint64_t lo, hi;
    unsigned dev_major, dev_minor;
    uint64_t ino;
} sop_mapping;

/* Open a file the target has mapped, whatever its root: first the mapping itself
 * (proc_root/PID/map_files/LO-HI: the very file, also when deleted or in another mount
 * namespace; needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else by path inside the target's
 * root (sop__target_open), the path first with the target's root prefix taken off (a chroot
 * seen from outside it), then as maps gives it. What is opened must be the mapped file: the
 * same inode when on the same device (an overlay reports another device). The target mapped
 * it, so it could read it. Returns an fd with *st filled, or -errno as sop__target_open. */
int sop__target_open_mapped(const char *proc_root, int pid, const sop_mapping *m,
                            uint64_t max_bytes, struct stat *st);

#endif
