/* py_codes.c — the walk's cache of code objects: each code object a frame runs, read once per
 * walk (name, file, first line, line table) and kept by address, the table grown as needed and
 * freed with the walker. Part of the walk (py_walk_int.h); depends on remote_mem.c and
 * linetable.c. */
#include "cpython.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linetable.h"
#include "py_layouts.h"
#include "py_names.h"
#include "py_walk_int.h"
#include "remote_mem.h"

void sop__pywalk_free_codes(walker *w)
{
    for (size_t i = 0; i < w->ncodes; i++)
        free(w->codes[i].lines);
    free(w->codes);
    free(w->code_index);
    w->codes = NULL;
    w->code_index = NULL;
    w->ncodes = w->codes_cap = 0;
}

static bool grow_codes(walker *w)
{
    size_t ncap = w->codes_cap ? w->codes_cap * 2 : 64;
    code_entry *nc = realloc(w->codes, ncap * sizeof *nc);
    if (!nc)
        return false;
    w->codes = nc;
    w->codes_cap = ncap;
    return true;
}

/* 1 + the slot in localsplus of the local `want` of the code object whose field block is `buf`;
 * 0 when it has none or its names cannot be read (a few bounded reads, once per code object). */
static uint16_t local_slot(walker *w, const uint8_t *buf, const char *want)
{
    const sop_pylayout *L = &w->L;
    uint64_t names = L->co_localsnames ? sop__pywalk_rd64(buf, L->co_localsnames) : 0;
    int64_t n = 0;
    uint64_t items[32];
    if (!names || sop__rmem_read(&w->mem, names + L->ob_size, &n, sizeof n) < 0 || n <= 0)
        return 0;
    if (n > (int64_t)(sizeof items / sizeof items[0]))
        n = (int64_t)(sizeof items / sizeof items[0]);
    if (sop__rmem_read(&w->mem, names + L->ob_size + 8, items, (size_t)n * sizeof items[0]) < 0)
        return 0;
    for (int64_t k = 0; k < n; k++) {
        char got[32];
        if (sop__rmem_unicode(&w->mem, &L->str, items[k], got, sizeof got) >= 0 &&
            strcmp(got, want) == 0)
            return (uint16_t)(k + 1);
    }
    return 0;
}

/* The cached decoding of the code object at `code`, or NULL with *err set. */
code_entry *sop__pywalk_code(walker *w, uint64_t code, int *err)
{
    size_t i = hash_ptr(code) & (CODE_SLOTS - 1);
    for (size_t k = 0; k < CODE_SLOTS; k++, i = (i + 1) & (CODE_SLOTS - 1)) {
        uint32_t ix = w->code_index[i];
        if (ix == 0)
            break;
        if (w->codes[ix - 1].addr == code)
            return &w->codes[ix - 1];
    }
    if (w->ncodes >= CODE_SLOTS / 2) { /* full enough: start over rather than degrade */
        for (size_t j = 0; j < w->ncodes; j++)
            free(w->codes[j].lines);
        memset(w->code_index, 0, CODE_SLOTS * sizeof *w->code_index);
        w->ncodes = 0;
        i = hash_ptr(code) & (CODE_SLOTS - 1);
    }
    const sop_pylayout *L = &w->L;
    uint8_t buf[SOP_PYLAYOUT_MAX_CODE_READ];
    if (L->co_read_size > sizeof buf) {
        *err = -EINVAL;
        return NULL;
    }
    int r = sop__rmem_read(&w->mem, code, buf, L->co_read_size);
    if (r < 0) {
        *err = r;
        return NULL;
    }
    if (w->code_type && sop__pywalk_rd64(buf, L->ob_type) != w->code_type) {
        *err = -EINVAL;
        return NULL;
    }
    code_entry e;
    memset(&e, 0, sizeof e);
    char func[256], file[1024], bare[256];
    uint64_t name = sop__pywalk_rd64(buf, L->co_qualname ? L->co_qualname : L->co_name);
    uint64_t fileo = sop__pywalk_rd64(buf, L->co_filename);
    uint64_t lines = sop__pywalk_rd64(buf, L->co_lines);
    e.firstlineno = rd32(buf, L->co_firstlineno);
    if ((r = sop__rmem_unicode(&w->mem, &L->str, name, func, sizeof func)) < 0 ||
        (r = sop__rmem_unicode(&w->mem, &L->str, fileo, file, sizeof file)) < 0) {
        *err = r;
        return NULL;
    }
    /* A code object renamed with code.replace(co_name=...) keeps its old qualname (numpy < 1.25
     * names every __array_function__ wrapper so: qualname "...decorator.<locals>.public_api",
     * co_name "concatenate"). When the qualname's last part is not co_name, co_name is the
     * name the function was given: show that. */
    if (L->co_qualname && L->co_name &&
        sop__rmem_unicode(&w->mem, &L->str, sop__pywalk_rd64(buf, L->co_name), bare, sizeof bare) >=
            0 &&
        bare[0]) {
        const char *dot = strrchr(func, '.');
        if (strcmp(dot ? dot + 1 : func, bare) != 0)
            snprintf(func, sizeof func, "%s", bare);
    }
    if ((r = sop__rmem_bytes(&w->mem, &L->str, lines, MAX_LINETABLE_BYTES, &e.lines, &e.nlines)) <
        0) {
        *err = r == -E2BIG ? -EINVAL : r;
        return NULL;
    }
    /* asyncio's callback dispatch ("_run" before qualnames, 3.8-3.10) */
    size_t fl = strlen(file);
    e.handle_run = (strcmp(func, "Handle._run") == 0 || strcmp(func, "_run") == 0) && fl >= 17 &&
                   strcmp(file + fl - 17, "asyncio/events.py") == 0;
    /* asyncio's loop turn: BaseEventLoop._run_once sets end_time (a float of the monotonic
     * clock) before it runs the turn's callbacks, a new value every turn */
    if ((strcmp(func, "BaseEventLoop._run_once") == 0 || strcmp(func, "_run_once") == 0) &&
        fl >= 22 && strcmp(file + fl - 22, "asyncio/base_events.py") == 0)
        e.turn_slot = local_slot(w, buf, "end_time");
    e.func = sop__pywalk_pool_add(w->py, func);
    e.file = sop__pywalk_pool_add(w->py, file);
    if (!e.func || !e.file || (w->ncodes == w->codes_cap && !grow_codes(w))) {
        free(e.lines);
        *err = -ENOMEM;
        return NULL;
    }
    while (w->code_index[i] != 0)
        i = (i + 1) & (CODE_SLOTS - 1);
    e.addr = code;
    w->codes[w->ncodes++] = e;
    w->code_index[i] = (uint32_t)w->ncodes;
    return &w->codes[w->ncodes - 1];
}
