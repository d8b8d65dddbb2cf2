/* py_names.h — the name of a threading.Thread read from outside (its `_name` attribute), an
 * instance attribute's object (asyncio's _GatheringFuture._children),
 * through the version's instance-attribute storage. Depends on py_layouts.h, remote_mem.h. */
#ifndef SOP_PY_NAMES_H
#define SOP_PY_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "py_layouts.h"
#include "remote_mem.h"

/* Read attribute `attr` of the instance at `obj` as text into out. Returns 0, -ENOENT when
 * absent, -EINVAL for anything malformed, or a read error. Bounded: at most 1024 dict
 * entries are looked at. */
int sop__py_instance_str_attr(sop_rmem *m, const sop_pylayout *L, uint64_t obj, const char *attr,
                              char *out, size_t cap);

/* The object held by attribute `attr` of the instance at `obj` (*out: its address). Same
 * returns and bounds as above. */
int sop__py_instance_attr(sop_rmem *m, const sop_pylayout *L, uint64_t obj, const char *attr,
                          uint64_t *out);

/* Read the str value of key `key` in the dict object at `dict` (e.g. a heap type's tp_dict
 * "__module__"). Same returns and bounds as above. */
int sop__py_dict_str(sop_rmem *m, const sop_pylayout *L, uint64_t dict, const char *key, char *out,
                     size_t cap);

#endif
