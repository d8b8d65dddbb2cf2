/* asyncio_task_index.h — look-ups over one read of a process's asyncio tasks (asyncio_tasks.h),
 * built once so that whatever asks them stays linear in the task count: a task by address
 * (sorted addresses, binary search) and who awaits a task (the reverse of each task's awaits,
 * as one offset table). Pure: no target memory. Depends on libc. */
#ifndef SOP_ASYNCIO_TASK_INDEX_H
#define SOP_ASYNCIO_TASK_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "asyncio_tasks.h"

typedef struct {
    uint64_t addr;
    size_t ix;
} sop_task_addr;

typedef struct {
    const sop_pytasks *t;
    sop_task_addr *by_addr; /* t->ntasks entries, sorted by address */
    size_t *by_off;         /* awaited_by: t->ntasks + 1 offsets into by_list (NULL: not built) */
    size_t *by_list;        /* indexes of the tasks awaiting each task, in task order */
} sop_task_index;

/* Build the index of t (NULL: an empty one); awaited_by too when asked. 0, or -ENOMEM with
 * nothing held. */
int sop__task_index_build(sop_task_index *ix, const sop_pytasks *t, bool awaited_by);
void sop__task_index_free(sop_task_index *ix);

/* The index of the task at addr in ix->t, or -1. */
long sop__task_index_find(const sop_task_index *ix, uint64_t addr);

/* The same task in this read: same address and same name (an address can be reused by a task
 * born after the other read). NULL when none. */
const sop_pytask *sop__task_index_same(const sop_task_index *ix, const sop_pytask *t);

/* How many tasks await task i (a task awaiting itself is not counted); 0 without awaited_by. */
size_t sop__task_index_awaited_n(const sop_task_index *ix, size_t i);

/* The k-th task awaiting task i (k < sop__task_index_awaited_n). */
size_t sop__task_index_awaited(const sop_task_index *ix, size_t i, size_t k);

#endif
