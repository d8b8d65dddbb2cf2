/* heap_growth.c — sop__heap_growth: two censuses of one process compared by type name, the
 * types that grew most first. Pure: sop_pyheap in, a list out. Depends on libc. */
#include "heap_census.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_names(const void *pa, const void *pb)
{
    return strcmp(((const sop_heap_type *)pa)->name, ((const sop_heap_type *)pb)->name);
}

static int cmp_grown(const void *pa, const void *pb)
{
    int64_t a = (int64_t)((const sop_heap_type *)pa)->bytes;
    int64_t b = (int64_t)((const sop_heap_type *)pb)->bytes;
    return a < b ? 1 : a > b ? -1 : cmp_names(pa, pb);
}

/* Copy of h's types sorted by name, those of one name merged (a class defined twice). */
static sop_heap_type *by_name(const sop_pyheap *h, size_t *n)
{
    sop_heap_type *t = malloc((h->ntypes ? h->ntypes : 1) * sizeof *t);
    if (!t)
        return NULL;
    if (h->ntypes)
        memcpy(t, h->types, h->ntypes * sizeof *t);
    qsort(t, h->ntypes, sizeof *t, cmp_names);
    size_t k = 0;
    for (size_t i = 0; i < h->ntypes; i++) {
        if (k && strcmp(t[k - 1].name, t[i].name) == 0) {
            t[k - 1].count += t[i].count;
            t[k - 1].bytes += t[i].bytes;
            t[k - 1].frozen += t[i].frozen;
        } else {
            t[k++] = t[i];
        }
    }
    *n = k;
    return t;
}

long sop__heap_growth(const sop_pyheap *a, const sop_pyheap *b, sop_heap_type **out)
{
    *out = NULL;
    size_t na = 0, nb = 0, n = 0;
    sop_heap_type *ta = by_name(a, &na), *tb = by_name(b, &nb);
    sop_heap_type *g = malloc((na + nb + 1) * sizeof *g);
    if (!ta || !tb || !g) {
        free(ta);
        free(tb);
        free(g);
        return -ENOMEM;
    }
    /* Types are matched by name: a type object can be freed and another allocated there. */
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : strcmp(ta[i].name, tb[j].name);
        sop_heap_type d = c <= 0 ? ta[i] : tb[j];
        int64_t c0 = c <= 0 ? (int64_t)ta[i].count : 0, b0 = c <= 0 ? (int64_t)ta[i].bytes : 0;
        int64_t c1 = c >= 0 ? (int64_t)tb[j].count : 0, b1 = c >= 0 ? (int64_t)tb[j].bytes : 0;
        if (c >= 0)
            d = tb[j];
        i += c <= 0;
        j += c >= 0;
        if (c1 == c0 && b1 == b0)
            continue;
        d.count = (uint64_t)(c1 - c0);
        d.bytes = (uint64_t)(b1 - b0);
        g[n++] = d;
    }
    free(ta);
    free(tb);
    qsort(g, n, sizeof *g, cmp_grown);
    *out = g;
    return (long)n;
}
