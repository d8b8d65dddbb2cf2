/* test_heap_walk.c — the heap census walker (probes/python/heap_walk.c) over a fake target
 * memory laid out as CPython 3.11: a metatype, three GC types (static, heap "mod.Bar", a
 * var-sized one), objects in generations 0 and 2 and the permanent generation. Checks the
 * counts, sizes and frozen counts of a complete census, and that a loop, a pointer to a
 * non-type, an unreadable link and a process exiting mid-walk end the walk (partial, with
 * where) instead of hanging or inventing objects; plus the growth between two censuses. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "python/heap_census.h"
#include "python/py_layouts.h"
#include "t.h"

#define BASE 0x100000ull
#define SIZE 0x10000u
#define INTERP (BASE + 0x1000)
#define META (BASE + 0x2000)
#define T_FOO (BASE + 0x2400)
#define T_BAR (BASE + 0x2800)
#define T_TUP (BASE + 0x2c00)
#define NOT_A_TYPE (BASE + 0x3000)
#define NAMES (BASE + 0x3800)
#define NODES (BASE + 0x8000)

static uint8_t img[SIZE];
static long reads_left = -1;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    if (reads_left >= 0 && reads_left-- == 0) {
        reads_left = 0;
        return -ESRCH;
    }
    if (addr < BASE || addr - BASE > SIZE || len > SIZE - (addr - BASE))
        return -EFAULT;
    memcpy(buf, img + (addr - BASE), len);
    return 0;
}

static void put64(uint64_t addr, uint64_t v)
{
    memcpy(img + (addr - BASE), &v, 8);
}
static void put32(uint64_t addr, uint32_t v)
{
    memcpy(img + (addr - BASE), &v, 4);
}

static const sop_pylayout *L;
static uint64_t gc_at, next_name = NAMES;

static uint64_t name(const char *s)
{
    uint64_t a = next_name;
    memcpy(img + (a - BASE), s, strlen(s) + 1);
    next_name += strlen(s) + 1;
    return a;
}

static void type(uint64_t t, const char *nm, uint64_t flags, uint64_t basic, uint64_t item)
{
    put64(t + L->ob_type, META);
    put64(t + L->tp_flags, flags);
    put64(t + L->tp_basicsize, basic);
    put64(t + L->tp_itemsize, item);
    put64(t + L->tp_name, name(nm));
}

static uint64_t head(int g)
{
    return g < 3 ? gc_at + L->gc_generations + (uint64_t)g * L->gc_gen_size
                 : gc_at + L->gc_permanent;
}

static size_t nnodes;

/* A list of objects of the given types (ob_size 4 for each). */
static void list(int g, const uint64_t *types, size_t n)
{
    uint64_t h = head(g), prev = h;
    for (size_t i = 0; i < n; i++) {
        uint64_t node = NODES + 64 * (nnodes++);
        put64(prev, node);     /* prev->_gc_next */
        put64(node + 8, prev); /* node->_gc_prev */
        put64(node + 16, 1);   /* ob_refcnt */
        put64(node + 16 + L->ob_type, types[i]);
        put64(node + 16 + L->ob_size, 4);
        prev = node;
    }
    put64(prev, h);
    put64(h + 8, prev);
}

static void build(void)
{
    memset(img, 0, sizeof img);
    nnodes = 0;
    next_name = NAMES;
    L = sop__pylayout_table(11);
    put64(BASE + L->rt_interp_head, INTERP);
    gc_at = INTERP + L->is_gc;
    put32(gc_at + L->gc_enabled, 1);
    for (int g = 0; g < 4; g++)
        list(g, NULL, 0);
    type(META, "type", 1ull << 31 | 1ull << 14, 900, 40);
    type(T_FOO, "Foo", 1ull << 14, 48, 0);
    type(T_BAR, "mod.Bar", 1ull << 14 | 1ull << 9, 32,
         0); /* heap type, no dict: module from the name */
    type(T_TUP, "Tup", 1ull << 14, 24, 8);
    put64(NOT_A_TYPE + L->tp_flags, 1ull << 14);
    uint64_t g2[18], g0[2] = {T_FOO, T_FOO}, perm[1] = {T_BAR};
    for (int i = 0; i < 18; i++)
        g2[i] = i < 10 ? T_FOO : i < 15 ? T_BAR : T_TUP;
    list(2, g2, 18);
    list(0, g0, 2);
    list(3, perm, 1);
}

static const sop_heap_type *find(const sop_pyheap *h, const char *nm)
{
    for (size_t i = 0; i < h->ntypes; i++)
        if (strcmp(h->types[i].name, nm) == 0)
            return &h->types[i];
    return NULL;
}

static sop_pyheap *census(int expect_rc)
{
    sop_missing missing = {0};
    sop_pyheap *h = NULL;
    int rc = sop__heap_census_fake(fake_read, NULL, 11, BASE, &h, &missing);
    CHECK_EQ_I(rc, expect_rc);
    sop__missing_free(&missing);
    return h;
}

static void test_complete(void)
{
    build();
    /* SOP_HEAP_SEED=FILE: write this image as a seed of tests/fuzz/corpus/heapwalk (byte 0:
     * 3 = CPython 3.11, flat memory; then the image at its base). */
    const char *seed = getenv("SOP_HEAP_SEED");
    FILE *f = seed ? fopen(seed, "wb") : NULL;
    if (f) {
        fputc(3, f);
        fwrite(img, 1, sizeof img, f);
        fclose(f);
    }
    sop_pyheap *h = census(0);
    if (!h)
        return;
    CHECK(h->complete);
    CHECK_EQ_I(h->objects, 21);
    CHECK_EQ_I(h->list_objects[0], 2);
    CHECK_EQ_I(h->list_objects[2], 18);
    CHECK_EQ_I(h->list_objects[3], 1);
    CHECK_EQ_I(h->gc_enabled, 1);
    CHECK_EQ_I(h->ntypes, 3);
    const sop_heap_type *foo = find(h, "Foo"), *bar = find(h, "mod.Bar"), *tup = find(h, "Tup");
    CHECK(foo && bar && tup);
    if (foo && bar && tup) {
        CHECK_EQ_I(foo->count, 12);
        CHECK_EQ_I(foo->bytes, 12 * (48 + 16)); /* basic size + GC head */
        CHECK_EQ_I(bar->count, 6);
        CHECK_EQ_I(bar->frozen, 1);
        CHECK_EQ_I(tup->count, 3);
        CHECK_EQ_I(tup->bytes, 3 * (64 + 16)); /* 24 + 4 x 8 = 56, rounded to 64 */
    }
    CHECK_EQ_S(h->types[0].name, "Foo"); /* sorted by bytes */
    CHECK_EQ_I(h->bytes, foo ? foo->bytes + bar->bytes + tup->bytes : 0);
    sop__heap_free(h);
}

static void test_loop(void)
{
    build();
    /* Generation 2: the 8th node links back to the 3rd (a loop not through the head). */
    put64(NODES + 64 * 7, NODES + 64 * 2);
    sop_pyheap *h = census(0);
    if (!h)
        return;
    CHECK(!h->complete);
    CHECK(!h->list_complete[2]);
    CHECK(h->list_complete[0] && h->list_complete[3]);
    CHECK_EQ_I(h->list_objects[2], 8); /* as far as it got */
    CHECK(strstr(h->partial, "generation 2") != NULL);
    CHECK(strstr(h->partial, "after 8 objects") != NULL);
    CHECK_EQ_I(h->restarts, 2);
    sop__heap_free(h);
}

static void test_bad_type(void)
{
    build();
    put64(NODES + 64 * 4 + 16 + L->ob_type, NOT_A_TYPE); /* gen 2, 5th object */
    sop_pyheap *h = census(0);
    if (!h)
        return;
    CHECK(!h->complete);
    CHECK(strstr(h->partial, "not a type after 4 objects") != NULL);
    CHECK_EQ_I(h->list_objects[2], 4);
    CHECK(find(h, "type") == NULL);
    sop__heap_free(h);
    /* A type whose metatype is not a type: rejected too. */
    build();
    put64(T_TUP + L->ob_type, T_FOO);
    h = census(0);
    if (h) {
        CHECK(!h->complete);
        CHECK(find(h, "Tup") == NULL);
        sop__heap_free(h);
    }
}

static void test_unreadable(void)
{
    build();
    put64(NODES + 64 * 5, 0x7000000000ull); /* a link to unmapped memory */
    sop_pyheap *h = census(0);
    if (!h)
        return;
    CHECK(!h->complete);
    CHECK(strstr(h->partial, "unreadable node") != NULL);
    sop__heap_free(h);
}

static void test_gone(void)
{
    /* The process exits after k reads (whole pages: the census reads 6 of them), at every
     * point of the walk: the census fails with -ESRCH, never a half census. */
    for (long k = 0; k < 6; k++) {
        build();
        reads_left = k;
        sop_pyheap *h = census(-ESRCH);
        if (h)
            fprintf(stderr, "exit after %ld reads: census came back\n", k);
        CHECK(h == NULL);
        sop__heap_free(h);
    }
    reads_left = -1;
}

static void test_growth(void)
{
    build();
    sop_pyheap *a = census(0);
    uint64_t more[4] = {T_BAR, T_BAR, T_BAR, T_TUP};
    list(1, more, 4);
    sop_pyheap *b = census(0);
    if (a && b) {
        sop_heap_type *g = NULL;
        long n = sop__heap_growth(a, b, &g);
        CHECK_EQ_I(n, 2);
        if (n == 2) {
            CHECK_EQ_S(g[0].name, "mod.Bar");
            CHECK_EQ_I((int64_t)g[0].count, 3);
            CHECK_EQ_S(g[1].name, "Tup");
        }
        free(g);
        n = sop__heap_growth(b, a, &g); /* shrinking: negative deltas */
        CHECK_EQ_I(n, 2);
        if (n == 2)
            CHECK_EQ_I((int64_t)g[1].count, -3);
        free(g);
    }
    sop__heap_free(a);
    sop__heap_free(b);
}

int main(void)
{
    test_complete();
    test_loop();
    test_bad_type();
    test_unreadable();
    test_gone();
    test_growth();
    return t_done();
}
