/* proc_tree.c — whole-tree scheduling over a window (see proc_tree.h): each poll lists the
 * target and its descendants, every thread's task/TID/schedstat (and, at first sight, its
 * comm); the accounting keeps each thread's time from its first to its latest sight, so a
 * thread that exits mid-window keeps what it ran until the poll before. The final poll also
 * reads each process's cmdline and which thread-pool libraries it maps.
 * Depends on proc.h (descendants, schedstat and maps parsers), procfs.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_tree.h"

void sop__tree_free(sop_tree_sched *t)
{
    if (!t)
        return;
    free(t->threads);
    t->threads = NULL;
    t->nthreads = t->cap = 0;
}

static sop_tree_thread *find_thread(sop_tree_sched *t, int pid, int tid)
{
    /* newest first: a poll sees threads in the order it saw them last time */
    for (size_t i = t->nthreads; i-- > 0;)
        if (t->threads[i].tid == tid && t->threads[i].pid == pid)
            return &t->threads[i];
    return NULL;
}

int sop__tree_observe(sop_tree_sched *t, int pid, int tid, const char *name, int64_t run_ns,
                      int64_t wait_ns)
{
    if (run_ns < 0 || wait_ns < 0)
        return -EINVAL;
    sop_tree_thread *th = find_thread(t, pid, tid);
    if (th) {
        /* counters only grow: a smaller value is another thread that got the same tid */
        if (run_ns < th->last_run_ns || wait_ns < th->last_wait_ns) {
            th->base_run_ns -= th->last_run_ns;
            th->base_wait_ns -= th->last_wait_ns;
        }
        th->last_run_ns = run_ns;
        th->last_wait_ns = wait_ns;
        th->alive = true;
        return 0;
    }
    if (t->nthreads >= SOP_TREE_THREADS_MAX) {
        t->dropped = true;
        return -E2BIG;
    }
    if (t->nthreads == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        sop_tree_thread *nv = realloc(t->threads, ncap * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        t->threads = nv;
        t->cap = ncap;
    }
    th = &t->threads[t->nthreads++];
    memset(th, 0, sizeof *th);
    th->pid = pid;
    th->tid = tid;
    snprintf(th->name, sizeof th->name, "%s", name ? name : "");
    th->at_start = t->polls == 0;
    /* seen by the first poll: time before the window is not the window's. Seen later: born
     * in the window (or its process was), everything it ran is the window's. */
    th->base_run_ns = th->at_start ? run_ns : 0;
    th->base_wait_ns = th->at_start ? wait_ns : 0;
    th->last_run_ns = run_ns;
    th->last_wait_ns = wait_ns;
    th->alive = true;
    return 0;
}

sop_tree_proc *sop__tree_observe_proc(sop_tree_sched *t, int pid, int ppid, const char *comm)
{
    for (size_t i = 0; i < t->nprocs; i++)
        if (t->procs[i].pid == pid) {
            t->procs[i].alive = true;
            return &t->procs[i];
        }
    if (t->nprocs >= SOP_TREE_PROCS_MAX) {
        t->dropped = true;
        return NULL;
    }
    sop_tree_proc *p = &t->procs[t->nprocs++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->ppid = ppid;
    snprintf(p->comm, sizeof p->comm, "%s", comm ? comm : "");
    p->at_start = t->polls == 0;
    p->alive = true;
    return p;
}

void sop__tree_begin_poll(sop_tree_sched *t)
{
    for (size_t i = 0; i < t->nthreads; i++)
        t->threads[i].alive = false;
    for (size_t i = 0; i < t->nprocs; i++)
        t->procs[i].alive = false;
}

void sop__tree_end_poll(sop_tree_sched *t)
{
    t->polls++;
}

double sop__tree_thread_cpu_s(const sop_tree_thread *th)
{
    return (double)(th->last_run_ns - th->base_run_ns) / 1e9;
}

double sop__tree_thread_wait_s(const sop_tree_thread *th)
{
    return (double)(th->last_wait_ns - th->base_wait_ns) / 1e9;
}

/* comm of a thread or process: "name\n" */
static void read_comm(int dirfd, const char *path, char *out, size_t cap)
{
    char buf[64];
    out[0] = '\0';
    long n = sop__read_small_at(dirfd, path, buf, sizeof buf);
    if (n <= 0)
        return;
    buf[n < (long)sizeof buf ? n : (long)sizeof buf - 1] = '\0';
    char *nl = strchr(buf, '\n');
    if (nl)
        *nl = '\0';
    size_t len = strlen(buf);
    if (len >= cap)
        len = cap - 1; /* comm is at most 15 bytes; a longer read is cut, not overrun */
    memcpy(out, buf, len);
    out[len] = '\0';
}

/* maps: the process's maps text when the caller has it (the target's, from the collection's
 * snapshot), else NULL: read here. */
static void read_final(int pfd, sop_tree_proc *p, const char *maps)
{
    char buf[1024];
    long n = sop__read_small_at(pfd, "cmdline", buf, sizeof buf);
    if (n >= 0)
        sop__parse_cmdline(buf, (size_t)n, p->cmdline, sizeof p->cmdline);
    char *own = NULL;
    size_t len = 0;
    p->nlibs = 0;
    if ((maps && *maps) || sop__read_file_at(pfd, "maps", SOP_MAPS_MAX_BYTES, &own, &len) == 0) {
        if (!maps || !*maps)
            maps = own;
        sop_libs *libs = malloc(sizeof *libs);
        if (libs && sop__parse_maps(maps, libs) == 0) {
            for (size_t i = 0; i < libs->n && p->nlibs < sizeof p->libs / sizeof p->libs[0]; i++) {
                const sop_lib *l = &libs->libs[i];
                if (strcmp(l->kind, "blas") && strcmp(l->kind, "openmp") &&
                    strcmp(l->kind, "torch"))
                    continue;
                snprintf(p->libs[p->nlibs].kind, sizeof p->libs[0].kind, "%s", l->kind);
                snprintf(p->libs[p->nlibs].name, sizeof p->libs[0].name, "%s", l->name);
                p->nlibs++;
            }
        }
        free(libs);
    }
    free(own);
}

/* One process: its threads' schedstat. Returns 0, or -ESRCH when it is gone. */
static int poll_proc(int rootfd, int pid, int ppid, sop_tree_sched *t, bool final, const char *maps,
                     sop_missing *missing)
{
    char path[32];
    snprintf(path, sizeof path, "%d", pid);
    int pfd = openat(rootfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return -ESRCH;
    int *tids = NULL;
    long nt = sop__list_numeric_at(pfd, "task", &tids, SOP_THREADS_MAX);
    if (nt <= 0) {
        close(pfd);
        free(tids);
        return -ESRCH;
    }
    char comm[16];
    read_comm(pfd, "comm", comm, sizeof comm);
    sop_tree_proc *p = sop__tree_observe_proc(t, pid, ppid, comm);
    if (p && final)
        read_final(pfd, p, maps);
    char name[16];
    for (long i = 0; i < nt; i++) {
        snprintf(path, sizeof path, "task/%d/schedstat", tids[i]);
        sop_schedstat ss;
        if (sop__read_schedstat_at(pfd, path, &ss) != 0)
            continue; /* gone between the listing and the read, or no schedstat */
        t->no_schedstat = false;
        name[0] = '\0';
        if (!find_thread(t, pid, tids[i])) {
            snprintf(path, sizeof path, "task/%d/comm", tids[i]);
            read_comm(pfd, path, name, sizeof name);
        }
        if (sop__tree_observe(t, pid, tids[i], name, ss.run_ns, ss.wait_ns) == -E2BIG &&
            !t->dropped)
            sop__missing_add(missing, "sched",
                             "more than %d threads in the tree: the rest not "
                             "counted",
                             SOP_TREE_THREADS_MAX);
    }
    free(tids);
    close(pfd);
    return 0;
}

int sop__tree_poll(int proc_root_fd, int pid, sop_tree_sched *t, bool final, const char *root_maps,
                   sop_missing *missing)
{
    int pids[SOP_TREE_PROCS_MAX], ppids[SOP_TREE_PROCS_MAX];
    char path[32];
    snprintf(path, sizeof path, "%d/task", pid);
    if (faccessat(proc_root_fd, path, F_OK, 0) != 0)
        return -ESRCH; /* the target is gone: what was seen stays as it was */
    if (t->polls == 0)
        t->no_schedstat = true; /* until one is read */
    sop__tree_begin_poll(t);
    int rc = poll_proc(proc_root_fd, pid, 0, t, final, root_maps, missing);
    if (rc < 0) {
        sop__tree_end_poll(t);
        return rc;
    }
    long n = sop__descendants(proc_root_fd, pid, pids, ppids, SOP_TREE_PROCS_MAX - 1, missing);
    for (long i = 0; i < n; i++)
        poll_proc(proc_root_fd, pids[i], ppids[i], t, final, NULL, missing);
    sop__tree_end_poll(t);
    return 0;
}
