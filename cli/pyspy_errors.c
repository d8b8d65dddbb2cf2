/* pyspy_errors.c — what sopctl run as `py-spy` says when it refuses or fails, as py-spy says it
 * (clap's usage errors, exit 2; py-spy's "Error:" lines and libsop's failures worded as py-spy
 * words them, exit 1), and py-spy's --pid. Shared by the dispatcher (cli/pyspy.c) and the
 * commands (cli/cmd_pyspy_dump.c, cli/cmd_pyspy_record.c). Depends on include/sop.h and
 * pyspy_args.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyspy_args.h"
#include "sop.h"

int cli_pyspy_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fputs("error: ", stderr);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\nUsage: py-spy %s%s\n\nFor more information, try '--help'.\n",
            cmd ? cmd : "<COMMAND>", cmd ? " [OPTIONS] --pid <pid>" : "");
    return PS_USAGE;
}

int cli_pyspy_refuse(const char *what)
{
    fprintf(stderr, "Error: %s\n", what);
    return PS_FAIL;
}

/* --pid: decimal or hex (0x...), as py-spy takes it. */
int cli_pyspy_parse_pid(const char *cmd, const char *s, int *pid)
{
    if (!s)
        return cli_pyspy_usage_error(
            cmd, "the following required arguments were not provided:\n  %s", "--pid <pid>");
    int base = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10;
    const char *digits = base == 16 ? s + 2 : s;
    char *end = NULL;
    errno = 0;
    long v = *digits && isxdigit((unsigned char)*digits) ? strtol(digits, &end, base) : 0;
    if (errno || !end || *end || v <= 0 || v > 0x3fffffff)
        return cli_pyspy_usage_error(cmd, "invalid value '%s' for '--pid <pid>'", s);
    *pid = (int)v;
    return PS_OK;
}

/* A failure of libsop as py-spy words it (a headline, then "Caused by:" and sop's detail):
 * callers look for exit status 1, and Ray for "Permission" (it then tells how to grant it). */
int cli_pyspy_fail(int rc, int pid, const char *detail)
{
    const char *head = NULL;
    switch (rc) {
    case SOP_ENOTARGET:
        head = "Error: Failed to open process - check if it is running.";
        break;
    case SOP_EACCES:
        head = "Permission Denied: Try running again with elevated permissions by going 'sudo "
               "env \"PATH=$PATH\" !!' (in a container: with the SYS_PTRACE capability)";
        break;
    case SOP_ENOTPYTHON:
        head = "Error: Failed to find python version from target process";
        break;
    case SOP_EPYVERSION:
        head = "Error: Unsupported version of Python";
        break;
    }
    if (!detail || !*detail)
        detail = sop_strerror(rc);
    if (!head) /* a write that failed, out of memory: the detail says it */
        fprintf(stderr, "Error: %s\n", detail);
    else if (strncmp(detail, "pid ", 4) == 0)
        fprintf(stderr, "%s\n\nCaused by:\n    %s\n", head, detail);
    else
        fprintf(stderr, "%s\n\nCaused by:\n    pid %d: %s\n", head, pid, detail);
    return PS_FAIL;
}
