/* cmd_evidence.c — `sopctl evidence --pid N [--duration S] [--rate HZ] [-o FILE]`: the evidence the rules
 * see, as JSON (docs/evidence.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sop.h"

int cmd_evidence(int argc, char **argv)
{
    static const struct option opts[] = {{"pid", required_argument, 0, 'p'},
                                         {"duration", required_argument, 0, 'd'},
                                         {"output", required_argument, 0, 'o'},
                                         {"rate", required_argument, 0, 'r'},
                                         {"no-python", no_argument, 0, 'P'},
        {"heap", no_argument, 0, 'H'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int pid = -1, c;
    const char *output = NULL;
    sop_collect_opts co;
    sop_collect_opts_init(&co);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:d:o:r:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'P':
            co.python = 0;
            break;
        case 'H':
            co.probes |= SOP_PROBE_HEAP;
            break;
        case 'h':
            printf("usage: sopctl evidence --pid N [--duration S] [--rate HZ] [-o FILE] [--no-python] [--heap]\n");
            return EXIT_CLEAN;
        default: {
            int st = cli_window_opt(c, optarg, argv[optind - 1], &pid, &co.duration_s, &co.rate_hz);
            if (st != EXIT_CLEAN)
                return st;
        }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sopctl: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (pid < 0) {
        fprintf(stderr, "sopctl: evidence needs --pid N\n");
        return EXIT_USAGE;
    }
    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_strerror(rc));
        return EXIT_USAGE;
    }
    sop_evidence *ev = NULL;
    char *json = NULL;
    int status = EXIT_CLEAN;
    rc = sop_collect(e, pid, &co, &ev);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_last_error(e));
        status = cli_exit_for(rc);
    } else if ((rc = sop_evidence_to_json(ev, 1, &json)) != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_strerror(rc));
        status = EXIT_USAGE;
    } else {
        FILE *f = output ? fopen(output, "w") : stdout;
        if (!f) {
            perror(output);
            status = EXIT_USAGE;
        } else {
            fputs(json, f);
            fputc('\n', f);
            if ((f == stdout ? fflush(f) : fclose(f)) != 0) {
                perror(output ? output : "stdout");
                status = EXIT_USAGE;
            }
        }
    }
    sop_free(json);
    sop_evidence_free(ev);
    sop_engine_free(e);
    return status;
}
