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
} sop_sb;

void sop__sb_putn(sop_sb *b, const char *s, size_t n);
void sop__sb_puts(sop_sb *b, const char *s);
void sop__sb_printf(sop_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Take the string (malloc'd, caller frees), or NULL if an append failed. Resets b. */
char *sop__sb_take(sop_sb *b);

#endif
