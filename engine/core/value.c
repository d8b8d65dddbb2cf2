/* value.c — the JSON-shaped value tree shared by the bridge, JSON text and Lua tables.
 * Depends on libc only. */
#include "value.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sop_value *v_new(sop_vtype t)
{
    sop_value *v = calloc(1, sizeof *v);
    if (v)
        v->type = t;
    return v;
}

sop_value *sop__v_null(void)
{
    return v_new(SOP_V_NULL);
}
sop_value *sop__v_arr(void)
{
    return v_new(SOP_V_ARR);
}
sop_value *sop__v_obj(void)
{
    return v_new(SOP_V_OBJ);
}

sop_value *sop__v_bool(bool b)
{
    sop_value *v = v_new(SOP_V_BOOL);
    if (v)
        v->b = b;
    return v;
}

sop_value *sop__v_num(double n)
{
    sop_value *v = v_new(SOP_V_NUM);
    if (v)
        v->num = n;
    return v;
}

sop_value *sop__v_strn(const char *s, size_t n)
{
    sop_value *v = v_new(SOP_V_STR);
    if (!v)
        return NULL;
    v->str = malloc(n + 1);
    if (!v->str) {
        free(v);
        return NULL;
    }
    memcpy(v->str, s, n);
    v->str[n] = '\0';
    return v;
}

sop_value *sop__v_str(const char *s)
{
    return sop__v_strn(s ? s : "", s ? strlen(s) : 0);
}

void sop__v_free(sop_value *v)
{
    while (v) {
        sop_value *next = v->next;
        sop__v_free(v->child);
        free(v->str);
        free(v->key);
        free(v);
        v = next;
    }
}

int sop__v_push(sop_value *arr, sop_value *item)
{
    if (!item)
        return -1;
    if (!arr || (arr->type != SOP_V_ARR && arr->type != SOP_V_OBJ)) {
        sop__v_free(item);
        return -1;
    }
    if (arr->last)
        arr->last->next = item;
    else
        arr->child = item;
    arr->last = item;
    arr->count++;
    return 0;
}

sop_value *sop__v_set(sop_value *obj, const char *key, sop_value *item)
{
    if (!item)
        return NULL;
    if (!obj || obj->type != SOP_V_OBJ) {
        sop__v_free(item);
        return NULL;
    }
    free(item->key);
    item->key = strdup(key);
    if (!item->key) {
        sop__v_free(item);
        return NULL;
    }
    return sop__v_push(obj, item) == 0 ? item : NULL;
}

void sop__v_set_int(sop_value *obj, const char *key, int64_t n)
{
    if (n != SOP_NA)
        sop__v_set(obj, key, sop__v_num((double)n));
}

void sop__v_set_dbl(sop_value *obj, const char *key, double d)
{
    if (!isnan(d) && !isinf(d))
        sop__v_set(obj, key, sop__v_num(d));
}

void sop__v_set_str(sop_value *obj, const char *key, const char *s)
{
    if (s && *s)
        sop__v_set(obj, key, sop__v_str(s));
}

void sop__v_set_bool(sop_value *obj, const char *key, bool b)
{
    sop__v_set(obj, key, sop__v_bool(b));
}

const sop_value *sop__v_get(const sop_value *obj, const char *key)
{
    if (!obj || obj->type != SOP_V_OBJ)
        return NULL;
    for (const sop_value *c = obj->child; c; c = c->next)
        if (c->key && strcmp(c->key, key) == 0)
            return c;
    return NULL;
}

static sop_value *member_of_type(sop_value *obj, const char *key, sop_vtype t)
{
    sop_value *found = (sop_value *)sop__v_get(obj, key);
    if (found && found->type == t)
        return found;
    return sop__v_set(obj, key, t == SOP_V_OBJ ? sop__v_obj() : sop__v_arr());
}

sop_value *sop__v_obj_at(sop_value *obj, const char *key)
{
    return member_of_type(obj, key, SOP_V_OBJ);
}
sop_value *sop__v_arr_at(sop_value *obj, const char *key)
{
    return member_of_type(obj, key, SOP_V_ARR);
}

const char *sop__v_get_str(const sop_value *obj, const char *key)
{
    const sop_value *v = sop__v_get(obj, key);
    return v && v->type == SOP_V_STR ? v->str : NULL;
}

bool sop__v_get_num(const sop_value *obj, const char *key, double *out)
{
    const sop_value *v = sop__v_get(obj, key);
    if (!v || v->type != SOP_V_NUM)
        return false;
    *out = v->num;
    return true;
}

const sop_value *sop__v_path(const sop_value *v, const char *path)
{
    for (int depth = 0; v && *path && depth < 8; depth++) {
        size_t n = strcspn(path, ".");
        char seg[64];
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, path, n);
        seg[n] = '\0';
        v = sop__v_get(v, seg);
        path += n + (path[n] ? 1 : 0);
    }
    return *path ? NULL : v;
}

static void fold(const sop_value *v, const char *path, sop_fold how, double *acc, bool *any,
                 int depth)
{
    if (!v || depth > 8)
        return;
    if (!*path) {
        if (v->type != SOP_V_NUM)
            return;
        *acc = !*any                 ? v->num
               : how == SOP_FOLD_SUM ? *acc + v->num
                                     : (v->num > *acc ? v->num : *acc);
        *any = true;
        return;
    }
    size_t n = strcspn(path, ".");
    char seg[64];
    if (n >= sizeof seg)
        return;
    memcpy(seg, path, n);
    seg[n] = '\0';
    const char *rest = path[n] ? path + n + 1 : path + n;
    bool array = n > 2 && strcmp(seg + n - 2, "[]") == 0;
    if (array)
        seg[n - 2] = '\0';
    const sop_value *c = sop__v_get(v, seg);
    if (!array) {
        fold(c, rest, how, acc, any, depth + 1);
        return;
    }
    for (const sop_value *e = c && c->type == SOP_V_ARR ? c->child : NULL; e; e = e->next)
        fold(e, rest, how, acc, any, depth + 1);
}

bool sop__v_fold(const sop_value *v, const char *path, sop_fold how, double *out)
{
    double acc = 0;
    bool any = false;
    fold(v, path, how, &acc, &any, 0);
    if (any)
        *out = acc;
    return any;
}
