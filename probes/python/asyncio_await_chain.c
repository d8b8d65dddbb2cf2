/* asyncio_await_chain.c — one level of a task's await chain: the frame of a coroutine or
 * generator (a PyFrameObject on 3.8-3.10, inside the generator on 3.11+) as a frame of the
 * listing, its locals and value stack kept for the holder scan, and the object it is
 * suspended on (CPython's _PyGen_yf). Part of the task reader (asyncio_tasks_int.h); depends
 * on remote_mem.c, py_walk.c (code objects), linetable.c. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "asyncio_tasks_int.h"
#include "linetable.h"

#define MAX_STACK_SLOTS 100000
/* 3.8-3.10: YIELD_FROM; 3.11: RESUME / RESUME_QUICK (its oparg >= 2 after a yield from or an
 * await); 3.11 and 3.12+ frame states. */
#define OP_YIELD_FROM 72
#define OP_RESUME_311 151
#define OP_RESUME_QUICK_311 150
#define FRAME_EXECUTING 0
#define FRAME_SUSPENDED_311 (-1)

static int push_level(tasks_reader *tr, sop_pytask *t, size_t *cap, uint64_t code,
                      int64_t addr_bytes, bool gen)
{
    int err = 0;
    const code_entry *c = sop__pywalk_code(&tr->w, code, &err);
    if (!c)
        return err ? err : -EINVAL;
    if (t->nframes == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        sop_await_frame *nf = realloc(t->frames, ncap * sizeof *nf);
        if (!nf)
            return -ENOMEM;
        t->frames = nf;
        *cap = ncap;
    }
    int line = -1;
    if (addr_bytes >= -2 && addr_bytes < INT_MAX)
        line =
            sop__py_addr2line(tr->w.L.lines, c->lines, c->nlines, c->firstlineno, (int)addr_bytes);
    sop_await_frame *f = &t->frames[t->nframes++];
    f->func = c->func;
    f->file = c->file;
    f->line = line;
    f->generator = gen;
    f->slots = 0;
    f->nslots = 0;
    return 0;
}

/* One coroutine / generator level: its frame pushed, *yf the object it awaits (0: none),
 * *executing when it runs now. Returns 0, 1 when it has no frame (finished), or an error. */
int sop__tasks_read_level(tasks_reader *tr, sop_pytask *t, size_t *cap, uint64_t obj, bool gen,
                          uint64_t *yf, bool *executing)
{
    const sop_pylayout *L = &tr->w.L;
    sop_rmem *m = &tr->w.mem;
    *yf = 0;
    *executing = false;
    int r;
    if (L->gen_frame) { /* 3.8-3.10: a PyFrameObject */
        uint64_t f = 0;
        if ((r = sop__rmem_u64(m, obj + L->gen_frame, &f)) < 0)
            return r;
        if (!f)
            return 1;
        uint8_t fb[128];
        if ((r = sop__rmem_read(m, f, fb, sizeof fb)) < 0)
            return r;
        if ((int64_t)sop__pywalk_rd64(fb, 0) <= 0)
            return -EINVAL; /* freed */
        uint64_t code = sop__pywalk_rd64(fb, L->fo_code);
        int32_t lasti = rd32(fb, L->fo_lasti);
        int8_t st = (int8_t)fb[L->fo_state];
        *executing = L->fo_state_enum ? st == FRAME_EXECUTING : st == 1;
        int64_t addr = L->lines == SOP_PYLINES_310 ? (int64_t)lasti * 2 : lasti;
        if ((r = push_level(tr, t, cap, code, addr, gen)) < 0)
            return r;
        tr->last_locals = f + L->frame_localsplus;
        if (*executing || lasti < 0)
            return 0;
        {
            uint64_t lp = f + L->frame_localsplus, end = 0;
            if (L->fo_stacktop) {
                end = sop__pywalk_rd64(fb, L->fo_stacktop);
            } else {
                int32_t d = rd32(fb, L->fo_stackdepth);
                uint64_t vs = sop__pywalk_rd64(fb, L->fo_valuestack);
                if (d >= 0 && d <= MAX_STACK_SLOTS && vs >= lp)
                    end = vs + 8 * (uint64_t)d;
            }
            sop_await_frame *lv = &t->frames[t->nframes - 1];
            if (end > lp && (end - lp) % 8 == 0) {
                uint64_t n = (end - lp) / 8;
                lv->slots = lp;
                lv->nslots = (uint32_t)(n < MAX_FRAME_SLOTS ? n : MAX_FRAME_SLOTS);
            }
        }
        /* _PyGen_yf: the next instruction is YIELD_FROM */
        uint64_t bytes = 0;
        uint8_t op = 0;
        int64_t next = L->lines == SOP_PYLINES_310 ? ((int64_t)lasti + 1) * 2 : (int64_t)lasti + 2;
        if ((r = sop__rmem_u64(m, code + L->co_code, &bytes)) < 0 ||
            (r = sop__rmem_read(m, bytes + L->str.bytes_sval + (uint64_t)next, &op, 1)) < 0)
            return r;
        if (op != OP_YIELD_FROM)
            return 0;
        uint64_t top;
        if (L->fo_stacktop) {
            top = sop__pywalk_rd64(fb, L->fo_stacktop);
            if (!top)
                return 0;
        } else {
            int32_t depth = rd32(fb, L->fo_stackdepth);
            if (depth <= 0 || depth > MAX_STACK_SLOTS)
                return 0;
            top = sop__pywalk_rd64(fb, L->fo_valuestack) + 8 * (uint64_t)depth;
        }
        return sop__rmem_u64(m, top - 8, yf);
    }
    /* 3.11+: the frame lives inside the generator object */
    int8_t state;
    if ((r = sop__rmem_read(m, obj + L->gen_state, &state, 1)) < 0)
        return r;
    if (state > L->gen_executing)
        return 1; /* completed or cleared */
    uint64_t iframe = obj + L->gen_iframe;
    uint8_t fb[SOP_PYLAYOUT_MAX_FRAME_READ];
    size_t flen = L->if_stackpointer ? L->if_stackpointer + 8 : L->if_stacktop + 4;
    if (flen < L->if_instr + 8)
        flen = L->if_instr + 8;
    if ((r = sop__rmem_read(m, iframe, fb, flen)) < 0)
        return r;
    uint64_t code = sop__pywalk_ref(L, sop__pywalk_rd64(fb, L->if_code)),
             instr = sop__pywalk_rd64(fb, L->if_instr);
    *executing = state == L->gen_executing;
    if ((r = push_level(tr, t, cap, code, (int64_t)(instr - (code + L->co_code_adaptive)), gen)) <
        0)
        return r;
    uint64_t locals = iframe + L->frame_localsplus;
    tr->last_locals = locals;
    /* the value stack's depth in slots from localsplus: 3.11-3.13 an int, 3.14+ a pointer past
     * the top */
    int64_t top;
    if (L->if_stackpointer) {
        uint64_t sp = sop__pywalk_rd64(fb, L->if_stackpointer);
        top = sp > locals && (sp - locals) % 8 == 0 ? (int64_t)((sp - locals) / 8) : -1;
    } else {
        top = rd32(fb, L->if_stacktop);
    }
    if (!*executing) {
        sop_await_frame *lv = &t->frames[t->nframes - 1];
        if (top > 0 && top <= MAX_STACK_SLOTS) {
            lv->slots = locals;
            lv->nslots = (uint32_t)top < MAX_FRAME_SLOTS ? (uint32_t)top : MAX_FRAME_SLOTS;
        }
    }
    bool yield_from;
    if (L->minor == 11) {
        uint8_t next[2];
        yield_from = state == FRAME_SUSPENDED_311 && sop__rmem_read(m, instr + 2, next, 2) == 0 &&
                     (next[0] == OP_RESUME_311 || next[0] == OP_RESUME_QUICK_311) && next[1] >= 2;
    } else {
        yield_from = state >= L->gen_yf_lo && state <= L->gen_yf_hi;
    }
    if (!yield_from || top <= 0 || top > MAX_STACK_SLOTS)
        return 0;
    if ((r = sop__rmem_u64(m, locals + 8 * ((uint64_t)top - 1), yf)) < 0)
        return r;
    *yf = sop__pywalk_ref(L, *yf);
    /* 3.15 keeps a NULL stack reference above the object it awaits */
    if (!*yf && L->stackrefs && top > 1 &&
        (r = sop__rmem_u64(m, locals + 8 * ((uint64_t)top - 2), yf)) == 0)
        *yf = sop__pywalk_ref(L, *yf);
    return r < 0 ? r : 0;
}
