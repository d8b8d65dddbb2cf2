/* test_pictures.c — the recording's outputs from synthetic samples, names chosen to break
 * each format (markup, quotes, ]]>, controls, invalid UTF-8, CJK): the flame graph and the
 * timeline are well-formed XML with no external reference, the flame graph leaves idle
 * samples out unless asked and says what share held the GIL, the timeline draws one lane per
 * thread with the right majority state, the speedscope file passes scripts/check_speedscope.py,
 * and the HTML report escapes what the target wrote. Parsing uses Debian's python3. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine.h"
#include "picture_writers.h"
#include "render.h"
#include "sampler.h"
#include "t.h"

static char dir[] = "/tmp/sop-pictures-XXXXXX";

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int run(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    return system(cmd);
}

#define XML_OK "/usr/bin/python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' %s%s"

int main(void)
{
    const char *src = getenv("SOP_SRC");
    CHECK(mkdtemp(dir) != NULL);
    static const char evil[] = "pid 7 (py<th>on);tid 7 (Main\"Thread');<module> (a&b.py);"
                               "f]]>g (x\x01y.py);\xff\xfe bad;数据 (中文.py)";
    sop_stack_count v[3] = {
        {evil, 10, {6, 2, 2, 0, 0, 0}},
        {"pid 7 (py<th>on);tid 8 (sleeper);time.sleep (<built-in>)", 90, {0, 0, 0, 0, 0, 90}},
        {"pid 9 (worker);tid 9 (MainThread);fetch (fetch.py)", 40, {30, 0, 5, 5, 0, 0}},
    };
    char path[256];

    /* flame graph: idle left out by default */
    snprintf(path, sizeof path, "%s/fg.svg", dir);
    FILE *f = fopen(path, "w");
    CHECK(f && sop__flamegraph_write(v, 3, "t<i>tle", 0, f) == 0);
    fclose(f);
    CHECK_EQ_I(run(XML_OK, path, ""), 0);
    char *s = slurp(path);
    CHECK(s && strstr(s, "time.sleep") == NULL);
    CHECK(s && strstr(s, "90 idle samples left out") != NULL);
    CHECK(s && strstr(s, "fetch (fetch.py) (40 samples, 80.00%; GIL held 75%; native 12%; "
                         "disk (D) 12%)") != NULL);
    CHECK(s && strstr(s, "f]]&gt;g") != NULL && strstr(s, "数据") != NULL);
    CHECK(s && strstr(s, "window.sopFlame") != NULL && strstr(s, "<script") != NULL);
    CHECK(s && strstr(s, "href") == NULL && strstr(s, "http://") == strstr(s, "http://www.w3.org"));
    /* --idle keeps them */
    f = fopen(path, "w");
    CHECK(f && sop__flamegraph_write(v, 3, "title", SOP_FG_IDLE, f) == 0);
    fclose(f);
    s = slurp(path);
    CHECK(s && strstr(s, "time.sleep (&lt;built-in&gt;) (90 samples, 64.29%; idle 100%)") != NULL);

    /* speedscope */
    snprintf(path, sizeof path, "%s/x.speedscope.json", dir);
    f = fopen(path, "w");
    CHECK(f && sop__speedscope_write(v, 3, "n\"ame\x02", SOP_FG_IDLE, f) == 0);
    fclose(f);
    if (src) {
        char checker[512];
        snprintf(checker, sizeof checker, "%s/scripts/check_speedscope.py", src);
        CHECK_EQ_I(run("/usr/bin/python3 %s %s", checker, path), 0);
    }
    CHECK_EQ_I(run("/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                   "assert len(d[\"profiles\"]) == 3, d; "
                   "assert d[\"profiles\"][0][\"weights\"] == [10], d' %s%s",
                   path, ""),
               0);

    /* timeline: a lane per thread, majority state in data-top */
    sop_thread_info thr[3] = {{7, 7, 0, "py<th>on", "Main\"Thread"},
                              {7, 8, 0, "py<th>on", "sleeper"},
                              {9, 9, 1, "worker", "MainThread"}};
    sop_timeline_ev ev[300];
    size_t nev = 0;
    for (int i = 0; i < 100; i++) {
        /* thread 7 an event loop's: its last 20 samples in callbacks of two coroutines */
        uint8_t task = i < 80 ? 0 : i < 95 ? 1 : 2;
        ev[nev++] = (sop_timeline_ev){(float)(i * 10), 0, i < 80 ? SOP_ST_BATCH : SOP_ST_GIL, task};
        ev[nev++] = (sop_timeline_ev){(float)(i * 10), 1, SOP_ST_IDLE, 0};
        ev[nev++] = (sop_timeline_ev){(float)(i * 10), 2, SOP_ST_GIL, 0};
    }
    snprintf(path, sizeof path, "%s/tl.svg", dir);
    f = fopen(path, "w");
    CHECK(f && sop__timeline_write(thr, 3, ev, nev, 1.0, 100, "tl <x>", 0, f) == 0);
    fclose(f);
    CHECK_EQ_I(run(XML_OK, path, ""), 0);
    s = slurp(path);
    CHECK(s && strstr(s, "data-tid=\"7\" data-worker=\"0\" data-top=\"batch\" "
                         "data-top-pct=\"80.0\"") != NULL);
    CHECK(s && strstr(s, "data-tid=\"9\" data-worker=\"1\" data-top=\"gil\"") != NULL);
    CHECK(s && strstr(s, "Main&quot;Thread") != NULL);
    CHECK(s && strstr(s, "task-lane") == NULL); /* no names given: no task lanes */
    /* with the coroutines' names: a lane per coroutine under thread 7's, the most seen first */
    static const char *const tasks[] = {"crunch (a.py)", "parse<x> (b.py)"};
    f = fopen(path, "w");
    CHECK(f && sop__timeline_write_gpu(thr, 3, ev, nev, 1.0, 100, "tl", NULL, tasks, 2, 0, f) == 0);
    fclose(f);
    CHECK_EQ_I(run(XML_OK, path, ""), 0);
    s = slurp(path);
    const char *l1 =
        s ? strstr(s, "data-tid=\"7\" data-samples=\"15\" data-task=\"crunch (a.py)\"") : NULL;
    const char *l2 =
        s ? strstr(s, "data-tid=\"7\" data-samples=\"5\" data-task=\"parse&lt;x&gt; (b.py)\"")
          : NULL;
    CHECK(l1 && l2 && l1 < l2);
    CHECK(s && strstr(s, "tid 7 ran crunch (a.py), 0.80-0.95 s (15 samples)") != NULL);

    /* the HTML report escapes the target's text */
    sop_value *r = sop__v_obj();
    sop_value *tg = sop__v_obj_at(r, "target");
    sop__v_set_int(tg, "pid", 7);
    sop__v_set_str(tg, "comm", "<script>alert(1)</script>");
    sop_value *fs = sop__v_arr_at(r, "findings");
    sop_value *fi = sop__v_obj();
    sop__v_set_str(fi, "id", "summary.verdict");
    sop__v_set_str(fi, "severity", "info");
    sop__v_set_str(fi, "symptom", "CPU-bound <one core>");
    sop__v_push(sop__v_arr_at(fi, "refs"), sop__v_str("javascript:alert(1)"));
    sop__v_push(fs, fi);
    snprintf(path, sizeof path, "%s/r.html", dir);
    f = fopen(path, "w");
    sop__html_begin(f, "t");
    sop__html_report(f, r, "en");
    sop__html_end(f);
    fclose(f);
    s = slurp(path);
    CHECK(s && strstr(s, "<script>alert") == NULL && strstr(s, "&lt;script&gt;alert") != NULL);
    CHECK(s && strstr(s, "href=\"javascript") == NULL);
    CHECK(s && strstr(s, "Verdict (§9):</strong> CPU-bound &lt;one core&gt;") != NULL);
    sop__v_free(r);

    run("rm -rf %s%s", dir, "");
    return t_done();
}
