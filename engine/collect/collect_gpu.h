/* collect_gpu.h — the GPU part of a collection window (engine/collect/collect_gpu.c), kept out of
 * collect.c: decide from the tree's signs whether to load NVML, read utilisation at the
 * window's polls, and the readings of the window's end (probes/gpu_nvml.c). */
#ifndef SOP_COLLECT_GPU_H
#define SOP_COLLECT_GPU_H

#include <stdbool.h>

#include "../probes/gpu.h"
#include "../probes/missing.h"
#include "../probes/proc.h"

typedef struct {
    sop_nvml *nvml;             /* NULL: no sign of GPU use, or NVML not loaded */
    sop_gpu_signs signs;        /* at the window's start */
    char why[224];              /* why NVML was not loaded, when there were signs */
    int pids[SOP_GPU_TREE_MAX]; /* the tree (sop__gpu_window_start_pid only) */
    size_t npids;
} sop_gpu_window;

/* At the window's start: the tree is p and its descendants `ch` (NULL when not read). */
void sop__gpu_window_start(sop_gpu_window *w, int proc_root_fd, const sop_proc *p,
                           const sop_child_list *ch);
/* The same for `sopctl record`: the tree is pid and its descendants read here; signs from
 * the open device files only. */
void sop__gpu_window_start_pid(sop_gpu_window *w, int proc_root_fd, int pid);
/* Its end: the readings' means and the busy lane (sop__gpu_window_series). */
void sop__gpu_window_end_pid(sop_gpu_window *w, int proc_root_fd);
/* A poll of the window (cheap; nothing when NVML is not loaded). */
void sop__gpu_window_tick(sop_gpu_window *w);
/* At the window's end: the ev.gpu readings (malloc'd; NULL when none) or a missing entry when
 * the tree shows signs of GPU use that could not be read. */
sop_gpu *sop__gpu_window_end(sop_gpu_window *w, int proc_root_fd, const sop_proc *p,
                             const sop_child_list *ch, sop_missing *missing);
/* The busy lane of the window (after end; NULL when none). */
const sop_gpu_series *sop__gpu_window_series(const sop_gpu_window *w);
void sop__gpu_window_free(sop_gpu_window *w);

#endif
