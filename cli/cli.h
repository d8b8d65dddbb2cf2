/* cli.h — the subcommands of sopctl, one file each (cli/cmd_*.c), and the helpers they share.
 * sopctl is a thin client of libsop: every command goes through include/sop.h. */
#ifndef SOP_CLI_H
#define SOP_CLI_H

/* Exit codes (docs/contract.md): 0 ok, 1 warn/high finding, 2 usage or rules, 3 target. */
enum { EXIT_CLEAN = 0, EXIT_FINDING = 1, EXIT_USAGE = 2, EXIT_TARGET = 3 };

int cmd_run(int argc, char **argv);
int cmd_evidence(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_agents_md(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_fleet(int argc, char **argv);

/* The format table's names for a command (cli/formats.c). takes: the SOP_FORMAT_* flags a
 * format needs (SOP_FORMAT_REPORT for run, SOP_FORMAT_MERGE for merge and fleet). */
#include <stddef.h>

#include "sop.h"
/* The names, `first` (may be NULL, e.g. "auto") first, joined by sep and the last one by last
 * ("md|json|text", "md, json or text"); returns buf. */
const char *cli_format_names(unsigned takes, const char *first, const char *sep, const char *last,
                             char *buf, size_t len);
/* --format NAME: 0, or -1 after printing why (with `first` among the names listed). */
int cli_parse_format(const char *s, unsigned takes, const char *first, sop_format *fmt);
/* -o FILE: the format its extension names (.md, .json, .txt, .html), 0; -1 when none does. */
int cli_format_of_path(const char *path, unsigned takes, sop_format *fmt);
/* Render a merge to output (NULL: stdout); exit status 0/1, or 2 on a write error. */
int cli_print_merge(const sop_merge *m, sop_format fmt, const char *lang, const char *output);
int cmd_watch(int argc, char **argv);
/* watch --node: every Python process of the host (cli/cmd_watch_node.c) */
int cmd_watch_node(int argc, char **argv);
int cmd_heap(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
/* sopctl run as `py-spy` (argv[0]'s name): py-spy's command line and exit codes (cli/pyspy.c,
 * docs/py-spy.md). */
int cli_pyspy_main(int argc, char **argv);

/* --container NAME|ID and --pod NAMESPACE/NAME in argv rewritten as --pid N, the container's
 * main process (cli/target_select.c). EXIT_CLEAN, or an exit code after printing why. */
int cli_select_target(int argc, char **argv);
/* cli/python_procs.c. Is pid's executable named python* (/proc/PID/exe)? 1 or 0 (gone,
 * unreadable, another). */
int cli_exe_is_python(int pid);
/* Does pid map a shared libpython (an interpreter embedded in another program)? 1 or 0. */
int cli_maps_libpython(int pid);
/* A census of the host's Python processes over rounds (watch --node): by executable name, else
 * by a mapped libpython, the maps of the others read once per 30 rounds (by pid and start time).
 * is_python: 1 or 0; next_round: before each round's questions. */
typedef struct cli_pyprocs cli_pyprocs;
cli_pyprocs *cli_pyprocs_new(void);
int cli_pyprocs_is_python(cli_pyprocs *c, int pid, unsigned long long start_ticks);
void cli_pyprocs_next_round(cli_pyprocs *c);
void cli_pyprocs_free(cli_pyprocs *c);
/* Parse a positive pid; -1 when not a pid. */
int cli_parse_pid(const char *s);
/* Map a libsop error to an exit code. */
int cli_exit_for(int sop_err);
/* Parse a window in seconds (0..3600, fractional); 0 or -1. */
int cli_parse_duration(const char *s, double *out);
/* Parse a sampling rate in Hz (0..10000); 0 or -1. */
int cli_parse_rate(const char *s, double *out);
/* --set KEY=VALUE: arg appended to sets (*n of them, at most CLI_MAX_SETS; checked when the
 * rules load, cli_load_rules); EXIT_CLEAN, or EXIT_USAGE after saying why. */
#define CLI_MAX_SETS 64
int cli_push_set(char **sets, int *n, char *arg);
/* --lang: "en" or "zh" into *out; EXIT_CLEAN, or EXIT_USAGE after saying why. */
int cli_parse_lang(const char *s, const char **out);
/* --every: seconds in (0, 86400] into *out; EXIT_CLEAN, or EXIT_USAGE after saying why. */
int cli_parse_every(const char *s, double *out);
/* A count (--keep, --count, --max-targets): a whole number 1..max in plain digits into *out;
 * 0, or -1 (the caller says why). */
int cli_parse_count(const char *s, long long max, long long *out);
/* The options run, evidence and record share, as getopt returned them: 'p' --pid, 'd'
 * --duration, 'r' --rate, ':' (a value missing) and anything else (unknown). optname is the
 * option as typed, for messages. Returns EXIT_CLEAN, or EXIT_USAGE after printing why. */
int cli_window_opt(int opt, const char *arg, const char *optname, int *pid, double *duration_s,
                   double *rate_hz);
/* A window with a rate that takes fewer than two samples in it measures nothing: EXIT_USAGE
 * after saying so (rate 0 = no sampling, duration 0 = a snapshot: both fine). */
int cli_check_window(double duration_s, double rate_hz);
/* Read a whole file ("-" = stdin) of at most max bytes; malloc'd, NUL-terminated; NULL with
 * errno on failure. */
#include <stddef.h>
char *cli_read_file(const char *path, size_t max, size_t *len);
/* The site file `run` loads when no --site is given: $SOP_SITE if set (empty: none), else
 * this path if it exists. */
#define SOP_SITE_DEFAULT "/etc/sop/site.lua"
struct sop_engine;
/* Load the site file: `path` (from --site), or with path NULL the default above unless
 * no_default. Returns EXIT_CLEAN, or EXIT_USAGE after printing why (a site file that exists
 * but does not load is an error, never skipped). */
int cli_load_site(struct sop_engine *e, const char *path, int no_default);
/* Load RULES (NULL: the default pack), the site file (as cli_load_site) and the --set
 * KEY=VALUE overrides, as `run` does. Returns EXIT_CLEAN, or EXIT_USAGE after printing why. */
int cli_load_rules(struct sop_engine *e, const char *rules, const char *site, int no_site,
                   char **sets, int nsets);
/* Open -o FILE for writing: created 0600 (a report quotes command lines and environment
 * names); a symlink at FILE owned by another user in a directory others can write is refused.
 * NULL after printing why. */
#include <stdio.h>
FILE *cli_open_output(const char *path);
/* The check cli_open_output makes before it opens: 0, or -1 after saying why the path is
 * refused (a symlink of another user's in a directory others can write). */
int cli_check_output_link(const char *path);
/* "sopctl: WHAT: <strerror>: <engine detail>" on stderr. */
struct sop_engine;
void cli_print_error(const char *what, int err, const struct sop_engine *e);

/* --color auto|never|always. auto: colour when fd is a terminal, NO_COLOR is unset or empty,
 * and TERM is not "dumb"; always wins over NO_COLOR (an explicit request). */
typedef enum { CLI_COLOR_AUTO, CLI_COLOR_NEVER, CLI_COLOR_ALWAYS } cli_color;
/* 0, or -1 after printing why. */
int cli_parse_color(const char *arg, cli_color *out);
int cli_use_color(cli_color c, int fd);
/* Columns of the terminal on fd, else $COLUMNS, else 80. */
int cli_term_width(int fd);

#endif
