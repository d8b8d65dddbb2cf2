/* alloc.c — which malloc a process runs on and its knobs, from what the process probes
 * already read: the allocator libraries mapped (proc->libs, kind "allocator") and the
 * allow-listed environment (LD_PRELOAD, MALLOC_ARENA_MAX, PYTHONMALLOC). Depends on alloc.h. */
#include "alloc.h"

#include <stdio.h>
#include <string.h>

static const char *const known[] = {"jemalloc", "tcmalloc", "mimalloc"};
#define NKNOWN (sizeof known / sizeof known[0])

/* The allocator a library name or path speaks of, or NULL. */
static const char *allocator_in(const char *s)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (strstr(s, known[i]))
            return known[i];
    return NULL;
}

static const char *env_get(const sop_env *env, const char *name)
{
    for (size_t i = 0; i < env->n && i < SOP_ENV_MAX; i++)
        if (strcmp(env->vars[i].name, name) == 0)
            return env->vars[i].value;
    return NULL;
}

void sop__alloc_detect(const sop_proc *proc, sop_alloc *out)
{
    memset(out, 0, sizeof *out);
    const char *preload = NULL;
    if (proc->have_env) {
        const char *v;
        if ((v = env_get(&proc->env, "LD_PRELOAD")) != NULL)
            snprintf(out->ld_preload, sizeof out->ld_preload, "%s", (preload = v));
        if ((v = env_get(&proc->env, "MALLOC_ARENA_MAX")) != NULL)
            snprintf(out->malloc_arena_max, sizeof out->malloc_arena_max, "%s", v);
        if ((v = env_get(&proc->env, "PYTHONMALLOC")) != NULL)
            snprintf(out->pythonmalloc, sizeof out->pythonmalloc, "%s", v);
    }
    const char *preloaded = preload ? allocator_in(preload) : NULL;

    /* A mapped allocator library. Only one that is preloaded (or a DT_NEEDED of the program)
     * replaces malloc for the whole process; one dlopen'ed later by an extension serves that
     * extension alone. The maps cannot tell the two apart, so "maps" means "mapped". */
    const char *mapped = NULL;
    int mapped_preloaded = 0;
    if (proc->have_maps)
        for (size_t i = 0; i < proc->libs.n && i < SOP_LIBS_MAX; i++) {
            const sop_lib *l = &proc->libs.libs[i];
            if (strcmp(l->kind, "allocator") != 0)
                continue;
            const char *a = allocator_in(l->name);
            if (!a)
                a = allocator_in(l->path);
            if (!a)
                continue;
            if (preloaded && strcmp(a, preloaded) == 0)
                mapped_preloaded = 1;
            if (!mapped)
                mapped = a;
        }

    if (preloaded && (mapped_preloaded || !proc->have_maps)) {
        /* preloaded and seen mapped (or no maps to contradict it) */
        snprintf(out->allocator, sizeof out->allocator, "%s", preloaded);
        snprintf(out->source, sizeof out->source, "LD_PRELOAD");
    } else if (mapped) {
        snprintf(out->allocator, sizeof out->allocator, "%s", mapped);
        snprintf(out->source, sizeof out->source, "maps");
    } else if (proc->have_maps) {
        /* no other allocator mapped: glibc's ptmalloc (a preload that did not load, too) */
        snprintf(out->allocator, sizeof out->allocator, "glibc");
        snprintf(out->source, sizeof out->source, "default");
    }
    /* neither maps nor a preload: allocator stays empty (not measured) */
}
