/* cmd_pyspy_record.c — `py-spy record` served by sop_record_pyspy (docs/py-spy.md): py-spy's
 * formats (flamegraph, speedscope, raw, chrometrace), options and messages; without --duration
 * until Ctrl-C / SIGTERM or the target's exit; -o defaults to py-spy's PID-TIME.EXT. Launching
 * a program and --function are refused; --native is accepted and said to record Python frames
 * only. Depends on include/sop.h, cli.h and pyspy_args.h. */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli.h"
#include "pyspy_args.h"
#include "sop.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

typedef struct {
    double rate_hz, duration_s;
    bool started;
} record_ctx;

/* Called each tick: says py-spy's first line once attached, and stops on Ctrl-C / SIGTERM. */
static int record_stop(void *p)
{
    record_ctx *c = p;
    if (!c->started) {
        c->started = true;
        if (c->duration_s < 0)
            printf("Sampling process %g times a second. Press Control-C to exit.\n\n", c->rate_hz);
        else
            printf("Sampling process %g times a second for %g seconds. Press Control-C to "
                   "exit.\n\n",
                   c->rate_hz, c->duration_s);
        fflush(stdout);
    }
    return stop_signal != 0;
}

static const char *const FORMATS[] = {"flamegraph", "speedscope", "raw", "chrometrace"};
static const char *const EXTENSIONS[] = {"svg", "json", "txt", "json"};

/* -o FILE, or py-spy's default name: PID-TIME.EXT, TIME in RFC 3339 local time. */
static const char *output_name(const cli_pyspy_args *a, int pid, int fmt, char *buf, size_t cap)
{
    if (a->value[O_OUTPUT])
        return a->value[O_OUTPUT];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char when[64], zone[8];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof zone, "%z", &tm);
    if (strcmp(zone, "+0000") == 0)
        snprintf(zone, sizeof zone, "Z");
    else if (strlen(zone) == 5) /* +HHMM -> +HH:MM */
        memmove(zone + 4, zone + 3, 3), zone[3] = ':';
    snprintf(buf, cap, "%d-%s%s.%s", pid, when, zone, EXTENSIONS[fmt]);
    return buf;
}

/* The record options with values: 0, or PS_USAGE after saying why. */
static int record_values(cli_pyspy_args *a, int *fmt, double *rate, double *duration)
{
    *fmt = SOP_PYSPY_FLAMEGRAPH;
    if (a->value[O_FORMAT]) {
        *fmt = -1;
        for (int k = 0; k < 4; k++)
            if (strcasecmp(a->value[O_FORMAT], FORMATS[k]) == 0)
                *fmt = k;
        if (*fmt < 0)
            return cli_pyspy_usage_error("record",
                                         "invalid value '%s' for '--format <format>'\n  [possible "
                                         "values: flamegraph, raw, speedscope, chrometrace]",
                                         a->value[O_FORMAT]);
    }
    *rate = 100;
    if (a->value[O_RATE] && (cli_parse_rate(a->value[O_RATE], rate) != 0 || *rate < 1))
        return cli_pyspy_usage_error("record", "invalid value '%s' for '--rate <rate>' (1..10000)",
                                     a->value[O_RATE]);
    *duration = -1; /* unlimited */
    const char *d = a->value[O_DURATION];
    if (d && strcmp(d, "unlimited") != 0) {
        char *end = NULL;
        errno = 0;
        *duration = strtod(d, &end);
        if (errno || end == d || *end || !(*duration >= 0 && *duration <= 30 * 86400.0) ||
            !isdigit((unsigned char)d[0]))
            return cli_pyspy_usage_error("record", "invalid value '%s' for '--duration <duration>'",
                                         d);
    }
    return PS_OK;
}

/* py-spy's closing lines. A window that ended before its duration (or one without a duration)
 * without a signal ended because the target exited: the only other way sop_record_pyspy stops. */
static void record_done(int fmt, const char *path, const sop_record_stats *st, double duration)
{
    if (stop_signal)
        printf("\nStopped sampling because Control-C pressed\n");
    else if (duration < 0 || st->window_s + 0.05 < duration)
        printf("\nStopped sampling because process exited\n");
    static const char *const WHAT[] = {"flamegraph data", "speedscope file", "raw flamegraph data",
                                       "chrome trace"};
    printf("Wrote %s to '%s'. Samples: %ld Errors: %ld\n", WHAT[fmt], path, st->thread_samples,
           st->missed);
    if (fmt == SOP_PYSPY_SPEEDSCOPE)
        printf("Visit https://www.speedscope.app/ to view\n");
    else if (fmt == SOP_PYSPY_CHROMETRACE)
        printf("Visit chrome://tracing or https://ui.perfetto.dev/ to view\n");
}

int cli_pyspy_record(cli_pyspy_args *a)
{
    if (a->program)
        return cli_pyspy_refuse(
            "sop's py-spy attaches to a running process (--pid PID); launching a "
            "program under it is not served");
    int pid = 0, fmt = SOP_PYSPY_FLAMEGRAPH,
        rc = cli_pyspy_parse_pid("record", a->value[O_PID], &pid);
    double rate = 100, duration = -1;
    if (rc == PS_OK)
        rc = record_values(a, &fmt, &rate, &duration);
    if (rc != PS_OK)
        return rc;
    if (a->count[O_FUNCTION])
        return cli_pyspy_refuse(
            a->count[O_NOLINENO] ? "--function & --nolinenos can't be used together"
                                 : "--function is not served by sop (it does not read a function's "
                                   "first line); --nolineno leaves line numbers out");
    if (a->count[O_NATIVE] && a->count[O_NONBLOCKING])
        return cli_pyspy_refuse("Can't get native stack traces with the --nonblocking option.");
    if (a->count[O_NATIVE])
        fprintf(stderr, "py-spy (sop): --native: sop records Python frames only; native frames "
                        "are left out of the profile\n");
    char name[128];
    const char *path = output_name(a, pid, fmt, name, sizeof name);
    if (cli_check_output_link(path) != 0)
        return PS_FAIL;
    unsigned flags = (a->count[O_IDLE] ? SOP_PYSPY_IDLE : 0) |
                     (a->count[O_GIL] ? SOP_PYSPY_GIL : 0) |
                     (a->count[O_THREADS] ? SOP_PYSPY_THREADS : 0) |
                     (a->count[O_SUBPROCESSES] ? SOP_PYSPY_SUBPROCESSES : 0) |
                     (a->count[O_NOLINENO] ? SOP_PYSPY_NOLINENO : 0) |
                     (a->count[O_FULL_FILENAMES] ? SOP_PYSPY_FULL_FILENAMES : 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: the sampler's sleep ends at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    record_ctx ctx = {rate, duration, false};
    sop_engine *e = NULL;
    if ((rc = sop_engine_new(&e)) != 0)
        return cli_pyspy_fail(rc, pid, NULL);
    sop_record_stats st;
    rc = sop_record_pyspy(e, pid, duration, rate, path, (sop_pyspy_format)fmt, flags, record_stop,
                          &ctx, &st);
    int status = PS_OK;
    if (rc == SOP_OK)
        record_done(fmt, path, &st, duration);
    else
        status = cli_pyspy_fail(rc, pid, sop_last_error(e));
    sop_engine_free(e);
    return status;
}
