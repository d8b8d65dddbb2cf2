/* json.c — JSON text to and from the value tree; the only file that includes cJSON's header.
 * Depends on cJSON. */
#include "json.h"
#include "escape.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

static sop_value *from_cjson(const cJSON *j, int depth)
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
        for (const cJSON *c = j->child; c; c = c->next) {
            sop_value *item = from_cjson(c, depth + 1);
            if (!item) {
                sop__v_free(v);
                return NULL;
            }
            if (obj ? !sop__v_set(v, c->string ? c->string : "", item) : sop__v_push(v, item) != 0) {
                sop__v_free(v);
                return NULL;
            }
        }
        return v;
    }
    return NULL;
}

sop_value *sop__json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
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
        snprintf(err, errlen, "JSON nested deeper than %d levels or out of memory",
                 JSON_MAX_DEPTH);
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
