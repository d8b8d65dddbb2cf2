/* json.c — JSON text to and from the value tree; the only file that includes cJSON's header.
 * Depends on cJSON. */
#include "json.h"
#include "escape.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
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

static cJSON *to_cjson(const sop_value *v, int depth)
{
    if (depth > JSON_MAX_DEPTH)
        return cJSON_CreateNull();
    switch (v->type) {
    case SOP_V_NULL:
        return cJSON_CreateNull();
    case SOP_V_BOOL:
        return cJSON_CreateBool(v->b);
    case SOP_V_NUM:
        if (isnan(v->num) || isinf(v->num))
            return cJSON_CreateNull();
        return cJSON_CreateNumber(v->num);
    case SOP_V_STR:
        return cJSON_CreateString(v->str);
    case SOP_V_ARR:
    case SOP_V_OBJ: {
        cJSON *j = v->type == SOP_V_OBJ ? cJSON_CreateObject() : cJSON_CreateArray();
        if (!j)
            return NULL;
        for (const sop_value *c = v->child; c; c = c->next) {
            cJSON *item = to_cjson(c, depth + 1);
            if (!item) {
                cJSON_Delete(j);
                return NULL;
            }
            if (v->type == SOP_V_OBJ)
                cJSON_AddItemToObject(j, c->key ? c->key : "", item);
            else
                cJSON_AddItemToArray(j, item);
        }
        return j;
    }
    }
    return NULL;
}

char *sop__json_print(const sop_value *v, int pretty)
{
    cJSON *j = to_cjson(v, 0);
    if (!j)
        return NULL;
    char *s = pretty ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s)
        return NULL;
    /* Every JSON text sop writes passes here: invalid UTF-8 from a target or an evidence file
     * becomes \ufffd, DEL and C1 controls \u escapes, so the output is always valid JSON. */
    char *clean = sop__esc_json_text(s);
    cJSON_free(s);
    return clean;
}
