/* addr_set.c — the walks' growing address sets (addr_set.h): a chain of 50 frames or a list of
 * 32 threads touches one page of set, not the 128 KiB that the deepest chain would need.
 * Depends on libc only. */
#include "addr_set.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ADDR_SET_START 256u /* slots: 2 KiB, for up to 128 addresses */

static size_t slot_of(uint64_t p, size_t cap)
{
    return (size_t)((p >> 3) * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

/* Place p (not there) in slot[cap]; the slot used, or cap when full. */
static size_t place(uint64_t *slot, size_t cap, uint64_t p)
{
    size_t i = slot_of(p, cap);
    for (size_t k = 0; k < cap; k++, i = (i + 1) & (cap - 1)) {
        if (slot[i] == p)
            return cap;
        if (slot[i] == 0) {
            slot[i] = p;
            return i;
        }
    }
    return cap;
}

int sop__addr_set_init(sop_addr_set *s, size_t max)
{
    memset(s, 0, sizeof *s);
    s->max = max;
    s->cap = max < ADDR_SET_START ? max : ADDR_SET_START;
    s->used_cap = s->cap / 2;
    s->slot = calloc(s->cap, sizeof *s->slot);
    s->used = malloc(s->used_cap * sizeof *s->used);
    if (!s->slot || !s->used) {
        sop__addr_set_free(s);
        return -ENOMEM;
    }
    return 0;
}

/* Double the slots (rehashing what is held) and the list of used slots. */
static int grow(sop_addr_set *s)
{
    size_t ncap = s->cap * 2;
    uint64_t *nslot = calloc(ncap, sizeof *nslot);
    uint32_t *nused = realloc(s->used, (ncap / 2) * sizeof *nused);
    if (nused)
        s->used = nused;
    if (!nslot || !nused) {
        free(nslot);
        return -ENOMEM;
    }
    s->used_cap = ncap / 2;
    for (size_t i = 0; i < s->n; i++)
        s->used[i] = (uint32_t)place(nslot, ncap, s->slot[s->used[i]]);
    free(s->slot);
    s->slot = nslot;
    s->cap = ncap;
    return 0;
}

int sop__addr_set_add(sop_addr_set *s, uint64_t p)
{
    if (!s->slot)
        return -ENOMEM;
    if ((s->n + 1) * 2 > s->cap && s->cap < s->max && grow(s) < 0)
        return -ENOMEM;
    if (s->n >= s->used_cap)
        return 0; /* full: at the bound */
    size_t i = place(s->slot, s->cap, p);
    if (i == s->cap)
        return 0;
    s->used[s->n++] = (uint32_t)i;
    return 1;
}

void sop__addr_set_clear(sop_addr_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->slot[s->used[i]] = 0;
    s->n = 0;
}

void sop__addr_set_free(sop_addr_set *s)
{
    free(s->slot);
    free(s->used);
    memset(s, 0, sizeof *s);
}
