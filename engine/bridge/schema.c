/* schema.c (bridge) — walks the evidence tables of schema.h: sets a group's plain fields from
 * its probe struct, and turns the tables into docs/evidence.md and into the key list the
 * `reads` check uses. Depends on engine/core/value.h, strbuf.h and the template docs/evidence.md.in
 * (embedded by cmake/embed_text.cmake). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bridge.h"
#include "schema.h"
#include "strbuf.h"

extern const char sop__evidence_doc_in[]; /* build/embedded_evidence_doc.c */

void sop__bridge_attach(sop_value *parent, const char *key, sop_value *o)
{
    if (o && o->count > 0)
        sop__v_set(parent, key, o);
    else
        sop__v_free(o);
}

/* The rows of one level of a table (keys, prefix), found once per thread and remembered: a
 * dump writes 1,600 frames through the same level, and scanning the whole table with strncmp
 * for each was a tenth of its time. A few levels at a time are live (a thread's level, its
 * frames'); the oldest entry is replaced. Tables or prefixes too large for an entry are
 * scanned each time, as before. */
#define LEVEL_MEMO 8
#define LEVEL_ROWS 256
typedef struct {
    const sop_evk *keys;
    size_t n;
    char prefix[96];
    uint16_t nrows;
    uint16_t rows[LEVEL_ROWS];
} level_memo;
static _Thread_local level_memo level_memos[LEVEL_MEMO];
static _Thread_local unsigned level_next;

static bool row_at_level(const sop_evk *r, const char *prefix, size_t plen)
{
    if (strncmp(r->key, prefix, plen) != 0)
        return false;
    const char *name = r->key + plen;
    return name[0] && !strchr(name, '.') && !strchr(name, '['); /* else another level */
}

/* The memo of (keys, prefix), filled on first use; NULL when it does not fit one. */
static const level_memo *level_rows(const sop_evk *keys, size_t n, const char *prefix, size_t plen)
{
    if (plen >= sizeof level_memos[0].prefix || n > UINT16_MAX)
        return NULL;
    for (unsigned i = 0; i < LEVEL_MEMO; i++) {
        const level_memo *m = &level_memos[i];
        if (m->keys == keys && m->n == n && strcmp(m->prefix, prefix) == 0)
            return m;
    }
    level_memo *m = &level_memos[level_next++ % LEVEL_MEMO];
    m->keys = NULL;
    m->nrows = 0;
    for (size_t i = 0; i < n; i++)
        if (row_at_level(&keys[i], prefix, plen)) {
            if (m->nrows == LEVEL_ROWS)
                return NULL;
            m->rows[m->nrows++] = (uint16_t)i;
        }
    memcpy(m->prefix, prefix, plen + 1);
    m->keys = keys;
    m->n = n;
    return m;
}

void sop__bridge_keys(sop_value *o, const void *base, const sop_evk *keys, size_t n,
                      const char *prefix, sop_evk_hand_fn hand, void *ctx)
{
    size_t plen = strlen(prefix);
    const char *p = base;
    const level_memo *memo = level_rows(keys, n, prefix, plen);
    /* a copy: a hand callback below may write other levels, and so replace this memo */
    uint16_t rows[LEVEL_ROWS];
    size_t nrows = memo ? memo->nrows : n;
    if (memo)
        memcpy(rows, memo->rows, nrows * sizeof rows[0]);
    for (size_t k = 0; o && k < nrows; k++) {
        size_t i = memo ? rows[k] : k;
        const sop_evk *r = &keys[i];
        if (!memo && !row_at_level(r, prefix, plen))
            continue;
        const char *name = r->key + plen;
        if (r->off == SOP_EVK_HAND) {
            if (hand)
                hand(o, r, name, ctx);
            continue;
        }
        if (r->off == SOP_EVK_WRITER) {
            r->write(o, name, base, ctx);
            continue;
        }
        switch (r->type) {
        case SOP_EVK_INT: {
            int64_t v;
            memcpy(&v, p + r->off, sizeof v);
            sop__v_set_int(o, name, v);
            break;
        }
        case SOP_EVK_NUM: {
            double v;
            memcpy(&v, p + r->off, sizeof v);
            sop__v_set_dbl(o, name, v);
            break;
        }
        case SOP_EVK_TEXT:
            if (p[r->off])
                sop__v_set(o, name, sop__bridge_text(p + r->off));
            break;
        case SOP_EVK_STR:
            sop__v_set_str(o, name, p + r->off);
            break;
        case SOP_EVK_BOOL: {
            bool v;
            memcpy(&v, p + r->off, sizeof v);
            if (v)
                sop__v_set_bool(o, name, true);
            break;
        }
        default: /* objects and arrays are written by a writer or by hand */
            break;
        }
    }
}

static const char *type_name(sop_evk_type t)
{
    static const char *const names[] = {"int", "num", "text", "text", "bool", "object", "array"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* A group named "x[]" is an array of objects (its rows: "x[].key"); a group whose rows are an
 * earlier group's is listed as "same keys as" that one; the group "" (top-level keys) has no
 * header line. */
static void group_md(sop_sb *b, const sop_evk_group *const *groups, size_t at)
{
    const sop_evk_group *g = groups[at];
    size_t gl = strlen(g->group);
    bool arr = gl > 2 && strcmp(g->group + gl - 2, "[]") == 0;
    if (gl) /* the group "" (top-level keys) has no line of its own */
        sop__sb_printf(b, "%-40s %-6s %-8s written by %s\n", g->group, arr ? "array" : "object", "",
                       g->file);
    for (size_t o = 0; o < at; o++) {
        if (groups[o]->keys == g->keys) {
            sop__sb_printf(b, "  same keys as %s\n", groups[o]->group);
            return;
        }
    }
    size_t n = *g->n;
    for (size_t i = 0; i < n; i++) {
        const sop_evk *r = &g->keys[i];
        char path[128];
        if (gl) /* "  host.ncpu"; a top-level key stands at the margin */
            snprintf(path, sizeof path, "  %s.%s", g->group, r->key);
        else
            snprintf(path, sizeof path, "%s", r->key);
        if (r->doc[0])
            sop__sb_printf(b, "%-40s %-6s %-8s %s\n", path, type_name(r->type), r->unit, r->doc);
        else if (r->unit[0])
            sop__sb_printf(b, "%-40s %-6s %s\n", path, type_name(r->type), r->unit);
        else
            sop__sb_printf(b, "%-40s %s\n", path, type_name(r->type));
    }
}

char *sop__evidence_doc_md(const sop_evk_group *const *groups, size_t ngroups)
{
    sop_sb b = {0};
    const char *s = sop__evidence_doc_in;
    while (*s) {
        const char *eol = strchr(s, '\n');
        size_t len = eol ? (size_t)(eol - s) + 1 : strlen(s);
        bool done = false;
        if (strncmp(s, "@@KEYS ", 7) == 0) {
            for (size_t g = 0; g < ngroups; g++) {
                size_t gl = strlen(groups[g]->group);
                if (strncmp(s + 7, groups[g]->group, gl) == 0 &&
                    strncmp(s + 7 + gl, "@@", 2) == 0) {
                    group_md(&b, groups, g);
                    done = true;
                }
            }
        }
        if (!done)
            sop__sb_putn(&b, s, len);
        s += len;
    }
    return sop__sb_take(&b);
}

sop_value *sop__evidence_schema(const sop_evk_group *const *groups_in, size_t ngroups)
{
    sop_value *root = sop__v_obj();
    sop_value *groups = root ? sop__v_arr_at(root, "groups") : NULL;
    for (size_t g = 0; groups && g < ngroups; g++) {
        const sop_evk_group *gr = groups_in[g];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set(o, "group", sop__v_str(gr->group)); /* "" too: the top-level keys */
        sop__v_set_str(o, "file", gr->file);
        sop_value *keys = sop__v_arr_at(o, "keys");
        size_t n = *gr->n;
        for (size_t i = 0; keys && i < n; i++) {
            const sop_evk *r = &gr->keys[i];
            sop_value *k = sop__v_obj();
            char path[128];
            snprintf(path, sizeof path, "%s%s%s", gr->group, gr->group[0] ? "." : "", r->key);
            sop__v_set_str(k, "key", path);
            sop__v_set_str(k, "type", type_name(r->type));
            sop__v_set_str(k, "unit", r->unit);
            sop__v_set_str(k, "doc", r->doc);
            sop__v_set_bool(k, "hand", r->off == SOP_EVK_HAND);
            sop__v_set_bool(k, "writer", r->off == SOP_EVK_WRITER);
            sop__v_push(keys, k);
        }
        sop__v_push(groups, o);
    }
    return root;
}
