/* alloc.c — which malloc a process runs on and its knobs, from what the process probes
 * already read: the allocator libraries mapped (proc->libs, kind "allocator") and the
 * allow-listed environment (LD_PRELOAD, MALLOC_ARENA_MAX, PYTHONMALLOC). Depends on alloc.h. */
#include "alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
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
    out->heaps.heaps = out->heaps.rw_kb = out->heaps.reserved_kb = SOP_NA;
    if (proc->have_maps && strcmp(out->allocator, "glibc") == 0)
        out->heaps = proc->heaps;
}

/* glibc's HEAP_MAX_SIZE on 64-bit: 2 * DEFAULT_MMAP_THRESHOLD_MAX = 64 MiB. */
#define HEAP_BYTES (64ull << 20)

typedef struct {
    uint64_t start, end;
    char perms[5];
    bool anon;
} map_line;

/* One maps line: "start-end perms offset dev inode [path]". False on a malformed line. */
static bool parse_map_line(const char *line, const char *eol, map_line *m)
{
    char *p;
    m->start = strtoull(line, &p, 16);
    if (*p != '-')
        return false;
    m->end = strtoull(p + 1, &p, 16);
    if (*p != ' ' || m->end <= m->start || eol - p < 6)
        return false;
    memcpy(m->perms, p + 1, 4);
    m->perms[4] = '\0';
    p += 5;
    int fields = 0; /* offset dev inode */
    uint64_t inode = 1;
    while (p < eol && fields < 3) {
        while (p < eol && *p == ' ')
            p++;
        if (fields == 2)
            inode = strtoull(p, NULL, 10);
        while (p < eol && *p != ' ')
            p++;
        fields++;
    }
    while (p < eol && *p == ' ')
        p++;
    m->anon = fields == 3 && inode == 0 && p == eol; /* no path, not even [stack] */
    return true;
}

int sop__parse_malloc_heaps(const char *maps, sop_malloc_heaps *out)
{
    out->heaps = out->rw_kb = out->reserved_kb = SOP_NA;
    if (!maps)
        return -EINVAL;
    int64_t heaps = 0, rw = 0, reserved = 0;
    map_line prev = {0};
    bool have_prev = false;
    for (const char *line = maps; *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            break; /* a cut-off last line */
        map_line m;
        bool ok = parse_map_line(line, eol, &m);
        line = eol + 1;
        if (!ok) {
            have_prev = false;
            continue;
        }
        /* A heap: an aligned read-write anonymous start, then (unless fully grown) the
         * PROT_NONE rest right after it, together exactly 64 MiB. */
        if (have_prev && prev.anon && strcmp(prev.perms, "rw-p") == 0 &&
            prev.start % HEAP_BYTES == 0 && m.anon && strcmp(m.perms, "---p") == 0 &&
            m.start == prev.end && m.end - prev.start == HEAP_BYTES) {
            heaps++;
            rw += (int64_t)((prev.end - prev.start) >> 10);
            reserved += (int64_t)(HEAP_BYTES >> 10);
            have_prev = false;
            continue;
        }
        if (m.anon && strcmp(m.perms, "rw-p") == 0 && m.start % HEAP_BYTES == 0 &&
            m.end - m.start == HEAP_BYTES) {
            /* fully grown; a PROT_NONE rest would have followed it otherwise */
            const char *next = line;
            map_line n;
            const char *neol = strchr(next, '\n');
            bool rest = neol && parse_map_line(next, neol, &n) && n.anon &&
                        strcmp(n.perms, "---p") == 0 && n.start == m.end;
            if (!rest) {
                heaps++;
                rw += (int64_t)(HEAP_BYTES >> 10);
                reserved += (int64_t)(HEAP_BYTES >> 10);
                have_prev = false;
                continue;
            }
        }
        prev = m;
        have_prev = true;
    }
    out->heaps = heaps;
    out->rw_kb = rw;
    out->reserved_kb = reserved;
    return 0;
}
