/* py_names.c — a string attribute of a Python instance read from outside, for thread names
 * (threading.Thread._name): the instance __dict__ at tp_dictoffset (3.8-3.10), the managed
 * dict or values (3.11: values at obj-4 words; 3.12: tagged dict-or-values at obj-3), the
 * managed dict or inline values (3.13). Offsets from py_layouts.c. Depends on remote_mem. */
#include "py_names.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define MAX_ENTRIES 1024
#define TPFLAGS_INLINE_VALUES (1ul << 2)
#define TPFLAGS_MANAGED_DICT (1ul << 4)

/* Find `name` among the keys object at `keys`; *ix gets the entry index and *value the
 * entry's value (meaningless for split tables, whose values live elsewhere). */
static int keys_find(sop_rmem *m, const sop_pylayout *L, uint64_t keys, const char *name,
                     size_t *ix, uint64_t *value)
{
    uint8_t h[64];
    int r = sop__rmem_read(m, keys, h, sizeof h);
    if (r < 0)
        return r;
    int64_t nentries;
    memcpy(&nentries, h + L->dk_nentries, 8);
    uint64_t entries;
    size_t esz = 24, koff = 8, voff = 16;
    if (L->dict_log2) {
        unsigned log2 = h[8], log2ib = h[9], kind = h[10];
        if (log2 > 30 || log2ib > 33 || kind > 2)
            return -EINVAL;
        entries = keys + L->dk_indices + (1ull << log2ib);
        if (kind != 0) {
            esz = 16;
            koff = 0;
            voff = 8;
        }
    } else {
        int64_t size;
        memcpy(&size, h + L->dk_size, 8);
        if (size <= 0 || size > (1ll << 30))
            return -EINVAL;
        int ib = size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffll ? 4 : 8;
        entries = keys + L->dk_indices + (uint64_t)size * (uint64_t)ib;
    }
    if (nentries < 0 || nentries > MAX_ENTRIES)
        return -EINVAL;
    size_t want = strlen(name);
    uint8_t e[24];
    for (size_t i = 0; i < (size_t)nentries; i++) {
        if ((r = sop__rmem_read(m, entries + i * esz, e, esz)) < 0)
            return r;
        uint64_t key;
        memcpy(&key, e + koff, 8);
        if (!key)
            continue;
        int64_t len;
        if (sop__rmem_read(m, key + L->str.uni_length, &len, 8) < 0 || len != (int64_t)want)
            continue;
        char buf[64];
        if (sop__rmem_unicode(m, &L->str, key, buf, sizeof buf) == 0 && strcmp(buf, name) == 0) {
            *ix = i;
            memcpy(value, e + voff, 8);
            return 0;
        }
    }
    return -ENOENT;
}

static int dict_get(sop_rmem *m, const sop_pylayout *L, uint64_t dict, const char *name,
                    uint64_t *value)
{
    uint64_t keys, values;
    int r;
    if ((r = sop__rmem_u64(m, dict + L->ma_keys, &keys)) < 0 ||
        (r = sop__rmem_u64(m, dict + L->ma_values, &values)) < 0)
        return r;
    size_t ix;
    if ((r = keys_find(m, L, keys, name, &ix, value)) < 0)
        return r;
    if (values) /* split table: the values array is the dict's own */
        return sop__rmem_u64(m, values + L->values_values + 8 * ix, value);
    return 0;
}

static int values_get(sop_rmem *m, const sop_pylayout *L, uint64_t type, uint64_t values,
                      const char *name, uint64_t *value)
{
    uint64_t keys;
    size_t ix;
    int r;
    if ((r = sop__rmem_u64(m, type + L->ht_cached_keys, &keys)) < 0)
        return r;
    if (!keys)
        return -ENOENT;
    if ((r = keys_find(m, L, keys, name, &ix, value)) < 0)
        return r;
    return sop__rmem_u64(m, values + L->values_values + 8 * ix, value);
}

int sop__py_instance_attr(sop_rmem *m, const sop_pylayout *L, uint64_t obj, const char *attr,
                          uint64_t *out)
{
    uint64_t type, flags = 0, value = 0;
    int r;
    if (!L->ma_keys)
        return -ENOENT; /* layout without dict knowledge */
    if ((r = sop__rmem_u64(m, obj + L->ob_type, &type)) < 0 ||
        (r = sop__rmem_u64(m, type + L->tp_flags, &flags)) < 0)
        return r;
    if (L->dict_log2 && (flags & TPFLAGS_MANAGED_DICT)) {
        uint64_t word;
        if (L->managed_values_word == -4) { /* 3.11 */
            if ((r = sop__rmem_u64(m, obj - 32, &word)) < 0)
                return r;
            if (word)
                r = values_get(m, L, type, word, attr, &value);
            else if ((r = sop__rmem_u64(m, obj - 24, &word)) == 0)
                r = word ? dict_get(m, L, word, attr, &value) : -ENOENT;
        } else if (L->managed_values_word == -3) { /* 3.12: tagged dict-or-values */
            if ((r = sop__rmem_u64(m, obj - 24, &word)) < 0)
                return r;
            if (word & 1)
                r = values_get(m, L, type, word + 1, attr, &value);
            else
                r = word ? dict_get(m, L, word, attr, &value) : -ENOENT;
        } else { /* 3.13+: managed dict pointer, else inline values */
            if ((r = sop__rmem_u64(m, obj - 24, &word)) < 0)
                return r;
            if (word) {
                r = dict_get(m, L, word, attr, &value);
            } else if (L->inline_values && (flags & TPFLAGS_INLINE_VALUES)) {
                /* after the object: sizeof(PyObject) on 3.13, tp_basicsize on 3.14+ (a
                 * subclass of a C type has them too) */
                uint8_t valid = 0;
                int64_t basic = 16;
                if (L->minor >= 14 &&
                    ((r = sop__rmem_read(m, type + L->tp_basicsize, &basic, 8)) < 0 || basic < 16 ||
                     basic > 65536 || basic % 8))
                    return r < 0 ? r : -ENOENT;
                uint64_t vals = obj + (uint64_t)basic;
                if ((r = sop__rmem_read(m, vals + 3, &valid, 1)) < 0)
                    return r;
                r = valid ? values_get(m, L, type, vals, attr, &value) : -ENOENT;
            } else {
                r = -ENOENT;
            }
        }
    } else {
        int64_t dictoffset;
        uint64_t dict;
        if ((r = sop__rmem_read(m, type + L->tp_dictoffset, &dictoffset, 8)) < 0)
            return r;
        if (dictoffset <= 0 || dictoffset > 4096)
            return -ENOENT;
        if ((r = sop__rmem_u64(m, obj + (uint64_t)dictoffset, &dict)) < 0)
            return r;
        r = dict ? dict_get(m, L, dict, attr, &value) : -ENOENT;
    }
    if (r < 0)
        return r;
    if (!value)
        return -ENOENT;
    *out = value;
    return 0;
}

int sop__py_instance_str_attr(sop_rmem *m, const sop_pylayout *L, uint64_t obj, const char *attr,
                              char *out, size_t cap)
{
    uint64_t value = 0;
    int r = sop__py_instance_attr(m, L, obj, attr, &value);
    if (r < 0)
        return r;
    return sop__rmem_unicode(m, &L->str, value, out, cap);
}

int sop__py_dict_str(sop_rmem *m, const sop_pylayout *L, uint64_t dict, const char *key, char *out,
                     size_t cap)
{
    uint64_t value = 0;
    if (!L->ma_keys || !dict)
        return -ENOENT;
    int r = dict_get(m, L, dict, key, &value);
    if (r < 0)
        return r;
    if (!value)
        return -ENOENT;
    return sop__rmem_unicode(m, &L->str, value, out, cap);
}
