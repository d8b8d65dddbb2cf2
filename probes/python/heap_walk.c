/* heap_walk.c — sop__heap_census: walk the GC lists of the main interpreter (generations 0-2
 * and the permanent generation) from outside, resolve each type pointer once (validated as a
 * real type object), count objects per type and estimate their sizes. Every walk is bounded,
 * each node's back link is checked (which also catches loops), a list that turns out
 * inconsistent is re-walked (twice at most) and otherwise kept as far as it got, marked
 * partial. Layouts from py_layouts.c; reads through remote_mem.c's page cache.
 * Depends on libc, py_runtime.c (the runtime found for the collection), py_names.c. */
#include "heap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "py_names.h"
#include "python.h"

#define MAX_INTERPS 64
#define MAX_LIST_OBJECTS                                                                           \
    (1ull << 27) /* per list: far above any heap seen, below a loop forever                        \
                  */
#define MAX_TYPES 65536u
#define LIST_RETRIES 2
#define TPFLAGS_MANAGED_WEAKREF (1ul << 3)
#define TPFLAGS_MANAGED_DICT (1ul << 4)
#define TPFLAGS_HEAPTYPE (1ul << 9)
#define TPFLAGS_HAVE_GC (1ul << 14)
#define TPFLAGS_TYPE_SUBCLASS (1ul << 31)
#define TYPE_READ 272u /* PyTypeObject up to tp_dict */
#define NODE_READ 48u  /* PyGC_Head + ob_refcnt, ob_type, ob_size + one more word */

enum { KIND_PLAIN, KIND_DICT, KIND_LIST, KIND_SET, KIND_TUPLE };
/* Objects the GC does not track, met as items of tracked lists, tuples and dicts. */
enum { LEAF_OTHER, LEAF_BYTES, LEAF_BYTEARRAY, LEAF_STR, LEAF_INT, LEAF_NDARRAY };
#define MAX_SCAN_ITEMS 65536u /* items looked at per container */
/* Per census (issue 28): item pointers read from containers in all (64 MiB of reads: 50k
 * lists that each claim 2^40 items over one 65,536-item array were 25 GB), and how long the
 * target may stay stopped under --stop. Past either the census is kept as far as it got,
 * marked partial. */
#define CENSUS_SCAN_ITEMS (8ull << 20)
#define STOP_PAUSE_MS 3000.0
#define SCAN_CHUNK 512u
#define NPY_OWNDATA 0x4

typedef struct {
    sop_heap_type t;
    uint64_t gcount, gbytes; /* counted in the list walk in progress */
    uint64_t basicsize, itemsize, flags;
    int kind;
    int leaf; /* untracked types: LEAF_* */
    bool untracked;
    size_t twin;  /* exact dict/list/tuple: 1 + index of the entry of its untracked objects */
    bool is_twin; /* that entry (not in the index) */
} type_entry;

typedef struct {
    sop_rmem mem;
    sop_pylayout L;
    int minor;
    uint64_t runtime;
    sop_missing *missing;
    type_entry *types;
    size_t ntypes, cap;
    uint32_t *index; /* open addressing, type address -> 1 + index in types; 0 empty */
    size_t index_cap;
    uint64_t *seen; /* untracked objects already counted (open addressing; 0 empty) */
    size_t seen_n, seen_cap;
    uint64_t *bad; /* addresses that are not the type of an untracked object we count */
    size_t bad_n, bad_cap;
    uint64_t numpy_arrays, numpy_nbytes, untracked;
    bool numpy_seen;
    uint64_t scan_left; /* CENSUS_SCAN_ITEMS, counted down */
    double deadline_ms; /* --stop: when the pause budget is spent (0: none) */
} heap_walker;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t rd64(const uint8_t *b, uint32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

static size_t hash_ptr(uint64_t p)
{
    return (size_t)((p >> 3) * 0x9E3779B97F4A7C15ull >> 20);
}

/* A NUL-terminated C string at addr (tp_name), printable ASCII only; bounded by cap. */
static int read_cstr(sop_rmem *m, uint64_t addr, char *out, size_t cap)
{
    size_t o = 0;
    while (o + 1 < cap) {
        /* read up to the end of the page, so a name near a mapping's end stays readable */
        size_t n = SOP_RMEM_PAGE - (size_t)((addr + o) & (SOP_RMEM_PAGE - 1));
        if (n > cap - 1 - o)
            n = cap - 1 - o;
        int r = sop__rmem_read(m, addr + o, out + o, n);
        if (r < 0)
            return r;
        for (size_t i = 0; i < n; i++) {
            char c = out[o + i];
            if (c == '\0')
                return o + i > 0 ? 0 : -EINVAL;
            if (c < 0x20 || c > 0x7e)
                return -EINVAL;
        }
        o += n;
    }
    out[cap - 1] = '\0';
    return 0; /* cut at cap */
}

static bool fatal(int r)
{
    return r == -ESRCH || r == -EPERM || r == -EACCES || r == -ENOMEM;
}

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
static type_entry *resolve_type(heap_walker *w, uint64_t type, bool untracked, int *err)
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
        item > (1u << 16) || (r = read_cstr(&w->mem, tp_name, name, sizeof name)) < 0 ||
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

static int scan_container(heap_walker *w, const type_entry *e, uint64_t obj, const uint8_t *node,
                          int depth);
static uint64_t object_bytes(heap_walker *w, const type_entry *e, uint64_t obj,
                             const uint8_t *node);

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
        type_entry *e = resolve_type(w, type, true, &r);
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
            t->gbytes += object_bytes(w, t, p, node);
            w->untracked++;
            if ((r = scan_container(w, &w->types[w->types[ie].twin - 1], p, node, depth - 1)) < 0)
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
static int scan_instance(heap_walker *w, const type_entry *e, uint64_t obj)
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
static int scan_container(heap_walker *w, const type_entry *e, uint64_t obj, const uint8_t *node,
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
static uint64_t object_bytes(heap_walker *w, const type_entry *e, uint64_t obj, const uint8_t *node)
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

/* Walk the list whose head is at `head`. Returns 0 when walked end to end, -EAGAIN when it
 * met inconsistent data (then *why says where), or a fatal read error (-ESRCH, -EPERM, ...).
 * Counts go to the entries' gcount/gbytes; *walked gets the objects counted. */
static int walk_list(heap_walker *w, uint64_t head, uint64_t *walked, char *why, size_t whylen)
{
    const sop_pylayout *L = &w->L;
    uint64_t prev = head, node = 0;
    *walked = 0;
    int r = sop__rmem_u64(&w->mem, head, &node);
    if (r < 0)
        return r;
    node &= ~(uint64_t)3;
    uint8_t b[NODE_READ];
    for (uint64_t n = 0; node != head; n++) {
        if (n >= MAX_LIST_OBJECTS) {
            snprintf(why, whylen, "more than %llu objects", (unsigned long long)MAX_LIST_OBJECTS);
            return -EAGAIN;
        }
        if (!node || (node & 7)) {
            snprintf(why, whylen, "bad link after %llu objects", (unsigned long long)n);
            return -EAGAIN;
        }
        if ((r = sop__rmem_read(&w->mem, node, b, sizeof b)) < 0) {
            if (fatal(r))
                return r;
            snprintf(why, whylen, "unreadable node after %llu objects", (unsigned long long)n);
            return -EAGAIN;
        }
        if (w->deadline_ms > 0 && (n & 1023) == 1023 && now_ms() > w->deadline_ms) {
            snprintf(why, whylen,
                     "the pause budget of %.0f ms under --stop was spent after %llu "
                     "objects",
                     STOP_PAUSE_MS, (unsigned long long)n);
            return -ETIME;
        }
        uint64_t next = rd64(b, 0) & ~(uint64_t)3, back = rd64(b, 8) & ~(uint64_t)3;
        if (back != prev) {
            /* The back link disagrees: a stale cached page, or the list moved. */
            if ((r = sop__rmem_read_direct(&w->mem, node, b, sizeof b)) < 0 ||
                (rd64(b, 8) & ~(uint64_t)3) != prev) {
                snprintf(why, whylen, "list changed under the walk after %llu objects",
                         (unsigned long long)n);
                return -EAGAIN;
            }
            next = rd64(b, 0) & ~(uint64_t)3;
        }
        uint64_t obj = node + L->gc_head_size;
        uint64_t type = rd64(b, L->gc_head_size + L->ob_type);
        type_entry *e = resolve_type(w, type, false, &r);
        if (e && e->untracked) {
            e = NULL;
            r = -EINVAL;
        }
        if (!e) {
            if (fatal(r))
                return r;
            snprintf(why, whylen, "%s after %llu objects",
                     r == -E2BIG ? "too many types" : "not a type", (unsigned long long)n);
            return -EAGAIN;
        }
        e->gcount++;
        e->gbytes += object_bytes(w, e, obj, b);
        if (e->kind == KIND_LIST || e->kind == KIND_TUPLE || e->kind == KIND_DICT) {
            if ((r = scan_container(w, e, obj, b, 3)) < 0)
                return r;
        } else if (e->flags & TPFLAGS_HEAPTYPE) {
            if ((r = scan_instance(w, e, obj)) < 0)
                return r;
        }
        (*walked)++;
        prev = node;
        node = next;
    }
    return 0;
}

static int cmp_types(const void *pa, const void *pb)
{
    const sop_heap_type *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    return strcmp(a->name, b->name);
}

static const char *const LIST_NAMES[SOP_HEAP_LISTS] = {"generation 0", "generation 1",
                                                       "generation 2", "permanent generation"};

static int census(heap_walker *w, unsigned flags, int pid, const char *proc_root, sop_pyheap *h)
{
    const sop_pylayout *L = &w->L;
    uint64_t interp = 0, last = 0;
    int r = sop__rmem_u64(&w->mem, w->runtime + L->rt_interp_head, &interp);
    if (r < 0)
        return r == -EFAULT ? -ENOEXEC : r;
    for (int i = 0; interp && i < MAX_INTERPS; i++) { /* the main interpreter is the last */
        last = interp;
        if (sop__rmem_u64(&w->mem, interp + L->is_next, &interp) < 0)
            break;
    }
    if (!last) {
        snprintf(h->partial, sizeof h->partial, "no interpreter (not initialized or finalizing)");
        sop__missing_add(w->missing, "heap", "%s", h->partial);
        return 0;
    }
    uint64_t gc = L->rt_gc ? w->runtime + L->rt_gc : last + L->is_gc;
    sop_stopped st;
    memset(&st, 0, sizeof st);
    if (flags & SOP_HEAP_STOP) {
        char err[160] = "";
        r = sop__stop_process(pid, proc_root, &st, err, sizeof err);
        if (r < 0) {
            sop__missing_add(w->missing, "heap", "could not stop the process: %s", err);
            return r;
        }
        h->stopped = true;
    }
    double t0 = now_ms();
    h->complete = true;
    w->scan_left = CENSUS_SCAN_ITEMS;
    w->deadline_ms = h->stopped ? t0 + STOP_PAUSE_MS : 0;
    int rc = 0;
    for (int g = 0; g < SOP_HEAP_LISTS; g++) {
        uint64_t head =
            g < 3 ? gc + L->gc_generations + (uint32_t)g * L->gc_gen_size : gc + L->gc_permanent;
        uint64_t walked = 0;
        char why[160] = "";
        int tries = 0;
        for (;;) {
            /* A collection in progress moves objects between lists: wait for it a little. */
            for (int k = 0; k < 20; k++) {
                int32_t collecting = 0;
                if (sop__rmem_read_direct(&w->mem, gc + L->gc_collecting, &collecting, 4) < 0 ||
                    collecting != 1)
                    break;
                usleep(5000);
            }
            for (size_t i = 0; i < w->ntypes; i++)
                w->types[i].gcount = w->types[i].gbytes = 0;
            r = walk_list(w, head, &walked, why, sizeof why);
            if (r != -EAGAIN || ++tries > LIST_RETRIES)
                break;
            h->restarts++;
            sop__rmem_flush(&w->mem);
        }
        if (r < 0 && r != -EAGAIN && r != -ETIME) {
            rc = r;
            break;
        }
        /* Keep what was counted, complete or not. */
        for (size_t i = 0; i < w->ntypes; i++) {
            w->types[i].t.count += w->types[i].gcount;
            w->types[i].t.bytes += w->types[i].gbytes;
            if (g == SOP_HEAP_LISTS - 1)
                w->types[i].t.frozen += w->types[i].gcount;
        }
        h->list_objects[g] = walked;
        h->list_complete[g] = r == 0;
        h->objects += walked;
        if ((r == -EAGAIN || r == -ETIME) && h->complete) {
            h->complete = false;
            snprintf(h->partial, sizeof h->partial, "%s: %s (%llu objects counted there)",
                     LIST_NAMES[g], why, (unsigned long long)walked);
        }
        if (r == -ETIME)
            break; /* the lists after it are not walked: the target is resumed now */
    }
    if (w->scan_left == 0 && h->complete) {
        h->complete = false;
        snprintf(h->partial, sizeof h->partial,
                 "the read budget of %llu container items was spent: untracked objects "
                 "(str, bytes, int, arrays) are undercounted",
                 (unsigned long long)CENSUS_SCAN_ITEMS);
    }
    h->census_ms = now_ms() - t0;
    if (h->stopped)
        h->pause_ms = sop__resume_process(&st);
    if (rc < 0)
        return rc;
    int32_t en = 0;
    if (sop__rmem_read(&w->mem, gc + L->gc_enabled, &en, 4) == 0 && (en == 0 || en == 1))
        h->gc_enabled = en;
    if (!h->complete)
        sop__missing_add(w->missing, "heap", "census partial: %s", h->partial);
    size_t n = 0;
    h->types = calloc(w->ntypes ? w->ntypes : 1, sizeof *h->types);
    if (!h->types)
        return -ENOMEM;
    for (size_t i = 0; i < w->ntypes; i++) {
        if (!w->types[i].t.count)
            continue;
        h->types[n++] = w->types[i].t;
        h->bytes += w->types[i].t.bytes;
        if (w->types[i].untracked) /* what was kept: a restarted list's first try is not */
            h->untracked += w->types[i].t.count;
    }
    h->ntypes = n;
    qsort(h->types, n, sizeof *h->types, cmp_types);
    h->numpy_seen = w->numpy_seen;
    h->numpy_arrays = w->numpy_arrays;
    h->numpy_nbytes = w->numpy_nbytes;
    h->reads = w->mem.reads;
    return 0;
}

void sop__heap_free(sop_pyheap *h)
{
    if (!h)
        return;
    free(h->types);
    free(h);
}

static int census_at(int pid, const char *proc_root, unsigned flags, sop_rmem_source source,
                     void *ctx, int minor, uint64_t runtime, const sop_pyruntime *rt,
                     sop_pyheap **out, sop_missing *missing)
{
    *out = NULL;
    heap_walker w;
    memset(&w, 0, sizeof w);
    w.missing = missing;
    sop_pyheap *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    h->gc_enabled = INT64_MIN;
    int rc;
    if (source) {
        const sop_pylayout *L = sop__pylayout_table(minor);
        if (!L || !runtime) {
            free(h);
            return -ENOTSUP;
        }
        w.L = *L;
        w.runtime = runtime;
        snprintf(h->version, sizeof h->version, "3.%d", minor);
        flags &= ~SOP_HEAP_STOP;
    } else {
        sop_pyruntime fresh;
        const sop_pyruntime *found = sop__pyruntime_reuse(rt, pid, proc_root, &fresh, missing);
        if ((rc = found->rc) < 0) {
            free(h);
            return rc;
        }
        w.L = found->L;
        w.runtime = found->runtime;
        snprintf(h->version, sizeof h->version, "%s", found->version);
    }
    snprintf(h->layout, sizeof h->layout, "%s", w.L.source);
    if (!w.L.gc_head_size) {
        sop__missing_add(missing, "heap", "layout %s has no heap fields", w.L.source);
        free(h);
        return -ENOTSUP;
    }
    if (sop__rmem_open(&w.mem, pid, proc_root) < 0) {
        free(h);
        return -ENOMEM;
    }
    w.mem.source = source;
    w.mem.source_ctx = ctx;
    rc = census(&w, flags, pid, proc_root, h);
    if (!source && (rc == 0 || rc == -EFAULT)) {
        char path[300];
        snprintf(path, sizeof path, "%s/%d", proc_root ? proc_root : "/proc", pid);
        if (access(path, F_OK) < 0)
            rc = -ESRCH;
    }
    sop__rmem_close(&w.mem);
    free(w.types);
    free(w.index);
    free(w.seen);
    free(w.bad);
    if (rc < 0) {
        if (rc == -ESRCH)
            sop__missing_add(missing, "heap", "process %d exited during the census", pid);
        else if (rc == -EPERM || rc == -EACCES)
            sop__missing_add(missing, "heap", "memory of %d not readable: %s", pid,
                             sop__strerror(-rc));
        sop__heap_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

int sop__heap_census(int pid, const char *proc_root, unsigned flags, sop_pyheap **out,
                     sop_missing *missing)
{
    return sop__heap_census_with(NULL, pid, proc_root, flags, out, missing);
}

int sop__heap_census_with(const sop_pyruntime *rt, int pid, const char *proc_root, unsigned flags,
                          sop_pyheap **out, sop_missing *missing)
{
    return census_at(pid, proc_root ? proc_root : "/proc", flags, NULL, NULL, 0, 0, rt, out,
                     missing);
}

int sop__heap_census_fake(sop_rmem_source source, void *ctx, int minor, uint64_t runtime,
                          sop_pyheap **out, sop_missing *missing)
{
    if (!source) {
        *out = NULL;
        return -EINVAL;
    }
    return census_at(0, "/nonexistent-sop-fake-root", 0, source, ctx, minor, runtime, NULL, out,
                     missing);
}

static int cmp_names(const void *pa, const void *pb)
{
    return strcmp(((const sop_heap_type *)pa)->name, ((const sop_heap_type *)pb)->name);
}

static int cmp_grown(const void *pa, const void *pb)
{
    int64_t a = (int64_t)((const sop_heap_type *)pa)->bytes;
    int64_t b = (int64_t)((const sop_heap_type *)pb)->bytes;
    return a < b ? 1 : a > b ? -1 : cmp_names(pa, pb);
}

/* Copy of h's types sorted by name, those of one name merged (a class defined twice). */
static sop_heap_type *by_name(const sop_pyheap *h, size_t *n)
{
    sop_heap_type *t = malloc((h->ntypes ? h->ntypes : 1) * sizeof *t);
    if (!t)
        return NULL;
    if (h->ntypes)
        memcpy(t, h->types, h->ntypes * sizeof *t);
    qsort(t, h->ntypes, sizeof *t, cmp_names);
    size_t k = 0;
    for (size_t i = 0; i < h->ntypes; i++) {
        if (k && strcmp(t[k - 1].name, t[i].name) == 0) {
            t[k - 1].count += t[i].count;
            t[k - 1].bytes += t[i].bytes;
            t[k - 1].frozen += t[i].frozen;
        } else {
            t[k++] = t[i];
        }
    }
    *n = k;
    return t;
}

long sop__heap_growth(const sop_pyheap *a, const sop_pyheap *b, sop_heap_type **out)
{
    *out = NULL;
    size_t na = 0, nb = 0, n = 0;
    sop_heap_type *ta = by_name(a, &na), *tb = by_name(b, &nb);
    sop_heap_type *g = malloc((na + nb + 1) * sizeof *g);
    if (!ta || !tb || !g) {
        free(ta);
        free(tb);
        free(g);
        return -ENOMEM;
    }
    /* Types are matched by name: a type object can be freed and another allocated there. */
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : strcmp(ta[i].name, tb[j].name);
        sop_heap_type d = c <= 0 ? ta[i] : tb[j];
        int64_t c0 = c <= 0 ? (int64_t)ta[i].count : 0, b0 = c <= 0 ? (int64_t)ta[i].bytes : 0;
        int64_t c1 = c >= 0 ? (int64_t)tb[j].count : 0, b1 = c >= 0 ? (int64_t)tb[j].bytes : 0;
        if (c >= 0)
            d = tb[j];
        i += c <= 0;
        j += c >= 0;
        if (c1 == c0 && b1 == b0)
            continue;
        d.count = (uint64_t)(c1 - c0);
        d.bytes = (uint64_t)(b1 - b0);
        g[n++] = d;
    }
    free(ta);
    free(tb);
    qsort(g, n, sizeof *g, cmp_grown);
    *out = g;
    return (long)n;
}
