/* cmd_record.c — `sopctl record --pid N --duration S [--rate HZ] -o FILE`: sample the Python
 * stacks of a CPython process and its CPython workers into collapsed stacks (.txt), an
 * interactive SVG flame graph (.svg) or timeline (--timeline), speedscope JSON
 * (.speedscope.json) or one HTML page (.html); idle samples left out unless --idle; a progress
 * line on a terminal for windows over 2 s. Uses include/sop.h. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sop.h"

static void show_progress(void *ctx, double done)
{
    const double *dur = ctx;
    if (done > 1)
        done = 1;
    fprintf(stderr, "\rsopctl record: %3.0f%% (%.1f / %.1f s)", done * 100, done * *dur, *dur);
    if (done >= 1)
        fputc('\n', stderr);
    fflush(stderr);
}

int cmd_record(int argc, char **argv)
{
    static const struct option opts[] = {{"pid", required_argument, 0, 'p'},
                                         {"duration", required_argument, 0, 'd'},
                                         {"rate", required_argument, 0, 'r'},
                                         {"output", required_argument, 0, 'o'},
                                         {"format", required_argument, 0, 'f'},
                                         {"idle", no_argument, 0, 'I'},
                                         {"timeline", no_argument, 0, 'T'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int pid = -1, c;
    double duration = 5, rate = 100;
    const char *output = NULL;
    sop_record_format fmt = SOP_RECORD_BY_NAME;
    unsigned flags = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:d:r:o:f:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'I':
            flags |= SOP_RECORD_IDLE;
            break;
        case 'T':
            flags |= SOP_RECORD_TIMELINE;
            break;
        case 'f':
            if (strcmp(optarg, "collapsed") == 0 || strcmp(optarg, "txt") == 0)
                fmt = SOP_RECORD_COLLAPSED;
            else if (strcmp(optarg, "svg") == 0)
                fmt = SOP_RECORD_SVG;
            else if (strcmp(optarg, "speedscope") == 0)
                fmt = SOP_RECORD_SPEEDSCOPE;
            else if (strcmp(optarg, "html") == 0)
                fmt = SOP_RECORD_HTML;
            else {
                fprintf(stderr,
                        "sopctl: --format: '%s' is not collapsed, svg, speedscope or "
                        "html\n",
                        optarg);
                return EXIT_USAGE;
            }
            break;
        case 'h':
            printf("usage: sopctl record --pid N --duration S [--rate HZ] [--idle] [--timeline]\n"
                   "                     [--format collapsed|svg|speedscope|html]\n"
                   "                     -o FILE(.txt|.svg|.speedscope.json|.html)\n"
                   "  idle samples (asleep without the GIL, waiting for a batch) are left out\n"
                   "  unless --idle; --timeline draws a lane per thread instead of the flame\n"
                   "  graph (under an asyncio loop's thread, a lane per coroutine it ran); an\n"
                   "  .html file has both; the format follows the name unless given\n");
            return EXIT_CLEAN;
        default: {
            int st = cli_window_opt(c, optarg, argv[optind - 1], &pid, &duration, &rate);
            if (st != EXIT_CLEAN)
                return st;
        }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sopctl: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (cli_check_window(duration, rate) != EXIT_CLEAN)
        return EXIT_USAGE;
    if (pid < 0 || !output) {
        fprintf(stderr, "sopctl: record needs --pid N and -o FILE\n");
        return EXIT_USAGE;
    }
    if (duration <= 0 || rate <= 0) {
        fprintf(stderr,
                "sopctl: record needs a window and a rate above 0 (--duration %g, --rate %g)\n",
                duration, rate);
        return EXIT_USAGE;
    }
    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_strerror(rc));
        return EXIT_USAGE;
    }
    bool tty = isatty(STDERR_FILENO) && duration > 2;
    sop_record_stats st;
    if ((flags & SOP_RECORD_TIMELINE) && fmt != SOP_RECORD_SVG && fmt != SOP_RECORD_HTML) {
        size_t n = strlen(output);
        bool svg = fmt == SOP_RECORD_BY_NAME && n >= 4 && strcmp(output + n - 4, ".svg") == 0;
        bool html = fmt == SOP_RECORD_BY_NAME && n >= 5 && strcmp(output + n - 5, ".html") == 0;
        if (!svg && !html) {
            fprintf(stderr, "sopctl: --timeline draws an SVG (-o FILE.svg) or goes in an HTML "
                            "page (-o FILE.html)\n");
            sop_engine_free(e);
            return EXIT_USAGE;
        }
    }
    rc = sop_record_ex(e, pid, duration, rate, output, fmt, flags, tty ? show_progress : NULL,
                       &duration, &st);
    int status = EXIT_CLEAN;
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_last_error(e));
        status = cli_exit_for(rc);
    } else {
        fprintf(stderr,
                "sopctl record: %ld samples (%ld missed) at %g Hz over %.2f s, %ld thread "
                "samples in %ld stacks (%ld partial), %.0f ms CPU; wrote %s\n",
                st.samples, st.missed, rate, st.window_s, st.thread_samples, st.stacks,
                st.samples_partial, st.self_cpu_ms, output);
    }
    sop_engine_free(e);
    return status;
}
