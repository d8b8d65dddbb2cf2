/* test_python_bridge.c — ev.python (engine/bridge/python.c) and the dump renderer
 * (engine/api/dump.c) on a hand-built sop_python: absent values left out, native frames merged
 * in order, control characters escaped in text and in JSON, the contract's keys present. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "dump.h"
#include "json.h"
#include "python/native.h"
#include "t.h"

static sop_pyframe frames_a[] = {
    {"inner", "/srv/job.py", 12, false, 0},
    {"Outer.run", "/srv/job.py", 30, true, 0},
    {"<module>", "/srv/job.py", -1, true, 0},
};
static sop_pyframe frames_b[] = {{"wait", "/usr/lib/python3.11/threading.py", 320, true, 0}};

static sop_python *sample(void)
{
    sop_python *py = calloc(1, sizeof *py);
    snprintf(py->version, sizeof py->version, "3.11.7");
    snprintf(py->executable, sizeof py->executable, "/usr/bin/python3.11");
    py->gil_holder_tid = 125;
    py->gc_enabled = 1;
    py->gc_collecting = 0;
    py->gc_frozen = SOP_NA; /* not counted: must be left out */
    for (int g = 0; g < 3; g++) {
        py->gc_threshold[g] = g == 0 ? 700 : 10;
        py->gc_count[g] = g;
        py->gc_collections[g] = SOP_NA; /* not read: no "collections" key */
    }
    py->nthreads = 2;
    py->threads = calloc(2, sizeof *py->threads);
    sop_pythread *a = &py->threads[0], *b = &py->threads[1];
    a->tid = 125;
    a->thread_id = 0x7f00;
    snprintf(a->name, sizeof a->name, "Main\x1b[1m");
    a->active = true;
    a->gil = true;
    a->frames = frames_a;
    a->nframes = 3;
    b->tid = 0; /* unknown: no "tid" key */
    b->frames = frames_b;
    b->nframes = 1;
    return py;
}

static void test_bridge(void)
{
    sop_python *py = sample();
    sop_value *ev = sop__v_obj();
    sop__bridge_python(ev, py);
    const sop_value *p = sop__v_get(ev, "python");
    CHECK(p != NULL);
    CHECK_EQ_S(sop__v_get_str(p, "version"), "3.11.7");
    double d = 0;
    CHECK(sop__v_get_num(p, "gil_holder_tid", &d) && d == 125);
    const sop_value *gc = sop__v_get(p, "gc");
    CHECK(gc && sop__v_get(gc, "enabled") && sop__v_get(gc, "enabled")->b);
    CHECK(gc && sop__v_get(gc, "frozen") == NULL);
    CHECK(gc && sop__v_get(gc, "collections") == NULL);
    CHECK(gc && sop__v_get(gc, "thresholds") && sop__v_get(gc, "thresholds")->count == 3);
    const sop_value *th = sop__v_get(p, "threads");
    CHECK(th && th->count == 2);
    const sop_value *t0 = th ? th->child : NULL, *t1 = t0 ? t0->next : NULL;
    CHECK(t0 && sop__v_get_num(t0, "tid", &d) && d == 125);
    CHECK(t1 && sop__v_get(t1, "tid") == NULL);
    CHECK_EQ_S(sop__v_get_str(t0, "state"), "active");
    CHECK_EQ_S(sop__v_get_str(t1, "state"), "idle");
    const sop_value *fr = sop__v_get(t0, "frames");
    CHECK(fr && fr->count == 3);
    const sop_value *last = fr ? fr->last : NULL;
    CHECK(last && sop__v_get(last, "line") == NULL); /* -1: unknown, left out */
    CHECK(sop__v_get(t0, "native") == NULL);
    char *json = sop__json_print(ev, 0);
    CHECK(json && strstr(json, "\"name\":\"Main\\u001b[1m\"") != NULL);
    free(json);
    sop__v_free(ev);
    free(py->threads);
    free(py);
}

static void test_merge_and_render(void)
{
    sop_python *py = sample();
    sop_nframe nat[5];
    memset(nat, 0, sizeof nat);
    const char *names[] = {"epoll_wait", "_PyEval_EvalFrameDefault", "PyEval_EvalCode",
                           "_PyEval_EvalFrameDefault", "main"};
    for (int i = 0; i < 5; i++) {
        snprintf(nat[i].func, sizeof nat[i].func, "%s", names[i]);
        snprintf(nat[i].lib, sizeof nat[i].lib, "%s", i == 0 ? "libc.so.6" : "python3.11");
        nat[i].py_index = -1;
    }
    sop_nframe *m = NULL;
    size_t n = 0;
    CHECK_EQ_I(sop__native_merge(nat, 5, frames_a, 3, &m, &n), 0);
    /* epoll_wait, inner, Outer.run (entry ends the first evaluator run), PyEval_EvalCode,
     * <module>, main */
    CHECK_EQ_I(n, 6);
    const char *want[] = {"epoll_wait",      "inner",    "Outer.run",
                          "PyEval_EvalCode", "<module>", "main"};
    for (size_t i = 0; i < n && i < 6; i++)
        CHECK_EQ_S(m[i].func, want[i]);
    CHECK(n == 6 && m[1].py_index == 0 && m[2].py_index == 1 && m[4].py_index == 2 &&
          m[0].py_index == -1);
    py->threads[0].native = m;
    py->threads[0].nnative = n;

    sop_missing miss = {0};
    sop__missing_add(&miss, "native", "ptrace refused: %s", "EPERM");
    char *text = NULL;
    CHECK_EQ_I(sop__dump_render(py, &miss, 123, "python3 job.py\x07", 0, &text), 0);
    CHECK(text && strncmp(text,
                          "Process 123: python3 job.py\\x07\nPython v3.11.7 "
                          "(/usr/bin/python3.11)\n",
                          63) == 0);
    CHECK(text && strstr(text, "Thread 0x7F00 (active+gil): \"Main\\x1b[1m\" [tid 125]\n") != NULL);
    CHECK(text && strstr(text, "    inner (/srv/job.py:12)\n    Outer.run (/srv/job.py:30)\n"
                               "    PyEval_EvalCode (python3.11)\n") != NULL);
    CHECK(text && strstr(text, "    <module> (/srv/job.py)\n") != NULL);
    CHECK(text &&
          strstr(text, "Thread 0x0 (idle)\n    wait (/usr/lib/python3.11/threading.py:320)\n") !=
              NULL);
    CHECK(text && strstr(text, "missing native: ptrace refused: EPERM") != NULL);
    CHECK(text && strchr(text, '\x1b') == NULL && strchr(text, '\x07') == NULL);
    free(text);

    char *json = NULL;
    CHECK_EQ_I(sop__dump_render(py, &miss, 123, "x", 1, &json), 0);
    sop_value *doc = json ? sop__json_parse(json, strlen(json), NULL, 0) : NULL;
    CHECK(doc != NULL);
    double d;
    CHECK(doc && sop__v_get_num(doc, "pid", &d) && d == 123);
    const sop_value *th = doc ? sop__v_get(doc, "threads") : NULL;
    const sop_value *na = th && th->child ? sop__v_get(th->child, "native") : NULL;
    CHECK(na && na->count == 6);
    CHECK(na && na->child->next && strcmp(sop__v_get_str(na->child->next, "lib"), "python") == 0 &&
          sop__v_get_num(na->child->next, "line", &d) && d == 12);
    const sop_value *me = doc ? sop__v_get(doc, "missing_evidence") : NULL;
    CHECK(me && me->count == 1);
    sop__v_free(doc);
    free(json);

    /* Not CPython: only pid and the missing list. */
    CHECK_EQ_I(sop__dump_render(NULL, &miss, 7, "sleep 30", 1, &json), 0);
    CHECK(json && strstr(json, "\"threads\"") == NULL && strstr(json, "ptrace refused"));
    free(json);
    sop__missing_free(&miss);
    free(m);
    free(py->threads);
    free(py);
}

int main(void)
{
    test_bridge();
    test_merge_and_render();
    return t_done();
}
