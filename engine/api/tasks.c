/* tasks.c — sop_tasks: every asyncio task of a process (probes/python/asyncio_read.c), as JSON
 * (the shape in docs/asyncio.md) or text: per task its state, the await chain (the program's
 * own innermost frame marked), what the innermost await waits on, and who awaits whom (the
 * tree). Text from the target is escaped. Depends on the tasks probe, value.h, json.c,
 * strbuf.c. */
#include "tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_int.h"
#include "engine.h"
#include "escape.h"
#include "json.h"
#include "procfs.h"
#include "python/asyncio_task_index.h"
#include "sop.h"
#include "strbuf.h"
#include "value.h"

#define TREE_MAX_DEPTH 32

/* Library code: the standard library, installed packages, pseudo files (as sample_agg.c). */
static bool library_file(const char *f)
{
    return !f || f[0] == '<' || strstr(f, "/site-packages/") || strstr(f, "/dist-packages/") ||
           strstr(f, "/lib/python3") || strstr(f, "/lib64/python3");
}

/* The innermost level of the program's own code (-1 when none). */
static long user_level(const sop_pytask *t)
{
    for (size_t i = t->nframes; i-- > 0;)
        if (!library_file(t->frames[i].file))
            return (long)i;
    return -1;
}

static void hex_id(char *out, size_t cap, uint64_t a)
{
    snprintf(out, cap, "0x%llx", (unsigned long long)a);
}

static sop_value *ref_value(const sop_pytasks *t, const sop_task_index *ix, uint64_t addr)
{
    sop_value *o = sop__v_obj();
    char id[24];
    hex_id(id, sizeof id, addr);
    sop__v_set_str(o, "id", id);
    long j = sop__task_index_find(ix, addr);
    if (j >= 0)
        sop__v_set(o, "name", sop__bridge_text(t->tasks[j].name));
    return o;
}

static sop_value *task_value(const sop_pytasks *all, const sop_task_index *ix, size_t i)
{
    const sop_pytask *t = &all->tasks[i];
    sop_value *o = sop__v_obj();
    char id[24];
    hex_id(id, sizeof id, t->addr);
    sop__v_set_str(o, "id", id);
    sop__v_set(o, "name", sop__bridge_text(t->name));
    sop__v_set_str(o, "state", t->state);
    if (t->outcome)
        sop__v_set_str(o, "outcome", t->outcome);
    sop__v_set_bool(o, "running", t->running);
    if (sop__task_unreferenced(t))
        sop__v_set_bool(o, "unreferenced", true);
    sop_value *chain = sop__v_arr_at(o, "chain");
    long user = user_level(t);
    for (size_t k = 0; chain && k < t->nframes; k++) {
        const sop_await_frame *f = &t->frames[k];
        sop_value *fv = sop__v_obj();
        sop__v_set(fv, "func", sop__bridge_text(f->func));
        sop__v_set(fv, "file", sop__bridge_text(f->file));
        sop__v_set_int(fv, "line", f->line);
        if (f->generator)
            sop__v_set_bool(fv, "generator", true);
        if ((long)k == user)
            sop__v_set_bool(fv, "user", true);
        sop__v_push(chain, fv);
    }
    sop__v_set_bool(o, "chain_complete", !t->chain_cut && !t->partial[0]);
    if (t->partial[0])
        sop__v_set(o, "chain_partial", sop__bridge_text(t->partial));
    else if (t->chain_cut)
        sop__v_set_str(o, "chain_partial", "more await levels than shown");
    if (!strcmp(t->state, "done") || t->running) {
        sop__v_set(o, "waits_on", sop__v_null());
    } else {
        sop_value *w = sop__v_obj_at(o, "waits_on");
        sop__v_set_str(w, "kind", sop__wait_kind_name(t->waits));
        if (t->waits == SOP_WAIT_SLEEP && !isnan(t->sleep_s))
            sop__v_set_dbl(w, "sleep_s", t->sleep_s);
        if (t->waits_addr) {
            sop__v_set(w, "type", sop__bridge_text(t->waits_type));
            hex_id(id, sizeof id, t->waits_addr);
            sop__v_set_str(w, "id", id);
        }
        if (t->prim) {
            hex_id(id, sizeof id, t->prim);
            sop__v_set_str(w, "object", id);
        }
    }
    sop_value *aw = sop__v_arr_at(o, "awaits");
    for (size_t k = 0; aw && k < t->nawaits; k++)
        sop__v_push(aw, ref_value(all, ix, t->awaits[k]));
    if (t->awaits_cut)
        sop__v_set_bool(o, "awaits_cut", true);
    sop_value *by = sop__v_arr_at(o, "awaited_by");
    for (size_t k = 0; by && k < sop__task_index_awaited_n(ix, i); k++)
        sop__v_push(by, ref_value(all, ix, all->tasks[sop__task_index_awaited(ix, i, k)].addr));
    return o;
}

static sop_value *tree_node(const sop_pytasks *t, const sop_task_index *ix, size_t i,
                            unsigned char *on, int depth)
{
    sop_value *o = sop__v_obj();
    char id[24];
    hex_id(id, sizeof id, t->tasks[i].addr);
    sop__v_set_str(o, "id", id);
    sop__v_set(o, "name", sop__bridge_text(t->tasks[i].name));
    sop_value *kids = sop__v_arr_at(o, "children");
    if (on[i] || depth >= TREE_MAX_DEPTH) {
        sop__v_set_bool(o, "cut", true); /* a cycle, or deeper than the bound */
        return o;
    }
    on[i] = 1;
    for (size_t k = 0; kids && k < t->tasks[i].nawaits; k++) {
        long j = sop__task_index_find(ix, t->tasks[i].awaits[k]);
        if (j >= 0)
            sop__v_push(kids, tree_node(t, ix, (size_t)j, on, depth + 1));
    }
    on[i] = 0;
    return o;
}

/* The locks and semaphores tasks wait on, with their holders ("locks" in the JSON). */
static void prims_value(sop_value *doc, const sop_pytasks *t, const sop_task_index *ix)
{
    sop_value *arr = sop__v_arr_at(doc, "locks");
    for (size_t k = 0; arr && k < t->nprims; k++) {
        const sop_pyprim *p = &t->prims[k];
        sop_value *o = sop__v_obj();
        char id[24];
        hex_id(id, sizeof id, p->addr);
        sop__v_set_str(o, "id", id);
        sop__v_set(o, "type", sop__bridge_text(p->type));
        sop__v_set_str(o, "kind", sop__wait_kind_name(p->kind));
        sop__v_set_int(o, "waiting", (int64_t)p->waiting);
        if (p->queue >= 0)
            sop__v_set_int(o, "queue", p->queue);
        if (p->locked >= 0)
            sop__v_set_bool(o, "locked", p->locked != 0);
        if (p->value != LLONG_MIN)
            sop__v_set_int(o, "value", p->value);
        sop_value *h = sop__v_arr_at(o, "holders");
        for (size_t j = 0; h && j < p->nholders; j++)
            sop__v_push(h, ref_value(t, ix, p->holders[j]));
        if (p->holders_cut)
            sop__v_set_bool(o, "holders_cut", true);
        if (p->holders_partial)
            sop__v_set_bool(o, "holders_partial", true);
        sop__v_push(arr, o);
    }
}

/* The document's members before the task list: pid, the interpreter, completeness, counts. */
static sop_value *head_value(const sop_pytasks *t, int pid)
{
    sop_value *doc = sop__v_obj();
    if (!doc)
        return NULL;
    sop__v_set_int(doc, "pid", pid);
    if (!t)
        return doc;
    sop_value *p = sop__v_obj_at(doc, "python");
    sop__v_set(p, "version", sop__bridge_text(t->version));
    sop__v_set_str(p, "layout", t->layout);
    sop__v_set_bool(doc, "complete", t->complete);
    if (!t->complete)
        sop__v_set(doc, "partial", sop__bridge_text(t->partial));
    sop__v_set_bool(doc, "truncated", t->truncated);
    sop__v_set_dbl(doc, "read_ms", t->read_ms);
    sop__v_set_int(doc, "gc_objects", (int64_t)t->objects);
    sop__v_set_str(doc, "found_on", t->from_lists ? "task lists" : "gc lists");
    sop__v_set_int(doc, "reads", (int64_t)t->reads);
    int64_t pending = 0, cancelling = 0, done = 0, running = 0;
    for (size_t i = 0; i < t->ntasks; i++) {
        const char *s = t->tasks[i].state;
        pending += !strcmp(s, "pending");
        cancelling += !strcmp(s, "cancelling");
        done += !strcmp(s, "done");
        running += t->tasks[i].running;
    }
    sop_value *c = sop__v_obj_at(doc, "counts");
    sop__v_set_int(c, "tasks", (int64_t)t->ntasks);
    sop__v_set_int(c, "pending", pending);
    sop__v_set_int(c, "cancelling", cancelling);
    sop__v_set_int(c, "done", done);
    sop__v_set_int(c, "running", running);
    return doc;
}

static void missing_value(sop_value *doc, const sop_missing *missing)
{
    if (!missing || !missing->n)
        return;
    sop_value *arr = sop__v_arr_at(doc, "missing_evidence");
    for (size_t i = 0; arr && i < missing->n; i++) {
        sop_value *m = sop__v_obj();
        sop__v_set_str(m, "probe", missing->items[i].probe);
        sop__v_set(m, "reason", sop__bridge_text(missing->items[i].reason));
        sop__v_push(arr, m);
    }
}

sop_value *sop__tasks_value(const sop_pytasks *t, const sop_missing *missing, int pid,
                            bool with_tree)
{
    sop_value *doc = head_value(t, pid);
    if (!doc)
        return NULL;
    sop_task_index idx;
    if (t && sop__task_index_build(&idx, t, true) == 0) {
        const sop_task_index *ix = &idx;
        sop_value *arr = sop__v_arr_at(doc, "tasks");
        for (size_t i = 0; arr && i < t->ntasks; i++)
            sop__v_push(arr, task_value(t, ix, i));
        prims_value(doc, t, ix);
        if (with_tree) {
            unsigned char *on = calloc(t->ntasks ? t->ntasks : 1, 1);
            sop_value *tree = sop__v_arr_at(doc, "tree");
            for (size_t i = 0; on && tree && i < t->ntasks; i++)
                if (!sop__task_index_awaited_n(ix, i))
                    sop__v_push(tree, tree_node(t, ix, i, on, 0));
            free(on);
        }
        sop__task_index_free(&idx);
    }
    missing_value(doc, missing);
    return doc;
}

/* The same document written member by member into b, each task built, printed and freed in
 * turn: a streaming b holds one task's text at a time, whatever the task count (issue 40: the
 * whole tree of 100,000 tasks took 435 MB). Prints exactly as sop__tasks_value would. */
static void member(sop_sb *b, int *n, const char *key)
{
    if ((*n)++)
        sop__sb_puts(b, ",\n");
    sop__json_put_key(b, key, 0, 1);
}

static void put_members(sop_sb *b, int *n, sop_value *doc)
{
    for (const sop_value *c = doc ? doc->child : NULL; c; c = c->next) {
        member(b, n, c->key);
        sop__json_put(b, c, 1, 1);
    }
    sop__v_free(doc);
}

static void tasks_json(sop_sb *b, const sop_pytasks *t, const sop_missing *missing, int pid,
                       bool with_tree)
{
    int n = 0;
    sop__sb_puts(b, "{\n");
    put_members(b, &n, head_value(t, pid));
    sop_task_index idx;
    if (t && sop__task_index_build(&idx, t, true) == 0) {
        const sop_task_index *ix = &idx;
        member(b, &n, "tasks");
        sop__sb_puts(b, "[");
        for (size_t i = 0; i < t->ntasks && !b->oom; i++) {
            sop_value *v = task_value(t, ix, i);
            if (!v) {
                b->oom = true;
                break;
            }
            if (i)
                sop__sb_puts(b, ", ");
            sop__json_put(b, v, 2, 1);
            sop__v_free(v);
        }
        sop__sb_puts(b, "]");
        sop_value *doc = sop__v_obj();
        if (doc)
            prims_value(doc, t, ix);
        put_members(b, &n, doc);
        if (with_tree) {
            unsigned char *on = calloc(t->ntasks ? t->ntasks : 1, 1);
            member(b, &n, "tree");
            sop__sb_puts(b, "[");
            for (size_t i = 0, k = 0; on && i < t->ntasks && !b->oom; i++) {
                if (sop__task_index_awaited_n(ix, i))
                    continue;
                sop_value *v = tree_node(t, ix, i, on, 0);
                if (k++)
                    sop__sb_puts(b, ", ");
                if (v)
                    sop__json_put(b, v, 2, 1);
                else
                    b->oom = true;
                sop__v_free(v);
            }
            sop__sb_puts(b, "]");
            free(on);
        }
        sop__task_index_free(&idx);
    }
    sop_value *doc = sop__v_obj();
    if (doc)
        missing_value(doc, missing);
    put_members(b, &n, doc);
    sop__sb_puts(b, n ? "\n}" : "}");
}

/* ---- text ------------------------------------------------------------------------------ */

static void put_text(sop_sb *b, const char *s)
{
    sop__sb_put_escaped(b, s ? s : "", false);
}

static void waits_text(sop_sb *b, const sop_pytasks *all, const sop_task_index *ix,
                       const sop_pytask *t)
{
    if (!strcmp(t->state, "done") || t->running)
        return;
    static const struct {
        sop_wait_kind k;
        const char *what;
    } words[] = {
        {SOP_WAIT_NONE, "nothing (suspended in a bare yield)"},
        {SOP_WAIT_TASK, "task"},
        {SOP_WAIT_FUTURE, "a future"},
        {SOP_WAIT_SLEEP, "asyncio.sleep"},
        {SOP_WAIT_LOCK, "a lock (Lock.acquire)"},
        {SOP_WAIT_EVENT, "an event (Event.wait)"},
        {SOP_WAIT_CONDITION, "a condition (Condition.wait)"},
        {SOP_WAIT_SEMAPHORE, "a semaphore (Semaphore.acquire)"},
        {SOP_WAIT_QUEUE_GET, "an empty queue (Queue.get)"},
        {SOP_WAIT_QUEUE_PUT, "a full queue (Queue.put)"},
        {SOP_WAIT_STREAM, "a stream read (StreamReader)"},
        {SOP_WAIT_SOCKET, "a socket (loop.sock_*)"},
        {SOP_WAIT_EXECUTOR, "an executor job (run_in_executor)"},
        {SOP_WAIT_GATHER, "a gather group of"},
        {SOP_WAIT_WAIT, "asyncio.wait / wait_for"},
        {SOP_WAIT_OTHER, "an awaitable of type"},
    };
    const char *w = "?";
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (words[i].k == t->waits)
            w = words[i].what;
    sop__sb_puts(b, "  waits on: ");
    sop__sb_puts(b, w);
    if (t->waits == SOP_WAIT_OTHER) {
        sop__sb_puts(b, " ");
        put_text(b, t->waits_type);
    }
    if (t->waits == SOP_WAIT_GATHER)
        sop__sb_printf(b, " %zu task%s", t->nawaits, t->nawaits == 1 ? "" : "s");
    if (t->waits == SOP_WAIT_SLEEP && !isnan(t->sleep_s))
        sop__sb_printf(b, "(%g s)", t->sleep_s);
    for (size_t k = 0; k < t->nawaits && k < 8; k++) {
        long j = sop__task_index_find(ix, t->awaits[k]);
        sop__sb_puts(b, k ? ", \"" : " \"");
        put_text(b, j >= 0 ? all->tasks[j].name : "?");
        sop__sb_puts(b, "\"");
    }
    if (t->nawaits > 8)
        sop__sb_printf(b, ", ... (%zu in all)", t->nawaits);
    sop__sb_puts(b, "\n");
}

static void task_head(sop_sb *b, const sop_pytask *t)
{
    sop__sb_puts(b, "Task \"");
    put_text(b, t->name);
    sop__sb_printf(b, "\" %s", t->state);
    if (t->outcome)
        sop__sb_printf(b, " (%s)", t->outcome);
    if (t->running)
        sop__sb_puts(b, " (running now)");
}

static void task_text(sop_sb *b, const sop_pytasks *all, const sop_task_index *ix,
                      const sop_pytask *t, const char *indent)
{
    long user = user_level(t);
    for (size_t k = 0; k < t->nframes; k++) {
        const sop_await_frame *f = &t->frames[k];
        sop__sb_printf(b, "%s  %s ", indent, (long)k == user ? "*" : " ");
        put_text(b, f->func);
        sop__sb_puts(b, " (");
        put_text(b, f->file);
        if (f->line >= 0)
            sop__sb_printf(b, ":%d", f->line);
        sop__sb_puts(b, ")\n");
    }
    if (t->chain_cut)
        sop__sb_printf(b, "%s    ... (more await levels not shown)\n", indent);
    if (t->partial[0]) {
        sop__sb_printf(b, "%s    [partial: ", indent);
        put_text(b, t->partial);
        sop__sb_puts(b, "]\n");
    }
    sop__sb_puts(b, indent);
    waits_text(b, all, ix, t);
}

static void tree_text(sop_sb *b, const sop_pytasks *all, const sop_task_index *ix, size_t i,
                      unsigned char *on, unsigned char *shown, int depth)
{
    char indent[2 * TREE_MAX_DEPTH + 8];
    int n = depth * 2 < (int)sizeof indent - 1 ? depth * 2 : (int)sizeof indent - 1;
    memset(indent, ' ', (size_t)n);
    indent[n] = '\0';
    const sop_pytask *t = &all->tasks[i];
    sop__sb_printf(b, "%s%s", indent, depth ? "+ " : "");
    task_head(b, t);
    if (on[i] || shown[i] || depth >= TREE_MAX_DEPTH) {
        sop__sb_puts(b, on[i]      ? " (awaits itself: a cycle)\n"
                        : shown[i] ? " (shown above)\n"
                                   : " (deeper levels not shown)\n");
        return;
    }
    sop__sb_puts(b, "\n");
    shown[i] = 1;
    on[i] = 1;
    task_text(b, all, ix, t, indent);
    for (size_t k = 0; k < t->nawaits; k++) {
        long j = sop__task_index_find(ix, t->awaits[k]);
        if (j >= 0)
            tree_text(b, all, ix, (size_t)j, on, shown, depth + 1);
    }
    on[i] = 0;
}

static void prim_text(sop_sb *b, const sop_pytasks *all, const sop_task_index *ix,
                      const sop_pyprim *p, bool first)
{
    if (first)
        sop__sb_puts(b, "\nLocks and semaphores tasks wait on:\n");
    sop__sb_puts(b, "  ");
    put_text(b, p->type);
    sop__sb_printf(b, " 0x%llx: %zu task%s waiting", (unsigned long long)p->addr, p->waiting,
                   p->waiting == 1 ? "" : "s");
    if (p->queue >= 0)
        sop__sb_printf(b, ", %lld queued in _waiters", p->queue);
    if (p->locked >= 0)
        sop__sb_puts(b, p->locked ? ", locked" : ", not locked");
    if (p->value != LLONG_MIN)
        sop__sb_printf(b, ", value %lld", p->value);
    if (!p->nholders) {
        sop__sb_puts(b, "; holder not seen\n");
        return;
    }
    sop__sb_puts(b, "; held by");
    for (size_t j = 0; j < p->nholders; j++) {
        long i = sop__task_index_find(ix, p->holders[j]);
        sop__sb_puts(b, j ? ", \"" : " \"");
        put_text(b, i >= 0 ? all->tasks[i].name : "?");
        sop__sb_puts(b, "\"");
    }
    sop__sb_puts(b, p->holders_cut ? ", ...\n" : "\n");
}

static void tasks_text(sop_sb *out, const sop_pytasks *t, const sop_missing *missing, int pid,
                       const char *cmdline, bool tree)
{
#define b (*out)
    sop__sb_printf(&b, "Process %d: ", pid);
    put_text(&b, cmdline);
    sop__sb_puts(&b, "\n");
    if (t) {
        size_t pending = 0, cancelling = 0, done = 0;
        for (size_t i = 0; i < t->ntasks; i++) {
            pending += !strcmp(t->tasks[i].state, "pending");
            cancelling += !strcmp(t->tasks[i].state, "cancelling");
            done += !strcmp(t->tasks[i].state, "done");
        }
        sop__sb_puts(&b, "Python v");
        put_text(&b, t->version);
        sop__sb_printf(&b,
                       ": %zu asyncio task%s (%zu pending, %zu cancelling, %zu done); read in "
                       "%.1f ms without stopping the process\n",
                       t->ntasks, t->ntasks == 1 ? "" : "s", pending, cancelling, done, t->read_ms);
        if (!t->complete) {
            sop__sb_puts(&b, "PARTIAL: ");
            put_text(&b, t->partial);
            sop__sb_puts(&b, "\n");
        }
        sop_task_index idx;
        bool ok = sop__task_index_build(&idx, t, tree) == 0;
        const sop_task_index *ix = ok ? &idx : NULL;
        bool by = tree && ok;
        unsigned char *on = calloc(t->ntasks ? t->ntasks : 1, 1);
        unsigned char *shown = calloc(t->ntasks ? t->ntasks : 1, 1);
        for (size_t i = 0; ix && on && shown && i < t->ntasks; i++) {
            if (tree && by) {
                if (!sop__task_index_awaited_n(ix, i)) {
                    sop__sb_puts(&b, "\n");
                    tree_text(&b, t, ix, i, on, shown, 0);
                }
                continue;
            }
            sop__sb_puts(&b, "\n");
            task_head(&b, &t->tasks[i]);
            sop__sb_puts(&b, "\n");
            task_text(&b, t, ix, &t->tasks[i], "");
        }
        /* Tasks only in cycles have no root: list them too. */
        for (size_t i = 0; tree && by && on && shown && i < t->ntasks; i++)
            if (!shown[i]) {
                sop__sb_puts(&b, "\n");
                tree_text(&b, t, ix, i, on, shown, 0);
            }
        for (size_t k = 0; ix && k < t->nprims; k++)
            prim_text(&b, t, ix, &t->prims[k], k == 0);
        free(on);
        free(shown);
        if (ok)
            sop__task_index_free(&idx);
    }
    for (size_t i = 0; missing && i < missing->n; i++) {
        sop__sb_printf(&b, "%smissing %s: ", i == 0 ? "\n" : "", missing->items[i].probe);
        put_text(&b, missing->items[i].reason);
        sop__sb_puts(&b, "\n");
    }
#undef b
}

char *sop__tasks_text(const sop_pytasks *t, const sop_missing *missing, int pid,
                      const char *cmdline, bool tree)
{
    sop_sb b = {0};
    tasks_text(&b, t, missing, pid, cmdline, tree);
    return sop__sb_take(&b);
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

/* Read the tasks of pid and render them into b (a streaming b writes as it goes). */
static int tasks_render(int pid, unsigned flags, sop_format fmt, sop_sb *b)
{
    sop_missing missing = {0};
    sop_pytasks *t = NULL;
    char cmdline[4096];
    read_cmdline(pid, cmdline, sizeof cmdline);
    int r = sop__tasks_read(pid, "/proc", &t, &missing);
    int rc = sop__status_of_remote_read(r);
    bool tree = (flags & SOP_TASKS_TREE) != 0;
    if (fmt == SOP_FORMAT_JSON)
        tasks_json(b, t, &missing, pid, tree);
    else
        tasks_text(b, t, &missing, pid, cmdline, tree);
    sop__tasks_free(t);
    sop__missing_free(&missing);
    return rc;
}

int sop_tasks(sop_engine *e, int pid, unsigned flags, sop_format fmt, char **out)
{
    (void)e;
    if (!out || pid <= 0)
        return SOP_EINVAL;
    sop_sb b = {0};
    int rc = tasks_render(pid, flags, fmt, &b);
    *out = sop__sb_take(&b);
    if (!*out && rc == SOP_OK)
        rc = SOP_ENOMEM;
    return rc;
}

int sop_tasks_write(sop_engine *e, int pid, unsigned flags, sop_format fmt, int fd)
{
    (void)e;
    if (fd < 0 || pid <= 0)
        return SOP_EINVAL;
    sop_sb b = {.sink = sop__sb_write_fd, .sink_ctx = &fd};
    int rc = tasks_render(pid, flags, fmt, &b);
    bool nl = b.len ? b.s[b.len - 1] == '\n' : false;
    if (b.len && !nl)
        sop__sb_putn(&b, "\n", 1);
    if (sop__sb_flush(&b) < 0 && rc == SOP_OK)
        rc = b.s ? SOP_EWRITE : SOP_ENOMEM;
    free(b.s);
    return rc;
}
