/* gpu_signs.c — signs of GPU use in a process tree from /proc alone: the device files its
 * processes hold open (/dev/nvidiaN, /dev/nvidiactl, /dev/nvidia-uvm; another vendor's
 * /dev/kfd, /dev/dri/renderD*), and a process's pids in the nested PID namespaces (NSpid), to
 * match NVML's host pids. Bounded reads through a proc-root dir fd. Depends on libc. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"
#include "na.h"

void sop__gpu_init(sop_gpu *g)
{
    memset(g, 0, sizeof *g);
    g->tree_mem_kb = SOP_NA;
    g->busy_pct = NAN;
    g->idle_frac = NAN;
}

bool sop__gpu_signs_any(const sop_gpu_signs *s)
{
    return s->nvidia_minors || s->nvidia_ctl || s->libcuda || s->other_vendor;
}

/* One fd link target: what it says about GPUs. */
static void classify(const char *t, sop_gpu_signs *out)
{
    if (strncmp(t, "/dev/nvidia", 11) == 0) {
        const char *r = t + 11;
        if (r[0] >= '0' && r[0] <= '9') {
            char *end;
            long n = strtol(r, &end, 10);
            if (*end == '\0' && n >= 0 && n < 32)
                out->nvidia_minors |= 1u << n;
            else
                out->nvidia_ctl = true;
        } else {
            out->nvidia_ctl = true; /* nvidiactl, nvidia-uvm, nvidia-modeset, nvidia-caps */
        }
        return;
    }
    if (strcmp(t, "/dev/kfd") == 0 || strncmp(t, "/dev/dri/renderD", 16) == 0) {
        if (!out->other_vendor)
            snprintf(out->other_node, sizeof out->other_node, "%s", t);
        out->other_vendor = true;
    }
}

static void signs_of(int proc_root_fd, int pid, size_t max_fds, sop_gpu_signs *out)
{
    char path[48];
    snprintf(path, sizeof path, "%d/fd", pid);
    int fd = openat(proc_root_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *e;
    size_t looked = 0;
    if (max_fds > SOP_GPU_FDS_ALL)
        max_fds = SOP_GPU_FDS_ALL;
    while ((e = readdir(d)) != NULL && looked < max_fds) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        looked++;
        char t[64];
        ssize_t n = readlinkat(fd, e->d_name, t, sizeof t - 1);
        if (n <= 0 || (size_t)n >= sizeof t - 1 || t[0] != '/' || strncmp(t, "/dev/", 5) != 0)
            continue;
        t[n] = '\0';
        classify(t, out);
    }
    closedir(d);
}

void sop__gpu_signs_read(int proc_root_fd, const int *pids, size_t npids, size_t max_fds,
                         sop_gpu_signs *out)
{
    for (size_t i = 0; i < npids && i < SOP_GPU_TREE_MAX; i++)
        signs_of(proc_root_fd, pids[i], max_fds, out);
}

size_t sop__gpu_nspid(int proc_root_fd, int pid, int64_t *out, size_t max)
{
    char path[48], buf[4096];
    snprintf(path, sizeof path, "%d/status", pid);
    int fd = openat(proc_root_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *l = strstr(buf, "\nNSpid:");
    if (!l)
        return 0;
    l += 7;
    size_t k = 0;
    while (k < max) {
        char *end;
        long v = strtol(l, &end, 10);
        if (end == l || v <= 0)
            break;
        out[k++] = v;
        l = end;
        if (*l == '\n' || *l == '\0')
            break;
    }
    return k;
}
