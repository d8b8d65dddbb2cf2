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

/* SOP_API marks the public functions: libsop is built with hidden visibility
 * (-fvisibility=hidden), so only what carries SOP_API is exported from libsop.so; the internal
 * sop__ functions stay inside it (like libuv's UV_EXTERN). */
#if defined(__GNUC__) && __GNUC__ >= 4
#define SOP_API __attribute__((visibility("default")))
#else
#define SOP_API
#endif

#define SOP_VERSION_MAJOR 0
#define SOP_VERSION_MINOR 1
#define SOP_VERSION_PATCH 0
#define SOP_VERSION_STRING "0.1.0"
/* One number for compile-time comparisons: 0x00MMmmpp. */
#define SOP_VERSION_HEX ((SOP_VERSION_MAJOR << 16) | (SOP_VERSION_MINOR << 8) | SOP_VERSION_PATCH)

/* Stability: the API (names, arguments, meaning) only grows within a major version. Structs the
 * caller allocates (sop_collect_opts, sop_watch_config) keep their size: they carry reserved
 * fields that later versions turn into options, so fill them with their *_init function first.
 * Before 1.0 a minor version may still change the ABI: rebuild against each minor release
 * (the CMake package accepts the same major.minor only). */

/* Error codes: X(name, value, message). */
#define SOP_ERRNO_MAP(X)                                                                           \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(ENOTARGET, -3, "target process not found")                                                   \
    X(EACCES, -4, "target not readable (permission denied)")                                       \
    X(ERULES, -5, "rules failed to load")                                                          \
    X(EFORMAT, -6, "not a sop evidence document")                                                  \
    X(EIO, -7, "input/output error")                                                               \
    X(EUNKNOWNKEY, -8, "unknown threshold")                                                        \
    X(ENORULES, -9, "no rules loaded")                                                             \
    X(ENOTPYTHON, -10, "not a CPython process")                                                    \
    X(EINTERNAL, -11, "internal error")                                                            \
    X(EPYVERSION, -12, "a CPython whose layout this sop does not know")                            \
    X(EWRITE, -13, "error writing the output")

typedef enum {
    SOP_OK = 0,
#define SOP__ERR_ENUM(name, value, msg) SOP_##name = (value),
    SOP_ERRNO_MAP(SOP__ERR_ENUM)
#undef SOP__ERR_ENUM
} sop_error;

/* A static string naming `code`; never NULL. */
SOP_API const char *sop_strerror(int code);
/* The library's version, "MAJOR.MINOR.PATCH" (static), and as SOP_VERSION_HEX: compare with
 * the macros to detect a header/library mismatch at run time. */
SOP_API const char *sop_version(void);
SOP_API unsigned sop_version_hex(void);
/* Free a string or buffer the library returned through a `char **out`. Accepts NULL. */
SOP_API void sop_free(void *p);
/* s escaped as every output of sop escapes a string that came from a target or a user, for a
 * program writing its own text beside sop's (sopctl watch's log and post-mortem):
 *   SOP_ESCAPE_TEXT  a terminal or log line: C0, DEL, C1 and format controls (bidi overrides,
 *                    zero-width marks) spelled \xNN / \uNNNN, bytes that are not UTF-8 as \xNN;
 *   SOP_ESCAPE_JSON  a JSON string literal, quotes included: the same controls as \u escapes,
 *                    bytes that are not UTF-8 as \ufffd;
 *   SOP_ESCAPE_MARKDOWN  Markdown inline text: as TEXT, and the punctuation Markdown or HTML
 *                    reads (\ ` * _ [ ] < > | ! & ~ #) behind a backslash.
 * 0, SOP_EINVAL (NULL s or out, an unknown kind), SOP_ENOMEM; *out owned by the caller. */
typedef enum { SOP_ESCAPE_TEXT = 0, SOP_ESCAPE_JSON = 1, SOP_ESCAPE_MARKDOWN = 2 } sop_escape_kind;
SOP_API int sop_escape(const char *s, sop_escape_kind kind, char **out);

/* ---- engine ---------------------------------------------------------------------------- */

/* An engine holds one sandboxed Lua state with the loaded rules, the thresholds, and the
 * last error. Engines share nothing: any number of them may run in parallel threads. One engine
 * is used by one thread at a time (like a lua_State); evidence and reports are immutable once
 * made and may be read (rendered, evaluated, serialized) from several threads at once. */
typedef struct sop_engine sop_engine;

/* Create an engine with no rules loaded. *out is owned by the caller (sop_engine_free). */
SOP_API int sop_engine_new(sop_engine **out);
SOP_API void sop_engine_free(sop_engine *e);
/* Detail of the engine's last error, or "" — borrowed, valid until the next call on e. */
SOP_API const char *sop_last_error(const sop_engine *e);

/* Load rules. Each replaces what was loaded before. A rule file may `require` plugins, looked
 * up next to the file (and in the embedded pack). On failure returns SOP_ERULES and
 * sop_last_error() holds "file:line: message". The source is copied. */
SOP_API int sop_load_rules_file(sop_engine *e, const char *path);
SOP_API int sop_load_rules_string(sop_engine *e, const char *chunkname, const char *source,
                                  size_t len);
/* The default rule pack (rules.lua and plugins/) compiled into the library. */
SOP_API int sop_load_rules_default(sop_engine *e);

/* The output formats. Each has one row in the format table (engine/api/format.c): its name (what
 * --format and the Python binding take), file extension, MIME type, writers, and whether it
 * renders a report, a merge, and the window's pictures. A new format is a value here and a row
 * there. */
typedef enum {
    SOP_FORMAT_MD = 0,
    SOP_FORMAT_JSON = 1,
    SOP_FORMAT_TEXT = 2,
    SOP_FORMAT_HTML = 3
} sop_format;

/* sop_format_info.flags */
#define SOP_FORMAT_REPORT 0x1u /* sop_report_render takes it */
#define SOP_FORMAT_MERGE 0x2u  /* sop_merge_render takes it */
#define SOP_FORMAT_PICTURES                                                                        \
    0x4u /* draws the window's pictures: collect with SOP_COLLECT_PICTURES */

typedef struct {
    sop_format format;
    const char *name; /* "md", "json", "text", "html" */
    const char *ext;  /* ".md", ... */
    const char *mime; /* "text/markdown; charset=utf-8", ... */
    unsigned flags;   /* SOP_FORMAT_REPORT | SOP_FORMAT_MERGE | SOP_FORMAT_PICTURES */
} sop_format_info;

/* The i-th row of the format table, in sop_format order (sop_format_at(fmt) describes fmt), or
 * NULL past the end. Static: never freed. */
SOP_API const sop_format_info *sop_format_at(size_t i);
/* The row named `name` ("md", ...), or NULL. */
SOP_API const sop_format_info *sop_format_find(const char *name);

/* A site file: Lua run over the loaded pack, for local policy without editing the pack.
 *     thresholds { busy_thread_pct = 70 }   -- change a default (or declare a new one)
 *     disable "gil.contention"              -- or disable { "a", "b" }: an unknown id is an error
 *     rule { id = "site.x", ... }           -- add rules (same DSL as a pack)
 * It stays in force across later sop_load_rules_* calls (applied after each) until replaced
 * or removed (path NULL). Needs a loaded pack (SOP_ENORULES). On failure (SOP_ERULES, detail in
 * sop_last_error) the engine is as it was before the call. Its `require` looks next to it. */
SOP_API int sop_load_site_file(sop_engine *e, const char *path);
SOP_API int sop_load_site_string(sop_engine *e, const char *chunkname, const char *source,
                                 size_t len);

/* Number of rules loaded, and the id of the i-th (borrowed, valid until the next load). */
SOP_API size_t sop_rule_count(const sop_engine *e);
SOP_API const char *sop_rule_id(const sop_engine *e, size_t i);

/* Describe the loaded pack (with the site file in force): SOP_FORMAT_MD gives docs/rules.md
 * (every rule's id, section, severity, title, the evidence it reads and the thresholds it
 * uses, then every threshold with its default and the pack's comment on it); SOP_FORMAT_JSON
 * gives {"rules": [{id, section, severity, where, title, doc, reads, uses}], "thresholds":
 * {name: default}}. *out is malloc'd (free it). SOP_ENORULES before a load. */
SOP_API int sop_rules_doc(sop_engine *e, sop_format fmt, char **out);

/* Describe the evidence schema: SOP_FORMAT_MD gives docs/evidence.md; SOP_FORMAT_JSON gives
 * {"groups": [{group, file, keys: [{key, type, unit, doc, hand}]}]} for the groups written from
 * a schema table (engine/bridge/schema.h). *out is malloc'd (free it). */
SOP_API int sop_evidence_doc(sop_format fmt, char **out);

/* Override a threshold, KEY=VALUE style, like `sopctl --set`. Needs a loaded pack
 * (SOP_ENORULES before any load) and is checked at once against the pack in force with its
 * site file: SOP_EUNKNOWNKEY for a name it does not declare, SOP_EINVAL for a value that does
 * not read as the type of the default (a number, true/false, or any string); the reason is in
 * sop_last_error(). Overrides are kept across later sop_load_rules_* / sop_load_site_* calls
 * and re-applied to each; one that the newly loaded pack does not declare, or whose value does
 * not fit it, is dropped at that load (the load itself never fails for an override).
 * sop_clear_thresholds() drops them all. */
SOP_API int sop_set_threshold(sop_engine *e, const char *key, const char *value);
/* Drop every threshold override: the pack's defaults (and its site file's) apply again. */
SOP_API void sop_clear_thresholds(sop_engine *e);

/* ---- evidence -------------------------------------------------------------------------- */

typedef struct sop_evidence sop_evidence;

/* Which probes run (sop_collect_opts.probes). The process probe (/proc/PID: stat, status,
 * memory, io, limits, fds, environment, maps) always runs. A probe that is off leaves its part
 * of the evidence absent, and the rules that need it answer "unknown". */
#define SOP_PROBE_THREADS 0x01u  /* /proc/PID/task: per-thread state, CPU, run-queue wait */
#define SOP_PROBE_CHILDREN 0x02u /* descendants and their memory (also needs `children`) */
#define SOP_PROBE_CGROUP 0x04u   /* cgroup v1/v2 limits, usage, throttling, events */
#define SOP_PROBE_HOST 0x08u     /* meminfo, vmstat, /proc/stat, loadavg, PSI, disks, NUMA */
#define SOP_PROBE_KMSG 0x10u     /* OOM-kill records of the kernel log (also `kernel_log`) */
#define SOP_PROBE_PYTHON 0x20u   /* CPython stacks, GIL, GC (also needs `python`) */
#define SOP_PROBE_ALLOC 0x40u    /* which allocator and its knobs */
#define SOP_PROBE_ALL 0x7fu
/* Not in SOP_PROBE_ALL: a census of the Python heap at the start and the end of the window
 * (ev.python.heap, growth per type). Without it a census is taken at the end only when a
 * memory rule needs one (the RSS grows, the cgroup limit is near). */
#define SOP_PROBE_HEAP 0x80u

typedef struct {
    double duration_s;       /* observation window for rates; 0 = one snapshot */
    int python;              /* read CPython stacks when the target is CPython (default 1) */
    int children;            /* gather descendants (default 1) */
    int kernel_log;          /* read OOM records from the kernel log (default 1) */
    const char *proc_root;   /* default "/proc" */
    const char *cgroup_root; /* default "/sys/fs/cgroup" */
    unsigned probes;         /* SOP_PROBE_* bits (default SOP_PROBE_ALL) */
    unsigned flags;          /* SOP_COLLECT_* bits (default 0) */
    double rate_hz;          /* CPython stack sampling over the window (default 100; 0 = off) */
    /* When not NULL and *stop turns nonzero (a signal handler or another thread sets it), a
     * window in progress ends within about 50 ms: the collection finishes with what it saw
     * (duration_s the time observed). sop_watch sets its own when it is freed. */
    const volatile int *stop;
    void *reserved[4]; /* NULL: room for later options without changing the size */
} sop_collect_opts;

/* sop_collect_opts.flags: keep the window's samples as pictures (a flame graph and a timeline,
 * inline SVG) for sop_report_render_html. Costs 8 bytes per thread sample. */
#define SOP_COLLECT_PICTURES 0x1u

/* Fill opts with the defaults (duration 1 s, sampling at 100 Hz, every probe on, reserved
 * fields zero). */
SOP_API void sop_collect_opts_init(sop_collect_opts *opts);

/* Who a process is, from /proc/PID/stat (the probes' parser): enough for a tool to find ranks
 * under a launcher or tell a restarted target from the one it watched. */
typedef struct {
    int pid, ppid;
    char state;                     /* the leader's kernel letter: R S D Z T t I X */
    char comm[64];                  /* escaped nowhere: control characters as the kernel has them */
    unsigned long long start_ticks; /* starttime: clock ticks after boot */
    int alive; /* 1: a task of the thread group runs (a zombie leader whose threads run on is) */
} sop_process;
/* Read pid's /proc/PID/stat into *out. 0, SOP_ENOTARGET (gone or unreadable), SOP_EINVAL. */
SOP_API int sop_process_read(int pid, sop_process *out);
/* Environment variables of pid, by name, through the probes' environ reader: only the
 * allow-listed tuning names (thread pools, allocators, Python switches, devices, ranks and the
 * Slurm task: those evidence's `proc.env` may hold; never a credential) are looked up, any
 * other name reads as unset. For each of the n names, values + i * value_size gets its value
 * (cut to fit) or "" when unset. Returns how many were set, SOP_ENOTARGET (gone), SOP_EACCES
 * (not readable: another user's process), SOP_EINVAL. */
SOP_API int sop_process_env(int pid, const char *const *names, size_t n, char *values,
                            size_t value_size);

/* The container a process runs in, read from the host without calling any runtime's API: the
 * runtime and id its cgroup path names, and from the runtime's own state files (podman's
 * containers.json, an OCI bundle's config.json, docker's config.v2.json) its name and, where
 * the container carries Kubernetes' CRI annotations or labels, its pod. Fields are "" when not
 * known. State files are read under $SOP_HOST_ROOT, else /proc/1/root when sopctl runs in a
 * mount namespace of its own (a node agent with hostPID), else /. */
typedef struct {
    char runtime[16];        /* "podman", "docker", "containerd", "cri-o" */
    char id[128];            /* 64 hex digits (a containerd id may be any name) */
    char name[256];          /* the runtime's name for it */
    char pod[256];           /* Kubernetes: the pod's name, */
    char pod_namespace[256]; /* its namespace, */
    char pod_uid[40];        /* its UID (also from a kubepods cgroup path), */
    char container[256];     /* and the container's name in the pod spec */
    char source[512];        /* the state file the names came from */
} sop_container;
/* 1 and *out filled when pid runs in a container, 0 when not (*out cleared), SOP_ENOTARGET
 * (gone or its cgroup unreadable), SOP_EINVAL. */
SOP_API int sop_container_of(int pid, sop_container *out);
/* The processes of this host in the container named by `container` (its name, its id, or an
 * id's first 12 or more hex digits) or by `pod` ("NAMESPACE/NAME": every container of that
 * Kubernetes pod); exactly one of the two is given. Up to cap pids into pids, in pid order;
 * returns how many match (more than cap when cut), or SOP_EINVAL. Each container's state files
 * are read once per call. */
SOP_API int sop_container_pids(const char *container, const char *pod, int *pids, size_t cap);

/* Collect evidence about `pid` over opts->duration_s (blocking for that long). A pid that is
 * gone gives SOP_ENOTARGET, unless the kernel log holds an OOM kill of it: then *out is a
 * post-mortem (alive = false). What could not be read is listed in the evidence's `missing`.
 * *out is owned by the caller (sop_evidence_free). */
SOP_API int sop_collect(sop_engine *e, int pid, const sop_collect_opts *opts, sop_evidence **out);
/* Collect evidence about the calling process (sop_collect on getpid()). Its Python stacks are
 * read too when the library runs inside CPython (the calling thread shows the frame that called
 * into the library). Blocks the calling thread for opts->duration_s; from an asyncio loop,
 * call it in an executor (or use a watch) so the loop keeps running. */
SOP_API int sop_collect_self(sop_engine *e, const sop_collect_opts *opts, sop_evidence **out);

/* Sample the Python stacks of `pid` (a CPython process) and of its CPython descendants (e.g.
 * DataLoader workers, each its own root) for duration_s at rate_hz (0 = 100), and write them to
 * `path`: an SVG flame graph when the name ends in ".svg", else collapsed stacks, one
 * "frame;frame;frame count" line per stack. progress (may be NULL) is called about 4 times a
 * second with the fraction done. Returns 0, SOP_ENOTARGET, SOP_ENOTPYTHON, SOP_EACCES, SOP_EIO. */
typedef struct {
    long samples;        /* ticks taken */
    long missed;         /* ticks skipped or failed */
    long thread_samples; /* one per thread per tick: what the stack counts add up to */
    long stacks;         /* distinct stacks written */
    double self_cpu_ms;  /* CPU time spent sampling */
    double window_s;
    long samples_partial; /* thread samples whose stack was not verified complete (partial) */
} sop_record_stats;
SOP_API int sop_record(sop_engine *e, int pid, double duration_s, double rate_hz, const char *path,
                       void (*progress)(void *ctx, double done_frac), void *ctx,
                       sop_record_stats *stats);
/* sop_record with the output format and options: SOP_RECORD_BY_NAME picks by the name
 * (".svg", ".speedscope.json", ".html", else collapsed stacks). Idle samples (asleep without
 * the GIL, or waiting for a DataLoader batch) are left out of every format unless
 * SOP_RECORD_IDLE (sop_record leaves them out too). SOP_RECORD_TIMELINE makes an SVG the
 * timeline (a lane per thread over the window) instead of the flame graph. The SVG and the
 * HTML page are self-contained (no network); the flame graph zooms on click and searches. */
typedef enum {
    SOP_RECORD_BY_NAME = 0,
    SOP_RECORD_COLLAPSED,
    SOP_RECORD_SVG,
    SOP_RECORD_SPEEDSCOPE,
    SOP_RECORD_HTML
} sop_record_format;
#define SOP_RECORD_IDLE 0x1u
#define SOP_RECORD_TIMELINE 0x2u
SOP_API int sop_record_ex(sop_engine *e, int pid, double duration_s, double rate_hz,
                          const char *path, sop_record_format fmt, unsigned flags,
                          void (*progress)(void *ctx, double done_frac), void *ctx,
                          sop_record_stats *stats);
/* py-spy's `record` (sopctl run as `py-spy`, docs/py-spy.md): sample the Python stacks of `pid`
 * at rate_hz (0 = 100) and write `path` in one of py-spy's file formats, each thread sample's
 * frames named as py-spy names them: "func (file:line)", root first, the file from its top
 * package down ("torch/nn/modules/module.py"). duration_s > 0: that window; 0: attach and write
 * an empty profile; < 0: until stop returns nonzero or the target exits. stop (may be NULL) is
 * called once per tick (ctx its argument); the first call comes once the target is attached.
 * Samples of idle threads (asleep without the GIL) are left out unless SOP_PYSPY_IDLE. The file
 * is created as py-spy creates it (mode 0666 less the umask), so that a caller that ran it
 * through sudo can read it. Returns 0 (also when the target exited: what was sampled is
 * written), SOP_EINVAL, SOP_ENOTARGET, SOP_EACCES, SOP_ENOTPYTHON, SOP_EPYVERSION, SOP_EIO;
 * the detail in sop_last_error. */
typedef enum {
    SOP_PYSPY_FLAMEGRAPH = 0, /* an SVG flame graph (sop's renderer) */
    SOP_PYSPY_SPEEDSCOPE,     /* speedscope JSON: a sampled profile per thread */
    SOP_PYSPY_RAW,            /* folded stacks: "frame;frame;frame COUNT" lines */
    SOP_PYSPY_CHROMETRACE     /* Chrome trace events: a "B"/"E" pair per frame and thread */
} sop_pyspy_format;
/* flags: IDLE keeps the samples of idle threads; GIL keeps only those of the thread holding the
 * GIL; THREADS puts a "thread (TID): NAME" root frame on each stack; SUBPROCESSES also samples
 * the CPython descendants (looked for each second), under a root frame per process
 * (process PID:"CMDLINE"); NOLINENO names frames "func (file)"; FULL_FILENAMES keeps the files
 * as the code objects name them. */
#define SOP_PYSPY_IDLE 0x1u
#define SOP_PYSPY_GIL 0x2u
#define SOP_PYSPY_THREADS 0x4u
#define SOP_PYSPY_SUBPROCESSES 0x8u
#define SOP_PYSPY_NOLINENO 0x10u
#define SOP_PYSPY_FULL_FILENAMES 0x20u
SOP_API int sop_record_pyspy(sop_engine *e, int pid, double duration_s, double rate_hz,
                             const char *path, sop_pyspy_format fmt, unsigned flags,
                             int (*stop)(void *ctx), void *ctx, sop_record_stats *stats);
/* Parse a `sopctl evidence` JSON document. Not ours (no schema 1, no pid): SOP_EFORMAT. */
SOP_API int sop_evidence_from_json(sop_engine *e, const char *text, size_t len, sop_evidence **out);
/* Serialize as JSON (pretty when `pretty`); *out owned by the caller (sop_free). */
SOP_API int sop_evidence_to_json(const sop_evidence *ev, int pretty, char **out);
SOP_API void sop_evidence_free(sop_evidence *ev);

/* ---- stacks ---------------------------------------------------------------------------- */

#define SOP_DUMP_NATIVE 0x1u /* also unwind native stacks (stops each thread briefly) */
/* A thread whose stack cannot be verified complete while it runs is stopped briefly for the
 * read (docs/python-stacks.md); its pause is reported (pause_ms), like --native's. */
#define SOP_DUMP_EXACT 0x2u
/* Append every asyncio task of the process (the listing of sop_tasks, without the tree): text
 * after the stacks, JSON under "asyncio_tasks" (docs/asyncio.md). */
#define SOP_DUMP_TASKS 0x4u
/* With SOP_FORMAT_JSON: the document py-spy's `dump --json` prints (an array with one object per
 * thread, py-spy's field names; docs/py-spy.md) instead of the contract's. */
#define SOP_DUMP_PYSPY 0x8u

/* The Python stacks of `pid` (docs/contract.md, "Stacks"): JSON when fmt is SOP_FORMAT_JSON, else
 * py-spy-like text. Reads without stopping the target unless SOP_DUMP_NATIVE. `e` may be
 * NULL. Errors: SOP_ENOTPYTHON, SOP_ENOTARGET (gone), SOP_EACCES (memory not readable); on
 * those *out may still hold a document naming what is missing. *out is owned by the caller
 * (sop_free). */
SOP_API int sop_dump(sop_engine *e, int pid, unsigned flags, sop_format fmt, char **out);
/* The same written to fd as it is produced (ending in a newline): memory stays that of the read
 * and one thread's text, however many threads. Errors as sop_dump, and SOP_EWRITE when a write
 * to fd failed (what was written stays written). */
SOP_API int sop_dump_write(sop_engine *e, int pid, unsigned flags, sop_format fmt, int fd);

/* ---- heap census ----------------------------------------------------------------------- */

#define SOP_HEAP_STOP_TARGET                                                                       \
    0x1u /* stop the process for an exact census (ptrace; resumed on                               \
          * every path, the pause is reported) */

/* A census of the Python objects of `pid` tracked by its garbage collector, by type: count and
 * estimated bytes, the total, and the share of the anonymous memory they explain (docs/heap.md).
 * With duration_s > 0, a second census that much later and the growth per type. At most `top`
 * types per list (0: 20). JSON (the ev.python.heap shape plus pid) when fmt is
 * SOP_FORMAT_JSON, else text. Reads without stopping the target unless SOP_HEAP_STOP_TARGET;
 * a census the target's changes made inconsistent is marked partial ("complete": false).
 * Errors as sop_dump; *out may still name what is missing. *out owned by the caller (sop_free). */
SOP_API int sop_heap(sop_engine *e, int pid, unsigned flags, int top, double duration_s,
                     sop_format fmt, char **out);

/* ---- asyncio tasks ---------------------------------------------------------------------- */

#define SOP_TASKS_TREE 0x1u /* text: the tasks as the tree of who awaits whom; JSON: "tree" */

/* Every asyncio task of `pid` (CPython 3.8-3.15, C _asyncio.Task): name, state, the await
 * chain it is suspended in, what its innermost await waits on, and which task awaits which
 * (docs/asyncio.md). Read without stopping the target; a read the target's changes made
 * inconsistent is marked partial ("complete": false). JSON when fmt is SOP_FORMAT_JSON, else
 * text. Errors as sop_dump; *out may still name what is missing. *out owned by the caller. */
SOP_API int sop_tasks(sop_engine *e, int pid, unsigned flags, sop_format fmt, char **out);
/* The same written to fd as it is produced (ending in a newline), so that a process with many
 * tasks is never held as one string: memory stays that of the read and one task's text. Errors
 * as sop_tasks, and SOP_EWRITE when a write to fd failed (what was written stays written). */
SOP_API int sop_tasks_write(sop_engine *e, int pid, unsigned flags, sop_format fmt, int fd);

/* ---- evaluation and reports ------------------------------------------------------------ */

typedef struct sop_report sop_report;

/* Run every loaded rule over ev. A rule that fails or runs too long is a rule_errors entry in
 * the report, not a failure of this call. *out is owned by the caller (sop_report_free). */
SOP_API int sop_evaluate(sop_engine *e, const sop_evidence *ev, sop_report **out);
SOP_API void sop_report_free(sop_report *r);

/* Render in `lang` ("en" or "zh"; NULL = "en"). *out owned by the caller (sop_free).
 * Control characters from the target are escaped in every format. */
SOP_API int sop_report_render(const sop_report *r, sop_format fmt, const char *lang, char **out);
/* The same, with the evidence the report was made from (may be NULL): a format that draws the
 * window's pictures (SOP_FORMAT_PICTURES: html) takes them from ev. */
SOP_API int sop_report_render_with(const sop_report *r, const sop_evidence *ev, sop_format fmt,
                                   const char *lang, char **out);
/* The report as a person at a terminal reads it (what `sopctl run` prints on a TTY): the §9
 * verdict and a one-line list of findings first, then each finding's details wrapped to
 * width_cols columns (display width: CJK takes two), then cleared/unknown checks as counts.
 * flags: SOP_TERM_COLOR (severity in ANSI colour), SOP_TERM_ALL (list cleared/unknown too).
 * Control characters from the target are escaped. *out owned by the caller (sop_free). */
#define SOP_TERM_COLOR 0x1u
#define SOP_TERM_ALL 0x2u
SOP_API int sop_report_render_term(const sop_report *r, const char *lang, int width_cols,
                                   unsigned flags, char **out);
/* One self-contained HTML page (no external script, font or image; the report readable
 * without JavaScript): the §9 verdict, the findings table, cleared/unknown lists, and — when
 * ev was collected with SOP_COLLECT_PICTURES over a sampled window — the flame graph and the
 * timeline. ev may be NULL. *out owned by the caller (sop_free). */
SOP_API int sop_report_render_html(const sop_report *r, const sop_evidence *ev, const char *lang,
                                   char **out);
/* 1 when the report has a finding of severity warn or high, else 0. */
SOP_API int sop_report_has_problem(const sop_report *r);

/* The i-th finding (most severe first): its rule id and severity ("high", "warn", "info"),
 * borrowed from r. SOP_EINVAL when i >= the number of findings. */
SOP_API int sop_report_finding(const sop_report *r, size_t i, const char **id,
                               const char **severity);

/* One line for a log: "2 findings: asyncio.loop_blocked (warn), cpu.x (info) | top: <evidence
 * of the most severe finding>", or "no findings (N cleared, M unknown)". At most ~1 KiB,
 * control characters escaped. *out owned by the caller (sop_free). */
SOP_API int sop_report_summary(const sop_report *r, const char *lang, char **out);

/* Collect (pid; 0 = the calling process), evaluate and render in one call: what `sopctl run
 * --pid` does. *out is the rendered report (sop_free); *problem (may be NULL) gets
 * sop_report_has_problem. Errors as sop_collect / sop_evaluate, detail in sop_last_error. */
SOP_API int sop_diagnose(sop_engine *e, int pid, const sop_collect_opts *opts, sop_format fmt,
                         const char *lang, char **out, int *problem);

/* The report as OpenMetrics text (docs/metrics.md): per rule a gauge `sop_rule_hit` (1 hit, 0
 * cleared; labels rule, section, severity) and `sop_rule_unknown` / `sop_rule_error`, finding
 * counts, durations, and — from `ev`, the evidence the report was made from (may be NULL) —
 * key evidence gauges and `sop_last_window_timestamp_seconds`. The text has no closing
 * "# EOF" line so that a server can append it to its own exposition; end it with "# EOF\n"
 * when serving it alone as application/openmetrics-text (it is also valid Prometheus text
 * format 0.0.4, where the UNIT and EOF lines are comments). *out owned by the caller
 * (sop_free). */
SOP_API int sop_report_openmetrics(const sop_report *r, const sop_evidence *ev, char **out);

/* ---- watch: diagnosis from a thread of its own ----------------------------------------- */

/* A watch owns an engine and a thread. The thread diagnoses `pid` every interval and whenever
 * sop_watch_trigger asks, and hands each result to the callback. No signals are used. */
typedef struct sop_watch sop_watch;

typedef struct {
    int pid;                      /* the target watched */
    unsigned long long seq;       /* 1, 2, ... one per run */
    int on_demand;                /* 1: this run answers sop_watch_trigger; 0: periodic */
    int rc;                       /* 0, or the SOP_E* code of the collection or evaluation */
    const char *error;            /* the detail when rc != 0, else "" */
    const sop_evidence *evidence; /* NULL when the collection failed */
    const sop_report *report;     /* NULL when rc != 0 */
    double run_ms;                /* how long the run took, window included */
} sop_watch_event;

/* Called on the watch's thread. Everything in ev is borrowed for the call only: render or
 * serialize what you keep. The callback may call sop_watch_trigger, and may call
 * sop_watch_free on its own watch (the thread then ends after the callback returns). */
typedef void (*sop_watch_fn)(const sop_watch_event *ev, void *user);

typedef struct {
    int pid;                  /* > 0, or 0 for the calling process */
    double interval_s;        /* > 0: a run every interval_s (first after one interval);
                               * 0: runs only on sop_watch_trigger */
    sop_collect_opts collect; /* per run (sop_collect_opts_init defaults) */
    void *reserved[4];        /* NULL */
} sop_watch_config;

SOP_API void sop_watch_config_init(sop_watch_config *cfg);

/* Start a watch. `e` is an engine with rules loaded (and thresholds, site file set); the watch
 * takes it over, also on failure (it is freed then): do not use it afterwards. The callback
 * `fn` (with `user`) must be non-NULL. *out is owned by the caller (sop_watch_free); it is
 * set before the thread starts, so the callback may use it. Errors:
 * SOP_EINVAL, SOP_ENORULES (no rules in e), SOP_ENOMEM, SOP_EINTERNAL (no thread). */
SOP_API int sop_watch_new(sop_engine *e, const sop_watch_config *cfg, sop_watch_fn fn, void *user,
                          sop_watch **out);
/* Ask for a run now. Does not wait; triggers that arrive while one is pending are merged into
 * it. Safe from any thread, including the callback. */
SOP_API int sop_watch_trigger(sop_watch *w);
/* Number of runs handed to the callback so far (counted just before each call; any thread). */
SOP_API unsigned long long sop_watch_runs(const sop_watch *w);
/* The last successful run of the watch as sop_report_openmetrics renders it, plus
 * `sop_watch_runs_total` (runs so far) and `sop_watch_failed_runs_total`; no "# EOF". Before
 * the first successful run only those two. Safe from any thread, including the callback (where
 * it shows the run being handed over). *out owned by the caller (sop_free). */
SOP_API int sop_watch_openmetrics(sop_watch *w, char **out);
/* Stop the watch: waits for a run in progress to finish (at most its window plus the rules),
 * joins the thread, frees the engine. Accepts NULL.
 * fork(): the watch's thread stays in the parent. In a child the handle is inert:
 * sop_watch_trigger and sop_watch_openmetrics return SOP_EINVAL, sop_watch_free returns at
 * once (it joins nothing and frees nothing: that memory is the parent's copy), so a child
 * that exits with watches "running" never waits on a thread it does not have. */
SOP_API void sop_watch_free(sop_watch *w);

/* ---- merge: one job-level report from the reports of many ranks ------------------------ */

/* A merge gathers per-rank reports (`sopctl run --format json`, target.rank/local_rank/
 * world_size/node/job_id from `--ranks`) and renders one job-level report: which ranks share a
 * finding, findings on every rank (job-wide), ranks whose key figures stand out from the job's
 * median by the median absolute deviation with the findings that explain them, the straggler,
 * missing nodes/ranks and reports of mismatched versions (docs/ranks.md). */
typedef struct sop_merge sop_merge;

/* *out is owned by the caller (sop_merge_free). */
SOP_API int sop_merge_new(sop_merge **out);
SOP_API void sop_merge_free(sop_merge *m);
/* Add the reports in text: one JSON report, or several one after another (JSON lines or
 * concatenated). `source` (a file name, a node) names them in the output. A part that is not a
 * report is listed as missing with the reason and SOP_EFORMAT is returned; the reports before
 * and after it are kept. The text is copied. Bounded: more than 16384 reports, 20000 JSON
 * values in all, 1024 distinct finding ids over the job or 1024 findings in one report (or
 * 64 levels of nesting in a value) is SOP_EINVAL: the merge is refused, not slow. */
SOP_API int sop_merge_add_json(sop_merge *m, const char *source, const char *text, size_t len);
/* List a node (or rank, or source) that gave no report, and why (both copied). */
SOP_API int sop_merge_add_missing(sop_merge *m, const char *node, const char *reason);
/* Number of reports merged so far. */
SOP_API size_t sop_merge_count(const sop_merge *m);
/* Render the job-level report (a format with SOP_FORMAT_MERGE: md, json or text; lang
 * "en"/"zh"). *problem (may be NULL) gets 1 when a rank has a warn/high finding or a node or rank
 * is missing. *out owned by the caller (sop_free). Every string taken from a report is escaped for
 * the format. */
SOP_API int sop_merge_render(const sop_merge *m, sop_format fmt, const char *lang, char **out,
                             int *problem);

#ifdef __cplusplus
}
#endif
#endif
