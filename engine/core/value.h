/* value.h — a small JSON-shaped value tree (null, bool, number, string, array, object).
 * It is the neutral form evidence and reports take between the probes' C structs, the JSON
 * text (engine/core/json.c, the home of cJSON) and the Lua tables (engine/rules/lua_value.c). No
 * deps.
 */
#ifndef SOP_VALUE_H
#define SOP_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { SOP_V_NULL, SOP_V_BOOL, SOP_V_NUM, SOP_V_STR, SOP_V_ARR, SOP_V_OBJ } sop_vtype;

typedef struct sop_value sop_value;
struct sop_value {
    sop_vtype type;
    bool b;
    double num;
    char *str;        /* SOP_V_STR: owned, NUL-terminated (may hold any bytes but NUL) */
    char *key;        /* member name when inside an object: owned */
    sop_value *child; /* SOP_V_ARR / SOP_V_OBJ: first element, in insertion order */
    sop_value *last;  /* last element, for O(1) append */
    sop_value *next;  /* next sibling */
    size_t count;     /* number of children */
};

/* Constructors return a new node owned by the caller (or NULL on allocation failure). */
sop_value *sop__v_null(void);
sop_value *sop__v_bool(bool b);
sop_value *sop__v_num(double n);
sop_value *sop__v_str(const char *s);
sop_value *sop__v_strn(const char *s, size_t n);
sop_value *sop__v_arr(void);
sop_value *sop__v_obj(void);
/* Frees a node and everything below it; accepts NULL. */
void sop__v_free(sop_value *v);

/* Append `item` to array `arr`; ownership of item passes to arr (freed on failure). */
int sop__v_push(sop_value *arr, sop_value *item);
/* Set member `key` of object `obj` to `item` (ownership passes; item NULL is ignored).
 * Does not check for duplicates: callers set each key once. Returns item or NULL. */
sop_value *sop__v_set(sop_value *obj, const char *key, sop_value *item);

/* Convenience setters used by the bridge. Absent values are skipped, so that the tree never
 * carries a made-up 0: integers equal to SOP_NA and doubles that are NaN add nothing. */
#include "na.h" /* SOP_NA, from probes/ */
void sop__v_set_int(sop_value *obj, const char *key, int64_t n);
void sop__v_set_dbl(sop_value *obj, const char *key, double d);
void sop__v_set_str(sop_value *obj, const char *key, const char *s); /* NULL or "" skipped */
void sop__v_set_bool(sop_value *obj, const char *key, bool b);
/* Returns the object member `key` of obj, creating an empty object if absent. */
sop_value *sop__v_obj_at(sop_value *obj, const char *key);
sop_value *sop__v_arr_at(sop_value *obj, const char *key);

/* Lookups: borrowed pointers, NULL when absent or of another type. */
const sop_value *sop__v_get(const sop_value *obj, const char *key);
const char *sop__v_get_str(const sop_value *obj, const char *key);
bool sop__v_get_num(const sop_value *obj, const char *key, double *out);

/* Evidence paths as docs/evidence.md spells them ("proc.cpu_pct",
 * "python.threads[].window.gil_frac"), at most 8 segments of 63 bytes. sop__v_path: the value at a
 * path through objects only (no
 * "[]"); NULL when absent. sop__v_fold: the numbers at a path, "name[]" iterating an array:
 * the value (through an array: the largest, as MAX), their largest or their sum; false when
 * there is none. */
typedef enum { SOP_FOLD_VALUE, SOP_FOLD_MAX, SOP_FOLD_SUM } sop_fold;
const sop_value *sop__v_path(const sop_value *v, const char *path);
bool sop__v_fold(const sop_value *v, const char *path, sop_fold how, double *out);

#endif
