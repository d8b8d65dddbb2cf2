/* cmd_dump.c — `sopctl dump --pid N [--json] [--native] [--exact] [--tasks]`: the Python stacks of
 * a process, through sop_dump_write (include/sop.h). Exit 0 ok, 2 usage, 3 target missing /
 * unreadable / not CPython. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sop.h"

static int parse_pid(const char *s)
{
    if (!s || !*s)
        return -1;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v <= 0 || v > 0x3fffffff)
        return -1;
    return (int)v;
}

static int usage(void)
{
    fprintf(stderr, "usage: sopctl dump --pid N [--json] [--native] [--exact] [--tasks]\n");
    return EXIT_USAGE;
}

int cmd_dump(int argc, char **argv)
{
    int pid = -1, json = 0;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = NULL;
        if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc)
            arg = argv[++i];
        else if (strncmp(argv[i], "--pid=", 6) == 0)
            arg = argv[i] + 6;
        if (arg) {
            if (pid != -1) {
                fprintf(stderr, "sopctl: --pid given twice; one target at a time\n");
                return EXIT_USAGE;
            }
            if ((pid = parse_pid(arg)) <= 0) {
                fprintf(stderr, "sopctl: --pid: '%s' is not a process id\n", arg);
                return EXIT_USAGE;
            }
        } else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--native") == 0)
            flags |= SOP_DUMP_NATIVE;
        else if (strcmp(argv[i], "--exact") == 0)
            flags |= SOP_DUMP_EXACT;
        else if (strcmp(argv[i], "--tasks") == 0)
            flags |= SOP_DUMP_TASKS;
        else
            return usage();
    }
    if (pid <= 0)
        return usage();
    fflush(stdout);
    int rc =
        sop_dump_write(NULL, pid, flags, json ? SOP_FORMAT_JSON : SOP_FORMAT_TEXT, STDOUT_FILENO);
    if (rc == SOP_OK)
        return EXIT_CLEAN;
    if (rc == SOP_EWRITE) { /* a full disk, a closed pipe: as sopctl.c says for every command */
        fprintf(stderr, "sopctl: error writing to stdout: %s\n", strerror(errno ? errno : EIO));
        return EXIT_USAGE;
    }
    /* Gone, unreadable, not CPython — and any other failure to read it — are all "the
     * target could not be dumped" (exit 3); the document above, if any, says what is missing. */
    fprintf(stderr, "sopctl dump: %s\n", sop_strerror(rc));
    return EXIT_TARGET;
}
