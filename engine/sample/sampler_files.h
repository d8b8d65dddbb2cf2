/* sampler_files.h — open regular files of a process and what is behind them (mount, filesystem
 * kind, disk), for the window's IO evidence (engine/sample/sampler_files.c). Depends on libc. */
#ifndef SOP_SAMPLER_FILES_H
#define SOP_SAMPLER_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "missing.h"

typedef struct {
    char mountpoint[512];
    char fstype[64];
    char source[256];
    unsigned major, minor;
} sop_mount;

typedef struct {
    int pid, fd;
    char path[512];
    int64_t size, pos, pos0; /* pos0: at the window's start (SOP_NA when not open then) */
    char mountpoint[512], fstype[64], source[256], disk[64];
} sop_open_file;

/* Pure: one line of /proc/PID/mountinfo. 0 or -1 when malformed. */
int sop__parse_mountinfo_line(const char *line, sop_mount *out);
/* "local" "network" "fuse" "overlay" "memory" "virtual" for a filesystem type. */
const char *sop__fs_kind(const char *fstype);
/* Regular files open by pid (at most cap). Returns the count or -1. */
int sop__open_files_scan(const char *proc_root, int pid, sop_open_file *out, size_t cap);
/* The fds of pid that are GPU device files (gpu_wait.h: /dev/nvidia*, /dev/kfd,
 * /dev/dri/renderD*), at most cap. Returns the count or -1. */
int sop__gpu_fds_scan(const char *proc_root, int pid, int *out, size_t cap);
/* Fill mount, filesystem and disk of each file from pid's mountinfo. */
void sop__open_files_resolve(const char *proc_root, int pid, sop_open_file *files, size_t n);

#endif
