/* pyspy_args.h — sopctl run as `py-spy` (docs/py-spy.md): the command line as parsed
 * (cli/pyspy.c), py-spy's exit codes and messages, and the commands that run it
 * (cli/cmd_pyspy_dump.c, cli/cmd_pyspy_record.c). Depends on include/sop.h. */
#ifndef SOP_CLI_PYSPY_ARGS_H
#define SOP_CLI_PYSPY_ARGS_H

/* py-spy's exit status: 0 done, 1 failed, 2 a command line it refuses. */
enum { PS_OK = 0, PS_FAIL = 1, PS_USAGE = 2 };

/* The options of dump and record (cli/pyspy.c has their names). */
enum {
    O_PID,
    O_OUTPUT,
    O_FORMAT,
    O_DURATION,
    O_RATE,
    O_SUBPROCESSES,
    O_FUNCTION,
    O_NOLINENO,
    O_THREADS,
    O_GIL,
    O_IDLE,
    O_CAPTURE,
    O_HIDEPROGRESS,
    O_NATIVE,
    O_NONBLOCKING,
    O_FULL_FILENAMES,
    O_HELP,
    O_CORE,
    O_LOCALS,
    O_JSON,
    O_SOP,
    O_N
};

typedef struct {
    const char *cmd;        /* "dump" or "record" */
    const char *value[O_N]; /* options with a value */
    int count[O_N];         /* how many times each was given */
    const char *program;    /* the first positional argument (a program to launch) */
} cli_pyspy_args;

/* "error: <fmt with arg>" and the command's usage line, as clap words it; returns PS_USAGE. */
int cli_pyspy_usage_error(const char *cmd, const char *fmt, const char *arg);
/* "Error: <what>" for what sop's py-spy does not serve; returns PS_FAIL. */
int cli_pyspy_refuse(const char *what);
/* --pid: decimal or hex (0x...); PS_OK, or PS_USAGE after saying why (also when s is NULL). */
int cli_pyspy_parse_pid(const char *cmd, const char *s, int *pid);
/* A libsop failure (SOP_E*) as py-spy words it, sop's detail under "Caused by:"; PS_FAIL. */
int cli_pyspy_fail(int rc, int pid, const char *detail);

int cli_pyspy_dump(cli_pyspy_args *a);
int cli_pyspy_record(cli_pyspy_args *a);

#endif
