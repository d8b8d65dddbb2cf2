/* sop.h — the public API of libsop: collect evidence about a process, run the triage rules
 * (Lua) over it, and render the playbook's triage table.
 *
 * Conventions: functions return 0 on success or a negative SOP_E* code; sop_strerror() names
 * the code and sop_last_error() on the engine gives the detail (a path, a Lua traceback, a
 * file:line). Every *_new / *_load has a matching *_free that accepts NULL. Strings returned
 * through `char **out` are malloc'd and owned by the caller (free with sop_free). Pointers
 * returned as `const char *` are borrowed from the object they came from and live as long as
 * it does. The library writes nothing to stdout/stderr and installs no signal handlers. */
#ifndef SOP_H
#define SOP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SOP_VERSION_MAJOR 0
#define SOP_VERSION_MINOR 1
#define SOP_VERSION_PATCH 0
#define SOP_VERSION_STRING "0.1.0"

/* Error codes: X(name, value, message). */
#define SOP_ERRNO_MAP(X)                                                                       \
    X(EINVAL, -1, "invalid argument")                                                          \
    X(ENOMEM, -2, "out of memory")                                                             \
    X(ENOTARGET, -3, "target process not found")                                               \
    X(EACCES, -4, "target not readable (permission denied)")                                  \
    X(ERULES, -5, "rules failed to load")                                                      \
    X(EFORMAT, -6, "not a sop evidence document")                                              \
    X(EIO, -7, "input/output error")                                                           \
    X(EUNKNOWNKEY, -8, "unknown threshold")                                                    \
    X(ENORULES, -9, "no rules loaded")                                                         \
    X(ENOTPYTHON, -10, "not a CPython process")                                               \
    X(EINTERNAL, -11, "internal error")

typedef enum {
    SOP_OK = 0,
#define SOP__ERR_ENUM(name, value, msg) SOP_##name = (value),
    SOP_ERRNO_MAP(SOP__ERR_ENUM)
#undef SOP__ERR_ENUM
} sop_error;

/* A static string naming `code`; never NULL. */
const char *sop_strerror(int code);
/* The library's version, "MAJOR.MINOR.PATCH". Static. */
const char *sop_version(void);
/* Free a string or buffer the library returned through a `char **out`. Accepts NULL. */
void sop_free(void *p);

/* ---- engine ---------------------------------------------------------------------------- */

/* An engine holds one sandboxed Lua state with the loaded rules, the thresholds, and the
 * last error. Engines are independent; one engine is used by one thread at a time. */
typedef struct sop_engine sop_engine;

/* Create an engine with no rules loaded. *out is owned by the caller (sop_engine_free). */
int sop_engine_new(sop_engine **out);
void sop_engine_free(sop_engine *e);
/* Detail of the engine's last error, or "" — borrowed, valid until the next call on e. */
const char *sop_last_error(const sop_engine *e);

/* Load rules. Each replaces what was loaded before. A rule file may `require` plugins, looked
 * up next to the file (and in the embedded pack). On failure returns SOP_ERULES and
 * sop_last_error() holds "file:line: message". The source is copied. */
int sop_load_rules_file(sop_engine *e, const char *path);
int sop_load_rules_string(sop_engine *e, const char *chunkname, const char *source, size_t len);
/* The default rule pack (rules.lua and plugins/) compiled into the library. */
int sop_load_rules_default(sop_engine *e);

/* Number of rules loaded, and the id of the i-th (borrowed, valid until the next load). */
size_t sop_rule_count(const sop_engine *e);
const char *sop_rule_id(const sop_engine *e, size_t i);

/* Override a threshold of the loaded pack, KEY=VALUE style (value parsed as a number when it
 * is one). Unknown keys give SOP_EUNKNOWNKEY. Overrides survive a later load. */
int sop_set_threshold(sop_engine *e, const char *key, const char *value);

/* ---- evidence -------------------------------------------------------------------------- */

typedef struct sop_evidence sop_evidence;

typedef struct {
    double duration_s;   /* observation window for rates; 0 = one snapshot */
    int python;          /* read CPython stacks when the target is CPython (default 1) */
    int children;        /* gather descendants (default 1) */
    int kernel_log;      /* read OOM records from the kernel log (default 1) */
    const char *proc_root;   /* default "/proc" */
    const char *cgroup_root; /* default "/sys/fs/cgroup" */
} sop_collect_opts;

/* Fill opts with the defaults (duration 1 s, every probe on). */
void sop_collect_opts_init(sop_collect_opts *opts);

/* Collect evidence about `pid` over opts->duration_s (blocking for that long). A pid that is
 * gone gives SOP_ENOTARGET, unless the kernel log holds an OOM kill of it: then *out is a
 * post-mortem (alive = false). What could not be read is listed in the evidence's `missing`.
 * *out is owned by the caller (sop_evidence_free). */
int sop_collect(sop_engine *e, int pid, const sop_collect_opts *opts, sop_evidence **out);
/* Parse a `sopctl evidence` JSON document. Not ours (no schema 1, no pid): SOP_EFORMAT. */
int sop_evidence_from_json(sop_engine *e, const char *text, size_t len, sop_evidence **out);
/* Serialize as JSON (pretty when `pretty`); *out owned by the caller (sop_free). */
int sop_evidence_to_json(const sop_evidence *ev, int pretty, char **out);
void sop_evidence_free(sop_evidence *ev);

typedef enum { SOP_FORMAT_MD = 0, SOP_FORMAT_JSON = 1, SOP_FORMAT_TEXT = 2 } sop_format;

/* ---- stacks ---------------------------------------------------------------------------- */

#define SOP_DUMP_NATIVE 0x1u /* also unwind native stacks (stops each thread briefly) */

/* The Python stacks of `pid` (CONTRACT.md "Stacks"): JSON when fmt is SOP_FORMAT_JSON, else
 * py-spy-like text. Reads without stopping the target unless SOP_DUMP_NATIVE. `e` may be
 * NULL. Errors: SOP_ENOTPYTHON, SOP_ENOTARGET (gone), SOP_EACCES (memory not readable); on
 * those *out may still hold a document naming what is missing. *out is owned by the caller
 * (sop_free). */
int sop_dump(sop_engine *e, int pid, unsigned flags, sop_format fmt, char **out);

/* ---- evaluation and reports ------------------------------------------------------------ */

typedef struct sop_report sop_report;

/* Run every loaded rule over ev. A rule that fails or runs too long is a rule_errors entry in
 * the report, not a failure of this call. *out is owned by the caller (sop_report_free). */
int sop_evaluate(sop_engine *e, const sop_evidence *ev, sop_report **out);
void sop_report_free(sop_report *r);


/* Render in `lang` ("en" or "zh"; NULL = "en"). *out owned by the caller (sop_free).
 * Control characters from the target are escaped in every format. */
int sop_report_render(const sop_report *r, sop_format fmt, const char *lang, char **out);
/* 1 when the report has a finding of severity warn or high, else 0. */
int sop_report_has_problem(const sop_report *r);

#ifdef __cplusplus
}
#endif
#endif
