/* dump_pyspy.c — the document py-spy's `dump --json` prints, for tools that parse it (sopctl run
 * as `py-spy`, docs/py-spy.md): an array with one object per thread — pid, thread_id,
 * thread_name, os_thread_id, active, owns_gil, frames (name, filename, module, short_filename,
 * line, locals, is_entry, is_shim_entry), process_info. Strings from the target go through the
 * bridge's UTF-8 cleaning and the JSON printer's escaping. Depends on the python probe,
 * value.h, json.h, escape.h and pyspy_formats.h. */
#include <stdlib.h>

#include "dump.h"
#include "escape.h"
#include "json.h"
#include "pyspy_formats.h"
#include "sop.h"
#include "value.h"

static sop_value *frame_value(int pid, const char *name, const char *file, const char *module,
                              int line, int entry)
{
    sop_value *fr = sop__v_obj();
    if (!fr)
        return NULL;
    char short_name[1024];
    sop__pyspy_short_file("/proc", pid, file, short_name, sizeof short_name);
    sop__v_set(fr, "name", sop__bridge_text(name));
    sop__v_set(fr, "filename", sop__bridge_text(file));
    sop__v_set(fr, "module", module ? sop__bridge_text(module) : sop__v_null());
    sop__v_set(fr, "short_filename", sop__bridge_text(module ? file : short_name));
    sop__v_set_int(fr, "line", line > 0 ? line : 0);
    sop__v_set(fr, "locals", sop__v_null());
    sop__v_set_bool(fr, "is_entry", entry != 0);
    sop__v_set_bool(fr, "is_shim_entry", false);
    return fr;
}

/* Frames innermost first; with native frames read, py-spy's merged list: each evaluator frame
 * replaced by the Python frame it ran, other native frames named by symbol and library. */
static sop_value *frames_value(int pid, const sop_pythread *t)
{
    sop_value *arr = sop__v_arr();
    if (!arr)
        return NULL;
    if (t->native && t->nnative) {
        for (size_t k = 0; k < t->nnative; k++) {
            const sop_nframe *n = &t->native[k];
            if (n->py_index >= 0 && (size_t)n->py_index < t->nframes) {
                const sop_pyframe *f = &t->frames[n->py_index];
                sop__v_push(arr, frame_value(pid, f->func, f->file, NULL, f->line, f->entry));
            } else {
                sop__v_push(arr, frame_value(pid, n->func, n->lib, n->lib, 0, 0));
            }
        }
        return arr;
    }
    for (size_t k = 0; k < t->nframes; k++) {
        const sop_pyframe *f = &t->frames[k];
        sop__v_push(arr, frame_value(pid, f->func, f->file, NULL, f->line, f->entry));
    }
    return arr;
}

int sop__dump_pyspy_json(const sop_python *py, int pid, char **out)
{
    *out = NULL;
    sop_value *doc = sop__v_arr();
    if (!doc)
        return SOP_ENOMEM;
    for (size_t i = 0; py && i < py->nthreads; i++) {
        const sop_pythread *t = &py->threads[i];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set_int(o, "pid", pid);
        sop__v_set_dbl(o, "thread_id", (double)t->thread_id);
        sop__v_set(o, "thread_name", t->name[0] ? sop__bridge_text(t->name) : sop__v_null());
        if (t->tid > 0)
            sop__v_set_int(o, "os_thread_id", t->tid);
        else
            sop__v_set(o, "os_thread_id", sop__v_null());
        sop__v_set_bool(o, "active", t->active);
        sop__v_set_bool(o, "owns_gil", t->gil);
        sop__v_set(o, "frames", frames_value(pid, t));
        sop__v_set(o, "process_info", sop__v_null());
        sop__v_push(doc, o);
    }
    char *json = sop__json_print(doc, 1);
    sop__v_free(doc);
    *out = json ? sop__json_escape_controls(json) : NULL;
    free(json);
    return *out ? 0 : SOP_ENOMEM;
}
