/* test_zalloc.c — worst-case tables (probes/zalloc.c): zero-filled, aligned, freeable, NULL on
 * a size that overflows; a big table costs only the pages written (mincore), even right after
 * big frees that raise glibc's mmap threshold (where calloc clears, so touches, all of it).
 * Depends on probes/zalloc.h, t.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t.h"
#include "zalloc.h"

/* Pages of [p, p + len) resident in memory. */
static size_t resident(const void *p, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
    size_t n = ((uintptr_t)p + len - a + page - 1) / page;
    unsigned char *vec = malloc(n);
    size_t k = 0;
    if (vec && mincore((void *)a, n * page, vec) == 0)
        for (size_t i = 0; i < n; i++)
            k += vec[i] & 1;
    free(vec);
    return k;
}

int main(void)
{
    /* small and big: zeroed, aligned as malloc aligns (16), usable */
    size_t sizes[] = {1, 100, 4000, 1u << 20, 8u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *p = sop__zalloc(sizes[i], 1);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK(((uintptr_t)p & 15) == 0);
        size_t nonzero = 0;
        for (size_t j = 0; j < sizes[i]; j += 97)
            nonzero += p[j] != 0;
        CHECK(nonzero == 0 && p[sizes[i] - 1] == 0);
        memset(p, 0xAB, sizes[i]);
        sop__zfree(p);
    }
    sop__zfree(NULL);
    CHECK(sop__zalloc(SIZE_MAX / 2, 4) == NULL); /* n * size overflows */
    CHECK(sop__zalloc(SIZE_MAX - 8, 1) == NULL); /* the header does */

#if !defined(__SANITIZE_ADDRESS__)
    /* Raise glibc's mmap threshold the way a snapshot does (a big block freed), leave 8 MB of
     * written, freed heap behind, then take an 8 MB table and write 3 entries: only their
     * pages are resident. calloc served such a table from that heap and cleared all of it. */
    free(malloc(24u << 20));
    size_t len = 8u << 20;
    void *used = malloc(len);
    if (used)
        memset(used, 1, len);
    free(used);
    uint8_t *t = sop__zalloc(len, 1);
    CHECK(t != NULL);
    if (t) {
        size_t before = resident(t, len);
        t[0] = 1;
        t[len / 2] = 2;
        t[len - 1] = 3;
        size_t after = resident(t, len);
        CHECK(before <= 1);              /* the header's page at most */
        CHECK(after >= 3 && after <= 4); /* the three written, perhaps the header's */
        sop__zfree(t);
    }
#endif
    return t_done();
}
