/* sampler_runtime.c — classify one sampled Python stack for the §8 rules (imports at start-up,
 * logging in hot paths, subprocess storms) by the files and functions on it. Text in, marks
 * out; the sampler counts them per thread. Depends on probes/python/cpython.h. */
#include "sampler_runtime.h"

#include <string.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "StreamHandler.emit" -> "emit" (3.11+ qualified names; older versions have the bare name). */
static const char *method(const char *func)
{
    const char *dot = strrchr(func, '.');
    return dot ? dot + 1 : func;
}

static bool is_one_of(const char *s, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(s, *names) == 0)
            return true;
    return false;
}

static bool import_frame(const sop_pyframe *f)
{
    return strncmp(f->file, "<frozen importlib._bootstrap", 28) == 0 ||
           ends_with(f->file, "importlib/_bootstrap.py") ||
           ends_with(f->file, "importlib/_bootstrap_external.py");
}

static bool logging_frame(const sop_pyframe *f)
{
    return ends_with(f->file, "logging/__init__.py") || ends_with(f->file, "logging/handlers.py");
}

static bool subprocess_frame(const sop_pyframe *f)
{
    return ends_with(f->file, "/subprocess.py") ||
           ends_with(f->file, "multiprocessing/popen_fork.py") ||
           ends_with(f->file, "multiprocessing/popen_spawn_posix.py") ||
           ends_with(f->file, "multiprocessing/popen_forkserver.py");
}

static const char *const format_funcs[] = {
    "format",          "formatMessage", "formatTime", "getMessage",
    "formatException", "formatStack",   "usesTime",   NULL};
static const char *const write_funcs[] = {"emit",           "flush",      "_open",
                                          "shouldRollover", "doRollover", NULL};
static const char *const spawn_funcs[] = {"_execute_child", "_fork_exec", "_launch", "_posix_spawn",
                                          NULL};

void sop__runtime_marks(const sop_pyframe *frames, size_t n, sop_runtime_marks *out)
{
    memset(out, 0, sizeof *out);
    bool in_import = false;
    int outer_log = -1, inner_log = -1;
    for (size_t k = n; k-- > 0;) { /* root (outermost) first */
        const sop_pyframe *f = &frames[k];
        if (import_frame(f)) {
            in_import = out->import = true;
        } else if (in_import && !out->import_top && strcmp(f->func, "<module>") == 0) {
            out->import_top = f->file;
        }
        if (logging_frame(f)) {
            if (outer_log < 0)
                outer_log = (int)k;
            inner_log = (int)k;
            if (is_one_of(method(f->func), format_funcs))
                out->log_format = true;
        }
        if (subprocess_frame(f)) {
            out->subprocess = true;
            if (is_one_of(method(f->func), spawn_funcs))
                out->spawn = true;
        }
    }
    if (outer_log >= 0) {
        out->logging = true;
        out->log_write = is_one_of(method(frames[inner_log].func), write_funcs);
        if ((size_t)outer_log + 1 < n)
            out->log_site = &frames[outer_log + 1];
    }
}
