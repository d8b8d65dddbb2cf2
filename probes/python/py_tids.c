/* py_tids.c — which OS thread a CPython thread state runs on, and what the kernel says of it:
 * a task's existence, state letter and comm under the target's /proc, the map of thread ids
 * between pid namespaces, and the search of a thread's stack for its thread state when the
 * runtime's own id is not usable. Part of the walk (py_walk_int.h); depends on procfs.c and
 * remote_mem.c. */
#include "cpython.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../procfs.h"
#include "py_layouts.h"
#include "py_walk_int.h"
#include "remote_mem.h"

/* The OS thread running a subinterpreter's borrowed thread state (3.8-3.12). There,
 * _xxsubinterpreters.run_string swaps the interpreter's first thread state into whichever
 * thread calls it, so that state's thread_id / native_thread_id still name the thread that
 * created the interpreter. The thread that runs it holds the state's address on its live C
 * stack (the evaluator's `tstate`): scan each sleeping task's stack from its stack pointer
 * (/proc/PID/task/TID/syscall) up, at most STACK_SCAN_BYTES, for that address. A task that
 * is running has no stack pointer there and is not scanned. Returns the one other task that
 * refers to it, else `claimed` if its stack does, else 0 (unknown). */
#define STACK_SCAN_BYTES (256u << 10)
#define STACK_SCAN_TASKS 256

/* A task that is running cannot be scanned: when nothing was found and some task could not
 * be scanned, look again a few times, 1 ms apart (bounded: STACK_SCAN_TRIES). */
#define STACK_SCAN_TRIES 5

bool sop__pywalk_task_exists(const walker *w, int tid)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%d/task/%d", w->proc_root, w->pid, tid);
    return access(path, F_OK) == 0;
}

bool sop__pywalk_in_other_pidns(const walker *w)
{
    char a[64] = "", b[64] = "", path[300];
    snprintf(path, sizeof path, "%s/%d/ns/pid", w->proc_root, w->pid);
    ssize_t na = readlink(path, a, sizeof a - 1);
    ssize_t nb = readlink("/proc/self/ns/pid", b, sizeof b - 1);
    return na > 0 && nb > 0 && strcmp(a, b) != 0;
}

size_t sop__pywalk_ns_tid_map(const walker *w, tid_pair *map, size_t cap)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%d/task", w->proc_root, w->pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while (n < cap && (de = readdir(d)) != NULL) {
        int tid = atoi(de->d_name);
        if (tid <= 0)
            continue;
        char sp[320], buf[2048];
        snprintf(sp, sizeof sp, "%s/%d/status", path, tid);
        if (sop__read_small_at(AT_FDCWD, sp, buf, sizeof buf) <= 0)
            continue;
        const char *l = strstr(buf, "\nNSpid:");
        if (!l)
            continue;
        const char *q = l + 8;
        int64_t last = SOP_NA, v;
        for (int k = 0; k < 32 && (v = sop__parse_i64(&q)) != SOP_NA; k++)
            last = v;
        if (last != SOP_NA && last > 0) {
            map[n].ns_tid = (int)last;
            map[n].tid = tid;
            n++;
        }
    }
    closedir(d);
    return n;
}

/* OS state letter of a thread from /proc/PID/task/TID/stat; '?' when unreadable. */
char sop__pywalk_task_state(const walker *w, int tid)
{
    char path[300], buf[512];
    snprintf(path, sizeof path, "%s/%d/task/%d/stat", w->proc_root, w->pid, tid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    if (n <= 0)
        return '?';
    char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ' || !rp[2])
        return '?';
    return rp[2];
}

/* The thread's name as the kernel has it (pthread_setname_np, prctl): comm, no newline. */
void sop__pywalk_task_comm(const walker *w, int tid, char *out, size_t cap)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%d/task/%d/comm", w->proc_root, w->pid, tid);
    long n = sop__read_small_at(AT_FDCWD, path, out, cap);
    if (n <= 0) {
        out[0] = '\0';
        return;
    }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
        n--;
    out[n] = '\0';
}

/* 1: the live stack of `tid` holds addr; 0: it does not; -1: not scannable (running, or
 * gone: no stack pointer in /proc/PID/task/TID/syscall). */
static int stack_refers_to(walker *w, int tid, uint64_t addr)
{
    char path[300], buf[512];
    snprintf(path, sizeof path, "%s/%d/task/%d/syscall", w->proc_root, w->pid, tid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, sizeof buf);
    if (n <= 0)
        return -1;
    buf[n < (long)sizeof buf ? n : (long)sizeof buf - 1] = '\0';
    /* "nr a1 a2 a3 a4 a5 a6 sp pc" while in a syscall; "running" or "-1 sp pc" otherwise */
    char *p = buf, *end;
    unsigned long long f[9];
    int nf = 0;
    while (nf < 9) {
        f[nf] = strtoull(p, &end, 0);
        if (end == p)
            break;
        nf++;
        p = end;
    }
    if (nf != 9 || (long long)f[0] < 0)
        return -1;
    uint64_t sp = f[7] & ~(uint64_t)7;
    uint64_t top = sp + STACK_SCAN_BYTES;
    /* Not past the mapping that holds sp (the next one up may be another thread's stack,
     * whose unused part holds stale values). */
    for (const char *m = w->maps; m && *m;) {
        char *e1, *e2;
        unsigned long long lo = strtoull(m, &e1, 16), hi = 0;
        if (*e1 == '-')
            hi = strtoull(e1 + 1, &e2, 16);
        if (sp >= lo && sp < hi) {
            if (hi < top)
                top = hi;
            break;
        }
        m = strchr(m, '\n');
        m = m ? m + 1 : NULL;
    }
    uint64_t page[512];
    for (uint64_t at = sp; at < top;) {
        uint64_t next = (at | 4095) + 1;
        size_t len = (size_t)(next - at);
        if (sop__rmem_read_direct(&w->mem, at, page, len) < 0)
            break; /* past the top of the stack mapping */
        for (size_t k = 0; k < len / 8; k++)
            if (page[k] == addr)
                return 1;
        at = next;
    }
    return 0;
}

int sop__pywalk_tid_from_stacks_once(walker *w, uint64_t tstate, int claimed, int *unscanned)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%d/task", w->proc_root, w->pid);
    DIR *d = opendir(path);
    *unscanned = 0;
    if (!d)
        return 0;
    struct dirent *de;
    int other = 0, nother = 0, ntasks = 0;
    bool claimed_refers = false;
    while ((de = readdir(d)) != NULL && ntasks < STACK_SCAN_TASKS) {
        int tid = atoi(de->d_name);
        if (tid <= 0)
            continue;
        ntasks++;
        int r = stack_refers_to(w, tid, tstate);
        if (r < 0)
            (*unscanned)++;
        if (r <= 0)
            continue;
        if (tid == claimed) {
            claimed_refers = true;
        } else {
            other = tid;
            nother++;
        }
    }
    closedir(d);
    if (nother == 1)
        return other;
    return nother == 0 && claimed_refers ? claimed : 0;
}

int sop__pywalk_tid_from_stacks(walker *w, uint64_t tstate, int claimed)
{
    int unscanned = 0, tid = 0;
    for (int k = 0; k < STACK_SCAN_TRIES; k++) {
        tid = sop__pywalk_tid_from_stacks_once(w, tstate, claimed, &unscanned);
        if (tid || !unscanned)
            break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return tid;
}
