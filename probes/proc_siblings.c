/* proc_siblings.c — the target's parent and its other children (ranks started by one launcher,
 * workers of one pool), read like descendants: stat, status, smaps_rollup, io, cmdline. The
 * parent's children come from /proc/PPID/task/TID/children. Depends on proc_children.c
 * (sop__child_read), proc_dir.c, procfs.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"

/* Add the pids of a "children" file ("12 34 \n") other than `self` to pids[*n] (bounded). */
static void add_pids(const char *text, int self, int *pids, size_t *n, size_t cap)
{
    const char *p = text;
    while (*n < cap) {
        int64_t v = sop__parse_i64(&p);
        if (v == SOP_NA || (*p != ' ' && *p != '\n'))
            break;
        if (v <= 0 || v > INT32_MAX || v == self)
            continue;
        bool dup = false;
        for (size_t i = 0; i < *n && !dup; i++)
            dup = pids[i] == (int)v;
        if (!dup)
            pids[(*n)++] = (int)v;
    }
}

int sop__siblings_collect(int proc_root_fd, int pid, int ppid, sop_child *parent, bool *have_parent,
                          sop_child_list *siblings, sop_missing *missing)
{
    *have_parent = false;
    siblings->items = NULL;
    siblings->n = 0;
    if (ppid <= 2)
        return 0;
    *have_parent = sop__child_read(proc_root_fd, ppid, 0, -1, parent, missing);
    if (!*have_parent)
        return -ESRCH;
    char path[64], buf[8192];
    snprintf(path, sizeof path, "%d/task", ppid);
    int *tids = NULL;
    long nt = sop__list_numeric_at(proc_root_fd, path, &tids, SOP_THREADS_MAX);
    if (nt < 0)
        return (int)nt;
    int pids[SOP_SIBLINGS_MAX + 1];
    size_t n = 0;
    for (long i = 0; i < nt && n <= SOP_SIBLINGS_MAX; i++) {
        snprintf(path, sizeof path, "%d/task/%d/children", ppid, tids[i]);
        long r = sop__read_seq_at(proc_root_fd, path, buf, sizeof buf);
        if (r == -ENOENT && i == 0) {
            sop__missing_add(missing, "siblings", "no /proc/PID/task/TID/children on this kernel");
            break;
        }
        if (r > 0)
            add_pids(buf, pid, pids, &n, SOP_SIBLINGS_MAX + 1);
    }
    free(tids);
    if (n > SOP_SIBLINGS_MAX) {
        sop__missing_add(missing, "siblings", "more than %d siblings: the rest not read",
                         SOP_SIBLINGS_MAX);
        n = SOP_SIBLINGS_MAX;
    }
    if (n == 0)
        return 0;
    siblings->items = malloc(n * sizeof *siblings->items);
    if (!siblings->items)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (sop__child_read(proc_root_fd, pids[i], ppid, 0, &siblings->items[siblings->n], missing))
            siblings->n++;
    if (siblings->n == 0)
        sop__child_list_free(siblings);
    return 0;
}
