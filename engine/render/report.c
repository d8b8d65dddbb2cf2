/* report.c — the report: built from the rules' verdicts and the evidence (findings sorted most
 * severe first, missing evidence, timing), then rendered as the playbook's section-10 Markdown
 * table, JSON (docs/contract.md) or plain text, in English or Chinese. Depends on value, json,
 * strbuf; every string from the target, the evidence or a rule goes through escape.h. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "escape.h"
#include "evidence_reads.h"
#include "json.h"
#include "rank_identity.h"
#include "render.h"
#include "report_writers.h"
#include "severity.h"
#include "strbuf.h"

/* ---- building ---------------------------------------------------------------------------- */

static sop_value *copy(const sop_value *v)
{
    if (!v)
        return NULL;
    sop_value *c = NULL;
    switch (v->type) {
    case SOP_V_NULL:
        return sop__v_null();
    case SOP_V_BOOL:
        return sop__v_bool(v->b);
    case SOP_V_NUM:
        return sop__v_num(v->num);
    case SOP_V_STR:
        return sop__v_str(v->str);
    case SOP_V_ARR:
        c = sop__v_arr();
        break;
    case SOP_V_OBJ:
        c = sop__v_obj();
        break;
    }
    for (const sop_value *k = v->child; c && k; k = k->next) {
        if (v->type == SOP_V_OBJ)
            sop__v_set(c, k->key, copy(k));
        else
            sop__v_push(c, copy(k));
    }
    return c;
}

/* Move member `key` of `from` (if any) into `to`, or an empty array. */
static void take_array(sop_value *to, sop_value *from, const char *key)
{
    sop_value *prev = NULL;
    for (sop_value *c = from ? from->child : NULL; c; prev = c, c = c->next) {
        if (c->key && strcmp(c->key, key) == 0 && c->type == SOP_V_ARR) {
            if (prev)
                prev->next = c->next;
            else
                from->child = c->next;
            if (from->last == c)
                from->last = prev;
            from->count--;
            c->next = NULL;
            sop__v_set(to, key, c);
            return;
        }
    }
    sop__v_set(to, key, sop__v_arr());
}

sop_value *sop__report_build(sop_value *verdicts, const sop_value *ev, double rules_ms,
                             bool *problem)
{
    sop_value *r = sop__v_obj();
    if (!r) {
        sop__v_free(verdicts);
        return NULL;
    }
    sop__v_set_int(r, "schema", 1);
    sop__v_set_str(r, "sop_version", SOP_VERSION_STRING);
    sop_value *target = sop__v_obj_at(r, "target");
    double pid = 0;
    if (sop__v_get_num(ev, SOP_EVKEY("pid"), &pid) && pid >= 0 && pid <= 2147483647.0)
        sop__v_set_int(target, "pid", (int64_t)pid); /* (the loader refuses any other) */
    const sop_value *proc = sop__v_get(ev, SOP_EVKEY("proc"));
    const char *comm = sop__v_get_str(proc, SOP_EVKEY("proc.comm"));
    const char *cmdline = sop__v_get_str(proc, SOP_EVKEY("proc.cmdline"));
    if (!proc) { /* post-mortem: the kill record names it */
        const sop_value *kills = sop__v_path(ev, SOP_EVPATH("host.oom_kills"));
        for (const sop_value *k = kills ? kills->child : NULL; k; k = k->next) {
            double kp = 0;
            if (sop__v_get_num(k, SOP_EVKEY("host.oom_kills[].pid"), &kp) && kp == pid)
                comm = sop__v_get_str(k, SOP_EVKEY("host.oom_kills[].comm"));
        }
    }
    if (comm)
        sop__v_set_str(target, "comm", comm);
    if (cmdline)
        sop__v_set_str(target, "cmdline", cmdline);
    const char *pyver =
        sop__v_get_str(sop__v_get(ev, SOP_EVKEY("python")), SOP_EVKEY("python.version"));
    if (pyver)
        sop__v_set_str(target, "python", pyver);
    const sop_value *alive = sop__v_get(ev, SOP_EVKEY("alive"));
    if (alive && alive->type == SOP_V_BOOL)
        sop__v_set_bool(target, "alive", alive->b);
    /* engine/bridge/rank_identity.c; merged by engine/merge/merge.c */
    const sop_value *rank = sop__v_get(ev, SOP_EVKEY("rank"));
    for (const sop_value *k = rank ? rank->child : NULL; k; k = k->next)
        if (k->key && strcmp(k->key, SOP_EVKEY("rank.source")) != 0)
            sop__v_set(target, k->key, copy(k));

    /* engine/collect/container_identity.c */
    const sop_value *ct = sop__v_get(ev, SOP_EVKEY("container"));
    if (ct && ct->type == SOP_V_OBJ) {
        sop_value *o = sop__v_obj_at(target, "container");
        static const char *const keys[] = {"runtime", "id",        "name",
                                           "pod",     "namespace", "container"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            sop__v_set_str(o, keys[i], sop__v_get_str(ct, keys[i]));
    }

    take_array(r, verdicts, "findings");
    sop__sort_by_severity((sop_value *)sop__v_get(r, "findings"));
    take_array(r, verdicts, "cleared");
    take_array(r, verdicts, "unknown");
    take_array(r, verdicts, "rule_errors");
    const sop_value *missing = sop__v_get(ev, SOP_EVKEY("missing"));
    sop__v_set(r, "missing_evidence", missing ? copy(missing) : sop__v_arr());
    sop_value *timing = sop__v_obj_at(r, "timing_ms");
    double collect_ms = 0;
    if (sop__v_get_num(ev, SOP_EVKEY("collect_ms"), &collect_ms))
        sop__v_set_dbl(timing, "collect", collect_ms);
    sop__v_set_dbl(timing, "rules", rules_ms);
    sop__v_set(r, "figures", sop__rank_figures(ev));
    const sop_value *th = sop__v_get(verdicts, "thresholds");
    if (th)
        sop__v_set(r, "thresholds", copy(th));
    const sop_value *explains = sop__v_get(verdicts, "explains"); /* the pack's explains{} */
    if (explains)
        sop__v_set(r, "explains", copy(explains));
    sop__v_free(verdicts);

    *problem = false;
    const sop_value *f = sop__v_get(r, "findings");
    for (const sop_value *c = f ? f->child : NULL; c; c = c->next)
        if (sop__severity_rank(sop__v_get_str(c, "severity")) < 2)
            *problem = true;
    return r;
}

/* ---- rendering --------------------------------------------------------------------------- */

/* A text field is a string or {en = ..., zh = ...}; pick lang, then en, then anything. */
static const char *text_of(const sop_value *v, const char *lang)
{
    if (!v)
        return "";
    if (v->type == SOP_V_STR)
        return v->str;
    if (v->type != SOP_V_OBJ)
        return "";
    const char *s = sop__v_get_str(v, lang);
    if (!s)
        s = sop__v_get_str(v, "en");
    for (const sop_value *c = v->child; !s && c; c = c->next)
        if (c->type == SOP_V_STR)
            s = c->str;
    return s ? s : "";
}

static bool is_text_object(const sop_value *v)
{
    if (!v || v->type != SOP_V_OBJ || v->count == 0)
        return false;
    for (const sop_value *c = v->child; c; c = c->next)
        if (c->type != SOP_V_STR || !c->key || (strcmp(c->key, "en") && strcmp(c->key, "zh")))
            return false;
    return true;
}

/* Copy of the tree with every bilingual text resolved to lang. */
static sop_value *resolve(const sop_value *v, const char *lang)
{
    if (is_text_object(v))
        return sop__v_str(text_of(v, lang));
    if (v->type != SOP_V_ARR && v->type != SOP_V_OBJ)
        return copy(v);
    sop_value *c = v->type == SOP_V_OBJ ? sop__v_obj() : sop__v_arr();
    for (const sop_value *k = v->child; c && k; k = k->next) {
        if (v->type == SOP_V_OBJ)
            sop__v_set(c, k->key, resolve(k, lang));
        else
            sop__v_push(c, resolve(k, lang));
    }
    return c;
}

typedef struct {
    const char *title, *symptom, *evidence, *cause, *fix, *verify, *refs, *cleared, *unknown,
        *rule_errors, *missing, *none, *severity;
} labels;

static const labels EN = {"sop report",
                          "symptom",
                          "evidence",
                          "cause",
                          "fix",
                          "verify",
                          "refs",
                          "Cleared checks",
                          "Unknown (evidence missing)",
                          "Rule errors",
                          "Missing evidence",
                          "No warn or high finding.",
                          "severity"};
static const labels ZH = {"sop 诊断报告", "症状",       "证据（具体数字）",
                          "根因",         "修复",       "验证方法",
                          "参考",         "已排除",     "无法判断（缺少证据）",
                          "规则错误",     "缺失的证据", "没有 warn 或 high 级别的发现。",
                          "级别"};

/* One string in the output format: Markdown inline text or terminal text. */
static void put_str(sop_sb *b, const char *s, bool md)
{
    if (md)
        sop__esc_md(b, s);
    else
        sop__esc_text(b, s);
}

static void put_field(sop_sb *b, const sop_value *obj, const char *key, const char *lang, bool md)
{
    put_str(b, text_of(sop__v_get(obj, key), lang), md);
}

static void put_refs(sop_sb *b, const sop_value *finding, const char *sep, bool md)
{
    const sop_value *refs = sop__v_get(finding, "refs");
    int i = 0;
    for (const sop_value *c = refs ? refs->child : NULL; c; c = c->next) {
        if (c->type != SOP_V_STR)
            continue;
        if (i++)
            sop__sb_puts(b, sep);
        put_str(b, c->str, md);
    }
}

static char *container_line(const sop_report_target *t)
{
    if (!t->in_container)
        return NULL;
    sop_sb b = {0};
    sop__sb_printf(&b, "container %s (%s%s%.12s)", t->ct_name ? t->ct_name : "?",
                   t->ct_runtime ? t->ct_runtime : "", t->ct_runtime && t->ct_id ? " " : "",
                   t->ct_id ? t->ct_id : "");
    if (t->pod)
        sop__sb_printf(&b, " — pod %s%s%s%s%s", t->ns ? t->ns : "", t->ns ? "/" : "", t->pod,
                       t->ct_container ? ", container " : "",
                       t->ct_container ? t->ct_container : "");
    return sop__sb_take(&b);
}

void sop__report_target(const sop_value *report, sop_report_target *out)
{
    const sop_value *t = sop__v_get(report, "target");
    memset(out, 0, sizeof *out);
    out->has_pid = sop__v_get_num(t, "pid", &out->pid);
    out->comm = sop__v_get_str(t, "comm");
    out->cmdline = sop__v_get_str(t, "cmdline");
    out->python = sop__v_get_str(t, "python");
    const sop_value *alive = sop__v_get(t, "alive");
    out->exited = alive && alive->type == SOP_V_BOOL && !alive->b;
    const sop_value *ct = sop__v_get(t, "container");
    out->in_container = ct != NULL;
    out->ct_name = sop__v_get_str(ct, "name");
    out->ct_id = sop__v_get_str(ct, "id");
    out->ct_runtime = sop__v_get_str(ct, "runtime");
    out->pod = sop__v_get_str(ct, "pod");
    out->ns = sop__v_get_str(ct, "namespace");
    out->ct_container = sop__v_get_str(ct, "container");
    out->where = container_line(out);
}

void sop__report_target_free(sop_report_target *t)
{
    free(t->where);
    t->where = NULL;
}

static void put_header(sop_sb *b, const sop_value *r, const labels *L, bool md)
{
    sop_report_target t;
    sop__report_target(r, &t);
    sop__sb_printf(b, "%s%s: pid %.0f", md ? "# " : "", L->title, t.pid);
    if (t.comm) {
        sop__sb_puts(b, " (");
        put_str(b, t.comm, md);
        sop__sb_puts(b, ")");
    }
    if (t.exited)
        sop__sb_puts(b, " [exited]");
    sop__sb_puts(b, "\n");
    if (t.cmdline) {
        if (md) {
            sop__sb_puts(b, "\n");
            sop__esc_md_code(b, t.cmdline);
        } else {
            sop__sb_puts(b, "  ");
            sop__esc_text(b, t.cmdline);
        }
    }
    if (t.python) {
        sop__sb_printf(b, "%sPython ", t.cmdline ? " — " : (md ? "\n" : "  "));
        put_str(b, t.python, md);
    }
    if (t.cmdline || t.python)
        sop__sb_puts(b, "\n");
    if (t.where) {
        sop__sb_puts(b, md ? "\n" : "  ");
        put_str(b, t.where, md);
        sop__sb_puts(b, "\n");
    }
    sop__report_target_free(&t);
    sop__sb_puts(b, "\n");
}

/* "id §section": in Markdown one code span, as text escaped text. */
static void put_id_section(sop_sb *b, const sop_value *v, bool md)
{
    const char *id = sop__v_get_str(v, "id");
    const char *sec = sop__v_get_str(v, "section");
    sop_sb raw = {0};
    sop__sb_puts(&raw, id ? id : "?");
    if (sec) {
        sop__sb_puts(&raw, " §");
        sop__sb_puts(&raw, sec);
    }
    char *s = sop__sb_take(&raw);
    if (md)
        sop__esc_md_code(b, s ? s : "?");
    else
        sop__esc_text(b, s ? s : "?");
    free(s);
}

static void put_lists(sop_sb *b, const sop_value *r, const labels *L, const char *lang, bool md)
{
    static const struct {
        const char *key, *field;
    } lists[] = {{"cleared", "note"}, {"unknown", "reason"}, {"rule_errors", "message"}};
    const char *titles[] = {L->cleared, L->unknown, L->rule_errors};
    for (int i = 0; i < 3; i++) {
        const sop_value *arr = sop__v_get(r, lists[i].key);
        if (!arr || arr->count == 0)
            continue;
        sop__sb_printf(b, "%s%s\n", md ? "\n## " : "\n", titles[i]);
        if (md)
            sop__sb_puts(b, "\n");
        for (const sop_value *c = arr->child; c; c = c->next) {
            sop__sb_puts(b, md ? "- " : "  - ");
            put_id_section(b, c, md);
            const char *where = sop__v_get_str(c, "where");
            if (where) {
                sop__sb_puts(b, " (");
                put_str(b, where, md);
                sop__sb_puts(b, ")");
            }
            sop__sb_puts(b, ": ");
            put_field(b, c, lists[i].field, lang, md);
            sop__sb_puts(b, "\n");
        }
    }
    const sop_value *missing = sop__v_get(r, "missing_evidence");
    if (missing && missing->count) {
        sop__sb_printf(b, "%s%s\n", md ? "\n## " : "\n", L->missing);
        if (md)
            sop__sb_puts(b, "\n");
        for (const sop_value *c = missing->child; c; c = c->next) {
            sop__sb_puts(b, md ? "- " : "  - ");
            put_field(b, c, "probe", lang, md);
            sop__sb_puts(b, ": ");
            put_field(b, c, "reason", lang, md);
            sop__sb_puts(b, "\n");
        }
    }
    const sop_value *timing = sop__v_get(r, "timing_ms");
    double cms = 0, rms = 0;
    bool has_c = sop__v_get_num(timing, "collect", &cms);
    sop__v_get_num(timing, "rules", &rms);
    sop__sb_puts(b, "\n");
    if (has_c)
        sop__sb_printf(b, "collect %.1f ms, ", cms);
    sop__sb_printf(b, "rules %.1f ms\n", rms);
}

char *sop__report_md(const sop_value *r, const sop_evidence *ev, const char *lang)
{
    (void)ev;
    const labels *L = strcmp(lang, "zh") == 0 ? &ZH : &EN;
    sop_sb b = {0};
    put_header(&b, r, L, true);
    const sop_value *f = sop__v_get(r, "findings");
    if (!f || f->count == 0) {
        sop__sb_printf(&b, "%s\n", L->none);
    } else {
        sop__sb_printf(&b, "| %s | %s | %s | %s | %s | %s |\n|---|---|---|---|---|---|\n",
                       L->symptom, L->evidence, L->cause, L->fix, L->verify, L->refs);
        for (const sop_value *c = f->child; c; c = c->next) {
            sop__sb_puts(&b, "| **");
            put_field(&b, c, "severity", lang, true);
            sop__sb_puts(&b, "** ");
            put_id_section(&b, c, true);
            sop__sb_puts(&b, " ");
            put_field(&b, c, "symptom", lang, true);
            static const char *cols[] = {"evidence", "cause", "fix", "verify"};
            for (int i = 0; i < 4; i++) {
                sop__sb_puts(&b, " | ");
                put_field(&b, c, cols[i], lang, true);
            }
            sop__sb_puts(&b, " | ");
            put_refs(&b, c, "<br>", true);
            sop__sb_puts(&b, " |\n");
        }
    }
    put_lists(&b, r, L, lang, true);
    return sop__sb_take(&b);
}

char *sop__report_text(const sop_value *r, const sop_evidence *ev, const char *lang)
{
    (void)ev;
    const labels *L = strcmp(lang, "zh") == 0 ? &ZH : &EN;
    sop_sb b = {0};
    put_header(&b, r, L, false);
    const sop_value *f = sop__v_get(r, "findings");
    if (!f || f->count == 0)
        sop__sb_printf(&b, "%s\n", L->none);
    for (const sop_value *c = f ? f->child : NULL; c; c = c->next) {
        const char *sev = sop__v_get_str(c, "severity");
        sop__sb_puts(&b, "[");
        char up[16];
        size_t k = 0;
        for (const char *p = sev ? sev : "?"; *p && k + 1 < sizeof up; p++)
            up[k++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        up[k] = '\0';
        sop__esc_text(&b, up);
        sop__sb_puts(&b, "] ");
        put_id_section(&b, c, false);
        sop__sb_puts(&b, ": ");
        put_field(&b, c, "symptom", lang, false);
        sop__sb_puts(&b, "\n");
        const char *keys[] = {"evidence", "cause", "fix", "verify"};
        const char *names[] = {L->evidence, L->cause, L->fix, L->verify};
        for (int i = 0; i < 4; i++) {
            sop__sb_printf(&b, "    %s: ", names[i]);
            put_field(&b, c, keys[i], lang, false);
            sop__sb_puts(&b, "\n");
        }
        sop__sb_printf(&b, "    %s: ", L->refs);
        put_refs(&b, c, " ", false);
        sop__sb_puts(&b, "\n\n");
    }
    put_lists(&b, r, L, lang, false);
    return sop__sb_take(&b);
}

char *sop__report_json(const sop_value *report, const sop_evidence *ev, const char *lang)
{
    (void)ev;
    sop_value *resolved = resolve(report, lang);
    if (!resolved)
        return NULL;
    char *json = sop__json_print(resolved, 1); /* escaped there (sop__esc_json_text) */
    sop__v_free(resolved);
    return json;
}
