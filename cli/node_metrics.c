/* node_metrics.c — one OpenMetrics exposition from the per-target texts of `sopctl watch --node`
 * (node_metrics.h): each family's metadata once, the samples of every target under it (a family
 * must be contiguous), each sample labelled with its target's set (pid, and pod, namespace,
 * container in a container) unless the sample already has that label (sop_target_info carries
 * them itself). Depends on node_metrics.h, libc. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_metrics.h"

typedef struct {
    char *name;
    char *meta; /* the first target's # TYPE / # HELP / # UNIT lines */
    size_t meta_len, meta_cap;
    size_t meta_owner; /* that target's index + 1 (0: none yet) */
    char *samples;
    size_t len, cap;
} family;

typedef struct {
    family *v;
    size_t n, cap;
    int oom;
} families;

static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *len + n + 1)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return 0;
}

static family *find(families *fs, const char *name, size_t n)
{
    for (size_t i = 0; i < fs->n; i++)
        if (strlen(fs->v[i].name) == n && memcmp(fs->v[i].name, name, n) == 0)
            return &fs->v[i];
    if (fs->n == fs->cap) {
        size_t nc = fs->cap ? fs->cap * 2 : 64;
        family *nv = realloc(fs->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        fs->v = nv;
        fs->cap = nc;
    }
    family *f = &fs->v[fs->n];
    memset(f, 0, sizeof *f);
    f->name = strndup(name, n);
    if (!f->name)
        return NULL;
    fs->n++;
    return f;
}

/* Does the label set at `p` (just after '{') name `label`? Values are quoted with \\ escapes. */
static int has_label(const char *p, const char *eol, const char *label)
{
    size_t ln = strlen(label);
    while (p < eol && *p != '}') {
        const char *name = p;
        while (p < eol && *p != '=')
            p++;
        if ((size_t)(p - name) == ln && memcmp(name, label, ln) == 0)
            return 1;
        if (p + 1 >= eol || p[1] != '"')
            return 0;
        p += 2;
        while (p < eol && *p != '"')
            p += *p == '\\' ? 2 : 1;
        p++; /* the closing quote */
        if (p < eol && *p == ',')
            p++;
    }
    return 0;
}

/* A label value: \\, \" and \n escaped; any other control byte or non-ASCII byte as '?'. */
static int put_value(char **buf, size_t *len, size_t *cap, const char *v)
{
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        char tmp[2] = {(char)*c, 0};
        const char *s = tmp;
        size_t n = 1;
        if (*c == '\\' || *c == '"') {
            tmp[0] = '\\';
            tmp[1] = (char)*c;
            n = 2;
        } else if (*c == '\n') {
            s = "\\n";
            n = 2;
        } else if (*c < 0x20 || *c >= 0x7f) {
            tmp[0] = '?';
        }
        if (append(buf, len, cap, s, n) != 0)
            return -1;
    }
    return 0;
}

/* One sample line [line, eol) with the target's labels added. */
static int put_sample(family *f, const char *line, const char *eol, const node_labels *L)
{
    const char *brace = memchr(line, '{', (size_t)(eol - line));
    const char *sp = memchr(line, ' ', (size_t)(eol - line));
    if (brace && sp && sp < brace)
        brace = NULL;
    const char *name_end = brace ? brace : (sp ? sp : eol);
    char **b = &f->samples;
    size_t *len = &f->len, *cap = &f->cap;
    if (append(b, len, cap, line, (size_t)(name_end - line)) != 0 || append(b, len, cap, "{", 1))
        return -1;
    int first = 1;
    for (size_t i = 0; i < L->n; i++) {
        if (!L->value[i] || !L->value[i][0] || (brace && has_label(brace + 1, eol, L->name[i])))
            continue;
        if ((!first && append(b, len, cap, ",", 1)) ||
            append(b, len, cap, L->name[i], strlen(L->name[i])) || append(b, len, cap, "=\"", 2) ||
            put_value(b, len, cap, L->value[i]) || append(b, len, cap, "\"", 1))
            return -1;
        first = 0;
    }
    const char *rest = brace ? brace + 1 : name_end;
    if (brace && *rest != '}' && !first && append(b, len, cap, ",", 1))
        return -1;
    if (!brace && append(b, len, cap, "}", 1))
        return -1;
    return append(b, len, cap, rest, (size_t)(eol - rest)) || append(b, len, cap, "\n", 1);
}

static const char *meta_name(const char *line, const char *eol, size_t *n)
{
    /* "# TYPE name ...", "# HELP name ...", "# UNIT name ..." */
    if (eol - line < 8 || line[0] != '#' || line[1] != ' ')
        return NULL;
    const char *p = line + 7;
    const char *e = p;
    while (e < eol && *e != ' ')
        e++;
    *n = (size_t)(e - p);
    return *n ? p : NULL;
}

char *cli_node_metrics(const char *const *texts, const node_labels *labels, size_t n,
                       const char *tail)
{
    families fs = {0};
    for (size_t t = 0; t < n && !fs.oom; t++) {
        family *cur = NULL;
        for (const char *line = texts[t]; line && *line && !fs.oom;) {
            const char *eol = strchr(line, '\n');
            if (!eol)
                eol = line + strlen(line);
            size_t nn = 0;
            const char *mn = NULL;
            if (eol - line >= 5 && strncmp(line, "# EOF", 5) == 0) {
                /* the end of this target's text */
            } else if ((mn = meta_name(line, eol, &nn))) {
                family *f = find(&fs, mn, nn);
                if (!f) {
                    fs.oom = 1;
                    break;
                }
                cur = f;
                if (!f->meta_owner)
                    f->meta_owner = t + 1;
                if (f->meta_owner == t + 1 &&
                    (append(&f->meta, &f->meta_len, &f->meta_cap, line, (size_t)(eol - line)) ||
                     append(&f->meta, &f->meta_len, &f->meta_cap, "\n", 1)))
                    fs.oom = 1;
            } else if (line[0] != '#' && eol > line && cur) {
                if (put_sample(cur, line, eol, &labels[t]) != 0)
                    fs.oom = 1;
            }
            line = *eol ? eol + 1 : NULL;
        }
    }
    char *out = NULL;
    size_t len = 0, cap = 0;
    for (size_t i = 0; i < fs.n && !fs.oom; i++)
        if ((fs.v[i].meta && append(&out, &len, &cap, fs.v[i].meta, fs.v[i].meta_len)) ||
            (fs.v[i].samples && append(&out, &len, &cap, fs.v[i].samples, fs.v[i].len)))
            fs.oom = 1;
    if (!fs.oom && tail && append(&out, &len, &cap, tail, strlen(tail)))
        fs.oom = 1;
    if (!fs.oom && !out)
        out = strdup(tail ? tail : "");
    for (size_t i = 0; i < fs.n; i++) {
        free(fs.v[i].name);
        free(fs.v[i].meta);
        free(fs.v[i].samples);
    }
    free(fs.v);
    if (fs.oom) {
        free(out);
        return NULL;
    }
    return out;
}
