/* heap_sizes.c — how many bytes the census counts for an object: its type's basic and item
 * sizes, dict keys, a NumPy array's data, and the untracked objects (str, bytes, int, arrays)
 * met as items of tracked containers and instances, each counted once. Part of the heap walk
 * (heap_walk_int.h); every scan bounded per container and per census. */
#include "heap_walk_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t round16(uint64_t n)
{
    return (n + 15) & ~(uint64_t)15;
}

/* Size of a dict's keys table (when the dict owns one: not shared, not the empty one). */
static uint64_t dict_keys_bytes(heap_walker *w, uint64_t obj)
{
    const sop_pylayout *L = &w->L;
    uint8_t d[48];
    if (sop__rmem_read(&w->mem, obj, d, sizeof d) < 0)
        return 0;
    int64_t used = (int64_t)rd64(d, L->dict_used);
    uint64_t keys = rd64(d, L->ma_keys), values = rd64(d, L->ma_values);
    if (used <= 0 || !keys || values) /* empty (shared empty keys) or split (keys shared) */
        return 0;
    uint8_t k[16];
    if (sop__rmem_read(&w->mem, keys, k, sizeof k) < 0)
        return 0;
    if (L->dict_log2) {
        unsigned log2 = k[8], log2ib = k[9], kind = k[10];
        if (log2 > 30 || log2ib > 33 || kind > 2)
            return 0;
        uint64_t usable = ((1ull << log2) << 1) / 3;
        return L->dk_indices + (1ull << log2ib) + usable * (kind == 0 ? 24 : 16);
    }
    int64_t size = (int64_t)rd64(k, L->dk_size);
    if (size <= 0 || size > (1ll << 30))
        return 0;
    uint64_t ib = size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffll ? 4 : 8;
    uint64_t usable = ((uint64_t)size << 1) / 3;
    return L->dk_indices + (uint64_t)size * ib + usable * 24;
}

/* Insert p into an open-addressing set; false when already there or the set is full. */
static bool set_insert(uint64_t **set, size_t *n, size_t *cap, uint64_t p)
{
    if ((*n + 1) * 2 > *cap) {
        size_t ncap = *cap ? *cap * 2 : 1u << 14;
        if (ncap > (1u << 26)) /* 512 MiB of set: stop counting new ones */
            return false;
        uint64_t *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return false;
        for (size_t i = 0; i < *cap; i++) {
            if (!(*set)[i])
                continue;
            size_t h = hash_ptr((*set)[i]) & (ncap - 1);
            while (ns[h])
                h = (h + 1) & (ncap - 1);
            ns[h] = (*set)[i];
        }
        free(*set);
        *set = ns;
        *cap = ncap;
    }
    size_t h = hash_ptr(p) & (*cap - 1);
    while ((*set)[h]) {
        if ((*set)[h] == p)
            return false;
        h = (h + 1) & (*cap - 1);
    }
    (*set)[h] = p;
    (*n)++;
    return true;
}

static bool set_has(const uint64_t *set, size_t cap, uint64_t p)
{
    if (!cap)
        return false;
    size_t h = hash_ptr(p) & (cap - 1);
    for (size_t k = 0; k < cap && set[h]; k++, h = (h + 1) & (cap - 1))
        if (set[h] == p)
            return true;
    return false;
}

/* Element size of a numpy dtype number (NPY_BOOL..NPY_HALF); 0 for flexible ones. */
static uint64_t npy_elsize(int type_num)
{
    static const uint8_t sizes[] = {1, 1,  1, 2,  2,  4, 4, 8, 8, 8, 8, 4,
                                    8, 16, 8, 16, 32, 8, 0, 0, 0, 8, 8, 2};
    return type_num >= 0 && type_num < (int)sizeof sizes ? sizes[type_num] : 0;
}

/* A numpy array's data buffer size when it owns it (numpy 1.x and 2.x PyArrayObject: data 16,
 * nd 24, dimensions 32, descr 56, flags 64; PyArray_Descr type_num 28, elsize 32 (1.x int) or
 * 40 (2.x intp)); 0 when it is a view or unreadable. */
static uint64_t ndarray_nbytes(heap_walker *w, uint64_t obj)
{
    uint8_t a[72];
    if (sop__rmem_read(&w->mem, obj, a, sizeof a) < 0)
        return 0;
    int32_t nd, flags;
    memcpy(&nd, a + 24, 4);
    memcpy(&flags, a + 64, 4);
    uint64_t dims = rd64(a, 32), descr = rd64(a, 56);
    if (!(flags & NPY_OWNDATA) || nd < 0 || nd > 64 || !descr || !rd64(a, 16))
        return 0;
    uint8_t d[48];
    if (sop__rmem_read(&w->mem, descr, d, sizeof d) < 0)
        return 0;
    int32_t type_num, el32;
    memcpy(&type_num, d + 28, 4);
    memcpy(&el32, d + 32, 4);
    uint64_t el = npy_elsize(type_num);
    if (!el)
        el = el32 > 0 && el32 < (1 << 24) ? (uint64_t)el32 : rd64(d, 40);
    if (!el || el > (1u << 24))
        return 0;
    int64_t dv[64];
    if (nd && sop__rmem_read(&w->mem, dims, dv, 8 * (size_t)nd) < 0)
        return 0;
    uint64_t n = el;
    for (int i = 0; i < nd; i++) {
        if (dv[i] < 0 || (dv[i] && n > (1ull << 48) / (uint64_t)dv[i]))
            return 0;
        n *= (uint64_t)dv[i];
    }
    return n;
}

/* Estimated bytes of an untracked object (header in h: refcnt, type, size, one more word). */
static uint64_t leaf_bytes(heap_walker *w, const type_entry *e, uint64_t obj, const uint8_t *h)
{
    const sop_pylayout *L = &w->L;
    int64_t sz = (int64_t)rd64(h, L->ob_size);
    switch (e->leaf) {
    case LEAF_BYTES:
        return round16(e->basicsize + (sz > 0 && sz < (1ll << 40) ? (uint64_t)sz : 0));
    case LEAF_BYTEARRAY: { /* ob_alloc right after the var header */
        int64_t alloc = (int64_t)rd64(h, L->ob_size + 8);
        return round16(e->basicsize) + (alloc > 0 && alloc < (1ll << 40) ? (uint64_t)alloc : 0);
    }
    case LEAF_STR: {
        uint8_t u[48];
        if (L->str.uni_state + 4 > sizeof u || sop__rmem_read(&w->mem, obj, u, sizeof u) < 0)
            return round16(e->basicsize);
        int64_t len = (int64_t)rd64(u, L->str.uni_length);
        uint32_t state;
        memcpy(&state, u + L->str.uni_state, 4);
        unsigned kind = (state >> L->str.state_kind_shift) & 7u;
        bool compact = (state >> (L->str.state_kind_shift + 3)) & 1u;
        bool ascii = (state >> (L->str.state_kind_shift + 4)) & 1u;
        if (len < 0 || len > (1ll << 40) || !compact || (kind != 1 && kind != 2 && kind != 4))
            return round16(e->basicsize);
        uint64_t head = ascii ? L->str.uni_ascii_size : L->str.uni_compact_size;
        return round16(head + ((uint64_t)len + 1) * kind);
    }
    case LEAF_INT: { /* 3.12+: lv_tag = ndigits << 3 | sign; before: signed ob_size */
        uint64_t digits = L->minor >= 12 ? rd64(h, L->ob_size) >> 3 : (uint64_t)(sz < 0 ? -sz : sz);
        return round16(e->basicsize + (digits < (1u << 30) ? digits * e->itemsize : 0));
    }
    case LEAF_NDARRAY: {
        uint64_t nb = ndarray_nbytes(w, obj);
        w->numpy_seen = true;
        if (nb) {
            w->numpy_arrays++;
            w->numpy_nbytes += nb;
        }
        return round16(e->basicsize); /* the data buffer is counted apart (numpy) */
    }
    default:
        if (e->itemsize && sz != 0 && sz > -(1ll << 32) && sz < (1ll << 32))
            return round16(e->basicsize + e->itemsize * (uint64_t)(sz < 0 ? -sz : sz));
        return round16(e->basicsize);
    }
}

/* The entry counting the untracked objects of container type `e` (CPython untracks dicts
 * and tuples holding only atomic values): same name, marked untracked. */
static type_entry *twin_of(heap_walker *w, type_entry *e)
{
    if (e->twin)
        return &w->types[e->twin - 1];
    size_t ie = (size_t)(e - w->types);
    if (w->ntypes == w->cap) {
        size_t ncap = w->cap * 2;
        type_entry *nt = realloc(w->types, ncap * sizeof *nt);
        if (!nt)
            return NULL;
        w->types = nt;
        w->cap = ncap;
    }
    e = &w->types[ie];
    type_entry *t = &w->types[w->ntypes];
    *t = *e;
    t->gcount = t->gbytes = 0;
    t->t.count = t->t.bytes = t->t.frozen = 0;
    t->untracked = t->t.untracked = true;
    t->twin = 0;
    t->is_twin = true;
    e->twin = ++w->ntypes; /* not in the index: reached only through e */
    return t;
}

/* Count the untracked objects among `n` item pointers of a container (each object once);
 * untracked dicts, lists and tuples are counted and looked into, `depth` levels at most. */
static int scan_items(heap_walker *w, const uint64_t *items, size_t n, int depth)
{
    const sop_pylayout *L = &w->L;
    for (size_t i = 0; i < n; i++) {
        uint64_t p = items[i];
        if (p < SOP_RMEM_PAGE || (p & 7) || set_has(w->seen, w->seen_cap, p))
            continue;
        uint8_t h[40];
        int r = sop__rmem_read(&w->mem, p, h, sizeof h);
        if (r < 0) {
            if (fatal(r))
                return r;
            continue;
        }
        uint64_t type = rd64(h, L->ob_type);
        if (set_has(w->bad, w->bad_cap, type))
            continue;
        type_entry *e = sop__heap_resolve_type(w, type, true, &r);
        if (e && !e->untracked && depth > 0 &&
            (e->kind == KIND_DICT || e->kind == KIND_LIST || e->kind == KIND_TUPLE)) {
            uint8_t node[48];
            if (sop__rmem_read(&w->mem, p - L->gc_head_size, node, sizeof node) < 0 ||
                rd64(node, 0) != 0) /* _gc_next 0: not tracked (tracked ones are walked) */
                continue;
            if (!set_insert(&w->seen, &w->seen_n, &w->seen_cap, p))
                continue;
            size_t ie = (size_t)(e - w->types);
            type_entry *t = twin_of(w, e);
            if (!t)
                return -ENOMEM;
            t->gcount++;
            t->gbytes += sop__heap_object_bytes(w, t, p, node);
            w->untracked++;
            if ((r = sop__heap_scan_container(w, &w->types[w->types[ie].twin - 1], p, node,
                                              depth - 1)) < 0)
                return r;
            continue;
        }
        if (!e || !e->untracked) {
            if (fatal(r))
                return r;
            if (type && !e) /* non-types: remembered, never resolved again */
                (void)set_insert(&w->bad, &w->bad_n, &w->bad_cap, type);
            continue;
        }
        if (!set_insert(&w->seen, &w->seen_n, &w->seen_cap, p))
            continue;
        e->gcount++;
        e->gbytes += leaf_bytes(w, e, p, h);
        w->untracked++;
    }
    return 0;
}

/* The attributes of an instance of a class: its __dict__ when the GC does not track it (a
 * dict holding only atomic values) or the values array of a managed dict (3.11+), scanned for
 * untracked objects (the payloads a cache entry holds). Offsets as in py_names.c. */
int sop__heap_scan_instance(heap_walker *w, const type_entry *e, uint64_t obj)
{
    const sop_pylayout *L = &w->L;
    uint64_t dict = 0, values = 0, nvalues = 0, word = 0;
    if (L->dict_log2 && (e->flags & TPFLAGS_MANAGED_DICT)) {
        if (L->managed_values_word == -4) { /* 3.11: values at -4 words, dict at -3 */
            if (sop__rmem_u64(&w->mem, obj - 32, &values) < 0)
                return 0;
            if (!values && sop__rmem_u64(&w->mem, obj - 24, &dict) < 0)
                return 0;
        } else if (L->managed_values_word == -3) { /* 3.12: tagged dict-or-values */
            if (sop__rmem_u64(&w->mem, obj - 24, &word) < 0)
                return 0;
            if (word & 1)
                values = word + 1;
            else
                dict = word;
        } else { /* 3.13: dict at -3 words, else inline values after the header */
            if (sop__rmem_u64(&w->mem, obj - 24, &dict) < 0)
                return 0;
            if (!dict && L->inline_values && (e->flags & (1ul << 2))) {
                uint8_t hv[4];
                if (sop__rmem_read(&w->mem, obj + 16, hv, sizeof hv) < 0 || !hv[3])
                    return 0;
                values = obj + 16;
                nvalues = hv[1];
            }
        }
        if (values && !nvalues) { /* shared keys of the class: their entry count */
            uint64_t keys = 0;
            uint8_t k[32];
            if (sop__rmem_u64(&w->mem, e->t.type + L->ht_cached_keys, &keys) < 0 || !keys ||
                sop__rmem_read(&w->mem, keys, k, sizeof k) < 0)
                return 0;
            nvalues = rd64(k, L->dk_nentries);
        }
    } else {
        int64_t off = 0;
        if (sop__rmem_read(&w->mem, e->t.type + L->tp_dictoffset, &off, 8) < 0 || off <= 0 ||
            off > 4096 || sop__rmem_u64(&w->mem, obj + (uint64_t)off, &dict) < 0)
            return 0;
    }
    if (values && nvalues) {
        uint64_t buf[64];
        size_t n = nvalues > 64 ? 64 : (size_t)nvalues;
        if (sop__rmem_read(&w->mem, values + L->values_values, buf, 8 * n) < 0)
            return 0;
        return scan_items(w, buf, n, 2);
    }
    if (dict) /* a tracked dict is walked on its own; an untracked one is counted here */
        return scan_items(w, &dict, 1, 2);
    return 0;
}

/* The item pointers of an exact list, tuple or dict (values; keys too when not all str),
 * read in chunks and scanned for untracked objects. */
int sop__heap_scan_container(heap_walker *w, const type_entry *e, uint64_t obj, const uint8_t *node,
                             int depth)
{
    const sop_pylayout *L = &w->L;
    uint64_t buf[SCAN_CHUNK];
    int64_t n = (int64_t)rd64(node, L->gc_head_size + L->ob_size);
    uint64_t base = 0, stride = 1, off = 0;
    if (e->kind == KIND_TUPLE) {
        base = obj + L->ob_size + 8;
    } else if (e->kind == KIND_LIST) {
        if (sop__rmem_u64(&w->mem, obj + L->list_items, &base) < 0)
            return 0;
    } else if (e->kind == KIND_DICT) {
        uint8_t d[48], k[48];
        if (sop__rmem_read(&w->mem, obj, d, sizeof d) < 0)
            return 0;
        uint64_t keys = rd64(d, L->ma_keys), split = rd64(d, L->ma_values);
        if (!keys || (int64_t)rd64(d, L->dict_used) <= 0 ||
            sop__rmem_read(&w->mem, keys, k, sizeof k) < 0)
            return 0;
        n = (int64_t)rd64(k, L->dk_nentries);
        if (split) { /* a split table (instance __dict__): the values are the dict's own */
            base = split + L->values_values;
        } else if (L->dict_log2) {
            unsigned log2ib = k[9], kind = k[10];
            if (log2ib > 33 || kind > 2)
                return 0;
            base = keys + L->dk_indices + (1ull << log2ib);
            /* {hash, key, value}: keys and values; {key, value} (str keys): values */
            stride = kind == 0 ? 3 : 2;
            off = 1;
        } else {
            int64_t size = (int64_t)rd64(k, L->dk_size);
            if (size <= 0 || size > (1ll << 30))
                return 0;
            uint64_t ib = size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffll ? 4 : 8;
            base = keys + L->dk_indices + (uint64_t)size * ib;
            stride = 3;
            off = 1;
        }
        n *= (int64_t)stride;
    } else {
        return 0;
    }
    if (n <= 0 || !base)
        return 0;
    if ((uint64_t)n > MAX_SCAN_ITEMS * stride)
        n = (int64_t)(MAX_SCAN_ITEMS * stride);
    for (uint64_t at = 0; at < (uint64_t)n; at += SCAN_CHUNK) {
        size_t m = (uint64_t)n - at < SCAN_CHUNK ? (size_t)((uint64_t)n - at) : SCAN_CHUNK;
        if (w->scan_left < m) {
            w->scan_left = 0; /* spent: no more item scans in this census */
            return 0;
        }
        w->scan_left -= m;
        if (sop__rmem_read(&w->mem, base + 8 * at, buf, 8 * m) < 0)
            return 0;
        size_t k = 0;
        for (size_t j = 0; j < m; j++) /* dict entries: {hash, key, value} or {key, value} */
            if (stride == 1 || (at + j) % stride >= off)
                buf[k++] = buf[j];
        int r = scan_items(w, buf, k, depth);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Estimated bytes of the object at obj (header already read into node, at gc head). */
uint64_t sop__heap_object_bytes(heap_walker *w, const type_entry *e, uint64_t obj,
                                const uint8_t *node)
{
    const sop_pylayout *L = &w->L;
    uint64_t n = e->basicsize;
    if (e->itemsize) {
        int64_t sz = (int64_t)rd64(node, L->gc_head_size + L->ob_size);
        if (sz < 0)
            sz = -sz;
        if (sz < (1ll << 32))
            n += e->itemsize * (uint64_t)sz;
    }
    n = round16(n) + L->gc_head_size;
    if (L->managed_preheader && (e->flags & (TPFLAGS_MANAGED_DICT | TPFLAGS_MANAGED_WEAKREF)))
        n += L->managed_preheader;
    uint64_t v = 0;
    switch (e->kind) {
    case KIND_DICT:
        n += dict_keys_bytes(w, obj);
        break;
    case KIND_LIST:
        if (sop__rmem_u64(&w->mem, obj + L->list_allocated, &v) == 0 && v < (1ull << 36))
            n += 8 * v;
        break;
    case KIND_SET: {
        uint64_t mask = 0, table = 0;
        if (sop__rmem_u64(&w->mem, obj + L->set_mask, &mask) == 0 &&
            sop__rmem_u64(&w->mem, obj + L->set_table, &table) == 0 &&
            table != obj + L->set_smalltable && mask < (1ull << 34))
            n += 16 * (mask + 1);
        break;
    }
    default:
        break;
    }
    return n;
}
