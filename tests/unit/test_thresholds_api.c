/* test_thresholds_api.c — sop_set_threshold()'s semantics as include/sop.h states them (issue
 * 13 item 8): SOP_ENORULES before any load; checked at once against the pack in force
 * (SOP_EUNKNOWNKEY, SOP_EINVAL); kept across reloads; dropped at a load whose pack does not
 * declare it (the load succeeds, with all its rules); sop_clear_thresholds() drops all.
 * Evaluates tests/replay/near_limit.json (the process at 91% of its memory limit). */
#include "sop.h"
#include "t.h"

static char *evidence_text(size_t *len)
{
    return t_slurp("../replay/near_limit.json", len);
}

/* The report's rss_limit_pct threshold, or -1. */
static double rss_limit(sop_engine *e, const char *text, size_t len)
{
    sop_evidence *ev = NULL;
    sop_report *r = NULL;
    char *out = NULL;
    double v = -1;
    if (sop_evidence_from_json(e, text, len, &ev) == 0 && sop_evaluate(e, ev, &r) == 0 &&
        sop_report_render(r, SOP_FORMAT_JSON, "en", &out) == 0) {
        const char *p = strstr(out, "\"rss_limit_pct\":");
        if (p)
            v = strtod(p + 16, NULL);
    }
    sop_free(out);
    sop_report_free(r);
    sop_evidence_free(ev);
    return v;
}

int main(void)
{
    size_t len = 0;
    char *text = evidence_text(&len);
    sop_engine *e = NULL;
    CHECK_EQ_I(sop_engine_new(&e), 0);
    /* before any load: nothing to check against, and nothing kept to break a later load */
    CHECK_EQ_I(sop_set_threshold(e, "no_such_key", "1"), SOP_ENORULES);
    CHECK_EQ_I(sop_set_threshold(e, "rss_limit_pct", "95"), SOP_ENORULES);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    size_t base = sop_rule_count(e);
    CHECK(base > 10);
    CHECK(rss_limit(e, text, len) == 90);
    /* checked at once */
    CHECK_EQ_I(sop_set_threshold(e, "no_such_key", "1"), SOP_EUNKNOWNKEY);
    CHECK(strstr(sop_last_error(e), "no_such_key") != NULL);
    CHECK_EQ_I(sop_set_threshold(e, "rss_limit_pct", "lots"), SOP_EINVAL);
    CHECK_EQ_I(sop_set_threshold(e, "rss_limit_pct", "95"), 0);
    CHECK(rss_limit(e, text, len) == 95);
    /* kept across a reload of a pack that declares it */
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    CHECK(rss_limit(e, text, len) == 95);
    /* a pack without that key loads, with its rules; the override is gone after it */
    static const char OTHER[] = "thresholds { x = 1 }\n"
                                "rule { id = 'o.one', section = '9', severity = 'info', check = "
                                "function() return clear('ok') end }\n";
    CHECK_EQ_I(sop_load_rules_string(e, "other.lua", OTHER, strlen(OTHER)), 0);
    CHECK_EQ_I(sop_rule_count(e), 1);
    CHECK_EQ_I(sop_set_threshold(e, "rss_limit_pct", "95"), SOP_EUNKNOWNKEY);
    CHECK_EQ_I(sop_load_rules_default(e), 0);
    CHECK_EQ_I(sop_rule_count(e), base);
    CHECK(rss_limit(e, text, len) == 90);
    /* sop_clear_thresholds */
    CHECK_EQ_I(sop_set_threshold(e, "rss_limit_pct", "93"), 0);
    CHECK(rss_limit(e, text, len) == 93);
    sop_clear_thresholds(e);
    CHECK(rss_limit(e, text, len) == 90);
    sop_clear_thresholds(NULL);
    sop_engine_free(e);
    free(text);
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail != 0;
}
