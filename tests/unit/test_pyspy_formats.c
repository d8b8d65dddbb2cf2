/* test_pyspy_formats.c — py-spy's shapes from synthetic samples (docs/py-spy.md): short file
 * names by the __init__.py files of a fixture root (a package two levels deep, a plain script,
 * a name that is not a path), the folded text of a sample (root first, lines, --nolineno, ';'
 * and newline inside names, a torn and an empty stack), the counts per stack, and the chrome
 * trace's events (a "B" per frame entered, an "E" per frame left, all closed at the end, the
 * line in args). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pyspy_formats.h"
#include "sop.h"
#include "t.h"

static char root[] = "/tmp/sop-pyspy-XXXXXX";

static void touch(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

static void short_names(void)
{
    /* proc root `root`, pid 7: the process sees root/7/root as / */
    touch("7/root/srv/lib/torch/nn/__init__.py");
    touch("7/root/srv/lib/torch/__init__.py");
    touch("7/root/srv/lib/torch/nn/module.py");
    touch("7/root/srv/job.py");
    char out[256];
    sop__pyspy_short_file(root, 7, "/srv/lib/torch/nn/module.py", out, sizeof out);
    CHECK_EQ_S(out, "torch/nn/module.py");
    sop__pyspy_short_file(root, 7, "/srv/job.py", out, sizeof out);
    CHECK_EQ_S(out, "job.py");
    sop__pyspy_short_file(root, 7, "<frozen importlib._bootstrap>", out, sizeof out);
    CHECK_EQ_S(out, "<frozen importlib._bootstrap>");
    sop__pyspy_short_file(root, 7, "/top.py", out, sizeof out);
    CHECK_EQ_S(out, "top.py");
    sop__pyspy_short_file(root, 8, "/srv/lib/torch/nn/module.py", out, sizeof out); /* no root */
    CHECK_EQ_S(out, "module.py");
}

static void folded(void)
{
    sop_pyframe fr[] = {
        {"leaf;x", "/srv/lib/torch/nn/module.py", 12, false, 0},
        {"run\nme", "/srv/job.py", 30, false, 0},
        {"<module>", "/srv/job.py", 40, false, 0},
    };
    sop_pysample p;
    memset(&p, 0, sizeof p);
    p.tid = 7;
    p.frames = fr;
    p.nframes = 3;
    sop_pyspy_fold *f = sop__pyspy_fold_new(root, 0);
    CHECK(f != NULL);
    if (!f)
        return;
    sop_sb b = {0};
    sop__pyspy_frames(f, &b, 7, &p);
    CHECK_EQ_S(b.s, "<module> (job.py:40);run me (job.py:30);leaf:x (torch/nn/module.py:12)");
    sop__pyspy_fold_add(f, b.s, SOP_ST_GIL);
    sop__pyspy_fold_add(f, b.s, SOP_ST_IDLE);
    b.len = 0;
    sop__sb_puts(&b, "thread (7): Main;Thread");
    p.torn = true;
    sop__pyspy_frames(f, &b, 7, &p);
    CHECK_EQ_S(b.s, "thread (7): Main;Thread;(stack changed while read)");
    sop__pyspy_fold_add(f, b.s, SOP_ST_NATIVE);
    b.len = 0;
    p.torn = false;
    p.nframes = 0;
    sop__pyspy_frames(f, &b, 7, &p);
    CHECK_EQ_S(b.s, "(no Python frame)");
    sop_stack_count *v = NULL;
    size_t n = sop__pyspy_fold_stacks(f, &v);
    CHECK_EQ_I(n, 2);
    long total = 0, idle = 0;
    for (size_t i = 0; i < n; i++) {
        total += v[i].count;
        idle += v[i].by_state[SOP_ST_IDLE];
    }
    CHECK_EQ_I(total, 3);
    CHECK_EQ_I(idle, 1);
    free(v);
    sop__pyspy_fold_free(f);
    /* --nolineno, --full-filenames */
    f = sop__pyspy_fold_new(root, SOP_PYSPY_NOLINENO | SOP_PYSPY_FULL_FILENAMES);
    p.nframes = 1;
    b.len = 0;
    sop__pyspy_frames(f, &b, 7, &p);
    CHECK_EQ_S(b.s, "leaf:x (/srv/lib/torch/nn/module.py)");
    sop__pyspy_fold_free(f);
    free(b.s);
}

static void trace(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/trace.json", root);
    FILE *out = fopen(path, "w");
    CHECK(out != NULL);
    if (!out)
        return;
    sop_pyspy_trace *t = sop__pyspy_trace_new(out, 0);
    sop_pyframe a[] = {{"g", "/a.py", 2, false, 0}, {"f", "/a.py", 1, false, 0}};
    sop_pyframe b[] = {{"h", "/a.py", 3, false, 0}, {"f", "/a.py", 1, false, 0}};
    sop_pysample p;
    memset(&p, 0, sizeof p);
    p.tid = 5;
    p.frames = a;
    p.nframes = 2;
    sop__pyspy_trace_sample(t, 9, &p, 10); /* B f, B g */
    sop__pyspy_trace_sample(t, 9, &p, 20); /* no change */
    p.frames = b;
    sop__pyspy_trace_sample(t, 9, &p, 30);      /* E g, B h */
    CHECK_EQ_I(sop__pyspy_trace_end(t, 40), 0); /* E h, E f */
    CHECK_EQ_I(sop__pyspy_trace_dropped(t), 0);
    sop__pyspy_trace_free(t);
    fclose(out);
    FILE *in = fopen(path, "r");
    char buf[4096] = "";
    size_t n = in ? fread(buf, 1, sizeof buf - 1, in) : 0;
    buf[n] = '\0';
    if (in)
        fclose(in);
    const char *want[] = {"\"name\":\"f\",\"ph\":\"B\"", "\"name\":\"g\",\"ph\":\"B\"",
                          "\"name\":\"g\",\"ph\":\"E\"", "\"name\":\"h\",\"ph\":\"B\"",
                          "\"name\":\"h\",\"ph\":\"E\"", "\"name\":\"f\",\"ph\":\"E\""};
    const char *at = buf;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const char *hit = strstr(at, want[i]);
        CHECK(hit != NULL); /* in this order */
        if (hit)
            at = hit;
    }
    CHECK(buf[0] == '[' && strstr(buf, "]\n") != NULL);
    CHECK(strstr(buf, "\"line\":3") != NULL && strstr(buf, "\"ts\":30") != NULL);
    CHECK(strstr(buf, "\"cat\":\"py-spy\"") != NULL && strstr(buf, "\"tid\":5") != NULL);
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); "
             "assert len(e)==6, e' %s",
             path);
    CHECK_EQ_I(system(cmd), 0);
}

int main(void)
{
    CHECK(mkdtemp(root) != NULL);
    short_names();
    folded();
    trace();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        fprintf(stderr, "note: %s left behind\n", root);
    return t_done();
}
