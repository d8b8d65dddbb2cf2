/* proc_children.c — every descendant of a process, breadth first, from
 * /proc/PID/task/TID/children (children of any thread count), bounded by SOP_CHILDREN_MAX and
 * depth 4; each with its stat, status, smaps_rollup, io, cmdline and allow-listed environ.
 * Kernels without CONFIG_PROC_CHILDREN fall back to one scan of the ppids under /proc.
 * Depends on the proc_*.c parsers, proc_dir.c, procfs.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

#define CHILDREN_DEPTH_MAX 4
#define CHILD_ENVIRON_MAX_BYTES (256u << 10)
#define PROC_SCAN_MAX (1u << 20)
/* the queue holds the target, SOP_CHILDREN_MAX descendants and one more to tell "too many" */
#define QUEUE_MAX (SOP_CHILDREN_MAX + 2)

void sop__child_list_free(sop_child_list *l)
{
    if (!l)
        return;
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

typedef struct {
    int pid, ppid, depth;
} node;

typedef struct {
    node *v;
    size_t n, cap;
} node_list;

static bool has_pid(const node_list *l, int pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].pid == pid)
            return true;
    return false;
}

static int push(node_list *l, int pid, int ppid, int depth)
{
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        node *nv = realloc(l->v, ncap * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        l->v = nv;
        l->cap = ncap;
    }
    l->v[l->n++] = (node){pid, ppid, depth};
    return 0;
}

/* Add the pids listed in a "children" file ("12 34 \n") to the queue. */
static void add_listed(node_list *q, const char *text, int ppid, int depth, int target)
{
    const char *p = text;
    while (q->n < QUEUE_MAX) {
        int64_t v = sop__parse_i64(&p);
        if (v == SOP_NA || (*p != ' ' && *p != '\n'))
            break; /* end, or a number cut off at the buffer's end */
        if (v > 0 && v <= INT32_MAX && v != target && !has_pid(q, (int)v))
            push(q, (int)v, ppid, depth);
    }
}

/* Children of `pid` via its threads' children files. Returns 0, -ENOENT when the kernel has
 * no children files, or another -errno. */
static int expand(int rootfd, int pid, int depth, node_list *q, int target)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "%d/task", pid);
    int *tids = NULL;
    long nt = sop__list_numeric_at(rootfd, path, &tids, SOP_THREADS_MAX);
    if (nt < 0)
        return nt == -ENOENT ? -ESRCH : (int)nt; /* the process itself is gone */
    int rc = 0;
    for (long i = 0; i < nt && q->n < QUEUE_MAX; i++) {
        snprintf(path, sizeof path, "%d/task/%d/children", pid, tids[i]);
        long n = sop__read_seq_at(rootfd, path, buf, sizeof buf);
        if (n == -ENOENT && i == 0 && tids[i] == pid) {
            rc = -ENOENT; /* main thread present but no children file: no CONFIG_PROC_CHILDREN */
            break;
        }
        if (n > 0)
            add_listed(q, buf, pid, depth, target);
    }
    free(tids);
    return rc;
}

/* Fallback: one pass over /proc/[pid]/stat for the ppids, then the same breadth-first walk. */
static int scan_ppids(int rootfd, int target, node_list *q)
{
    int *pids = NULL;
    long np = sop__list_numeric_at(rootfd, ".", &pids, PROC_SCAN_MAX);
    if (np < 0)
        return (int)np;
    int *ppids = malloc((size_t)(np ? np : 1) * sizeof *ppids);
    if (!ppids) {
        free(pids);
        return -ENOMEM;
    }
    char path[32], buf[1024];
    for (long i = 0; i < np; i++) {
        ppids[i] = -1;
        snprintf(path, sizeof path, "%d/stat", pids[i]);
        sop_stat st;
        if (sop__read_small_at(rootfd, path, buf, sizeof buf) > 0 && sop__parse_stat(buf, &st) == 0)
            ppids[i] = st.ppid;
    }
    for (size_t head = 0; head < q->n; head++) {
        node cur = q->v[head];
        if (cur.depth >= CHILDREN_DEPTH_MAX)
            continue;
        for (long i = 0; i < np && q->n < QUEUE_MAX; i++)
            if (ppids[i] == cur.pid && pids[i] != target && !has_pid(q, pids[i]))
                push(q, pids[i], cur.pid, cur.depth + 1);
    }
    free(ppids);
    free(pids);
    return 0;
}

static void child_miss(sop_missing *m, int dfd, const char *file, long rc)
{
    if (rc == -ESRCH || (rc == -ENOENT && faccessat(dfd, "stat", R_OK, 0) != 0))
        return; /* the child exited while we read it: nothing is missing */
    sop__missing_add(m, "children", "%s: %s", file, rc < 0 ? sop__strerror((int)-rc) : "empty");
}

/* smaps: also read smaps_rollup (a page-table walk: 0.2 ms for a small Python, 7 ms for one
 * with torch loaded). */
static bool child_read(int rootfd, int pid, int ppid, int depth, bool smaps, sop_child *c,
                       sop_missing *m)
{
    /* All but the environment's variables (14 KiB of the 16): only the n it fills are read. */
    memset(c, 0, offsetof(sop_child, env));
    c->env.n = 0;
    memset((char *)c + offsetof(sop_child, env) + sizeof c->env, 0,
           sizeof *c - offsetof(sop_child, env) - sizeof c->env);
    c->pid = pid;
    c->ppid = ppid;
    c->depth = depth;
    c->cpu_pct = c->read_bytes_per_s = c->rchar_per_s = c->start_time_s = NAN;
    sop__parse_stat(NULL, &c->stat);
    sop__parse_status(NULL, &c->status);
    sop__parse_smaps_rollup(NULL, &c->smaps);
    sop__parse_io(NULL, &c->io);

    char path[24];
    snprintf(path, sizeof path, "%d", pid);
    int dfd = openat(rootfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return false;
    char buf[8192];
    long n = sop__read_seq_at(dfd, "stat", buf, sizeof buf);
    if (n <= 0 || sop__parse_stat(buf, &c->stat) != 0) {
        close(dfd);
        return false;
    }
    double btime = sop__proc_btime_s();
    if (c->stat.starttime_ticks != SOP_NA && !isnan(btime))
        c->start_time_s = btime + (double)c->stat.starttime_ticks / sop__proc_ticks_per_s();
    n = sop__read_seq_at(dfd, "status", buf, sizeof buf);
    if (n <= 0 || sop__parse_status(buf, &c->status) != 0)
        child_miss(m, dfd, "status", n);
    n = smaps ? sop__read_seq_at(dfd, "smaps_rollup", buf, sizeof buf) : 0;
    if (n > 0 && sop__parse_smaps_rollup(buf, &c->smaps) == 0)
        c->have_smaps = true;
    else if (smaps && c->stat.state != 'Z')
        child_miss(m, dfd, "smaps_rollup", n);
    n = sop__read_seq_at(dfd, "io", buf, sizeof buf);
    if (n <= 0 || sop__parse_io(buf, &c->io) != 0)
        child_miss(m, dfd, "io", n);
    n = sop__read_small_at(dfd, "cmdline", buf, sizeof buf);
    if (n >= 0)
        sop__parse_cmdline(buf, (size_t)n, c->cmdline, sizeof c->cmdline);
    else
        child_miss(m, dfd, "cmdline", n);
    char *env = NULL;
    size_t elen = 0;
    int rc = sop__read_file_at(dfd, "environ", CHILD_ENVIRON_MAX_BYTES, &env, &elen);
    if (rc == 0)
        sop__parse_environ(env, elen, &c->env);
    else
        child_miss(m, dfd, "environ", rc);
    free(env);
    close(dfd);
    return true;
}

bool sop__child_read(int rootfd, int pid, int ppid, int depth, sop_child *c, sop_missing *m)
{
    return child_read(rootfd, pid, ppid, depth, true, c, m);
}

/* The target's children as its census read them (each thread's children file, in order), so
 * that the walk does not read those files again; ok: the files were there. */
typedef struct {
    int pids[QUEUE_MAX];
    size_t n;
    bool ok;
} root_kids;

/* Breadth-first walk from pid: q ends holding pid (index 0) and its descendants. rk (may be
 * NULL): pid's own children, read already. */
static int walk(int proc_root_fd, int pid, node_list *q, sop_missing *missing, const root_kids *rk)
{
    if (push(q, pid, 0, 0) != 0)
        return -ENOMEM;
    int rc = 0;
    for (size_t head = 0; head < q->n && q->n < QUEUE_MAX; head++) {
        node cur = q->v[head];
        if (cur.depth >= CHILDREN_DEPTH_MAX)
            continue;
        if (head == 0 && rk && rk->ok) {
            for (size_t i = 0; i < rk->n && q->n < QUEUE_MAX; i++)
                if (!has_pid(q, rk->pids[i]) && push(q, rk->pids[i], pid, 1) != 0)
                    return -ENOMEM;
            continue;
        }
        int e = expand(proc_root_fd, cur.pid, cur.depth + 1, q, pid);
        if (e == -ENOENT) { /* no children files on this kernel */
            q->n = 1;
            e = scan_ppids(proc_root_fd, pid, q);
            if (e < 0)
                sop__missing_add(missing, "children", "scan of /proc: %s", sop__strerror(-e));
            break;
        }
        if (head == 0 && e < 0) {
            rc = e; /* the target itself */
            if (e != -ESRCH)
                sop__missing_add(missing, "children", "task: %s", sop__strerror(-e));
            break;
        }
    }
    return rc;
}

long sop__descendants(int proc_root_fd, int pid, int *pids, int *ppids, size_t cap,
                      sop_missing *missing)
{
    node_list q = {0};
    int rc = walk(proc_root_fd, pid, &q, missing, NULL);
    if (rc < 0 && q.n <= 1) {
        free(q.v);
        return rc;
    }
    size_t n = 0;
    for (size_t i = 1; i < q.n && n < cap; i++, n++) {
        pids[n] = q.v[i].pid;
        ppids[n] = q.v[i].ppid;
    }
    free(q.v);
    return (long)n;
}

/* Every child of pid (any thread's children file) and the zombies among them, whatever their
 * number (a zombie flood outgrows the bounded walk): out->direct, out->zombies; the first of
 * them (as many as the walk keeps) into rk. */
static void census(int rootfd, int pid, sop_child_list *out, root_kids *rk)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "%d/task", pid);
    int *tids = NULL;
    long nt = sop__list_numeric_at(rootfd, path, &tids, SOP_THREADS_MAX);
    if (nt < 0)
        return;
    int64_t direct = 0, zombies = 0;
    bool ok = false;
    for (long i = 0; i < nt && direct < SOP_CENSUS_MAX; i++) {
        snprintf(path, sizeof path, "%d/task/%d/children", pid, tids[i]);
        char *text = NULL;
        size_t len = 0;
        if (sop__read_file_at(rootfd, path, 8u * SOP_CENSUS_MAX, &text, &len) != 0)
            continue;
        ok = true;
        for (char *p = text, *end; direct < SOP_CENSUS_MAX; p = end) {
            long c = strtol(p, &end, 10);
            if (end == p)
                break;
            direct++;
            if (rk->n < QUEUE_MAX && c > 0 && c <= INT32_MAX && c != pid) { /* the walk's share */
                bool seen = false;
                for (size_t k = 0; k < rk->n && !seen; k++)
                    seen = rk->pids[k] == c;
                if (!seen)
                    rk->pids[rk->n++] = (int)c;
            }
            snprintf(path, sizeof path, "%ld/stat", c);
            long n = sop__read_small_at(rootfd, path, buf, sizeof buf);
            const char *rp = n > 0 ? strrchr(buf, ')') : NULL;
            zombies += rp && rp[1] == ' ' && rp[2] == 'Z';
        }
        free(text);
    }
    free(tids);
    if (ok) {
        out->direct = direct;
        out->zombies = zombies;
    }
    rk->ok = ok;
}

int sop__children_collect(int proc_root_fd, int pid, sop_child_list *out, sop_missing *missing)
{
    return sop__children_collect_ex(proc_root_fd, pid, true, out, missing);
}

int sop__children_collect_ex(int proc_root_fd, int pid, bool smaps, sop_child_list *out,
                             sop_missing *missing)
{
    out->items = NULL;
    out->n = 0;
    out->direct = out->zombies = out->zombies_start = SOP_NA;
    out->zombies_growth_per_s = NAN;
    root_kids rk = {.n = 0, .ok = false};
    census(proc_root_fd, pid, out, &rk);
    node_list q = {0};
    int rc = walk(proc_root_fd, pid, &q, missing, &rk);
    if (rc == -ENOMEM) {
        free(q.v);
        return rc;
    }
    if (q.n - 1 > SOP_CHILDREN_MAX)
        sop__missing_add(missing, "children", "more than %d descendants: the rest not read",
                         SOP_CHILDREN_MAX);
    size_t want = q.n - 1 < SOP_CHILDREN_MAX ? q.n - 1 : SOP_CHILDREN_MAX;
    if (want > 0) {
        out->items = malloc(want * sizeof *out->items);
        if (!out->items) {
            free(q.v);
            return -ENOMEM;
        }
    }
    for (size_t i = 1; i <= want; i++)
        if (child_read(proc_root_fd, q.v[i].pid, q.v[i].ppid, q.v[i].depth, smaps,
                       &out->items[out->n], missing))
            out->n++;
    free(q.v);
    if (out->n == 0)
        sop__child_list_free(out);
    return rc;
}

long sop__proc_child_pids(const char *proc_root, int pid, int *out, long max)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%d/task", proc_root, pid);
    int *tids = NULL;
    long nt = sop__list_numeric_at(AT_FDCWD, path, &tids, SOP_THREADS_MAX);
    if (nt < 0)
        return nt;
    long n = 0;
    for (long t = 0; t < nt && n < max; t++) {
        char cp[320], buf[1024];
        snprintf(cp, sizeof cp, "%s/%d/children", path, tids[t]);
        if (sop__read_small_at(AT_FDCWD, cp, buf, sizeof buf) <= 0)
            continue;
        const char *q = buf;
        int64_t v;
        while (n < max && (v = sop__parse_i64(&q)) != SOP_NA)
            if (v > 0 && v <= INT32_MAX)
                out[n++] = (int)v;
    }
    free(tids);
    return n;
}
