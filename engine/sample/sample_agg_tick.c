/* sample_agg_tick.c — the cross-thread view of one tick (sample_agg.h): each thread's sample of
 * the tick is held by sample_agg.c (sop__agg_sample), then sop__agg_tick counts how many
 * threads wanted the GIL or a CPU at once and, per lock site some thread sleeps at, its waiters,
 * whether they share one futex word, and the one thread inside the site's function (the holder).
 * Pure: no /proc, no clock. Depends on libc. */
#include "sample_agg.h"

#include <stdio.h>
#include <string.h>

static sop_agg_lock *lock_site(sop_agg *a, const sop_agg_tick_thr *w)
{
    for (size_t i = 0; i < a->nlocks; i++)
        if (a->locks[i].site == w->site && strcmp(a->locks[i].site_txt, w->site_txt) == 0)
            return &a->locks[i];
    if (a->nlocks >= SOP_AGG_LOCKS_MAX)
        return NULL;
    sop_agg_lock *l = &a->locks[a->nlocks++];
    memset(l, 0, sizeof *l);
    l->site = w->site;
    l->site_func = w->site_func;
    snprintf(l->site_txt, sizeof l->site_txt, "%s", w->site_txt);
    return l;
}

static void lock_add_tid(sop_agg_lock *l, int tid)
{
    for (int i = 0; i < l->ntids; i++)
        if (l->tids[i] == tid)
            return;
    if (l->ntids < SOP_AGG_LOCK_TIDS)
        l->tids[l->ntids++] = tid;
}

static void lock_add_holder(sop_agg_lock *l, const sop_agg_tick_thr *h)
{
    char key[384];
    if (h->site_txt[0] && strcmp(h->site_txt, h->leaf_txt) != 0)
        snprintf(key, sizeof key, "%.180s > %.180s", h->site_txt, h->leaf_txt);
    else
        snprintf(key, sizeof key, "%s", h->leaf_txt[0] ? h->leaf_txt : "?");
    int min = 0;
    for (int i = 0; i < l->nholders; i++) {
        if (strcmp(l->holders[i].frame, key) == 0) {
            l->holders[i].count++;
            return;
        }
        if (l->holders[i].count < l->holders[min].count)
            min = i;
    }
    int at = l->nholders < SOP_AGG_LOCK_HOLDERS ? l->nholders++ : min;
    if (at == min && l->nholders == SOP_AGG_LOCK_HOLDERS && l->holders[min].count > 1)
        return; /* the table is full of frames seen more often */
    snprintf(l->holders[at].frame, sizeof l->holders[at].frame, "%s", key);
    l->holders[at].count = 1;
}

static bool has_func(const sop_agg_tick_thr *e, uint64_t f)
{
    for (int k = 0; k < e->nfuncs; k++)
        if (e->funcs[k] == f)
            return true;
    return false;
}

void sop__agg_tick(sop_agg *a)
{
    if (!a->tick)
        return;
    long wanting = 0, runnable = 0, gil = 0, gil_wait = 0;
    for (size_t i = 0; i < a->ntick; i++) {
        const sop_agg_tick_thr *e = &a->tick[i];
        wanting += e->gil || e->gil_wait;
        runnable += e->gil || e->gil_wait || e->run;
        gil += e->gil;
        gil_wait += e->gil_wait;
    }
    if (a->ntick > 0) {
        a->conc_ticks++;
        a->conc_wanting_sum += wanting;
        a->conc_runnable_sum += runnable;
        if (wanting > a->conc_wanting_max)
            a->conc_wanting_max = wanting;
        a->conc_contended += gil > 0 && gil_wait > 0;
        a->conc_ge2 += wanting >= 2;
    }
    /* Lock sites: each distinct site some thread waits at, once per tick. */
    for (size_t i = 0; i < a->ntick; i++) {
        const sop_agg_tick_thr *w = &a->tick[i];
        if (!w->waits || !w->site)
            continue;
        bool first = true;
        for (size_t j = 0; j < i && first; j++)
            if (a->tick[j].waits && a->tick[j].site == w->site)
                first = false;
        if (!first)
            continue;
        sop_agg_lock *l = lock_site(a, w);
        if (!l)
            continue;
        long waiters = 0, inside = 0, native = 0;
        const sop_agg_tick_thr *holder = NULL, *nholder = NULL;
        for (size_t j = 0; j < a->ntick; j++) {
            const sop_agg_tick_thr *o = &a->tick[j];
            if (o->waits && o->site == w->site) {
                waiters++;
                lock_add_tid(l, (int)a->thrs[o->thr].tid);
            } else if (o->site == w->site && strcmp(o->leaf_txt, w->leaf_txt) == 0) {
                /* At the same call but not asleep on a lock. Holding or waiting for the GIL: just
                 * woken from a Python lock, or about to sleep on it. Neither (running native code,
                 * or asleep on something else, the GIL released): inside a library call whose own
                 * lock the waiters queue on (a shared connection's mutex): the holder. */
                if (!o->gil && !o->gil_wait) {
                    native++;
                    nholder = o;
                }
            } else if (has_func(o, l->site_func)) {
                inside++;
                holder = o;
            }
        }
        long sleepers = waiters;
        /* Several at the call outside Python: the holder and a waiter just woken to retry (a
         * lock that lets its releaser take it again first); the count of them says nothing of
         * mutual exclusion, the waiters sharing one word does (one_word). */
        if (inside == 0 && native >= 1) {
            inside = 1;
            holder = nholder;
            l->held_native++;
            /* ... and the others there retry it: runnable, queued for a CPU or spinning on the
             * lock, they wait for it as the sleepers do (one CPU: most of them). */
            waiters += native - 1;
        }
        l->ticks++;
        l->waiter_sum += waiters;
        if (waiters > l->waiter_max)
            l->waiter_max = waiters;
        if (sleepers >= 2) {
            l->multi++;
            long most = 0; /* waiters there sharing one futex word, at most */
            for (size_t j = 0; j < a->ntick; j++) {
                const sop_agg_tick_thr *o = &a->tick[j];
                if (!o->waits || o->site != w->site || !o->addr)
                    continue;
                long same = 0;
                for (size_t k = 0; k < a->ntick; k++)
                    same += a->tick[k].waits && a->tick[k].site == w->site &&
                            a->tick[k].addr == o->addr;
                if (same > most)
                    most = same;
            }
            l->one_word += 2 * most > sleepers;
        }
        if (inside == 1) {
            l->held++;
            l->holder_run += holder->gil || holder->run;
            lock_add_holder(l, holder);
        } else if (inside > 1) {
            l->crowded++;
        }
    }
    a->ntick = 0;
}
