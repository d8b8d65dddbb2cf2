/* heap_types.c — the census's types: a type pointer met in a GC list or a container resolved
 * once (validated as a real type object: its own type a type, a printable tp_name), kept in an
 * open-addressing index with its sizes and kind. Part of the heap walk (heap_walk_int.h);
 * depends on remote_mem.c and py_names.c. */
#include "heap_walk_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py_names.h"

/* 1 when `type` looks like a type object: its own type (the metatype) is a type whose
 * metatype chain reaches PyType_Type (its own type) within a few steps, with
 * Py_TPFLAGS_TYPE_SUBCLASS on the way; 0 when not; a fatal read error (-ESRCH, ...). */
static int is_type_object(heap_walker *w, uint64_t type)
{
    uint64_t t = type;
    for (int depth = 0; depth < 6; depth++) {
        uint64_t meta = 0, flags = 0;
        int r;
        if ((r = sop__rmem_u64(&w->mem, t + w->L.ob_type, &meta)) < 0 || !meta ||
            (r = sop__rmem_u64(&w->mem, meta + w->L.tp_flags, &flags)) < 0)
            return fatal(r) ? r : 0;
        if (!(flags & TPFLAGS_TYPE_SUBCLASS))
            return 0;
        if (meta == t)
            return 1; /* PyType_Type */
        t = meta;
    }
    return 0;
}

static bool grow_index(heap_walker *w)
{
    size_t ncap = w->index_cap ? w->index_cap * 2 : 4096;
    uint32_t *ni = calloc(ncap, sizeof *ni);
    if (!ni)
        return false;
    for (size_t i = 0; i < w->ntypes; i++) {
        if (w->types[i].is_twin)
            continue;
        size_t h = hash_ptr(w->types[i].t.type) & (ncap - 1);
        while (ni[h])
            h = (h + 1) & (ncap - 1);
        ni[h] = (uint32_t)(i + 1);
    }
    free(w->index);
    w->index = ni;
    w->index_cap = ncap;
    return true;
}

/* The entry of type `type`, resolved (and validated) the first time it is met. NULL when it
 * is not a valid type of a GC object (*err -EINVAL), or on -ENOMEM / read errors. */
type_entry *sop__heap_resolve_type(heap_walker *w, uint64_t type, bool untracked, int *err)
{
    *err = 0;
    if (w->index_cap) {
        size_t h = hash_ptr(type) & (w->index_cap - 1);
        for (size_t k = 0; k < w->index_cap && w->index[h]; k++, h = (h + 1) & (w->index_cap - 1))
            if (w->types[w->index[h] - 1].t.type == type)
                return &w->types[w->index[h] - 1];
    }
    const sop_pylayout *L = &w->L;
    uint8_t b[TYPE_READ];
    if (!type || (type & 7) || (*err = sop__rmem_read(&w->mem, type, b, sizeof b)) < 0) {
        if (!*err)
            *err = -EINVAL;
        return NULL;
    }
    uint64_t flags = rd64(b, L->tp_flags), basic = rd64(b, L->tp_basicsize),
             item = rd64(b, L->tp_itemsize), tp_name = rd64(b, L->tp_name);
    char name[128];
    int r = 0, is_type = 0;
    if (!(flags & TPFLAGS_HAVE_GC) != untracked || basic < 16 || basic > (1u << 24) ||
        item > (1u << 16) || (r = sop__rmem_read_cstr(&w->mem, tp_name, name, sizeof name)) < 0 ||
        (is_type = is_type_object(w, type)) <= 0) {
        *err = fatal(r) ? r : is_type < 0 ? is_type : -EINVAL;
        return NULL;
    }
    if (w->ntypes >= MAX_TYPES) {
        *err = -E2BIG;
        return NULL;
    }
    if (w->ntypes == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 256;
        type_entry *nt = realloc(w->types, ncap * sizeof *nt);
        if (!nt) {
            *err = -ENOMEM;
            return NULL;
        }
        w->types = nt;
        w->cap = ncap;
    }
    if ((w->ntypes + 1) * 2 > w->index_cap && !grow_index(w)) {
        *err = -ENOMEM;
        return NULL;
    }
    type_entry *e = &w->types[w->ntypes];
    memset(e, 0, sizeof *e);
    e->t.type = type;
    e->basicsize = basic;
    e->itemsize = item;
    e->flags = flags;
    e->untracked = e->t.untracked = untracked;
    if (flags & TPFLAGS_HEAPTYPE) {
        /* A class: __name__ is tp_name after its last dot, __module__ is in its dict. */
        const char *dot = strrchr(name, '.');
        char module[96] = "";
        uint64_t dict = rd64(b, L->tp_dict);
        if (sop__py_dict_str(&w->mem, L, dict, "__module__", module, sizeof module) < 0 && dot)
            snprintf(module, sizeof module, "%.*s", (int)(dot - name < 95 ? dot - name : 95), name);
        const char *base = dot ? dot + 1 : name;
        if (module[0] && strcmp(module, "builtins") != 0)
            snprintf(e->t.name, sizeof e->t.name, "%.63s.%.63s", module, base);
        else
            snprintf(e->t.name, sizeof e->t.name, "%s", base);
    } else {
        snprintf(e->t.name, sizeof e->t.name, "%s", name);
        if (strcmp(name, "dict") == 0)
            e->kind = KIND_DICT;
        else if (strcmp(name, "list") == 0)
            e->kind = KIND_LIST;
        else if (strcmp(name, "set") == 0 || strcmp(name, "frozenset") == 0)
            e->kind = KIND_SET;
        else if (strcmp(name, "tuple") == 0)
            e->kind = KIND_TUPLE;
        else if (strcmp(name, "bytes") == 0)
            e->leaf = LEAF_BYTES;
        else if (strcmp(name, "bytearray") == 0)
            e->leaf = LEAF_BYTEARRAY;
        else if (strcmp(name, "str") == 0)
            e->leaf = LEAF_STR;
        else if (strcmp(name, "int") == 0 || strcmp(name, "bool") == 0)
            e->leaf = LEAF_INT;
        else if (strcmp(name, "numpy.ndarray") == 0)
            e->leaf = LEAF_NDARRAY;
    }
    size_t h = hash_ptr(type) & (w->index_cap - 1);
    while (w->index[h])
        h = (h + 1) & (w->index_cap - 1);
    w->index[h] = (uint32_t)(w->ntypes + 1);
    w->ntypes++;
    return e;
}
