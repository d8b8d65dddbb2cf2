/* dwidth.c — how many terminal columns UTF-8 text takes: East Asian wide and fullwidth
 * characters (CJK, Hangul, fullwidth forms, emoji) take 2, combining marks and zero-width
 * characters 0, the rest 1. Locale-independent (sopctl often runs under LANG=C). libc only. */
#include <stddef.h>
#include <stdint.h>

#include "dwidth.h"

size_t sop__utf8_next(const char *s, size_t len, size_t i, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char c = p[i];
    size_t n = c < 0x80                ? 1
               : c >= 0xc2 && c < 0xe0 ? 2
               : c >= 0xe0 && c < 0xf0 ? 3
               : c >= 0xf0 && c < 0xf5 ? 4
                                       : 0;
    if (n == 0 || i + n > len) {
        *cp = 0xfffd;
        return i + 1;
    }
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1fu) : n == 3 ? (c & 0x0fu) : (c & 0x07u);
    for (size_t k = 1; k < n; k++) {
        if ((p[i + k] & 0xc0) != 0x80) {
            *cp = 0xfffd;
            return i + 1;
        }
        v = (v << 6) | (p[i + k] & 0x3fu);
    }
    *cp = v;
    return i + n;
}

int sop__cp_width(uint32_t cp)
{
    if (cp == 0)
        return 0;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
        return 0; /* controls: the renderers escape them before measuring */
    /* combining marks and zero-width characters */
    if ((cp >= 0x0300 && cp <= 0x036f) || (cp >= 0x1ab0 && cp <= 0x1aff) ||
        (cp >= 0x1dc0 && cp <= 0x1dff) || (cp >= 0x20d0 && cp <= 0x20ff) ||
        (cp >= 0xfe20 && cp <= 0xfe2f) || cp == 0x200b || cp == 0x200c || cp == 0x200d ||
        cp == 0x2060 || cp == 0xfeff || (cp >= 0xfe00 && cp <= 0xfe0f))
        return 0;
    /* East Asian Wide (W) and Fullwidth (F) blocks */
    if ((cp >= 0x1100 && cp <= 0x115f) || cp == 0x2329 || cp == 0x232a ||
        (cp >= 0x2e80 && cp <= 0x303e) || (cp >= 0x3041 && cp <= 0x33ff) ||
        (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x4e00 && cp <= 0x9fff) ||
        (cp >= 0xa000 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
        (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) ||
        (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) ||
        (cp >= 0x1f300 && cp <= 0x1f64f) || (cp >= 0x1f900 && cp <= 0x1f9ff) ||
        (cp >= 0x20000 && cp <= 0x2fffd) || (cp >= 0x30000 && cp <= 0x3fffd))
        return 2;
    return 1;
}

size_t sop__display_width(const char *s, size_t len)
{
    size_t w = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i = sop__utf8_next(s, len, i, &cp);
        w += (size_t)sop__cp_width(cp);
    }
    return w;
}
