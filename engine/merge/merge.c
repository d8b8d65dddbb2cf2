/* merge.c — one job-level report from the reports of many ranks (`sopctl merge`, `fleet`):
 * the rank × rule table, findings on every rank (job-wide), outliers of the key figures by the
 * median absolute deviation with the findings that explain them, the straggler, missing
 * nodes/ranks and mismatched report versions. The analysis is built as a value tree (the JSON
 * form) that the md, text and JSON writers of merge_render.c turn into text. Every string
 * from a report is untrusted: escaped for the format on the way out. Depends on value, json,
 * strbuf. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "merge.h"
#include "merge_int.h"
#include "merge_wait.h"
#include "severity.h"
#include "strbuf.h"

/* The reader's bounds (issue 28): a merge's memory and time grow with these, so input beyond
 * them is refused with SOP_EINVAL (the CLI says which) instead of being merged for minutes.
 * Reports: a job of 16384 ranks; JSON values in all the text (reports, and parts that are not
 * reports: 8 MB of "{}" was 4 M missing entries, 1.7 GB); distinct finding ids over the job
 * (rules of the default pack, plugins and site files are some hundreds); findings per report. */
#define MERGE_MAX_REPORTS 16384
#define MERGE_MAX_PARTS 20000
#define MERGE_MAX_IDS 1024
#define MERGE_MAX_FINDINGS 1024
#define OUTLIER_Z 3.5 /* modified z-score (Iglewicz & Hoaglin) above which a figure stands out */
#define MAD_TO_SIGMA 1.4826

const figure_def sop__merge_figs[] = {
    {"cpu_pct", "CPU", "CPU", 25, 0},
    {"runnable_load", "runnable load", "可运行负载", 0.5, 0},
    {"data_wait_frac", "DataLoader wait", "DataLoader 等待", 0.2, 0},
    {"dstate_frac", "D state", "D 状态", 0.2, 0},
    {"rss_kb", "RSS", "RSS", 262144, 0.5},
    {"gil_frac", "GIL held", "持有 GIL", 0.2, 0},
    {"loop_stretch_ms", "loop stretch", "事件循环阻塞", 100, 0},
    {"gpu_busy_frac", "GPU busy", "GPU 繁忙", 0.25, 0},
    {"collective_frac", "collective wait", "集合通信等待", 0.25, 0},
};

typedef struct {
    char *source;
    sop_value *report; /* owned */
    long rank, local_rank, world_size;
    const char *node, *job_id, *version; /* borrowed from report */
    char pod[520];                       /* "NAMESPACE/POD" of target.container, or "" */
    const char *container;               /* target.container.name (borrowed), or NULL */
    double pid;
    double fig[NFIG];
    bool has[NFIG];
} mrank;

struct sop_merge {
    mrank *r;
    size_t n, cap;
    size_t parts; /* JSON values read, reports or not */
    char **ids;   /* distinct finding ids seen, sorted (at most MERGE_MAX_IDS) */
    size_t nids;
    sop_value *missing;  /* [{node, reason}] */
    sop_value *excluded; /* [{source, schema, sop_version}] other schema: not merged */
};

int sop_merge_new(sop_merge **out)
{
    if (!out)
        return SOP_EINVAL;
    sop_merge *m = calloc(1, sizeof *m);
    if (!m || !(m->missing = sop__v_arr()) || !(m->excluded = sop__v_arr())) {
        if (m) {
            sop__v_free(m->missing);
            free(m);
        }
        return SOP_ENOMEM;
    }
    *out = m;
    return SOP_OK;
}

void sop_merge_free(sop_merge *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->r[i].source);
        sop__v_free(m->r[i].report);
    }
    free(m->r);
    for (size_t i = 0; i < m->nids; i++)
        free(m->ids[i]);
    free(m->ids);
    sop__v_free(m->missing);
    sop__v_free(m->excluded);
    free(m);
}

size_t sop_merge_count(const sop_merge *m)
{
    return m ? m->n : 0;
}

int sop_merge_add_missing(sop_merge *m, const char *node, const char *reason)
{
    if (!m || !node)
        return SOP_EINVAL;
    sop_value *e = sop__v_obj();
    if (!e)
        return SOP_ENOMEM;
    sop__v_set(e, "node", sop__v_str(node));
    sop__v_set(e, "reason", sop__v_str(reason ? reason : ""));
    return sop__v_push(m->missing, e) == 0 ? SOP_OK : SOP_ENOMEM;
}

static long int_or(const sop_value *o, const char *key)
{
    double d = 0;
    if (!sop__v_get_num(o, key, &d) || !(d >= 0 && d < 1e9) || d != floor(d))
        return -1;
    return (long)d;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add the report's finding ids to the set of distinct ids; SOP_EINVAL past MERGE_MAX_IDS. */
static int count_ids(sop_merge *m, const sop_value *findings)
{
    if (!m->ids && !(m->ids = calloc(MERGE_MAX_IDS, sizeof *m->ids)))
        return SOP_ENOMEM;
    for (const sop_value *f = findings->child; f; f = f->next) {
        const char *id = sop__v_get_str(f, "id");
        if (!id)
            continue;
        if (bsearch(&id, m->ids, m->nids, sizeof *m->ids, cmp_str))
            continue;
        if (m->nids >= MERGE_MAX_IDS)
            return SOP_EINVAL;
        size_t at = 0;
        while (at < m->nids && strcmp(m->ids[at], id) < 0)
            at++;
        char *copy = strdup(id);
        if (!copy)
            return SOP_ENOMEM;
        memmove(m->ids + at + 1, m->ids + at, (m->nids - at) * sizeof *m->ids);
        m->ids[at] = copy;
        m->nids++;
    }
    return SOP_OK;
}

static int add_one(sop_merge *m, const char *source, sop_value *rep)
{
    double schema = 0;
    const sop_value *findings = sop__v_get(rep, "findings");
    if (rep->type != SOP_V_OBJ || !sop__v_get_num(rep, "schema", &schema) || !findings ||
        findings->type != SOP_V_ARR || !sop__v_get(rep, "target")) {
        sop__v_free(rep);
        int rc = sop_merge_add_missing(m, source, "not a sop report (no schema, target, findings)");
        return rc ? rc : SOP_EFORMAT;
    }
    if (schema != 1) {
        sop_value *e = sop__v_obj();
        sop__v_set(e, "source", sop__v_str(source));
        sop__v_set(e, "schema", sop__v_num(schema));
        const char *ver = sop__v_get_str(rep, "sop_version");
        if (ver)
            sop__v_set(e, "sop_version", sop__v_str(ver));
        sop__v_free(rep);
        return e && sop__v_push(m->excluded, e) == 0 ? SOP_OK : SOP_ENOMEM;
    }
    if (m->n >= MERGE_MAX_REPORTS || findings->count > MERGE_MAX_FINDINGS ||
        count_ids(m, findings) != 0) {
        sop__v_free(rep);
        return SOP_EINVAL; /* over a bound: the merge stops here */
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        mrank *nr = realloc(m->r, cap * sizeof *nr);
        if (!nr) {
            sop__v_free(rep);
            return SOP_ENOMEM;
        }
        m->r = nr;
        m->cap = cap;
    }
    mrank *r = &m->r[m->n];
    memset(r, 0, sizeof *r);
    r->source = strdup(source);
    if (!r->source) {
        sop__v_free(rep);
        return SOP_ENOMEM;
    }
    r->report = rep;
    const sop_value *t = sop__v_get(rep, "target");
    r->rank = int_or(t, "rank");
    r->local_rank = int_or(t, "local_rank");
    r->world_size = int_or(t, "world_size");
    r->node = sop__v_get_str(t, "node");
    r->job_id = sop__v_get_str(t, "job_id");
    const sop_value *ct = sop__v_get(t, "container"); /* engine/collect/container_identity.c */
    const char *pod = sop__v_get_str(ct, "pod"), *pns = sop__v_get_str(ct, "namespace");
    if (pod)
        snprintf(r->pod, sizeof r->pod, "%s%s%s", pns ? pns : "", pns ? "/" : "", pod);
    r->container = sop__v_get_str(ct, "name");
    r->version = sop__v_get_str(rep, "sop_version");
    r->pid = (double)int_or(t, "pid"); /* a damaged report's 1e47 never reaches an int cast */
    const sop_value *figs = sop__v_get(rep, "figures");
    for (size_t i = 0; i < NFIG; i++)
        r->has[i] = sop__v_get_num(figs, FIGS[i].key, &r->fig[i]) && isfinite(r->fig[i]);
    m->n++;
    return SOP_OK;
}

/* The end of the JSON value starting at s[0] ('{' or '['), or 0 when it does not end. */
static size_t value_end(const char *s, size_t len)
{
    int depth = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return i + 1;
    }
    return 0;
}

int sop_merge_add_json(sop_merge *m, const char *source, const char *text, size_t len)
{
    if (!m || !source || (!text && len))
        return SOP_EINVAL;
    int rc = SOP_OK, parts = 0;
    size_t off = 0;
    while (off < len) {
        char c = text[off];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            off++;
            continue;
        }
        if (++m->parts > MERGE_MAX_PARTS)
            return SOP_EINVAL; /* over a bound: the merge stops here */
        char where[512];
        snprintf(where, sizeof where, "%s", source);
        if (parts > 0 || value_end(text + off, len - off) < len - off)
            snprintf(where, sizeof where, "%s#%d", source, parts + 1);
        parts++;
        size_t n = c == '{' ? value_end(text + off, len - off) : 0;
        if (n == 0) { /* not an object, or cut off: the rest of the text is lost */
            int r2 = sop_merge_add_missing(m, where, "not a JSON object (or cut off)");
            return r2 ? r2 : SOP_EFORMAT;
        }
        char err[128];
        sop_value *v = sop__json_parse(text + off, n, err, sizeof err);
        off += n;
        if (!v) {
            int r2 = sop_merge_add_missing(m, where, err);
            if (r2)
                return r2;
            rc = SOP_EFORMAT;
            continue;
        }
        int r1 = add_one(m, where, v);
        if (r1 == SOP_ENOMEM || r1 == SOP_EINVAL)
            return r1;
        if (r1)
            rc = r1;
    }
    if (parts == 0) {
        int r2 = sop_merge_add_missing(m, source, "empty: no report");
        return r2 ? r2 : SOP_EFORMAT;
    }
    return rc;
}

/* ---- analysis ---------------------------------------------------------------------------- */

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void label_of(const mrank *r, char *buf, size_t len)
{
    if (r->rank >= 0)
        snprintf(buf, len, "%ld", r->rank);
    else if (r->pid > 0)
        snprintf(buf, len, "pid %.0f%s%s", r->pid, r->node ? "@" : "", r->node ? r->node : "");
    else
        snprintf(buf, len, "%s", r->source);
}

/* A text field: a string, or {en, zh} when a report kept both. */
static const char *text_of(const sop_value *v, const char *lang)
{
    if (!v)
        return "";
    if (v->type == SOP_V_STR)
        return v->str;
    const char *s = sop__v_get_str(v, lang);
    if (!s)
        s = sop__v_get_str(v, "en");
    return s ? s : "";
}

/* Whether finding f (of `report`) explains the figure: its rule's family is among those the
 * report's pack lists for it (explains{}). */
static bool explains_figure(const sop_value *report, const sop_value *f, const char *figure)
{
    const char *family = sop__v_get_str(f, "family");
    const sop_value *fams = sop__v_get(sop__v_get(report, "explains"), figure);
    for (const sop_value *c = family && fams ? fams->child : NULL; c; c = c->next)
        if (c->type == SOP_V_STR && strcmp(c->str, family) == 0)
            return true;
    return false;
}

typedef struct {
    const char *id, *section, *severity;
    size_t count;
    bool *on; /* per rank */
} rule_row;

static int cmp_rank(const void *a, const void *b)
{
    const mrank *x = a, *y = b;
    if (x->rank != y->rank) {
        if (x->rank < 0)
            return 1;
        if (y->rank < 0)
            return -1;
        return x->rank < y->rank ? -1 : 1;
    }
    return 0;
}

/* "0-3,5,7" for numeric labels; labels joined by "," otherwise. */
static void compact_ranks(sop_sb *b, const mrank *r, const bool *on, size_t n)
{
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (!on[i])
            continue;
        char lab[320];
        label_of(&r[i], lab, sizeof lab);
        size_t j = i;
        if (r[i].rank >= 0)
            while (j + 1 < n && on[j + 1] && r[j + 1].rank == r[j].rank + 1)
                j++;
        sop__sb_puts(b, first ? "" : ",");
        first = false;
        sop__sb_puts(b, lab);
        if (j > i + 1)
            sop__sb_printf(b, "-%ld", r[j].rank);
        else if (j == i + 1)
            sop__sb_printf(b, ",%ld", r[j].rank);
        i = j;
    }
}

static sop_value *finding_brief(const sop_value *f, const char *lang)
{
    sop_value *o = sop__v_obj();
    static const char *keys[] = {"id", "section", "severity"};
    for (int k = 0; k < 3; k++) {
        const char *s = sop__v_get_str(f, keys[k]);
        if (s)
            sop__v_set(o, keys[k], sop__v_str(s));
    }
    static const char *texts[] = {"symptom", "evidence", "fix"};
    for (int k = 0; k < 3; k++) {
        const sop_value *v = sop__v_get(f, texts[k]);
        if (v)
            sop__v_set(o, texts[k], sop__v_str(text_of(v, lang)));
    }
    return o;
}

/* The findings of rank r that are not on every rank: those of the figure's families first
 * (fig < 0: any), then by severity; at most max, warn/high only when serious. */
static sop_value *explaining(const mrank *r, const rule_row *rows, size_t nrows, size_t nranks,
                             int fig, bool serious, size_t max, const char *lang)
{
    sop_value *out = sop__v_arr();
    const sop_value *fs = sop__v_get(r->report, "findings");
    for (int pass = 0; pass < 2 * 3 && out && out->count < max; pass++) {
        bool family = pass < 3;
        int sev = pass % 3;
        if (serious && sev == 2)
            continue;
        for (const sop_value *f = fs ? fs->child : NULL; f && out->count < max; f = f->next) {
            const char *id = sop__v_get_str(f, "id");
            if (sop__severity_rank(sop__v_get_str(f, "severity")) != sev)
                continue;
            bool fam = fig >= 0 && explains_figure(r->report, f, FIGS[fig].key);
            if (fig >= 0 && fam != family)
                continue;
            if (fig < 0 && !family)
                continue;
            bool wide = false;
            for (size_t k = 0; k < nrows; k++)
                if (id && strcmp(rows[k].id, id) == 0)
                    wide = nranks >= 2 && rows[k].count == nranks;
            if (!wide)
                sop__v_push(out, finding_brief(f, lang));
        }
    }
    return out;
}

/* The job tree: the JSON form of the merged report. */
/* One analysis in progress: the ranks sorted, the job value being built, and what one phase
 * hands the next. The phases run in the order the job's keys are written. */
typedef struct {
    const sop_merge *m;
    const char *lang;
    bool *problem;
    mrank *r; /* the ranks, sorted (a copy of m->r) */
    size_t n;
    sop_value *job;
    sop_value *jobs; /* job_ids */
    long world;      /* the largest world size a report gives, -1 none */
    bool world_mixed;
    rule_row *rows; /* rank x rule */
    size_t nrows;
    sop_value *outl; /* outliers */
    double *score;   /* per rank: its largest outlier z, 0 none */
} analysis;

/* job_ids, nodes, world_size, reports */
static void put_identity(analysis *a)
{
    const mrank *r = a->r;
    a->jobs = sop__v_arr_at(a->job, "job_ids");
    sop_value *nodes = sop__v_arr_at(a->job, "nodes");
    a->world = -1;
    for (size_t i = 0; i < a->n; i++) {
        if (r[i].job_id) {
            bool seen = false;
            for (const sop_value *c = a->jobs->child; c; c = c->next)
                seen = seen || strcmp(c->str, r[i].job_id) == 0;
            if (!seen)
                sop__v_push(a->jobs, sop__v_str(r[i].job_id));
        }
        if (r[i].node) {
            bool seen = false;
            for (const sop_value *c = nodes->child; c; c = c->next)
                seen = seen || strcmp(c->str, r[i].node) == 0;
            if (!seen)
                sop__v_push(nodes, sop__v_str(r[i].node));
        }
        if (r[i].world_size > 0) {
            if (a->world > 0 && a->world != r[i].world_size)
                a->world_mixed = true;
            if (r[i].world_size > a->world)
                a->world = r[i].world_size;
        }
    }
    if (a->world > 0)
        sop__v_set_int(a->job, "world_size", a->world);
    sop__v_set_int(a->job, "reports", (int64_t)a->n);
}

/* The rank x rule table: a row per finding id, the ranks it fired on, its worst severity. */
static void gather_rule_rows(analysis *a)
{
    size_t caprows = 0;
    for (size_t i = 0; i < a->n; i++) {
        const sop_value *fs = sop__v_get(a->r[i].report, "findings");
        for (const sop_value *f = fs ? fs->child : NULL; f; f = f->next) {
            const char *id = sop__v_get_str(f, "id");
            if (!id)
                continue;
            size_t k = 0;
            while (k < a->nrows && strcmp(a->rows[k].id, id) != 0)
                k++;
            if (k == a->nrows) {
                if (a->nrows == caprows) {
                    size_t cap = caprows ? caprows * 2 : 16;
                    rule_row *nr = realloc(a->rows, cap * sizeof *nr);
                    if (!nr)
                        break;
                    a->rows = nr;
                    caprows = cap;
                }
                bool *on = calloc(a->n, sizeof *on);
                if (!on)
                    break;
                a->rows[a->nrows++] = (rule_row){id, sop__v_get_str(f, "section"),
                                                 sop__v_get_str(f, "severity"), 0, on};
            }
            rule_row *row = &a->rows[k];
            const char *sev = sop__v_get_str(f, "severity");
            if (sop__severity_rank(sev) < sop__severity_rank(row->severity))
                row->severity = sev;
            if (sop__severity_rank(sev) < 2)
                *a->problem = true;
            if (!row->on[i]) {
                row->on[i] = true;
                row->count++;
            }
        }
    }
}

/* rules (worst first) and job_wide: the findings of every rank, as the first rank saw them */
static void put_rules(analysis *a)
{
    sop_value *rules = sop__v_arr_at(a->job, "rules");
    sop_value *wide = sop__v_arr_at(a->job, "job_wide");
    for (int sev = 0; sev < 3; sev++) {
        for (size_t k = 0; k < a->nrows; k++) {
            const rule_row *rr = &a->rows[k];
            if (sop__severity_rank(rr->severity) != sev)
                continue;
            sop_value *row = sop__v_obj();
            sop__v_set(row, "id", sop__v_str(rr->id));
            sop__v_set_str(row, "section", rr->section);
            sop__v_set_str(row, "severity", rr->severity);
            sop__v_set_int(row, "count", (int64_t)rr->count);
            sop_sb b = {0};
            compact_ranks(&b, a->r, rr->on, a->n);
            char *ranks = sop__sb_take(&b);
            sop__v_set(row, "ranks", sop__v_str(ranks ? ranks : ""));
            free(ranks);
            bool is_wide = a->n >= 2 && rr->count == a->n;
            sop__v_set_bool(row, "job_wide", is_wide);
            sop__v_push(rules, row);
            if (is_wide && sev < 2) { /* its text as the first rank saw it */
                const sop_value *fs = sop__v_get(a->r[0].report, "findings");
                for (const sop_value *f = fs ? fs->child : NULL; f; f = f->next) {
                    const char *id = sop__v_get_str(f, "id");
                    if (id && strcmp(id, rr->id) == 0) {
                        sop__v_push(wide, finding_brief(f, a->lang));
                        break;
                    }
                }
            }
        }
    }
}

/* One rank standing out on figure fi: its outlier entry. */
static sop_value *outlier(const analysis *a, size_t i, size_t fi, double md, double d, double z)
{
    const mrank *ri = &a->r[i];
    char lab[320];
    label_of(ri, lab, sizeof lab);
    sop_value *o = sop__v_obj();
    sop__v_set(o, "rank", sop__v_str(lab));
    sop__v_set_str(o, "node", ri->node);
    sop__v_set_str(o, "pod", ri->pod);
    sop__v_set_str(o, "container", ri->container);
    sop__v_set(o, "figure", sop__v_str(FIGS[fi].key));
    sop__v_set_dbl(o, "value", ri->fig[fi]);
    sop__v_set_dbl(o, "median", md);
    sop__v_set(o, "direction", sop__v_str(d > 0 ? "high" : "low"));
    sop__v_set_dbl(o, "score", round(z * 10) / 10);
    sop__v_set(o, "findings", explaining(ri, a->rows, a->nrows, a->n, (int)fi, false, 3, a->lang));
    return o;
}

/* figures (median, MAD per key figure) and outliers (modified z-score); each rank's largest
 * z into a->score */
static void put_figures(analysis *a, double *vals)
{
    sop_value *figs = sop__v_arr_at(a->job, "figures");
    a->outl = sop__v_arr_at(a->job, "outliers");
    for (size_t fi = 0; vals && a->score && fi < NFIG; fi++) {
        size_t k = 0;
        for (size_t i = 0; i < a->n; i++)
            if (a->r[i].has[fi])
                vals[k++] = a->r[i].fig[fi];
        if (k == 0)
            continue;
        double md = median(vals, k);
        for (size_t j = 0; j < k; j++)
            vals[j] = fabs(vals[j] - md);
        double mad = median(vals, k);
        sop_value *fo = sop__v_obj();
        sop__v_set(fo, "figure", sop__v_str(FIGS[fi].key));
        sop__v_set_int(fo, "ranks", (int64_t)k);
        sop__v_set_dbl(fo, "median", md);
        sop__v_set_dbl(fo, "mad", mad);
        sop__v_push(figs, fo);
        if (k < 3)
            continue; /* two values have no median to stand out from */
        double need = FIGS[fi].min_diff;
        if (FIGS[fi].min_rel > 0 && FIGS[fi].min_rel * fabs(md) > need)
            need = FIGS[fi].min_rel * fabs(md);
        for (size_t i = 0; i < a->n; i++) {
            if (!a->r[i].has[fi])
                continue;
            double d = a->r[i].fig[fi] - md;
            double z = mad > 0 ? fabs(d) / (MAD_TO_SIGMA * mad) : 99;
            if (z > 99)
                z = 99;
            if (fabs(d) < need || z < OUTLIER_Z)
                continue;
            sop__v_push(a->outl, outlier(a, i, fi, md, d, z));
            if (z > a->score[i])
                a->score[i] = z;
        }
    }
}

/* The figures rank `lab` stands out on, into st's "figures". */
static void straggler_figures(const analysis *a, sop_value *st, const char *lab)
{
    sop_value *sf = sop__v_arr_at(st, "figures");
    for (const sop_value *o = a->outl->child; o; o = o->next) {
        const char *rk = sop__v_get_str(o, "rank");
        if (rk && strcmp(rk, lab) == 0)
            sop__v_push(sf, sop__v_str(sop__v_get_str(o, "figure")));
    }
}

/* Collective wait decides first (a hang, the rank the others wait for, or balanced:
 * merge_wait.c); its straggler gets its outlier figures and findings. True when it decided. */
static bool decide_by_wait(analysis *a)
{
    size_t n = a->n;
    sop_wait_rank *wr = n ? calloc(n, sizeof *wr) : NULL;
    char(*labs)[320] = n ? calloc(n, sizeof *labs) : NULL;
    bool decided = false;
    if (wr && labs) {
        for (size_t i = 0; i < n; i++) {
            label_of(&a->r[i], labs[i], sizeof labs[i]);
            wr[i] = (sop_wait_rank){labs[i], a->r[i].node, a->r[i].rank, a->r[i].pid,
                                    sop__v_get(a->r[i].report, "figures")};
        }
        decided = sop__merge_wait(a->job, wr, n, a->world, a->lang, a->problem);
    }
    sop_value *cst = (sop_value *)sop__v_get(a->job, "straggler");
    for (size_t i = 0; cst && labs && i < n; i++) {
        if (strcmp(labs[i], sop__v_get_str(cst, "rank")) != 0)
            continue;
        straggler_figures(a, cst, labs[i]);
        sop__v_set(cst, "findings",
                   explaining(&a->r[i], a->rows, a->nrows, n, -1, true, 8, a->lang));
        break;
    }
    free(wr);
    free(labs);
    return decided;
}

/* Else the straggler: the outlier with the largest score that has a serious finding of its
 * own. */
static void decide_by_outliers(analysis *a)
{
    long best = -1;
    sop_value *best_findings = NULL;
    for (size_t i = 0; a->score && i < a->n; i++) {
        if (a->score[i] <= 0)
            continue;
        sop_value *ex = explaining(&a->r[i], a->rows, a->nrows, a->n, -1, true, 8, a->lang);
        if (ex && ex->count > 0 && (best < 0 || a->score[i] > a->score[best])) {
            sop__v_free(best_findings);
            best_findings = ex;
            best = (long)i;
        } else {
            sop__v_free(ex);
        }
    }
    if (best < 0)
        return;
    const mrank *s = &a->r[best];
    char lab[320];
    label_of(s, lab, sizeof lab);
    sop_value *st = sop__v_obj_at(a->job, "straggler");
    sop__v_set(st, "rank", sop__v_str(lab));
    if (s->rank >= 0)
        sop__v_set_int(st, "rank_number", s->rank);
    sop__v_set_str(st, "node", s->node);
    sop__v_set_str(st, "pod", s->pod);
    sop__v_set_str(st, "container", s->container);
    if (s->pid > 0)
        sop__v_set_int(st, "pid", (int64_t)s->pid);
    straggler_figures(a, st, lab);
    sop__v_set(st, "findings", best_findings);
    *a->problem = true;
}

/* ranks: each rank's identity, figures and finding ids */
static void put_ranks(const analysis *a)
{
    sop_value *ranks = sop__v_arr_at(a->job, "ranks");
    for (size_t i = 0; i < a->n; i++) {
        const mrank *ri = &a->r[i];
        sop_value *o = sop__v_obj();
        char lab[320];
        label_of(ri, lab, sizeof lab);
        sop__v_set(o, "rank", sop__v_str(lab));
        if (ri->local_rank >= 0)
            sop__v_set_int(o, "local_rank", ri->local_rank);
        sop__v_set_str(o, "node", ri->node);
        sop__v_set_str(o, "pod", ri->pod);
        sop__v_set_str(o, "container", ri->container);
        if (ri->pid > 0)
            sop__v_set_int(o, "pid", (int64_t)ri->pid);
        sop__v_set(o, "source", sop__v_str(ri->source));
        sop_value *fo = sop__v_obj_at(o, "figures");
        for (size_t fi = 0; fi < NFIG; fi++)
            if (ri->has[fi])
                sop__v_set_dbl(fo, FIGS[fi].key, ri->fig[fi]);
        sop_value *fl = sop__v_arr_at(o, "findings");
        const sop_value *fs = sop__v_get(ri->report, "findings");
        for (const sop_value *f = fs ? fs->child : NULL; f; f = f->next) {
            const char *id = sop__v_get_str(f, "id");
            if (id)
                sop__v_push(fl, sop__v_str(id));
        }
        sop__v_push(ranks, o);
    }
}

/* missing: what the caller listed, then the ranks below the world size no report holds */
static void put_missing(analysis *a)
{
    sop_value *miss = sop__v_arr_at(a->job, "missing");
    for (const sop_value *c = a->m->missing->child; c; c = c->next) {
        sop_value *e = sop__v_obj();
        sop__v_set(e, "node", sop__v_str(sop__v_get_str(c, "node")));
        sop__v_set(e, "reason", sop__v_str(sop__v_get_str(c, "reason")));
        sop__v_push(miss, e);
    }
    long world = a->world;
    if (world > 0 && world <= 1 << 20) {
        bool *seen = calloc((size_t)world, sizeof *seen);
        for (size_t i = 0; seen && i < a->n; i++)
            if (a->r[i].rank >= 0 && a->r[i].rank < world)
                seen[a->r[i].rank] = true;
        for (long k = 0; seen && k < world; k++) {
            if (seen[k])
                continue;
            long j = k;
            while (j + 1 < world && !seen[j + 1])
                j++;
            sop_value *e = sop__v_obj();
            char buf[64];
            if (j > k)
                snprintf(buf, sizeof buf, "%ld-%ld", k, j);
            else
                snprintf(buf, sizeof buf, "%ld", k);
            sop__v_set(e, "ranks", sop__v_str(buf));
            sop__v_set(e, "reason",
                       sop__v_str(strcmp(a->lang, "zh") == 0
                                      ? "没有这些 rank 的报告（world size 之内）"
                                      : "no report for these ranks of the world size"));
            sop__v_push(miss, e);
            k = j;
        }
        free(seen);
    }
    if (miss->count)
        *a->problem = true;
}

/* versions (the sop versions merged, the reports excluded) and notes (mixed world sizes or
 * jobs) */
static void put_versions(analysis *a)
{
    sop_value *ver = sop__v_obj_at(a->job, "versions");
    sop_value *seen = sop__v_arr_at(ver, "seen");
    for (size_t i = 0; i < a->n; i++) {
        const char *v = a->r[i].version ? a->r[i].version : "?";
        sop_value *hit = NULL;
        for (sop_value *c = seen->child; c; c = c->next)
            if (strcmp(sop__v_get_str(c, "sop_version"), v) == 0)
                hit = c;
        if (!hit) {
            hit = sop__v_obj();
            sop__v_set(hit, "sop_version", sop__v_str(v));
            sop__v_set_int(hit, "schema", 1);
            sop__v_set(hit, "reports", sop__v_num(0));
            sop__v_push(seen, hit);
        }
        for (sop_value *c = hit->child; c; c = c->next)
            if (strcmp(c->key, "reports") == 0)
                c->num += 1;
    }
    sop_value *exc = sop__v_arr_at(ver, "excluded");
    for (const sop_value *c = a->m->excluded->child; c; c = c->next) {
        sop_value *e = sop__v_obj();
        sop__v_set(e, "source", sop__v_str(sop__v_get_str(c, "source")));
        double sc = 0;
        if (sop__v_get_num(c, "schema", &sc))
            sop__v_set(e, "schema", sop__v_num(sc));
        sop__v_set_str(e, "sop_version", sop__v_get_str(c, "sop_version"));
        sop__v_push(exc, e);
    }
    sop__v_set_bool(ver, "mismatched", seen->count > 1 || exc->count > 0);
    if (a->world_mixed || a->jobs->count > 1) {
        bool zh = strcmp(a->lang, "zh") == 0;
        sop_value *notes = sop__v_arr_at(a->job, "notes");
        if (a->world_mixed)
            sop__v_push(notes, sop__v_str(zh ? "各报告的 world size 不一致"
                                             : "the reports disagree on the world size"));
        if (a->jobs->count > 1)
            sop__v_push(notes, sop__v_str(zh ? "报告来自不同的作业"
                                             : "the reports come from more than one job"));
    }
}

sop_value *sop__merge_analyse(const sop_merge *m, const char *lang, bool *problem)
{
    analysis a = {.m = m, .lang = lang, .problem = problem, .n = m->n};
    size_t n = m->n;
    a.r = n ? malloc(n * sizeof *a.r) : NULL;
    if (n && !a.r)
        return NULL;
    if (n) {
        memcpy(a.r, m->r, n * sizeof *a.r);
        qsort(a.r, n, sizeof *a.r, cmp_rank); /* never qsort(NULL, 0): UB (fuzz_merge) */
    }
    *problem = false;
    a.job = sop__v_obj();
    sop__v_set_int(a.job, "schema", 1);
    sop__v_set_str(a.job, "kind", "job");
    sop__v_set_str(a.job, "sop_version", SOP_VERSION_STRING);
    put_identity(&a);
    gather_rule_rows(&a);
    put_rules(&a);
    double *vals = n ? malloc(n * sizeof *vals) : NULL;
    a.score = n ? calloc(n, sizeof *a.score) : NULL;
    put_figures(&a, vals);
    free(vals);
    if (!decide_by_wait(&a))
        decide_by_outliers(&a);
    free(a.score);
    put_ranks(&a);
    put_missing(&a);
    put_versions(&a);
    for (size_t k = 0; k < a.nrows; k++)
        free(a.rows[k].on);
    free(a.rows);
    free(a.r);
    return a.job;
}
