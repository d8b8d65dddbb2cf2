/* evidence_doc.c — the evidence schema as a document (sop_evidence_doc: docs/evidence.md, or
 * JSON for the rules' reads check): the groups the providers emit (engine/collect/provider.h,
 * in table order), then the watch's group and the top-level keys, which no provider emits;
 * sop__evidence_row: one path's row, for C code outside the providers that reads evidence.
 * Depends on bridge/schema.c, collect/providers.c. */
#include "evidence_doc.h"

#include <stdlib.h>
#include <string.h>

#include "bridge/schema.h"
#include "engine.h"
#include "json.h"
#include "provider.h"

#define SOP__MAX_GROUPS 64

size_t sop__evidence_groups(const sop_evk_group **out, size_t cap)
{
    static const sop_evk_group watch = {
        "watch",
        "engine/api/watch_history.c, in the windows of a watch (`sopctl watch`, sop_watch_new) "
        "only: what the watch read in its earlier windows on the same process",
        sop__evk_watch, &sop__evk_watch_n};
    static const sop_evk_group top = {"", "engine/collect/collect.c", sop__evk_top,
                                      &sop__evk_top_n}; /* top-level keys */
    size_t n = sop__collect_groups(out, cap);
    if (n < cap)
        out[n] = &watch;
    if (++n < cap)
        out[n] = &top;
    return ++n;
}

int sop_evidence_doc(sop_format fmt, char **out)
{
    if (!out)
        return SOP_EINVAL;
    *out = NULL;
    const sop_evk_group *g[SOP__MAX_GROUPS];
    size_t n = sop__evidence_groups(g, SOP__MAX_GROUPS);
    if (n > SOP__MAX_GROUPS)
        return SOP_ENOMEM;
    if (fmt == SOP_FORMAT_JSON) {
        sop_value *d = sop__evidence_schema(g, n);
        *out = d ? sop__json_print(d, 1) : NULL;
        sop__v_free(d);
    } else {
        *out = sop__evidence_doc_md(g, n);
    }
    return *out ? 0 : SOP_ENOMEM;
}

const sop_evk *sop__evidence_row(const char *path)
{
    const sop_evk_group *g[SOP__MAX_GROUPS];
    size_t n = sop__evidence_groups(g, SOP__MAX_GROUPS);
    for (size_t i = 0; i < n && i < SOP__MAX_GROUPS && path; i++) {
        size_t gl = strlen(g[i]->group);
        const char *rest = path;
        if (gl) { /* "group." then the row's key */
            if (strncmp(path, g[i]->group, gl) != 0 || path[gl] != '.')
                continue;
            rest = path + gl + 1;
        }
        for (size_t k = 0; k < *g[i]->n; k++)
            if (strcmp(g[i]->keys[k].key, rest) == 0)
                return &g[i]->keys[k];
    }
    return NULL;
}

/* Whether the group named `name` is the one `key` names: "proc" for "proc", "threads" for
 * "threads[]". Its kind through *arr. */
static bool group_is(const char *name, const char *key, bool *arr)
{
    size_t kl = strlen(key);
    if (!name[0] || strncmp(name, key, kl) != 0 || (name[kl] && strcmp(name + kl, "[]") != 0))
        return false;
    *arr = name[kl] != '\0';
    return true;
}

int sop__evidence_top_type(const char *key, bool *group)
{
    const sop_evk_group *g[SOP__MAX_GROUPS];
    size_t n = sop__evidence_groups(g, SOP__MAX_GROUPS);
    bool arr = false;
    *group = false;
    for (size_t i = 0; i < n && i < SOP__MAX_GROUPS; i++) {
        if (!g[i]->group[0]) { /* the top-level rows */
            for (size_t k = 0; k < *g[i]->n; k++)
                if (strcmp(g[i]->keys[k].key, key) == 0)
                    return (int)g[i]->keys[k].type;
        } else if (group_is(g[i]->group, key, &arr)) {
            *group = true;
            return arr ? SOP_EVK_ARR : SOP_EVK_OBJ;
        }
    }
    return -1;
}

bool sop__evidence_known(const char *path)
{
    if (sop__evidence_row(path))
        return true;
    const sop_evk_group *g[SOP__MAX_GROUPS];
    size_t n = sop__evidence_groups(g, SOP__MAX_GROUPS);
    bool arr = false;
    for (size_t i = 0; i < n && i < SOP__MAX_GROUPS; i++)
        if (group_is(g[i]->group, path, &arr))
            return true; /* a group's own key: "proc", "python.tasks", "threads" */
    return false;
}
