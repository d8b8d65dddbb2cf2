/* strbuf.h — a growable string for the renderers; the escaping every output format shares
 * (control characters from the target never reach the output raw) writes into it from
 * escape.h. Depends on libc. */
#ifndef SOP_STRBUF_H
#define SOP_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *s;
    size_t len, cap;
    bool oom; /* an append failed: the result is NULL */
    /* Streaming (NULL: the string grows whole): once SOP_SB_CHUNK bytes are held, they go to
     * sink and the buffer starts over, so a large output never sits in memory at once. A sink
     * that fails (returns < 0) sets oom: nothing more is kept. Writers into a streaming buffer
     * never look back at what they wrote. */
    int (*sink)(void *ctx, const char *s, size_t n);
    void *sink_ctx;
} sop_sb;

/* Small enough that a streamed output touches a few pages of memory however long it is. */
#define SOP_SB_CHUNK (16u << 10)

void sop__sb_putn(sop_sb *b, const char *s, size_t n);
void sop__sb_puts(sop_sb *b, const char *s);
void sop__sb_printf(sop_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Take the string (malloc'd, caller frees), or NULL if an append failed. Resets b. */
char *sop__sb_take(sop_sb *b);
/* Streaming: hand what is held to the sink now. 0, or -1 when the sink failed or memory ran out
 * (b->oom). */
int sop__sb_flush(sop_sb *b);
/* A sink writing to the file descriptor at *(int *)ctx, whole (EINTR retried); -1 on error. */
int sop__sb_write_fd(void *ctx, const char *s, size_t n);

#endif
