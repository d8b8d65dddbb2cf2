/* dwidth.h — terminal display width of UTF-8 text (engine/render/dwidth.c), for wrapping the
 * terminal report and fitting labels in the SVGs. */
#ifndef SOP_DWIDTH_H
#define SOP_DWIDTH_H

#include <stddef.h>
#include <stdint.h>

/* Decode the code point at s[i] (len bytes in all); returns the index after it. An invalid
 * or cut sequence is U+FFFD and one byte. */
size_t sop__utf8_next(const char *s, size_t len, size_t i, uint32_t *cp);
/* Columns one code point takes: 0 (combining, zero-width, control), 1, or 2 (wide). */
int sop__cp_width(uint32_t cp);
/* Columns the first len bytes of s take. */
size_t sop__display_width(const char *s, size_t len);

#endif
