/* test_report.c — the value tree, JSON in/out, and the report: building (severity order,
 * exit status) and rendering in md/json/text, en/zh, with target control characters escaped. */
#include <math.h>

#include "api_int.h"
#include "engine.h"
#include "escape.h"
#include "json.h"
#include "render.h"
#include "strbuf.h"
#include "t.h"
#include "value.h"

static sop_value *text(const char *en, const char *zh)
{
    sop_value *t = sop__v_obj();
    sop__v_set_str(t, "en", en);
    sop__v_set_str(t, "zh", zh);
    return t;
}

static sop_value *finding(const char *id, const char *sev, const char *evidence)
{
    sop_value *f = sop__v_obj();
    sop__v_set_str(f, "id", id);
    sop__v_set_str(f, "section", "2.1");
    sop__v_set_str(f, "severity", sev);
    sop__v_set(f, "symptom", text("process killed", "进程被杀"));
    sop__v_set_str(f, "evidence", evidence);
    sop__v_set(f, "cause", text("cause", "根因"));
    sop__v_set_str(f, "fix", "fix | it");
    sop__v_set_str(f, "verify", "verify");
    sop_value *refs = sop__v_arr_at(f, "refs");
    sop__v_push(refs, sop__v_str("https://example.org/doc"));
    return f;
}

static void test_value_and_json(void)
{
    sop_value *o = sop__v_obj();
    sop__v_set_int(o, "absent", SOP_NA);
    sop__v_set_dbl(o, "nan", NAN);
    sop__v_set_int(o, "n", 42);
    sop__v_set_str(o, "s",
                   "a\x01"
                   "b");
    CHECK(sop__v_get(o, "absent") == NULL);
    CHECK(sop__v_get(o, "nan") == NULL);
    double n = 0;
    CHECK(sop__v_get_num(o, "n", &n) && n == 42);
    char *json = sop__json_print(o, 0);
    CHECK(json && strstr(json, "\\u0001") != NULL);
    sop_value *back = sop__json_parse(json, strlen(json), NULL, 0);
    CHECK(back && sop__v_get_num(back, "n", &n) && n == 42);
    CHECK_EQ_S(sop__v_get_str(back, "s"), "a\x01"
                                          "b");
    free(json);
    sop__v_free(back);
    sop__v_free(o);

    char err[128] = "";
    CHECK(sop__json_parse("{\"a\": [1, 2", 11, err, sizeof err) == NULL);
    CHECK(strstr(err, "malformed") != NULL);
    /* Nesting deeper than the bound is refused, not followed. */
    char deep[400];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 200);
    CHECK(sop__json_parse(deep, sizeof deep, err, sizeof err) == NULL);
}

static void test_escape(void)
{
    sop_sb b = {0};
    sop__sb_put_escaped(&b, "a\x1b[31mred\x7f|\xc2\x85z", true);
    char *s = sop__sb_take(&b);
    CHECK_EQ_S(s, "a\\x1b\\[31mred\\x7f\\|\\u0085z"); /* Markdown: '[' escaped too */
    free(s);
    char *j = sop__json_escape_controls("\"x\x7fy\xc2\x9b\"");
    CHECK_EQ_S(j, "\"x\\u007fy\\u009b\"");
    free(j);
}

static void test_report(void)
{
    sop_value *ev = sop__v_obj();
    sop__v_set_int(ev, "pid", 1234);
    sop_value *proc = sop__v_obj_at(ev, "proc");
    sop__v_set_str(proc, "comm", "py\x1b]0;pwned\x07thon");
    sop__v_set_str(proc, "cmdline", "python3 train.py\nFAKE LINE");
    sop__v_set_dbl(ev, "collect_ms", 3.5);
    sop_value *missing = sop__v_arr_at(ev, "missing");
    sop_value *m = sop__v_obj();
    sop__v_set_str(m, "probe", "python");
    sop__v_set_str(m, "reason", "not a CPython process");
    sop__v_push(missing, m);

    sop_value *verdicts = sop__v_obj();
    sop_value *f = sop__v_arr_at(verdicts, "findings");
    sop__v_push(f, finding("a.info", "info", "1 thing"));
    sop__v_push(f, finding("b.high", "high", "anon-rss 245 GiB"));
    sop__v_push(f, finding("c.warn", "warn", "2 things"));
    sop_value *cleared = sop__v_arr_at(verdicts, "cleared");
    sop_value *c = sop__v_obj();
    sop__v_set_str(c, "id", "mem.near_limit");
    sop__v_set_str(c, "section", "2.2");
    sop__v_set(c, "note", text("RSS at 10% of limit", "RSS 为上限的 10%"));
    sop__v_push(cleared, c);

    bool problem = false;
    sop_value *r = sop__report_build(verdicts, ev, 0.25, &problem);
    CHECK(r != NULL);
    CHECK(problem);
    const sop_value *fs = sop__v_get(r, "findings");
    CHECK(fs && fs->count == 3);
    CHECK_EQ_S(sop__v_get_str(fs->child, "id"), "b.high");
    CHECK_EQ_S(sop__v_get_str(fs->child->next, "id"), "c.warn");
    CHECK_EQ_S(sop__v_get_str(fs->last, "id"), "a.info");
    CHECK(sop__v_get(r, "unknown") != NULL && sop__v_get(r, "rule_errors") != NULL);

    char *md = sop__report_render(r, SOP_FORMAT_MD, "en");
    CHECK(md && strstr(md, "| symptom | evidence | cause | fix | verify | refs |") != NULL);
    CHECK(md && strstr(md, "fix \\| it") != NULL);
    CHECK(md && strchr(md, '\x1b') == NULL && strchr(md, '\x07') == NULL);
    CHECK(md && strstr(md, "\\x1b\\]0;pwned\\x07") != NULL);
    CHECK(md && strstr(md, "train.py\\x0aFAKE") != NULL);
    CHECK(md && strstr(md, "not a CPython process") != NULL);
    free(md);

    char *zh = sop__report_render(r, SOP_FORMAT_MD, "zh");
    CHECK(zh && strstr(zh, "进程被杀") != NULL && strstr(zh, "症状") != NULL);
    free(zh);

    char *txt = sop__report_render(r, SOP_FORMAT_TEXT, "en");
    CHECK(txt && strstr(txt, "[HIGH] b.high") != NULL);
    CHECK(txt && strchr(txt, '\x1b') == NULL);
    free(txt);

    char *json = sop__report_render(r, SOP_FORMAT_JSON, "zh");
    CHECK(json != NULL);
    sop_value *back = json ? sop__json_parse(json, strlen(json), NULL, 0) : NULL;
    CHECK(back != NULL);
    const sop_value *bf = sop__v_get(back, "findings");
    CHECK(bf && bf->child && strcmp(sop__v_get_str(bf->child, "symptom"), "进程被杀") == 0);
    CHECK(sop__v_get(back, "missing_evidence") && sop__v_get(back, "missing_evidence")->count == 1);
    double cms = 0;
    CHECK(sop__v_get_num(sop__v_get(back, "timing_ms"), "collect", &cms) && cms == 3.5);
    CHECK(json && strchr(json, '\x1b') == NULL);
    free(json);
    sop__v_free(back);
    sop__v_free(r);

    /* Only info findings: no problem. */
    sop_value *v2 = sop__v_obj();
    sop__v_push(sop__v_arr_at(v2, "findings"), finding("a.info", "info", "1"));
    sop_value *r2 = sop__report_build(v2, ev, 0, &problem);
    CHECK(!problem);
    sop__v_free(r2);
    sop__v_free(ev);
}

/* The target block as every writer shows it (sop__report_target): pid, comm, command line,
 * Python and the container line in Markdown, text, the terminal and HTML; the container's parts
 * as sop_target_info's labels; a hostile container name escaped everywhere. */
static void test_target_block(void)
{
    sop_value *ev = sop__v_obj();
    sop__v_set_int(ev, "pid", 4321);
    sop__v_set_bool(ev, "alive", false);
    sop_value *proc = sop__v_obj_at(ev, "proc");
    sop__v_set_str(proc, "comm", "python3");
    sop__v_set_str(proc, "cmdline", "python3 serve.py");
    sop__v_set_str(sop__v_obj_at(ev, "python"), "version", "3.12.1");
    sop_value *ct = sop__v_obj_at(ev, "container");
    sop__v_set_str(ct, "runtime", "containerd");
    sop__v_set_str(ct, "id", "0123456789abcdef0123");
    sop__v_set_str(ct, "name", "web\x1b[2J");
    sop__v_set_str(ct, "pod", "api-7f");
    sop__v_set_str(ct, "namespace", "prod");
    sop__v_set_str(ct, "container", "server");
    bool problem = false;
    sop_value *r = sop__report_build(sop__v_obj(), ev, 0, &problem);
    CHECK(r != NULL);
    const char *line = "(containerd 0123456789ab) — pod prod/api-7f, container server";
    for (int k = 0; k < 3; k++) {
        static const sop_format fmts[] = {SOP_FORMAT_MD, SOP_FORMAT_TEXT, SOP_FORMAT_HTML};
        char *out = sop__report_render(r, fmts[k], "en");
        CHECK(out && strstr(out, "pid 4321") && strstr(out, "python3 serve.py") &&
              strstr(out, "3.12.1") && strstr(out, line));
        CHECK(out && strchr(out, '\x1b') == NULL);
        if (k < 2)
            CHECK(out && strstr(out, "[exited]"));
        free(out);
    }
    char *term = sop__report_render_term(r, "en", 200, false, false);
    CHECK(term && strstr(term, "pid 4321 (python3) [exited] — Python 3.12.1") &&
          strstr(term, line));
    CHECK(term && strchr(term, '\x1b') == NULL);
    free(term);
    char *om = sop__openmetrics_render(r, NULL);
    CHECK(om && strstr(om, "sop_target_info{pid=\"4321\",comm=\"python3\",python=\"3.12.1\","
                           "pod=\"api-7f\",namespace=\"prod\",container=\"server\","
                           "container_id=\"0123456789abcdef0123\"} 1"));
    free(om);
    sop__v_free(r);
    sop__v_free(ev);
}

int main(void)
{
    test_value_and_json();
    test_escape();
    test_report();
    test_target_block();
    return t_done();
}
