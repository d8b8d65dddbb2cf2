/* cmd_check.c — `sopctl check RULES.lua [--site FILE] [--set KEY=VALUE]... [--doc|--json]`:
 * load and validate a rule pack (RULES "default": the embedded one) and list its rule ids, or
 * print its generated documentation (docs/rules.md) or description as JSON; exit 2 with
 * file:line when it does not load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sop.h"

int cmd_check(int argc, char **argv)
{
    const char *rules = NULL, *site = NULL;
    int doc = 0; /* 0 ids, 1 Markdown, 2 JSON */
    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_strerror(rc));
        return EXIT_USAGE;
    }
    int status = EXIT_CLEAN;
    /* Positional rule file; --set pairs are checked against its thresholds. */
    const char *sets[64];
    int nsets = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--set") == 0 && i + 1 < argc && nsets < 64)
            sets[nsets++] = argv[++i];
        else if (strncmp(argv[i], "--set=", 6) == 0 && nsets < 64)
            sets[nsets++] = argv[i] + 6;
        else if (strcmp(argv[i], "--doc") == 0)
            doc = 1;
        else if (strcmp(argv[i], "--json") == 0)
            doc = 2;
        else if (strcmp(argv[i], "--site") == 0 && i + 1 < argc)
            site = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "sopctl: unknown option '%s'\n", argv[i]);
            status = EXIT_USAGE;
        } else if (!rules)
            rules = argv[i];
        else {
            fprintf(stderr, "sopctl: unexpected argument '%s'\n", argv[i]);
            status = EXIT_USAGE;
        }
    }
    if (status == EXIT_CLEAN && !rules) {
        fprintf(stderr, "usage: sopctl check RULES.lua|default [--site FILE] [--set KEY=VALUE]... "
                        "[--doc|--json]\n");
        status = EXIT_USAGE;
    }
    if (status == EXIT_CLEAN) {
        rc = strcmp(rules, "default") == 0 ? sop_load_rules_default(e)
                                           : sop_load_rules_file(e, rules);
        if (rc != 0) {
            fprintf(stderr, "sopctl: %s\n", sop_last_error(e));
            status = EXIT_USAGE;
        } else if (site && sop_load_site_file(e, site) != 0) {
            fprintf(stderr, "sopctl: %s\n", sop_last_error(e));
            status = EXIT_USAGE;
        }
    }
    for (int i = 0; status == EXIT_CLEAN && i < nsets; i++) {
        char key[128];
        const char *eq = strchr(sets[i], '=');
        if (!eq || eq == sets[i] || (size_t)(eq - sets[i]) >= sizeof key) {
            fprintf(stderr, "sopctl: --set expects KEY=VALUE, got '%s'\n", sets[i]);
            status = EXIT_USAGE;
            break;
        }
        memcpy(key, sets[i], (size_t)(eq - sets[i]));
        key[eq - sets[i]] = '\0';
        if ((rc = sop_set_threshold(e, key, eq + 1)) != 0) {
            fprintf(stderr, "sopctl: --set %s: %s\n", sets[i], sop_last_error(e));
            status = EXIT_USAGE;
        }
    }
    if (status == EXIT_CLEAN && doc) {
        char *text = NULL;
        if ((rc = sop_rules_doc(e, doc == 2 ? SOP_FORMAT_JSON : SOP_FORMAT_MD, &text)) != 0) {
            fprintf(stderr, "sopctl: %s\n", sop_last_error(e));
            status = EXIT_USAGE;
        } else {
            fputs(text, stdout);
            if (doc == 2)
                fputc('\n', stdout);
        }
        free(text);
    } else if (status == EXIT_CLEAN) {
        size_t n = sop_rule_count(e);
        for (size_t i = 0; i < n; i++)
            printf("%s\n", sop_rule_id(e, i));
        fprintf(stderr, "%s: %zu rules OK\n", rules, n);
    }
    sop_engine_free(e);
    return status;
}
