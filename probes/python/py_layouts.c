/* py_layouts.c — per-version CPython layouts, in one table. Every number below was printed
 * by offsetof()/sizeof() from a program compiled against that version's headers
 * (/root/.pyenv/versions/3.X.Y/include and Debian sid's libpython3.1X-dev, Py_BUILD_CORE,
 * internal/ headers; x86-64; tests/unit/layout_headers_probe.c is that program, and
 * test_layout_headers checks 3.11+ against it), and the Debian 3.11.2 build gives the same
 * numbers as pyenv 3.11.7. 3.13+ takes what the target's _Py_DebugOffsets carries from it
 * (sop__pylayout_from_debug_offsets, one word map per version of that struct); only the rest
 * comes from the table. Depends on libc only. */
#include "py_layouts.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Strings: PyASCIIObject.length 16, .state 32 on every version; sizeof(PyASCIIObject) and
 * sizeof(PyCompactUnicodeObject) are 48/72 up to 3.11 (wstr fields), 40/56 from 3.12;
 * PyBytesObject ob_size 16, ob_sval 32. The state bit-field starts with interned:2, then
 * kind:3, compact:1, ascii:1. */
#define STR_311                                                                                    \
    {                                                                                              \
        16, 32, 48, 72, 16, 32, 2                                                                  \
    }
#define STR_312                                                                                    \
    {                                                                                              \
        16, 32, 40, 56, 16, 32, 2                                                                  \
    }
/* struct _gc_runtime_state: enabled 12, generations 24 (3 x 24 bytes: head 16, threshold 16,
 * count 20), permanent_generation 104, generation_stats 128 (3 x 24 bytes: collections 0,
 * collected 8, uncollectable 16), collecting 200 — the same on 3.8-3.13. */
/* Dicts and instance attributes, for thread names. PyTypeObject tp_flags 168, tp_dictoffset
 * 288; PyDictObject ma_keys 32, ma_values 40, on every version. 3.8-3.10 keys (from
 * Objects/dict-common.h, not installed): dk_size 8, dk_nentries 32, dk_indices 40, entries of
 * {hash, key, value}. 3.11+: dk_log2_size 8, dk_log2_index_bytes 9, dk_kind 10, dk_nentries
 * 24, dk_indices 32; unicode-keyed entries are {key, value}. */
#define DICT_OLD                                                                                   \
    .tp_flags = 168, .tp_dictoffset = 288, .ma_keys = 32, .ma_values = 40, .dk_size = 8,           \
    .dk_nentries = 32, .dk_indices = 40
#define DICT_NEW                                                                                   \
    .tp_flags = 168, .tp_dictoffset = 288, .ma_keys = 32, .ma_values = 40, .dict_log2 = true,      \
    .dk_nentries = 24, .dk_indices = 32
#define GC_FIELDS                                                                                  \
    .gc_enabled = 12, .gc_collecting = 200, .gc_generations = 24, .gc_gen_size = 24,               \
    .gc_gen_threshold = 16, .gc_gen_count = 20, .gc_permanent = 104, .gc_gen_stats = 128,          \
    .gc_gen_stats_size = 24

/* Heap census: PyGC_Head {_gc_next, _gc_prev} 16 bytes before the object; PyTypeObject
 * tp_name 24, tp_basicsize 32, tp_itemsize 40, tp_dict 264; PyVarObject ob_size 16;
 * PyListObject ob_item 24, allocated 32; PySetObject mask 32, table 40, smalltable 64;
 * PyDictObject ma_used 16 — the same on 3.8-3.13. Managed-dict objects (3.11+) carry two
 * more words before the GC head. */
#define HEAP_FIELDS                                                                                \
    .gc_head_size = 16, .tp_name = 24, .tp_basicsize = 32, .tp_itemsize = 40, .tp_dict = 264,      \
    .ob_size = 16, .list_items = 24, .list_allocated = 32, .set_mask = 32, .set_table = 40,        \
    .set_smalltable = 64, .dict_used = 16

/* asyncio (asyncio_read.c): FutureObj_HEAD / TaskObj of Modules/_asynciomodule.c, the
 * coroutine object's frame (3.8-3.10 gi_frame; 3.11+ the embedded _PyInterpreterFrame and the
 * int8 gi_frame_state) and the suspended frame's value stack. The field order is that of each
 * version's sources; the numbers were checked in a live interpreter of every version (ctypes:
 * the words of a task equal to id(loop), id(coro), id(name), id(fut_waiter); the bytes that
 * change on set_result() / cancel(); the stack top of a coroutine suspended in `await` equal
 * to id(coro.cr_await)); Debian 3.11.2 gives the same numbers as pyenv 3.11.7. */
/* One version per block, related fields on a line. */
// clang-format off
static const sop_pylayout layouts[] = {
    {   /* 3.8.18 */
        .minor = 8, .source = "table 3.8", .frames = SOP_PYFRAME_OBJECT,
        .lines = SOP_PYLINES_LNOTAB,
        .rt_interp_head = 32, .rt_finalizing = 16, .rt_gil_locked = 1168,
        .rt_gil_last_holder = 1160, .rt_gc = 344,
        .is_next = 0, .is_tstate_head = 8, .is_id = 16, .is_gc = 0, GC_FIELDS,
        .ts_size = 264, .ts_next = 8, .ts_interp = 16, .ts_frame = 24, .ts_thread_id = 176,
        .fo_back = 24, .fo_code = 32, .fo_lasti = 104, .if_is_entry = -1, .owner_shim_min = -1,
        .fo_state = 116,
        .co_filename = 104, .co_localsnames = 72, .co_name = 112, .co_firstlineno = 40, .co_lines = 120,
        .co_read_size = 128, .ob_type = 8, .float_value = 16, .str = STR_311,
        .frame_localsplus = 360, DICT_OLD,
        HEAP_FIELDS, .managed_preheader = 0,
        .fut_loop = 16, .fut_callback0 = 24, .fut_callbacks = 40, .fut_result = 56, .fut_state = 72,
        .task_fut_waiter = 104, .task_coro = 112, .task_name = 120, .task_must_cancel = 136,
        .task_must_cancel_bit = -1, .futiter_future = 16, .gen_frame = 16, .fo_valuestack = 64,
        .fo_stacktop = 72, .co_code = 48, .func_code = 16,
    },
    {   /* 3.9.18 */
        .minor = 9, .source = "table 3.9", .frames = SOP_PYFRAME_OBJECT,
        .lines = SOP_PYLINES_LNOTAB,
        .rt_interp_head = 32, .rt_finalizing = 16, .rt_gil_locked = 368, .rt_gil_last_holder = 360,
        .is_next = 0, .is_tstate_head = 8, .is_id = 24, .is_gc = 616, GC_FIELDS,
        .ts_size = 264, .ts_next = 8, .ts_interp = 16, .ts_frame = 24, .ts_thread_id = 176,
        .fo_back = 24, .fo_code = 32, .fo_lasti = 104, .if_is_entry = -1, .owner_shim_min = -1,
        .fo_state = 116,
        .co_filename = 104, .co_localsnames = 72, .co_name = 112, .co_firstlineno = 40, .co_lines = 120,
        .co_read_size = 128, .ob_type = 8, .float_value = 16, .str = STR_311,
        .frame_localsplus = 360, DICT_OLD,
        HEAP_FIELDS, .managed_preheader = 0,
        .fut_loop = 16, .fut_callback0 = 24, .fut_callbacks = 40, .fut_result = 56, .fut_state = 80,
        .task_fut_waiter = 144, .task_coro = 152, .task_name = 160, .task_must_cancel = 176,
        .task_must_cancel_bit = -1, .futiter_future = 16, .gen_frame = 16, .fo_valuestack = 64,
        .fo_stacktop = 72, .co_code = 48, .func_code = 16,
    },
    {   /* 3.10.13: f_lasti counts code units */
        .minor = 10, .source = "table 3.10", .frames = SOP_PYFRAME_OBJECT,
        .lines = SOP_PYLINES_310,
        .rt_interp_head = 32, .rt_finalizing = 16, .rt_gil_locked = 368, .rt_gil_last_holder = 360,
        .is_next = 0, .is_tstate_head = 8, .is_id = 24, .is_gc = 616, GC_FIELDS,
        .ts_size = 280, .ts_next = 8, .ts_interp = 16, .ts_frame = 24, .ts_thread_id = 176,
        .fo_back = 24, .fo_code = 32, .fo_lasti = 96, .if_is_entry = -1, .owner_shim_min = -1,
        .fo_state = 108, .fo_state_enum = true,
        .co_filename = 104, .co_localsnames = 72, .co_name = 112, .co_firstlineno = 40, .co_lines = 120,
        .co_read_size = 128, .ob_type = 8, .float_value = 16, .str = STR_311,
        .frame_localsplus = 352, DICT_OLD,
        HEAP_FIELDS, .managed_preheader = 0,
        .fut_loop = 16, .fut_callback0 = 24, .fut_callbacks = 40, .fut_result = 64, .fut_state = 88,
        .task_fut_waiter = 152, .task_coro = 160, .task_name = 168, .task_must_cancel = 184,
        .task_must_cancel_bit = -1, .futiter_future = 16, .gen_frame = 16, .fo_valuestack = 64,
        .fo_stackdepth = 80, .co_code = 48, .func_code = 48,
    },
    {   /* 3.11.7 (and Debian 3.11.2): interp->threads.head; _PyInterpreterFrame.is_entry */
        .minor = 11, .source = "table 3.11", .frames = SOP_PYFRAME_CFRAME,
        .lines = SOP_PYLINES_LOCATIONS,
        .rt_interp_head = 40, .rt_finalizing = 24, .rt_gil_locked = 376, .rt_gil_last_holder = 368,
        .is_next = 0, .is_tstate_head = 16, .is_id = 48, .is_gc = 648, GC_FIELDS,
        .ts_size = 360, .ts_next = 8, .ts_interp = 16, .ts_frame = 56, .ts_thread_id = 152,
        .ts_native_thread_id = 160, .cf_current_frame = 8,
        .if_code = 32, .if_previous = 48, .if_instr = 56, .if_owner = 69, .if_is_entry = 68,
        .owner_shim_min = -1, .instr_is_prev = true,
        .co_filename = 112, .co_localsnames = 96, .co_name = 120, .co_qualname = 128, .co_firstlineno = 72,
        .co_lines = 136, .co_code_adaptive = 184, .co_read_size = 184, .ob_type = 8, .float_value = 16,
        .str = STR_311,
        /* managed dict: values pointer at obj - 4 words, dict at obj - 3 */
        .frame_localsplus = 72, DICT_NEW, .ht_cached_keys = 872, .values_values = 0,
        .managed_values_word = -4,
        HEAP_FIELDS, .managed_preheader = 16,
        .fut_loop = 16, .fut_callback0 = 24, .fut_callbacks = 40, .fut_result = 64, .fut_state = 88,
        .task_fut_waiter = 128, .task_coro = 136, .task_name = 144, .task_must_cancel = 160,
        .task_must_cancel_bit = -1, .task_num_cancels = 168, .futiter_future = 16,
        .gen_iframe = 80, .gen_state = 75, .if_stacktop = 64, .func_code = 48,
    },
    {   /* 3.12.1: the GIL hangs off interp->ceval.gil; shim frames owned by the C stack */
        .minor = 12, .source = "table 3.12", .frames = SOP_PYFRAME_CFRAME,
        .lines = SOP_PYLINES_LOCATIONS,
        .rt_interp_head = 40, .rt_finalizing = 24, .is_next = 0, .is_tstate_head = 72, .is_id = 8,
        .is_gc = 112,
        .is_ceval_gil_ptr = 384, .gil_locked = 16, .gil_last_holder = 8, GC_FIELDS,
        .ts_size = 288, .ts_next = 8, .ts_interp = 16, .ts_frame = 56, .ts_thread_id = 136,
        .ts_native_thread_id = 144, .cf_current_frame = 0,
        .if_code = 0, .if_previous = 8, .if_instr = 56, .if_owner = 70, .if_is_entry = -1,
        .owner_shim_min = 3, .instr_is_prev = true,
        .co_filename = 112, .co_localsnames = 96, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
        .co_lines = 136, .co_code_adaptive = 192, .co_read_size = 192, .ob_type = 8, .float_value = 16,
        .str = STR_312,
        /* dict-or-values at obj - 3 words; values tagged with bit 0 (stored as values - 1) */
        .frame_localsplus = 72, DICT_NEW, .ht_cached_keys = 880, .values_values = 0,
        .managed_values_word = -3,
        HEAP_FIELDS, .managed_preheader = 16,
        .fut_loop = 16, .fut_callback0 = 24, .fut_callbacks = 40, .fut_result = 64, .fut_state = 88,
        .task_fut_waiter = 128, .task_coro = 136, .task_name = 144, .task_must_cancel = 160,
        .task_must_cancel_bit = -1, .task_num_cancels = 168, .futiter_future = 16,
        .gen_iframe = 72, .gen_state = 67, .if_stacktop = 64, .gen_yf_lo = -1, .gen_yf_hi = -1,
        .func_code = 48,
    },
    {   /* 3.13.0: fallback when _Py_DebugOffsets is unreadable; tstate->current_frame */
        .minor = 13, .source = "table 3.13", .frames = SOP_PYFRAME_DIRECT,
        .lines = SOP_PYLINES_LOCATIONS,
        .rt_interp_head = 632, .rt_finalizing = 608, .is_next = 7264, .is_tstate_head = 7344,
        .is_id = 7272,
        .is_gc = 7400,
        .is_ceval_gil_ptr = 16, .gil_locked = 16, .gil_last_holder = 8, GC_FIELDS,
        .ts_size = 304, .ts_next = 8, .ts_interp = 16, .ts_frame = 72, .ts_thread_id = 152,
        .ts_native_thread_id = 160,
        .if_code = 0, .if_previous = 8, .if_instr = 56, .if_owner = 70, .if_is_entry = -1,
        .owner_shim_min = 3, .instr_is_prev = false,
        .co_filename = 112, .co_localsnames = 96, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
        .co_lines = 136, .co_code_adaptive = 200, .co_read_size = 200, .ob_type = 8, .float_value = 16,
        .str = STR_312,
        /* managed dict at obj - 3 words; inline values right after the header (obj + 16),
         * PyDictValues {capacity, size, embedded, valid, values @8} */
        .frame_localsplus = 72, DICT_NEW, .ht_cached_keys = 880, .values_values = 8,
        .managed_values_word = 0, .inline_values = true,
        HEAP_FIELDS, .managed_preheader = 16,
        /* task_must_cancel: bit 2 of the bit-field word after fut_state (log_tb, blocking,
         * must_cancel, log_destroy_pending) */
        .fut_loop = 16, .fut_callback0 = 24, .fut_callbacks = 40, .fut_result = 64, .fut_state = 96,
        .task_fut_waiter = 112, .task_coro = 120, .task_name = 128, .task_must_cancel = 100,
        .task_must_cancel_bit = 2, .task_num_cancels = 104, .futiter_future = 16,
        .gen_iframe = 72, .gen_state = 67, .if_stacktop = 64, .gen_yf_lo = -1, .gen_yf_hi = -1,
        .func_code = 48,
    },
    {   /* 3.14.10 (Debian sid): the table holds what _Py_DebugOffsets does not (GC internals,
         * dicts, heap census, the C Future / Task); the rest is a fallback only. Frames and
         * locals hold _PyStackRef; the evaluator's entry frame is FRAME_OWNED_BY_INTERPRETER
         * (3), FRAME_OWNED_BY_CSTACK is 4. */
        .minor = 14, .source = "table 3.14", .frames = SOP_PYFRAME_DIRECT,
        .lines = SOP_PYLINES_LOCATIONS,
        .rt_interp_head = 808, .rt_finalizing = 784, .is_next = 7272, .is_tstate_head = 7344,
        .is_id = 7280, .is_gc = 7408,
        .is_ceval_gil_ptr = 16, .gil_locked = 16, .gil_last_holder = 8,
        .gc_enabled = 12, .gc_collecting = 192, .gc_generations = 24, .gc_gen_size = 24,
        .gc_gen_threshold = 16, .gc_gen_count = 20, .gc_permanent = 96, .gc_gen_stats = 120,
        .gc_gen_stats_size = 24,
        .ts_size = 832, .ts_next = 8, .ts_interp = 16, .ts_frame = 72, .ts_thread_id = 152,
        .ts_native_thread_id = 160,
        .if_code = 0, .if_previous = 8, .if_instr = 56, .if_owner = 74, .if_is_entry = -1,
        .owner_shim_min = 3, .instr_is_prev = false, .stackrefs = true,
        .co_filename = 112, .co_localsnames = 96, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
        .co_lines = 136, .co_code_adaptive = 208, .co_read_size = 208, .ob_type = 8, .float_value = 16,
        .str = STR_312,
        .frame_localsplus = 80, DICT_NEW, .ht_cached_keys = 880, .values_values = 8,
        .managed_values_word = 0, .inline_values = true,
        HEAP_FIELDS, .managed_preheader = 16,
        /* FutureObj_HEAD gained _awaited_by (96) and the is_task / awaited_by_is_set chars
         * (108, 109, as _asyncio's own debug offsets say); the bit-field word after them holds
         * log_tb, blocking, then must_cancel (bit 18 of the word at 108). */
        .fut_loop = 16, .fut_callback0 = 24, .fut_callbacks = 40, .fut_result = 64, .fut_state = 104,
        .task_fut_waiter = 120, .task_coro = 128, .task_name = 136, .task_must_cancel = 108,
        .task_must_cancel_bit = 18, .task_num_cancels = 112, .futiter_future = 16,
        .gen_iframe = 72, .gen_state = 67, .if_stackpointer = 64, .gen_yf_lo = -1, .gen_yf_hi = -1,
        .func_code = 48,
    },
    {   /* 3.15.2 (Debian sid): as 3.14, with a new GC state (no trash list; generation_stats
         * a pointer to ring buffers of records), a base frame in each thread state that ends
         * every chain, and new generator frame states (suspended in yield from: 2, or 3 while
         * locked). */
        .minor = 15, .source = "table 3.15", .frames = SOP_PYFRAME_DIRECT,
        .lines = SOP_PYLINES_LOCATIONS,
        .rt_interp_head = 936, .rt_finalizing = 912, .is_next = 7264, .is_tstate_head = 7336,
        .is_id = 7272, .is_gc = 7400,
        .is_ceval_gil_ptr = 16, .gil_locked = 16, .gil_last_holder = 8,
        .gc_enabled = 0, .gc_collecting = 112, .gc_generations = 8, .gc_gen_size = 24,
        .gc_gen_threshold = 16, .gc_gen_count = 20, .gc_permanent = 80, .gc_gen_stats = 104,
        .gc_gen_stats_size = 64, .gc_stats_ptr = true,
        .gc_stats = {.size = 1120, .item = 64, .collections = 16, .young_n = 11,
                     .young_index = 704, .old_at = 712, .old_size = 200, .old_n = 3,
                     .old_index = 192},
        .ts_size = 888, .ts_next = 8, .ts_interp = 16, .ts_frame = 72, .ts_thread_id = 176,
        .ts_native_thread_id = 184, .ts_base_frame = 80,
        .if_code = 0, .if_previous = 8, .if_instr = 56, .if_owner = 74, .if_is_entry = -1,
        .owner_shim_min = 3, .instr_is_prev = false, .stackrefs = true,
        .co_filename = 112, .co_localsnames = 96, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
        .co_lines = 136, .co_code_adaptive = 208, .co_read_size = 208, .ob_type = 8, .float_value = 16,
        .str = STR_312,
        .frame_localsplus = 80, DICT_NEW, .ht_cached_keys = 888, .values_values = 8,
        .managed_values_word = 0, .inline_values = true,
        HEAP_FIELDS, .managed_preheader = 16,
        .fut_loop = 16, .fut_callback0 = 24, .fut_callbacks = 40, .fut_result = 64, .fut_state = 104,
        .task_fut_waiter = 120, .task_coro = 128, .task_name = 136, .task_must_cancel = 108,
        .task_must_cancel_bit = 18, .task_num_cancels = 112, .futiter_future = 16,
        .gen_iframe = 72, .gen_state = 67, .if_stackpointer = 64, .gen_executing = 4, .gen_yf_lo = 2,
        .gen_yf_hi = 3,
        .func_code = 48,
    },
};

// clang-format on

const sop_pylayout *sop__pylayout_table(int minor)
{
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].minor == minor)
            return &layouts[i];
    return NULL;
}

/* Where the fields sop reads sit in each version's _Py_DebugOffsets, in uint64 words from its
 * start (the cookie is word 0, the version 1, free_threaded 2); -1 where a version has none.
 * Printed by offsetof() against each version's own pycore_debug_offsets.h / pycore_runtime.h
 * and checked by test_layout_headers against those headers. */
typedef struct {
    int minor;
    unsigned size; /* sizeof(_Py_DebugOffsets) */
    int rt_size, rt_finalizing, rt_interp_head;
    int is_size, is_id, is_next, is_threads_head, is_gc, is_ceval_gil, is_gil, is_gil_locked,
        is_gil_holder;
    int ts_size, ts_next, ts_interp, ts_frame, ts_thread_id, ts_native_thread_id, ts_base_frame;
    int if_size, if_previous, if_executable, if_instr, if_localsplus, if_owner, if_stackpointer;
    int co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno,
        co_localsplusnames, co_code_adaptive;
    int ob_size, ob_type, tp_size, tp_name, tp_flags, tp_basicsize, tp_dictoffset;
    int ht_size, ht_cached_keys;
    int fl_size, fl_fval, by_size, by_ob_size, by_sval;
    int un_size, un_state, un_length, un_ascii_size, un_compact_size;
    int gc_size, gc_collecting, gc_stats_size, gc_stats;
    int gen_size, gen_iframe, gen_state;
} dbg_map;

// clang-format off
static const dbg_map dbg_maps[] = {
    {.minor = 13, .size = 584, .rt_size = 3, .rt_finalizing = 4, .rt_interp_head = 5,
     .is_size = 6, .is_id = 7, .is_next = 8, .is_threads_head = 9, .is_gc = 10,
     .is_ceval_gil = 14, .is_gil = 15, .is_gil_locked = 17, .is_gil_holder = 18,
     .ts_size = 19, .ts_next = 21, .ts_interp = 22, .ts_frame = 23, .ts_thread_id = 24,
     .ts_native_thread_id = 25, .ts_base_frame = -1,
     .if_size = 28, .if_previous = 29, .if_executable = 30, .if_instr = 31, .if_localsplus = 32,
     .if_owner = 33, .if_stackpointer = -1,
     .co_size = 34, .co_filename = 35, .co_name = 36, .co_qualname = 37, .co_linetable = 38,
     .co_firstlineno = 39, .co_localsplusnames = 41, .co_code_adaptive = 43,
     .ob_size = 44, .ob_type = 45, .tp_size = 46, .tp_name = 47, .tp_flags = 49,
     .tp_basicsize = -1, .tp_dictoffset = -1, .ht_size = -1, .ht_cached_keys = -1,
     .fl_size = 59, .fl_fval = 60, .by_size = 64, .by_ob_size = 65, .by_sval = 66,
     .un_size = 67, .un_state = 68, .un_length = 69, .un_ascii_size = 70, .un_compact_size = -1,
     .gc_size = 71, .gc_collecting = 72, .gc_stats_size = -1, .gc_stats = -1,
     .gen_size = -1, .gen_iframe = -1, .gen_state = -1},
    {.minor = 14, .size = 760, .rt_size = 3, .rt_finalizing = 4, .rt_interp_head = 5,
     .is_size = 6, .is_id = 7, .is_next = 8, .is_threads_head = 9, .is_gc = 11,
     .is_ceval_gil = 15, .is_gil = 16, .is_gil_locked = 18, .is_gil_holder = 19,
     .ts_size = 22, .ts_next = 24, .ts_interp = 25, .ts_frame = 26, .ts_thread_id = 27,
     .ts_native_thread_id = 28, .ts_base_frame = -1,
     .if_size = 31, .if_previous = 32, .if_executable = 33, .if_instr = 34, .if_localsplus = 35,
     .if_owner = 36, .if_stackpointer = 37,
     .co_size = 39, .co_filename = 40, .co_name = 41, .co_qualname = 42, .co_linetable = 43,
     .co_firstlineno = 44, .co_localsplusnames = 46, .co_code_adaptive = 48,
     .ob_size = 50, .ob_type = 51, .tp_size = 52, .tp_name = 53, .tp_flags = 55,
     .tp_basicsize = -1, .tp_dictoffset = -1, .ht_size = -1, .ht_cached_keys = -1,
     .fl_size = 69, .fl_fval = 70, .by_size = 74, .by_ob_size = 75, .by_sval = 76,
     .un_size = 77, .un_state = 78, .un_length = 79, .un_ascii_size = 80, .un_compact_size = -1,
     .gc_size = 81, .gc_collecting = 82, .gc_stats_size = -1, .gc_stats = -1,
     .gen_size = 83, .gen_iframe = 85, .gen_state = 86},
    {.minor = 15, .size = 888, .rt_size = 3, .rt_finalizing = 4, .rt_interp_head = 5,
     .is_size = 6, .is_id = 7, .is_next = 8, .is_threads_head = 9, .is_gc = 11,
     .is_ceval_gil = 15, .is_gil = 16, .is_gil_locked = 18, .is_gil_holder = 19,
     .ts_size = 22, .ts_next = 24, .ts_interp = 25, .ts_frame = 26, .ts_thread_id = 30,
     .ts_native_thread_id = 31, .ts_base_frame = 27,
     .if_size = 39, .if_previous = 40, .if_executable = 41, .if_instr = 42, .if_localsplus = 43,
     .if_owner = 44, .if_stackpointer = 45,
     .co_size = 47, .co_filename = 48, .co_name = 49, .co_qualname = 50, .co_linetable = 51,
     .co_firstlineno = 52, .co_localsplusnames = 54, .co_code_adaptive = 56,
     .ob_size = 58, .ob_type = 59, .tp_size = 60, .tp_name = 61, .tp_flags = 63,
     .tp_basicsize = 64, .tp_dictoffset = 65, .ht_size = 66, .ht_cached_keys = 67,
     .fl_size = 81, .fl_fval = 82, .by_size = 86, .by_ob_size = 87, .by_sval = 88,
     .un_size = 89, .un_state = 90, .un_length = 91, .un_ascii_size = 92, .un_compact_size = 93,
     .gc_size = 94, .gc_collecting = 95, .gc_stats_size = 97, .gc_stats = 98,
     .gen_size = 99, .gen_iframe = 101, .gen_state = 102},
};
// clang-format on

static const dbg_map *dbg_map_for(int minor)
{
    for (size_t i = 0; i < sizeof dbg_maps / sizeof dbg_maps[0]; i++)
        if (dbg_maps[i].minor == minor)
            return &dbg_maps[i];
    return NULL;
}

size_t sop__pylayout_debug_offsets_size(int minor)
{
    const dbg_map *d = dbg_map_for(minor);
    return d ? d->size : 0;
}

static uint64_t word(const uint8_t *blob, int w)
{
    uint64_t v;
    memcpy(&v, blob + 8 * (size_t)w, sizeof v);
    return v;
}

/* Offset word `w` of a struct whose size is word `size_w`: must leave room for `need` bytes.
 * A field the version does not carry (w < 0) leaves *out as it is (the table's value). */
static int fits(const uint8_t *blob, int size_w, int w, uint64_t need, uint32_t *out)
{
    if (w < 0)
        return 0;
    uint64_t size = word(blob, size_w), off = word(blob, w);
    if (off > size || need > size - off || off > UINT32_MAX)
        return -1;
    *out = (uint32_t)off;
    return 0;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        return -EINVAL;                                                                            \
    } while (0)

/* The blob's cookie, version (3.13+, the one Py_Version says), its map and build (not
 * free-threaded). 0, -EINVAL or -ENOTSUP with why. */
static int dbg_header(const uint8_t *blob, size_t len, uint64_t expect_hex, const dbg_map **map,
                      char *why, size_t whylen)
{
    if (len < 24)
        FAIL("debug offsets: %zu bytes", len);
    if (memcmp(blob, "xdebugpy", 8) != 0)
        FAIL("debug offsets: bad cookie");
    uint64_t ver = word(blob, 1);
    int minor = (int)((ver >> 16) & 0xff);
    if ((ver >> 24) != 3 || minor < 13)
        FAIL("debug offsets: version 0x%llx is not CPython 3.13 or newer", (unsigned long long)ver);
    if (expect_hex && ver != expect_hex)
        FAIL("debug offsets: version 0x%llx != Py_Version 0x%llx", (unsigned long long)ver,
             (unsigned long long)expect_hex);
    const dbg_map *D = dbg_map_for(minor);
    if (!D) {
        snprintf(why, whylen, "CPython 3.%d: layout not known to this sop (it reads 3.8-3.%d)",
                 minor, SOP_PYLAYOUT_NEWEST_MINOR);
        return -ENOTSUP;
    }
    if (len < D->size)
        FAIL("debug offsets: %zu bytes, the 3.%d struct has %u", len, minor, D->size);
    if (word(blob, 2) != 0) {
        snprintf(why, whylen,
                 "CPython 3.%d free-threaded build: its thread and frame layout is not read "
                 "by this sop",
                 minor);
        return -ENOTSUP;
    }
    *map = D;
    return 0;
}

/* Struct sizes: sane bounds, so a corrupt blob cannot send reads far away. */
static int dbg_sizes(const uint8_t *blob, const dbg_map *D, char *why, size_t whylen)
{
    const struct {
        int w;
        uint64_t lo, hi;
        const char *what;
    } sizes[] = {
        {D->rt_size, 64, 1u << 22, "runtime"},
        {D->is_size, 64, 1u << 22, "interpreter"},
        {D->ts_size, 64, 1u << 14, "thread state"},
        {D->if_size, 32, 1u << 10, "frame"},
        {D->co_size, 64, 1u << 12, "code"},
        {D->ob_size, 16, 64, "object"},
        {D->by_size, 24, 128, "bytes"},
        {D->un_size, 24, 256, "unicode"},
        {D->gc_size, 16, 1u << 14, "gc"},
        {D->fl_size, 24, 64, "float"},
        {D->tp_size, 128, 4096, "type"},
        {D->ht_size, 128, 8192, "heap type"},
        {D->gen_size, 32, 1024, "generator"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].w < 0)
            continue;
        uint64_t s = word(blob, sizes[i].w);
        if (s < sizes[i].lo || s > sizes[i].hi)
            FAIL("debug offsets: %s size %llu out of bounds", sizes[i].what, (unsigned long long)s);
    }
    return 0;
}

/* The GIL's fields as the blob gives them: inside the interpreter, from its GIL struct. */
typedef struct {
    uint32_t gil_struct, locked, holder;
} dbg_gil;

/* Every offset the readers use, each inside its struct's size (else nonzero). */
static int dbg_fields(const uint8_t *blob, const dbg_map *D, sop_pylayout *L, dbg_gil *g)
{
    uint32_t gc_size = (uint32_t)word(blob, D->gc_size);
    int bad = 0;
    bad |= fits(blob, D->rt_size, D->rt_interp_head, 8, &L->rt_interp_head);
    bad |= fits(blob, D->rt_size, D->rt_finalizing, 8, &L->rt_finalizing);
    bad |= fits(blob, D->is_size, D->is_next, 8, &L->is_next);
    bad |= fits(blob, D->is_size, D->is_threads_head, 8, &L->is_tstate_head);
    bad |= fits(blob, D->is_size, D->is_id, 8, &L->is_id);
    bad |= fits(blob, D->is_size, D->is_gc, gc_size, &L->is_gc);
    bad |= fits(blob, D->is_size, D->is_ceval_gil, 8, &L->is_ceval_gil_ptr);
    bad |= fits(blob, D->is_size, D->is_gil, 8, &g->gil_struct);
    bad |= fits(blob, D->is_size, D->is_gil_locked, 4, &g->locked);
    bad |= fits(blob, D->is_size, D->is_gil_holder, 8, &g->holder);
    bad |= fits(blob, D->ts_size, D->ts_next, 8, &L->ts_next);
    bad |= fits(blob, D->ts_size, D->ts_interp, 8, &L->ts_interp);
    bad |= fits(blob, D->ts_size, D->ts_frame, 8, &L->ts_frame);
    bad |= fits(blob, D->ts_size, D->ts_thread_id, 8, &L->ts_thread_id);
    bad |= fits(blob, D->ts_size, D->ts_native_thread_id, 8, &L->ts_native_thread_id);
    bad |= fits(blob, D->if_size, D->if_previous, 8, &L->if_previous);
    bad |= fits(blob, D->if_size, D->if_executable, 8, &L->if_code);
    bad |= fits(blob, D->if_size, D->if_instr, 8, &L->if_instr);
    bad |= fits(blob, D->if_size, D->if_owner, 1, &L->if_owner);
    bad |= fits(blob, D->if_size, D->if_localsplus, 0, &L->frame_localsplus);
    bad |= fits(blob, D->if_size, D->if_stackpointer, 8, &L->if_stackpointer);
    bad |= fits(blob, D->co_size, D->co_filename, 8, &L->co_filename);
    bad |= fits(blob, D->co_size, D->co_name, 8, &L->co_name);
    bad |= fits(blob, D->co_size, D->co_qualname, 8, &L->co_qualname);
    bad |= fits(blob, D->co_size, D->co_linetable, 8, &L->co_lines);
    bad |= fits(blob, D->co_size, D->co_firstlineno, 4, &L->co_firstlineno);
    bad |= fits(blob, D->co_size, D->co_localsplusnames, 8, &L->co_localsnames);
    bad |= fits(blob, D->co_size, D->co_code_adaptive, 0, &L->co_code_adaptive);
    bad |= fits(blob, D->ob_size, D->ob_type, 8, &L->ob_type);
    bad |= fits(blob, D->tp_size, D->tp_name, 8, &L->tp_name);
    bad |= fits(blob, D->tp_size, D->tp_flags, 8, &L->tp_flags);
    bad |= fits(blob, D->tp_size, D->tp_basicsize, 8, &L->tp_basicsize);
    bad |= fits(blob, D->tp_size, D->tp_dictoffset, 8, &L->tp_dictoffset);
    bad |= fits(blob, D->ht_size, D->ht_cached_keys, 8, &L->ht_cached_keys);
    bad |= fits(blob, D->fl_size, D->fl_fval, 8, &L->float_value);
    bad |= fits(blob, D->by_size, D->by_ob_size, 8, &L->str.bytes_size);
    bad |= fits(blob, D->by_size, D->by_sval, 0, &L->str.bytes_sval);
    bad |= fits(blob, D->un_size, D->un_state, 4, &L->str.uni_state);
    bad |= fits(blob, D->un_size, D->un_length, 8, &L->str.uni_length);
    bad |= fits(blob, D->gc_size, D->gc_collecting, 4, &L->gc_collecting);
    bad |= fits(blob, D->gc_size, D->gc_stats, 8, &L->gc_gen_stats);
    bad |= fits(blob, D->gen_size, D->gen_iframe, 8, &L->gen_iframe);
    bad |= fits(blob, D->gen_size, D->gen_state, 1, &L->gen_state);
    return bad;
}

/* What follows from the offsets: the GIL fields, string sizes, the thread state's size and how
 * much of a code object to read, each within what the walker's buffers hold. 0 or -EINVAL. */
static int dbg_derived(const uint8_t *blob, const dbg_map *D, sop_pylayout *L, const dbg_gil *g,
                       char *why, size_t whylen)
{
    if (D->gc_stats_size >= 0 && L->gc_stats_ptr) {
        /* sizeof(struct gc_stats): records unlike this version's table are not read */
        uint64_t total = word(blob, D->gc_stats_size);
        if (total != L->gc_stats.size)
            L->gc_stats_ptr = false;
    }
    /* The walker reads these structs into fixed buffers (py_walk.c): what it reads from must
     * lie inside them, whatever a blob claims. */
    if (word(blob, D->ts_size) > SOP_PYLAYOUT_MAX_TSTATE ||
        L->if_owner >= SOP_PYLAYOUT_MAX_FRAME_READ ||
        L->if_code + 8 > SOP_PYLAYOUT_MAX_FRAME_READ ||
        L->if_previous + 8 > SOP_PYLAYOUT_MAX_FRAME_READ ||
        L->if_instr + 8 > SOP_PYLAYOUT_MAX_FRAME_READ ||
        L->if_stackpointer + 8 > SOP_PYLAYOUT_MAX_FRAME_READ ||
        L->gc_collecting + 4 > SOP_PYLAYOUT_GC_READ || L->gc_gen_stats + 8 > SOP_PYLAYOUT_GC_READ)
        FAIL("debug offsets: fields beyond what this reader handles");
    uint64_t ascii = word(blob, D->un_ascii_size);
    if (ascii < 24 || ascii > 128)
        FAIL("debug offsets: asciiobject_size %llu out of bounds", (unsigned long long)ascii);
    if (g->locked < g->gil_struct || g->holder < g->gil_struct)
        FAIL("debug offsets: GIL fields before the GIL struct");
    L->gil_locked = g->locked - g->gil_struct;
    L->gil_last_holder = g->holder - g->gil_struct;
    L->str.uni_ascii_size = (uint32_t)ascii;
    /* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (3.15 carries its size). */
    L->str.uni_compact_size = (uint32_t)ascii + 16;
    if (D->un_compact_size >= 0) {
        uint64_t compact = word(blob, D->un_compact_size);
        if (compact < ascii || compact > 256)
            FAIL("debug offsets: compactunicodeobject_size %llu out of bounds",
                 (unsigned long long)compact);
        L->str.uni_compact_size = (uint32_t)compact;
    }
    L->ts_size = (uint32_t)word(blob, D->ts_size);
    L->co_read_size = L->co_code_adaptive;
    uint32_t maxf = L->co_filename;
    const uint32_t co_fields[] = {L->co_name, L->co_qualname, L->co_lines, L->co_firstlineno,
                                  L->co_localsnames};
    for (size_t i = 0; i < sizeof co_fields / sizeof co_fields[0]; i++)
        if (co_fields[i] > maxf)
            maxf = co_fields[i];
    if (maxf + 8 > L->co_read_size)
        L->co_read_size = maxf + 8;
    if (L->co_read_size > SOP_PYLAYOUT_MAX_CODE_READ)
        FAIL("debug offsets: code object fields beyond what this reader handles");
    return 0;
}

int sop__pylayout_from_debug_offsets(const uint8_t *blob, size_t len, uint64_t expect_hex,
                                     sop_pylayout *out, char *why, size_t whylen)
{
    const dbg_map *D = NULL;
    int rc = dbg_header(blob, len, expect_hex, &D, why, whylen);
    if (rc == 0)
        rc = dbg_sizes(blob, D, why, whylen);
    if (rc != 0)
        return rc;
    int minor = (int)((word(blob, 1) >> 16) & 0xff);
    const sop_pylayout *base = sop__pylayout_table(minor);
    if (!base)
        FAIL("debug offsets: no table for 3.%d", minor);
    sop_pylayout L = *base;
    L.source = "_Py_DebugOffsets";
    dbg_gil g = {0};
    if (dbg_fields(blob, D, &L, &g))
        FAIL("debug offsets: an offset lies outside its struct");
    if (fits(blob, D->ts_size, D->ts_base_frame, 8, &L.ts_base_frame))
        FAIL("debug offsets: an offset lies outside its struct");
    if ((rc = dbg_derived(blob, D, &L, &g, why, whylen)) != 0)
        return rc;
    *out = L;
    return 0;
}
#undef FAIL
