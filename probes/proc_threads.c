/* proc_threads.c — every thread of a process from /proc/PID/task/: its stat (name, state,
 * CPU ticks, last CPU), schedstat (run and run-queue wait) and the context-switch counts of
 * its status, its io. Bounded by SOP_THREADS_MAX; a thread that exits mid-scan is skipped.
 * Depends on the proc_*.c parsers, proc_kv.c, procfs.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "proc_kv.h"

void sop__thread_list_free(sop_thread_list *l)
{
    if (!l)
        return;
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static bool gone(long rc)
{
    return rc == -ENOENT || rc == -ESRCH;
}

/* One thread; returns 0, 1 when the thread is gone, or -errno of the stat read. */
static int read_thread(int taskfd, int tid, sop_thread *t, sop_missing *missing)
{
    char path[32], buf[8192];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->cpu_pct = t->wait_pct = t->majflt_per_s = NAN; /* window rates: sop__threads_rates */
    t->read_bytes_per_s = t->rchar_per_s = t->syscr_per_s = NAN;
    t->voluntary_ctxt_switches = t->nonvoluntary_ctxt_switches = SOP_NA;
    sop__parse_schedstat(NULL, &t->sched);
    sop__parse_io(NULL, &t->io);

    snprintf(path, sizeof path, "%d/stat", tid);
    long n = sop__read_seq_at(taskfd, path, buf, sizeof buf);
    if (gone(n) || n == 0)
        return 1;
    if (n < 0)
        return (int)n;
    if (sop__parse_stat(buf, &t->stat) != 0) {
        sop__missing_add(missing, "threads", "task stat: unparsable");
        return -EINVAL;
    }
    snprintf(t->name, sizeof t->name, "%s", t->stat.comm); /* stat's comm is task/TID/comm */

    if (t->stat.state != 'R' && t->stat.state != 'Z' && t->stat.state != 'X') {
        /* what it sleeps in: another thread (a futex) or the outside (wait_class.c); needs
         * ptrace access, an unreadable one stays NONE */
        snprintf(path, sizeof path, "%d/syscall", tid);
        n = sop__read_small_at(taskfd, path, buf, 256);
        unsigned long long args[6];
        if (n > 0)
            t->wait = sop__wait_classify(sop__syscall_parse(buf, args), args);
    }

    snprintf(path, sizeof path, "%d/schedstat", tid);
    int src = sop__read_schedstat_at(taskfd, path, &t->sched);
    if (src != 0 && src != -EINVAL && !gone(src)) /* an unparsable one stays absent */
        sop__missing_add(missing, "threads", "task schedstat: %s",
                         src == -ENODATA ? "empty" : sop__strerror(-src));

    /* its own IO: a thread reading mapped files through faults has read_bytes, few syscr */
    snprintf(path, sizeof path, "%d/io", tid);
    n = sop__read_seq_at(taskfd, path, buf, sizeof buf);
    if (n > 0 && sop__parse_io(buf, &t->io) == 0)
        t->have_io = true;

    snprintf(path, sizeof path, "%d/status", tid);
    n = sop__read_seq_at(taskfd, path, buf, sizeof buf);
    if (n > 0) {
        const sop_kv_slot slots[] = {
            {"voluntary_ctxt_switches", &t->voluntary_ctxt_switches},
            {"nonvoluntary_ctxt_switches", &t->nonvoluntary_ctxt_switches},
        };
        sop__kv_scan(buf, slots, 2);
    } else if (!gone(n)) {
        sop__missing_add(missing, "threads", "task status: %s",
                         n < 0 ? sop__strerror((int)-n) : "empty");
    }
    return 0;
}

int sop__threads_collect(int proc_dirfd, sop_thread_list *out, sop_missing *missing)
{
    out->items = NULL;
    out->n = 0;
    int taskfd = openat(proc_dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (taskfd < 0) {
        int e = errno;
        if (e != ENOENT && e != ESRCH)
            sop__missing_add(missing, "threads", "task: %s", sop__strerror(e));
        return -e;
    }
    int *tids = NULL;
    long nt = sop__list_numeric_at(taskfd, ".", &tids, SOP_THREADS_MAX);
    if (nt < 0) {
        close(taskfd);
        if (!gone(nt))
            sop__missing_add(missing, "threads", "task: %s", sop__strerror((int)-nt));
        return (int)nt;
    }
    if (nt == SOP_THREADS_MAX)
        sop__missing_add(missing, "threads", "more than %d threads: the rest not read",
                         SOP_THREADS_MAX);
    if (nt > 0) {
        out->items = malloc((size_t)nt * sizeof *out->items);
        if (!out->items) {
            free(tids);
            close(taskfd);
            return -ENOMEM;
        }
    }
    int last_err = -ESRCH;
    for (long i = 0; i < nt; i++) {
        int rc = read_thread(taskfd, tids[i], &out->items[out->n], missing);
        if (rc == 0)
            out->n++;
        else if (rc < 0) {
            last_err = rc;
            if (rc != -EINVAL)
                sop__missing_add(missing, "threads", "task stat: %s", sop__strerror(-rc));
        }
    }
    free(tids);
    close(taskfd);
    if (out->n == 0) {
        sop__thread_list_free(out);
        return last_err;
    }
    return 0;
}
