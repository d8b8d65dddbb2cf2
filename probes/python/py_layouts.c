/* py_layouts.c — per-version CPython layouts, in one table. Every number below was printed
 * by offsetof()/sizeof() from a program compiled against that version's headers
 * (/root/.pyenv/versions/3.X.Y/include, Py_BUILD_CORE, internal/ headers; x86-64), and the
 * Debian 3.11.2 build gives the same numbers as pyenv 3.11.7. 3.13+ prefers the target's
 * _Py_DebugOffsets (read by sop__pylayout_from_debug_offsets). Depends on libc only. */
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
        .fo_back = 24, .fo_code = 32, .fo_lasti = 104, .if_is_entry = -1, .owner_cstack = -1,
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
        .fo_back = 24, .fo_code = 32, .fo_lasti = 104, .if_is_entry = -1, .owner_cstack = -1,
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
        .fo_back = 24, .fo_code = 32, .fo_lasti = 96, .if_is_entry = -1, .owner_cstack = -1,
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
        .owner_cstack = -1, .instr_is_prev = true,
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
        .owner_cstack = 3, .instr_is_prev = true,
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
        .gen_iframe = 72, .gen_state = 67, .if_stacktop = 64, .func_code = 48,
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
        .owner_cstack = 3, .instr_is_prev = false,
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
        .gen_iframe = 72, .gen_state = 67, .if_stacktop = 64, .func_code = 48,
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

/* Field positions (in uint64 words) inside the 3.13 _Py_DebugOffsets blob: cookie (1 word),
 * version, free_threaded, then the sub-structs in declaration order. */
enum {
    W_VERSION = 1,
    W_FREE_THREADED = 2,
    W_RT = 3,     /* size, finalizing, interpreters_head */
    W_IS = 6,     /* size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
                     ceval_gil, gil_runtime_state, gil_enabled, gil_locked, gil_holder */
    W_TS = 19,    /* size, prev, next, interp, current_frame, thread_id, native_thread_id,
                     datastack_chunk, status */
    W_IF = 28,    /* size, previous, executable, instr_ptr, localsplus, owner */
    W_CO = 34,    /* size, filename, name, qualname, linetable, firstlineno, argcount,
                     localsplusnames, localspluskinds, co_code_adaptive */
    W_OBJ = 44,   /* size, ob_type */
    W_TYPE = 46,  /* size, tp_name, tp_repr, tp_flags */
    W_TUPLE = 50, /* size, ob_item, ob_size */
    W_LIST = 53,
    W_DICT = 56,
    W_FLOAT = 59, /* size, ob_fval */
    W_LONG = 61,  /* size, lv_tag, ob_digit */
    W_BYTES = 64, /* size, ob_size, ob_sval */
    W_UNI = 67,   /* size, state, length, asciiobject_size */
    W_GC = 71,    /* size, collecting */
    W_END = 73,
};

static uint64_t word(const uint8_t *blob, int w)
{
    uint64_t v;
    memcpy(&v, blob + 8 * (size_t)w, sizeof v);
    return v;
}

/* offset `w` of a struct whose size is word `size_w`: must leave room for `need` bytes. */
static int fits(const uint8_t *blob, int size_w, int w, uint64_t need, uint32_t *out)
{
    uint64_t size = word(blob, size_w), off = word(blob, w);
    if (off > size || need > size - off || off > UINT32_MAX)
        return -1;
    *out = (uint32_t)off;
    return 0;
}

int sop__pylayout_from_debug_offsets(const uint8_t *blob, size_t len, uint64_t expect_hex,
                                     sop_pylayout *out, char *why, size_t whylen)
{
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        return -EINVAL;                                                                            \
    } while (0)
    if (len < SOP_DEBUG_OFFSETS_313_SIZE || W_END * 8 != SOP_DEBUG_OFFSETS_313_SIZE)
        FAIL("debug offsets: %zu bytes, need %u", len, SOP_DEBUG_OFFSETS_313_SIZE);
    if (memcmp(blob, "xdebugpy", 8) != 0)
        FAIL("debug offsets: bad cookie");
    uint64_t ver = word(blob, W_VERSION);
    if ((ver >> 24) != 3 || ((ver >> 16) & 0xff) != 13)
        FAIL("debug offsets: version 0x%llx is not 3.13 (layout of this struct unknown)",
             (unsigned long long)ver);
    if (expect_hex && ver != expect_hex)
        FAIL("debug offsets: version 0x%llx != Py_Version 0x%llx", (unsigned long long)ver,
             (unsigned long long)expect_hex);
    if (word(blob, W_FREE_THREADED) != 0)
        FAIL("debug offsets: free-threaded build not supported");
    /* Struct sizes: sane bounds, so a corrupt blob cannot send reads far away. */
    static const struct {
        int w;
        uint64_t lo, hi;
        const char *what;
    } sizes[] = {
        {W_RT, 64, 1u << 22, "runtime"},      {W_IS, 64, 1u << 22, "interpreter"},
        {W_TS, 64, 1u << 14, "thread state"}, {W_IF, 32, 1u << 10, "frame"},
        {W_CO, 64, 1u << 12, "code"},         {W_OBJ, 16, 64, "object"},
        {W_BYTES, 24, 128, "bytes"},          {W_UNI, 24, 256, "unicode"},
        {W_GC, 16, 1u << 14, "gc"},           {W_FLOAT, 24, 64, "float"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint64_t s = word(blob, sizes[i].w);
        if (s < sizes[i].lo || s > sizes[i].hi)
            FAIL("debug offsets: %s size %llu out of bounds", sizes[i].what, (unsigned long long)s);
    }
    const sop_pylayout *base = sop__pylayout_table(13);
    sop_pylayout L = *base;
    L.source = "_Py_DebugOffsets";
    uint32_t gil_struct = 0, locked = 0, holder = 0;
    int bad = 0;
    bad |= fits(blob, W_RT, W_RT + 2, 8, &L.rt_interp_head);
    bad |= fits(blob, W_RT, W_RT + 1, 8, &L.rt_finalizing);
    bad |= fits(blob, W_IS, W_IS + 2, 8, &L.is_next);
    bad |= fits(blob, W_IS, W_IS + 3, 8, &L.is_tstate_head);
    bad |= fits(blob, W_IS, W_IS + 1, 8, &L.is_id);
    bad |= fits(blob, W_IS, W_IS + 4, word(blob, W_GC), &L.is_gc);
    bad |= fits(blob, W_IS, W_IS + 8, 8, &L.is_ceval_gil_ptr);
    bad |= fits(blob, W_IS, W_IS + 9, 8, &gil_struct);
    bad |= fits(blob, W_IS, W_IS + 11, 4, &locked);
    bad |= fits(blob, W_IS, W_IS + 12, 8, &holder);
    bad |= fits(blob, W_TS, W_TS + 2, 8, &L.ts_next);
    bad |= fits(blob, W_TS, W_TS + 3, 8, &L.ts_interp);
    bad |= fits(blob, W_TS, W_TS + 4, 8, &L.ts_frame);
    bad |= fits(blob, W_TS, W_TS + 5, 8, &L.ts_thread_id);
    bad |= fits(blob, W_TS, W_TS + 6, 8, &L.ts_native_thread_id);
    bad |= fits(blob, W_IF, W_IF + 1, 8, &L.if_previous);
    bad |= fits(blob, W_IF, W_IF + 2, 8, &L.if_code);
    bad |= fits(blob, W_IF, W_IF + 3, 8, &L.if_instr);
    bad |= fits(blob, W_IF, W_IF + 5, 1, &L.if_owner);
    bad |= fits(blob, W_IF, W_IF + 4, 0, &L.frame_localsplus);
    bad |= fits(blob, W_CO, W_CO + 1, 8, &L.co_filename);
    bad |= fits(blob, W_CO, W_CO + 2, 8, &L.co_name);
    bad |= fits(blob, W_CO, W_CO + 3, 8, &L.co_qualname);
    bad |= fits(blob, W_CO, W_CO + 4, 8, &L.co_lines);
    bad |= fits(blob, W_CO, W_CO + 5, 4, &L.co_firstlineno);
    bad |= fits(blob, W_CO, W_CO + 7, 8, &L.co_localsnames);
    bad |= fits(blob, W_CO, W_CO + 9, 0, &L.co_code_adaptive);
    bad |= fits(blob, W_OBJ, W_OBJ + 1, 8, &L.ob_type);
    bad |= fits(blob, W_FLOAT, W_FLOAT + 1, 8, &L.float_value);
    bad |= fits(blob, W_BYTES, W_BYTES + 1, 8, &L.str.bytes_size);
    bad |= fits(blob, W_BYTES, W_BYTES + 2, 0, &L.str.bytes_sval);
    bad |= fits(blob, W_UNI, W_UNI + 1, 4, &L.str.uni_state);
    bad |= fits(blob, W_UNI, W_UNI + 2, 8, &L.str.uni_length);
    bad |= fits(blob, W_GC, W_GC + 1, 4, &L.gc_collecting);
    if (bad)
        FAIL("debug offsets: an offset lies outside its struct");
    /* The walker reads these structs into fixed buffers (py_walk.c): what it reads from must
     * lie inside them, whatever a blob claims. */
    if (word(blob, W_TS) > SOP_PYLAYOUT_MAX_TSTATE || L.if_owner >= SOP_PYLAYOUT_MAX_FRAME_READ ||
        L.if_code + 8 > SOP_PYLAYOUT_MAX_FRAME_READ ||
        L.if_previous + 8 > SOP_PYLAYOUT_MAX_FRAME_READ ||
        L.if_instr + 8 > SOP_PYLAYOUT_MAX_FRAME_READ || L.gc_collecting + 4 > SOP_PYLAYOUT_GC_READ)
        FAIL("debug offsets: fields beyond what this reader handles");
    uint64_t ascii = word(blob, W_UNI + 3);
    if (ascii < 24 || ascii > 128)
        FAIL("debug offsets: asciiobject_size %llu out of bounds", (unsigned long long)ascii);
    if (locked < gil_struct || holder < gil_struct)
        FAIL("debug offsets: GIL fields before the GIL struct");
    L.gil_locked = locked - gil_struct;
    L.gil_last_holder = holder - gil_struct;
    L.str.uni_ascii_size = (uint32_t)ascii;
    /* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (not in the blob). */
    L.str.uni_compact_size = (uint32_t)ascii + 16;
    L.ts_size = (uint32_t)word(blob, W_TS);
    L.co_read_size = L.co_code_adaptive;
    uint32_t maxf = L.co_filename;
    const uint32_t co_fields[] = {L.co_name, L.co_qualname, L.co_lines, L.co_firstlineno,
                                  L.co_localsnames};
    for (size_t i = 0; i < sizeof co_fields / sizeof co_fields[0]; i++)
        if (co_fields[i] > maxf)
            maxf = co_fields[i];
    if (maxf + 8 > L.co_read_size)
        L.co_read_size = maxf + 8;
    if (L.co_read_size > SOP_PYLAYOUT_MAX_CODE_READ)
        FAIL("debug offsets: code object fields beyond what this reader handles");
    *out = L;
    return 0;
#undef FAIL
}
