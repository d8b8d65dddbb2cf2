/* python_procs.c — which processes of the host are Python: an executable named python*, or a
 * program that maps a shared libpython (an interpreter embedded in another program: uwsgi,
 * Triton's Python backend stub, a PyInstaller bundle, a C++ server calling Py_Initialize). Used by
 * `watch --node`'s discovery and the container target pick. The maps of a process that is not
 * Python by name are read once per RECHECK_ROUNDS rounds of a census (a cache by pid and start
 * time, two tables swapped each round: a process that left is forgotten a round later), so a
 * node with thousands of processes pays for their maps once, not every round. Depends on
 * include/sop.h and cli.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sop.h"

#define RECHECK_ROUNDS 30     /* a program may load libpython late (dlopen): look again then */
#define MAPS_LINES_MAX 200000 /* bound on the lines read from one maps file */

int cli_exe_is_python(int pid)
{
    char path[64], exe[512];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    return strncmp(base, "python", 6) == 0;
}

/* Is this maps line's path a shared CPython 3 library ("/.../libpython3.11.so.1.0", also
 * "(deleted)")? */
static int line_is_libpython(const char *line)
{
    const char *p = strstr(line, "/libpython3");
    return p && strstr(p, ".so") != NULL;
}

int cli_maps_libpython(int pid)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int found = 0;
    for (long i = 0; !found && i < MAPS_LINES_MAX && fgets(line, sizeof line, f); i++)
        found = line_is_libpython(line);
    fclose(f);
    return found;
}

typedef struct {
    int pid; /* 0: empty slot */
    int python;
    unsigned long long start;
    unsigned long long checked; /* the round its maps were read */
} entry;

typedef struct {
    entry *slot;
    size_t cap, n; /* cap a power of two, n <= cap / 2 */
} table;

struct cli_pyprocs {
    table cur, prev;
    unsigned long long round;
};

static size_t hash_pid(int pid)
{
    return (size_t)((unsigned)pid * 2654435761u);
}

static entry *find(const table *t, int pid)
{
    if (!t->cap)
        return NULL;
    for (size_t h = hash_pid(pid) & (t->cap - 1), k = 0; k < t->cap;
         k++, h = (h + 1) & (t->cap - 1)) {
        if (t->slot[h].pid == pid)
            return &t->slot[h];
        if (!t->slot[h].pid)
            return NULL;
    }
    return NULL;
}

static int put(table *t, entry e)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        entry *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        table grown = {ns, ncap, 0};
        for (size_t i = 0; i < t->cap; i++)
            if (t->slot[i].pid)
                put(&grown, t->slot[i]);
        free(t->slot);
        *t = grown;
    }
    size_t h = hash_pid(e.pid) & (t->cap - 1);
    while (t->slot[h].pid && t->slot[h].pid != e.pid)
        h = (h + 1) & (t->cap - 1);
    t->n += !t->slot[h].pid;
    t->slot[h] = e;
    return 0;
}

cli_pyprocs *cli_pyprocs_new(void)
{
    return calloc(1, sizeof(cli_pyprocs));
}

void cli_pyprocs_free(cli_pyprocs *c)
{
    if (!c)
        return;
    free(c->cur.slot);
    free(c->prev.slot);
    free(c);
}

void cli_pyprocs_next_round(cli_pyprocs *c)
{
    free(c->prev.slot);
    c->prev = c->cur;
    memset(&c->cur, 0, sizeof c->cur);
    c->round++;
}

int cli_pyprocs_is_python(cli_pyprocs *c, int pid, unsigned long long start)
{
    if (cli_exe_is_python(pid))
        return 1;
    const entry *old = find(&c->cur, pid);
    if (!old)
        old = find(&c->prev, pid);
    entry e = {pid, 0, start, c->round};
    if (old && old->start == start && c->round - old->checked < RECHECK_ROUNDS) {
        e = *old;
    } else {
        e.python = cli_maps_libpython(pid);
    }
    put(&c->cur, e); /* out of memory: not kept, read again next round */
    return e.python;
}
