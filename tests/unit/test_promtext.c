/* test_promtext.c — cli/promtext.c: which Accept headers get OpenMetrics, and OpenMetrics
 * families rewritten as the Prometheus text format 0.0.4 (a counter's TYPE/HELP under its
 * `_total` name, no UNIT or # EOF, `unknown` as `untyped`, samples unchanged). The live check
 * is tests/e2e/test_listen.py (promtool check metrics on a running watch's /metrics). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/promtext.c"
#include "t.h"

static void test_accept(void)
{
    CHECK_EQ_I(cli_accepts_openmetrics(NULL), 0);
    CHECK_EQ_I(cli_accepts_openmetrics(""), 0);
    CHECK_EQ_I(cli_accepts_openmetrics("*/*"), 0);
    CHECK_EQ_I(cli_accepts_openmetrics("text/plain;version=0.0.4"), 0);
    /* what Prometheus 2.x sends */
    CHECK_EQ_I(cli_accepts_openmetrics("application/openmetrics-text;version=1.0.0,application/"
                                       "openmetrics-text;version=0.0.1;q=0.75,text/plain;"
                                       "version=0.0.4;q=0.5,*/*;q=0.1"),
               1);
    CHECK_EQ_I(cli_accepts_openmetrics("text/plain, Application/OpenMetrics-Text"), 1);
    CHECK_EQ_I(cli_accepts_openmetrics("application/openmetrics-text; q=0"), 0);
    CHECK_EQ_I(cli_accepts_openmetrics("application/openmetrics-text;q=0.0, text/plain"), 0);
    CHECK_EQ_I(cli_accepts_openmetrics("application/openmetrics-textual"), 0); /* not a prefix */
}

static void test_rewrite(void)
{
    const char *om = "# TYPE sop_watch_runs counter\n"
                     "# HELP sop_watch_runs Runs of the watch so far\n"
                     "sop_watch_runs_total 3\n"
                     "# TYPE sop_window_seconds gauge\n"
                     "# UNIT sop_window_seconds seconds\n"
                     "# HELP sop_window_seconds The window\n"
                     "sop_window_seconds 1\n"
                     "# TYPE sop_odd unknown\n"
                     "# HELP sop_odd Something \\\\ odd\n"
                     "sop_odd{x=\"a\\\"b\"} 2\n"
                     "# TYPE sop_cpu_seconds counter\n"
                     "# UNIT sop_cpu_seconds seconds\n"
                     "# HELP sop_cpu_seconds CPU\n"
                     "sop_cpu_seconds_total 0.5\n"
                     "# EOF\n";
    char *text = cli_openmetrics_to_text(om);
    CHECK(text != NULL);
    if (!text)
        return;
    CHECK_EQ_S(text, "# TYPE sop_watch_runs_total counter\n"
                     "# HELP sop_watch_runs_total Runs of the watch so far\n"
                     "sop_watch_runs_total 3\n"
                     "# TYPE sop_window_seconds gauge\n"
                     "# HELP sop_window_seconds The window\n"
                     "sop_window_seconds 1\n"
                     "# TYPE sop_odd untyped\n"
                     "# HELP sop_odd Something \\\\ odd\n"
                     "sop_odd{x=\"a\\\"b\"} 2\n"
                     "# TYPE sop_cpu_seconds_total counter\n"
                     "# HELP sop_cpu_seconds_total CPU\n"
                     "sop_cpu_seconds_total 0.5\n");
    free(text);
    /* no trailing newline, empty input */
    text = cli_openmetrics_to_text("# TYPE a counter\n# HELP a x\na_total 1");
    CHECK(text && strcmp(text, "# TYPE a_total counter\n# HELP a_total x\na_total 1\n") == 0);
    free(text);
    text = cli_openmetrics_to_text("");
    CHECK(text && !*text);
    free(text);
}

int main(void)
{
    test_accept();
    test_rewrite();
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail ? 1 : 0;
}
