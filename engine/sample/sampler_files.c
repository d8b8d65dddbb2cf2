/* sampler_files.c — the files a process has open over a window: fd -> path -> mount ->
 * filesystem (local, NFS, FUSE, overlay, memory) -> block device, with the bytes read through
 * each descriptor (fdinfo pos) between the window's start and end; the devices' utilisation
 * and await come from ev.host.disks. Pure parser: sop__parse_mountinfo_line. Depends on libc. */
#include "sampler_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_wait.h"
#include "procfs.h"

#define MAX_FDS_SCANNED 4096
#define MOUNTINFO_MAX (1u << 20)

/* "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue" */
int sop__parse_mountinfo_line(const char *line, sop_mount *out)
{
    memset(out, 0, sizeof *out);
    char mnt[512], fstype[64], source[256];
    unsigned maj, min;
    if (sscanf(line, "%*d %*d %u:%u %*s %511s", &maj, &min, mnt) != 3)
        return -1;
    const char *dash = strstr(line, " - ");
    if (!dash || sscanf(dash + 3, "%63s %255s", fstype, source) < 1)
        return -1;
    if (sscanf(dash + 3, "%63s %255s", fstype, source) < 2)
        snprintf(source, sizeof source, "none");
    /* mountinfo escapes spaces as \040 etc.; keep paths as written but decode octal. */
    size_t o = 0;
    for (size_t i = 0; mnt[i] && o + 1 < sizeof out->mountpoint; i++) {
        if (mnt[i] == '\\' && mnt[i + 1] >= '0' && mnt[i + 1] <= '3' && mnt[i + 2] && mnt[i + 3]) {
            out->mountpoint[o++] =
                (char)((mnt[i + 1] - '0') * 64 + (mnt[i + 2] - '0') * 8 + (mnt[i + 3] - '0'));
            i += 3;
        } else {
            out->mountpoint[o++] = mnt[i];
        }
    }
    out->mountpoint[o] = '\0';
    out->major = maj;
    out->minor = min;
    snprintf(out->fstype, sizeof out->fstype, "%s", fstype);
    snprintf(out->source, sizeof out->source, "%s", source);
    return 0;
}

const char *sop__fs_kind(const char *fstype)
{
    if (strncmp(fstype, "nfs", 3) == 0 || strcmp(fstype, "cifs") == 0 ||
        strcmp(fstype, "smb3") == 0 || strcmp(fstype, "ceph") == 0 ||
        strcmp(fstype, "lustre") == 0 || strcmp(fstype, "9p") == 0)
        return "network";
    if (strncmp(fstype, "fuse", 4) == 0)
        return "fuse";
    if (strcmp(fstype, "overlay") == 0)
        return "overlay";
    if (strcmp(fstype, "tmpfs") == 0 || strcmp(fstype, "ramfs") == 0 || strcmp(fstype, "shm") == 0)
        return "memory";
    if (strcmp(fstype, "proc") == 0 || strcmp(fstype, "sysfs") == 0 ||
        strcmp(fstype, "devtmpfs") == 0 || strcmp(fstype, "cgroup") == 0 ||
        strcmp(fstype, "cgroup2") == 0)
        return "virtual";
    return "local";
}

/* The whole disk behind major:minor ("vda" for vda1), from /sys/dev/block; "" if none. */
static void disk_of(unsigned maj, unsigned min, char *out, size_t cap)
{
    char path[128], link[512];
    out[0] = '\0';
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u", maj, min);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0)
        return;
    link[n] = '\0';
    char *base = strrchr(link, '/');
    if (!base)
        return;
    char part[160];
    snprintf(part, sizeof part, "%s/partition", path);
    if (access(part, F_OK) == 0) { /* a partition: its parent directory is the disk */
        *base = '\0';
        base = strrchr(link, '/');
        if (!base)
            return;
    }
    snprintf(out, cap, "%s", base + 1);
}

static int64_t fd_pos(const char *proc_root, int pid, int fd)
{
    char path[256], buf[512];
    snprintf(path, sizeof path, "%s/%d/fdinfo/%d", proc_root, pid, fd);
    if (sop__read_small_at(AT_FDCWD, path, buf, sizeof buf) <= 0)
        return SOP_NA;
    const char *p = strstr(buf, "pos:");
    if (!p)
        return SOP_NA;
    p += 4;
    return sop__parse_i64(&p);
}

int sop__open_files_scan(const char *proc_root, int pid, sop_open_file *out, size_t cap)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%d/fd", proc_root, pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t n = 0;
    struct dirent *de;
    for (int guard = 0; n < cap && guard < MAX_FDS_SCANNED && (de = readdir(d)) != NULL; guard++) {
        int fd = atoi(de->d_name);
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char lp[600];
        snprintf(lp, sizeof lp, "%s/%s", dir, de->d_name);
        sop_open_file *f = &out[n];
        memset(f, 0, sizeof *f);
        ssize_t k = readlink(lp, f->path, sizeof f->path - 1);
        if (k <= 0 || f->path[0] != '/')
            continue; /* sockets, pipes, anon inodes */
        f->path[k] = '\0';
        struct stat st;
        if (stat(lp, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        f->pid = pid;
        f->fd = fd;
        f->size = st.st_size;
        f->pos = fd_pos(proc_root, pid, fd);
        f->pos0 = SOP_NA;
        n++;
    }
    closedir(d);
    return (int)n;
}

void sop__open_files_resolve(const char *proc_root, int pid, sop_open_file *files, size_t n)
{
    if (!n)
        return;
    char path[256];
    snprintf(path, sizeof path, "%s/%d/mountinfo", proc_root, pid);
    char *text = NULL;
    size_t len = 0;
    if (sop__read_file_at(AT_FDCWD, path, MOUNTINFO_MAX, &text, &len) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        size_t best = 0;
        sop_mount m, pick;
        memset(&pick, 0, sizeof pick);
        const char *line = text;
        for (int guard = 0; line && *line && guard < 100000; guard++) {
            const char *nl = strchr(line, '\n');
            char one[2048];
            size_t l = nl ? (size_t)(nl - line) : strlen(line);
            if (l >= sizeof one)
                l = sizeof one - 1;
            memcpy(one, line, l);
            one[l] = '\0';
            line = nl ? nl + 1 : NULL;
            if (sop__parse_mountinfo_line(one, &m) != 0)
                continue;
            size_t ml = strlen(m.mountpoint);
            bool under = strcmp(m.mountpoint, "/") == 0 ||
                         (strncmp(files[i].path, m.mountpoint, ml) == 0 &&
                          (files[i].path[ml] == '/' || files[i].path[ml] == '\0'));
            if (under && ml >= best) { /* later lines of the same point stack on top */
                best = ml;
                pick = m;
            }
        }
        if (!pick.fstype[0])
            continue;
        snprintf(files[i].mountpoint, sizeof files[i].mountpoint, "%s", pick.mountpoint);
        snprintf(files[i].fstype, sizeof files[i].fstype, "%s", pick.fstype);
        snprintf(files[i].source, sizeof files[i].source, "%s", pick.source);
        if (pick.major != 0)
            disk_of(pick.major, pick.minor, files[i].disk, sizeof files[i].disk);
    }
    free(text);
}

int sop__gpu_fds_scan(const char *proc_root, int pid, int *out, size_t cap)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%d/fd", proc_root, pid);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t n = 0;
    struct dirent *de;
    for (int guard = 0; n < cap && guard < MAX_FDS_SCANNED && (de = readdir(d)) != NULL; guard++) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char link[600], path[64];
        snprintf(link, sizeof link, "%s/%s", dir, de->d_name);
        ssize_t k = readlink(link, path, sizeof path - 1);
        if (k <= 0)
            continue;
        path[k] = '\0';
        if (sop__gpu_device_path(path))
            out[n++] = atoi(de->d_name);
    }
    closedir(d);
    return (int)n;
}
