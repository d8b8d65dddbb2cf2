/* html.c — the HTML page of `run --format html` and `record -o x.html`: one self-contained
 * file (inline style, inline SVG, no external script, font or image) whose report part (the
 * §9 verdict, the findings table, cleared/unknown lists) is plain HTML readable without
 * JavaScript. Every text from the target or the rules goes through escape.h. Depends on value,
 * dwidth, escape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwidth.h"
#include "engine.h"
#include "escape.h"
#include "evidence_reads.h"
#include "render.h"
#include "report_writers.h"

static const char *text_of(const sop_value *obj, const char *key, const char *lang)
{
    const sop_value *v = sop__v_get(obj, key);
    if (v && v->type == SOP_V_STR)
        return v->str;
    if (v && v->type == SOP_V_OBJ) {
        const char *s = sop__v_get_str(v, lang);
        return s ? s : sop__v_get_str(v, "en");
    }
    return "";
}

void sop__html_begin(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n<title>",
          f);
    sop__esc_html(f, title);
    fputs("</title>\n<style>\n"
          "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1250px}\n"
          "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}\n"
          ".verdict{border-left:6px solid #2a6;background:#f3faf5;padding:.6em 1em;"
          "margin:1em 0}\n"
          "table{border-collapse:collapse;width:100%;font-size:.9em}\n"
          "th,td{border:1px solid #ccc;padding:.35em .5em;vertical-align:top;text-align:left}\n"
          "th{background:#f0f0f0}td{overflow-wrap:anywhere}\n"
          ".sev{font-weight:bold;white-space:nowrap}.sev-high{color:#c00}.sev-warn{color:#b60}"
          ".sev-info{color:#069}\ncode{font-size:.95em}.hint{color:#666;font-size:.9em}\n"
          "svg{max-width:100%;height:auto;border:1px solid #ddd}\n"
          "</style>\n</head>\n<body>\n",
          f);
}

void sop__html_end(FILE *f)
{
    fputs("</body>\n</html>\n", f);
}

static void put_list(FILE *f, const sop_value *arr, const char *title, const char *field,
                     const char *lang)
{
    if (!arr || arr->count == 0)
        return;
    fprintf(f, "<details><summary>%zu %s</summary>\n<ul>\n", arr->count, title);
    for (const sop_value *c = arr->child; c; c = c->next) {
        fputs("<li><code>", f);
        sop__esc_html(f, sop__v_get_str(c, "id") ? sop__v_get_str(c, "id")
                                                 : sop__v_get_str(c, "probe"));
        fputs("</code>: ", f);
        sop__esc_html(f, text_of(c, field, lang));
        fputs("</li>\n", f);
    }
    fputs("</ul></details>\n", f);
}

void sop__html_report(FILE *f, const sop_value *r, const char *lang)
{
    sop_report_target t;
    sop__report_target(r, &t);
    fprintf(f, "<h1>sop report: pid %.0f", t.pid);
    if (t.comm) {
        fputs(" (", f);
        sop__esc_html(f, t.comm);
        fputs(")", f);
    }
    fputs("</h1>\n", f);
    if (t.cmdline) {
        fputs("<p><code>", f);
        sop__esc_html(f, t.cmdline);
        fputs("</code>", f);
        if (t.python) {
            fputs(" — Python ", f);
            sop__esc_html(f, t.python);
        }
        fputs("</p>\n", f);
    }
    if (t.where) {
        fputs("<p>", f);
        sop__esc_html(f, t.where);
        fputs("</p>\n", f);
    }
    sop__report_target_free(&t);
    const sop_value *fs = sop__v_get(r, "findings");
    const sop_value *verdict = NULL;
    for (const sop_value *c = fs ? fs->child : NULL; c; c = c->next) {
        const char *id = sop__v_get_str(c, "id");
        if (id && strcmp(id, "summary.verdict") == 0)
            verdict = c;
    }
    fputs("<div class=\"verdict\" id=\"verdict\"><strong>Verdict (§9):</strong> ", f);
    if (verdict) {
        sop__esc_html(f, text_of(verdict, "symptom", lang));
        fputs(" — ", f);
        sop__esc_html(f, text_of(verdict, "evidence", lang));
    } else {
        fputs("none (see the unknown checks)", f);
    }
    fputs("</div>\n", f);
    fputs("<h2>Findings</h2>\n", f);
    if (!fs || fs->count == 0) {
        fputs("<p>No findings.</p>\n", f);
    } else {
        fputs("<table id=\"findings\">\n<tr><th>finding</th><th>symptom</th><th>evidence</th>"
              "<th>cause</th><th>fix</th><th>verify</th><th>refs</th></tr>\n",
              f);
        for (const sop_value *c = fs->child; c; c = c->next) {
            const char *sev = sop__v_get_str(c, "severity");
            bool known =
                sev && (!strcmp(sev, "high") || !strcmp(sev, "warn") || !strcmp(sev, "info"));
            fprintf(f, "<tr><td><span class=\"sev sev-%s\">", known ? sev : "info");
            sop__esc_html(f, sev ? sev : "?");
            fputs("</span> <code>", f);
            sop__esc_html(f, sop__v_get_str(c, "id"));
            if (sop__v_get_str(c, "section")) {
                fputs(" §", f);
                sop__esc_html(f, sop__v_get_str(c, "section"));
            }
            fputs("</code></td>", f);
            static const char *cols[] = {"symptom", "evidence", "cause", "fix", "verify"};
            for (int i = 0; i < 5; i++) {
                fputs("<td>", f);
                sop__esc_html(f, text_of(c, cols[i], lang));
                fputs("</td>", f);
            }
            fputs("<td>", f);
            const sop_value *refs = sop__v_get(c, "refs");
            for (const sop_value *u = refs ? refs->child : NULL; u; u = u->next) {
                if (u->type != SOP_V_STR)
                    continue;
                bool web =
                    strncmp(u->str, "https://", 8) == 0 || strncmp(u->str, "http://", 7) == 0;
                if (web) {
                    fputs("<a rel=\"noreferrer\" href=\"", f);
                    sop__esc_html(f, u->str);
                    fputs("\">", f);
                }
                sop__esc_html(f, u->str);
                fputs(web ? "</a><br>\n" : "<br>\n", f);
            }
            fputs("</td></tr>\n", f);
        }
        fputs("</table>\n", f);
    }
    put_list(f, sop__v_get(r, "cleared"), "cleared checks", "note", lang);
    put_list(f, sop__v_get(r, "unknown"), "unknown (evidence missing)", "reason", lang);
    put_list(f, sop__v_get(r, "rule_errors"), "rule errors", "message", lang);
    put_list(f, sop__v_get(r, "missing_evidence"), "missing evidence", "reason", lang);
}

/* An await chain "f (file:line) > g (...) > ..." as nested lists: the tree of its levels. */
static void put_chain(FILE *f, const char *chain)
{
    if (!chain || !chain[0])
        return;
    int depth = 0;
    for (const char *p = chain; *p && depth < 64; depth++) {
        const char *e = strstr(p, " > ");
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char level[512];
        snprintf(level, sizeof level, "%.*s", (int)(n < sizeof level ? n : sizeof level - 1), p);
        fputs("<ul><li><code>", f);
        sop__esc_html(f, level);
        fputs("</code>", f);
        p = e ? e + 3 : p + n;
    }
    for (int i = 0; i < depth; i++)
        fputs("</li></ul>", f);
    fputs("\n", f);
}

/* The string `key` of o, or `dflt`. */
static const char *str_or(const sop_value *o, const char *key, const char *dflt)
{
    const char *v = sop__v_get_str(o, key);
    return v ? v : dflt;
}

static void put_num(FILE *f, const sop_value *o, const char *key)
{
    double v = 0;
    if (sop__v_get_num(o, key, &v))
        fprintf(f, "%.0f", v);
    else
        fputs("?", f);
}

/* ev.python.tasks (docs/asyncio.md): the pending counts, what the tasks wait on, the lock
 * convoys with their holder's await chain, the stuck and the forgotten tasks. */
static void put_tasks(FILE *f, const sop_value *ev)
{
    const sop_value *tk = sop__v_path(ev, SOP_EVPATH("python.tasks"));
    if (!tk || tk->type != SOP_V_OBJ)
        return;
    fputs("<h2 id=\"asyncio-tasks\">asyncio tasks</h2>\n<p>pending ", f);
    put_num(f, tk, SOP_EVKEY("python.tasks.pending_start"));
    fputs(" &rarr; ", f);
    put_num(f, tk, SOP_EVKEY("python.tasks.pending"));
    fputs(" over the window (", f);
    put_num(f, tk, SOP_EVKEY("python.tasks.created"));
    fputs(" created, ", f);
    put_num(f, tk, SOP_EVKEY("python.tasks.finished"));
    fputs(" finished)</p>\n", f);
    const sop_value *w = sop__v_get(tk, SOP_EVKEY("python.tasks.waits"));
    if (w && w->type == SOP_V_ARR && w->count) {
        fputs("<table id=\"task-waits\">\n<tr><th>pending tasks</th><th>wait on</th><th>at</th>"
              "<th>e.g.</th></tr>\n",
              f);
        for (const sop_value *c = w->child; c; c = c->next) {
            fputs("<tr><td>", f);
            put_num(f, c, SOP_EVKEY("python.tasks.waits[].count"));
            fputs("</td><td>", f);
            sop__esc_html(f, str_or(c, SOP_EVKEY("python.tasks.waits[].kind"), ""));
            fputs("</td><td><code>", f);
            sop__esc_html(f, str_or(c, SOP_EVKEY("python.tasks.waits[].frame"), ""));
            fputs("</code></td><td>", f);
            sop__esc_html(f, str_or(c, SOP_EVKEY("python.tasks.waits[].task"), ""));
            fputs("</td></tr>\n", f);
        }
        fputs("</table>\n", f);
    }
    const sop_value *cv = sop__v_get(tk, SOP_EVKEY("python.tasks.convoys"));
    for (const sop_value *c = cv && cv->type == SOP_V_ARR ? cv->child : NULL; c; c = c->next) {
        fputs("<p class=\"convoy\">", f);
        put_num(f, c, SOP_EVKEY("python.tasks.convoys[].waiting"));
        fputs(" tasks wait on one ", f);
        sop__esc_html(f, str_or(c, SOP_EVKEY("python.tasks.convoys[].type"), "lock"));
        fputs(" at <code>", f);
        sop__esc_html(f, str_or(c, SOP_EVKEY("python.tasks.convoys[].site"), "?"));
        fputs("</code>", f);
        if (sop__v_get_str(c, SOP_EVKEY("python.tasks.convoys[].holder"))) {
            fputs("; held by task ", f);
            sop__esc_html(f, sop__v_get_str(c, SOP_EVKEY("python.tasks.convoys[].holder")));
            fputs(", awaiting:</p>\n", f);
            put_chain(f, sop__v_get_str(c, SOP_EVKEY("python.tasks.convoys[].holder_chain")));
        } else {
            fputs("; no holder seen</p>\n", f);
        }
    }
    const sop_value *st = sop__v_get(tk, SOP_EVKEY("python.tasks.stuck"));
    for (const sop_value *c = st && st->type == SOP_V_ARR ? st->child : NULL; c; c = c->next) {
        fputs("<p class=\"stuck\">task ", f);
        sop__esc_html(f, str_or(c, SOP_EVKEY("python.tasks.stuck[].task"), "?"));
        fputs(" pending the whole window while ", f);
        put_num(f, c, SOP_EVKEY("python.tasks.stuck[].siblings_finished"));
        fputs(" of ", f);
        put_num(f, c, SOP_EVKEY("python.tasks.stuck[].siblings_start"));
        fputs(" siblings finished, awaiting:</p>\n", f);
        put_chain(f, sop__v_get_str(c, SOP_EVKEY("python.tasks.stuck[].chain")));
    }
    const sop_value *fg = sop__v_get(tk, SOP_EVKEY("python.tasks.forgotten"));
    for (const sop_value *c = fg && fg->type == SOP_V_ARR ? fg->child : NULL; c; c = c->next) {
        fputs("<p class=\"forgotten\">", f);
        put_num(f, c, SOP_EVKEY("python.tasks.forgotten[].count"));
        fputs(" unreferenced tasks of <code>", f);
        sop__esc_html(f, str_or(c, SOP_EVKEY("python.tasks.forgotten[].coroutine"), "?"));
        fputs("</code></p>\n", f);
    }
}

char *sop__report_html(const sop_value *report, const sop_evidence *ev, const char *lang)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    sop_report_target t;
    sop__report_target(report, &t);
    sop__report_target_free(&t);
    char title[64];
    snprintf(title, sizeof title, "sop report: pid %.0f", t.pid);
    sop__html_begin(f, title);
    sop__html_report(f, report, lang);
    if (ev)
        put_tasks(f, ev->tree);
    if (ev && ev->pictures_html)
        fputs(ev->pictures_html, f);
    else
        fputs("<p class=\"hint\" id=\"no-pictures\">No flame graph or timeline: the evidence was "
              "replayed, or the window was not sampled (--duration 0 or --rate 0, or not a "
              "CPython target).</p>\n",
              f);
    sop__html_end(f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
