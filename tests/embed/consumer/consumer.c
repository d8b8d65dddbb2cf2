/* consumer.c — a program built against an *installed* libsop (pkg-config or find_package, see
 * tests/embed/test_install.sh): diagnose the pid given on the command line with the default
 * pack plus an optional site file, print the one-line summary. Depends on sop.h only. */
#include <stdio.h>
#include <stdlib.h>

#include <sop.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: consumer PID [SITE.lua]\n");
        return 2;
    }
    if (sop_version_hex() != SOP_VERSION_HEX) {
        fprintf(stderr, "header %s, library %s\n", SOP_VERSION_STRING, sop_version());
        return 2;
    }
    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc == 0)
        rc = sop_load_rules_default(e);
    if (rc == 0 && argc > 2)
        rc = sop_load_site_file(e, argv[2]);
    sop_collect_opts o;
    sop_collect_opts_init(&o);
    o.duration_s = 0.2;
    sop_evidence *ev = NULL;
    sop_report *r = NULL;
    char *summary = NULL;
    if (rc == 0)
        rc = sop_collect(e, atoi(argv[1]), &o, &ev);
    if (rc == 0)
        rc = sop_evaluate(e, ev, &r);
    if (rc == 0)
        rc = sop_report_summary(r, "en", &summary);
    if (rc != 0) {
        fprintf(stderr, "consumer: %s: %s\n", sop_strerror(rc), sop_last_error(e));
    } else {
        printf("libsop %s, %zu rules, pid %s: %s\n", sop_version(), sop_rule_count(e), argv[1],
               summary);
    }
    sop_free(summary);
    sop_report_free(r);
    sop_evidence_free(ev);
    sop_engine_free(e);
    return rc == 0 ? 0 : 1;
}
