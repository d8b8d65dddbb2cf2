/* json.c — JSON text to and from the value tree; the only file that includes cJSON's header.
 * Depends on cJSON. */
#include "json.h"
#include "strbuf.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64
#define JSON_MAX_VALUES 2000000u
#define JSON_MIN_BYTES_PER_VALUE 8u

/* Converts, freeing each cJSON child as soon as it is converted, so the two trees never both
 * exist whole (peak memory: about one tree, not two). */
static sop_value *from_cjson(cJSON *j, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return NULL;
    if (cJSON_IsNull(j))
        return sop__v_null();
    if (cJSON_IsBool(j))
        return sop__v_bool(cJSON_IsTrue(j));
    if (cJSON_IsNumber(j))
        return sop__v_num(j->valuedouble);
    if (cJSON_IsString(j))
        return sop__v_str(j->valuestring);
    if (cJSON_IsArray(j) || cJSON_IsObject(j)) {
        bool obj = cJSON_IsObject(j);
        sop_value *v = obj ? sop__v_obj() : sop__v_arr();
        if (!v)
            return NULL;
        for (cJSON *c = j->child, *next; c; c = next) {
            next = c->next;
            sop_value *item = from_cjson(c, depth + 1);
            if (!item) {
                sop__v_free(v);
                return NULL;
            }
            if (obj ? !sop__v_set(v, c->string ? c->string : "", item)
                    : sop__v_push(v, item) != 0) {
                sop__v_free(v);
                return NULL;
            }
            c->next = NULL; /* cJSON_Delete follows next: free c alone */
            cJSON_Delete(c);
            j->child = next;
            if (next)
                next->prev = NULL;
        }
        return v;
    }
    return NULL;
}

/* The bounds, checked on the text before anything is allocated: nesting depth, and the
 * number of values (counted as containers + separators; at most max_values, and on average at least
 * JSON_MIN_BYTES_PER_VALUE bytes of text each beyond the first 4096), so memory is bounded by the
 * file's size. Returns 0, or -1 with the reason and byte offset in err. */
static int prescan(const char *text, size_t len, size_t max_values, char *err, size_t errlen)
{
    size_t values = 1, depth = 0, allowed = 4096 + len / JSON_MIN_BYTES_PER_VALUE;
    if (allowed > max_values)
        allowed = max_values;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        switch (c) {
        case '"':
            in_str = true;
            break;
        case '[':
        case '{':
            values++;
            if (++depth > JSON_MAX_DEPTH) {
                snprintf(err, errlen, "JSON nested deeper than %d levels at byte %zu",
                         JSON_MAX_DEPTH, i);
                return -1;
            }
            break;
        case ']':
        case '}':
            if (depth)
                depth--;
            break;
        case ',':
        case ':':
            /* a value (or a key-value pair's value) per separator and per container: an
             * upper bound on the nodes the tree will hold */
            if (++values > allowed) {
                snprintf(err, errlen,
                         "more than %zu JSON values at byte %zu (the bound for %zu bytes: at most "
                         "%u values, one per %u bytes beyond the first 4096)",
                         allowed, i, len, (unsigned)JSON_MAX_VALUES, JSON_MIN_BYTES_PER_VALUE);
                return -1;
            }
            break;
        default:
            break;
        }
    }
    return 0;
}

sop_value *sop__json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    char scratch[1];
    if (!err) {
        err = scratch;
        errlen = sizeof scratch;
    }
    if (prescan(text, len, JSON_MAX_VALUES, err, errlen) != 0)
        return NULL;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (j && end) { /* anything but white space after the value is an error, not ignored */
        size_t off = (size_t)(end - text);
        while (off < len &&
               (text[off] == ' ' || text[off] == '\t' || text[off] == '\n' || text[off] == '\r'))
            off++;
        if (off < len) {
            cJSON_Delete(j);
            snprintf(err, errlen, "trailing data after the JSON value at byte %zu", off);
            return NULL;
        }
    }
    if (!j) {
        const char *at = cJSON_GetErrorPtr();
        long off = (at && at >= text && at <= text + len) ? (long)(at - text) : -1;
        if (err)
            snprintf(err, errlen, "malformed JSON near byte %ld", off);
        return NULL;
    }
    sop_value *v = from_cjson(j, 0);
    cJSON_Delete(j);
    if (!v && err)
        snprintf(err, errlen, "JSON nested deeper than %d levels or out of memory", JSON_MAX_DEPTH);
    return v;
}

/* The value tree written as JSON text directly, in exactly the text cJSON_Print /
 * cJSON_PrintUnformatted (1.7) then sop__esc_json_text write for the same tree — same escapes,
 * numbers, tabs and spaces — without building a cJSON tree first (a 32-thread dump: 20,000 nodes
 * made, printed and freed again were a fifth of its time). Deeper than JSON_MAX_DEPTH prints null,
 * as the conversion did. */
/* Bytes written as they are inside a JSON string: printable ASCII but the quote and the
 * backslash. Everything else takes put_string's slow path. */
static bool plain_byte(unsigned char c)
{
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/* A string as cJSON writes it (quote, backslash, \b \f \n \r \t, other C0 controls as
 * \u00XX, the rest raw), with sop__esc_json_text's pass over the text done at once: DEL, the
 * C1 and the format (bidi) controls as \uXXXX, a byte that does not start valid UTF-8 as
 * \ufffd. */
static void put_string(sop_sb *b, const char *s)
{
    if (!s) {
        sop__sb_putn(b, "\"\"", 2);
        return;
    }
    sop__sb_putn(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    for (;;) {
        const unsigned char *run = p;
        while (plain_byte(*p))
            p++;
        if (p > run)
            sop__sb_putn(b, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        char esc[8];
        size_t n = 2, adv = 1;
        unsigned cp;
        esc[0] = '\\';
        switch (*p) {
        case '"':
        case '\\':
            esc[1] = (char)*p;
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            if (*p < 0x80) { /* C0 control or DEL */
                n = (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p);
                break;
            }
            /* at most 4 bytes are looked at, and the NUL ends a sequence as any
             * non-continuation byte does: no need to know the length left */
            adv = sop__utf8_seq(p, 4);
            if (adv == 0) { /* not UTF-8 */
                adv = 1;
                n = (size_t)snprintf(esc, sizeof esc, "\\ufffd");
            } else if ((cp = sop__utf8_spelled(p, adv)) != 0) { /* C1 or format control */
                n = (size_t)snprintf(esc, sizeof esc, "\\u%04x", cp);
            } else {
                memcpy(esc, p, adv);
                n = adv;
            }
            break;
        }
        sop__sb_putn(b, esc, n);
        p += adv;
    }
    sop__sb_putn(b, "\"", 1);
}

static void put_number(sop_sb *b, double d)
{
    char buf[32];
    int n;
    /* cJSON keeps an int beside each number (saturated to INT_MIN..INT_MAX) and prints it
     * when the double equals it; else 15 significant digits when they read back equal (to a
     * relative DBL_EPSILON), else 17 */
    int vi = isnan(d) ? 0 : d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    if (isnan(d) || isinf(d)) {
        n = snprintf(buf, sizeof buf, "null");
    } else if (d == (double)vi) { /* "%d", without printf's machinery (most numbers) */
        char *e = buf + sizeof buf, *q = e;
        int64_t x = vi < 0 ? -(int64_t)vi : vi;
        do
            *--q = (char)('0' + x % 10);
        while ((x /= 10) != 0);
        if (vi < 0)
            *--q = '-';
        sop__sb_putn(b, q, (size_t)(e - q));
        return;
    } else {
        n = snprintf(buf, sizeof buf, "%1.15g", d);
        char *end = NULL;
        double back = strtod(buf, &end);
        double maxv = fmax(fabs(back), fabs(d));
        if (end == buf || !(fabs(back - d) <= maxv * DBL_EPSILON))
            n = snprintf(buf, sizeof buf, "%1.17g", d);
    }
    sop__sb_putn(b, buf, (size_t)n);
}

static void put_tabs(sop_sb *b, size_t n)
{
    static const char tabs[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
    for (; n > 16; n -= 16)
        sop__sb_putn(b, tabs, 16);
    sop__sb_putn(b, tabs, n);
}

static void put_value(sop_sb *b, const sop_value *v, int depth, bool pretty)
{
    if (depth > JSON_MAX_DEPTH) {
        sop__sb_putn(b, "null", 4);
        return;
    }
    switch (v->type) {
    case SOP_V_NULL:
        sop__sb_putn(b, "null", 4);
        return;
    case SOP_V_BOOL:
        sop__sb_puts(b, v->b ? "true" : "false");
        return;
    case SOP_V_NUM:
        put_number(b, v->num);
        return;
    case SOP_V_STR:
        put_string(b, v->str);
        return;
    case SOP_V_ARR:
        sop__sb_putn(b, "[", 1);
        for (const sop_value *c = v->child; c; c = c->next) {
            put_value(b, c, depth + 1, pretty);
            if (c->next)
                sop__sb_putn(b, ", ", pretty ? 2 : 1);
        }
        sop__sb_putn(b, "]", 1);
        return;
    case SOP_V_OBJ:
        sop__sb_putn(b, "{\n", pretty ? 2 : 1);
        for (const sop_value *c = v->child; c; c = c->next) {
            if (pretty)
                put_tabs(b, (size_t)depth + 1);
            put_string(b, c->key ? c->key : "");
            sop__sb_putn(b, ":\t", pretty ? 2 : 1);
            put_value(b, c, depth + 1, pretty);
            if (c->next)
                sop__sb_putn(b, ",", 1);
            if (pretty)
                sop__sb_putn(b, "\n", 1);
        }
        if (pretty)
            put_tabs(b, (size_t)depth);
        sop__sb_putn(b, "}", 1);
        return;
    }
    sop__sb_putn(b, "null", 4);
}

void sop__json_put(sop_sb *b, const sop_value *v, int depth, int pretty)
{
    put_value(b, v, depth, pretty != 0);
}

void sop__json_put_str(sop_sb *b, const char *s)
{
    put_string(b, s);
}

void sop__json_put_num(sop_sb *b, double d)
{
    put_number(b, d);
}

void sop__json_put_key(sop_sb *b, const char *key, int depth, int pretty)
{
    if (pretty)
        put_tabs(b, (size_t)depth + 1);
    put_string(b, key);
    sop__sb_putn(b, ":\t", pretty ? 2 : 1);
}

char *sop__json_print(const sop_value *v, int pretty)
{
    /* Every JSON text sop writes passes here: invalid UTF-8 from a target or an evidence file
     * becomes \ufffd, DEL and C1 controls \u escapes (put_string), so the output is always
     * valid JSON. */
    sop_sb b = {0};
    put_value(&b, v, 0, pretty != 0);
    return sop__sb_take(&b);
}
