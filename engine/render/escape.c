/* escape.c — the escapers of escape.h: one per output format, sharing one strict UTF-8
 * decoder (engine/core/utf8.c). Depends on engine/core/strbuf.c, utf8.c, engine/render/dwidth.c
 * and libc. */
#include "escape.h"
#include "dwidth.h"

#include <string.h>

/* The shared walk: runs of safe characters verbatim; each control, invalid byte and (when
 * `punct` is given) listed ASCII punctuation handed to the format's own spelling. */
static void walk(sop_sb *b, const char *s, const char *punct, int pipe_only)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        const unsigned char *run = p;
        while (left) {
            unsigned c = *p;
            if (c < 0x20 || c == 0x7f)
                break;
            if (c < 0x80) {
                if ((punct && strchr(punct, (int)c)) || (pipe_only && c == '|'))
                    break;
                p++, left--;
                continue;
            }
            size_t n = sop__utf8_seq(p, left);
            if (n == 0 || sop__utf8_spelled(p, n) != 0) /* invalid, a C1 or a format control */
                break;
            p += n, left -= n;
        }
        sop__sb_putn(b, (const char *)run, (size_t)(p - run));
        if (!left)
            break;
        unsigned c = *p;
        size_t n;
        if (c < 0x80 && c >= 0x20 && c != 0x7f) { /* markup punctuation */
            char esc[2] = {'\\', (char)c};
            sop__sb_putn(b, esc, 2);
            p++, left--;
        } else if (c >= 0x80 && (n = sop__utf8_seq(p, left)) != 0 && sop__utf8_spelled(p, n) != 0) {
            sop__sb_printf(b, "\\u%04x", sop__utf8_spelled(p, n));
            p += n, left -= n;
        } else {
            sop__sb_printf(b, "\\x%02x", c);
            p++, left--;
        }
    }
}

void sop__esc_text(sop_sb *b, const char *s)
{
    walk(b, s ? s : "", NULL, 0);
}

void sop__esc_md(sop_sb *b, const char *s)
{
    walk(b, s ? s : "", "\\`*_[]<>|!&~#", 0);
}

void sop__esc_collapsed(sop_sb *b, const char *s)
{
    walk(b, s ? s : "", NULL, 0);
}

void sop__esc_md_code(sop_sb *b, const char *s)
{
    s = s ? s : "";
    size_t longest = 0, run = 0;
    for (const char *p = s; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    size_t fence = longest + 1;
    size_t n = strlen(s);
    /* a space inside the fences when s starts or ends with a backtick (Markdown strips one
     * on each side), and for an empty s ("``" would open a span of two) */
    int pad = n == 0 || s[0] == '`' || s[n - 1] == '`';
    for (size_t i = 0; i < fence; i++)
        sop__sb_putn(b, "`", 1);
    if (pad)
        sop__sb_putn(b, " ", 1);
    walk(b, s, NULL, 1);
    if (pad && n)
        sop__sb_putn(b, " ", 1);
    for (size_t i = 0; i < fence; i++)
        sop__sb_putn(b, "`", 1);
}

void sop__esc_xml(FILE *f, const char *s, size_t len, size_t max_chars)
{
    size_t chars = 0, i = 0;
    for (; i < len && chars < max_chars; chars++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            switch (c) {
            case '&':
                fputs("&amp;", f);
                break;
            case '<':
                fputs("&lt;", f);
                break;
            case '>':
                fputs("&gt;", f);
                break;
            case '"':
                fputs("&quot;", f);
                break;
            case '\'':
                fputs("&apos;", f);
                break;
            default:
                fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
            }
            i++;
            continue;
        }
        size_t n = sop__utf8_seq((const unsigned char *)s + i, len - i);
        if (n && sop__utf8_spelled((const unsigned char *)s + i, n) == 0) {
            fwrite(s + i, 1, n, f);
            i += n;
        } else {
            fputc('?', f);
            i += n ? n : 1;
        }
    }
    if (i < len)
        fputs("..", f);
}

char *sop__esc_json_text(const char *json)
{
    sop_sb b = {0};
    const unsigned char *p = (const unsigned char *)json;
    size_t left = strlen(json);
    while (left) {
        const unsigned char *run = p;
        size_t n = 0;
        while (left) {
            if (*p == 0x7f)
                break;
            n = sop__utf8_seq(p, left);
            if (n == 0 || sop__utf8_spelled(p, n) != 0)
                break;
            p += n, left -= n;
        }
        sop__sb_putn(&b, (const char *)run, (size_t)(p - run));
        if (!left)
            break;
        if (*p == 0x7f) {
            sop__sb_puts(&b, "\\u007f");
            p++, left--;
        } else if (n >= 2) { /* a C1 or a format control */
            sop__sb_printf(&b, "\\u%04x", sop__utf8_spelled(p, n));
            p += n, left -= n;
        } else {
            sop__sb_puts(&b, "\\ufffd");
            p++, left--;
        }
    }
    return sop__sb_take(&b);
}

/* HTML text or attribute value: markup escaped, controls dropped, invalid UTF-8 as U+FFFD. */
void sop__esc_html(FILE *f, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t nx = sop__utf8_next(s, len, i, &cp);
        unsigned char c = (unsigned char)s[i];
        if (nx - i == 1 && c >= 0x80) {
            fputs("\xef\xbf\xbd", f);
        } else if (nx - i == 1) {
            switch (c) {
            case '&':
                fputs("&amp;", f);
                break;
            case '<':
                fputs("&lt;", f);
                break;
            case '>':
                fputs("&gt;", f);
                break;
            case '"':
                fputs("&quot;", f);
                break;
            case '\'':
                fputs("&#39;", f);
                break;
            case '\n':
                fputc('\n', f);
                break;
            default:
                if (c >= 0x20 && c != 0x7f)
                    fputc(c, f);
                else
                    fprintf(f, "\\x%02x", c);
            }
        } else if ((cp >= 0x80 && cp < 0xa0) || sop__is_format_control(cp)) {
            fprintf(f, "\\u%04x", (unsigned)cp);
        } else {
            fwrite(s + i, 1, nx - i, f);
        }
        i = nx;
    }
}

void sop__sb_put_escaped(sop_sb *b, const char *s, bool md_cell)
{
    if (md_cell)
        sop__esc_md(b, s);
    else
        sop__esc_text(b, s);
}

char *sop__json_escape_controls(const char *json)
{
    return sop__esc_json_text(json);
}
