/* sampler_runtime.h — what one sampled Python stack says about §8 costs: inside an import
 * (importlib's frozen bootstrap), inside logging (formatting, handler writes), inside
 * subprocess / fork launching. Pure functions over frames (engine/sample/sampler_runtime.c). */
#ifndef SOP_SAMPLER_RUNTIME_H
#define SOP_SAMPLER_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "python/cpython.h"

typedef struct {
    bool import;            /* an importlib._bootstrap frame on the stack */
    bool logging;           /* a logging/__init__.py or logging/handlers.py frame */
    bool log_format;        /* ... inside Formatter.format / LogRecord.getMessage and kin */
    bool log_write;         /* ... innermost logging frame is a handler's emit / flush / _open */
    bool subprocess;        /* subprocess.py or multiprocessing's popen_* launchers */
    bool spawn;             /* ... inside Popen._execute_child / fork_exec / _launch */
    const char *import_top; /* file of the outermost module being imported (NULL: none) */
    const sop_pyframe *log_site; /* the frame that called into logging (NULL: none) */
} sop_runtime_marks;

void sop__runtime_marks(const sop_pyframe *frames, size_t n, sop_runtime_marks *out);

#endif
