/* sample_agg_query.c — what the bridge asks of an aggregated window (sample_agg.h): a thread's
 * top stacks, leaves and sites, what it stored, its entries, its states. Read-only over the
 * sop_agg that sample_agg.c filled; a thread's slots come from the index
 * (sample_agg_index.c). Depends on libc. */
#include "sample_agg.h"

#include <stdlib.h>
#include <string.h>

int sop__agg_top_stacks(const sop_agg *a, size_t ti, const sop_agg_stack **top, int n)
{
    int got = 0;
    for (int k = 0; k < n; k++)
        top[k] = NULL;
    const uint32_t *slots;
    size_t ns = sop__agg_thread_stacks(a, ti, &slots);
    for (size_t j = 0; j < ns; j++) {
        const sop_agg_stack *e = &a->stacks[slots[j]];
        for (int k = 0; k < n; k++)
            if (!top[k] || e->count > top[k]->count) {
                memmove(&top[k + 1], &top[k], (size_t)(n - 1 - k) * sizeof top[0]);
                top[k] = e;
                break;
            }
    }
    while (got < n && top[got])
        got++;
    return got;
}

int sop__agg_top_leaves(const sop_agg *a, size_t ti, const sop_agg_leaf **top, int n)
{
    int got = 0;
    for (int k = 0; k < n; k++)
        top[k] = NULL;
    const uint32_t *slots;
    size_t nl = sop__agg_thread_leaves(a, ti, &slots);
    for (size_t j = 0; j < nl; j++) {
        const sop_agg_leaf *e = &a->leaves[slots[j]];
        for (int k = 0; k < n; k++)
            if (!top[k] || e->count > top[k]->count) {
                memmove(&top[k + 1], &top[k], (size_t)(n - 1 - k) * sizeof top[0]);
                top[k] = e;
                break;
            }
    }
    while (got < n && top[got])
        got++;
    return got;
}

const sop_agg_site *sop__agg_top_site(const sop_agg *a, size_t ti, int kind)
{
    const sop_agg_site *best = NULL;
    for (size_t i = 0; i < a->nsites; i++) {
        const sop_agg_site *e = &a->sites[i];
        if (e->thr == ti && e->kind == kind && (!best || e->count > best->count))
            best = e;
    }
    return best;
}

long sop__agg_stored(const sop_agg *a, size_t ti)
{
    long stored = 0;
    const uint32_t *slots;
    size_t ns = sop__agg_thread_stacks(a, ti, &slots);
    for (size_t j = 0; j < ns; j++)
        stored += a->stacks[slots[j]].count;
    return stored;
}

int sop__agg_entries(const sop_agg *a, size_t ti, sop_agg_entry *out, int n)
{
    sop_agg_entry v[64];
    int nv = 0;
    const uint32_t *slots;
    size_t nl = sop__agg_thread_leaves(a, ti, &slots);
    for (size_t j = 0; j < nl; j++) {
        const sop_agg_leaf *e = &a->leaves[slots[j]];
        if (!e->entry.func)
            continue;
        int k = 0;
        while (k < nv && !(strcmp(v[k].entry->func, e->entry.func) == 0 &&
                           strcmp(v[k].entry->file, e->entry.file) == 0))
            k++;
        if (k == nv) {
            if (nv == (int)(sizeof v / sizeof v[0]))
                continue;
            memset(&v[nv], 0, sizeof v[nv]);
            v[nv++].entry = &e->entry;
        }
        v[k].count += e->count;
        v[k].active += e->active;
        v[k].sites++;
        if (e->active > v[k].top_active)
            v[k].top_active = e->active;
    }
    int got = 0;
    for (; got < n; got++) { /* the most sampled first */
        int best = -1;
        for (int k = 0; k < nv; k++)
            if (v[k].count > 0 && (best < 0 || v[k].count > v[best].count))
                best = k;
        if (best < 0)
            break;
        out[got] = v[best];
        v[best].count = 0;
    }
    return got;
}

bool sop__agg_thread_states(const sop_agg *a, int proc, int tid, sop_agg_states *out)
{
    memset(out, 0, sizeof *out);
    int ti = sop__agg_find_thread(a, proc, tid);
    if (ti < 0)
        return false;
    const sop_agg_thread *t = &a->thrs[ti];
    out->n = t->n;
    out->running = t->state_r;
    out->io = t->state_d;
    out->idle = t->n - t->state_r - t->state_d;
    return true;
}
