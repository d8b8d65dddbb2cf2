/* target_select.c — `--container NAME|ID` and `--pod NAMESPACE/NAME` wherever `--pid N` is
 * taken: the container's processes (sop_container_pids), then the one to diagnose: the only
 * process, else the only Python one (its executable is python*, or it maps a libpython: an
 * embedded interpreter), else the only Python process
 * whose parent is not Python too (a launcher's workers under it); otherwise an error listing the
 * candidates. The option is rewritten as --pid N before the command parses its options.
 * Depends on include/sop.h, cli.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sop.h"

#define CANDIDATES_MAX 4096

/* Python by its executable's name, or a program with an embedded interpreter (uwsgi, a model
 * server's Python backend): a container holds few processes, their maps are read at once. */
static int is_python(int pid)
{
    return cli_exe_is_python(pid) || cli_maps_libpython(pid);
}

static void list_candidates(const int *pids, size_t n, const char *what)
{
    fprintf(stderr, "sopctl: %s: %zu processes; name one with --pid:\n", what, n);
    for (size_t i = 0; i < n && i < 32; i++) {
        sop_process p;
        char comm[80] = "?";
        if (sop_process_read(pids[i], &p) == 0) {
            size_t k = 0;
            for (const char *c = p.comm; *c && k + 1 < sizeof comm; c++) /* no raw controls */
                comm[k++] = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
            comm[k] = '\0';
        }
        fprintf(stderr, "  %d  %s%s\n", pids[i], comm, is_python(pids[i]) ? "  (python)" : "");
    }
    if (n > 32)
        fprintf(stderr, "  ... and %zu more\n", n - 32);
}

static int pick(const char *container, const char *pod, int *out)
{
    static int pids[CANDIDATES_MAX];
    char what[600];
    snprintf(what, sizeof what, "%s %s", container ? "--container" : "--pod",
             container ? container : pod);
    for (char *c = what; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    int n = sop_container_pids(container, pod, pids, CANDIDATES_MAX);
    if (n < 0) {
        fprintf(stderr, "sopctl: %s: %s\n", what,
                pod ? "give the pod as NAMESPACE/NAME" : "give a container name or id");
        return EXIT_USAGE;
    }
    if (n == 0) {
        fprintf(stderr, "sopctl: %s: no process of this host runs in such a %s\n", what,
                container ? "container (its name, id or an id's first 12+ digits)" : "pod");
        return EXIT_TARGET;
    }
    size_t m = (size_t)n < CANDIDATES_MAX ? (size_t)n : CANDIDATES_MAX;
    if (m == 1) {
        *out = pids[0];
        return EXIT_CLEAN;
    }
    int py[32], npy = 0, top = 0, ntop = 0;
    for (size_t i = 0; i < m; i++) {
        if (!is_python(pids[i]))
            continue;
        if (npy < 32)
            py[npy] = pids[i];
        npy++;
    }
    if (npy == 1) {
        *out = py[0];
        return EXIT_CLEAN;
    }
    for (int i = 0; i < npy && i < 32; i++) {
        sop_process p;
        if (sop_process_read(py[i], &p) != 0)
            continue;
        int parent_py = 0;
        for (int j = 0; j < npy && j < 32; j++)
            parent_py |= py[j] == p.ppid;
        if (!parent_py) {
            top = py[i];
            ntop++;
        }
    }
    if (ntop == 1) {
        *out = top;
        return EXIT_CLEAN;
    }
    list_candidates(pids, m, what);
    return EXIT_USAGE;
}

int cli_select_target(int argc, char **argv)
{
    static char pidbuf[2][32];
    int slots = 0, given = 0, has_pid = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (strcmp(a, "--pid") == 0 || strncmp(a, "--pid=", 6) == 0 || strcmp(a, "-p") == 0)
            has_pid = 1;
        int eq = strncmp(a, "--container=", 12) == 0 || strncmp(a, "--pod=", 6) == 0;
        int sep = strcmp(a, "--container") == 0 || strcmp(a, "--pod") == 0;
        if (!eq && !sep)
            continue;
        if (sep && i + 1 >= argc) {
            fprintf(stderr, "sopctl: %s needs a value\n", a);
            return EXIT_USAGE;
        }
        if (++given > 1) {
            fprintf(stderr, "sopctl: one target at a time: --pid, --container or --pod\n");
            return EXIT_USAGE;
        }
        int is_pod = strncmp(a, "--pod", 5) == 0;
        const char *val = sep ? argv[i + 1] : strchr(a, '=') + 1;
        int pid = 0;
        int rc = pick(is_pod ? NULL : val, is_pod ? val : NULL, &pid);
        if (rc != EXIT_CLEAN)
            return rc;
        if (sep) {
            argv[i] = "--pid";
            snprintf(pidbuf[slots], sizeof pidbuf[slots], "%d", pid);
            argv[i + 1] = pidbuf[slots++];
            i++;
        } else {
            snprintf(pidbuf[slots], sizeof pidbuf[slots], "--pid=%d", pid);
            argv[i] = pidbuf[slots++];
        }
    }
    if (given && has_pid) {
        fprintf(stderr, "sopctl: one target at a time: --pid, --container or --pod\n");
        return EXIT_USAGE;
    }
    return EXIT_CLEAN;
}
