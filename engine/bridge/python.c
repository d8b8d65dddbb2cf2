/* python.c — ev.python from the CPython probe (probes/python/python.h): version, executable,
 * GIL holder, GC state and the threads with their Python (and native) frames. The same
 * threads array is the body of `sopctl dump --json`. Depends on value.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "python/python.h"

static sop_value *frame_value(const sop_pyframe *f)
{
    sop_value *o = sop__v_obj();
    if (!o)
        return NULL;
    sop__v_set(o, "func", sop__bridge_text(f->func));
    sop__v_set(o, "file", sop__bridge_text(f->file));
    if (f->line >= 0)
        sop__v_set_int(o, "line", f->line);
    return o;
}

sop_value *sop__bridge_python_threads(const sop_python *py)
{
    sop_value *arr = sop__v_arr();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < py->nthreads; i++) {
        const sop_pythread *t = &py->threads[i];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        if (t->tid > 0)
            sop__v_set_int(o, "tid", t->tid);
        if (t->thread_id)
            sop__v_set_dbl(o, "thread_id", (double)t->thread_id);
        if (t->name[0])
            sop__v_set(o, "name", sop__bridge_text(t->name));
        if (t->name_from_comm)
            sop__v_set_str(o, "name_source", "comm");
        if (t->interp_id >= 0) /* 0: the main interpreter */
            sop__v_set_int(o, "interp", t->interp_id);
        if (t->tid_from_stack)
            sop__v_set_str(o, "tid_source", t->tid > 0 ? "stack" : "unknown");
        sop__v_set_str(o, "state", t->active ? "active" : "idle");
        sop__v_set_bool(o, "gil", t->gil);
        if (t->os_state && t->os_state != '?') {
            char st[2] = {t->os_state, '\0'};
            sop__v_set_str(o, "os_state", st);
        }
        sop_value *fr = sop__v_arr_at(o, "frames");
        for (size_t k = 0; fr && k < t->nframes; k++)
            sop__v_push(fr, frame_value(&t->frames[k]));
        if (t->truncated)
            sop__v_set_bool(o, "truncated", true);
        /* complete: verified whole (docs/python-stacks.md); else `partial` says why */
        sop__v_set_bool(o, "complete", !t->partial && !t->truncated);
        if (t->partial)
            sop__v_set(o, "partial", sop__bridge_text(t->partial_reason));
        if (t->walk_retries)
            sop__v_set_int(o, "walk_retries", t->walk_retries);
        if (t->stopped) { /* --exact stopped it for the read */
            sop__v_set_bool(o, "stopped", true);
            if (!t->native)
                sop__v_set_dbl(o, "pause_ms", t->pause_ms);
        }
        if (t->native) {
            sop_value *na = sop__v_arr_at(o, "native");
            for (size_t k = 0; na && k < t->nnative; k++) {
                const sop_nframe *n = &t->native[k];
                sop_value *no;
                if (n->py_index >= 0 && (size_t)n->py_index < t->nframes) {
                    no = frame_value(&t->frames[n->py_index]);
                    if (no)
                        sop__v_set_str(no, "lib", "python");
                } else {
                    no = sop__v_obj();
                    if (no) {
                        sop__v_set(no, "func", sop__bridge_text(n->func));
                        sop__v_set(no, "lib", sop__bridge_text(n->lib));
                    }
                }
                sop__v_push(na, no);
            }
            sop__v_set_dbl(o, "pause_ms", t->pause_ms);
        }
        if (t->native_error[0])
            sop__v_set(o, "native_error", sop__bridge_text(t->native_error));
        sop__v_push(arr, o);
    }
    return arr;
}

sop_value *sop__bridge_python_gc(const sop_python *py)
{
    sop_value *gc = sop__v_obj();
    if (gc) {
        if (py->gc_enabled != SOP_NA)
            sop__v_set_bool(gc, "enabled", py->gc_enabled != 0);
        if (py->gc_collecting != SOP_NA)
            sop__v_set_bool(gc, "collecting", py->gc_collecting != 0);
        if (py->gc_threshold[0] != SOP_NA) {
            sop_value *th = sop__v_arr_at(gc, "thresholds");
            sop_value *ct = sop__v_arr_at(gc, "counts");
            for (int g = 0; g < 3; g++) {
                sop__v_push(th, sop__v_num((double)py->gc_threshold[g]));
                sop__v_push(ct, sop__v_num((double)py->gc_count[g]));
            }
        }
        sop__v_set_int(gc, "frozen", py->gc_frozen);
        if (py->gc_collections[0] != SOP_NA) {
            sop_value *cs = sop__v_arr_at(gc, "collections");
            for (int g = 0; g < 3; g++)
                sop__v_push(cs, sop__v_num((double)py->gc_collections[g]));
        }
    }
    return gc;
}

sop_value *sop__bridge_python_others(const sop_python *py)
{
    sop_value *arr = sop__v_arr();
    for (size_t i = 0; arr && i < py->nothers; i++) {
        const sop_ostask *t = &py->others[i];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        char st[2] = {t->os_state, '\0'};
        sop__v_set_int(o, "tid", t->tid);
        sop__v_set(o, "name", sop__bridge_text(t->name));
        sop__v_set_str(o, "os_state", st);
        sop__v_set_str(o, "state", t->os_state == 'R' ? "active" : "idle");
        if (t->native) {
            sop_value *na = sop__v_arr_at(o, "native");
            for (size_t k = 0; na && k < t->nnative; k++) {
                sop_value *no = sop__v_obj();
                if (no) {
                    sop__v_set(no, "func", sop__bridge_text(t->native[k].func));
                    sop__v_set(no, "lib", sop__bridge_text(t->native[k].lib));
                }
                sop__v_push(na, no);
            }
            sop__v_set_dbl(o, "pause_ms", t->pause_ms);
        }
        if (t->native_error[0])
            sop__v_set(o, "native_error", sop__bridge_text(t->native_error));
        sop__v_push(arr, o);
    }
    return arr;
}

sop_value *sop__bridge_python_walk(const sop_python *py)
{
    sop_value *o = sop__v_obj();
    if (o) {
        sop__v_set_int(o, "retries", py->walk_retries);
        sop__v_set_int(o, "threads_partial", py->threads_partial);
        double pause = 0;
        long stopped = 0;
        for (size_t i = 0; i < py->nthreads; i++)
            if (py->threads[i].stopped) {
                pause += py->threads[i].pause_ms;
                stopped++;
            }
        sop__v_set_int(o, "threads_stopped", stopped);
        sop__v_set_dbl(o, "pause_ms", pause);
    }
    return o;
}

void sop__bridge_python(sop_value *ev, const struct sop_python *py)
{
    if (!py)
        return;
    sop_value *p = sop__v_obj_at(ev, "python");
    if (!p)
        return;
    sop__v_set(p, "version", sop__bridge_text(py->version));
    sop__v_set(p, "executable", sop__bridge_text(py->executable));
    if (py->libpython[0])
        sop__v_set(p, "libpython", sop__bridge_text(py->libpython));
    sop__v_set_str(p, "layout", py->layout);
    sop__v_set_int(p, "gil_holder_tid", py->gil_holder_tid);
    if (py->finalizing)
        sop__v_set_bool(p, "finalizing", true);
    sop__v_set(p, "gc", sop__bridge_python_gc(py));
    sop__v_set(p, "walk", sop__bridge_python_walk(py));
    sop__v_set(p, "threads", sop__bridge_python_threads(py));
}
