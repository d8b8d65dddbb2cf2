/* sopctl.c — the command-line face of libsop: dispatches to one file per subcommand
 * (cli/cmd_*.c) and prints usage. Depends on include/sop.h only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sop.h"

static const char USAGE[] =
    "usage:\n"
    "  sopctl run [RULES.lua] (--pid N | --evidence FILE | --ranks [--pid LAUNCHER]\n"
    "             [--slurm-job J]) [--duration S] [--rate HZ]\n"
    "             [--format md|json|text] [--lang en|zh] [--set KEY=VALUE]...\n"
    "             [--site FILE | --no-site] [--heap]\n"
    "  sopctl evidence (--pid N | --ranks [--pid LAUNCHER] [--slurm-job J]) [--duration S]\n"
    "             [--rate HZ] [-o FILE] [--heap]\n"
    "  sopctl record --pid N --duration S [--rate HZ] -o FILE(.txt|.svg)\n"
    "  sopctl dump --pid N [--native] [--exact] [--json]\n"
    "  sopctl heap --pid N [--json] [--top K] [--duration S] [--stop]\n"
    "  sopctl tasks --pid N [--json] [--tree]   # every asyncio task and its await chain\n"
    "  sopctl merge [--format md|json|text] [--lang en|zh] REPORT.json... | -\n"
    "  sopctl fleet --slurm-job J [--duration S] [--timeout S] [--format md|json|text]\n"
    "  sopctl watch [RULES.lua] --pid N [--every S] [--duration S] [--listen ADDR:PORT]\n"
    "               [--out DIR] [--keep K] [--on-finding CMD [--shell]] [--count N] ...\n"
    "  sopctl watch --node [--containers-only] [--every S] [--listen ADDR]...  # the node agent\n"
    "  sopctl check RULES.lua|default [--site FILE] [--doc|--json]\n"
    "  sopctl agents-md [--lang en|zh]          # an AGENTS.md section on using sopctl\n"
    "  sopctl version\n"
    "\n"
    "wherever --pid N is taken, --container NAME|ID or --pod NAMESPACE/NAME may name the target\n"
    "\n"
    "exit status: 0 no warn/high finding, 1 warn/high finding, 2 usage or rules error,\n"
    "             3 target not found or not readable\n";

static void usage(FILE *to)
{
    fputs(USAGE, to);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    static const char *const takes_pid[] = {"run",  "evidence", "record", "dump",
                                            "heap", "tasks",    "watch"};
    for (size_t i = 0; i < sizeof takes_pid / sizeof takes_pid[0]; i++)
        if (strcmp(cmd, takes_pid[i]) == 0) {
            int rc = cli_select_target(argc - 1, argv + 1);
            if (rc != EXIT_CLEAN)
                return rc;
        }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "evidence") == 0)
        return cmd_evidence(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "record") == 0)
        return cmd_record(argc - 1, argv + 1);
    if (strcmp(cmd, "dump") == 0)
        return cmd_dump(argc - 1, argv + 1);
    if (strcmp(cmd, "fleet") == 0)
        return cmd_fleet(argc - 1, argv + 1);
    if (strcmp(cmd, "merge") == 0)
        return cmd_merge(argc - 1, argv + 1);
    if (strcmp(cmd, "watch") == 0)
        return cmd_watch(argc - 1, argv + 1);
    if (strcmp(cmd, "heap") == 0)
        return cmd_heap(argc - 1, argv + 1);
    if (strcmp(cmd, "tasks") == 0)
        return cmd_tasks(argc - 1, argv + 1);
    if (strcmp(cmd, "agents-md") == 0)
        return cmd_agents_md(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        if (argc > 2) {
            fprintf(stderr, "sopctl: version: unexpected argument '%s'\n", argv[2]);
            return EXIT_USAGE;
        }
        printf("sopctl %s\n", sop_version());
        return EXIT_CLEAN;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2) {
            fprintf(stderr, "sopctl: help: unexpected argument '%s' (try sopctl CMD --help)\n",
                    argv[2]);
            return EXIT_USAGE;
        }
        usage(stdout);
        return EXIT_CLEAN;
    }
    fprintf(stderr, "sopctl: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}

/* Run as `py-spy` (a link by that name), sopctl takes py-spy's command line (cli/pyspy.c).
 * Every command writes its result to stdout; a write that failed (a full disk, a closed pipe,
 * /dev/full) is only certain once stdout is flushed and closed, so that is checked here, once
 * for all commands: a failed write or close of stdout is exit 2 with a message. */
int main(int argc, char **argv)
{
    /* Where root's runs remember what they may reuse (the kernel log's OOM records,
     * probes/kmsg_memo.h); SOP_STATE_DIR= (empty) turns it off. */
    if (geteuid() == 0)
        setenv("SOP_STATE_DIR", "/run/sop", 0);
    const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
    base = base ? base + 1 : (argc > 0 && argv[0] ? argv[0] : "");
    int status = strcmp(base, "py-spy") == 0 ? cli_pyspy_main(argc, argv) : dispatch(argc, argv);
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        fprintf(stderr, "sopctl: error writing to stdout: %s\n", err ? strerror(err) : "I/O error");
        return EXIT_USAGE;
    }
    return status;
}
