/* cmd_pyspy_dump.c — `py-spy dump` served by sop_dump (docs/py-spy.md): sop's text, or py-spy's
 * JSON document with --json (SOP_DUMP_PYSPY); --native as sop's; --subprocesses also dumps the
 * CPython processes below the target; --sop adds sop's one-line diagnosis. --locals and --core
 * are refused. Depends on include/sop.h and pyspy_args.h. */
#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pyspy_args.h"
#include "sop.h"

/* The CPython-or-not processes below pid (every task's children), depth first, up to max. */
static size_t descendants(int pid, int *out, size_t n, size_t max, int depth)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return n;
    struct dirent *de;
    int kids[64], nk = 0;
    while ((de = readdir(d)) != NULL && nk < 64) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        char cp[400];
        snprintf(cp, sizeof cp, "%s/%s/children", path, de->d_name);
        FILE *f = fopen(cp, "re");
        int v;
        while (f && nk < 64 && fscanf(f, "%d", &v) == 1)
            kids[nk++] = v;
        if (f)
            fclose(f);
    }
    closedir(d);
    for (int k = 0; k < nk && n < max; k++) {
        out[n++] = kids[k];
        if (depth < 4)
            n = descendants(kids[k], out, n, max, depth + 1);
    }
    return n;
}

/* `--sop`: sop's one-line diagnosis of pid over a 1 s window, after the stacks. */
static void print_diagnosis(int pid)
{
    sop_engine *e = NULL;
    sop_evidence *ev = NULL;
    sop_report *r = NULL;
    char *line = NULL;
    sop_collect_opts o;
    sop_collect_opts_init(&o);
    int rc = sop_engine_new(&e);
    if (rc == 0)
        rc = sop_load_rules_default(e);
    if (rc == 0)
        rc = sop_collect(e, pid, &o, &ev);
    if (rc == 0)
        rc = sop_evaluate(e, ev, &r);
    if (rc == 0)
        rc = sop_report_summary(r, "en", &line);
    if (rc == 0)
        printf("\nsop: %s\n", line);
    else
        fprintf(stderr, "sop: no diagnosis: %s\n", sop_strerror(rc));
    sop_free(line);
    sop_report_free(r);
    sop_evidence_free(ev);
    sop_engine_free(e);
}

/* The last "missing ...: reason" line of a failed dump's text, for the error message. */
static void missing_reason(const char *doc, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *p = doc; p && (p = strstr(p, "missing ")) != NULL; p++) {
        const char *colon = strstr(p, ": "), *eol = strchr(p, '\n');
        if (colon && (!eol || colon < eol))
            snprintf(out, cap, "%.*s", (int)(eol ? eol - colon - 2 : (long)strlen(colon + 2)),
                     colon + 2);
    }
}

int cli_pyspy_dump(cli_pyspy_args *a)
{
    int pid = 0, rc = cli_pyspy_parse_pid("dump", a->value[O_PID], &pid);
    if (rc != PS_OK)
        return rc;
    if (a->count[O_LOCALS])
        return cli_pyspy_refuse(
            "--locals is not served by sop: sop reads stacks from outside and never "
            "the values of local variables (use py-spy itself for them)");
    if (a->value[O_CORE])
        return cli_pyspy_refuse(
            "--core is not served by sop: sop reads running processes, not core files");
    if (a->program)
        return cli_pyspy_usage_error("dump", "unexpected argument '%s' found", a->program);
    if (a->count[O_NATIVE] && a->count[O_NONBLOCKING])
        return cli_pyspy_refuse("Can't get native stack traces with the --nonblocking option.");
    bool json = a->count[O_JSON] > 0;
    unsigned flags = (a->count[O_NATIVE] ? SOP_DUMP_NATIVE : 0) | (json ? SOP_DUMP_PYSPY : 0);
    int pids[33] = {pid};
    size_t n = 1;
    if (a->count[O_SUBPROCESSES] && !json) /* py-spy's --json dumps the target only */
        n = descendants(pid, pids, 1, 33, 1);
    for (size_t i = 0; i < n; i++) {
        char *out = NULL;
        rc = sop_dump(NULL, pids[i], flags, json ? SOP_FORMAT_JSON : SOP_FORMAT_TEXT, &out);
        if (rc == SOP_OK) {
            if (i > 0)
                printf("\n%s\n", "--------------------------------------------------------"
                                 "------------------------");
            fputs(out, stdout);
            if (out[0] && out[strlen(out) - 1] != '\n')
                fputc('\n', stdout);
        } else if (i == 0) { /* a child that is no CPython (a shell, a helper) is left out */
            char why[256];
            missing_reason(json ? NULL : out, why, sizeof why);
            sop_free(out);
            return cli_pyspy_fail(rc, pid, why);
        }
        sop_free(out);
    }
    if (a->count[O_SOP])
        print_diagnosis(pid);
    return PS_OK;
}
