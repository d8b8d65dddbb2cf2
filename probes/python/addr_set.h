/* addr_set.h — a set of target addresses for the walks' loop checks (frames of one chain,
 * thread states of one list): open addressing that starts small and doubles up to a bound,
 * so that its memory follows what it holds, not the worst case. Depends on libc only. */
#ifndef SOP_ADDR_SET_H
#define SOP_ADDR_SET_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t *slot; /* cap slots, 0 = empty */
    uint32_t *used; /* the slots filled, in order of insertion (to empty them quickly) */
    size_t cap, n, max, used_cap;
} sop_addr_set;

/* Ready for at most max / 2 addresses (max a power of two, at least 64). 0 or -ENOMEM. */
int sop__addr_set_init(sop_addr_set *s, size_t max);
/* Add p (not 0): 1 added, 0 already there or the set is full (max / 2 held), -ENOMEM. */
int sop__addr_set_add(sop_addr_set *s, uint64_t p);
/* Empty the set, in time proportional to what it held; its memory is kept for the next use. */
void sop__addr_set_clear(sop_addr_set *s);
/* Free what init allocated; a zeroed set is fine. */
void sop__addr_set_free(sop_addr_set *s);

#endif
