/* py_runtime.h — the CPython runtime of a process as found from outside (py_runtime.c): where
 * _PyRuntime is, the version, and the layout chosen for it. Found once per collection and
 * handed to the walkers (py_walk.c, py_sample.c, heap_walk.c). Depends on libc. */
#ifndef SOP_PY_RUNTIME_H
#define SOP_PY_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "../missing.h"
#include "py_layouts.h"
#include "remote_mem.h"

#define SOP_PYRUNTIME_NOTES 4

typedef struct sop_pyruntime {
    int rc; /* what finding it returned: 0, or as sop__pyruntime_find (the rest then partial) */
    int pid;
    char proc_root[256];
    sop_pylayout L;
    uint64_t runtime;   /* address of _PyRuntime in the target */
    uint64_t code_type; /* &PyCode_Type in the target; 0 when unknown */
    char version[32];   /* "3.11.7" */
    char executable[512];
    char libpython[512]; /* "" for static builds */
    char layout[32];     /* where the offsets came from: "table 3.11", "_Py_DebugOffsets" */
    /* The process image it was found in: start time and stack start (/proc/PID/stat, a new
     * stack on every exec), the executable's device and inode. */
    uint64_t start_ticks, start_stack, exe_dev, exe_ino;
    /* What finding it added to `missing`, added again by each user of the runtime. */
    sop_missing_item notes[SOP_PYRUNTIME_NOTES];
    int nnotes;
} sop_pyruntime;

/* Find the runtime of `pid` (proc_root "/proc" or a fixture root): the executable and
 * libpython from /proc/PID/maps and their ELF symbols (elf.c), the version (Py_Version in
 * memory, else the PY_VERSION literal) and the layout (py_layouts.c: _Py_DebugOffsets on
 * 3.13+, else the built-in table). Reasons go to `missing` and are kept in rt->notes. Returns
 * 0, -ENOEXEC when not CPython, -ENOTSUP for an unsupported version, -ESRCH when gone,
 * -EPERM / -EACCES when refused, -ENOMEM; rt->rc holds the same. */
int sop__pyruntime_find(int pid, const char *proc_root, sop_pyruntime *rt, sop_missing *missing);
/* The same from the maps text the caller read a moment ago (the collection's snapshot; NULL
 * or "": read here). */
int sop__pyruntime_find_maps(int pid, const char *proc_root, const char *maps, sop_pyruntime *rt,
                             sop_missing *missing);
/* The same with the maps text and the memory reader already open (py_walk.c). */
int sop__pyruntime_find_in(int pid, const char *proc_root, const char *maps, sop_rmem *mem,
                           sop_pyruntime *rt, sop_missing *missing);
/* True when `rt` (found earlier, maybe unsuccessfully) still describes `pid` under proc_root:
 * the same process image (no exec since). Then sop__pyruntime_replay adds its notes. */
bool sop__pyruntime_current(const sop_pyruntime *rt, int pid, const char *proc_root);
void sop__pyruntime_replay(const sop_pyruntime *rt, sop_missing *missing);
/* `rt` when current (its notes replayed into `missing`), else the runtime found now into
 * *fresh; check ->rc of what is returned. rt may be NULL. */
const sop_pyruntime *sop__pyruntime_reuse(const sop_pyruntime *rt, int pid, const char *proc_root,
                                          sop_pyruntime *fresh, sop_missing *missing);

#endif
