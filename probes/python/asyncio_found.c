/* asyncio_found.c — what the asyncio reader's parts record as they go, below all of them: the
 * tasks found (the GC lists' walk, the 3.14 thread lists), a task's partial mark and the type
 * names a listing keeps once each. asyncio_read.c, the whole, reads them back. Depends on
 * asyncio_tasks_int.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio_tasks_int.h"

const char *sop__tasks_type_name(tasks_reader *tr, const char *name)
{
    sop_pytasks *o = tr->out;
    if (!o || !name)
        return "?";
    for (size_t i = 0; i < o->ntype_names; i++)
        if (strcmp(o->type_names[i], name) == 0)
            return o->type_names[i];
    if (!o->type_names && !(o->type_names = calloc(SOP_TASK_TYPE_NAMES, sizeof *o->type_names)))
        return "?";
    if (o->ntype_names >= SOP_TASK_TYPE_NAMES)
        return "?";
    snprintf(o->type_names[o->ntype_names], sizeof o->type_names[0], "%s", name);
    return o->type_names[o->ntype_names++];
}

static const char partial_oom[] = "chain not read to its end (no memory to say why)";

void sop__tasks_task_partial(sop_pytask *t, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = strdup(buf);
    if (t->partial && t->partial[0] && t->partial != partial_oom)
        free((char *)t->partial);
    t->partial = s ? s : partial_oom;
}

void sop__tasks_partial_drop(sop_pytask *t)
{
    if (t->partial && t->partial[0] && t->partial != partial_oom)
        free((char *)t->partial);
    t->partial = NULL;
}

int sop__tasks_add_found(tasks_reader *tr, uint64_t obj)
{
    if (tr->nfound >= SOP_TASKS_MAX) {
        tr->truncated = true;
        return 0;
    }
    if (tr->nfound == tr->capfound) {
        size_t ncap = tr->capfound ? tr->capfound * 2 : 1024;
        uint64_t *n = realloc(tr->found, ncap * sizeof *n);
        if (!n)
            return -ENOMEM;
        tr->found = n;
        tr->capfound = ncap;
    }
    tr->found[tr->nfound++] = obj;
    return 0;
}
