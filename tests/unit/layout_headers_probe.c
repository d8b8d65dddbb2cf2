/* layout_headers_probe.c — compiled against one CPython's own headers (Py_BUILD_CORE, its
 * internal/ headers), prints what those headers say of every field sop's layouts name: one
 * "name value" line per field (offsetof / sizeof), named as the members of sop_pylayout
 * (probes/python/py_layouts.h), and on 3.13+ a _Py_DebugOffsets blob built from the
 * headers' own struct (its fields filled with the same offsetof values) as "blob <hex>".
 * tests/unit/test_layout_headers.sh builds it for each interpreter's headers it finds and
 * test_layout_headers.c compares the lines with sop's tables and debug-offsets reader. Only
 * 3.11+ is covered here (3.8-3.10's frame objects are checked live in test_python_layouts).
 * Depends on the target version's headers only; never linked with libpython. */
#define Py_BUILD_CORE 1
#include <Python.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030B0000
int main(void)
{
    printf("skip %d.%d: frame objects (3.8-3.10) are checked live\n", PY_MAJOR_VERSION,
           PY_MINOR_VERSION);
    return 0;
}
#else

#include <internal/pycore_dict.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_gc.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#if PY_VERSION_HEX >= 0x030D0000
#include <internal/pycore_tstate.h>
#endif
#if PY_VERSION_HEX >= 0x030E0000
#include <internal/pycore_genobject.h>
#include <internal/pycore_interpframe_structs.h>
#endif

#define P(name, value) printf("%s %lld\n", name, (long long)(value))

typedef PyGenObject gen_t; /* cpython/genobject.h; 3.14+ internal/pycore_interpframe_structs.h */

static void runtime_fields(void)
{
    P("rt_interp_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX >= 0x030D0000
    P("rt_finalizing", offsetof(_PyRuntimeState, _finalizing));
#else
    P("rt_finalizing", offsetof(_PyRuntimeState, _finalizing));
#endif
#if PY_VERSION_HEX < 0x030C0000
    P("rt_gil_locked", offsetof(_PyRuntimeState, ceval.gil.locked));
    P("rt_gil_last_holder", offsetof(_PyRuntimeState, ceval.gil.last_holder));
#else
    P("is_ceval_gil_ptr", offsetof(PyInterpreterState, ceval.gil));
    P("gil_locked", offsetof(struct _gil_runtime_state, locked));
    P("gil_last_holder", offsetof(struct _gil_runtime_state, last_holder));
#endif
    /* the switch counter and interval, relative to `locked` (SOP_GIL_*_FROM_LOCKED) */
    P("gil_interval_from_locked", (long long)offsetof(struct _gil_runtime_state, interval) -
                                      (long long)offsetof(struct _gil_runtime_state, locked));
    P("gil_switches_from_locked", (long long)offsetof(struct _gil_runtime_state, switch_number) -
                                      (long long)offsetof(struct _gil_runtime_state, locked));
    P("is_next", offsetof(PyInterpreterState, next));
    P("is_tstate_head", offsetof(PyInterpreterState, threads.head));
    P("is_id", offsetof(PyInterpreterState, id));
    P("is_gc", offsetof(PyInterpreterState, gc));
}

static void gc_fields(void)
{
    P("gc_enabled", offsetof(struct _gc_runtime_state, enabled));
    P("gc_collecting", offsetof(struct _gc_runtime_state, collecting));
    P("gc_generations", offsetof(struct _gc_runtime_state, generations));
    P("gc_gen_size", sizeof(struct gc_generation));
    P("gc_gen_threshold", offsetof(struct gc_generation, threshold));
    P("gc_gen_count", offsetof(struct gc_generation, count));
    P("gc_permanent", offsetof(struct _gc_runtime_state, permanent_generation));
    P("gc_gen_stats", offsetof(struct _gc_runtime_state, generation_stats));
    P("gc_gen_stats_size", sizeof(struct gc_generation_stats));
    P("gc_head_size", sizeof(PyGC_Head));
}

static void thread_fields(void)
{
    P("ts_size", sizeof(PyThreadState));
    P("ts_next", offsetof(PyThreadState, next));
    P("ts_interp", offsetof(PyThreadState, interp));
#if PY_VERSION_HEX >= 0x030D0000
    P("ts_frame", offsetof(PyThreadState, current_frame));
#else
    P("ts_frame", offsetof(PyThreadState, cframe));
    P("cf_current_frame", offsetof(_PyCFrame, current_frame));
#endif
    P("ts_thread_id", offsetof(PyThreadState, thread_id));
    P("ts_native_thread_id", offsetof(PyThreadState, native_thread_id));
#if PY_VERSION_HEX >= 0x030E0000
    P("ts_asyncio_tasks_head", offsetof(_PyThreadStateImpl, asyncio_tasks_head));
#endif
}

static void frame_fields(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    P("if_code", offsetof(_PyInterpreterFrame, f_executable));
    P("if_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
    P("if_code", offsetof(_PyInterpreterFrame, f_code));
    P("if_instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
    P("if_previous", offsetof(_PyInterpreterFrame, previous));
    P("if_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030C0000
    P("if_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
#if PY_VERSION_HEX >= 0x030E0000
    P("if_stackpointer", offsetof(_PyInterpreterFrame, stackpointer));
    P("owner_shim_min", FRAME_OWNED_BY_INTERPRETER);
#else
    P("if_stacktop", offsetof(_PyInterpreterFrame, stacktop));
#endif
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030E0000
    P("owner_shim_min", FRAME_OWNED_BY_CSTACK);
#endif
    P("frame_localsplus", offsetof(_PyInterpreterFrame, localsplus));
    P("owned_by_generator", FRAME_OWNED_BY_GENERATOR);
    P("gen_iframe", offsetof(gen_t, gi_iframe));
    P("gen_state", offsetof(gen_t, gi_frame_state));
#if PY_VERSION_HEX >= 0x030D0000
    P("gen_yf_lo", FRAME_SUSPENDED_YIELD_FROM);
    P("gen_executing", FRAME_EXECUTING);
#elif PY_VERSION_HEX >= 0x030C0000
    P("gen_yf_lo", FRAME_SUSPENDED);
    P("gen_executing", FRAME_EXECUTING);
#endif
    P("func_code", offsetof(PyFunctionObject, func_code));
}

static void code_fields(void)
{
    P("co_filename", offsetof(PyCodeObject, co_filename));
    P("co_name", offsetof(PyCodeObject, co_name));
    P("co_qualname", offsetof(PyCodeObject, co_qualname));
    P("co_firstlineno", offsetof(PyCodeObject, co_firstlineno));
    P("co_lines", offsetof(PyCodeObject, co_linetable));
    P("co_code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
    P("co_localsnames", offsetof(PyCodeObject, co_localsplusnames));
}

static void object_fields(void)
{
    P("ob_type", offsetof(PyObject, ob_type));
    P("ob_size", offsetof(PyVarObject, ob_size));
    P("float_value", offsetof(PyFloatObject, ob_fval));
    P("tp_name", offsetof(PyTypeObject, tp_name));
    P("tp_basicsize", offsetof(PyTypeObject, tp_basicsize));
    P("tp_itemsize", offsetof(PyTypeObject, tp_itemsize));
    P("tp_flags", offsetof(PyTypeObject, tp_flags));
    P("tp_dict", offsetof(PyTypeObject, tp_dict));
    P("tp_dictoffset", offsetof(PyTypeObject, tp_dictoffset));
    P("ht_cached_keys", offsetof(PyHeapTypeObject, ht_cached_keys));
    P("ma_keys", offsetof(PyDictObject, ma_keys));
    P("ma_values", offsetof(PyDictObject, ma_values));
    P("dict_used", offsetof(PyDictObject, ma_used));
    P("dk_nentries", offsetof(PyDictKeysObject, dk_nentries));
    P("dk_indices", offsetof(PyDictKeysObject, dk_indices));
    P("values_values", offsetof(PyDictValues, values));
    P("list_items", offsetof(PyListObject, ob_item));
    P("list_allocated", offsetof(PyListObject, allocated));
    P("set_mask", offsetof(PySetObject, mask));
    P("set_table", offsetof(PySetObject, table));
    P("set_smalltable", offsetof(PySetObject, smalltable));
    P("str.uni_length", offsetof(PyASCIIObject, length));
    P("str.uni_state", offsetof(PyASCIIObject, state));
    P("str.uni_ascii_size", sizeof(PyASCIIObject));
    P("str.uni_compact_size", sizeof(PyCompactUnicodeObject));
    P("str.bytes_size", offsetof(PyBytesObject, ob_base.ob_size));
    P("str.bytes_sval", offsetof(PyBytesObject, ob_sval));
}

#if PY_VERSION_HEX >= 0x030D0000
/* The debug offsets the interpreter would carry, from the headers' own struct: each field
 * sop reads set to the offset the headers give. */
static void debug_blob(void)
{
    _Py_DebugOffsets d;
    memset(&d, 0, sizeof d);
    memcpy(d.cookie, "xdebugpy", 8);
    d.version = PY_VERSION_HEX;
    d.free_threaded = 0;
    d.runtime_state.size = sizeof(_PyRuntimeState);
    d.runtime_state.finalizing = offsetof(_PyRuntimeState, _finalizing);
    d.runtime_state.interpreters_head = offsetof(_PyRuntimeState, interpreters.head);
    d.interpreter_state.size = sizeof(PyInterpreterState);
    d.interpreter_state.id = offsetof(PyInterpreterState, id);
    d.interpreter_state.next = offsetof(PyInterpreterState, next);
    d.interpreter_state.threads_head = offsetof(PyInterpreterState, threads.head);
    d.interpreter_state.gc = offsetof(PyInterpreterState, gc);
    d.interpreter_state.ceval_gil = offsetof(PyInterpreterState, ceval.gil);
    d.interpreter_state.gil_runtime_state = offsetof(PyInterpreterState, _gil);
    d.interpreter_state.gil_runtime_state_locked = offsetof(PyInterpreterState, _gil.locked);
    d.interpreter_state.gil_runtime_state_holder = offsetof(PyInterpreterState, _gil.last_holder);
    d.thread_state.size = sizeof(PyThreadState);
    d.thread_state.next = offsetof(PyThreadState, next);
    d.thread_state.interp = offsetof(PyThreadState, interp);
    d.thread_state.current_frame = offsetof(PyThreadState, current_frame);
    d.thread_state.thread_id = offsetof(PyThreadState, thread_id);
    d.thread_state.native_thread_id = offsetof(PyThreadState, native_thread_id);
    d.interpreter_frame.size = sizeof(_PyInterpreterFrame);
    d.interpreter_frame.previous = offsetof(_PyInterpreterFrame, previous);
    d.interpreter_frame.executable = offsetof(_PyInterpreterFrame, f_executable);
    d.interpreter_frame.instr_ptr = offsetof(_PyInterpreterFrame, instr_ptr);
    d.interpreter_frame.localsplus = offsetof(_PyInterpreterFrame, localsplus);
    d.interpreter_frame.owner = offsetof(_PyInterpreterFrame, owner);
    d.code_object.size = sizeof(PyCodeObject);
    d.code_object.filename = offsetof(PyCodeObject, co_filename);
    d.code_object.name = offsetof(PyCodeObject, co_name);
    d.code_object.qualname = offsetof(PyCodeObject, co_qualname);
    d.code_object.linetable = offsetof(PyCodeObject, co_linetable);
    d.code_object.firstlineno = offsetof(PyCodeObject, co_firstlineno);
    d.code_object.localsplusnames = offsetof(PyCodeObject, co_localsplusnames);
    d.code_object.co_code_adaptive = offsetof(PyCodeObject, co_code_adaptive);
    d.pyobject.size = sizeof(PyObject);
    d.pyobject.ob_type = offsetof(PyObject, ob_type);
    d.type_object.size = sizeof(PyTypeObject);
    d.type_object.tp_name = offsetof(PyTypeObject, tp_name);
    d.type_object.tp_flags = offsetof(PyTypeObject, tp_flags);
    d.float_object.size = sizeof(PyFloatObject);
    d.float_object.ob_fval = offsetof(PyFloatObject, ob_fval);
    d.bytes_object.size = sizeof(PyBytesObject);
    d.bytes_object.ob_size = offsetof(PyBytesObject, ob_base.ob_size);
    d.bytes_object.ob_sval = offsetof(PyBytesObject, ob_sval);
    d.unicode_object.size = sizeof(PyUnicodeObject);
    d.unicode_object.state = offsetof(PyASCIIObject, state);
    d.unicode_object.length = offsetof(PyASCIIObject, length);
    d.unicode_object.asciiobject_size = sizeof(PyASCIIObject);
    d.gc.size = sizeof(struct _gc_runtime_state);
    d.gc.collecting = offsetof(struct _gc_runtime_state, collecting);
#if PY_VERSION_HEX >= 0x030E0000
    d.interpreter_state.threads_main = offsetof(PyInterpreterState, threads.main);
    d.interpreter_frame.stackpointer = offsetof(_PyInterpreterFrame, stackpointer);
    d.gen_object.size = sizeof(PyGenObject);
    d.gen_object.gi_iframe = offsetof(PyGenObject, gi_iframe);
    d.gen_object.gi_frame_state = offsetof(PyGenObject, gi_frame_state);
    d.llist_node.next = offsetof(struct llist_node, next);
    d.llist_node.prev = offsetof(struct llist_node, prev);
#endif
#if PY_VERSION_HEX >= 0x030F0000
    d.thread_state.base_frame = offsetof(PyThreadState, base_frame);
    d.type_object.tp_basicsize = offsetof(PyTypeObject, tp_basicsize);
    d.type_object.tp_dictoffset = offsetof(PyTypeObject, tp_dictoffset);
    d.heap_type_object.size = sizeof(PyHeapTypeObject);
    d.heap_type_object.ht_cached_keys = offsetof(PyHeapTypeObject, ht_cached_keys);
    d.unicode_object.compactunicodeobject_size = sizeof(PyCompactUnicodeObject);
    d.gc.generation_stats_size = sizeof(struct gc_generation_stats);
    d.gc.generation_stats = offsetof(struct _gc_runtime_state, generation_stats);
#endif
    P("blob_size", sizeof d);
#if PY_VERSION_HEX >= 0x030F0000
    P("ts_base_frame", offsetof(PyThreadState, base_frame));
#endif
    printf("blob ");
    const unsigned char *b = (const unsigned char *)&d;
    for (size_t i = 0; i < sizeof d; i++)
        printf("%02x", b[i]);
    printf("\n");
}
#endif

int main(void)
{
    printf("version %d.%d.%d 0x%08x\n", PY_MAJOR_VERSION, PY_MINOR_VERSION, PY_MICRO_VERSION,
           (unsigned)PY_VERSION_HEX);
    runtime_fields();
    gc_fields();
    thread_fields();
    frame_fields();
    code_fields();
    object_fields();
#if PY_VERSION_HEX >= 0x030D0000
    debug_blob();
#endif
    return 0;
}
#endif
