/* dump.c — sop_dump: read the CPython stacks of a process (probes/python) and render them as
 * JSON (through the bridge's threads array and json.c) or as py-spy-like text, with control
 * characters escaped. Depends on the python probe, bridge.h, json.h. */
#include "dump.h"
#include "tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "procfs.h"
#include "sop.h"
#include "value.h"

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 4096;
        while (ncap < b->len + n + 1)
            ncap *= 2;
        char *nb = realloc(b->buf, ncap);
        if (!nb) {
            b->oom = 1;
            return;
        }
        b->buf = nb;
        b->cap = ncap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Text from the target, with control characters as \xNN. */
static void sb_text(sbuf *b, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\x%02x", c);
            sb_put(b, esc, 4);
        } else {
            sb_put(b, s, 1);
        }
    }
}

static sop_value *missing_value(const sop_missing *m)
{
    sop_value *arr = sop__v_arr();
    for (size_t i = 0; arr && m && i < m->n; i++) {
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set_str(o, "probe", m->items[i].probe);
        sop__v_set(o, "reason", sop__bridge_text(m->items[i].reason));
        sop__v_push(arr, o);
    }
    return arr;
}

/* extra: the asyncio tasks document (`dump --tasks`), set as "asyncio_tasks" (taken over). */
static int render_json(const sop_python *py, const sop_missing *missing, int pid, sop_value *extra,
                       char **out)
{
    sop_value *doc = sop__v_obj();
    if (!doc)
        return SOP_ENOMEM;
    sop__v_set_int(doc, "pid", pid);
    if (py) {
        sop_value *p = sop__v_obj_at(doc, "python");
        sop__v_set(p, "version", sop__bridge_text(py->version));
        sop__v_set(p, "executable", sop__bridge_text(py->executable));
        sop__v_set_int(doc, "gil_holder_tid", py->gil_holder_tid);
        sop__v_set_bool(doc, "finalizing", py->finalizing);
        sop__v_set(doc, "gc", sop__bridge_python_gc(py));
        sop__v_set(doc, "walk", sop__bridge_python_walk(py));
        sop__v_set(doc, "threads", sop__bridge_python_threads(py));
        sop__v_set(doc, "other_threads", sop__bridge_python_others(py));
    }
    if (missing && missing->n)
        sop__v_set(doc, "missing_evidence", missing_value(missing));
    if (extra)
        sop__v_set(doc, "asyncio_tasks", extra);
    *out = sop__json_print(doc, 0);
    sop__v_free(doc);
    return *out ? 0 : SOP_ENOMEM;
}

/* "GC: enabled, collecting now, counts 12/3/1 (thresholds 700/10/10)", like pystack's
 * "garbage collecting" line. */
static void render_gc(sbuf *b, const sop_python *py)
{
    if (py->gc_enabled == SOP_NA && py->gc_collecting == SOP_NA)
        return;
    sb_printf(b, "GC: %s",
              py->gc_enabled == SOP_NA ? "enabled ?"
              : py->gc_enabled         ? "enabled"
                                       : "disabled");
    if (py->gc_collecting != SOP_NA)
        sb_printf(b, ", %s", py->gc_collecting ? "collecting now" : "not collecting");
    if (py->gc_count[0] != SOP_NA)
        sb_printf(b, ", counts %lld/%lld/%lld (thresholds %lld/%lld/%lld)",
                  (long long)py->gc_count[0], (long long)py->gc_count[1],
                  (long long)py->gc_count[2], (long long)py->gc_threshold[0],
                  (long long)py->gc_threshold[1], (long long)py->gc_threshold[2]);
    if (py->gc_collections[0] != SOP_NA)
        sb_printf(b, ", collections %lld/%lld/%lld", (long long)py->gc_collections[0],
                  (long long)py->gc_collections[1], (long long)py->gc_collections[2]);
    sb_put(b, "\n", 1);
}

static void render_thread(sbuf *b, const sop_pythread *t)
{
    sb_printf(b, "Thread 0x%llX (%s%s)", (unsigned long long)t->thread_id,
              t->active ? "active" : "idle", t->gil ? "+gil" : "");
    if (t->name[0]) {
        sb_put(b, ": \"", 3);
        sb_text(b, t->name);
        sb_put(b, "\"", 1);
    }
    if (t->tid > 0)
        sb_printf(b, " [tid %d]", t->tid);
    if (t->interp_id > 0)
        sb_printf(b, " [interpreter %lld]", (long long)t->interp_id);
    sb_put(b, "\n", 1);
    if (t->native) {
        for (size_t k = 0; k < t->nnative; k++) {
            const sop_nframe *n = &t->native[k];
            const sop_pyframe *f = n->py_index >= 0 && (size_t)n->py_index < t->nframes
                                       ? &t->frames[n->py_index]
                                       : NULL;
            sb_put(b, "    ", 4);
            if (f) {
                sb_text(b, f->func);
                sb_put(b, " (", 2);
                sb_text(b, f->file);
                if (f->line >= 0)
                    sb_printf(b, ":%d", f->line);
            } else {
                sb_text(b, n->func);
                sb_put(b, " (", 2);
                sb_text(b, n->lib);
            }
            sb_put(b, ")\n", 2);
        }
    } else {
        for (size_t k = 0; k < t->nframes; k++) {
            const sop_pyframe *f = &t->frames[k];
            sb_put(b, "    ", 4);
            sb_text(b, f->func);
            sb_put(b, " (", 2);
            sb_text(b, f->file);
            if (f->line >= 0)
                sb_printf(b, ":%d", f->line);
            sb_put(b, ")\n", 2);
        }
    }
    if (t->truncated)
        sb_put(b, "    ... (more frames not shown)\n", 32);
    if (t->stopped)
        sb_printf(b, "    [stopped %.3f ms for an exact read]\n", t->pause_ms);
    if (t->partial) {
        sb_put(b, "    [partial: ", 14);
        sb_text(b, t->partial_reason);
        sb_put(b, "]\n", 2);
    }
    if (t->native_error[0]) {
        sb_put(b, "    [native: ", 13);
        sb_text(b, t->native_error);
        sb_put(b, "]\n", 2);
    }
}

int sop__dump_render(const sop_python *py, const sop_missing *missing, int pid, const char *cmdline,
                     int json, char **out)
{
    *out = NULL;
    if (json)
        return render_json(py, missing, pid, NULL, out);
    sbuf b = {0};
    sb_printf(&b, "Process %d: ", pid);
    sb_text(&b, cmdline ? cmdline : "");
    sb_put(&b, "\n", 1);
    if (py) {
        sb_put(&b, "Python v", 8);
        sb_text(&b, py->version);
        sb_put(&b, " (", 2);
        sb_text(&b, py->executable);
        sb_put(&b, ")\n", 2);
        render_gc(&b, py);
        if (py->finalizing)
            sb_printf(&b, "Interpreter finalizing (shutting down)\n");
        if (py->threads_partial)
            sb_printf(&b, "Partial stacks: %ld of %zu threads (%ld re-reads)\n",
                      py->threads_partial, py->nthreads, py->walk_retries);
        for (size_t i = 0; i < py->nthreads; i++) {
            sb_put(&b, "\n", 1);
            render_thread(&b, &py->threads[i]);
        }
        for (size_t i = 0; i < py->nothers; i++) {
            const sop_ostask *o = &py->others[i];
            sb_printf(&b, "\nThread [tid %d] (%s, no Python): \"", o->tid,
                      o->os_state == 'R' ? "active" : "idle");
            sb_text(&b, o->name);
            sb_printf(&b, "\" state %c\n", o->os_state);
            for (size_t k = 0; k < o->nnative; k++) {
                sb_put(&b, "    ", 4);
                sb_text(&b, o->native[k].func);
                sb_put(&b, " (", 2);
                sb_text(&b, o->native[k].lib);
                sb_put(&b, ")\n", 2);
            }
            if (o->native_error[0]) {
                sb_put(&b, "    [native: ", 13);
                sb_text(&b, o->native_error);
                sb_put(&b, "]\n", 2);
            }
        }
    }
    for (size_t i = 0; missing && i < missing->n; i++) {
        sb_printf(&b, "%smissing %s: ", i == 0 ? "\n" : "", missing->items[i].probe);
        sb_text(&b, missing->items[i].reason);
        sb_put(&b, "\n", 1);
    }
    if (b.oom || !b.buf) {
        free(b.buf);
        return SOP_ENOMEM;
    }
    *out = b.buf;
    return 0;
}

static void read_cmdline(int pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    long n = sop__read_small_at(AT_FDCWD, path, buf, cap);
    if (n <= 0) {
        buf[0] = '\0';
        return;
    }
    for (long i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    while (n > 0 && buf[n - 1] == ' ')
        n--;
    buf[n < (long)cap ? n : (long)cap - 1] = '\0';
}

/* 1 when pid is a kernel thread (PF_KTHREAD in /proc/PID/stat's flags): it has no user space,
 * so "not found" would be wrong and "not CPython" is the answer. */
static int is_kernel_thread(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long flags = 0;
    /* after ")": state ppid pgrp session tty_nr tpgid flags */
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
        return 0;
    return (flags & 0x00200000UL) != 0; /* PF_KTHREAD */
}

int sop_dump(sop_engine *e, int pid, unsigned flags, sop_format fmt, char **out)
{
    (void)e; /* the lead wires the last-error detail */
    if (!out || pid <= 0)
        return SOP_EINVAL;
    *out = NULL;
    sop_missing missing = {0};
    sop_python *py = NULL;
    char cmdline[4096];
    read_cmdline(pid, cmdline, sizeof cmdline);
    /* The GC state (enabled, collecting, counts), but not the frozen count (a list walk). */
    unsigned pyflags = SOP_PY_SKIP_FROZEN | SOP_PY_ALL_TASKS |
                       ((flags & SOP_DUMP_NATIVE) ? SOP_PY_NATIVE : 0) |
                       ((flags & SOP_DUMP_EXACT) ? SOP_PY_EXACT : 0);
    int r;
    if (is_kernel_thread(pid)) {
        sop__missing_add(&missing, "python", "pid %d is a kernel thread (no user space)", pid);
        r = -ENOEXEC;
    } else {
        r = sop__python_collect(pid, "/proc", pyflags, &py, &missing);
    }
    int rc;
    switch (r) {
    case 0:
        rc = SOP_OK;
        break;
    case -ENOEXEC:
        rc = SOP_ENOTPYTHON;
        break;
    case -ENOTSUP: /* CPython, but a version or build this sop cannot read (missing says) */
        rc = SOP_EPYVERSION;
        break;
    case -ESRCH:
    case -ENOENT:
        rc = SOP_ENOTARGET;
        break;
    case -EPERM:
    case -EACCES:
        rc = SOP_EACCES;
        break;
    case -ENOMEM:
        rc = SOP_ENOMEM;
        break;
    default:
        rc = SOP_EIO;
        break;
    }
    int rr;
    if (!(flags & SOP_DUMP_TASKS) || rc != SOP_OK) {
        rr = sop__dump_render(py, &missing, pid, cmdline, fmt == SOP_FORMAT_JSON, out);
    } else {
        /* `dump --tasks`: the asyncio tasks read right after the stacks, appended */
        sop_missing tmiss = {0};
        sop_pytasks *t = NULL;
        (void)sop__tasks_read(pid, "/proc", &t, &tmiss);
        if (fmt == SOP_FORMAT_JSON) {
            rr = render_json(py, &missing, pid, sop__tasks_value(t, &tmiss, pid, false), out);
        } else {
            rr = sop__dump_render(py, &missing, pid, cmdline, 0, out);
            char *tt = rr == 0 ? sop__tasks_text(t, &tmiss, pid, cmdline, false) : NULL;
            const char *body = tt ? strchr(tt, '\n') : NULL; /* its "Process N:" line dropped */
            size_t n1 = *out ? strlen(*out) : 0, n2 = body ? strlen(body + 1) : 0;
            char *both = body && *out ? malloc(n1 + n2 + 16) : NULL;
            if (both) {
                memcpy(both, *out, n1);
                memcpy(both + n1, "\nasyncio tasks\n", 15);
                memcpy(both + n1 + 15, body + 1, n2 + 1);
                free(*out);
                *out = both;
            }
            free(tt);
        }
        sop__tasks_free(t);
        sop__missing_free(&tmiss);
    }
    sop__python_free(py);
    sop__missing_free(&missing);
    return rc ? rc : rr;
}
