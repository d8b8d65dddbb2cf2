/* fuzz_kmsg.c — libFuzzer target: kernel-log records (/dev/kmsg and dmesg styles, whole dumps
 * and line by line with the flush at the end) on arbitrary bytes. Depends on probes/kmsg.h. */
#include "fuzz.h"
#include "kmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    sop_oom_list *l = malloc(sizeof *l);
    if (!l)
        abort();
    (void)sop__parse_kmsg(s, l, 1.7e9);
    if (l->n > SOP_OOM_MAX)
        abort();
    sop__oom_list_init(l, 1.7e9);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        sop__kmsg_feed_line(l, p, len, 0);
        p += len + 1;
    }
    sop__kmsg_flush(l);
    if (l->n > SOP_OOM_MAX)
        abort();
    free(l);
    free(s);
    return 0;
}
