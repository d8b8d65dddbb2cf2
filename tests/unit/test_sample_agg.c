/* test_sample_agg.c — the window's aggregation fed made-up samples, no process and no clock:
 * per-thread shares, stacks counted root first with their state split, top-N truncation against
 * the exact totals the distribution keeps, per-process sums, thread names, (leaf, entry,
 * caller) sites and entries, fault sites, an asyncio loop stretch, the GC window and the
 * timeline. Depends on engine/sample/sample_agg.h, t.h. */
#include <math.h>
#include <string.h>

#include "sample_agg.h"
#include "t.h"

#define USER "/app/train.py"
#define LIB "/usr/lib/python3.11/json/encoder.py"

/* A sample of `n` frames (innermost first) in OS state `state`. */
static sop_pysample mk(int tid, const sop_pyframe *frames, size_t n, char state, bool gil)
{
    sop_pysample p;
    memset(&p, 0, sizeof p);
    p.tid = tid;
    p.name = "";
    p.state = state;
    p.gil = gil;
    p.majflt = SOP_NA;
    p.frames = frames;
    p.nframes = n;
    return p;
}

static long sum_stacks(const sop_agg *a, size_t ti)
{
    long n = 0;
    for (size_t i = 0; i < SOP_AGG_STACK_SLOTS; i++)
        if (a->stacks[i].stack && a->stacks[i].thr == ti)
            n += a->stacks[i].count;
    return n;
}

static void shares_and_top_n(void)
{
    sop_agg *a = sop__agg_new();
    CHECK(a != NULL);
    if (!a)
        return;
    sop__agg_keep_timeline(a);
    sop__agg_start(a, 1000.0);
    CHECK_EQ_I(sop__agg_find_thread(a, 0, 100), -1);
    int main_t = sop__agg_add_thread(a, 0, 100, "MainThread");
    int busy_t = sop__agg_add_thread(a, 0, 101, "busy;1\nx");
    int wk_t = sop__agg_add_thread(a, 1, 200, "worker");
    CHECK_EQ_I(main_t, 0);
    CHECK_EQ_I(busy_t, 1);
    CHECK_EQ_I(wk_t, 2);
    CHECK_EQ_I(sop__agg_find_thread(a, 0, 101), 1);
    CHECK_EQ_I(sop__agg_find_thread(a, 1, 101), -1); /* (proc, tid) is the key */
    CHECK_EQ_S(a->thrs[busy_t].name, "busy:1:x");    /* a frame of the collapsed stacks */

    /* Main thread: 8 distinct stacks seen 10, 9, ..., 3 times (52 samples); the first two
     * holding the GIL and running, the rest asleep without it. */
    static char funcs[8][16];
    sop_pyframe fr[8][2];
    double now = 1000.0;
    long total = 0;
    for (int k = 0; k < 8; k++) {
        snprintf(funcs[k], sizeof funcs[k], "step%d", k);
        fr[k][0] = (sop_pyframe){funcs[k], USER, 10 + k, false, 0};
        fr[k][1] = (sop_pyframe){"<module>", USER, 1, false, 0};
        for (int c = 0; c < 10 - k; c++, total++) {
            sop_pysample p = mk(100, fr[k], 2, k < 2 ? 'R' : 'S', k < 2);
            sop__agg_sample(a, main_t, &p, now += 10);
        }
    }
    CHECK_EQ_I(total, 52);
    const sop_agg_thread *t = &a->thrs[main_t];
    CHECK_EQ_I(t->n, 52);
    CHECK_EQ_I(t->gil, 19);
    CHECK_EQ_I(t->active, 19);
    CHECK_EQ_I(t->state_r, 19);
    CHECK_EQ_I(t->state_s, 33);
    CHECK_EQ_I(t->runnable_nogil, 0);
    CHECK_EQ_I(a->nstacks, 8);

    /* top-N: the 5 most seen, most first; they hold 40 of the 52 samples, the table all 52. */
    const sop_agg_stack *top[5];
    CHECK_EQ_I(sop__agg_top_stacks(a, (size_t)main_t, top, 5), 5);
    long top_sum = 0;
    for (int k = 0; k < 5; k++)
        top_sum += top[k]->count;
    CHECK_EQ_I(top[0]->count, 10);
    CHECK_EQ_I(top[4]->count, 6);
    CHECK_EQ_S(top[0]->stack, "<module> (train.py);step0 (train.py)"); /* root first, basename */
    CHECK_EQ_I(top[0]->by_state[SOP_ST_GIL], 10);
    CHECK_EQ_I(top[2]->by_state[SOP_ST_IDLE], 8);
    CHECK_EQ_I(top_sum, 40);
    CHECK_EQ_I(sop__agg_stored(a, (size_t)main_t), 52);
    CHECK_EQ_I(sum_stacks(a, (size_t)main_t), t->n);
    const sop_agg_stack *top12[12];
    CHECK_EQ_I(sop__agg_top_stacks(a, (size_t)main_t, top12, 12), 8); /* fewer than asked */
    CHECK(top12[8] == NULL);

    /* Busy thread: running native code without the GIL (R, no GIL), then waiting for it. */
    sop_pyframe leaf[3] = {
        {"JSONEncoder.encode", LIB, 200, false, 0},
        {"dumps", "/usr/lib/python3.11/json/__init__.py", 231, false, 0},
        {"busy", USER, 7, false, 0},
    };
    for (int c = 0; c < 6; c++) {
        sop_pysample p = mk(101, leaf, 3, 'R', false);
        p.gil_wait = c >= 4;
        sop__agg_sample(a, busy_t, &p, now += 10);
    }
    t = &a->thrs[busy_t];
    CHECK_EQ_I(t->n, 6);
    CHECK_EQ_I(t->runnable_nogil, 6);
    CHECK_EQ_I(t->gil_wait, 2);
    CHECK_EQ_I(t->active, 6);
    /* (leaf, entry, caller): the innermost frame, the library API the program's own frame
     * called, and that frame. */
    const sop_agg_leaf *lv[8];
    CHECK_EQ_I(sop__agg_top_leaves(a, (size_t)busy_t, lv, 8), 1);
    CHECK_EQ_S(lv[0]->leaf.func, "JSONEncoder.encode");
    CHECK_EQ_S(lv[0]->entry.func, "dumps");
    CHECK_EQ_S(lv[0]->caller.func, "busy");
    CHECK_EQ_I(lv[0]->count, 6);
    sop_agg_entry en[8];
    CHECK_EQ_I(sop__agg_entries(a, (size_t)busy_t, en, 8), 1);
    CHECK_EQ_S(en[0].entry->func, "dumps");
    CHECK_EQ_I(en[0].count, 6);
    CHECK_EQ_I(en[0].active, 6);
    CHECK_EQ_I(en[0].sites, 1);
    CHECK_EQ_I(sop__agg_entries(a, (size_t)main_t, en, 8), 0); /* only its own code */

    /* Worker process: 4 samples of its main thread: 2 running, 1 in D with major faults rising,
     * 1 asleep. Per-process sums. */
    sop_pyframe wf[1] = {{"load", "/app/data.py", 42, false, 0}};
    const char states[4] = {'R', 'R', 'D', 'S'};
    for (int c = 0; c < 4; c++) {
        sop_pysample p = mk(200, wf, 1, states[c], false);
        p.majflt = c < 2 ? 5 : 9;
        sop__agg_sample(a, wk_t, &p, now += 10);
    }
    sop_agg_states st;
    CHECK(sop__agg_thread_states(a, 1, 200, &st));
    CHECK_EQ_I(st.n, 4);
    CHECK_EQ_I(st.running, 2);
    CHECK_EQ_I(st.io, 1);
    CHECK_EQ_I(st.idle, 1);
    CHECK(!sop__agg_thread_states(a, 1, 999, &st));
    CHECK_EQ_I(st.n, 0);
    CHECK_EQ_I(a->proc_samples[0], 58);
    CHECK_EQ_I(a->proc_samples[1], 4);
    CHECK_EQ_I(a->thread_samples, 62);
    t = &a->thrs[wk_t];
    CHECK_EQ_I(t->majflt_smp, 1); /* the third sample saw faults rise (5 -> 9) */
    CHECK_EQ_I(t->fault_wait, 1); /* ... and it is the D-state one */
    const sop_agg_site *fs = sop__agg_top_site(a, (size_t)wk_t, SOP_AGG_SITE_FAULT);
    CHECK(fs != NULL);
    if (fs) {
        CHECK_EQ_S(fs->frame, "load (/app/data.py:42)");
        CHECK_EQ_I(fs->count, 1);
    }
    CHECK(sop__agg_top_site(a, (size_t)main_t, SOP_AGG_SITE_FAULT) == NULL);

    /* The timeline: one event per thread sample, times from the window's start. */
    CHECK_EQ_I(a->ntimeline, 62);
    CHECK(fabs(a->timeline[0].t_ms - 10.0) < 1e-3);
    CHECK_EQ_I(a->timeline[0].state, SOP_ST_GIL);
    CHECK_EQ_I(a->timeline[61].thr, wk_t);
    CHECK_EQ_I(a->timeline[61].state, SOP_ST_IDLE);
    CHECK_EQ_I(a->timeline[60].state, SOP_ST_DISK);
    sop__agg_free(a);
}

/* An asyncio loop thread inside one callback for 3 ticks (30 ms), then back in the selector;
 * the GC collecting for two of four ticks. */
static void loop_and_gc(void)
{
    sop_agg *a = sop__agg_new();
    CHECK(a != NULL);
    if (!a)
        return;
    sop__agg_start(a, 0);
    int ti = sop__agg_add_thread(a, 0, 7, "MainThread");
    const char *ev = "/usr/lib/python3.11/asyncio/events.py";
    const char *be = "/usr/lib/python3.11/asyncio/base_events.py";
    sop_pyframe in_cb[4] = {
        {"handler", "/app/srv.py", 5, false, 0},
        {"Handle._run", ev, 80, false, 0},
        {"BaseEventLoop._run_once", be, 1900, false, 0},
        {"BaseEventLoop.run_forever", be, 600, false, 0},
    };
    sop_pyframe in_sel[3] = {
        {"EpollSelector.select", "/usr/lib/python3.11/selectors.py", 468, false, 0},
        {"BaseEventLoop._run_once", be, 1880, false, 0},
        {"BaseEventLoop.run_forever", be, 600, false, 0},
    };
    for (int c = 0; c < 3; c++) {
        sop_pysample p = mk(7, in_cb, 4, 'R', true);
        sop__agg_sample(a, ti, &p, 10.0 * c);
    }
    sop_pysample p = mk(7, in_sel, 3, 'S', false);
    sop__agg_sample(a, ti, &p, 30.0);
    const int64_t coll[4] = {0, 1, 1, 0};
    for (int c = 0; c < 4; c++) {
        /* the GIL's switch count from the 2nd tick on (the 1st could not read it) */
        sop_pygc g = {coll[c], {10 + c, 2, 1}, c ? 1000 + 300 * c : SOP_NA, c ? 5000 : SOP_NA};
        sop__agg_gc(a, &g, 10.0 * c);
    }
    /* Another loop thread: the same coroutine at three ticks, each time run from another
     * Handle (resumed at its awaits: a keep-alive connection's handler on a busy loop), so
     * three short callbacks; then one Handle from 30 ms to the end: 20 ms (50 ms if the name
     * alone joined them). */
    int tj = sop__agg_add_thread(a, 0, 8, "loop2");
    const uint64_t handles[5] = {0x7f0000001060ull, 0x7f00000010c0ull, 0x7f0000001060ull,
                                 0x7f0000009000ull, 0x7f0000009000ull};
    for (int c = 0; c < 5; c++) {
        in_cb[1].obj = handles[c];
        sop_pysample q = mk(8, in_cb, 4, 'R', true);
        sop__agg_sample(a, tj, &q, 10.0 * c);
    }
    /* A third: one Handle address all along (the allocator gave each new Handle the address
     * of the one before), but the loop's turn (_run_once's end_time) changed at 10, 20 and
     * 40 ms: the longest callback is the turn from 20 to 40 ms (50 ms if the Handle alone
     * joined them). */
    int tk = sop__agg_add_thread(a, 0, 9, "loop3");
    const double turns[5] = {1000.5, 1000.51, 1000.52, 1000.52, 1000.54};
    in_cb[1].obj = 0x7f0000001060ull;
    for (int c = 0; c < 5; c++) {
        memcpy(&in_cb[2].obj, &turns[c], sizeof turns[c]);
        sop_pysample q = mk(9, in_cb, 4, 'R', true);
        sop__agg_sample(a, tk, &q, 10.0 * c);
    }
    in_cb[1].obj = in_cb[2].obj = 0;
    sop__agg_finish(a, 50.0);
    CHECK(fabs(a->thrs[tj].longest_ms - 20.0) < 1e-9);
    CHECK(fabs(a->thrs[tk].longest_ms - 20.0) < 1e-9);
    const sop_agg_thread *t = &a->thrs[ti];
    CHECK(t->is_loop);
    CHECK(fabs(t->longest_ms - 30.0) < 1e-9);
    CHECK_EQ_S(t->longest_frame, "handler (/app/srv.py:5)");
    CHECK_EQ_S(t->longest_stack, "handler\t/app/srv.py\t5\n");
    CHECK_EQ_I(a->gc_samples, 4);
    CHECK_EQ_I(a->gc_collecting, 2);
    CHECK(fabs(a->gc_longest_ms - 20.0) < 1e-9);
    CHECK_EQ_I(a->gc_first[0], 10);
    CHECK_EQ_I(a->gc_last[0], 13);
    CHECK(fabs(a->gc_last_ms - 30.0) < 1e-9);
    CHECK_EQ_I(a->gil_sw_first, 1300);
    CHECK_EQ_I(a->gil_sw_last, 1900);
    CHECK_EQ_I(a->gil_interval_us, 5000);
    CHECK(fabs(a->gil_sw_first_ms - 10.0) < 1e-9 && fabs(a->gil_sw_last_ms - 30.0) < 1e-9);
    sop__agg_free(a);
}

/* A full thread table refuses more threads; NULL is accepted by free. */
static void bounds(void)
{
    sop_agg *a = sop__agg_new();
    CHECK(a != NULL);
    if (!a)
        return;
    int last = -1;
    for (int i = 0; i < SOP_AGG_MAX_THREADS; i++)
        last = sop__agg_add_thread(a, 0, i + 1, NULL);
    CHECK_EQ_I(last, SOP_AGG_MAX_THREADS - 1);
    CHECK_EQ_S(a->thrs[0].name, "?");
    CHECK_EQ_I(sop__agg_add_thread(a, 0, 999999, "x"), -1);
    sop_pysample p = mk(1, NULL, 0, 'S', false);
    sop__agg_sample(a, SOP_AGG_MAX_THREADS, &p, 0); /* out of range: ignored */
    CHECK_EQ_I(a->thread_samples, 0);
    sop__agg_sample(a, 0, &p, 0);
    CHECK_EQ_I(a->thrs[0].no_frames, 1);
    const sop_agg_stack *top[1];
    CHECK_EQ_I(sop__agg_top_stacks(a, 0, top, 1), 1);
    CHECK_EQ_S(top[0]->stack, "(no Python frame)");
    sop__agg_free(a);
    sop__agg_free(NULL);
}

/* Collective wait: samples whose innermost distributed-package frame has only library frames
 * inside it are in a collective (its function named); DDP's forward running the user's model is
 * not; the rest is charged to the innermost own frame. A run in one collective lasts to the
 * first sample outside it, or to the window's end. */
static void collectives(void)
{
    sop_agg *a = sop__agg_new();
    CHECK(a != NULL);
    if (!a)
        return;
    sop__agg_start(a, 0.0);
    int t = sop__agg_add_thread(a, 0, 100, "MainThread");
    const char *C10D = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py";
    const char *LOGGER = "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py";
    const char *DDP = "/usr/lib/python3/dist-packages/torch/nn/parallel/distributed.py";
    const char *MOD = "/usr/lib/python3/dist-packages/torch/nn/modules/module.py";
    sop_pyframe ar[4] = {{"all_reduce", C10D, 1500, false, 0},
                         {"_exception_logger.<locals>.wrapper", LOGGER, 47, false, 0},
                         {"step", USER, 20, false, 0},
                         {"main", USER, 30, false, 0}};
    sop_pyframe fwd[4] = {{"Net.forward", USER, 8, false, 0},
                          {"Module._call_impl", MOD, 1500, false, 0},
                          {"DistributedDataParallel.forward", DDP, 1000, false, 0},
                          {"main", USER, 31, false, 0}};
    sop_pyframe prep[2] = {{"prepare", USER, 12, false, 0}, {"main", USER, 29, false, 0}};
    sop_pyframe bar[2] = {{"barrier", C10D, 3000, false, 0}, {"main", USER, 40, false, 0}};
    double now = 0;
    for (int i = 0; i < 3; i++) { /* all_reduce 3 ticks (0..20 ms), then prepare 1, ar 2 */
        sop_pysample p = mk(100, ar, 4, 'S', false);
        sop__agg_sample(a, t, &p, now += 10);
    }
    sop_pysample p = mk(100, prep, 2, 'R', true);
    sop__agg_sample(a, t, &p, now += 10);
    p = mk(100, fwd, 4, 'R', true);
    sop__agg_sample(a, t, &p, now += 10);
    for (int i = 0; i < 2; i++) {
        p = mk(100, ar, 4, 'S', false);
        sop__agg_sample(a, t, &p, now += 10);
    }
    p = mk(100, bar, 2, 'S', false);
    sop__agg_sample(a, t, &p, now += 10);
    sop__agg_finish(a, now + 50);
    const sop_agg_thread *th = &a->thrs[t];
    CHECK_EQ_I(th->n, 8);
    CHECK_EQ_I(th->coll, 6); /* 5 all_reduce + 1 barrier; not DDP's forward */
    CHECK_EQ_I(th->own, 2);  /* prepare, Net.forward */
    const sop_agg_site *op = sop__agg_top_site(a, (size_t)t, SOP_AGG_SITE_COLL);
    CHECK(op && strcmp(op->frame, "all_reduce") == 0 && op->count == 5);
    const sop_agg_site *own = sop__agg_top_site(a, (size_t)t, SOP_AGG_SITE_OWN);
    CHECK(own && own->count == 1);
    /* runs: all_reduce 10..40 (30 ms), 60..80 (20 ms), barrier 80..130 (to the end: 50 ms) */
    CHECK(fabs(th->coll_longest_ms - 50) < 1e-9);
    sop__agg_free(a);
}

/* One tick of the per-tick view: `nw` threads asleep in a futex at the `with lock:` line (word
 * `addr`, or each its own when addr is 0), `nin` threads inside the same function at the body
 * line, one of them holding the GIL, and one thread holding the GIL elsewhere. */
static void lock_tick(sop_agg *a, int nw, int nin, uint64_t addr, double now)
{
    static const sop_pyframe wait_fr[] = {{"handle", USER, 8, false, 0},
                                          {"run", LIB, 975, false, 0}};
    static const sop_pyframe in_fr[] = {
        {"call", USER, 4, false, 0}, {"handle", USER, 9, false, 0}, {"run", LIB, 975, false, 0}};
    for (int i = 0; i < nw + nin; i++) {
        int tid = 300 + i;
        int ti = sop__agg_find_thread(a, 0, tid);
        if (ti < 0)
            ti = sop__agg_add_thread(a, 0, tid, "req");
        bool waits = i < nw;
        sop_pysample p = waits ? mk(tid, wait_fr, 2, 'S', false) : mk(tid, in_fr, 3, 'R', i == nw);
        p.futex_wait = waits;
        p.futex_addr = waits ? (addr ? addr : 0x1000u + 64u * (uint64_t)i) : 0;
        sop__agg_sample(a, ti, &p, now);
    }
    sop__agg_tick(a);
}

static void per_tick(void)
{
    sop_agg *a = sop__agg_new();
    CHECK(a != NULL);
    if (!a)
        return;
    sop__agg_start(a, 0);
    double now = 0;
    /* 10 ticks of a convoy: 6 asleep on one word, one holder */
    for (int k = 0; k < 10; k++)
        lock_tick(a, 6, 1, 0xabc0, now += 10);
    CHECK_EQ_I((long)a->nlocks, 1);
    const sop_agg_lock *l = &a->locks[0];
    CHECK_EQ_S(l->site_txt, "handle (" USER ":8)");
    CHECK_EQ_I(l->ticks, 10);
    CHECK_EQ_I(l->waiter_sum, 60);
    CHECK_EQ_I(l->waiter_max, 6);
    CHECK_EQ_I(l->held, 10);
    CHECK_EQ_I(l->crowded, 0);
    CHECK_EQ_I(l->one_word, 10);
    CHECK_EQ_I(l->holder_run, 10);
    CHECK_EQ_I(l->ntids, 6);
    CHECK_EQ_S(l->holders[0].frame, "call (" USER ":4)");
    /* 5 ticks of a pool: 3 waiting each on its own word, 3 inside at once */
    for (int k = 0; k < 5; k++)
        lock_tick(a, 3, 3, 0, now += 10);
    CHECK_EQ_I(l->ticks, 15);
    CHECK_EQ_I(l->held, 10);
    CHECK_EQ_I(l->crowded, 5);
    CHECK_EQ_I(l->one_word, 10);
    CHECK_EQ_I(l->multi, 15);
    /* concurrency: one GIL holder per tick, nobody asleep on the GIL */
    CHECK_EQ_I(a->conc_ticks, 15);
    CHECK_EQ_I(a->conc_wanting_sum, 15);
    CHECK_EQ_I(a->conc_contended, 0);
    /* GIL contention among threads that come and go: each tick 1 holder + 3 asleep on the GIL,
     * every tick other threads */
    static const sop_pyframe spin_fr[] = {{"spin", USER, 20, false, 0}};
    for (int k = 0; k < 10; k++) {
        for (int i = 0; i < 4; i++) {
            int ti = sop__agg_add_thread(a, 0, 1000 + 4 * k + i, "short");
            sop_pysample p = mk(1000 + 4 * k + i, spin_fr, 1, i == 0 ? 'R' : 'S', i == 0);
            p.gil_wait = i > 0;
            sop__agg_sample(a, ti, &p, now + 10);
        }
        now += 10;
        sop__agg_tick(a);
    }
    CHECK_EQ_I(a->conc_ticks, 25);
    CHECK_EQ_I(a->conc_contended, 10);
    CHECK_EQ_I(a->conc_ge2, 10);
    CHECK_EQ_I(a->conc_wanting_max, 4);
    CHECK_EQ_I(a->conc_wanting_sum, 15 + 40);
    CHECK_EQ_I((long)a->nlocks, 1); /* the GIL is no lock site */
    sop__agg_free(a);
}

static void alternation(void)
{
    sop_agg *a = sop__agg_new();
    CHECK(a != NULL);
    if (!a)
        return;
    sop__agg_start(a, 0);
    static const sop_pyframe fr[] = {{"loop", USER, 5, false, 0}};
    int ti = sop__agg_add_thread(a, 0, 500, "MainThread");
    /* GIL, native, GIL, native, ... with the CPU time advancing: every pair alternates */
    for (int k = 0; k < 10; k++) {
        sop_pysample p = mk(500, fr, 1, 'R', k % 2 == 0);
        p.cpu_ticks = k;
        sop__agg_sample(a, ti, &p, 10.0 * k);
    }
    CHECK_EQ_I(a->thrs[ti].alt_pairs, 9);
    CHECK_EQ_I(a->thrs[ti].alts, 9);
    /* the thread did not run between samples (preempted): those pairs are not counted */
    for (int k = 0; k < 4; k++) {
        sop_pysample p = mk(500, fr, 1, 'R', k % 2 == 0);
        p.cpu_ticks = 9;
        sop__agg_sample(a, ti, &p, 100.0 + 10.0 * k);
    }
    CHECK_EQ_I(a->thrs[ti].alt_pairs, 9);
    /* asleep: no pair with the next sample; a long native stay: pairs without change */
    sop_pysample idle = mk(500, fr, 1, 'S', false);
    idle.cpu_ticks = 9;
    sop__agg_sample(a, ti, &idle, 200.0);
    for (int k = 0; k < 5; k++) {
        sop_pysample p = mk(500, fr, 1, 'R', false);
        p.cpu_ticks = 10 + k;
        sop__agg_sample(a, ti, &p, 210.0 + 10.0 * k);
    }
    CHECK_EQ_I(a->thrs[ti].alt_pairs, 13);
    CHECK_EQ_I(a->thrs[ti].alts, 9);
    sop__agg_free(a);
}

int main(void)
{
    shares_and_top_n();
    collectives();
    loop_and_gc();
    bounds();
    per_tick();
    alternation();
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail ? 1 : 0;
}
