/* severity.c — the one order of severities and the one stable sort of findings by it (see
 * severity.h). Depends on value.c. */
#include "severity.h"

#include <string.h>

int sop__severity_rank(const char *s)
{
    if (s && strcmp(s, "high") == 0)
        return 0;
    if (s && strcmp(s, "warn") == 0)
        return 1;
    return 2;
}

void sop__sort_by_severity(sop_value *arr)
{
    if (!arr || arr->type != SOP_V_ARR || arr->count < 2)
        return;
    sop_value *buckets[3] = {NULL}, *tails[3] = {NULL};
    for (sop_value *c = arr->child, *next; c; c = next) {
        next = c->next;
        c->next = NULL;
        int r = sop__severity_rank(sop__v_get_str(c, "severity"));
        if (tails[r])
            tails[r]->next = c;
        else
            buckets[r] = c;
        tails[r] = c;
    }
    arr->child = arr->last = NULL;
    for (int r = 0; r < 3; r++) {
        if (!buckets[r])
            continue;
        if (arr->last)
            arr->last->next = buckets[r];
        else
            arr->child = buckets[r];
        arr->last = tails[r];
    }
}
