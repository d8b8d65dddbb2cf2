/* rules_doc.c — docs/rules.md, generated from a loaded rule pack (`sopctl check --doc`): each
 * rule's id, section, severity, title, description, the evidence it reads and the thresholds it
 * uses, then every threshold with its default, the rules that use it and its meaning. The
 * meanings are the pack's own comments: in the `thresholds { ... }` block of the pack's main
 * file, the `-- text` after `name = value,` and the comment lines indented past the name that
 * follow it. Input: the tree of sop__rules_describe and the pack's source. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "rules_doc.h"
#include "strbuf.h"

/* The English text of a text value (a string or {en, zh}); NULL when absent. */
static const char *text_en(const sop_value *v)
{
    if (!v)
        return NULL;
    if (v->type == SOP_V_STR)
        return v->str;
    const char *s = sop__v_get_str(v, "en");
    return s ? s : sop__v_get_str(v, "zh");
}

static const char *text_zh(const sop_value *v)
{
    return v && v->type == SOP_V_OBJ ? sop__v_get_str(v, "zh") : NULL;
}

/* Table-safe text: no newlines, no '|'. */
static void put_cell(sop_sb *b, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            sop__sb_puts(b, "\\|");
        else if (*s == '\n' || *s == '\r' || *s == '\t')
            sop__sb_putn(b, &(char){' '}, 1);
        else
            sop__sb_putn(b, &(char){*s}, 1);
    }
}

static void put_value(sop_sb *b, const sop_value *v)
{
    if (!v)
        sop__sb_puts(b, "?");
    else if (v->type == SOP_V_NUM)
        sop__sb_printf(b, "%.15g", v->num);
    else if (v->type == SOP_V_BOOL)
        sop__sb_puts(b, v->b ? "true" : "false");
    else if (v->type == SOP_V_STR)
        sop__sb_printf(b, "\"%s\"", v->str);
    else
        sop__sb_puts(b, "?");
}

/* A list of strings as `a`, `b`; "—" when empty. */
static void put_list(sop_sb *b, const sop_value *arr)
{
    size_t n = 0;
    for (const sop_value *x = arr && arr->type == SOP_V_ARR ? arr->child : NULL; x; x = x->next) {
        if (x->type != SOP_V_STR)
            continue;
        sop__sb_printf(b, "%s`%s`", n++ ? ", " : "", x->str);
    }
    if (!n)
        sop__sb_puts(b, "—");
}

/* ---- threshold comments ------------------------------------------------------------------ */

typedef struct {
    char *name;
    char *meaning;
} th_doc;

static size_t indent_of(const char *line, const char *end)
{
    size_t n = 0;
    while (line + n < end && (line[n] == ' ' || line[n] == '\t'))
        n++;
    return n;
}

static char *dup_trim(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    char *out = malloc(n + 1);
    if (out) {
        memcpy(out, s, n);
        out[n] = '\0';
    }
    return out;
}

/* Append " text" to *dst (realloc). */
static void append_text(char **dst, const char *s, size_t n)
{
    char *t = dup_trim(s, n);
    if (!t)
        return;
    size_t old = *dst ? strlen(*dst) : 0;
    char *r = realloc(*dst, old + strlen(t) + 2);
    if (r) {
        if (old)
            r[old++] = ' ';
        strcpy(r + old, t);
        *dst = r;
    }
    free(t);
}

/* Parse the thresholds block(s) of src into docs (at most max). Returns the count. */
static size_t parse_threshold_docs(const char *src, size_t len, th_doc *docs, size_t max)
{
    size_t n = 0;
    const char *p = src, *end = src + len;
    int in_block = 0;
    size_t key_col = 0;
    th_doc *last = NULL;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        size_t col = indent_of(p, eol);
        const char *s = p + col;
        size_t sl = (size_t)(eol - s);
        if (!in_block) {
            if (sl >= 10 && strncmp(s, "thresholds", 10) == 0 && memchr(s, '{', sl))
                in_block = 1;
        } else if (sl && s[0] == '}') {
            in_block = 0;
            last = NULL;
        } else if (sl >= 2 && s[0] == '-' && s[1] == '-') {
            if (last && col > key_col) {
                append_text(&last->meaning, s + 2, sl - 2);
            } else {
                last = NULL; /* a heading comment: it starts a new group */
            }
        } else if (sl && (isalpha((unsigned char)s[0]) || s[0] == '_') && n < max) {
            size_t k = 0;
            while (k < sl && (isalnum((unsigned char)s[k]) || s[k] == '_' || s[k] == '.'))
                k++;
            const char *eq = memchr(s + k, '=', sl - k);
            const char *cm = NULL;
            for (const char *q = s + k; q + 1 < eol; q++)
                if (q[0] == '-' && q[1] == '-') {
                    cm = q;
                    break;
                }
            if (eq && (!cm || eq < cm)) {
                th_doc *d = &docs[n];
                memset(d, 0, sizeof *d);
                d->name = dup_trim(s, k);
                if (cm)
                    append_text(&d->meaning, cm + 2, (size_t)(eol - cm - 2));
                if (d->name) {
                    n++;
                    last = d;
                    key_col = col;
                }
            }
        } else if (!sl) {
            last = NULL;
        }
        p = eol < end ? eol + 1 : end;
    }
    return n;
}

static const th_doc *find_doc(const th_doc *docs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(docs[i].name, name) == 0)
            return &docs[i];
    return NULL;
}

static int list_has(const sop_value *arr, const char *s)
{
    for (const sop_value *x = arr && arr->type == SOP_V_ARR ? arr->child : NULL; x; x = x->next)
        if (x->type == SOP_V_STR && strcmp(x->str, s) == 0)
            return 1;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *sop__rules_doc_md(const sop_value *desc, const char *pack_name, const char *src, size_t len)
{
    enum { MAX_TH = 512 };
    th_doc *docs = calloc(MAX_TH, sizeof *docs);
    sop_sb b = {0};
    if (!docs)
        return NULL;
    size_t ndocs = src ? parse_threshold_docs(src, len, docs, MAX_TH) : 0;
    const sop_value *rules = sop__v_get(desc, "rules");
    const sop_value *ths = sop__v_get(desc, "thresholds");

    sop__sb_printf(
        &b,
        "# The rule pack\n\n"
        "<!-- Generated by `sopctl check --doc %s` from the rule packs (rules.lua and plugins/);\n"
        "     do not edit: tests/unit/test_rules_doc.sh fails when this file and the packs differ. "
        "-->\n\n"
        "`rules.lua` holds every threshold (override one with `sopctl run --set KEY=VALUE`, or in "
        "a\n"
        "site file: [rule-runner.md](rule-runner.md#site-files)) and requires the rule files in\n"
        "`plugins/`, one per section of the triage SOP. Each rule reads the evidence tree of\n"
        "[evidence.md](evidence.md) and returns one verdict: **hit** (symptom, evidence with the\n"
        "measured numbers, cause, fix, verify, refs), **clear** (a note with the numbers it "
        "looked\n"
        "at) or **unknown** (the evidence it needs is missing). Texts are English and Chinese\n"
        "(`--lang zh`).\n\n"
        "Two definitions every pack shares (`plugins/common.lua`, described in full in\n"
        "[rule-runner.md](rule-runner.md)): **the program's own code** is a file that is not\n"
        "library code (not `<...>`, `site-packages/`, `dist-packages/` or the interpreter's\n"
        "`lib/python3*`) under the target's working directory or its main script's directory; a\n"
        "finding that names code names the innermost own frame and the leaf below it\n"
        "(`get_user (app.py:20) → SocketIO.readinto (socket.py:706)`), and a site file may "
        "redefine\n"
        "`is_own_file`. **`share(thread_or_proc, pattern)`** is the exact fraction of a thread's "
        "or\n"
        "a process's samples with a matching frame anywhere on the stack, read from the full "
        "sample\n"
        "distribution (the top stacks are for display only).\n\n",
        pack_name ? pack_name : "rules.lua");

    size_t nrules = 0;
    for (const sop_value *r = rules ? rules->child : NULL; r; r = r->next)
        nrules++;
    sop__sb_printf(&b, "## Rules (%zu)\n\n| id | § | severity | detects |\n|---|---|---|---|\n",
                   nrules);
    for (const sop_value *r = rules ? rules->child : NULL; r; r = r->next) {
        const char *id = sop__v_get_str(r, "id");
        sop__sb_printf(&b, "| [`%s`](#%s) | %s | %s | ", id, id, sop__v_get_str(r, "section"),
                       sop__v_get_str(r, "severity"));
        const char *t = text_en(sop__v_get(r, "title"));
        put_cell(&b, t ? t : "(no title)");
        sop__sb_puts(&b, " |\n");
    }
    for (const sop_value *r = rules ? rules->child : NULL; r; r = r->next) {
        const char *id = sop__v_get_str(r, "id");
        const sop_value *title = sop__v_get(r, "title");
        sop__sb_printf(&b, "\n<a id=\"%s\"></a>\n### %s\n\n", id, id);
        sop__sb_printf(&b, "§%s · %s (default severity) · `%s`\n\n", sop__v_get_str(r, "section"),
                       sop__v_get_str(r, "severity"), sop__v_get_str(r, "where"));
        const char *en = text_en(title), *zh = text_zh(title);
        if (en) {
            sop__sb_puts(&b, en);
            if (zh)
                sop__sb_printf(&b, " / %s", zh);
            sop__sb_puts(&b, "\n\n");
        }
        const char *doc = sop__v_get_str(r, "doc");
        if (doc) { /* one paragraph: the pack's line breaks and indents folded */
            for (const char *q = doc; *q; q++) {
                if (isspace((unsigned char)*q)) {
                    while (isspace((unsigned char)q[1]))
                        q++;
                    if (q[1])
                        sop__sb_puts(&b, " ");
                } else {
                    sop__sb_putn(&b, q, 1);
                }
            }
            sop__sb_puts(&b, "\n\n");
        }
        sop__sb_puts(&b, "- Reads: ");
        put_list(&b, sop__v_get(r, "reads"));
        sop__sb_puts(&b, "\n- Thresholds: ");
        const sop_value *uses = sop__v_get(r, "uses");
        size_t nu = 0;
        for (const sop_value *u = uses && uses->type == SOP_V_ARR ? uses->child : NULL; u;
             u = u->next) {
            if (u->type != SOP_V_STR)
                continue;
            sop__sb_printf(&b, "%s`%s` = ", nu++ ? ", " : "", u->str);
            put_value(&b, sop__v_get(ths, u->str));
        }
        if (!nu)
            sop__sb_puts(&b, "—");
        sop__sb_puts(&b, "\n");
    }

    /* Thresholds in the order the pack's file lists them (the comments read on from one to the
     * next), then any it does not list (declared elsewhere), by name. */
    size_t nth = 0;
    for (const sop_value *t = ths ? ths->child : NULL; t; t = t->next)
        nth++;
    const char **names = calloc(nth ? nth : 1, sizeof *names);
    if (names) {
        size_t i = 0, listed = 0;
        for (size_t k = 0; k < ndocs; k++)
            if (sop__v_get(ths, docs[k].name) && !find_doc(docs, k, docs[k].name))
                names[i++] = docs[k].name;
        listed = i;
        for (const sop_value *t = ths ? ths->child : NULL; t; t = t->next)
            if (!find_doc(docs, ndocs, t->key))
                names[i++] = t->key;
        qsort(names + listed, i - listed, sizeof *names, cmp_str);
        nth = i;
        sop__sb_printf(&b,
                       "\n## Thresholds (%zu)\n\n| name | default | used by | meaning |\n"
                       "|---|---|---|---|\n",
                       nth);
        for (i = 0; i < nth; i++) {
            sop__sb_printf(&b, "| `%s` | ", names[i]);
            put_value(&b, sop__v_get(ths, names[i]));
            sop__sb_puts(&b, " | ");
            size_t nused = 0;
            for (const sop_value *r = rules ? rules->child : NULL; r; r = r->next)
                if (list_has(sop__v_get(r, "uses"), names[i]))
                    sop__sb_printf(&b, "%s`%s`", nused++ ? ", " : "", sop__v_get_str(r, "id"));
            if (!nused)
                sop__sb_puts(&b, "—");
            sop__sb_puts(&b, " | ");
            const th_doc *d = find_doc(docs, ndocs, names[i]);
            put_cell(&b, d && d->meaning ? d->meaning : "");
            sop__sb_puts(&b, " |\n");
        }
        free(names);
    }
    for (size_t i = 0; i < ndocs; i++) {
        free(docs[i].name);
        free(docs[i].meaning);
    }
    free(docs);
    return sop__sb_take(&b);
}
