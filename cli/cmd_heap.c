/* cmd_heap.c — `sopctl heap --pid N [--json] [--top K] [--duration S] [--stop]`: a census of a
 * process's Python objects by type, through sop_heap (include/sop.h). Exit 0 ok (a partial
 * census too: it says so), 2 usage, 3 target missing / unreadable / not CPython. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sop.h"

static int usage(void)
{
    fprintf(stderr, "usage: sopctl heap --pid N [--json] [--top K] [--duration S] [--stop]\n");
    return EXIT_USAGE;
}

/* The value of option argv[*i] ("--opt V" or "--opt=V"); NULL when it is another option. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

int cmd_heap(int argc, char **argv)
{
    int pid = -1, json = 0, top = 20;
    double duration = 0;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = opt_value(argc, argv, &i, "--pid")) != NULL) {
            pid = cli_parse_pid(v);
        } else if ((v = opt_value(argc, argv, &i, "--top")) != NULL) {
            char *end;
            long k = strtol(v, &end, 10);
            if (!*v || *end || k < 1 || k > 100000)
                return usage();
            top = (int)k;
        } else if ((v = opt_value(argc, argv, &i, "--duration")) != NULL) {
            if (cli_parse_duration(v, &duration) < 0)
                return usage();
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--stop") == 0) {
            flags |= SOP_HEAP_STOP_TARGET;
        } else {
            return usage();
        }
    }
    if (pid <= 0)
        return usage();
    char *out = NULL;
    int rc =
        sop_heap(NULL, pid, flags, top, duration, json ? SOP_FORMAT_JSON : SOP_FORMAT_TEXT, &out);
    if (out) {
        fputs(out, stdout);
        if (out[0] && out[strlen(out) - 1] != '\n')
            fputc('\n', stdout);
    }
    sop_free(out);
    if (rc == SOP_OK)
        return EXIT_CLEAN;
    fprintf(stderr, "sopctl heap: %s\n", sop_strerror(rc));
    return rc == SOP_EINVAL ? EXIT_USAGE : EXIT_TARGET;
}
