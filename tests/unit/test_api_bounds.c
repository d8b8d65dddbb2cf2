/* test_api_bounds.c — every entry point that samples validates rate_hz as sop_record does
 * (issue 28, class 11): inf, 1e300, NaN and negative rates are SOP_EINVAL at once, never a
 * window that does not end (an alarm fails the test if one hangs); sop_record_pyspy too. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sop.h"
#include "t.h"

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL a call with a bad rate did not return within 20 s\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(1);
    _exit(1);
}

static void fn(const sop_watch_event *ev, void *user)
{
    (void)ev;
    (void)user;
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(20);
    const double bad[] = {INFINITY, 1e300, NAN, -1, 10001};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sop_collect_opts o;
        sop_collect_opts_init(&o);
        o.duration_s = 0.5;
        o.rate_hz = bad[i];
        sop_evidence *ev = NULL;
        CHECK_EQ_I(sop_collect(NULL, (int)getpid(), &o, &ev), SOP_EINVAL);
        CHECK(ev == NULL);

        sop_engine *e = NULL;
        CHECK_EQ_I(sop_engine_new(&e), SOP_OK);
        CHECK_EQ_I(sop_load_rules_default(e), SOP_OK);
        char *out = NULL;
        CHECK_EQ_I(sop_diagnose(e, (int)getpid(), &o, SOP_FORMAT_JSON, "en", &out, NULL),
                   SOP_EINVAL);
        sop_free(out);

        sop_watch_config cfg;
        sop_watch_config_init(&cfg);
        cfg.interval_s = 0.1;
        cfg.collect = o;
        sop_watch *w = NULL;
        CHECK_EQ_I(sop_watch_new(e, &cfg, fn, NULL, &w), SOP_EINVAL); /* takes e over */
        CHECK(w == NULL);

        /* py-spy's record (docs/py-spy.md): refused before it attaches or writes anything */
        sop_record_stats st;
        CHECK_EQ_I(sop_record_pyspy(NULL, (int)getpid(), 0.5, bad[i], "/nonexistent/x.svg",
                                    SOP_PYSPY_FLAMEGRAPH, 0, NULL, NULL, &st),
                   SOP_EINVAL);
    }
    /* py-spy's record: a window that never ends needs a stop function; an unknown format */
    sop_record_stats st;
    CHECK_EQ_I(sop_record_pyspy(NULL, (int)getpid(), -1, 100, "/nonexistent/x.txt", SOP_PYSPY_RAW,
                                0, NULL, NULL, &st),
               SOP_EINVAL);
    CHECK_EQ_I(sop_record_pyspy(NULL, (int)getpid(), 1, 100, "/nonexistent/x.txt",
                                (sop_pyspy_format)7, 0, NULL, NULL, &st),
               SOP_EINVAL);
    CHECK_EQ_I(sop_record_pyspy(NULL, (int)getpid(), NAN, 100, "/nonexistent/x.txt", SOP_PYSPY_RAW,
                                0, NULL, NULL, &st),
               SOP_EINVAL);
    /* the bounds themselves are fine */
    sop_collect_opts o;
    sop_collect_opts_init(&o);
    o.duration_s = 0;
    o.rate_hz = 10000;
    sop_evidence *ev = NULL;
    CHECK_EQ_I(sop_collect(NULL, (int)getpid(), &o, &ev), SOP_OK);
    sop_evidence_free(ev);
    return t_done();
}
