/* heap_stop.c — stop a whole process for an exact heap census: PTRACE_SEIZE and
 * PTRACE_INTERRUPT every task of /proc/PID/task (twice over, for threads started meanwhile),
 * wait until each is in its ptrace stop, and detach them all afterwards. A failure half way
 * detaches what was stopped; if sopctl dies while they are stopped, the kernel detaches
 * them (a seized tracee resumes when its tracer exits). Depends on libc. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "../procfs.h"
#include "heap_census.h"
#include "ptrace_wait.h"

#define MAX_TASKS 16384
/* How long one task may take to reach its stop (it is running kernel code meanwhile). */
#define STOP_WAIT_MS 2000

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool have(const sop_stopped *s, int tid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->tids[i] == tid)
            return true;
    return false;
}

/* Is task tid (of the task directory `taskdir`) a zombie? */
static bool zombie_task(const char *taskdir, int tid)
{
    char path[400], buf[512];
    snprintf(path, sizeof path, "%s/%d/stat", taskdir, tid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    const char *p = n > 0 ? strrchr(buf, ')') : NULL;
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Seize and interrupt one task, then wait for its stop. 0, -ESRCH (gone: skip) or -errno. */
static int stop_task(int tid, int *sig)
{
    *sig = 0;
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
        return -errno;
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
        int e = errno;
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return -e;
    }
    sop_stop_kind kind;
    int r = sop__ptrace_wait_stop(tid, STOP_WAIT_MS, &kind, sig);
    if (r < 0) {
        ptrace(PTRACE_DETACH, tid, NULL, NULL); /* resumed on every path */
        return r;
    }
    /* The interrupt's stop, or a signal-delivery stop: either way the task is still. A signal
     * it was about to receive is passed on at detach. */
    return 0;
}

int sop__stop_process(int pid, const char *proc_root, sop_stopped *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->tids = calloc(MAX_TASKS, sizeof *s->tids);
    s->sigs = calloc(MAX_TASKS, sizeof *s->sigs);
    if (!s->tids || !s->sigs) {
        free(s->tids);
        free(s->sigs);
        s->tids = s->sigs = NULL;
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->t0_ms = now_ms();
    char path[300];
    snprintf(path, sizeof path, "%s/%d/task", proc_root ? proc_root : "/proc", pid);
    for (int pass = 0; pass < 2; pass++) {
        DIR *d = opendir(path);
        if (!d) {
            int e = errno;
            snprintf(err, errlen, "%s: %s", path, strerror(e));
            sop__resume_process(s);
            return e == ENOENT ? -ESRCH : -e;
        }
        struct dirent *de;
        size_t before = s->n;
        while ((de = readdir(d)) != NULL && s->n < MAX_TASKS) {
            int tid = atoi(de->d_name);
            if (tid <= 0 || have(s, tid))
                continue;
            if (zombie_task(path, tid))
                continue; /* an exited thread (a zombie leader): nothing runs there to stop */
            int sig = 0;
            int r = stop_task(tid, &sig);
            if (r == -ESRCH)
                continue; /* exited meanwhile */
            if (r < 0) {
                closedir(d);
                snprintf(err, errlen, "ptrace of task %d: %s", tid, strerror(-r));
                sop__resume_process(s);
                return r;
            }
            s->sigs[s->n] = sig;
            s->tids[s->n++] = tid;
        }
        closedir(d);
        if (pass == 1 || s->n == before)
            break;
    }
    if (s->n == 0) {
        snprintf(err, errlen, "no task of %d could be stopped", pid);
        sop__resume_process(s);
        return -ESRCH;
    }
    return 0;
}

double sop__resume_process(sop_stopped *s)
{
    for (size_t i = 0; i < s->n; i++)
        ptrace(PTRACE_DETACH, s->tids[i], NULL, (void *)(intptr_t)s->sigs[i]);
    double paused = s->n ? now_ms() - s->t0_ms : 0;
    free(s->tids);
    free(s->sigs);
    s->tids = s->sigs = NULL;
    s->n = 0;
    return paused;
}
