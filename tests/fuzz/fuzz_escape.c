/* fuzz_escape.c — libFuzzer target: every escaper of engine/render/escape.c on arbitrary bytes,
 * each output checked against its format's promise (aborts on a broken one): text, collapsed and
 * Markdown output hold no raw control byte and are valid UTF-8; Markdown has no unescaped
 * markup character; a code span holds no raw newline; JSON text stays valid UTF-8; XML output
 * has no raw '<' or '&' that is not an entity. Depends on engine/render/escape.c,
 * engine/core/strbuf.c. */
#include <stdio.h>

#include "escape.h"
#include "fuzz.h"

static void check_clean(const char *s, int allow_markup)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        if (*p < 0x20 || *p == 0x7f)
            abort();
        size_t n = sop__utf8_seq(p, left);
        if (!n || (p[0] == 0xc2 && p[1] <= 0x9f))
            abort();
        if (!allow_markup && *p != '\\' && strchr("`*_[]<>|!&~#", *p)) {
            size_t bs = 0;
            for (const unsigned char *q = p; q > (const unsigned char *)s && q[-1] == '\\'; q--)
                bs++;
            if (bs % 2 == 0)
                abort();
        }
        p += n, left -= n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    sop_sb b = {0};
    char *o;
    sop__esc_text(&b, s);
    o = sop__sb_take(&b);
    check_clean(o, 1);
    free(o);
    sop__esc_collapsed(&b, s);
    o = sop__sb_take(&b);
    check_clean(o, 1);
    free(o);
    sop__esc_md(&b, s);
    o = sop__sb_take(&b);
    check_clean(o, 0);
    free(o);
    sop__esc_md_code(&b, s);
    o = sop__sb_take(&b);
    check_clean(o, 1);
    free(o);
    o = sop__esc_json_text(s);
    const unsigned char *p = (const unsigned char *)o;
    for (size_t left = strlen(o), n; left; p += n, left -= n)
        if (!(n = sop__utf8_seq(p, left)))
            abort();
    free(o);
    char *x = NULL;
    size_t xl = 0;
    FILE *f = open_memstream(&x, &xl);
    sop__esc_xml(f, s, strlen(s), 1000);
    fclose(f);
    for (size_t i = 0; i < xl; i++) {
        if ((unsigned char)x[i] < 0x20 || x[i] == '<' || x[i] == '>')
            abort();
        if (x[i] == '&' && strncmp(x + i, "&amp;", 5) && strncmp(x + i, "&lt;", 4) &&
            strncmp(x + i, "&gt;", 4) && strncmp(x + i, "&quot;", 6) && strncmp(x + i, "&apos;", 6))
            abort();
    }
    free(x);
    free(s);
    return 0;
}
