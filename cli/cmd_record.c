/* cmd_record.c — `sopctl record --pid N --duration S [--rate HZ] -o FILE`: sample the Python
 * stacks of a CPython process and its CPython workers into collapsed stacks (.txt) or an SVG
 * flame graph (.svg); a progress line on a terminal for windows over 2 s. Uses include/sop.h. */
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
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int pid = -1, c;
    double duration = 5, rate = 100;
    const char *output = NULL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:d:r:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'h':
            printf("usage: sopctl record --pid N --duration S [--rate HZ] -o FILE(.txt|.svg)\n");
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
    if (pid < 0 || !output) {
        fprintf(stderr, "sopctl: record needs --pid N and -o FILE\n");
        return EXIT_USAGE;
    }
    if (duration <= 0 || rate <= 0) {
        fprintf(stderr, "sopctl: record needs a window and a rate above 0 (--duration %g, --rate %g)\n",
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
    rc = sop_record(e, pid, duration, rate, output, tty ? show_progress : NULL, &duration, &st);
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
