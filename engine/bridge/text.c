/* text.c — copy text read from a target (comm, cmdline, paths, env values) into a string value,
 * replacing each byte that is not part of valid UTF-8 with U+FFFD so JSON and Lua accept it.
 * Control characters are kept: renderers escape them. Depends on engine/core/value.c, utf8.c. */
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "utf8.h"

sop_value *sop__bridge_text(const char *s)
{
    if (!s)
        s = "";
    const unsigned char *u = (const unsigned char *)s;
    size_t len = strlen(s), valid = 0;
    while (valid < len) {
        size_t n = sop__utf8_seq(u + valid, len - valid);
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
        size_t n = sop__utf8_seq(u + i, len - i);
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
