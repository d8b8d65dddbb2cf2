/* sample_agg_threads.c — the aggregation's window and threads (sample_agg.h): a new aggregation,
 * the timeline switch, the window's start, the threads it knows (found or added by process and
 * tid), and the collector's counts per window. Samples are counted by sample_agg.c (which also
 * frees). Depends on libc. */
#include "sample_agg.h"

#include <stdlib.h>
#include <string.h>

#include "zalloc.h"

sop_agg *sop__agg_new(void)
{
    sop_agg *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->thrs = sop__zalloc(SOP_AGG_MAX_THREADS, sizeof *a->thrs);
    a->stacks = sop__zalloc(SOP_AGG_STACK_SLOTS, sizeof *a->stacks);
    a->sites = sop__zalloc(SOP_AGG_SITES_MAX, sizeof *a->sites);
    a->leaves = sop__zalloc(SOP_AGG_LEAF_SLOTS, sizeof *a->leaves);
    a->tick = sop__zalloc(SOP_AGG_TICK_THREADS, sizeof *a->tick);
    a->locks = sop__zalloc(SOP_AGG_LOCKS_MAX, sizeof *a->locks);
    a->stack_used = sop__zalloc(SOP_AGG_STACK_SLOTS / 2, sizeof *a->stack_used);
    a->leaf_used = sop__zalloc(SOP_AGG_LEAF_SLOTS / 2, sizeof *a->leaf_used);
    a->by_thr = sop__agg_by_thread_new();
    if (!a->thrs || !a->stacks || !a->sites || !a->leaves || !a->tick || !a->locks ||
        !a->stack_used || !a->leaf_used || !a->by_thr) {
        sop__agg_free(a);
        return NULL;
    }
    for (int g = 0; g < 3; g++)
        a->gc_first[g] = a->gc_last[g] = SOP_NA;
    a->gil_sw_first = a->gil_sw_last = a->gil_interval_us = SOP_NA;
    return a;
}

void sop__agg_keep_timeline(sop_agg *a)
{
    a->keep_timeline = true;
}

void sop__agg_start(sop_agg *a, double t0_ms)
{
    for (int g = 0; g < 3; g++)
        a->gc_first[g] = a->gc_last[g] = SOP_NA;
    a->gil_sw_first = a->gil_sw_last = a->gil_interval_us = SOP_NA;
    a->gil_sw_backs = 0;
    a->t0_ms = t0_ms;
}

int sop__agg_find_thread(const sop_agg *a, int proc, int tid)
{
    for (size_t i = 0; i < a->nthrs; i++)
        if (a->thrs[i].proc == proc && a->thrs[i].tid == tid)
            return (int)i;
    return -1;
}

int sop__agg_add_thread(sop_agg *a, int proc, int tid, const char *name)
{
    if (a->nthrs >= SOP_AGG_MAX_THREADS)
        return -1;
    sop_agg_thread *t = &a->thrs[a->nthrs];
    memset(t, 0, sizeof *t);
    t->proc = proc;
    t->tid = tid;
    t->last_majflt = t->last_minflt = SOP_NA;
    t->prev_cpu = SOP_NA;
    snprintf(t->name, sizeof t->name, "%s", name ? name : "?");
    for (char *c = t->name; *c; c++) /* the name is a frame of the collapsed stacks */
        if (*c == ';' || *c == '\n')
            *c = ':';
    return (int)a->nthrs++;
}

/* The collecting stretch (from its first collecting tick to the first tick it is not
 * collecting, as loop stretches) and the collection counters. */
void sop__agg_gc(sop_agg *a, const sop_pygc *g, double now_ms)
{
    double now = now_ms;
    a->gc_samples++;
    if (g->collecting == 1) {
        a->gc_collecting++;
        if (!a->gc_in_stretch) {
            a->gc_in_stretch = true;
            a->gc_stretch_t0_ms = now;
        }
    } else if (a->gc_in_stretch) {
        a->gc_in_stretch = false;
        if (now - a->gc_stretch_t0_ms > a->gc_longest_ms)
            a->gc_longest_ms = now - a->gc_stretch_t0_ms;
    }
    if (g->collections[0] != SOP_NA) {
        if (a->gc_first[0] == SOP_NA) {
            memcpy(a->gc_first, g->collections, sizeof a->gc_first);
            a->gc_first_ms = now;
        }
        memcpy(a->gc_last, g->collections, sizeof a->gc_last);
        a->gc_last_ms = now;
    }
    if (g->gil_switches != SOP_NA) {
        if (a->gil_sw_first == SOP_NA) {
            a->gil_sw_first = g->gil_switches;
            a->gil_sw_first_ms = now;
        } else if (g->gil_switches < a->gil_sw_last) {
            a->gil_sw_backs++; /* one word, only ever incremented: written by someone */
        }
        a->gil_sw_last = g->gil_switches;
        a->gil_sw_last_ms = now;
        a->gil_interval_us = g->gil_interval_us;
    }
}
