/* pyspy_formats.h — py-spy's shapes, for tools that call py-spy (sopctl run as `py-spy`,
 * docs/py-spy.md): how py-spy names a frame's file (engine/api/pyspy_names.c), and its
 * `dump --json` document (engine/api/dump_pyspy.c). The record formats are
 * engine/api/record_pyspy.c. Depends on the python probe. */
#ifndef SOP_PYSPY_FORMATS_H
#define SOP_PYSPY_FORMATS_H

#include <stddef.h>

#include "../probes/python/cpython.h"

/* py-spy's short name of a source file of process pid: the path below the outermost directory
 * that is still a package (holds an __init__.py), looked up as the process sees it
 * (proc_root/PID/root) — "torch/nn/modules/module.py", "threading.py", "job.py". A path that
 * is not absolute ("<frozen importlib._bootstrap>") is kept whole. Writes at most cap bytes. */
void sop__pyspy_short_file(const char *proc_root, int pid, const char *file, char *out, size_t cap);

/* The py-spy `dump --json` document of py (pretty JSON: an array with one object per thread,
 * py-spy's field names; native frames merged in where py has them). *out malloc'd, owned by
 * the caller. Returns 0 or SOP_ENOMEM. */
int sop__dump_pyspy_json(const sop_python *py, int pid, char **out);

/* ---- py-spy's stacks as text, counted (engine/api/pyspy_fold.c) ---------------------- */

#include <stdio.h>

#include "picture_writers.h" /* the flame graph and speedscope writers */
#include "sampler.h"         /* sop_stack_count, sop_sample_state */
#include "strbuf.h"

typedef struct sop_pyspy_fold sop_pyspy_fold;

/* flags: SOP_PYSPY_* (NOLINENO, FULL_FILENAMES name the frames). NULL when out of memory. */
sop_pyspy_fold *sop__pyspy_fold_new(const char *proc_root, unsigned flags);
void sop__pyspy_fold_free(sop_pyspy_fold *f);
/* Append the sample's frames to b as py-spy writes them: "func (file:line)" root first,
 * separated by ';' (a ';' or newline inside a name becomes ':' or ' '); "(stack changed while
 * read)" for a torn sample, "(no Python frame)" for none. pid: the process whose files are
 * named. */
void sop__pyspy_frames(sop_pyspy_fold *f, sop_sb *b, int pid, const sop_pysample *p);
/* Append s as (part of) one frame's text: ';' (the separator) becomes ':', a newline ' '. */
void sop__pyspy_put_text(sop_sb *b, const char *s);
/* Count one sample of `stack` in state st. A stack beyond the table's room is counted as
 * "(more distinct stacks than kept)". */
void sop__pyspy_fold_add(sop_pyspy_fold *f, const char *stack, sop_sample_state st);
/* The counted stacks (strings borrowed from f, valid until it is freed); *out malloc'd.
 * Returns the number of entries. */
size_t sop__pyspy_fold_stacks(const sop_pyspy_fold *f, sop_stack_count **out);

/* ---- py-spy's chrome trace (engine/api/pyspy_trace.c) --------------------------------- */

typedef struct sop_pyspy_trace sop_pyspy_trace;

/* Events are written to out as they come ("[" now); flags: SOP_PYSPY_NOLINENO. */
sop_pyspy_trace *sop__pyspy_trace_new(FILE *out, unsigned flags);
/* One thread sample at ts_us (µs since the window's start): an "E" event per frame the thread
 * left since its last sample, innermost first, and a "B" per frame it entered, outermost first. */
void sop__pyspy_trace_sample(sop_pyspy_trace *t, int pid, const sop_pysample *p, double ts_us);
/* "E" for every frame still open, then the closing "]". 0, or -EIO after a failed write. */
int sop__pyspy_trace_end(sop_pyspy_trace *t, double ts_us);
/* Events dropped because the trace held its maximum. */
long sop__pyspy_trace_dropped(const sop_pyspy_trace *t);
void sop__pyspy_trace_free(sop_pyspy_trace *t);

#endif
