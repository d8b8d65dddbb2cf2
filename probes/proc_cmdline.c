/* proc_cmdline.c — turn /proc/PID/cmdline (NUL-separated argv) into one line: separators
 * become spaces, trailing ones dropped, cut to the buffer. Other bytes are kept as they are
 * (the bridge fixes UTF-8, renderers escape control characters). Depends on libc. */
#include <errno.h>
#include <string.h>

#include "proc.h"

int sop__parse_cmdline(const char *buf, size_t len, char *out, size_t cap)
{
    if (!out || cap == 0)
        return -EINVAL;
    out[0] = '\0';
    if (!buf)
        return -EINVAL;
    while (len > 0 && buf[len - 1] == '\0')
        len--;
    if (len == 0)
        return -ENODATA; /* kernel thread or zombie */
    size_t n = len < cap - 1 ? len : cap - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = buf[i] == '\0' ? ' ' : buf[i];
    out[n] = '\0';
    return 0;
}
