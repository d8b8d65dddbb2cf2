/* zalloc.c — zero-filled worst-case tables whose untouched pages cost nothing (zalloc.h).
 * calloc cannot promise that: once big blocks have been freed, glibc raises its mmap threshold
 * and serves the next ones from the heap, clearing (so touching) every byte. Depends on libc. */
#include "zalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* From this size on a table gets its own mapping (4 pages: below, a mapping saves little).
 * Under AddressSanitizer every table comes from calloc, which it watches for overruns. */
#if defined(__SANITIZE_ADDRESS__)
#define ZALLOC_MAP_MIN SIZE_MAX
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ZALLOC_MAP_MIN SIZE_MAX
#endif
#endif
#ifndef ZALLOC_MAP_MIN
#define ZALLOC_MAP_MIN (16u << 10)
#endif

/* Before the table: its whole length (0: calloc'ed); a multiple of 16 keeps malloc's
 * alignment. */
#define ZALLOC_HEAD 64u

void *sop__zalloc(size_t n, size_t size)
{
    if (size && n > (SIZE_MAX - ZALLOC_HEAD) / size)
        return NULL;
    size_t len = n * size + ZALLOC_HEAD;
    uint8_t *b;
    if (len < ZALLOC_MAP_MIN) {
        b = calloc(1, len);
        if (!b)
            return NULL;
        *(size_t *)b = 0;
    } else {
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        b = m;
        *(size_t *)b = len;
    }
    return b + ZALLOC_HEAD;
}

void sop__zfree(void *p)
{
    if (!p)
        return;
    uint8_t *b = (uint8_t *)p - ZALLOC_HEAD;
    size_t len = *(size_t *)b;
    if (len)
        munmap(b, len);
    else
        free(b);
}
