/* t.h — the tiny harness of the C unit tests: CHECK macros, fixture loading, and the closing
 * "N passed, N failed" line. Header-only; one test program per probe or engine part. */
#ifndef SOP_T_H
#define SOP_T_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_pass, t_fail;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            t_pass++;                                                                              \
        } else {                                                                                   \
            t_fail++;                                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_I(a, b)                                                                           \
    do {                                                                                           \
        long long t_a_ = (long long)(a), t_b_ = (long long)(b);                                    \
        if (t_a_ == t_b_) {                                                                        \
            t_pass++;                                                                              \
        } else {                                                                                   \
            t_fail++;                                                                              \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, t_a_,    \
                    t_b_);                                                                         \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_S(a, b)                                                                           \
    do {                                                                                           \
        const char *t_a_ = (a), *t_b_ = (b);                                                       \
        if (t_a_ && t_b_ && strcmp(t_a_, t_b_) == 0) {                                             \
            t_pass++;                                                                              \
        } else {                                                                                   \
            t_fail++;                                                                              \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a,      \
                    t_a_ ? t_a_ : "(null)", t_b_ ? t_b_ : "(null)");                               \
        }                                                                                          \
    } while (0)

/* Path of a fixture file under $SOP_FIXTURES (static buffer). */
static inline const char *t_fixture(const char *rel)
{
    static char path[1024];
    const char *dir = getenv("SOP_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/fixtures", rel);
    return path;
}

/* Read a fixture into a malloc'd NUL-terminated buffer (exits on failure: a missing fixture
 * is a broken test). *len may be NULL. */
static inline char *t_slurp(const char *rel, size_t *len)
{
    const char *path = t_fixture(rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open fixture %s\n", path);
        exit(2);
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    fclose(f);
    if (!buf)
        exit(2);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static inline int t_done(void)
{
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail ? 1 : 0;
}

#endif
