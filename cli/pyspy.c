/* pyspy.c — sopctl run as `py-spy` (a link by that name; docs/py-spy.md): py-spy's command line
 * for the tools that call it (Ray's dashboard, kubectl profilers), read as clap reads it, with
 * py-spy's usage texts, messages and exit codes (0 done, 1 failed, 2 a command line py-spy
 * refuses). `dump` is cli/cmd_pyspy_dump.c, `record` cli/cmd_pyspy_record.c; `top` is refused;
 * the messages and exit codes they share are cli/pyspy_errors.c. Depends on include/sop.h,
 * cli.h and pyspy_args.h. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pyspy_args.h"
#include "sop.h"

#define PYSPY_VERSION "0.4.2" /* the py-spy whose command line this follows */

typedef struct {
    const char *name;  /* long form, "--name" */
    char letter;       /* short form, "-l"; 0 none */
    const char *value; /* the value's name in messages; NULL: a flag */
    int id;
} ps_opt;

static const ps_opt RECORD_OPTS[] = {
    {"pid", 'p', "pid", O_PID},
    {"output", 'o', "filename", O_OUTPUT},
    {"format", 'f', "format", O_FORMAT},
    {"duration", 'd', "duration", O_DURATION},
    {"rate", 'r', "rate", O_RATE},
    {"subprocesses", 's', NULL, O_SUBPROCESSES},
    {"function", 'F', NULL, O_FUNCTION},
    {"nolineno", 0, NULL, O_NOLINENO},
    {"threads", 't', NULL, O_THREADS},
    {"gil", 'g', NULL, O_GIL},
    {"idle", 'i', NULL, O_IDLE},
    {"capture", 0, NULL, O_CAPTURE},
    {"hideprogress", 0, NULL, O_HIDEPROGRESS},
    {"native", 'n', NULL, O_NATIVE},
    {"nonblocking", 0, NULL, O_NONBLOCKING},
    {"full-filenames", 0, NULL, O_FULL_FILENAMES},
    {"help", 'h', NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static const ps_opt DUMP_OPTS[] = {
    {"pid", 'p', "pid", O_PID},
    {"core", 'c', "core", O_CORE},
    {"full-filenames", 0, NULL, O_FULL_FILENAMES},
    {"locals", 'l', NULL, O_LOCALS},
    {"json", 'j', NULL, O_JSON},
    {"subprocesses", 's', NULL, O_SUBPROCESSES},
    {"native", 'n', NULL, O_NATIVE},
    {"nonblocking", 0, NULL, O_NONBLOCKING},
    {"sop", 0, NULL, O_SOP},
    {"help", 'h', NULL, O_HELP},
    {NULL, 0, NULL, 0},
};

static const char USAGE_MAIN[] =
    "py-spy " PYSPY_VERSION " (sop " SOP_VERSION_STRING ")\n"
    "py-spy's command line, served by sop (docs/py-spy.md): sop reads the target without\n"
    "stopping it, and writes py-spy's file formats.\n\n"
    "Usage: py-spy <COMMAND>\n\n"
    "Commands:\n"
    "  record  Records stack trace information to a flamegraph, speedscope, raw or chrometrace\n"
    "          file\n"
    "  dump    Dumps stack traces for a target program to stdout\n"
    "  top     (not served by sop: use sopctl watch, or record)\n"
    "  help    Print this message or the help of the given command\n\n"
    "Options:\n"
    "  -h, --help     Print help\n"
    "  -V, --version  Print version\n";

static const char USAGE_RECORD[] =
    "Records stack trace information to a flamegraph, speedscope, raw or chrometrace file\n\n"
    "Usage: py-spy record [OPTIONS] --pid <pid>\n\n"
    "Options:\n"
    "  -p, --pid <pid>            PID of a running python program to spy on, in decimal or hex\n"
    "  -o, --output <filename>    Output filename [default: PID-TIME.svg|json|txt]\n"
    "  -f, --format <format>      Output file format [default: flamegraph]\n"
    "                             [possible values: flamegraph, raw, speedscope, chrometrace]\n"
    "  -d, --duration <duration>  The number of seconds to sample for [default: unlimited:\n"
    "                             until Ctrl-C, SIGTERM or the process exits]\n"
    "  -r, --rate <rate>          The number of samples to collect per second [default: 100]\n"
    "  -s, --subprocesses         Profile subprocesses of the original process\n"
    "      --nolineno             Do not show line numbers\n"
    "  -t, --threads              Show thread ids in the output\n"
    "  -g, --gil                  Only include traces that are holding on to the GIL\n"
    "  -i, --idle                 Include stack traces for idle threads\n"
    "      --full-filenames       Show full Python filenames\n"
    "  -n, --native               Accepted; sop records Python frames only (said on stderr)\n"
    "      --nonblocking          Accepted; sop never pauses the target while recording\n"
    "  -h, --help                 Print help\n\n"
    "Not served by sop (exit 1): -F/--function, launching a program (py-spy record -- CMD).\n";

static const char USAGE_DUMP[] =
    "Dumps stack traces for a target program to stdout\n\n"
    "Usage: py-spy dump [OPTIONS] --pid <pid>\n\n"
    "Options:\n"
    "  -p, --pid <pid>       PID of a running python program to spy on, in decimal or hex\n"
    "  -j, --json            Format output as JSON (py-spy's document)\n"
    "  -s, --subprocesses    Also dump the CPython processes below the target\n"
    "  -n, --native          Collect native stack traces (pauses each thread briefly)\n"
    "      --nonblocking     Accepted; without --native sop never pauses the target\n"
    "      --full-filenames  Accepted (dump shows full filenames)\n"
    "      --sop             After the stacks, sop's one-line diagnosis (a 1 s window)\n"
    "  -h, --help            Print help\n\n"
    "Not served by sop (exit 1): -l/--locals (sop does not read local variables),\n"
    "-c/--core (core files).\n";

static const ps_opt *find_opt(const ps_opt *opts, const char *name, size_t n, char letter)
{
    for (const ps_opt *o = opts; o->name; o++)
        if (letter ? o->letter == letter : strlen(o->name) == n && strncmp(o->name, name, n) == 0)
            return o;
    return NULL;
}

/* Record one option; its value from `inline_v` or the next argument. */
static int take(cli_pyspy_args *a, const ps_opt *o, const char *inline_v, int argc, char **argv,
                int *i)
{
    a->count[o->id]++;
    if (!o->value) {
        if (inline_v)
            return cli_pyspy_usage_error(a->cmd, "unexpected value for '--%s'", o->name);
        return PS_OK;
    }
    if (a->count[o->id] > 1)
        return cli_pyspy_usage_error(a->cmd, "the argument '--%s' cannot be used multiple times",
                                     o->name);
    if (!inline_v) {
        if (*i + 1 >= argc)
            return cli_pyspy_usage_error(
                a->cmd, "a value is required for '--%s' but none was supplied", o->name);
        inline_v = argv[++*i];
    }
    a->value[o->id] = inline_v;
    return PS_OK;
}

/* The options of a command as clap reads them: --long, --long=V, --long V, -s, -sV, -s V,
 * -s=V, clustered flags (-st), and "--" before positional arguments. */
static int parse(const ps_opt *opts, int argc, char **argv, cli_pyspy_args *a)
{
    bool positional = false;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        int rc = PS_OK;
        if (positional || arg[0] != '-' || arg[1] == '\0') {
            if (!a->program)
                a->program = arg;
        } else if (strcmp(arg, "--") == 0) {
            positional = true;
        } else if (arg[1] == '-') {
            const char *eq = strchr(arg + 2, '=');
            size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
            const ps_opt *o = find_opt(opts, arg + 2, n, 0);
            if (!o)
                return cli_pyspy_usage_error(a->cmd, "unexpected argument '%s' found", arg);
            rc = take(a, o, eq ? eq + 1 : NULL, argc, argv, &i);
        } else {
            for (const char *c = arg + 1; *c && rc == PS_OK; c++) {
                const ps_opt *o = find_opt(opts, NULL, 0, *c);
                if (!o) {
                    char bad[3] = {'-', *c, '\0'};
                    return cli_pyspy_usage_error(a->cmd, "unexpected argument '%s' found", bad);
                }
                const char *rest = c[1] == '=' ? c + 2 : c + 1;
                rc = take(a, o, o->value && *rest ? rest : NULL, argc, argv, &i);
                if (o->value)
                    break;
            }
        }
        if (rc != PS_OK)
            return rc;
    }
    return PS_OK;
}

/* py-spy's subcommands, and clap's inference of a unique prefix ("rec" is record). */
static const char *command_of(const char *arg)
{
    static const char *const CMDS[] = {"record", "dump", "top", "completions", "help"};
    const char *found = NULL;
    size_t n = strlen(arg);
    for (size_t i = 0; n && i < sizeof CMDS / sizeof *CMDS; i++) {
        if (strcmp(arg, CMDS[i]) == 0)
            return CMDS[i];
        if (strncmp(arg, CMDS[i], n) == 0)
            found = found ? "" : CMDS[i];
    }
    return found && *found ? found : NULL;
}

static int help_of(const char *cmd)
{
    const char *c = cmd ? command_of(cmd) : NULL;
    fputs(c && strcmp(c, "record") == 0 ? USAGE_RECORD
          : c && strcmp(c, "dump") == 0 ? USAGE_DUMP
                                        : USAGE_MAIN,
          stdout);
    return PS_OK;
}

int cli_pyspy_main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(USAGE_MAIN, stderr);
        return PS_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "-V") == 0 || strcmp(first, "--version") == 0) {
        printf("py-spy %s (sop %s)\n", PYSPY_VERSION, sop_version());
        return PS_OK;
    }
    if (strcmp(first, "-h") == 0 || strcmp(first, "--help") == 0)
        return help_of(NULL);
    cli_pyspy_args a;
    memset(&a, 0, sizeof a);
    a.cmd = command_of(first);
    if (!a.cmd)
        return cli_pyspy_usage_error(NULL, "unrecognized subcommand '%s'", first);
    if (strcmp(a.cmd, "help") == 0)
        return help_of(argc > 2 ? argv[2] : NULL);
    if (strcmp(a.cmd, "top") == 0)
        return cli_pyspy_refuse(
            "'py-spy top' is not supported by sop's py-spy mode; use sopctl watch "
            "(or py-spy record / dump)");
    if (strcmp(a.cmd, "completions") == 0)
        return cli_pyspy_refuse("'py-spy completions' is not served by sop");
    bool record = strcmp(a.cmd, "record") == 0;
    int rc = parse(record ? RECORD_OPTS : DUMP_OPTS, argc, argv, &a);
    if (rc != PS_OK)
        return rc;
    if (a.count[O_HELP]) {
        fputs(record ? USAGE_RECORD : USAGE_DUMP, stdout);
        return PS_OK;
    }
    return record ? cli_pyspy_record(&a) : cli_pyspy_dump(&a);
}
