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
    return t_done();
}
