/* dump.c — sop_dump: read the CPython stacks of a process (probes/python) and render them as
 * JSON (through the bridge's threads array and json.c) or as py-spy-like text, every string from
 * the target through the shared terminal escaper (escape.c). Depends on the python probe,
 * bridge.h, json.h, escape.h. */
#include "dump.h"
#include "tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "json.h"
#include "procfs.h"
#include "pyspy_formats.h"
#include "sop.h"
#include "value.h"

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

/* Room for the JSON text of py, a little more than it takes: the text is then written into one
 * block, not copied through every doubling of the buffer (a block this size is mapped fresh, and
 * the part not written is never touched). */
static size_t json_size_guess(const sop_python *py)
{
    size_t n = 4096;
    for (size_t i = 0; py && i < py->nthreads; i++) {
        const sop_pythread *t = &py->threads[i];
        n += 512 + strlen(t->name) + strlen(t->partial_reason) + 256 * t->nnative;
        for (size_t k = 0; k < t->nframes; k++)
            n += 48 + strlen(t->frames[k].func) + strlen(t->frames[k].file);
    }
    return n + (py ? 256 * py->nothers : 0);
}

/* "threads": one thread's value at a time, each printed and freed before the next is built,
 * so that the value trees of a deep dump never all sit in memory (tens of thousands of nodes
 * for 32 threads of 50 frames); the text is the same as from one tree. */
static bool put_threads(sop_sb *b, const sop_python *py)
{
    sop__sb_putn(b, "[", 1);
    for (size_t i = 0; i < py->nthreads; i++) {
        sop_python one = *py;
        one.threads = &py->threads[i];
        one.nthreads = 1;
        sop_value *arr = sop__bridge_python_threads(&one);
        if (!arr || !arr->child) {
            sop__v_free(arr);
            return false;
        }
        if (i)
            sop__sb_putn(b, ",", 1);
        sop__json_put(b, arr->child, 2, 0);
        sop__v_free(arr);
    }
    sop__sb_putn(b, "]", 1);
    return true;
}

/* extra: the asyncio tasks document (`dump --tasks`), set as "asyncio_tasks" (taken over).
 * Written into b: a buffer that streams to its sink (sop_dump_write) keeps one thread's text at
 * a time; a plain one is sized once to hold the whole document. */
static int render_json(const sop_python *py, const sop_missing *missing, int pid, sop_value *extra,
                       sop_sb *b)
{
    sop_value *doc = sop__v_obj();
    if (!doc) {
        sop__v_free(extra);
        return SOP_ENOMEM;
    }
    sop__v_set_int(doc, "pid", pid);
    sop_value *threads = NULL; /* its place in doc: written by put_threads */
    if (py) {
        sop_value *p = sop__v_obj_at(doc, "python");
        sop__v_set(p, "version", sop__bridge_text(py->version));
        sop__v_set(p, "executable", sop__bridge_text(py->executable));
        sop__v_set_int(doc, "gil_holder_tid", py->gil_holder_tid);
        sop__v_set_bool(doc, "finalizing", py->finalizing);
        sop__v_set(doc, "gc", sop__bridge_python_gc(py));
        sop__v_set(doc, "walk", sop__bridge_python_walk(py));
        threads = sop__v_set(doc, "threads", sop__v_arr());
        sop__v_set(doc, "other_threads", sop__bridge_python_others(py));
    }
    if (missing && missing->n)
        sop__v_set(doc, "missing_evidence", missing_value(missing));
    if (extra)
        sop__v_set(doc, "asyncio_tasks", extra);
    /* As sop__json_print(doc, 0) would write it, "threads" streamed (put_threads). */
    if (!b->sink && !b->s) {
        size_t cap = json_size_guess(py);
        b->s = malloc(cap);
        b->cap = b->s ? cap : 0;
    }
    bool ok = !py || threads;
    sop__sb_putn(b, "{", 1);
    for (const sop_value *c = doc->child; c && ok; c = c->next) {
        sop__json_put_key(b, c->key, 0, 0);
        if (c == threads)
            ok = put_threads(b, py);
        else
            sop__json_put(b, c, 1, 0);
        if (c->next)
            sop__sb_putn(b, ",", 1);
    }
    sop__sb_putn(b, "}", 1);
    sop__v_free(doc);
    return ok && !b->oom ? 0 : SOP_ENOMEM;
}

/* "GC: enabled, collecting now, counts 12/3/1 (thresholds 700/10/10)", like pystack's
 * "garbage collecting" line. */
static void render_gc(sop_sb *b, const sop_python *py)
{
    if (py->gc_enabled == SOP_NA && py->gc_collecting == SOP_NA)
        return;
    sop__sb_printf(b, "GC: %s",
                   py->gc_enabled == SOP_NA ? "enabled ?"
                   : py->gc_enabled         ? "enabled"
                                            : "disabled");
    if (py->gc_collecting != SOP_NA)
        sop__sb_printf(b, ", %s", py->gc_collecting ? "collecting now" : "not collecting");
    if (py->gc_count[0] != SOP_NA)
        sop__sb_printf(b, ", counts %lld/%lld/%lld (thresholds %lld/%lld/%lld)",
                       (long long)py->gc_count[0], (long long)py->gc_count[1],
                       (long long)py->gc_count[2], (long long)py->gc_threshold[0],
                       (long long)py->gc_threshold[1], (long long)py->gc_threshold[2]);
    if (py->gc_collections[0] != SOP_NA)
        sop__sb_printf(b, ", collections %lld/%lld/%lld", (long long)py->gc_collections[0],
                       (long long)py->gc_collections[1], (long long)py->gc_collections[2]);
    sop__sb_puts(b, "\n");
}

static void render_thread(sop_sb *b, const sop_pythread *t)
{
    sop__sb_printf(b, "Thread 0x%llX (%s%s)", (unsigned long long)t->thread_id,
                   t->active ? "active" : "idle", t->gil ? "+gil" : "");
    if (t->name[0]) {
        sop__sb_puts(b, ": \"");
        sop__esc_text(b, t->name);
        sop__sb_puts(b, "\"");
    }
    if (t->tid > 0)
        sop__sb_printf(b, " [tid %d]", t->tid);
    if (t->interp_id > 0)
        sop__sb_printf(b, " [interpreter %lld]", (long long)t->interp_id);
    sop__sb_puts(b, "\n");
    if (t->native) {
        for (size_t k = 0; k < t->nnative; k++) {
            const sop_nframe *n = &t->native[k];
            const sop_pyframe *f = n->py_index >= 0 && (size_t)n->py_index < t->nframes
                                       ? &t->frames[n->py_index]
                                       : NULL;
            sop__sb_puts(b, "    ");
            if (f) {
                sop__esc_text(b, f->func);
                sop__sb_puts(b, " (");
                sop__esc_text(b, f->file);
                if (f->line >= 0)
                    sop__sb_printf(b, ":%d", f->line);
            } else {
                sop__esc_text(b, n->func);
                sop__sb_puts(b, " (");
                sop__esc_text(b, n->lib);
            }
            sop__sb_puts(b, ")\n");
        }
    } else {
        for (size_t k = 0; k < t->nframes; k++) {
            const sop_pyframe *f = &t->frames[k];
            sop__sb_puts(b, "    ");
            sop__esc_text(b, f->func);
            sop__sb_puts(b, " (");
            sop__esc_text(b, f->file);
            if (f->line >= 0)
                sop__sb_printf(b, ":%d", f->line);
            sop__sb_puts(b, ")\n");
        }
    }
    if (t->truncated)
        sop__sb_puts(b, "    ... (more frames not shown)\n");
    if (t->stopped)
        sop__sb_printf(b, "    [stopped %.3f ms for an exact read]\n", t->pause_ms);
    if (t->partial) {
        sop__sb_puts(b, "    [partial: ");
        sop__esc_text(b, t->partial_reason);
        sop__sb_puts(b, "]\n");
    }
    if (t->native_error[0]) {
        sop__sb_puts(b, "    [native: ");
        sop__esc_text(b, t->native_error);
        sop__sb_puts(b, "]\n");
    }
}

static int render_text(const sop_python *py, const sop_missing *missing, int pid,
                       const char *cmdline, sop_sb *b)
{
    sop__sb_printf(b, "Process %d: ", pid);
    sop__esc_text(b, cmdline ? cmdline : "");
    sop__sb_puts(b, "\n");
    if (py) {
        sop__sb_puts(b, "Python v");
        sop__esc_text(b, py->version);
        sop__sb_puts(b, " (");
        sop__esc_text(b, py->executable);
        sop__sb_puts(b, ")\n");
        render_gc(b, py);
        if (py->finalizing)
            sop__sb_printf(b, "Interpreter finalizing (shutting down)\n");
        if (py->threads_partial)
            sop__sb_printf(b, "Partial stacks: %ld of %zu threads (%ld re-reads)\n",
                           py->threads_partial, py->nthreads, py->walk_retries);
        for (size_t i = 0; i < py->nthreads; i++) {
            sop__sb_puts(b, "\n");
            render_thread(b, &py->threads[i]);
        }
        for (size_t i = 0; i < py->nothers; i++) {
            const sop_ostask *o = &py->others[i];
            sop__sb_printf(b, "\nThread [tid %d] (%s, no Python): \"", o->tid,
                           o->os_state == 'R' ? "active" : "idle");
            sop__esc_text(b, o->name);
            sop__sb_printf(b, "\" state %c\n", o->os_state);
            for (size_t k = 0; k < o->nnative; k++) {
                sop__sb_puts(b, "    ");
                sop__esc_text(b, o->native[k].func);
                sop__sb_puts(b, " (");
                sop__esc_text(b, o->native[k].lib);
                sop__sb_puts(b, ")\n");
            }
            if (o->native_error[0]) {
                sop__sb_puts(b, "    [native: ");
                sop__esc_text(b, o->native_error);
                sop__sb_puts(b, "]\n");
            }
        }
    }
    for (size_t i = 0; missing && i < missing->n; i++) {
        sop__sb_printf(b, "%smissing ", i == 0 ? "\n" : "");
        sop__esc_text(b, missing->items[i].probe);
        sop__sb_puts(b, ": ");
        sop__esc_text(b, missing->items[i].reason);
        sop__sb_puts(b, "\n");
    }
    return b->oom ? SOP_ENOMEM : 0;
}

int sop__dump_render(const sop_python *py, const sop_missing *missing, int pid, const char *cmdline,
                     int json, char **out)
{
    sop_sb b = {0};
    int rc =
        json ? render_json(py, missing, pid, NULL, &b) : render_text(py, missing, pid, cmdline, &b);
    *out = sop__sb_take(&b);
    if (rc != 0 || !*out) {
        free(*out);
        *out = NULL;
        return SOP_ENOMEM;
    }
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

/* The stacks of pid read (py, missing and the return's SOP_* code filled). */
static int dump_read(int pid, unsigned flags, sop_python **py, sop_missing *missing)
{
    /* The GC state (enabled, collecting, counts), but not the frozen count (a list walk). */
    unsigned pyflags = SOP_PY_SKIP_FROZEN | SOP_PY_ALL_TASKS |
                       ((flags & SOP_DUMP_NATIVE) ? SOP_PY_NATIVE : 0) |
                       ((flags & SOP_DUMP_EXACT) ? SOP_PY_EXACT : 0);
    int r;
    if (is_kernel_thread(pid)) {
        sop__missing_add(missing, "python", "pid %d is a kernel thread (no user space)", pid);
        r = -ENOEXEC;
    } else {
        r = sop__python_collect(pid, "/proc", pyflags, py, missing);
    }
    switch (r) {
    case 0:
        return SOP_OK;
    case -ENOEXEC:
        return SOP_ENOTPYTHON;
    case -ENOTSUP: /* CPython, but a version or build this sop cannot read (missing says) */
        return SOP_EPYVERSION;
    case -ESRCH:
    case -ENOENT:
        return SOP_ENOTARGET;
    case -EPERM:
    case -EACCES:
        return SOP_EACCES;
    case -ENOMEM:
        return SOP_ENOMEM;
    default:
        return SOP_EIO;
    }
}

/* `dump --tasks` as text: the asyncio tasks' listing after the stacks, its "Process N:" line
 * dropped. */
static void append_tasks_text(const sop_pytasks *t, const sop_missing *tmiss, int pid,
                              const char *cmdline, sop_sb *b)
{
    char *tt = sop__tasks_text(t, tmiss, pid, cmdline, false);
    const char *body = tt ? strchr(tt, '\n') : NULL;
    if (body) {
        sop__sb_puts(b, "\nasyncio tasks\n");
        sop__sb_puts(b, body + 1);
    }
    free(tt);
}

/* Read pid and write the document into b; the SOP_* code of the read, else of the writing. */
static int dump_into(int pid, unsigned flags, sop_format fmt, sop_sb *b)
{
    sop_missing missing = {0};
    sop_python *py = NULL;
    char cmdline[4096];
    read_cmdline(pid, cmdline, sizeof cmdline);
    int rc = dump_read(pid, flags, &py, &missing);
    int json = fmt == SOP_FORMAT_JSON, rr;
    if ((flags & SOP_DUMP_PYSPY) && json && rc == SOP_OK) {
        char *doc = NULL; /* py-spy's document (dump_pyspy.c) */
        rr = sop__dump_pyspy_json(py, pid, &doc);
        if (doc)
            sop__sb_puts(b, doc);
        free(doc);
    } else if (!(flags & SOP_DUMP_TASKS) || rc != SOP_OK) {
        rr = json ? render_json(py, &missing, pid, NULL, b)
                  : render_text(py, &missing, pid, cmdline, b);
    } else {
        /* `dump --tasks`: the asyncio tasks read right after the stacks, appended */
        sop_missing tmiss = {0};
        sop_pytasks *t = NULL;
        (void)sop__tasks_read(pid, "/proc", &t, &tmiss);
        if (json) {
            rr = render_json(py, &missing, pid, sop__tasks_value(t, &tmiss, pid, false), b);
        } else {
            rr = render_text(py, &missing, pid, cmdline, b);
            if (rr == 0)
                append_tasks_text(t, &tmiss, pid, cmdline, b);
        }
        sop__tasks_free(t);
        sop__missing_free(&tmiss);
    }
    sop__python_free(py);
    sop__missing_free(&missing);
    if (rr != 0)
        b->oom = true; /* no document rather than half of one (what a sink wrote stays) */
    return rc ? rc : rr;
}

int sop_dump(sop_engine *e, int pid, unsigned flags, sop_format fmt, char **out)
{
    (void)e; /* the lead wires the last-error detail */
    if (!out || pid <= 0)
        return SOP_EINVAL;
    sop_sb b = {0};
    int rc = dump_into(pid, flags, fmt, &b);
    *out = sop__sb_take(&b);
    if (!*out && rc == SOP_OK)
        rc = SOP_ENOMEM;
    return rc;
}

int sop_dump_write(sop_engine *e, int pid, unsigned flags, sop_format fmt, int fd)
{
    (void)e;
    if (fd < 0 || pid <= 0)
        return SOP_EINVAL;
    sop_sb b = {.sink = sop__sb_write_fd, .sink_ctx = &fd};
    int rc = dump_into(pid, flags, fmt, &b);
    if (b.len && b.s[b.len - 1] != '\n')
        sop__sb_putn(&b, "\n", 1);
    if (sop__sb_flush(&b) < 0 && rc == SOP_OK)
        rc = b.s ? SOP_EWRITE : SOP_ENOMEM;
    free(b.s);
    return rc;
}
