/* asyncio_task_index.c — see asyncio_task_index.h. */
#include "asyncio_task_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int cmp_addr(const void *pa, const void *pb)
{
    const sop_task_addr *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->ix < b->ix ? -1 : a->ix > b->ix;
}

int sop__task_index_build(sop_task_index *ix, const sop_pytasks *t, bool awaited_by)
{
    memset(ix, 0, sizeof *ix);
    ix->t = t;
    size_t n = t ? t->ntasks : 0;
    ix->by_addr = malloc((n ? n : 1) * sizeof *ix->by_addr);
    if (!ix->by_addr)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        ix->by_addr[i] = (sop_task_addr){t->tasks[i].addr, i};
    qsort(ix->by_addr, n, sizeof *ix->by_addr, cmp_addr);
    if (!awaited_by)
        return 0;
    /* Counting sort of the (awaited, awaiter) edges by the awaited task. */
    ix->by_off = calloc(n + 1, sizeof *ix->by_off);
    size_t edges = 0;
    for (size_t i = 0; ix->by_off && i < n; i++)
        for (size_t k = 0; k < t->tasks[i].nawaits; k++) {
            long j = sop__task_index_find(ix, t->tasks[i].awaits[k]);
            if (j >= 0 && (size_t)j != i) {
                ix->by_off[j + 1]++;
                edges++;
            }
        }
    ix->by_list = malloc((edges ? edges : 1) * sizeof *ix->by_list);
    size_t *fill = malloc((n ? n : 1) * sizeof *fill);
    if (!ix->by_off || !ix->by_list || !fill) {
        free(fill);
        sop__task_index_free(ix);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        ix->by_off[i + 1] += ix->by_off[i];
    memcpy(fill, ix->by_off, n * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < t->tasks[i].nawaits; k++) {
            long j = sop__task_index_find(ix, t->tasks[i].awaits[k]);
            /* one edge per awaiter: a task listing the same one twice (a gather of it twice)
             * is one awaiter */
            if (j >= 0 && (size_t)j != i &&
                (fill[j] == ix->by_off[j] || ix->by_list[fill[j] - 1] != i))
                ix->by_list[fill[j]++] = i;
        }
    /* Close the gaps duplicates left: keep by_off[j]..fill[j] per task. */
    size_t o = 0;
    for (size_t j = 0; j < n; j++) {
        size_t from = ix->by_off[j], cnt = fill[j] - from;
        memmove(ix->by_list + o, ix->by_list + from, cnt * sizeof *ix->by_list);
        ix->by_off[j] = o;
        o += cnt;
    }
    ix->by_off[n] = o;
    free(fill);
    return 0;
}

void sop__task_index_free(sop_task_index *ix)
{
    free(ix->by_addr);
    free(ix->by_off);
    free(ix->by_list);
    memset(ix, 0, sizeof *ix);
}

long sop__task_index_find(const sop_task_index *ix, uint64_t addr)
{
    size_t n = ix->t && ix->by_addr ? ix->t->ntasks : 0, lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->by_addr[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ix->by_addr[lo].addr == addr ? (long)ix->by_addr[lo].ix : -1;
}

const sop_pytask *sop__task_index_same(const sop_task_index *ix, const sop_pytask *t)
{
    long j = ix ? sop__task_index_find(ix, t->addr) : -1;
    if (j < 0)
        return NULL;
    const sop_pytask *s = &ix->t->tasks[j];
    return strcmp(s->name, t->name) == 0 ? s : NULL;
}

size_t sop__task_index_awaited_n(const sop_task_index *ix, size_t i)
{
    return ix->by_off && ix->t && i < ix->t->ntasks ? ix->by_off[i + 1] - ix->by_off[i] : 0;
}

size_t sop__task_index_awaited(const sop_task_index *ix, size_t i, size_t k)
{
    return ix->by_list[ix->by_off[i] + k];
}
