/* api.c — the public entry points of libsop (include/sop.h): engine lifecycle, loading rules,
 * thresholds, evidence in and out, evaluation and rendering. Thin: the work is in rules.c,
 * collect.c and report.c. Depends on libc. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_int.h"
#include "bridge/schema.h"
#include "clock.h"
#include "collect.h"
#include "engine.h"
#include "escape.h"
#include "evidence_doc.h"
#include "evidence_reads.h"
#include "format.h"
#include "json.h"
#include "merge.h"
#include "missing.h"
#include "procfs.h"
#include "render.h"
#include "rules.h"
#include "rules_doc.h"

#define RULES_FILE_MAX (4u << 20)
#define EVIDENCE_FILE_MAX (64u << 20)

static void clear_error(sop_engine *e)
{
    e->err[0] = '\0';
}

int sop_engine_new(sop_engine **out)
{
    if (!out)
        return SOP_EINVAL;
    *out = NULL;
    sop_engine *e = calloc(1, sizeof *e);
    if (!e)
        return SOP_ENOMEM;
    int rc = sop__rules_new(&e->rules);
    if (rc != 0) {
        free(e);
        return rc;
    }
    *out = e;
    return SOP_OK;
}

static void source_free(sop_source *s)
{
    free(s->name);
    free(s->src);
    free(s->dir);
    memset(s, 0, sizeof *s);
}

/* Copy name/src/dir into *s (replacing it). Returns 0 or SOP_ENOMEM (s unchanged). */
static int source_set(sop_source *s, const char *name, const char *src, size_t len, const char *dir)
{
    sop_source n = {strdup(name), malloc(len + 1), len, dir ? strdup(dir) : NULL};
    if (!n.name || !n.src || (dir && !n.dir)) {
        source_free(&n);
        return SOP_ENOMEM;
    }
    memcpy(n.src, src, len);
    n.src[len] = '\0';
    source_free(s);
    *s = n;
    return 0;
}

void sop_engine_free(sop_engine *e)
{
    if (!e)
        return;
    sop__rules_free(e->rules);
    source_free(&e->pack);
    source_free(&e->site);
    free(e);
}

const char *sop_last_error(const sop_engine *e)
{
    return e ? e->err : "";
}

/* Load e->pack with `site` over it (NULL: none). */
static int apply(sop_engine *e, const sop_source *site)
{
    e->loaded = false;
    int rc = sop__rules_load_site(e->rules, e->pack.name, e->pack.src, e->pack.len, e->pack.dir,
                                  sop__embedded_modules, site ? site->name : NULL,
                                  site ? site->src : NULL, site ? site->len : 0,
                                  site ? site->dir : NULL, e->err, sizeof e->err);
    if (rc == 0)
        e->loaded = true;
    return rc;
}

static int load(sop_engine *e, const char *chunkname, const char *src, size_t len,
                const char *search_dir, const sop_rules_module *modules)
{
    (void)modules;
    clear_error(e);
    e->loaded = false;
    int rc = source_set(&e->pack, chunkname, src, len, search_dir);
    if (rc != 0)
        return sop__fail(e, rc, "out of memory");
    return apply(e, e->site.src ? &e->site : NULL);
}

/* Apply a new site file (src NULL: remove it); on failure restore the previous state. */
static int load_site(sop_engine *e, const char *chunkname, const char *src, size_t len,
                     const char *dir)
{
    clear_error(e);
    if (!e->loaded)
        return sop__fail(e, SOP_ENORULES, "a site file needs a rule pack loaded first");
    sop_source next = {0};
    if (src && source_set(&next, chunkname, src, len, dir) != 0)
        return sop__fail(e, SOP_ENOMEM, "out of memory");
    int rc = apply(e, src ? &next : NULL);
    if (rc != 0) {
        char why[sizeof e->err];
        snprintf(why, sizeof why, "%s", e->err);
        apply(e, e->site.src ? &e->site : NULL);
        source_free(&next);
        return sop__fail(e, rc, "%s", why);
    }
    source_free(&e->site);
    e->site = next;
    return 0;
}

int sop_load_site_string(sop_engine *e, const char *chunkname, const char *source, size_t len)
{
    if (!e || !source)
        return SOP_EINVAL;
    return load_site(e, chunkname ? chunkname : "site", source, len, NULL);
}

/* Read a rule or site file, refusing (as root) one another user could have written. */
static int read_rules_file(sop_engine *e, const char *path, char **src, size_t *len)
{
    /* O_NONBLOCK: a FIFO must not block the open; only a regular file is read */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return sop__fail(e, SOP_ERULES, "%s: %s", path, sop__strerror(errno));
    struct stat st;
    char why[200];
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        return sop__fail(e, SOP_ERULES, "%s: not a regular file", path);
    }
    if (fstat(fd, &st) != 0 || sop__rules_file_trusted(&st, why, sizeof why) != 0) {
        close(fd);
        return sop__fail(e, SOP_ERULES, "%s: %s", path, why);
    }
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    /* read what was checked (the same open file), not the path again */
    int rc = sop__read_file_at(AT_FDCWD, self, RULES_FILE_MAX, src, len);
    if (rc == -ENOENT) /* no /proc: fall back to the path */
        rc = sop__read_file_at(AT_FDCWD, path, RULES_FILE_MAX, src, len);
    close(fd);
    if (rc != 0)
        return sop__fail(e, SOP_ERULES, "%s: %s", path, sop__strerror(-rc));
    if (*len >= RULES_FILE_MAX) {
        free(*src);
        *src = NULL;
        return sop__fail(e, SOP_ERULES, "%s: larger than %u bytes", path, RULES_FILE_MAX);
    }
    return 0;
}

/* The directory of `path` into dir ("." when it has none); returns its file name part. */
static const char *split_path(const char *path, char *dir, size_t dirlen)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dirlen, ".");
        return path;
    }
    snprintf(dir, dirlen, "%.*s", (int)(slash - path), path);
    return slash + 1;
}

int sop_load_site_file(sop_engine *e, const char *path)
{
    if (!e)
        return SOP_EINVAL;
    if (!path)
        return load_site(e, NULL, NULL, 0, NULL);
    clear_error(e);
    char *src = NULL;
    size_t len = 0;
    int rc = read_rules_file(e, path, &src, &len);
    if (rc != 0)
        return rc;
    char dir[PATH_MAX];
    const char *name = split_path(path, dir, sizeof dir);
    rc = load_site(e, name, src, len, dir);
    free(src);
    return rc;
}

int sop_load_rules_string(sop_engine *e, const char *chunkname, const char *source, size_t len)
{
    if (!e || !source)
        return SOP_EINVAL;
    return load(e, chunkname ? chunkname : "rules", source, len, NULL, sop__embedded_modules);
}

int sop_load_rules_default(sop_engine *e)
{
    if (!e)
        return SOP_EINVAL;
    const char *src = NULL;
    for (const sop_rules_module *m = sop__embedded_modules; m->name; m++)
        if (strcmp(m->name, "rules") == 0)
            src = m->source;
    if (!src)
        return sop__fail(e, SOP_ERULES, "no embedded rule pack in this build");
    return load(e, "rules.lua", src, strlen(src), NULL, sop__embedded_modules);
}

int sop_load_rules_file(sop_engine *e, const char *path)
{
    if (!e || !path)
        return SOP_EINVAL;
    clear_error(e);
    char *src = NULL;
    size_t len = 0;
    int rc = read_rules_file(e, path, &src, &len);
    if (rc != 0)
        return rc;
    /* Plugins are looked up next to the file; the embedded pack fills in what is not there. */
    char dir[PATH_MAX];
    const char *name = split_path(path, dir, sizeof dir);
    rc = load(e, name, src, len, dir, sop__embedded_modules);
    free(src);
    return rc;
}

size_t sop_rule_count(const sop_engine *e)
{
    return e && e->loaded ? sop__rules_count(e->rules) : 0;
}

const char *sop_rule_id(const sop_engine *e, size_t i)
{
    return e && e->loaded ? sop__rules_id(e->rules, i) : NULL;
}

int sop_rules_doc(sop_engine *e, sop_format fmt, char **out)
{
    if (!e || !out)
        return SOP_EINVAL;
    *out = NULL;
    clear_error(e);
    if (!e->loaded)
        return sop__fail(e, SOP_ENORULES, "no rules loaded");
    sop_value *d = NULL;
    int rc = sop__rules_describe(e->rules, &d);
    if (rc != 0)
        return sop__fail(e, rc, "cannot describe the rules: %s", sop_strerror(rc));
    *out = fmt == SOP_FORMAT_JSON ? sop__json_print(d, 1)
                                  : sop__rules_doc_md(d, e->pack.name, e->pack.src, e->pack.len);
    sop__v_free(d);
    return *out ? 0 : sop__fail(e, SOP_ENOMEM, "out of memory");
}

int sop_set_threshold(sop_engine *e, const char *key, const char *value)
{
    if (!e || !key || !value)
        return SOP_EINVAL;
    clear_error(e);
    return sop__rules_set_threshold(e->rules, key, value, e->err, sizeof e->err);
}

void sop_clear_thresholds(sop_engine *e)
{
    if (e)
        sop__rules_clear_thresholds(e->rules);
}

void sop_collect_opts_init(sop_collect_opts *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->duration_s = 1.0;
    opts->rate_hz = 100;
    opts->python = 1;
    opts->children = 1;
    opts->kernel_log = 1;
    opts->probes = SOP_PROBE_ALL;
}

int sop_collect(sop_engine *e, int pid, const sop_collect_opts *opts, sop_evidence **out)
{
    if (!out || pid <= 0)
        return sop__fail(e, SOP_EINVAL, "invalid pid %d", pid);
    *out = NULL;
    sop_collect_opts defaults;
    if (!opts) {
        sop_collect_opts_init(&defaults);
        opts = &defaults;
    }
    if (!(opts->duration_s >= 0 && opts->duration_s <= 3600))
        return sop__fail(e, SOP_EINVAL, "duration must be between 0 and 3600 s");
    if (!(opts->rate_hz >= 0 && opts->rate_hz <= SOP_RATE_MAX_HZ)) /* NaN and inf too */
        return sop__fail(e, SOP_EINVAL, "rate must be between 0 and 10000 Hz");
    if (e)
        clear_error(e);
    char err[512] = "";
    sop_value *tree = NULL;
    char *pictures = NULL;
    int rc = sop__collect(pid, opts, &tree, &pictures, err, sizeof err);
    if (rc != 0)
        return sop__fail(e, rc, "%s", err[0] ? err : sop_strerror(rc));
    sop_evidence *ev = calloc(1, sizeof *ev);
    if (!ev) {
        sop__v_free(tree);
        free(pictures);
        return sop__fail(e, SOP_ENOMEM, "out of memory");
    }
    ev->tree = tree;
    ev->pictures_html = pictures;
    *out = ev;
    return SOP_OK;
}

int sop_collect_self(sop_engine *e, const sop_collect_opts *opts, sop_evidence **out)
{
    return sop_collect(e, (int)getpid(), opts, out);
}

static const char *type_name(const sop_value *v)
{
    static const char *const names[] = {
        [SOP_V_NULL] = "null",    [SOP_V_BOOL] = "a boolean", [SOP_V_NUM] = "a number",
        [SOP_V_STR] = "a string", [SOP_V_ARR] = "an array",   [SOP_V_OBJ] = "an object"};
    return names[v->type];
}

/* The keys `sopctl evidence` writes at the top level, with the types the schema gives them
 * (sop__evidence_top_type: a group's object or array, a top-level row): a file where one has
 * another type is not evidence (a rule would read nonsense and clear); neither is an element of
 * a group's array (threads[], children[], ...) that is not an object. Other keys pass. */
static int check_evidence_types(const sop_value *tree, char *why, size_t whylen)
{
    static const sop_vtype as_value[] = {
        [SOP_EVK_INT] = SOP_V_NUM, [SOP_EVK_NUM] = SOP_V_NUM,   [SOP_EVK_TEXT] = SOP_V_STR,
        [SOP_EVK_STR] = SOP_V_STR, [SOP_EVK_BOOL] = SOP_V_BOOL, [SOP_EVK_OBJ] = SOP_V_OBJ,
        [SOP_EVK_ARR] = SOP_V_ARR,
    };
    for (const sop_value *v = tree->child; v; v = v->next) {
        bool group = false;
        int t = v->key ? sop__evidence_top_type(v->key, &group) : -1;
        if (t < 0 || v->type == SOP_V_NULL)
            continue;
        sop_value want = {.type = as_value[t]};
        if (v->type != want.type) {
            snprintf(why, whylen, "key '%s' is %s, expected %s", v->key, type_name(v),
                     type_name(&want));
            return -1;
        }
        size_t k = 0;
        for (const sop_value *e = group && v->type == SOP_V_ARR ? v->child : NULL; e;
             e = e->next, k++) {
            if (e->type != SOP_V_OBJ) {
                snprintf(why, whylen, "key '%s[%zu]' is %s, expected an object", v->key, k,
                         type_name(e));
                return -1;
            }
        }
    }
    return 0;
}

int sop_evidence_from_json(sop_engine *e, const char *text, size_t len, sop_evidence **out)
{
    if (!out || !text)
        return sop__fail(e, SOP_EINVAL, "no evidence text");
    *out = NULL;
    if (e)
        clear_error(e);
    if (len > EVIDENCE_FILE_MAX)
        return sop__fail(e, SOP_EFORMAT, "evidence larger than %u bytes", EVIDENCE_FILE_MAX);
    char err[160] = "";
    sop_value *tree = sop__json_parse(text, len, err, sizeof err);
    if (!tree)
        return sop__fail(e, SOP_EFORMAT, "not sop evidence: %s", err);
    double schema = 0, pid = 0;
    char why[200];
    if (tree->type == SOP_V_OBJ && check_evidence_types(tree, why, sizeof why) != 0) {
        sop__v_free(tree);
        return sop__fail(e, SOP_EFORMAT, "not sop evidence: %s", why);
    }
    if (tree->type != SOP_V_OBJ || !sop__v_get_num(tree, SOP_EVKEY("schema"), &schema) ||
        !sop__v_get_num(tree, SOP_EVKEY("pid"), &pid) || !sop__v_get(tree, SOP_EVKEY("host"))) {
        sop__v_free(tree);
        return sop__fail(e, SOP_EFORMAT,
                         "not sop evidence: expected an object with schema, pid and host "
                         "(as written by `sopctl evidence`)");
    }
    if (schema != 1) {
        sop__v_free(tree);
        return sop__fail(e, SOP_EFORMAT, "evidence schema %g is not supported (this is 1)", schema);
    }
    if (!(pid >= 1 && pid <= 2147483647.0) || pid != floor(pid)) { /* a pid, as Linux has them */
        sop__v_free(tree);
        return sop__fail(e, SOP_EFORMAT, "not sop evidence: pid %.17g is not a process id", pid);
    }
    sop_evidence *ev = calloc(1, sizeof *ev);
    if (!ev) {
        sop__v_free(tree);
        return sop__fail(e, SOP_ENOMEM, "out of memory");
    }
    ev->tree = tree;
    *out = ev;
    return SOP_OK;
}

int sop_evidence_to_json(const sop_evidence *ev, int pretty, char **out)
{
    if (!ev || !out)
        return SOP_EINVAL;
    *out = sop__json_print(ev->tree, pretty);
    return *out ? SOP_OK : SOP_ENOMEM;
}

void sop_evidence_free(sop_evidence *ev)
{
    if (!ev)
        return;
    sop__v_free(ev->tree);
    free(ev->pictures_html);
    free(ev);
}

int sop_evaluate(sop_engine *e, const sop_evidence *ev, sop_report **out)
{
    if (!e || !ev || !out)
        return SOP_EINVAL;
    *out = NULL;
    clear_error(e);
    if (!e->loaded)
        return sop__fail(e, SOP_ENORULES, "no rules loaded");
    double t0 = sop__now_ms();
    sop_value *verdicts = NULL;
    int rc = sop__rules_run(e->rules, ev->tree, &verdicts, e->err, sizeof e->err);
    if (rc != 0)
        return rc;
    sop_report *r = calloc(1, sizeof *r);
    if (!r) {
        sop__v_free(verdicts);
        return sop__fail(e, SOP_ENOMEM, "out of memory");
    }
    r->tree = sop__report_build(verdicts, ev->tree, sop__now_ms() - t0, &r->problem);
    if (!r->tree) {
        free(r);
        return sop__fail(e, SOP_ENOMEM, "out of memory");
    }
    *out = r;
    return SOP_OK;
}

void sop_report_free(sop_report *r)
{
    if (!r)
        return;
    sop__v_free(r->tree);
    free(r);
}

int sop_report_render_with(const sop_report *r, const sop_evidence *ev, sop_format fmt,
                           const char *lang, char **out)
{
    const sop_format_row *row = sop__format_row(fmt);
    if (!r || !out || !row || !row->report)
        return SOP_EINVAL;
    if (lang && strcmp(lang, "en") != 0 && strcmp(lang, "zh") != 0)
        return SOP_EINVAL;
    *out = row->report(r->tree, ev, lang ? lang : "en");
    return *out ? SOP_OK : SOP_ENOMEM;
}

int sop_report_render(const sop_report *r, sop_format fmt, const char *lang, char **out)
{
    return sop_report_render_with(r, NULL, fmt, lang, out);
}

int sop_merge_render(const sop_merge *m, sop_format fmt, const char *lang, char **out, int *problem)
{
    const sop_format_row *row = sop__format_row(fmt);
    if (!m || !out || !row || !row->merge)
        return SOP_EINVAL;
    if (!lang || strcmp(lang, "zh") != 0)
        lang = "en";
    bool prob = false;
    sop_value *job = sop__merge_analyse(m, lang, &prob);
    if (!job)
        return SOP_ENOMEM;
    char *s = row->merge(job, lang);
    sop__v_free(job);
    if (!s)
        return SOP_ENOMEM;
    *out = s;
    if (problem)
        *problem = prob;
    return SOP_OK;
}

int sop_report_render_html(const sop_report *r, const sop_evidence *ev, const char *lang,
                           char **out)
{
    return sop_report_render_with(r, ev, SOP_FORMAT_HTML,
                                  lang && strcmp(lang, "zh") == 0 ? "zh" : "en", out);
}

int sop_report_has_problem(const sop_report *r)
{
    return r && r->problem ? 1 : 0;
}

int sop_report_finding(const sop_report *r, size_t i, const char **id, const char **severity)
{
    const sop_value *f = r ? sop__v_get(r->tree, "findings") : NULL;
    const sop_value *c = f && f->type == SOP_V_ARR ? f->child : NULL;
    for (; c && i > 0; i--)
        c = c->next;
    if (!c)
        return SOP_EINVAL;
    const char *cid = sop__v_get_str(c, "id"), *sev = sop__v_get_str(c, "severity");
    if (id)
        *id = cid ? cid : "";
    if (severity)
        *severity = sev ? sev : "";
    return SOP_OK;
}

int sop_diagnose(sop_engine *e, int pid, const sop_collect_opts *opts, sop_format fmt,
                 const char *lang, char **out, int *problem)
{
    if (!e || !out || pid < 0)
        return sop__fail(e, SOP_EINVAL, "invalid argument");
    *out = NULL;
    if (problem)
        *problem = 0;
    if (!e->loaded)
        return sop__fail(e, SOP_ENORULES, "no rules loaded");
    const sop_format_row *row = sop__format_row(fmt);
    if (!row || !row->report)
        return sop__fail(e, SOP_EINVAL, "not a report format");
    sop_collect_opts with;
    if (row->info.flags & SOP_FORMAT_PICTURES) { /* the page draws the window */
        if (opts)
            with = *opts;
        else
            sop_collect_opts_init(&with);
        with.flags |= SOP_COLLECT_PICTURES;
        opts = &with;
    }
    sop_evidence *ev = NULL;
    sop_report *r = NULL;
    int rc = sop_collect(e, pid ? pid : (int)getpid(), opts, &ev);
    if (rc == 0)
        rc = sop_evaluate(e, ev, &r);
    if (rc == 0) {
        rc = sop_report_render_with(r, ev, fmt, lang, out);
        if (rc != 0)
            sop__fail(e, rc, "cannot render the report in this format/language");
        else if (problem)
            *problem = sop_report_has_problem(r);
    }
    sop_report_free(r);
    sop_evidence_free(ev);
    return rc;
}

/* A text field of a finding: a string, or {en = ..., zh = ...} (falls back to en). */
static const char *text_in(const sop_value *obj, const char *key, const char *lang)
{
    const sop_value *v = sop__v_get(obj, key);
    if (!v)
        return NULL;
    if (v->type == SOP_V_STR)
        return v->str;
    const char *s = sop__v_get_str(v, lang);
    return s ? s : sop__v_get_str(v, "en");
}

/* Append s to buf (of cap, used *n) through the terminal escaper (escape.c: C0/C1, bidi
 * controls and invalid UTF-8 spelled out); when full, cut before a UTF-8 character. */
static void put_escaped(char *buf, size_t cap, size_t *n, const char *s)
{
    sop_sb e = {0};
    sop__esc_text(&e, s);
    char *t = sop__sb_take(&e);
    size_t len = t ? strlen(t) : 0, room = cap > *n + 1 ? cap - 1 - *n : 0;
    if (len > room) {
        len = room;
        while (len > 0 && ((unsigned char)t[len] & 0xc0) == 0x80)
            len--;
    }
    if (len)
        memcpy(buf + *n, t, len);
    *n += len;
    buf[*n] = '\0';
    free(t);
}

int sop_report_summary(const sop_report *r, const char *lang, char **out)
{
    if (!r || !out)
        return SOP_EINVAL;
    *out = NULL;
    if (!lang)
        lang = "en";
    const sop_value *findings = sop__v_get(r->tree, "findings");
    const sop_value *cleared = sop__v_get(r->tree, "cleared");
    const sop_value *unknown = sop__v_get(r->tree, "unknown");
    size_t nf = findings ? findings->count : 0;
    enum { CAP = 1024 };
    char *buf = malloc(CAP);
    if (!buf)
        return SOP_ENOMEM;
    size_t n = 0;
    buf[0] = '\0';
    if (nf == 0) {
        snprintf(buf, CAP, "no findings (%zu cleared, %zu unknown)", cleared ? cleared->count : 0,
                 unknown ? unknown->count : 0);
        *out = buf;
        return SOP_OK;
    }
    n = (size_t)snprintf(buf, CAP, "%zu finding%s: ", nf, nf == 1 ? "" : "s");
    size_t i = 0;
    for (const sop_value *f = findings->child; f && i < 16 && n + 80 < CAP; f = f->next, i++) {
        if (i)
            put_escaped(buf, CAP, &n, ", ");
        put_escaped(buf, CAP, &n, sop__v_get_str(f, "id"));
        put_escaped(buf, CAP, &n, " (");
        put_escaped(buf, CAP, &n, sop__v_get_str(f, "severity"));
        put_escaped(buf, CAP, &n, ")");
    }
    if (i < nf)
        put_escaped(buf, CAP, &n, ", ...");
    put_escaped(buf, CAP, &n, " | top: ");
    put_escaped(buf, CAP, &n, text_in(findings->child, "evidence", lang));
    *out = buf;
    return SOP_OK;
}
