/* proc_tree.h — scheduling of a whole process tree over a window: for the target and every
 * descendant, each thread's CPU time and run-queue wait from /proc/PID/task/TID/schedstat,
 * polled during the window so threads (and processes) that come and go are counted and their
 * time kept. The accounting is pure (observe/end_poll) so tests feed it numbers; the reader
 * takes a /proc directory fd. Depends on proc.h (descendants, schedstat parser). */
#ifndef SOP_PROC_TREE_H
#define SOP_PROC_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "missing.h"
#include "proc.h"

#define SOP_TREE_THREADS_MAX 8192
#define SOP_TREE_PROCS_MAX 64

typedef struct {
    int pid, tid;
    char name[16];
    int64_t base_run_ns, base_wait_ns; /* at first sight; 0 for a thread born in the window */
    int64_t last_run_ns, last_wait_ns; /* at the latest sight */
    bool at_start;                     /* seen by the first poll */
    bool alive;                        /* seen by the latest poll */
} sop_tree_thread;

typedef struct {
    int pid, ppid;
    char comm[16];
    char cmdline[256]; /* NULs as spaces, cut */
    /* thread-pool libraries mapped (kinds blas, openmp, torch), read by the final poll */
    struct {
        char kind[16], name[32];
    } libs[6];
    size_t nlibs;
    bool at_start, alive;
} sop_tree_proc;

typedef struct {
    sop_tree_thread *threads;
    size_t nthreads, cap;
    sop_tree_proc procs[SOP_TREE_PROCS_MAX];
    size_t nprocs;
    int polls;
    double first_poll_ms, last_poll_ms; /* set by the caller: the window the times cover */
    bool dropped;      /* more threads or processes than the bounds: some not counted */
    bool no_schedstat; /* schedstat never readable: no run-queue wait */
} sop_tree_sched;

/* ---- pure accounting ---- */
/* A sighting of (pid, tid) with its cumulative schedstat. The first poll sets the baseline;
 * a thread first seen later was born in the window, so all its time counts. -ENOMEM/-E2BIG. */
int sop__tree_observe(sop_tree_sched *t, int pid, int tid, const char *name, int64_t run_ns,
                      int64_t wait_ns);
/* A sighting of process pid (parent ppid); returns its slot or NULL when full. */
sop_tree_proc *sop__tree_observe_proc(sop_tree_sched *t, int pid, int ppid, const char *comm);
/* Start a poll (marks everything not alive until seen again) / finish it. */
void sop__tree_begin_poll(sop_tree_sched *t);
void sop__tree_end_poll(sop_tree_sched *t);
/* The window's CPU and run-queue time of one thread, seconds. */
double sop__tree_thread_cpu_s(const sop_tree_thread *th);
double sop__tree_thread_wait_s(const sop_tree_thread *th);

/* ---- reader ---- */
/* One poll of pid and its descendants under proc_root_fd. `final` also reads each live
 * process's cmdline and mapped pool libraries (pid's from root_maps when given: its maps
 * text read a moment ago; NULL reads it). 0 or -errno (the target gone: -ESRCH). */
int sop__tree_poll(int proc_root_fd, int pid, sop_tree_sched *t, bool final, const char *root_maps,
                   sop_missing *missing);
void sop__tree_free(sop_tree_sched *t);

#endif
