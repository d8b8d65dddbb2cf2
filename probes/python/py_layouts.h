/* py_layouts.h — the one home of per-CPython-version knowledge: offsets of the runtime,
 * interpreter, thread, frame, code, string and GC structures for 3.8-3.12 (and a 3.13
 * fallback), chosen at run time, and the reading of a 3.13+ interpreter's own
 * _Py_DebugOffsets, validated. Depends on libc only. */
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

typedef struct {
    int minor;          /* 8..13 */
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
    /* PyThreadState */
    uint32_t ts_size, ts_next, ts_interp, ts_frame, ts_thread_id, ts_native_thread_id;
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
    int owner_cstack;   /* 3.12+: FRAME_OWNED_BY_CSTACK (3); -1 on 3.11 */
    bool instr_is_prev; /* 3.11-3.12 prev_instr vs 3.13 instr_ptr */
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
    uint32_t if_stacktop;           /* 3.11+: int stacktop (slots from localsplus) */
    uint32_t co_code;               /* 3.8-3.10: co_code (bytes) */
    uint32_t func_code;             /* PyFunctionObject.func_code */
} sop_pylayout;

/* struct _gil_runtime_state, the same on 3.8-3.13 (not free-threaded): `interval` (unsigned
 * long, the switch interval in µs) 16 bytes before `locked`, `switch_number` (unsigned long: the
 * times the GIL went to another thread than its last holder) 8 bytes after. */
#define SOP_GIL_INTERVAL_FROM_LOCKED (-16)
#define SOP_GIL_SWITCHES_FROM_LOCKED 8

/* _PyInterpreterFrame.owner FRAME_OWNED_BY_GENERATOR, 1 on 3.11-3.14: a generator's or
 * coroutine's frame, linked into the thread's chain only while it runs (its `previous` is the
 * frame that resumed it; a suspended one has `previous` NULL). */
#define SOP_PYFRAME_OWNED_BY_GENERATOR 1

/* Sizes of the buffers the walker reads structures into; every offset of a layout lies inside
 * them (the tables by construction, _Py_DebugOffsets by validation). */
#define SOP_PYLAYOUT_MAX_TSTATE 4096u    /* PyThreadState */
#define SOP_PYLAYOUT_MAX_FRAME_READ 128u /* frame header: code, previous, instr, owner */
#define SOP_PYLAYOUT_GC_READ 224u        /* struct _gc_runtime_state */
#define SOP_PYLAYOUT_MAX_CODE_READ 512u  /* PyCodeObject up to co_code_adaptive */

/* The built-in table for 3.<minor> (8..13), or NULL when unsupported. */
const sop_pylayout *sop__pylayout_table(int minor);

/* Size of the 3.13 _Py_DebugOffsets struct this code understands. */
#define SOP_DEBUG_OFFSETS_313_SIZE 584u

/* Fill `out` from a _Py_DebugOffsets blob (read from the start of _PyRuntime), validating
 * the cookie "xdebugpy", the version (must be 3.13.x and match `expect_hex` when nonzero),
 * the struct sizes and that every offset fits inside its struct. Starts from the 3.13 table
 * for what the blob does not carry. Returns 0, or -EINVAL with a reason in `why`. Pure. */
int sop__pylayout_from_debug_offsets(const uint8_t *blob, size_t len, uint64_t expect_hex,
                                     sop_pylayout *out, char *why, size_t whylen);

#endif
