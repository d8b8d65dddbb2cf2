/* asyncio_types.c — what kind of object an address of the target holds, for the asyncio task
 * reader: its type validated as a real type object (its metatype chain reaches type), named
 * by tp_name, and sorted into the few kinds the reader needs (task, future, coroutine, list,
 * int, ...; a subclass of _asyncio.Task / Future by its bases), cached per type. Part of the
 * task reader (asyncio_tasks_int.h); depends on remote_mem.c. */
#include <errno.h>
#include <string.h>

#include "asyncio_tasks_int.h"

#define TYPE_READ 272u /* PyTypeObject up to tp_dict */
#define TPFLAGS_TYPE_SUBCLASS (1ul << 31)
#define MAX_BASES 32

/* A type object: its metatype chain reaches PyType_Type (its own type) with
 * Py_TPFLAGS_TYPE_SUBCLASS on the way. */
bool sop__tasks_is_type_object(sop_rmem *m, const sop_pylayout *L, uint64_t type)
{
    uint64_t t = type;
    for (int depth = 0; depth < 6; depth++) {
        uint64_t meta = 0, flags = 0;
        if (sop__rmem_u64(m, t + L->ob_type, &meta) < 0 || !meta ||
            sop__rmem_u64(m, meta + L->tp_flags, &flags) < 0 || !(flags & TPFLAGS_TYPE_SUBCLASS))
            return false;
        if (meta == t)
            return true;
        t = meta;
    }
    return false;
}

bool sop__tasks_name_is(const char *n, const char *want)
{
    return strcmp(n, want) == 0;
}

/* The kind of the type at `type` (cached); *name gets its tp_name when not NULL. */
int sop__tasks_type_kind(tasks_reader *tr, uint64_t type, const char **name)
{
    static const char unknown[] = "?";
    if (name)
        *name = unknown;
    if (!type || (type & 7))
        return K_UNKNOWN;
    size_t h = hash_ptr(type) & (TYPE_SLOTS - 1);
    type_slot *slot = NULL;
    for (size_t k = 0; k < TYPE_SLOTS; k++, h = (h + 1) & (TYPE_SLOTS - 1)) {
        if (tr->types[h].addr == type) {
            if (name)
                *name = tr->types[h].name;
            return tr->types[h].kind;
        }
        if (!tr->types[h].addr) {
            slot = &tr->types[h];
            break;
        }
    }
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    type_slot e;
    memset(&e, 0, sizeof e);
    e.addr = type;
    e.kind = K_UNKNOWN;
    uint8_t b[TYPE_READ];
    if (sop__rmem_read(m, type, b, sizeof b) == 0 &&
        sop__rmem_read_cstr(m, sop__pywalk_rd64(b, L->tp_name), e.name, sizeof e.name) == 0 &&
        sop__tasks_is_type_object(m, L, type)) {
        const char *n = e.name;
        e.kind = K_OTHER;
        if (sop__tasks_name_is(n, "coroutine"))
            e.kind = K_CORO;
        else if (sop__tasks_name_is(n, "generator"))
            e.kind = K_GEN;
        else if (sop__tasks_name_is(n, "function"))
            e.kind = K_FUNC;
        else if (sop__tasks_name_is(n, "list"))
            e.kind = K_LIST;
        else if (sop__tasks_name_is(n, "tuple"))
            e.kind = K_TUPLE;
        else if (sop__tasks_name_is(n, "int"))
            e.kind = K_INT;
        else if (sop__tasks_name_is(n, "float"))
            e.kind = K_FLOAT;
        else if (sop__tasks_name_is(n, "bool"))
            e.kind = K_BOOL;
        else if (sop__tasks_name_is(n, "method"))
            e.kind = K_METHOD;
        else if (sop__tasks_name_is(n, "collections.deque"))
            e.kind = K_DEQUE;
        else if (sop__tasks_name_is(n, "_asyncio.FutureIter") ||
                 sop__tasks_name_is(n, "FutureIter"))
            e.kind = K_FUTUREITER;
        else {
            /* _asyncio.Task / _asyncio.Future, or a class deriving from them */
            uint64_t t = type;
            char bn[96];
            for (int i = 0; t && i < MAX_BASES; i++) {
                uint64_t nm = 0;
                if (sop__rmem_u64(m, t + L->tp_name, &nm) < 0 ||
                    sop__rmem_read_cstr(m, nm, bn, sizeof bn) < 0)
                    break;
                if (sop__tasks_name_is(bn, "_asyncio.Task")) {
                    e.kind = K_TASK;
                    break;
                }
                if (sop__tasks_name_is(bn, "_asyncio.Future")) {
                    e.kind = K_FUTURE;
                    break;
                }
                if (sop__rmem_u64(m, t + TP_BASE, &t) < 0)
                    break;
            }
        }
    }
    if (slot && tr->ntypes < TYPE_SLOTS / 2) {
        *slot = e;
        tr->ntypes++;
        if (name)
            *name = slot->name;
        return e.kind;
    }
    return e.kind; /* table full: not cached, name unknown */
}

int sop__tasks_obj_kind(tasks_reader *tr, uint64_t obj, const char **name)
{
    uint64_t type = 0;
    if (name)
        *name = "?";
    if (obj < SOP_RMEM_PAGE || (obj & 7) ||
        sop__rmem_u64(&tr->w.mem, obj + tr->w.L.ob_type, &type) < 0)
        return K_UNKNOWN;
    return sop__tasks_type_kind(tr, type, name);
}
