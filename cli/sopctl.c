/* sopctl.c — the command-line face of libsop: dispatches to one file per subcommand
 * (cli/cmd_*.c) and prints usage. Depends on include/sop.h only. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sop.h"

static const char USAGE[] =
    "usage:\n"
    "  sopctl run [RULES.lua] (--pid N | --evidence FILE) [--duration S] [--rate HZ]\n"
    "             [--format md|json|text] [--lang en|zh] [--set KEY=VALUE]...\n"
    "             [--site FILE | --no-site]\n"
    "  sopctl evidence --pid N [--duration S] [--rate HZ] [-o FILE]\n"
    "  sopctl record --pid N --duration S [--rate HZ] -o FILE(.txt|.svg)\n"
    "  sopctl dump --pid N [--native] [--exact] [--json]\n"
    "  sopctl check RULES.lua|default [--site FILE] [--doc|--json]\n"
    "  sopctl agents-md [--lang en|zh]          # an AGENTS.md section on using sopctl\n"
    "  sopctl version\n"
    "\n"
    "exit status: 0 no warn/high finding, 1 warn/high finding, 2 usage or rules error,\n"
    "             3 target not found or not readable\n";

static void usage(FILE *to) { fputs(USAGE, to); }

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
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
    if (strcmp(cmd, "agents-md") == 0)
        return cmd_agents_md(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("sopctl %s\n", sop_version());
        return EXIT_CLEAN;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return EXIT_CLEAN;
    }
    fprintf(stderr, "sopctl: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
