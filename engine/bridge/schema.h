/* schema.h — the evidence schema as data: one table per evidence group (host with numa, cgroup,
 * alloc, sched, python, python.heap, sampling, io_files[], gpu, rank; "" = the top-level keys), one
 * row per key: its path under the group, type, unit and doc, and for a plain field
 * where it lives in the probe's struct. The bridge sets plain fields with sop__bridge_keys; the
 * rows it writes by hand (derived figures, arrays, nested objects) carry SOP_EVK_HAND and are
 * written by the walk's hand callback, in table order (the top-level keys: by collect.c's own
 * code; those rows are documentation and the reads check only). docs/evidence.md (sop_evidence_doc)
 * and the `reads` check follow from the same tables. Depends on engine/core/value.h. */
#ifndef SOP_SCHEMA_H
#define SOP_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "value.h"

typedef enum {
    SOP_EVK_INT,  /* int64_t field; SOP_NA = absent */
    SOP_EVK_NUM,  /* double field; NaN = absent */
    SOP_EVK_TEXT, /* char[] field; "" = absent; invalid UTF-8 replaced (sop__bridge_text) */
    SOP_EVK_STR,  /* char[] field; "" = absent; copied as it is (our own words) */
    SOP_EVK_BOOL, /* bool field (SOP_EVK_TRUE): written only when true; or a writer's/hand row */
    SOP_EVK_OBJ,
    SOP_EVK_ARR,
} sop_evk_type;

#define SOP_EVK_HAND ((size_t)-1)   /* written by hand in the group's bridge file */
#define SOP_EVK_WRITER ((size_t)-2) /* written by the row's own writer (SOP_EVK_W) */

/* A row's own writer: sets key `name` on `o` from `base` (the struct the level's rows share)
 * and `ctx` (what the bridge passed along), or nothing when absent. Bound to its row, so no
 * name is compared: a key spelt wrong is spelt wrong in docs/evidence.md and the reads check. */
typedef void (*sop_evk_write_fn)(struct sop_value *o, const char *name, const void *base,
                                 void *ctx);

typedef struct {
    const char *key; /* path under the group: "mem_total_kb", "cpu.user_pct", "disks[].name";
                      * a `*` segment stands for several names the doc lists */
    sop_evk_type type;
    size_t off; /* offset of the field in the struct the rows of its parent share; HAND; WRITER */
    const char *unit;
    const char *doc;
    sop_evk_write_fn write; /* WRITER rows */
} sop_evk;

typedef struct {
    const char *group; /* top-level key of `ev` ("host") */
    const char *file;  /* the bridge file that writes it */
    const sop_evk *keys;
    const size_t *n; /* rows in keys */
} sop_evk_group;

/* Row makers. The _Generic makes a row whose type does not match its field fail to compile. */
#define SOP_EVK_I(key, st, field, unit, doc)                                                       \
    {                                                                                              \
        key, SOP_EVK_INT,                                                                          \
            _Generic(((st *)0)->field, int64_t                                                     \
                     : offsetof(st, field)),                                                       \
            unit, doc, NULL                                                                        \
    }
#define SOP_EVK_D(key, st, field, unit, doc)                                                       \
    {                                                                                              \
        key, SOP_EVK_NUM,                                                                          \
            _Generic(((st *)0)->field, double                                                      \
                     : offsetof(st, field)),                                                       \
            unit, doc, NULL                                                                        \
    }
#define SOP_EVK_T(key, st, field, doc)                                                             \
    {                                                                                              \
        key, SOP_EVK_TEXT, _Generic(((st *)0)->field, char * : offsetof(st, field)), "", doc, NULL \
    }
#define SOP_EVK_S(key, st, field, doc)                                                             \
    {                                                                                              \
        key, SOP_EVK_STR, _Generic(((st *)0)->field, char * : offsetof(st, field)), "", doc, NULL  \
    }
/* A bool field, written (as true) only when it is true. */
#define SOP_EVK_TRUE(key, st, field, doc)                                                          \
    {                                                                                              \
        key, SOP_EVK_BOOL, _Generic(((st *)0)->field, _Bool : offsetof(st, field)), "", doc, NULL  \
    }
/* A value computed from the level's struct (and ctx) by `fn`, a sop_evk_write_fn. */
#define SOP_EVK_W(key, type, fn, unit, doc)                                                        \
    {                                                                                              \
        key, type, SOP_EVK_WRITER, unit, doc, _Generic((fn), sop_evk_write_fn : (fn))              \
    }
#define SOP_EVK_H(key, type, unit, doc)                                                            \
    {                                                                                              \
        key, type, SOP_EVK_HAND, unit, doc, NULL                                                   \
    }

/* Hand-written keys: called for a HAND row when the walk reaches it, so keys keep table order. */
typedef void (*sop_evk_hand_fn)(sop_value *o, const sop_evk *row, const char *name, void *ctx);

/* Set on object `o` every row of `keys` whose path is `prefix` followed by one name (prefix ""
 * = the group's own level, "cpu." = host.cpu, "disks[]." = one element of host.disks), in
 * table order: plain rows from the field at `base` + off, absent values (SOP_NA, NaN, "")
 * adding nothing; HAND rows through `hand` (skipped when NULL) with `name` the key to set. */
void sop__bridge_keys(sop_value *o, const void *base, const sop_evk *keys, size_t n,
                      const char *prefix, sop_evk_hand_fn hand, void *ctx);

/* Attach `o` under key when it holds anything; free it otherwise. */
void sop__bridge_attach(sop_value *parent, const char *key, sop_value *o);

/* The groups with a table, in document order. */
extern const sop_evk sop__evk_host[], sop__evk_cgroup[];
extern const size_t sop__evk_host_n, sop__evk_cgroup_n;
/* proc, threads[]; children[], parent and siblings[] share sop__evk_children */
extern const sop_evk sop__evk_proc[], sop__evk_threads[], sop__evk_children[];
extern const size_t sop__evk_proc_n, sop__evk_threads_n, sop__evk_children_n;
extern const sop_evk sop__evk_python[];
extern const size_t sop__evk_python_n;
extern const sop_evk sop__evk_heap[]; /* the group "python.heap" */
extern const size_t sop__evk_heap_n;
extern const sop_evk sop__evk_tasks[]; /* the group "python.tasks" */
extern const size_t sop__evk_tasks_n;
extern const sop_evk sop__evk_sampling[], sop__evk_io_files[];
extern const size_t sop__evk_sampling_n, sop__evk_io_files_n;
extern const sop_evk sop__evk_rank[];
extern const size_t sop__evk_rank_n;
extern const sop_evk sop__evk_watch[]; /* the group "watch": engine/api/watch_history.c */
extern const size_t sop__evk_watch_n;
extern const sop_evk sop__evk_top[]; /* the group "": top-level keys */
extern const size_t sop__evk_top_n;

/* docs/evidence.md: the embedded template (docs/evidence.md.in) with each `@@KEYS group@@`
 * line replaced by that group's rows. Caller frees. NULL on allocation failure. */
char *sop__evidence_doc_md(const sop_evk_group *const *groups, size_t n);
/* {"groups": [{"group", "file", "keys": [{"key" (full path), "type", "unit", "doc",
 * "hand"}]}]}: what the reads check compares against. Caller frees. */
sop_value *sop__evidence_schema(const sop_evk_group *const *groups, size_t n);

#endif
