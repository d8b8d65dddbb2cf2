/* text.c — copy text read from a target (comm, cmdline, paths, env values) into a string value,
 * replacing each byte that is not part of valid UTF-8 with U+FFFD so JSON and Lua accept it.
 * Control characters are kept: renderers escape them. Depends on engine/core/value.c. */
#include <stdlib.h>
#include <string.h>

#include "bridge.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the byte starts none. */
static size_t utf8_seq(const unsigned char *s, size_t left)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        min = 0x10000;
    } else {
        return 0; /* continuation byte, overlong lead C0/C1, or F5..FF */
    }
    if (left < n)
        return 0;
    unsigned cp = c & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0; /* overlong, beyond Unicode, or a surrogate */
    return n;
}

sop_value *sop__bridge_text(const char *s)
{
    if (!s)
        s = "";
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s), valid = 0;
    while (valid < len) {
        size_t n = utf8_seq(u + valid, len - valid);
        if (!n)
            break;
        valid += n;
    }
    if (valid == len) /* the common case: nothing to replace */
        return sop__v_strn(s, len);
    /* worst case every byte becomes the 3-byte U+FFFD */
    char *buf = malloc(len * 3 + 1);
    if (!buf)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(u + i, len - i);
        if (n) {
            memcpy(buf + o, s + i, n);
            o += n;
            i += n;
        } else {
            memcpy(buf + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    sop_value *v = sop__v_strn(buf, o);
    free(buf);
    return v;
}
