/* test_alloc.c — allocator detection from a process's mapped libraries and environment:
 * preloaded jemalloc, a mapped tcmalloc without preload, a preload that did not map, plain
 * glibc, no evidence at all, and the knobs copied verbatim. Depends on probes/alloc.h, t.h. */
#include "alloc.h"
#include "t.h"

static sop_proc P; /* large: keep off the stack */

static void reset(void)
{
    memset(&P, 0, sizeof P);
}

static void add_lib(const char *kind, const char *name, const char *path)
{
    sop_lib *l = &P.libs.libs[P.libs.n++];
    snprintf(l->kind, sizeof l->kind, "%s", kind);
    snprintf(l->name, sizeof l->name, "%s", name);
    snprintf(l->path, sizeof l->path, "%s", path);
    P.have_maps = true;
}

static void add_env(const char *name, const char *value)
{
    sop_env_var *v = &P.env.vars[P.env.n++];
    snprintf(v->name, sizeof v->name, "%s", name);
    snprintf(v->value, sizeof v->value, "%s", value);
    P.have_env = true;
}

int main(void)
{
    sop_alloc a;

    reset();
    add_lib("python", "libpython3.11", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0");
    add_lib("allocator", "libjemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
    add_env("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
    add_env("MALLOC_ARENA_MAX", "2");
    add_env("PYTHONMALLOC", "malloc");
    sop__alloc_detect(&P, &a);
    CHECK_EQ_S(a.allocator, "jemalloc");
    CHECK_EQ_S(a.source, "LD_PRELOAD");
    CHECK_EQ_S(a.ld_preload, "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
    CHECK_EQ_S(a.malloc_arena_max, "2");
    CHECK_EQ_S(a.pythonmalloc, "malloc");

    /* mapped but not preloaded: reported as seen in the maps */
    reset();
    add_lib("allocator", "libtcmalloc", "/opt/lib/libtcmalloc_minimal.so.4");
    add_env("OMP_NUM_THREADS", "4");
    sop__alloc_detect(&P, &a);
    CHECK_EQ_S(a.allocator, "tcmalloc");
    CHECK_EQ_S(a.source, "maps");
    CHECK_EQ_S(a.ld_preload, "");
    CHECK_EQ_S(a.malloc_arena_max, "");

    /* a preload that did not load (wrong path) is not the allocator */
    reset();
    add_lib("numpy", "numpy", "/x/numpy/core/_multiarray_umath.so");
    add_env("LD_PRELOAD", "/nonexistent/libmimalloc.so");
    sop__alloc_detect(&P, &a);
    CHECK_EQ_S(a.allocator, "glibc");
    CHECK_EQ_S(a.source, "default");
    CHECK_EQ_S(a.ld_preload, "/nonexistent/libmimalloc.so");

    /* preloaded mimalloc, jemalloc dlopen'ed by an extension: the preload wins */
    reset();
    add_lib("allocator", "libjemalloc", "/site-packages/pyarrow/libjemalloc.so");
    add_lib("allocator", "libmimalloc", "/usr/lib/libmimalloc.so.2");
    add_env("LD_PRELOAD", "libmimalloc.so.2:libfoo.so");
    sop__alloc_detect(&P, &a);
    CHECK_EQ_S(a.allocator, "mimalloc");
    CHECK_EQ_S(a.source, "LD_PRELOAD");

    /* only the environment (maps unreadable): trust the preload */
    reset();
    add_env("LD_PRELOAD", "/usr/lib/libtcmalloc.so.4");
    sop__alloc_detect(&P, &a);
    CHECK_EQ_S(a.allocator, "tcmalloc");
    CHECK_EQ_S(a.source, "LD_PRELOAD");

    /* nothing read: nothing claimed */
    reset();
    sop__alloc_detect(&P, &a);
    CHECK_EQ_S(a.allocator, "");
    CHECK_EQ_S(a.source, "");

    /* plain glibc process */
    reset();
    add_lib("python", "libpython3.11", "/usr/lib/libpython3.11.so.1.0");
    sop__alloc_detect(&P, &a);
    CHECK_EQ_S(a.allocator, "glibc");

    /* glibc arena heaps in maps: two partly grown heaps (rw + PROT_NONE rest = 64 MiB), one
     * fully grown; not counted: an unaligned pair (thread stack + guard), a file mapping at an
     * aligned address, a pair that is not 64 MiB, a cut-off last line. */
    const char *maps = "55d0c0000000-55d0c0021000 r--p 00000000 fd:01 123 /usr/bin/python3.11\n"
                       "7f2a54000000-7f2a56000000 rw-p 00000000 00:00 0 \n"
                       "7f2a56000000-7f2a58000000 ---p 00000000 00:00 0 \n"
                       "7f2a5c000000-7f2a5c021000 rw-p 00000000 00:00 0 \n"
                       "7f2a5c021000-7f2a60000000 ---p 00000000 00:00 0 \n"
                       "7f2a64000000-7f2a68000000 rw-p 00000000 00:00 0 \n"
                       "7f2a68001000-7f2a68801000 ---p 00000000 00:00 0 \n"
                       "7f2a68801000-7f2a69001000 rw-p 00000000 00:00 0 \n"
                       "7f2a6c000000-7f2a6c021000 rw-p 00000000 fd:01 77 /tmp/x.bin\n"
                       "7f2a6c021000-7f2a70000000 ---p 00000000 00:00 0 \n"
                       "7f2a74000000-7f2a74021000 rw-p 00000000 00:00 0 \n"
                       "7f2a74021000-7f2a76000000 ---p 00000000 00:00 0 \n"
                       "7f2a78000000-7f2a78021000 rw-p 00000000 00:00 0 \n"
                       "7f2a78021000-7f2a7c000000 ---p 00000000 00:";
    sop_malloc_heaps h;
    CHECK_EQ_I(sop__parse_malloc_heaps(maps, &h), 0);
    CHECK_EQ_I(h.heaps, 3);
    CHECK_EQ_I(h.rw_kb, 32768 + 132 + 65536);
    CHECK_EQ_I(h.reserved_kb, 3 * 65536);
    CHECK_EQ_I(sop__parse_malloc_heaps("", &h), 0);
    CHECK_EQ_I(h.heaps, 0);
    CHECK(sop__parse_malloc_heaps(NULL, &h) < 0);
    CHECK(h.heaps == SOP_NA);

    /* the counts reach ev.alloc for glibc only */
    reset();
    add_lib("python", "libpython3.11", "/usr/lib/libpython3.11.so.1.0");
    P.heaps.heaps = 9;
    P.heaps.rw_kb = 1000;
    sop__alloc_detect(&P, &a);
    CHECK_EQ_I(a.heaps.heaps, 9);
    add_lib("allocator", "libjemalloc", "/usr/lib/libjemalloc.so.2");
    add_env("LD_PRELOAD", "/usr/lib/libjemalloc.so.2");
    sop__alloc_detect(&P, &a);
    CHECK(a.heaps.heaps == SOP_NA);
    return t_done();
}
