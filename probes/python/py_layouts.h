/* py_layouts.h — the one home of per-CPython-version knowledge: offsets of the runtime,
 * interpreter, thread, frame, code, string and GC structures for 3.8-3.12 (and tables for
 * 3.13-3.15 holding what their debug offsets do not carry), chosen at run time, and the
 * reading of a 3.13+ interpreter's own _Py_DebugOffsets (one word map per version of that
 * struct), validated. Depends on libc only. */
#ifndef SOP_PY_LAYOUTS_H
#define SOP_PY_LAYOUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "remote_mem.h"

typedef enum {
    SOP_PYFRAME_OBJECT, /* 3.8-3.10: tstate->frame, PyFrameObject.f_back */
    SOP_PYFRAME_CFRAME, /* 3.11-3.12: tstate->cframe->current_frame, _PyInterpreterFrame */
    SOP_PYFRAME_DIRECT, /* 3.13+: tstate->current_frame */
} sop_pyframe_kind;

typedef enum {
    SOP_PYLINES_LNOTAB,   /* 3.8-3.9: co_lnotab, f_lasti in bytes */
    SOP_PYLINES_310,      /* 3.10: co_linetable (sdelta, ldelta) pairs, f_lasti in code units */
    SOP_PYLINES_LOCATIONS /* 3.11+: PEP 657 location table, instruction pointer */
} sop_pylines_kind;

/* 3.15: generation_stats is a pointer to struct gc_stats, ring buffers of per-collection
 * records (young: `young_n` records then an int8 index; old[2]: `old_n` records, index),
 * each record `item` bytes with its running `collections` count at `collections`. */
typedef struct {
    uint32_t size; /* sizeof(struct gc_stats), which the 3.15 debug offsets carry */
    uint32_t item, collections;
    uint32_t young_n, young_index, old_at, old_size, old_n, old_index;
} sop_pygcstats;

typedef struct {
    int minor;          /* 8..15 */
    const char *source; /* "table 3.11" or "_Py_DebugOffsets" */
    sop_pyframe_kind frames;
    sop_pylines_kind lines;
    /* _PyRuntimeState */
    uint32_t rt_interp_head;
    uint32_t rt_finalizing; /* the thread state finalizing the runtime; NULL before */
    uint32_t rt_gil_locked, rt_gil_last_holder; /* 3.8-3.11: _PyRuntime.ceval.gil; else 0 */
    uint32_t rt_gc;                             /* 3.8: _PyRuntime.gc; else 0 */
    /* PyInterpreterState */
    uint32_t is_next, is_tstate_head, is_gc; /* is_gc 0 on 3.8 */
    uint32_t is_id;                          /* int64_t id: 0 the main interpreter */
    uint32_t is_ceval_gil_ptr;               /* 3.12+: interp->ceval.gil; else 0 */
    uint32_t gil_locked, gil_last_holder;    /* 3.12+: inside struct _gil_runtime_state */
    /* struct _gc_runtime_state */
    uint32_t gc_enabled, gc_collecting, gc_generations, gc_gen_size, gc_gen_threshold, gc_gen_count,
        gc_permanent;
    /* generation_stats[3] {collections collected uncollectable}: trusted only where the array
     * ends where `collecting` starts (as on every table version) */
    uint32_t gc_gen_stats, gc_gen_stats_size;
    bool gc_stats_ptr;      /* 3.15+: gc_gen_stats holds a pointer to ring buffers (stats) */
    sop_pygcstats gc_stats; /* their layout when gc_stats_ptr */
    /* PyThreadState */
    uint32_t ts_size, ts_next, ts_interp, ts_frame, ts_thread_id, ts_native_thread_id;
    uint32_t ts_base_frame;    /* 3.15+: PyThreadState.base_frame, the address of the sentinel
                                * frame every chain ends in (embedded in _PyThreadStateImpl);
                                * 0 before */
    uint32_t cf_current_frame; /* 3.11-3.12: _PyCFrame.current_frame */
    /* PyFrameObject (3.8-3.10) */
    uint32_t fo_back, fo_code, fo_lasti;
    /* Liveness of a frame in a thread's chain: 3.8-3.9 f_executing (1 while executing),
     * 3.10 f_state (FRAME_EXECUTING 0 or FRAME_UNWINDING 2); a freed frame (free list,
     * co_zombieframe) has ob_refcnt 0 and neither. 0 = not checked (3.11+). */
    uint32_t fo_state;
    bool fo_state_enum; /* 3.10: f_state; else f_executing */
    /* _PyInterpreterFrame (3.11+) */
    uint32_t if_code, if_previous, if_instr, if_owner;
    int if_is_entry;    /* 3.11: offset of is_entry; -1 elsewhere */
    int owner_shim_min; /* 3.12+: frames owned by this or a higher owner are the evaluator's own
                         * entry / shim frames (3.12-3.13 FRAME_OWNED_BY_CSTACK 3; 3.14
                         * FRAME_OWNED_BY_INTERPRETER 3 and _CSTACK 4; 3.15 _INTERPRETER 3);
                         * -1 on 3.11 */
    bool instr_is_prev; /* 3.11-3.12 prev_instr vs 3.13 instr_ptr */
    bool stackrefs;     /* 3.14+: f_executable and the locals / value stack are _PyStackRef,
                         * a pointer with tag bits below 4 (cleared before use) */
    /* PyCodeObject */
    uint32_t co_filename, co_name, co_qualname, co_firstlineno, co_lines, co_code_adaptive;
    uint32_t co_localsnames; /* the locals' names, a tuple in localsplus order: co_varnames
                              * (3.8-3.10), co_localsplusnames (3.11+) */
    uint32_t co_read_size;   /* bytes to read to cover every field above */
    uint32_t float_value;    /* PyFloatObject.ob_fval */
    /* Thread names (threading.Thread._name, via the `self` of threading's _bootstrap frame) */
    uint32_t frame_localsplus; /* PyFrameObject.f_localsplus / _PyInterpreterFrame.localsplus */
    uint32_t tp_flags, tp_dictoffset, ht_cached_keys; /* ht_cached_keys 3.11+ */
    uint32_t ma_keys, ma_values;
    bool dict_log2;                            /* 3.11+: dk_log2_size/dk_log2_index_bytes/dk_kind */
    uint32_t dk_size, dk_nentries, dk_indices; /* dk_size: 3.8-3.10 only */
    uint32_t values_values;                    /* offset of the values array in PyDictValues */
    int managed_values_word; /* 3.11: values pointer at obj - 4 words; 3.12: tagged at -3 */
    bool inline_values;      /* 3.13: values inline after the object header */
    uint32_t ob_type;
    sop_pystr_layout str;
    /* Heap census (heap_walk.c): PyGC_Head size, type fields, var-size, list/set/dict sizes,
     * and the pre-header of managed-dict objects (3.11+: 2 words before the GC head). */
    uint32_t gc_head_size, tp_name, tp_basicsize, tp_itemsize, tp_dict, ob_size;
    uint32_t list_items, list_allocated, set_mask, set_table, set_smalltable, dict_used;
    uint32_t managed_preheader;
    /* asyncio tasks (asyncio_read.c): the C _asyncio.Future / _asyncio.Task objects
     * (FutureObj_HEAD, TaskObj in Modules/_asynciomodule.c), coroutine / generator objects
     * and the suspended frame's value stack. 0 = not placed (then no task reader). */
    uint32_t fut_loop, fut_callback0, fut_callbacks, fut_result, fut_state;
    uint32_t task_fut_waiter, task_coro, task_name;
    uint32_t task_must_cancel;      /* int, or a bit of an unsigned bit-field (3.13) */
    int task_must_cancel_bit;       /* -1: a whole int; else the bit number */
    uint32_t task_num_cancels;      /* 3.11+: int task_num_cancels_requested; else 0 */
    uint32_t futiter_future;        /* _asyncio.FutureIter.future */
    uint32_t gen_frame;             /* 3.8-3.10: gi_frame (PyFrameObject *) */
    uint32_t gen_iframe, gen_state; /* 3.11+: embedded _PyInterpreterFrame, int8 frame state */
    uint32_t fo_valuestack;         /* 3.8-3.10: f_valuestack */
    uint32_t fo_stacktop;           /* 3.8-3.9: f_stacktop (PyObject **) */
    uint32_t fo_stackdepth;         /* 3.10: int f_stackdepth */
    uint32_t if_stacktop;           /* 3.11-3.13: int stacktop (slots from localsplus) */
    uint32_t if_stackpointer;       /* 3.14+: _PyStackRef *stackpointer (the stack's top) */
    int8_t gen_executing;           /* 3.11+: gi_frame_state FRAME_EXECUTING (0; 3.15: 4); a
                                     * state above it is finished, below it not started or
                                     * suspended */
    int8_t gen_yf_lo, gen_yf_hi;    /* 3.12+: the gi_frame_state values of a frame suspended in
                                     * `yield from` / `await` (3.12-3.14 -1; 3.15 2..3) */
    uint32_t co_code;               /* 3.8-3.10: co_code (bytes) */
    uint32_t func_code;             /* PyFunctionObject.func_code */
} sop_pylayout;

/* Clear a _PyStackRef's tag bits (3.14+; a no-op on a plain pointer, aligned to 8). */
#define SOP_STACKREF_PTR(v) ((v) & ~(uint64_t)3)

/* struct _gil_runtime_state, the same on 3.8-3.15 (not free-threaded): `interval` (unsigned
 * long, the switch interval in µs) 16 bytes before `locked`, `switch_number` (unsigned long: the
 * times the GIL went to another thread than its last holder) 8 bytes after. */
#define SOP_GIL_INTERVAL_FROM_LOCKED (-16)
#define SOP_GIL_SWITCHES_FROM_LOCKED 8

/* _PyInterpreterFrame.owner FRAME_OWNED_BY_GENERATOR, 1 on 3.11-3.15: a generator's or
 * coroutine's frame, linked into the thread's chain only while it runs (its `previous` is the
 * frame that resumed it; a suspended one has `previous` NULL). */
#define SOP_PYFRAME_OWNED_BY_GENERATOR 1

/* Sizes of the buffers the walker reads structures into; every offset of a layout lies inside
 * them (the tables by construction, _Py_DebugOffsets by validation). */
#define SOP_PYLAYOUT_MAX_TSTATE 4096u    /* PyThreadState */
#define SOP_PYLAYOUT_MAX_FRAME_READ 128u /* frame header: code, previous, instr, owner */
#define SOP_PYLAYOUT_GC_READ 224u        /* struct _gc_runtime_state */
#define SOP_PYLAYOUT_MAX_CODE_READ 512u  /* PyCodeObject up to co_code_adaptive */

/* The built-in table for 3.<minor> (8..15), or NULL when unsupported. 3.13+ tables hold what
 * the interpreter's debug offsets do not carry; their other fields are only a fallback. */
const sop_pylayout *sop__pylayout_table(int minor);

/* The newest minor version whose _Py_DebugOffsets struct this code knows. */
#define SOP_PYLAYOUT_NEWEST_MINOR 15
/* Bytes to read from the start of _PyRuntime: the largest known _Py_DebugOffsets (3.15: 888).
 * A smaller struct is followed by the rest of _PyRuntime, so this much is always readable. */
#define SOP_DEBUG_OFFSETS_MAX_SIZE 1024u
/* The size of the _Py_DebugOffsets of 3.<minor>, or 0 when not known. */
size_t sop__pylayout_debug_offsets_size(int minor);

/* Fill `out` from a _Py_DebugOffsets blob (read from the start of _PyRuntime), validating
 * the cookie "xdebugpy", the version (3.13 to SOP_PYLAYOUT_NEWEST_MINOR, matching
 * `expect_hex` when nonzero), the struct sizes and that every offset fits inside its struct.
 * What the blob does not carry comes from that version's table. Returns 0; -ENOTSUP for a
 * version whose struct is not known (3.16+: "layout not known" in `why`), or a free-threaded
 * build; -EINVAL with a reason in `why` for a blob that fails validation. Pure. */
int sop__pylayout_from_debug_offsets(const uint8_t *blob, size_t len, uint64_t expect_hex,
                                     sop_pylayout *out, char *why, size_t whylen);

#endif
