/* report_term.c — the report as a person at a terminal reads it: the §9 verdict and a one-line
 * list of findings first, then each finding's details wrapped to the terminal's width (display
 * width, so CJK text fits), then cleared/unknown checks as counts (or listed, with `all`);
 * severity in colour when asked. Target text is escaped before it is measured, so only our
 * own escape sequences reach the terminal. Depends on value, strbuf, dwidth. */
#include <stdlib.h>
#include <string.h>

#include "dwidth.h"
#include "engine.h"
#include "escape.h"
#include "render.h"
#include "report_writers.h"
#include "strbuf.h"

typedef struct {
    sop_sb *b;
    bool color;
    size_t width;
    const char *lang;
} term;

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"

static const char *sev_color(const char *sev)
{
    if (sev && strcmp(sev, "high") == 0)
        return "\033[1;31m";
    if (sev && strcmp(sev, "warn") == 0)
        return "\033[1;33m";
    return "\033[36m";
}

static void on(term *t, const char *code)
{
    if (t->color)
        sop__sb_puts(t->b, code);
}

static void off(term *t)
{
    if (t->color)
        sop__sb_puts(t->b, C_RESET);
}

/* A text field: a string or {en, zh}; escaped into a fresh buffer (caller frees). */
static char *field(const sop_value *obj, const char *key, const char *lang)
{
    const sop_value *v = sop__v_get(obj, key);
    const char *s = NULL;
    if (v && v->type == SOP_V_STR)
        s = v->str;
    else if (v && v->type == SOP_V_OBJ) {
        s = sop__v_get_str(v, lang);
        if (!s)
            s = sop__v_get_str(v, "en");
    }
    sop_sb tmp = {0};
    sop__sb_put_escaped(&tmp, s ? s : "", false);
    return sop__sb_take(&tmp);
}

static void spaces(sop_sb *b, size_t n)
{
    while (n--)
        sop__sb_putn(b, " ", 1);
}

/* Append s (printable) from column col, wrapping at t->width; continuation lines start at
 * column indent. Breaks at spaces and around wide characters; a word longer than a line is
 * cut. Returns the column after the text (no newline written). */
static size_t put_wrapped(term *t, const char *s, size_t col, size_t indent)
{
    size_t len = strlen(s), width = t->width > indent + 8 ? t->width : indent + 8;
    bool pending_space = false;
    size_t line_start = col; /* nothing written on this line yet while col == line_start */
    for (size_t i = 0; i < len;) {
        if (s[i] == ' ') {
            /* a leading space: one space after what the caller wrote, unless a line breaks */
            pending_space = col > line_start || (i == 0 && col > indent);
            i++;
            continue;
        }
        /* one unit: a run of narrow non-space characters, or a single wide one */
        size_t j = i, w = 0;
        while (j < len && s[j] != ' ') {
            uint32_t cp;
            size_t nx = sop__utf8_next(s, len, j, &cp);
            int cw = sop__cp_width(cp);
            if (cw == 2) {
                if (j == i) {
                    j = nx;
                    w = 2;
                }
                break;
            }
            w += (size_t)cw;
            j = nx;
        }
        size_t need = w + (pending_space ? 1 : 0);
        if (col + need > width && col > indent) {
            sop__sb_puts(t->b, "\n");
            spaces(t->b, indent);
            col = line_start = indent;
            pending_space = false;
        }
        if (pending_space) {
            sop__sb_putn(t->b, " ", 1);
            col++;
            pending_space = false;
        }
        /* a unit wider than the room left is cut character by character */
        for (size_t k = i; k < j;) {
            uint32_t cp;
            size_t nx = sop__utf8_next(s, len, k, &cp);
            size_t cw = (size_t)sop__cp_width(cp);
            if (col + cw > width && col > indent) {
                sop__sb_puts(t->b, "\n");
                spaces(t->b, indent);
                col = line_start = indent;
            }
            sop__sb_putn(t->b, s + k, nx - k);
            col += cw;
            k = nx;
        }
        i = j;
    }
    return col;
}

/* Cut s to at most max columns, with "…" when cut. */
static void put_cut(term *t, const char *s, size_t max)
{
    size_t len = strlen(s);
    if (sop__display_width(s, len) <= max) {
        sop__sb_puts(t->b, s);
        return;
    }
    size_t col = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t nx = sop__utf8_next(s, len, i, &cp);
        size_t cw = (size_t)sop__cp_width(cp);
        if (col + cw + 1 > max)
            break;
        sop__sb_putn(t->b, s + i, nx - i);
        col += cw;
        i = nx;
    }
    sop__sb_puts(t->b, "…");
}

static void upper(char *dst, const char *sev, size_t cap)
{
    size_t i = 0;
    for (; sev && sev[i] && i + 1 < cap; i++)
        dst[i] = (char)(sev[i] >= 'a' && sev[i] <= 'z' ? sev[i] - 32 : sev[i]);
    dst[i] = '\0';
}

static char *id_section(const sop_value *f)
{
    sop_sb tmp = {0};
    const char *id = sop__v_get_str(f, "id");
    const char *sec = sop__v_get_str(f, "section");
    sop__sb_put_escaped(&tmp, id ? id : "?", false);
    if (sec) {
        sop__sb_puts(&tmp, " §");
        sop__sb_put_escaped(&tmp, sec, false);
    }
    return sop__sb_take(&tmp);
}

static bool is_verdict(const sop_value *f)
{
    const char *id = sop__v_get_str(f, "id");
    return id && strcmp(id, "summary.verdict") == 0;
}

typedef struct {
    const char *report, *verdict, *findings, *none, *no_verdict, *evidence, *cause, *fix, *verify,
        *refs, *cleared, *unknown, *rule_errors, *missing, *hint;
} tlabels;

static const tlabels TEN = {"sop report",
                            "Verdict",
                            "Findings",
                            "No warn or high finding.",
                            "(no verdict: see the unknown checks)",
                            "evidence",
                            "cause",
                            "fix",
                            "verify",
                            "refs",
                            "cleared",
                            "unknown",
                            "rule errors",
                            "missing evidence",
                            "--all lists them"};
static const tlabels TZH = {"sop 诊断报告",
                            "结论",
                            "发现",
                            "没有 warn 或 high 级别的发现。",
                            "（没有结论：见无法判断的检查）",
                            "证据",
                            "根因",
                            "修复",
                            "验证",
                            "参考",
                            "已排除",
                            "无法判断",
                            "规则错误",
                            "缺失的证据",
                            "--all 列出全部"};

/* A dim line under the header: s escaped, cut to the width. */
static void dim_line(term *t, const char *s)
{
    sop_sb tmp = {0};
    sop__sb_put_escaped(&tmp, s, false);
    char *c = sop__sb_take(&tmp);
    if (c) {
        on(t, C_DIM);
        sop__sb_puts(t->b, "  ");
        put_cut(t, c, t->width > 4 ? t->width - 2 : 2);
        off(t);
        sop__sb_puts(t->b, "\n");
    }
    free(c);
}

static void put_header(term *t, const sop_value *r, const tlabels *L)
{
    sop_report_target tg;
    sop__report_target(r, &tg);
    sop_sb h = {0};
    sop__sb_printf(&h, "%s: pid %.0f", L->report, tg.pid);
    if (tg.comm) {
        sop__sb_puts(&h, " (");
        sop__sb_put_escaped(&h, tg.comm, false);
        sop__sb_puts(&h, ")");
    }
    if (tg.exited)
        sop__sb_puts(&h, " [exited]");
    if (tg.python) {
        sop__sb_puts(&h, " — Python ");
        sop__sb_put_escaped(&h, tg.python, false);
    }
    char *head = sop__sb_take(&h);
    on(t, C_BOLD);
    put_cut(t, head ? head : "", t->width);
    off(t);
    free(head);
    sop__sb_puts(t->b, "\n");
    if (tg.cmdline)
        dim_line(t, tg.cmdline);
    if (tg.where)
        dim_line(t, tg.where);
    sop__report_target_free(&tg);
    sop__sb_puts(t->b, "\n");
}

static void put_verdict(term *t, const sop_value *findings, const tlabels *L)
{
    const sop_value *v = NULL;
    for (const sop_value *c = findings ? findings->child : NULL; c; c = c->next)
        if (is_verdict(c))
            v = c;
    on(t, C_BOLD);
    sop__sb_printf(t->b, "%s: ", L->verdict);
    size_t col = sop__display_width(L->verdict, strlen(L->verdict)) + 2;
    off(t);
    if (!v) {
        put_wrapped(t, L->no_verdict, col, 2);
        sop__sb_puts(t->b, "\n");
        return;
    }
    char *sym = field(v, "symptom", t->lang), *evid = field(v, "evidence", t->lang);
    on(t, C_BOLD);
    col = put_wrapped(t, sym ? sym : "", col, 2);
    off(t);
    if (evid && *evid) {
        sop__sb_puts(t->b, " —");
        sop_sb tmp = {0};
        sop__sb_printf(&tmp, " %s", evid);
        char *e = sop__sb_take(&tmp);
        put_wrapped(t, e ? e : "", col + 2, 2);
        free(e);
    }
    sop__sb_puts(t->b, "\n");
    free(sym);
    free(evid);
}

/* One line per finding (the verdict excepted): "  WARN  id §s  symptom", cut to the width. */
static void put_list(term *t, const sop_value *findings, const tlabels *L)
{
    size_t n = 0;
    for (const sop_value *c = findings ? findings->child : NULL; c; c = c->next)
        n += !is_verdict(c);
    if (n == 0)
        return;
    sop__sb_printf(t->b, "\n%s (%zu):\n", L->findings, n);
    for (const sop_value *c = findings->child; c; c = c->next) {
        if (is_verdict(c))
            continue;
        char sev[8];
        upper(sev, sop__v_get_str(c, "severity"), sizeof sev);
        char *ids = id_section(c), *sym = field(c, "symptom", t->lang);
        sop__sb_puts(t->b, "  ");
        on(t, sev_color(sop__v_get_str(c, "severity")));
        sop__sb_printf(t->b, "%-4s", sev);
        off(t);
        sop__sb_puts(t->b, "  ");
        size_t used = 2 + 4 + 2;
        if (ids) {
            size_t w = sop__display_width(ids, strlen(ids));
            put_cut(t, ids, t->width - used);
            used += w < t->width - used ? w : t->width - used;
        }
        if (used + 2 + 4 <= t->width) {
            sop__sb_puts(t->b, "  ");
            used += 2;
            put_cut(t, sym ? sym : "", t->width - used);
        }
        sop__sb_puts(t->b, "\n");
        free(ids);
        free(sym);
    }
}

static void put_details(term *t, const sop_value *findings, const tlabels *L)
{
    for (const sop_value *c = findings ? findings->child : NULL; c; c = c->next) {
        const char *sevs = sop__v_get_str(c, "severity");
        char sev[8];
        upper(sev, sevs, sizeof sev);
        char *ids = id_section(c), *sym = field(c, "symptom", t->lang);
        sop__sb_puts(t->b, "\n");
        on(t, sev_color(sevs));
        sop__sb_printf(t->b, "%s", sev);
        off(t);
        sop__sb_puts(t->b, " ");
        on(t, C_BOLD);
        size_t col = put_wrapped(t, ids ? ids : "", strlen(sev) + 1, 4);
        off(t);
        sop__sb_puts(t->b, ":");
        sop_sb spaced = {0};
        sop__sb_printf(&spaced, " %s", sym ? sym : "");
        char *sp = sop__sb_take(&spaced);
        put_wrapped(t, sp ? sp : "", col + 1, 4);
        free(sp);
        sop__sb_puts(t->b, "\n");
        free(ids);
        free(sym);
        const char *keys[] = {"evidence", "cause", "fix", "verify"};
        const char *names[] = {L->evidence, L->cause, L->fix, L->verify};
        for (int i = 0; i < 4; i++) {
            char *v = field(c, keys[i], t->lang);
            if (v && *v) {
                sop__sb_puts(t->b, "  ");
                on(t, C_DIM);
                sop__sb_printf(t->b, "%s:", names[i]);
                off(t);
                sop__sb_puts(t->b, " ");
                put_wrapped(t, v, 2 + sop__display_width(names[i], strlen(names[i])) + 2, 4);
                sop__sb_puts(t->b, "\n");
            }
            free(v);
        }
        const sop_value *refs = sop__v_get(c, "refs");
        for (const sop_value *r = refs ? refs->child : NULL; r; r = r->next) {
            if (r->type != SOP_V_STR)
                continue;
            sop__sb_puts(t->b, "  ");
            on(t, C_DIM);
            sop__sb_printf(t->b, "%s:", L->refs);
            off(t);
            sop__sb_puts(t->b, " ");
            sop_sb tmp = {0};
            sop__sb_put_escaped(&tmp, r->str, false);
            char *u = sop__sb_take(&tmp);
            sop__sb_puts(t->b, u ? u : ""); /* a URL stays whole, so it stays clickable */
            free(u);
            sop__sb_puts(t->b, "\n");
        }
    }
}

static void put_rest(term *t, const sop_value *r, const tlabels *L, bool all)
{
    static const struct {
        const char *key, *field;
    } lists[] = {{"cleared", "note"}, {"unknown", "reason"}, {"rule_errors", "message"}};
    const char *names[] = {L->cleared, L->unknown, L->rule_errors};
    const sop_value *missing = sop__v_get(r, "missing_evidence");
    sop__sb_puts(t->b, "\n");
    bool any = false, hidden = false;
    sop_sb line = {0};
    for (int i = 0; i < 3; i++) {
        const sop_value *arr = sop__v_get(r, lists[i].key);
        size_t n = arr ? arr->count : 0;
        if (n == 0 && i == 2)
            continue;
        sop__sb_printf(&line, "%s%zu %s", any ? ", " : "", n, names[i]);
        any = true;
        hidden |= n > 0 && !all;
    }
    if (missing && missing->count) {
        sop__sb_printf(&line, ", %zu %s", missing->count, L->missing);
        hidden |= !all;
    }
    if (hidden)
        sop__sb_printf(&line, " (%s)", L->hint);
    char *counts = sop__sb_take(&line);
    put_wrapped(t, counts ? counts : "", 0, 2);
    free(counts);
    sop__sb_puts(t->b, "\n");
    if (all) {
        for (int i = 0; i < 3; i++) {
            const sop_value *arr = sop__v_get(r, lists[i].key);
            if (!arr || arr->count == 0)
                continue;
            sop__sb_printf(t->b, "\n%s:\n", names[i]);
            for (const sop_value *c = arr->child; c; c = c->next) {
                char *ids = id_section(c), *v = field(c, lists[i].field, t->lang);
                sop__sb_printf(t->b, "  - %s: ", ids ? ids : "");
                put_wrapped(t, v ? v : "", 6 + (ids ? sop__display_width(ids, strlen(ids)) : 0), 6);
                sop__sb_puts(t->b, "\n");
                free(ids);
                free(v);
            }
        }
        if (missing && missing->count) {
            sop__sb_printf(t->b, "\n%s:\n", L->missing);
            for (const sop_value *c = missing->child; c; c = c->next) {
                char *p = field(c, "probe", t->lang), *why = field(c, "reason", t->lang);
                sop__sb_printf(t->b, "  - %s: ", p ? p : "");
                put_wrapped(t, why ? why : "", 6 + (p ? sop__display_width(p, strlen(p)) : 0), 6);
                sop__sb_puts(t->b, "\n");
                free(p);
                free(why);
            }
        }
    }
    const sop_value *timing = sop__v_get(r, "timing_ms");
    double cms = 0, rms = 0;
    bool has_c = sop__v_get_num(timing, "collect", &cms);
    sop__v_get_num(timing, "rules", &rms);
    on(t, C_DIM);
    if (has_c)
        sop__sb_printf(t->b, "collect %.1f ms, ", cms);
    sop__sb_printf(t->b, "rules %.1f ms", rms);
    off(t);
    sop__sb_puts(t->b, "\n");
}

char *sop__report_render_term(const sop_value *r, const char *lang, int width, bool color, bool all)
{
    sop_sb b = {0};
    term t = {&b, color,
              (size_t)(width < 20     ? 20
                       : width > 1000 ? 1000
                                      : width),
              lang && strcmp(lang, "zh") == 0 ? "zh" : "en"};
    const tlabels *L = strcmp(t.lang, "zh") == 0 ? &TZH : &TEN;
    const sop_value *f = sop__v_get(r, "findings");
    put_header(&t, r, L);
    put_verdict(&t, f, L);
    bool problem = false;
    for (const sop_value *c = f ? f->child : NULL; c; c = c->next) {
        const char *sev = sop__v_get_str(c, "severity");
        problem |= sev && (strcmp(sev, "high") == 0 || strcmp(sev, "warn") == 0);
    }
    if (!problem)
        sop__sb_printf(&b, "%s\n", L->none);
    put_list(&t, f, L);
    put_details(&t, f, L);
    put_rest(&t, r, L, all);
    return sop__sb_take(&b);
}

int sop_report_render_term(const sop_report *r, const char *lang, int width_cols, unsigned flags,
                           char **out)
{
    if (!r || !out)
        return SOP_EINVAL;
    *out = sop__report_render_term(r->tree, lang ? lang : "en", width_cols,
                                   (flags & SOP_TERM_COLOR) != 0, (flags & SOP_TERM_ALL) != 0);
    return *out ? SOP_OK : SOP_ENOMEM;
}
