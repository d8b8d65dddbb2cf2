/* cmd_run.c — `sopctl run [RULES.lua] (--pid N | --evidence FILE) ...`: load rules and the site
 * file, collect or replay evidence, evaluate, print the report; exit 0/1/2/3 per
 * docs/contract.md. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rank_discovery.h"
#include "sop.h"

#define MAX_SETS 64
#define EVIDENCE_MAX (64u << 20)

int cli_load_rules(sop_engine *e, const char *rules, const char *site, int no_site, char **sets,
                   int nsets)
{
    int rc = rules ? sop_load_rules_file(e, rules) : sop_load_rules_default(e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_last_error(e));
        return EXIT_USAGE;
    }
    if ((rc = cli_load_site(e, site, no_site)) != EXIT_CLEAN)
        return rc;
    for (int i = 0; i < nsets; i++) {
        char *eq = strchr(sets[i], '=');
        if (!eq || eq == sets[i]) {
            fprintf(stderr, "sopctl: --set expects KEY=VALUE, got '%s'\n", sets[i]);
            return EXIT_USAGE;
        }
        *eq = '\0';
        rc = sop_set_threshold(e, sets[i], eq + 1);
        *eq = '=';
        if (rc != 0) {
            fprintf(stderr, "sopctl: --set %s: %s\n", sets[i], sop_last_error(e));
            return EXIT_USAGE;
        }
    }
    return EXIT_CLEAN;
}

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {{"pid", required_argument, 0, 'p'},
                                         {"evidence", required_argument, 0, 'e'},
                                         {"duration", required_argument, 0, 'd'},
                                         {"format", required_argument, 0, 'f'},
                                         {"lang", required_argument, 0, 'l'},
                                         {"set", required_argument, 0, 's'},
                                         {"rate", required_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {"site", required_argument, 0, 'S'},
                                         {"no-site", no_argument, 0, 'N'},
                                         {"color", required_argument, 0, 'C'},
                                         {"all", no_argument, 0, 'A'},
                                         {"output", required_argument, 0, 'o'},
                                         {"ranks", no_argument, 0, 'R'},
                                         {"slurm-job", required_argument, 0, 'J'},
                                         {"heap", no_argument, 0, 'H'},
                                         {0, 0, 0, 0}};
    int pid = -1;
    const char *evidence = NULL, *lang = "en", *rules = NULL, *site = NULL;
    int no_site = 0, ranks = 0;
    const char *slurm_job = NULL;
    sop_format fmt = SOP_FORMAT_MD;
    bool fmt_auto = true, all = false;
    const char *output = NULL;
    cli_color color = CLI_COLOR_AUTO;
    sop_collect_opts co;
    sop_collect_opts_init(&co);
    char *sets[MAX_SETS];
    int nsets = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:e:d:r:f:l:s:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'e':
            if (evidence) {
                fprintf(stderr, "sopctl: --evidence given twice; one evidence file at a time\n");
                return EXIT_USAGE;
            }
            evidence = optarg;
            break;
        case 'S':
            site = optarg;
            break;
        case 'N':
            no_site = 1;
            break;
        case 'R':
            ranks = 1;
            break;
        case 'J':
            slurm_job = optarg;
            ranks = 1;
            break;
        case 'C':
            if (cli_parse_color(optarg, &color) != 0)
                return EXIT_USAGE;
            break;
        case 'A':
            all = true;
            break;
        case 'o':
            output = optarg;
            break;
        case 'f':
            fmt_auto = strcmp(optarg, "auto") == 0;
            if (!fmt_auto && cli_parse_format(optarg, SOP_FORMAT_REPORT, "auto", &fmt) != 0)
                return EXIT_USAGE;
            break;
        case 'l':
            if (strcmp(optarg, "en") != 0 && strcmp(optarg, "zh") != 0) {
                fprintf(stderr, "sopctl: --lang: '%s' is not en or zh\n", optarg);
                return EXIT_USAGE;
            }
            lang = optarg;
            break;
        case 's':
            if (nsets == MAX_SETS) {
                fprintf(stderr, "sopctl: too many --set options (at most %d)\n", MAX_SETS);
                return EXIT_USAGE;
            }
            sets[nsets++] = optarg;
            break;
        case 'H':
            co.probes |= SOP_PROBE_HEAP;
            break;
        case 'h': {
            char names[160];
            printf("usage: sopctl run [RULES.lua] (--pid N | --evidence FILE |\n"
                   "                  --ranks [--pid LAUNCHER] [--slurm-job J]) [--duration S]\n"
                   "                  [--rate HZ] [--format %s] [-o FILE]\n"
                   "                  [--color auto|never|always] [--all] [--lang en|zh]\n"
                   "                  [--set KEY=VALUE]... [--site FILE | --no-site] [--heap]\n"
                   "                  (default site: $SOP_SITE, else " SOP_SITE_DEFAULT
                   " if present)\n",
                   cli_format_names(SOP_FORMAT_REPORT, "auto", "|", "|", names, sizeof names));
            return EXIT_CLEAN;
        }
        default: {
            int st = cli_window_opt(c, optarg, argv[optind - 1], &pid, &co.duration_s, &co.rate_hz);
            if (st != EXIT_CLEAN)
                return st;
        }
        }
    }
    if (optind < argc)
        rules = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "sopctl: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (site && no_site) {
        fprintf(stderr, "sopctl: --site and --no-site contradict each other; give one\n");
        return EXIT_USAGE;
    }
    if (cli_check_window(co.duration_s, co.rate_hz) != EXIT_CLEAN)
        return EXIT_USAGE;
    if (ranks && evidence) {
        fprintf(stderr, "sopctl: --ranks diagnoses live processes; it does not take --evidence\n");
        return EXIT_USAGE;
    }
    /* --ranks merges the ranks' reports: a format the merge does not render is refused */
    unsigned takes = ranks ? SOP_FORMAT_MERGE : SOP_FORMAT_REPORT;
    if (output && fmt_auto) { /* a file is not a terminal: by its name, else Markdown */
        fmt_auto = false;
        if (cli_format_of_path(output, takes, &fmt) != 0)
            fmt = SOP_FORMAT_MD;
    }
    if (ranks && !(sop_format_at(fmt)->flags & SOP_FORMAT_MERGE)) {
        char names[160];
        fprintf(stderr, "sopctl: --ranks renders %s, not %s\n",
                cli_format_names(SOP_FORMAT_MERGE, NULL, ", ", " or ", names, sizeof names),
                sop_format_at(fmt)->name);
        return EXIT_USAGE;
    }
    if (sop_format_at(fmt)->flags & SOP_FORMAT_PICTURES)
        co.flags |= SOP_COLLECT_PICTURES;
    if (!ranks && (pid > 0) == (evidence != NULL)) {
        fprintf(stderr, "sopctl: run needs exactly one of --pid N or --evidence FILE\n");
        return EXIT_USAGE;
    }

    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_strerror(rc));
        return EXIT_USAGE;
    }
    int status = cli_load_rules(e, rules, site, no_site, sets, nsets);
    sop_evidence *ev = NULL;
    if (status == EXIT_CLEAN && ranks) {
        status = cli_ranks_run(e, pid, slurm_job, &co, fmt, lang, false, output);
        sop_engine_free(e);
        return status;
    }
    if (status == EXIT_CLEAN && evidence) {
        size_t len = 0;
        char *text = cli_read_file(evidence, EVIDENCE_MAX, &len);
        if (!text) {
            fprintf(stderr, "sopctl: evidence %s: %s\n", evidence,
                    errno == EINVAL ? "not a regular file (only a file or - for stdin is read)"
                                    : strerror(errno));
            status = EXIT_USAGE;
        } else {
            rc = sop_evidence_from_json(e, text, len, &ev);
            free(text);
            if (rc != 0) {
                fprintf(stderr, "sopctl: %s: %s\n", evidence, sop_last_error(e));
                status = EXIT_USAGE;
            }
        }
    } else if (status == EXIT_CLEAN) {
        rc = sop_collect(e, pid, &co, &ev);
        if (rc != 0) {
            fprintf(stderr, "sopctl: %s\n", sop_last_error(e));
            status = cli_exit_for(rc);
        }
    }
    if (status == EXIT_CLEAN) {
        sop_report *r = NULL;
        char *out = NULL;
        rc = sop_evaluate(e, ev, &r);
        bool term = fmt_auto && isatty(STDOUT_FILENO);
        if (rc == 0 && term)
            rc = sop_report_render_term(r, lang, cli_term_width(STDOUT_FILENO),
                                        (cli_use_color(color, STDOUT_FILENO) ? SOP_TERM_COLOR : 0) |
                                            (all ? SOP_TERM_ALL : 0),
                                        &out);
        else if (rc == 0)
            rc = sop_report_render_with(r, ev, fmt, lang, &out);
        if (rc != 0) {
            cli_print_error("evaluate", rc, e);
            status = EXIT_USAGE;
        } else if (output) {
            FILE *f = cli_open_output(output);
            bool ok = f && fputs(out, f) >= 0;
            if (f && fclose(f) != 0)
                ok = false;
            if (!f) {
                status = EXIT_USAGE;
            } else if (!ok) {
                fprintf(stderr, "sopctl: %s: %s\n", output, strerror(errno));
                status = EXIT_USAGE;
            } else {
                status = sop_report_has_problem(r) ? EXIT_FINDING : EXIT_CLEAN;
            }
        } else {
            fputs(out, stdout);
            status = sop_report_has_problem(r) ? EXIT_FINDING : EXIT_CLEAN;
        }
        sop_free(out);
        sop_report_free(r);
    }
    sop_evidence_free(ev);
    sop_engine_free(e);
    if (fflush(stdout) != 0)
        return EXIT_USAGE;
    return status;
}
