/* strbuf.c — growable string (the escapers that write into it are escape.c). Depends on libc. */
#include "strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool grow(sop_sb *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    /* A streaming buffer starts at twice its chunk: no copies as it fills, and the pages it
     * never writes are never touched. */
    size_t cap = b->cap ? b->cap : b->sink ? 2 * SOP_SB_CHUNK : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *n = realloc(b->s, cap);
    if (!n) {
        b->oom = true;
        return false;
    }
    b->s = n;
    b->cap = cap;
    return true;
}

int sop__sb_flush(sop_sb *b)
{
    if (b->oom)
        return -1;
    if (b->sink && b->len) {
        if (b->sink(b->sink_ctx, b->s, b->len) < 0)
            b->oom = true;
        b->len = 0;
        b->s[0] = '\0';
    }
    return b->oom ? -1 : 0;
}

int sop__sb_write_fd(void *ctx, const char *s, size_t n)
{
    int fd = *(const int *)ctx;
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

void sop__sb_putn(sop_sb *b, const char *s, size_t n)
{
    if (!grow(b, n))
        return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
    if (b->sink && b->len >= SOP_SB_CHUNK)
        sop__sb_flush(b);
}

void sop__sb_puts(sop_sb *b, const char *s)
{
    sop__sb_putn(b, s, strlen(s));
}

void sop__sb_printf(sop_sb *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        sop__sb_putn(b, small, (size_t)n);
        return;
    }
    if (!grow(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    if (b->sink && b->len >= SOP_SB_CHUNK)
        sop__sb_flush(b);
}

char *sop__sb_take(sop_sb *b)
{
    char *s = b->oom ? NULL : b->s;
    if (b->oom)
        free(b->s);
    if (s == NULL && !b->oom) {
        s = malloc(1);
        if (s)
            s[0] = '\0';
    }
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = false;
    return s;
}
