/* test_target_counters.c — rates of counters the target keeps in its own memory (issue 40):
 * the window bridge (engine/bridge/window.c) fed two or more reads of CPython's GIL switch
 * counter and GC collection counts through the aggregation, as the sampler feeds them. A counter
 * that went back, or moved faster than the thing it counts can happen (SOP_*_MAX_PER_S), gives
 * no rate (the key is absent: nil to the rules) and a note in missing; a real one gives its rate
 * and no note. Depends on engine/bridge/window.c, engine/sample/sample_agg*.c, t.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/window.h"
#include "json.h"
#include "missing.h"
#include "na.h"
#include "python/cpython.h"
#include "sample_agg.h"
#include "t.h"

#define NOREAD SOP_NA

/* One read per tick: the GIL's switch_number sw[i] and gen0's collections gc0[i] at at_ms[i]
 * (NOREAD: that tick did not read it). The evidence the bridge writes (ev.python) is returned;
 * notes go to missing (may be NULL). */
static sop_value *window_of(int n, const double *at_ms, const int64_t *sw, const int64_t *gc0,
                            sop_missing *missing)
{
    sop_agg *a = sop__agg_new();
    CHECK(a != NULL);
    if (!a)
        return NULL;
    sop__agg_start(a, 0);
    int ti = sop__agg_add_thread(a, 0, 100, "MainThread");
    static const sop_pyframe frames[1] = {{"main", "/app/x.py", 3, false, 0}};
    for (int i = 0; i < n; i++) {
        sop_pysample p;
        memset(&p, 0, sizeof p);
        p.tid = 100;
        p.name = "";
        p.state = 'R';
        p.gil = true;
        p.majflt = p.minflt = SOP_NA;
        p.frames = frames;
        p.nframes = 1;
        sop__agg_sample(a, ti, &p, at_ms[i]);
        sop__agg_tick(a);
        sop_pygc g = {0, {gc0 ? gc0[i] : NOREAD, 2, 1}, sw[i], sw[i] == NOREAD ? NOREAD : 5000};
        if (g.collections[0] == NOREAD)
            g.collections[1] = g.collections[2] = NOREAD;
        sop__agg_gc(a, &g, at_ms[i]);
    }
    sop__agg_finish(a, at_ms[n - 1] + 10);
    sop_window_proc proc = {100, "python3", "python3 x.py", false, 1000.0, 1010.0, NULL, NULL};
    sop_window w = {0};
    w.agg = a;
    w.procs = &proc;
    w.nprocs = 1;
    w.stats = (sop_sampler_stats){.ticks = n, .rate_hz = 100, .window_s = at_ms[n - 1] / 1e3};
    w.proc_root = "/nonexistent-sop-root";
    w.missing = missing;
    sop_value *ev = sop__v_obj();
    sop_value *py = sop__v_obj_at(ev, "python");
    sop_value *t = sop__v_obj();
    sop__v_set_int(t, "tid", 100);
    sop__v_push(sop__v_arr_at(py, "threads"), t);
    sop__bridge_window(ev, &w);
    sop__agg_free(a);
    return ev;
}

static const sop_value *concurrency(const sop_value *ev)
{
    return sop__v_get(sop__v_get(ev, "python"), "concurrency");
}

/* The rate, or NaN when the key is absent. */
static double switches_per_s(const sop_value *ev)
{
    double v = NAN;
    if (!sop__v_get_num(concurrency(ev), "gil_switches_per_s", &v))
        return NAN;
    return v;
}

static void gil_cases(void)
{
    const double at[3] = {0, 500, 1000};
    sop_missing m = {0};

    /* a real count: 600 switches in 1 s */
    const int64_t real[3] = {1000, 1300, 1600};
    sop_value *ev = window_of(3, at, real, NULL, &m);
    CHECK(fabs(switches_per_s(ev) - 600) < 1e-9);
    CHECK_EQ_I(m.n, 0);
    sop__v_free(ev);

    /* just under the bound (1e6/s): still a measurement */
    const int64_t fast[3] = {1000, 500000, 1000 + 999999};
    ev = window_of(3, at, fast, NULL, &m);
    CHECK(fabs(switches_per_s(ev) - 999999) < 1e-6);
    CHECK_EQ_I(m.n, 0);
    sop__v_free(ev);

    /* The report of issue 40: "988084462785924736 switches/s". Left out, with the reason; the
     * rest of python.concurrency stays (the interval was read, ticks were counted). */
    const int64_t poked[3] = {1000, 1200, 1000 + 988084462785924736LL};
    ev = window_of(3, at, poked, NULL, &m);
    CHECK(isnan(switches_per_s(ev)));
    double iv = 0;
    CHECK(sop__v_get_num(concurrency(ev), "gil_interval_us", &iv) && iv == 5000);
    char *json = sop__json_print(ev, 0);
    CHECK(json && !strstr(json, "988084462785924736") && !strstr(json, "9.88084"));
    free(json);
    CHECK_EQ_I(m.n, 1);
    if (m.n == 1) {
        CHECK_EQ_S(m.items[0].probe, "python");
        CHECK_EQ_S(m.items[0].reason, "the GIL switch counter moved by 988084462785924736 in 1.0 s "
                                      "(beyond 1000000/s): not a measurement; left out");
    }
    sop__missing_free(&m);
    sop__v_free(ev);

    /* one switch over the bound: the same */
    const int64_t over[2] = {0, 1000001};
    ev = window_of(2, (const double[]){0, 1000}, over, NULL, &m);
    CHECK(isnan(switches_per_s(ev)));
    CHECK_EQ_I(m.n, 1);
    sop__missing_free(&m);
    sop__v_free(ev);

    /* went back over the window */
    const int64_t back[3] = {5000, 5100, 100};
    ev = window_of(3, at, back, NULL, &m);
    CHECK(isnan(switches_per_s(ev)));
    CHECK_EQ_I(m.n, 1);
    if (m.n == 1)
        CHECK_EQ_S(m.items[0].reason,
                   "the GIL switch counter went back during the window (5000 at the first read, "
                   "100 at the last, 1.0 s apart): not a measurement; left out");
    sop__missing_free(&m);
    sop__v_free(ev);

    /* written and put back: first and last look like 100/s, but one read went back */
    const int64_t there_and_back[4] = {1000, 900000000000LL, 1050, 1100};
    ev = window_of(4, (const double[]){0, 250, 500, 1000}, there_and_back, NULL, &m);
    CHECK(isnan(switches_per_s(ev)));
    CHECK_EQ_I(m.n, 1);
    sop__missing_free(&m);
    sop__v_free(ev);

    /* an unread tick in between is no step back */
    const int64_t gap[3] = {1000, NOREAD, 1400};
    ev = window_of(3, at, gap, NULL, &m);
    CHECK(fabs(switches_per_s(ev) - 400) < 1e-9);
    CHECK_EQ_I(m.n, 0);
    sop__v_free(ev);

    /* without a missing list (a caller that keeps no notes): left out all the same */
    ev = window_of(3, at, poked, NULL, NULL);
    CHECK(isnan(switches_per_s(ev)));
    sop__v_free(ev);
}

static void gc_cases(void)
{
    const double at[3] = {0, 500, 1000};
    const int64_t sw[3] = {10, 20, 30};
    sop_missing m = {0};

    const int64_t real[3] = {10, 40, 70};
    sop_value *ev = window_of(3, at, sw, real, &m);
    const sop_value *gw = sop__v_get(sop__v_get(sop__v_get(ev, "python"), "gc"), "window");
    const sop_value *r = sop__v_get(gw, "collections_per_s");
    CHECK(r && r->child && r->child->type == SOP_V_NUM && fabs(r->child->num - 60) < 1e-9);
    CHECK(sop__v_get(gw, "collections") != NULL);
    CHECK_EQ_I(m.n, 0);
    sop__v_free(ev);

    /* gen0 rewritten: beyond 1e8/s; both arrays (the same counters) left out, the rest kept */
    const int64_t poked[3] = {10, 40, 10 + ((int64_t)1 << 40)};
    ev = window_of(3, at, sw, poked, &m);
    gw = sop__v_get(sop__v_get(sop__v_get(ev, "python"), "gc"), "window");
    CHECK(gw && sop__v_get(gw, "samples") != NULL);
    CHECK(gw && !sop__v_get(gw, "collections") && !sop__v_get(gw, "collections_per_s"));
    CHECK(fabs(switches_per_s(ev) - 20) < 1e-9); /* the GIL's counter is its own */
    CHECK_EQ_I(m.n, 1);
    if (m.n == 1)
        CHECK_EQ_S(m.items[0].reason, "the GC collection count of generation 0 moved by "
                                      "1099511627776 in 1.0 s (beyond 100000000/s): not a "
                                      "measurement; left out");
    sop__missing_free(&m);
    sop__v_free(ev);

    /* gen0 went back: no negative rate (before issue 40 it was -5/s) */
    const int64_t back[3] = {10, 8, 5};
    ev = window_of(3, at, sw, back, &m);
    gw = sop__v_get(sop__v_get(sop__v_get(ev, "python"), "gc"), "window");
    CHECK(gw && !sop__v_get(gw, "collections_per_s"));
    CHECK_EQ_I(m.n, 1);
    sop__missing_free(&m);
    sop__v_free(ev);
}

int main(void)
{
    gil_cases();
    gc_cases();
    return t_done();
}
