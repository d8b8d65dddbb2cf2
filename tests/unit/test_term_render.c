/* test_term_render.c — the display-width helper (ASCII 1, CJK and fullwidth 2, combining 0,
 * broken UTF-8 one column per byte) and the terminal layout of engine/render/report_term.c: every
 * line within the width at 20..200 columns with CJK and long words, target controls escaped,
 * colour codes only when asked, cleared checks counted unless `all`. */
#include "dwidth.h"
#include "engine.h"
#include "render.h"
#include "t.h"
#include "value.h"

static size_t max_line_width(const char *s, size_t *lines)
{
    size_t best = 0;
    *lines = 0;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        size_t w = sop__display_width(s, n);
        if (w > best)
            best = w;
        (*lines)++;
        s += n + (e ? 1 : 0);
    }
    return best;
}

static sop_value *finding(const char *id, const char *sev, const char *symptom, const char *ev)
{
    sop_value *f = sop__v_obj();
    sop__v_set_str(f, "id", id);
    sop__v_set_str(f, "section", "6.1");
    sop__v_set_str(f, "severity", sev);
    sop__v_set_str(f, "symptom", symptom);
    sop__v_set_str(f, "evidence", ev);
    sop__v_set_str(f, "cause", "cause");
    sop__v_set_str(f, "fix", "fix");
    sop__v_set_str(f, "verify", "verify");
    return f;
}

int main(void)
{
    CHECK_EQ_I(sop__display_width("abc", 3), 3);
    CHECK_EQ_I(sop__display_width("数据加载", strlen("数据加载")), 8);
    CHECK_EQ_I(sop__display_width("ｱＡ", strlen("ｱＡ")),
               3);                                     /* halfwidth katakana 1, fullwidth A 2 */
    CHECK_EQ_I(sop__display_width("e\xcc\x81", 3), 1); /* e + combining acute */
    CHECK_EQ_I(sop__display_width("\xff\xfe", 2), 2);  /* not UTF-8: a column a byte */
    CHECK_EQ_I(sop__display_width("\xe6\x95", 2), 2);  /* cut sequence */

    sop_value *r = sop__v_obj();
    sop_value *t = sop__v_obj_at(r, "target");
    sop__v_set_int(t, "pid", 42);
    sop__v_set_str(t, "comm", "py\x1b[31mthon");
    sop_value *fs = sop__v_arr_at(r, "findings");
    sop__v_push(fs, finding("dataloader.starved", "high",
                            "训练循环在等数据：主线程 80% 的样本在等 DataLoader 的下一个批次",
                            "main thread waits 80% of samples in _MultiProcessingDataLoaderIter."
                            "_next_data /a/very/long/path/that/does/not/fit/on/any/line/of/a/"
                            "narrow/terminal/at/all/really.py and then some words \x07 end"));
    sop__v_push(fs, finding("summary.verdict", "info", "IO-bound（随机读）", "disk 97% busy"));
    sop_value *cl = sop__v_arr_at(r, "cleared");
    sop_value *c = sop__v_obj();
    sop__v_set_str(c, "id", "cpu.pegged");
    sop__v_set_str(c, "note", "no thread pegged");
    sop__v_push(cl, c);
    sop__v_arr_at(r, "unknown");

    for (int width = 20; width <= 200; width += 30) {
        char *out = sop__report_render_term(r, "zh", width, false, false);
        CHECK(out != NULL);
        if (!out)
            continue;
        size_t lines = 0, w = max_line_width(out, &lines);
        if (w > (size_t)width)
            fprintf(stderr, "width %d: a line of %zu columns\n%s", width, w, out);
        CHECK(w <= (size_t)width);
        CHECK(strchr(out, '\x1b') == NULL); /* the target's ESC is escaped, no colour asked */
        CHECK(strchr(out, '\x07') == NULL);
        CHECK(width < 50 || strstr(out, "\\x1b[31m") != NULL);
        CHECK(strstr(out, "结论: IO-bound") == out + strcspn(out, "\n") + 2 ||
              strstr(out, "结论: IO-bound") != NULL);
        CHECK(strstr(out, "cpu.pegged") == NULL);
        free(out);
    }
    char *out = sop__report_render_term(r, "en", 80, true, true);
    CHECK(out && strstr(out, "\033[1;31mHIGH\033[0m") != NULL);
    CHECK(out && strstr(out, "cpu.pegged") != NULL);
    /* the verdict before the list, the list before the details */
    const char *v = out ? strstr(out, "Verdict:") : NULL,
               *l = out ? strstr(out, "  \033[1;31mHIGH") : NULL;
    CHECK(v && l && v < l);
    free(out);
    sop__v_free(r);
    return t_done();
}
