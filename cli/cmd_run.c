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

/* What `run`'s command line asks for. */
typedef struct {
    int pid;
    const char *evidence, *lang, *rules, *site, *slurm_job, *output;
    int no_site, ranks;
    sop_format fmt;
    bool fmt_auto, all;
    cli_color color;
    sop_collect_opts co;
    char *sets[CLI_MAX_SETS];
    int nsets;
} run_args;

static void run_usage(void)
{
    char names[160];
    printf("usage: sopctl run [RULES.lua] (--pid N | --evidence FILE |\n"
           "                  --ranks [--pid LAUNCHER] [--slurm-job J]) [--duration S]\n"
           "                  [--rate HZ] [--format %s] [-o FILE]\n"
           "                  [--color auto|never|always] [--all] [--lang en|zh]\n"
           "                  [--set KEY=VALUE]... [--site FILE | --no-site] [--heap]\n"
           "                  (default site: $SOP_SITE, else " SOP_SITE_DEFAULT " if present)\n",
           cli_format_names(SOP_FORMAT_REPORT, "auto", "|", "|", names, sizeof names));
}

/* One option into a; EXIT_CLEAN to go on, else the exit status (-1: --help printed). */
static int run_option(run_args *a, int c, char **argv)
{
    switch (c) {
    case 'e':
        if (a->evidence) {
            fprintf(stderr, "sopctl: --evidence given twice; one evidence file at a time\n");
            return EXIT_USAGE;
        }
        a->evidence = optarg;
        return EXIT_CLEAN;
    case 'S':
        a->site = optarg;
        return EXIT_CLEAN;
    case 'N':
        a->no_site = 1;
        return EXIT_CLEAN;
    case 'R':
        a->ranks = 1;
        return EXIT_CLEAN;
    case 'J':
        a->slurm_job = optarg;
        a->ranks = 1;
        return EXIT_CLEAN;
    case 'C':
        return cli_parse_color(optarg, &a->color) != 0 ? EXIT_USAGE : EXIT_CLEAN;
    case 'A':
        a->all = true;
        return EXIT_CLEAN;
    case 'o':
        a->output = optarg;
        return EXIT_CLEAN;
    case 'f':
        a->fmt_auto = strcmp(optarg, "auto") == 0;
        if (!a->fmt_auto && cli_parse_format(optarg, SOP_FORMAT_REPORT, "auto", &a->fmt) != 0)
            return EXIT_USAGE;
        return EXIT_CLEAN;
    case 'l':
        return cli_parse_lang(optarg, &a->lang);
    case 's':
        return cli_push_set(a->sets, &a->nsets, optarg);
    case 'H':
        a->co.probes |= SOP_PROBE_HEAP;
        return EXIT_CLEAN;
    case 'h':
        run_usage();
        return -1;
    default:
        return cli_window_opt(c, optarg, argv[optind - 1], &a->pid, &a->co.duration_s,
                              &a->co.rate_hz);
    }
}

/* The options and arguments, checked together; EXIT_CLEAN, or the exit status (-1: --help). */
static int run_parse(run_args *a, int argc, char **argv)
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
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:e:d:r:f:l:s:o:h", opts, NULL)) != -1) {
        int st = run_option(a, c, argv);
        if (st != EXIT_CLEAN)
            return st;
    }
    if (optind < argc)
        a->rules = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "sopctl: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (a->site && a->no_site) {
        fprintf(stderr, "sopctl: --site and --no-site contradict each other; give one\n");
        return EXIT_USAGE;
    }
    if (cli_check_window(a->co.duration_s, a->co.rate_hz) != EXIT_CLEAN)
        return EXIT_USAGE;
    if (a->ranks && a->evidence) {
        fprintf(stderr, "sopctl: --ranks diagnoses live processes; it does not take --evidence\n");
        return EXIT_USAGE;
    }
    /* --ranks merges the ranks' reports: a format the merge does not render is refused */
    unsigned takes = a->ranks ? SOP_FORMAT_MERGE : SOP_FORMAT_REPORT;
    if (a->output && a->fmt_auto) { /* a file is not a terminal: by its name, else Markdown */
        a->fmt_auto = false;
        if (cli_format_of_path(a->output, takes, &a->fmt) != 0)
            a->fmt = SOP_FORMAT_MD;
    }
    if (a->ranks && !(sop_format_at(a->fmt)->flags & SOP_FORMAT_MERGE)) {
        char names[160];
        fprintf(stderr, "sopctl: --ranks renders %s, not %s\n",
                cli_format_names(SOP_FORMAT_MERGE, NULL, ", ", " or ", names, sizeof names),
                sop_format_at(a->fmt)->name);
        return EXIT_USAGE;
    }
    if (sop_format_at(a->fmt)->flags & SOP_FORMAT_PICTURES)
        a->co.flags |= SOP_COLLECT_PICTURES;
    if (!a->ranks && (a->pid > 0) == (a->evidence != NULL)) {
        fprintf(stderr, "sopctl: run needs exactly one of --pid N or --evidence FILE\n");
        return EXIT_USAGE;
    }
    return EXIT_CLEAN;
}

/* The evidence: replayed from --evidence, or collected from --pid. EXIT_CLEAN or a status. */
static int run_evidence(sop_engine *e, const run_args *a, sop_evidence **ev)
{
    if (!a->evidence) {
        int rc = sop_collect(e, a->pid, &a->co, ev);
        if (rc != 0) {
            fprintf(stderr, "sopctl: %s\n", sop_last_error(e));
            return cli_exit_for(rc);
        }
        return EXIT_CLEAN;
    }
    size_t len = 0;
    char *text = cli_read_file(a->evidence, EVIDENCE_MAX, &len);
    if (!text) {
        fprintf(stderr, "sopctl: evidence %s: %s\n", a->evidence,
                errno == EINVAL ? "not a regular file (only a file or - for stdin is read)"
                                : strerror(errno));
        return EXIT_USAGE;
    }
    int rc = sop_evidence_from_json(e, text, len, ev);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s: %s\n", a->evidence, sop_last_error(e));
        return EXIT_USAGE;
    }
    return EXIT_CLEAN;
}

/* Evaluate, render (the terminal's form when --format auto reaches one) and write the report
 * to -o or stdout: 0, 1 with a problem found, or the error's status. */
static int run_report(sop_engine *e, const run_args *a, sop_evidence *ev)
{
    sop_report *r = NULL;
    char *out = NULL;
    int status;
    int rc = sop_evaluate(e, ev, &r);
    bool term = a->fmt_auto && isatty(STDOUT_FILENO);
    if (rc == 0 && term)
        rc = sop_report_render_term(r, a->lang, cli_term_width(STDOUT_FILENO),
                                    (cli_use_color(a->color, STDOUT_FILENO) ? SOP_TERM_COLOR : 0) |
                                        (a->all ? SOP_TERM_ALL : 0),
                                    &out);
    else if (rc == 0)
        rc = sop_report_render_with(r, ev, a->fmt, a->lang, &out);
    if (rc != 0) {
        cli_print_error("evaluate", rc, e);
        status = EXIT_USAGE;
    } else if (a->output) {
        FILE *f = cli_open_output(a->output);
        bool ok = f && fputs(out, f) >= 0;
        if (f && fclose(f) != 0)
            ok = false;
        if (!f) {
            status = EXIT_USAGE;
        } else if (!ok) {
            fprintf(stderr, "sopctl: %s: %s\n", a->output, strerror(errno));
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
    return status;
}

int cmd_run(int argc, char **argv)
{
    run_args a = {
        .pid = -1, .lang = "en", .fmt = SOP_FORMAT_MD, .fmt_auto = true, .color = CLI_COLOR_AUTO};
    sop_collect_opts_init(&a.co);
    int status = run_parse(&a, argc, argv);
    if (status != EXIT_CLEAN)
        return status < 0 ? EXIT_CLEAN : status;
    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_strerror(rc));
        return EXIT_USAGE;
    }
    status = cli_load_rules(e, a.rules, a.site, a.no_site, a.sets, a.nsets);
    if (status == EXIT_CLEAN && a.ranks) {
        status = cli_ranks_run(e, a.pid, a.slurm_job, &a.co, a.fmt, a.lang, false, a.output);
        sop_engine_free(e);
        return status;
    }
    sop_evidence *ev = NULL;
    if (status == EXIT_CLEAN)
        status = run_evidence(e, &a, &ev);
    if (status == EXIT_CLEAN)
        status = run_report(e, &a, ev);
    sop_evidence_free(ev);
    sop_engine_free(e);
    if (fflush(stdout) != 0)
        return EXIT_USAGE;
    return status;
}
