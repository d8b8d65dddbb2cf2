/* cmd_merge.c — `sopctl merge REPORT.json... | -`: one job-level report from the reports of many
 * ranks (files, or JSON reports on stdin), through sop_merge_* (engine/merge/merge.c). Exit 0: no
 * warn/high finding and nothing missing; 1: some; 2: usage, or no report could be read. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sop.h"

#define REPORTS_MAX (256u << 20)

int cli_print_merge(const sop_merge *m, sop_format fmt, const char *lang, const char *output)
{
    char *out = NULL;
    int problem = 0;
    int rc = sop_merge_render(m, fmt, lang, &out, &problem);
    if (rc != 0) {
        fprintf(stderr, "sopctl: merge: %s\n", sop_strerror(rc));
        return EXIT_USAGE;
    }
    FILE *f = output ? cli_open_output(output) : stdout;
    int status = problem ? EXIT_FINDING : EXIT_CLEAN;
    if (!f) {
        status = EXIT_USAGE;
    } else {
        fputs(out, f);
        if ((f == stdout ? fflush(f) : fclose(f)) != 0) {
            fprintf(stderr, "sopctl: %s: %s\n", output ? output : "stdout", strerror(errno));
            status = EXIT_USAGE;
        }
    }
    sop_free(out);
    return status;
}

int cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, 0, 'f'}, {"lang", required_argument, 0, 'l'},
        {"output", required_argument, 0, 'o'}, {"missing", required_argument, 0, 'm'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    sop_format fmt = SOP_FORMAT_MD;
    const char *lang = "en", *output = NULL;
    int c;
    sop_merge *m = NULL;
    if (sop_merge_new(&m) != 0) {
        fprintf(stderr, "sopctl: out of memory\n");
        return EXIT_USAGE;
    }
    int status = EXIT_CLEAN;
    optind = 1;
    opterr = 0;
    while (status == EXIT_CLEAN && (c = getopt_long(argc, argv, ":f:l:o:m:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (cli_parse_format(optarg, SOP_FORMAT_MERGE, NULL, &fmt) != 0)
                status = EXIT_USAGE;
            break;
        case 'l':
            if (cli_parse_lang(optarg, &lang) != EXIT_CLEAN)
                status = EXIT_USAGE;
            break;
        case 'o':
            output = optarg;
            break;
        case 'm': { /* NODE[=REASON]: a node that gave no report (ssh/pdsh recipes) */
            char *eq = strchr(optarg, '=');
            if (eq)
                *eq = '\0';
            sop_merge_add_missing(m, optarg, eq ? eq + 1 : "no report");
            break;
        }
        case 'h': {
            char names[160];
            printf("usage: sopctl merge [--format %s] [--lang en|zh] [-o FILE]\n"
                   "                    [--missing NODE[=REASON]]... REPORT.json... | -\n"
                   "  REPORT.json: `sopctl run --format json` reports (one or several per file,\n"
                   "  e.g. from `run --ranks`); - reads them from stdin\n",
                   cli_format_names(SOP_FORMAT_MERGE, NULL, "|", "|", names, sizeof names));
            sop_merge_free(m);
            return EXIT_CLEAN;
        }
        case ':':
            fprintf(stderr, "sopctl: option '%s' needs a value\n", argv[optind - 1]);
            status = EXIT_USAGE;
            break;
        default:
            fprintf(stderr, "sopctl: unknown option '%s'\n", argv[optind - 1]);
            status = EXIT_USAGE;
        }
    }
    if (status == EXIT_CLEAN && optind >= argc) {
        fprintf(stderr, "sopctl: merge needs report files, or - for stdin\n");
        status = EXIT_USAGE;
    }
    for (int i = optind; status == EXIT_CLEAN && i < argc; i++) {
        size_t len = 0;
        char *text = cli_read_file(argv[i], REPORTS_MAX, &len);
        const char *name = strcmp(argv[i], "-") == 0 ? "stdin" : argv[i];
        if (!text) {
            char why[256];
            snprintf(why, sizeof why, "cannot read: %s", strerror(errno));
            sop_merge_add_missing(m, name, why);
            continue;
        }
        int rc = sop_merge_add_json(m, name, text, len);
        free(text);
        if (rc == SOP_ENOMEM) {
            fprintf(stderr, "sopctl: out of memory\n");
            status = EXIT_USAGE;
        } else if (rc == SOP_EINVAL) {
            fprintf(stderr,
                    "sopctl: merge: %s: over the merge limits (at most 16384 reports, 20000 "
                    "JSON values in all, 1024 distinct finding ids, 1024 findings a report); "
                    "nothing merged\n",
                    name);
            status = EXIT_USAGE;
        } else if (rc != 0) {
            fprintf(stderr, "sopctl: %s: not (all) sop reports; listed as missing\n", name);
        }
    }
    if (status == EXIT_CLEAN && sop_merge_count(m) == 0) {
        fprintf(stderr, "sopctl: merge: no report could be read\n");
        status = EXIT_USAGE;
    }
    if (status == EXIT_CLEAN)
        status = cli_print_merge(m, fmt, lang, output);
    sop_merge_free(m);
    return status;
}
