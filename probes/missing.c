/* missing.c — the list of evidence a collection could not gather. Depends on libc only. */
#include "missing.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sop__missing_add(sop_missing *m, const char *probe, const char *fmt, ...)
{
    sop_missing_item it;
    memset(&it, 0, sizeof it);
    snprintf(it.probe, sizeof it.probe, "%s", probe);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it.reason, sizeof it.reason, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->items[i].probe, it.probe) == 0 && strcmp(m->items[i].reason, it.reason) == 0)
            return;
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 8;
        sop_missing_item *ni = realloc(m->items, ncap * sizeof *ni);
        if (!ni)
            return;
        m->items = ni;
        m->cap = ncap;
    }
    m->items[m->n++] = it;
}

void sop__missing_free(sop_missing *m)
{
    free(m->items);
    m->items = NULL;
    m->n = m->cap = 0;
}

const char *sop__strerror(int err)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char *s = strerrordesc_np(err); /* static text: no buffer to share */
    return s ? s : "unknown error";
#else
    /* musl's strerror returns static text too; elsewhere prefer a libc where it does. */
    return strerror(err);
#endif
}
