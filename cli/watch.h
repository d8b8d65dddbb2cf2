/* watch.h — what `sopctl watch` (cli/cmd_watch.c) shares with its --on-finding hooks
 * (cli/watch_hooks.c): the watch's state and its log. */
#ifndef SOP_CLI_WATCH_H
#define SOP_CLI_WATCH_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "sop.h"

#define MAX_KEEP 10000
#define MAX_HOOK_ARGS 64
#define MAX_PROBLEMS 256
/* A report's path without its extension; --out is at most OUT_MAX long. */
#define BASE_MAX 3968
#define OUT_MAX 3800

typedef struct {
    char id[128];
    char severity[8];
} finding_key;

typedef struct {
    /* set before the watch starts, read-only afterwards */
    int pid;
    unsigned long long start_ticks; /* /proc/PID/stat starttime: tells a reused pid apart */
    const char *out_dir;
    int out_fd;      /* --out opened once: every file is made relative to it */
    mode_t out_mode; /* reports' mode (--out-mode, default 0600) */
    const char *on_finding;
    int hook_shell;
    int keep;
    const char *lang;
    unsigned long long max_windows; /* --count; 0 = no limit */
    pthread_t main_thread;

    /* the watch's thread only */
    char **kept; /* ring of the last `keep` report paths, without the extension */
    int nkept, kept_head;
    finding_key prev[MAX_PROBLEMS];
    int nprev;
    int ok_windows;
    char last_path[PATH_MAX]; /* the last report written ("" before) */

    /* shared: under mu */
    pthread_mutex_t mu;
    sop_watch *w;
    char *last_json; /* the last successful window's JSON report, for /report */
    double last_ok_unix;

    _Atomic int ended; /* the watch is over: main stops */
    int pm_retried;    /* the target died just after a window read it alive: one more window */
    _Atomic int end_status;
    _Atomic unsigned long long reports_written, hooks_failed;
} watch_ctx;

/* One line on stderr, stamped (one write per line). */
void cli_watch_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Split cmd into at most max words, no shell (buf: as long as cmd); the count or -1. */
int cli_watch_split_words(const char *cmd, char *buf, char **argv, int max);
/* Start --on-finding for a report (its JSON and Markdown paths), without waiting for it. */
void cli_watch_run_hook(watch_ctx *c, const char *json_path, const char *md_path);
/* Wait (bounded) for the hooks still running when the watch ends; collect the finished ones. */
void cli_watch_finish_hooks(watch_ctx *c);
void cli_watch_reap_hooks(watch_ctx *c);

#endif
