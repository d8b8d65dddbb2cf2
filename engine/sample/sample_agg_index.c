/* sample_agg_index.c — the aggregation's index for its queries (sample_agg.h): each thread's
 * stack and site slots, in table order, built from the slots taken (a->stack_used, leaf_used)
 * when the tables have grown, so that a query per thread walks that thread's slots and not the
 * whole tables. Made and freed with the aggregation (sample_agg_threads.c, sample_agg.c), read
 * by the queries (sample_agg_query.c). Depends on libc. */
#include "sample_agg.h"

#include <stdint.h>
#include <stdlib.h>

/* Built from the taken slots when the tables have grown since (a sample adds slots; a slot
 * never changes thread): slot numbers grouped by thread, each group in table order. */
struct sop_agg_by_thread {
    size_t nstacks, nleaves;         /* what it was built from; (size_t)-1: never built */
    uint32_t *stacks, *leaves, *all; /* all: every stack's slot in table order */
    size_t *sfirst, *lfirst;         /* thread ti's group: [first[ti], first[ti + 1]) */
};

struct sop_agg_by_thread *sop__agg_by_thread_new(void)
{
    struct sop_agg_by_thread *x = calloc(1, sizeof *x);
    if (x)
        x->nstacks = x->nleaves = (size_t)-1;
    return x;
}

void sop__agg_by_thread_free(struct sop_agg_by_thread *x)
{
    if (!x)
        return;
    free(x->stacks);
    free(x->leaves);
    free(x->all);
    free(x->sfirst);
    free(x->lfirst);
    free(x);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* used[0..n) (slots) grouped by thread (thr_of), each group ascending, into *out; *first gets
 * SOP_AGG_MAX_THREADS + 1 offsets. 0, or -1 out of memory. */
static int group(const uint32_t *used, size_t n, const uint32_t *thr, uint32_t **out,
                 size_t **first)
{
    uint64_t *keys = malloc((n + 1) * sizeof *keys);
    uint32_t *o = realloc(*out, (n + 1) * sizeof *o);
    size_t *f = *first ? *first : malloc((SOP_AGG_MAX_THREADS + 1) * sizeof *f);
    if (o)
        *out = o;
    if (f)
        *first = f;
    if (!keys || !o || !f) {
        free(keys);
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        keys[k] = (uint64_t)thr[k] << 32 | used[k];
    qsort(keys, n, sizeof *keys, cmp_u64);
    size_t t = 0;
    for (size_t k = 0; k < n; k++) {
        size_t ti = (size_t)(keys[k] >> 32);
        while (t <= ti && t <= SOP_AGG_MAX_THREADS)
            f[t++] = k;
        o[k] = (uint32_t)keys[k];
    }
    while (t <= SOP_AGG_MAX_THREADS)
        f[t++] = n;
    free(keys);
    return 0;
}

/* The index, built or brought up to date; NULL when it cannot be (out of memory). */
static const struct sop_agg_by_thread *by_thread(const sop_agg *a)
{
    struct sop_agg_by_thread *x = a->by_thr;
    if (!x)
        return NULL;
    if (x->nstacks != a->nstacks) {
        uint32_t *thr = malloc((a->nstacks + 1) * sizeof *thr);
        uint32_t *zero = calloc(a->nstacks + 1, sizeof *zero);
        size_t *ignore = NULL;
        int rc = thr && zero ? 0 : -1;
        for (size_t k = 0; rc == 0 && k < a->nstacks; k++)
            thr[k] = a->stacks[a->stack_used[k]].thr;
        if (rc == 0)
            rc = group(a->stack_used, a->nstacks, thr, &x->stacks, &x->sfirst);
        if (rc == 0) /* every slot as one group: table order */
            rc = group(a->stack_used, a->nstacks, zero, &x->all, &ignore);
        free(ignore);
        free(thr);
        free(zero);
        if (rc < 0)
            return NULL;
        x->nstacks = a->nstacks;
    }
    if (x->nleaves != a->nleaves) {
        uint32_t *thr = malloc((a->nleaves + 1) * sizeof *thr);
        if (!thr)
            return NULL;
        for (size_t k = 0; k < a->nleaves; k++)
            thr[k] = a->leaves[a->leaf_used[k]].thr;
        int rc = group(a->leaf_used, a->nleaves, thr, &x->leaves, &x->lfirst);
        free(thr);
        if (rc < 0)
            return NULL;
        x->nleaves = a->nleaves;
    }
    return x;
}

size_t sop__agg_thread_stacks(const sop_agg *a, size_t ti, const uint32_t **slots)
{
    const struct sop_agg_by_thread *x = by_thread(a);
    *slots = NULL;
    if (!x || ti >= SOP_AGG_MAX_THREADS)
        return 0;
    *slots = x->stacks + x->sfirst[ti];
    return x->sfirst[ti + 1] - x->sfirst[ti];
}

size_t sop__agg_thread_leaves(const sop_agg *a, size_t ti, const uint32_t **slots)
{
    const struct sop_agg_by_thread *x = by_thread(a);
    *slots = NULL;
    if (!x || ti >= SOP_AGG_MAX_THREADS)
        return 0;
    *slots = x->leaves + x->lfirst[ti];
    return x->lfirst[ti + 1] - x->lfirst[ti];
}

size_t sop__agg_all_stacks(const sop_agg *a, const uint32_t **slots)
{
    const struct sop_agg_by_thread *x = by_thread(a);
    *slots = x ? x->all : NULL;
    return x ? a->nstacks : 0;
}
