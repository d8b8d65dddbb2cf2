/* test_sampler_files.c — mountinfo lines (real ones from this machine, an NFS, a FUSE and an
 * overlay line, escaped spaces, cut and garbage lines), filesystem kinds, and a real scan of this
 * process's open files resolved to their mount. Depends on engine/sample/sampler_files.h, t.h. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "sampler_files.h"
#include "t.h"

int main(void)
{
    sop_mount m;
    CHECK_EQ_I(sop__parse_mountinfo_line(
                   "1047 1046 254:0 / / rw,relatime master:1 - ext4 /dev/vda rw", &m),
               0);
    CHECK_EQ_S(m.mountpoint, "/");
    CHECK_EQ_S(m.fstype, "ext4");
    CHECK_EQ_S(m.source, "/dev/vda");
    CHECK_EQ_I(m.major, 254);
    CHECK_EQ_I(m.minor, 0);
    CHECK_EQ_I(sop__parse_mountinfo_line(
                   "88 30 0:45 / /mnt/data\\040set rw,relatime shared:40 - nfs4 srv:/export "
                   "rw,vers=4.2",
                   &m),
               0);
    CHECK_EQ_S(m.mountpoint, "/mnt/data set");
    CHECK_EQ_S(m.fstype, "nfs4");
    CHECK_EQ_S(sop__fs_kind(m.fstype), "network");
    CHECK_EQ_I(sop__parse_mountinfo_line("90 30 0:50 / /mnt/s3 rw - fuse.s3fs s3fs rw", &m), 0);
    CHECK_EQ_S(sop__fs_kind(m.fstype), "fuse");
    CHECK_EQ_I(
        sop__parse_mountinfo_line("500 400 0:60 / / rw - overlay overlay rw,lowerdir=/a", &m), 0);
    CHECK_EQ_S(sop__fs_kind(m.fstype), "overlay");
    CHECK_EQ_S(sop__fs_kind("tmpfs"), "memory");
    CHECK_EQ_S(sop__fs_kind("xfs"), "local");
    CHECK_EQ_I(sop__parse_mountinfo_line("91 30 0:51 / /x rw - tmpfs", &m), 0); /* no source */
    CHECK_EQ_S(m.source, "none");
    CHECK_EQ_I(sop__parse_mountinfo_line("1047 1046 254:0 / / rw,relatime", &m), -1); /* cut */
    CHECK_EQ_I(sop__parse_mountinfo_line("garbage", &m), -1);
    CHECK_EQ_I(sop__parse_mountinfo_line("", &m), -1);

    /* A real scan: a file of ours, opened and read from, found with its mount. */
    char path[] = "/var/tmp/sop_files_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK_EQ_I(write(fd, "0123456789", 10), 10);
    sop_open_file files[64];
    int n = sop__open_files_scan("/proc", getpid(), files, 64);
    CHECK(n >= 1);
    sop__open_files_resolve("/proc", getpid(), files, n > 0 ? (size_t)n : 0);
    int found = -1;
    for (int i = 0; i < n; i++)
        if (files[i].fd == fd)
            found = i;
    CHECK(found >= 0);
    if (found >= 0) {
        CHECK_EQ_S(files[found].path, path);
        CHECK_EQ_I(files[found].pos, 10);
        CHECK(files[found].fstype[0] != '\0');
        CHECK(files[found].mountpoint[0] == '/');
    }
    close(fd);
    unlink(path);
    return t_done();
}
