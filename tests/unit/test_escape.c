/* test_escape.c — one table of hostile strings (terminal escapes, CR/LF, C1 controls, invalid
 * and overlong UTF-8, Markdown links and images, HTML, backticks, pipes, XML markup) put in
 * every place a target's or an evidence file's string appears in a report (header comm,
 * cmdline and Python version; every finding field and ref; cleared, unknown, rule errors,
 * missing evidence), rendered as md, text and JSON; and in collapsed stacks and the SVG flame
 * graph (issue 13 item 3). Each output is compared with the same output made from a benign
 * string: no raw control byte, always valid UTF-8, the same number of lines, and (Markdown,
 * SVG) the same number of live markup characters. Depends on engine/render/escape.c, report.c,
 * json.c, flamegraph.c. */
#include <stdbool.h>

#include "api_int.h"
#include "engine.h"
#include "escape.h"
#include "json.h"
#include "picture_writers.h"
#include "sampler.h"
#include "strbuf.h"
#include "t.h"
#include "value.h"

static const char *const HOSTILE[] = {
    "\x1b[31mred\x1b[0m\x1b]0;title\x07",
    "cr\rlf\nnext line\r\n# fake heading",
    "tab\there\vvt\ffeed\bback",
    "del\x7f c1\xc2\x9b\x33\x31m \xc2\x85nel",
    "[click](https://evil.example/x)",
    "<img src=x onerror=alert(1)> <b>bold</b>",
    "`code` ``two`` ```three",
    "a|b||c",
    "*bold* _it_ ~~gone~~ !not",
    "&lt;script&gt; &amp; &#x1b;",
    "bad \xff\xfe utf8 \xc0\xaf overlong \xed\xa0\x80 surrogate \xf4\x90\x80\x80 big",
    "truncated \xe2\x82",
    /* bidi overrides/isolates, LRM/RLM, line/paragraph separators, zero-width, BOM */
    "rlo\xe2\x80\xae"
    "evil\xe2\x80\xac lri\xe2\x81\xa6x\xe2\x81\xa9 lrm\xe2\x80\x8e"
    "\xe2\x80\x8f ls\xe2\x80\xa8ps\xe2\x80\xa9 zw\xe2\x80\x8b bom\xef\xbb\xbf alm\xd8\x9c"
    "",
    "</text></svg><script>alert(1)</script>",
    "\"dq\" 'sq' \\ backslash \\` bt",
    "",
};

static int is_raw_control(const unsigned char *p, size_t left, bool json)
{
    if (*p == '\n')
        return 0;
    if (*p == '\t' && json)
        return 0; /* cJSON's own indentation */
    if (*p < 0x20 || *p == 0x7f)
        return 1;
    if (left >= 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
        return 1;
    size_t n = sop__utf8_seq(p, left);
    unsigned cp = n == 3   ? (p[0] & 0x0fu) << 12 | (p[1] & 0x3fu) << 6 | (p[2] & 0x3fu)
                  : n == 2 ? (p[0] & 0x1fu) << 6 | (p[1] & 0x3fu)
                           : 0;
    return cp && sop__is_format_control(cp); /* bidi and other format controls */
}

/* -1 when s is clean; else the offset of the first raw control or invalid UTF-8 byte. */
static long first_bad(const char *s, bool json)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        if (is_raw_control(p, left, json))
            return (long)((const char *)p - s);
        size_t n = sop__utf8_seq(p, left);
        if (!n)
            return (long)((const char *)p - s);
        p += n, left -= n;
    }
    return -1;
}

static size_t count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

/* Occurrences of c outside code spans and not escaped by a backslash (an odd run of
 * backslashes before it). A code span (a run of N backticks up to the next run of exactly N)
 * is literal text in Markdown; one left open counts as -1000 so the check fails. */
static long count_live(const char *s, char c)
{
    long n = 0;
    for (const char *p = s; *p; p++) {
        size_t bs = 0;
        for (const char *q = p; q > s && q[-1] == '\\'; q--)
            bs++;
        if (bs % 2)
            continue;
        if (*p == '`') {
            size_t fence = strspn(p, "`");
            const char *q = p + fence;
            for (;;) {
                q = strchr(q, '`');
                if (!q)
                    return -1000;
                size_t run = strspn(q, "`");
                if (run == fence)
                    break;
                q += run;
            }
            p = q + fence - 1;
            continue;
        }
        n += *p == c;
    }
    return n;
}

static sop_value *str(const char *s)
{
    return sop__v_str(s);
}

static sop_value *report_with(const char *s)
{
    sop_value *r = sop__v_obj();
    sop_value *t = sop__v_obj_at(r, "target");
    sop__v_set_int(t, "pid", 42);
    sop__v_set(t, "comm", str(s));
    sop__v_set(t, "cmdline", str(s));
    sop__v_set(t, "python", str(s));
    sop_value *f = sop__v_arr_at(r, "findings");
    sop_value *h = sop__v_obj();
    static const char *const fields[] = {"id",       "section", "severity", "symptom",
                                         "evidence", "cause",   "fix",      "verify"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        sop__v_set(h, fields[i], str(s));
    sop_value *refs = sop__v_arr_at(h, "refs");
    sop__v_push(refs, str(s));
    sop__v_push(refs, str(s));
    sop__v_push(f, h);
    static const struct {
        const char *list, *field;
    } lists[] = {{"cleared", "note"}, {"unknown", "reason"}, {"rule_errors", "message"}};
    for (size_t i = 0; i < 3; i++) {
        sop_value *e = sop__v_obj();
        sop__v_set(e, "id", str(s));
        sop__v_set(e, "section", str(s));
        sop__v_set(e, "where", str(s));
        sop__v_set(e, lists[i].field, str(s));
        sop__v_push(sop__v_arr_at(r, lists[i].list), e);
    }
    sop_value *m = sop__v_obj();
    sop__v_set(m, "probe", str(s));
    sop__v_set(m, "reason", str(s));
    sop__v_push(sop__v_arr_at(r, "missing_evidence"), m);
    return r;
}

/* A stack of two frames named s (';' is the format's own separator, never in a frame name:
 * the sampler's job) and one more. */
static void stack_of(const char *s, char *stack, size_t cap)
{
    snprintf(stack, cap, "%s;%s;mod.py:f", s, s);
    size_t n = strlen(s);
    for (size_t i = 0; i < 2 * n + 1 && stack[i]; i++)
        if (stack[i] == ';' && i != n && i != 2 * n + 1)
            stack[i] = ':';
}

static char *svg_of(const char *s)
{
    char stack[512];
    stack_of(s, stack, sizeof stack);
    sop_stack_count v[1] = {{stack, 3, {0}}};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sop__flamegraph_write(v, 1, s, SOP_FG_IDLE, f);
    fclose(f);
    return buf;
}

static char *collapsed_of(const char *s)
{
    char stack[512];
    stack_of(s, stack, sizeof stack);
    sop_sb b = {0};
    sop__esc_collapsed(&b, stack);
    sop__sb_puts(&b, " 3\n");
    return sop__sb_take(&b);
}

static void check_one(const char *what, const char *h, const char *benign, bool json)
{
    long bad = first_bad(h, json);
    if (bad >= 0)
        fprintf(stderr, "%s: raw control or invalid UTF-8 at byte %ld: ...%.40s\n", what, bad,
                h + bad);
    CHECK(bad < 0);
    if (count_char(h, '\n') != count_char(benign, '\n'))
        fprintf(stderr, "%s: %zu lines, %zu with a benign string\n", what, count_char(h, '\n'),
                count_char(benign, '\n'));
    CHECK_EQ_I(count_char(h, '\n'), count_char(benign, '\n'));
}

static void test_table(void)
{
    const char *benign = "x";
    sop_value *rb = report_with(benign);
    const sop_format fmts[] = {SOP_FORMAT_MD, SOP_FORMAT_TEXT, SOP_FORMAT_JSON};
    const char *names[] = {"md", "text", "json"};
    char *base[3];
    for (int k = 0; k < 3; k++)
        base[k] = sop__report_render(rb, fmts[k], "en");
    char *svg_b = svg_of(benign), *col_b = collapsed_of(benign);
    for (size_t i = 0; i < sizeof HOSTILE / sizeof *HOSTILE; i++) {
        const char *s = HOSTILE[i];
        sop_value *r = report_with(s);
        for (int k = 0; k < 3; k++) {
            char what[64];
            snprintf(what, sizeof what, "%s #%zu", names[k], i);
            char *out = sop__report_render(r, fmts[k], "en");
            CHECK(out != NULL);
            if (!out)
                continue;
            check_one(what, out, base[k], fmts[k] == SOP_FORMAT_JSON);
            if (fmts[k] == SOP_FORMAT_MD) {
                /* markup a hostile string could bring to life */
                static const char live[] = "|<>[]!*_&~#`";
                for (const char *c = live; *c; c++) {
                    if (count_live(out, *c) != count_live(base[k], *c)) {
                        fprintf(stderr, "%s: %ld live '%c', %ld with a benign string\n", what,
                                count_live(out, *c), *c, count_live(base[k], *c));
                        CHECK(0);
                    }
                }
            }
            if (fmts[k] == SOP_FORMAT_JSON) {
                char err[128] = "";
                sop_value *back = sop__json_parse(out, strlen(out), err, sizeof err);
                if (!back)
                    fprintf(stderr, "%s: not JSON: %s\n", what, err);
                CHECK(back != NULL);
                /* a valid-UTF-8 string comes back byte for byte */
                const char *comm = back ? sop__v_get_str(sop__v_get(back, "target"), "comm") : NULL;
                if (first_bad(s, false) < 0 || !strpbrk(s, "\xff\xfe\xc0\xed\xf4\xe2"))
                    if (!strpbrk(s, "\xff\xfe\xc0\xed\xf4\xe2"))
                        CHECK(comm && strcmp(comm, s) == 0);
                sop__v_free(back);
            }
            free(out);
        }
        char what[64];
        char *svg = svg_of(s);
        snprintf(what, sizeof what, "svg #%zu", i);
        check_one(what, svg, svg_b, false);
        CHECK_EQ_I(count_char(svg, '<'), count_char(svg_b, '<'));
        CHECK_EQ_I(count_char(svg, '>'), count_char(svg_b, '>'));
        free(svg);
        char *col = collapsed_of(s);
        snprintf(what, sizeof what, "collapsed #%zu", i);
        check_one(what, col, col_b, false);
        free(col);
        sop__v_free(r);
    }
    for (int k = 0; k < 3; k++)
        free(base[k]);
    free(svg_b);
    free(col_b);
    sop__v_free(rb);
}

/* The escapers one by one, on the cases that matter. */
static void test_units(void)
{
    sop_sb b = {0};
    sop__esc_md(&b, "[a](u) <img> `x` |");
    char *s = sop__sb_take(&b);
    CHECK_EQ_S(s, "\\[a\\](u) \\<img\\> \\`x\\` \\|");
    free(s);
    sop__esc_md_code(&b, "a `b` c");
    s = sop__sb_take(&b);
    CHECK_EQ_S(s, "``a `b` c``");
    free(s);
    sop__esc_text(&b, "\x1b\xff\xc2\x9b ok \xc3\xa9");
    s = sop__sb_take(&b);
    CHECK_EQ_S(s, "\\x1b\\xff\\u009b ok \xc3\xa9");
    free(s);
    char *j = sop__esc_json_text("\"a\xff\xc0\xaf b\xe2\x82\"");
    CHECK_EQ_S(j, "\"a\\ufffd\\ufffd\\ufffd b\\ufffd\\ufffd\"");
    free(j);
    sop__esc_text(&b, "a\xe2\x80\xae"
                      "b\xe2\x81\xa6"
                      "c\xe2\x80\xa8"
                      "d");
    s = sop__sb_take(&b);
    CHECK_EQ_S(s, "a\\u202eb\\u2066c\\u2028d");
    free(s);
    j = sop__esc_json_text("\"a\xe2\x80\xae"
                           "b\xef\xbb\xbf\"");
    CHECK_EQ_S(j, "\"a\\u202eb\\ufeff\"");
    free(j);
    CHECK(!sop__is_format_control(0x00e9) && sop__is_format_control(0x202e));
    CHECK_EQ_I(sop__utf8_seq((const unsigned char *)"\xed\xa0\x80", 3), 0);
    CHECK_EQ_I(sop__utf8_seq((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
}

int main(void)
{
    test_units();
    test_table();
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail != 0;
}
