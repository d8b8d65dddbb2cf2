/* strbuf.h — a growable string for the renderers, with the escaping every output format
 * shares: control characters from the target never reach the output raw. Depends on libc. */
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
/* Append s with C0 controls, DEL and C1 controls (U+0080..U+009F) written as \xNN / \u00NN,
 * and, when md_cell, '|' as "\|" so a Markdown table cell stays one cell. */
void sop__sb_put_escaped(sop_sb *b, const char *s, bool md_cell);
/* Take the string (malloc'd, caller frees), or NULL if an append failed. Resets b. */
char *sop__sb_take(sop_sb *b);
/* Rewrite a JSON text so DEL and C1 controls inside it appear as \u escapes (cJSON leaves them
 * raw). Returns a new malloc'd string or NULL; json is not freed. */
char *sop__json_escape_controls(const char *json);

#endif
