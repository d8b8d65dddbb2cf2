/* cmd_evidence.c — `sopctl evidence --pid N [--duration S] [--rate HZ] [-o FILE]`: the evidence the
 * rules see, as JSON (docs/evidence.md); `sopctl evidence --doc [--json]`: that page, generated
 * from the schema tables (or the tables as JSON). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rank_discovery.h"
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
                                         {"ranks", no_argument, 0, 'R'},
                                         {"slurm-job", required_argument, 0, 'J'},
                                         {"doc", no_argument, 0, 'D'},
                                         {"json", no_argument, 0, 'j'},
                                         {0, 0, 0, 0}};
    int pid = -1, c, ranks = 0, doc = 0, as_json = 0;
    const char *output = NULL, *slurm_job = NULL;
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
        case 'R':
            ranks = 1;
            break;
        case 'D':
            doc = 1;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'J':
            slurm_job = optarg;
            ranks = 1;
            break;
        case 'h':
            printf("usage: sopctl evidence (--pid N | --ranks [--pid LAUNCHER] [--slurm-job J])\n"
                   "                       [--duration S] [--rate HZ] [-o FILE] [--no-python] "
                   "[--heap]\n"
                   "       sopctl evidence --doc [--json]   (docs/evidence.md / the schema)\n");
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
    if (as_json && !doc) {
        fprintf(stderr, "sopctl: --json goes with --doc\n");
        return EXIT_USAGE;
    }
    if (doc) {
        char *text = NULL;
        if (sop_evidence_doc(as_json ? SOP_FORMAT_JSON : SOP_FORMAT_MD, &text) != 0) {
            fprintf(stderr, "sopctl: out of memory\n");
            return EXIT_USAGE;
        }
        fputs(text, stdout);
        if (as_json)
            putchar('\n');
        free(text);
        return EXIT_CLEAN;
    }
    if (cli_check_window(co.duration_s, co.rate_hz) != EXIT_CLEAN)
        return EXIT_USAGE;
    if (ranks) {
        sop_engine *e = NULL;
        if (sop_engine_new(&e) != 0)
            return EXIT_USAGE;
        int st = cli_ranks_run(e, pid, slurm_job, &co, SOP_FORMAT_JSON, "en", true, output);
        sop_engine_free(e);
        return st;
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
        if (output && strcmp(output, "-") == 0) /* "-o -": stdout, as everywhere */
            output = NULL;
        FILE *f = output ? cli_open_output(output) : stdout;
        if (!f) {
            status = EXIT_USAGE;
        } else {
            fputs(json, f);
            fputc('\n', f);
            int bad = fflush(f) != 0 || ferror(f);
            if (f != stdout && fclose(f) != 0)
                bad = 1;
            if (bad) {
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
