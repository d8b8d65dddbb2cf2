/* cmd_tasks.c — `sopctl tasks --pid N [--json] [--tree]`: every asyncio task of a process, its
 * state and await chain, through sop_tasks (include/sop.h). Exit 0 ok (a partial read too: it
 * says so), 2 usage, 3 target missing / unreadable / not CPython. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sop.h"

static int usage(void)
{
    fprintf(stderr, "usage: sopctl tasks --pid N [--json] [--tree]\n");
    return EXIT_USAGE;
}

int cmd_tasks(int argc, char **argv)
{
    int pid = -1, json = 0;
    unsigned flags = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pid") == 0 && i + 1 < argc)
            pid = cli_parse_pid(argv[++i]);
        else if (strncmp(argv[i], "--pid=", 6) == 0)
            pid = cli_parse_pid(argv[i] + 6);
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--tree") == 0)
            flags |= SOP_TASKS_TREE;
        else
            return usage();
    }
    if (pid <= 0)
        return usage();
    fflush(stdout);
    int rc =
        sop_tasks_write(NULL, pid, flags, json ? SOP_FORMAT_JSON : SOP_FORMAT_TEXT, STDOUT_FILENO);
    if (rc == SOP_OK)
        return EXIT_CLEAN;
    if (rc == SOP_EWRITE) { /* a full disk, a closed pipe: as sopctl.c says for every command */
        fprintf(stderr, "sopctl: error writing to stdout: %s\n", strerror(errno ? errno : EIO));
        return EXIT_USAGE;
    }
    fprintf(stderr, "sopctl tasks: %s\n", sop_strerror(rc));
    return rc == SOP_EINVAL ? EXIT_USAGE : EXIT_TARGET;
}
