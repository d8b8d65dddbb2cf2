/* proc.h — what the process probes read from /proc/PID: stat, status, smaps_rollup, io,
 * limits, environ (allow-listed names only), cmdline, maps (notable libraries), fds, task/
 * (threads), schedstat, affinity, and the descendants. One file per source under probes/proc_*.c;
 * each has a pure parser (text in, struct out) and a reader taking a /proc/PID dir fd.
 * Integers are SOP_NA and doubles NaN when not measured. Depends on libc only. */
#ifndef SOP_PROC_H
#define SOP_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "missing.h"
#include "procfs.h"
#include "wait_class.h"

#define SOP_COMM_MAX 64
#define SOP_CMDLINE_MAX 1024
#define SOP_PATH_MAX 512

/* /proc/PID/stat (also task/TID/stat). */
typedef struct {
    int pid, ppid;
    char comm[SOP_COMM_MAX];
    char state; /* kernel letter: R S D Z T t I X; 0 when unread */
    int64_t minflt, majflt;
    int64_t utime_ticks, stime_ticks;
    int64_t cutime_ticks, cstime_ticks; /* children that exited and were waited for */
    int64_t priority, nice, num_threads;
    int64_t starttime_ticks;
    int64_t vsize_bytes, rss_pages;
    int64_t processor;
    int64_t blkio_ticks; /* delayacct_blkio_ticks */
} sop_stat;

/* /proc/PID/status (kB unless named). */
typedef struct {
    int64_t vm_peak_kb, vm_size_kb, vm_lck_kb, vm_pin_kb, vm_hwm_kb, vm_rss_kb;
    int64_t rss_anon_kb, rss_file_kb, rss_shmem_kb, vm_swap_kb;
    int64_t threads;
    int64_t voluntary_ctxt_switches, nonvoluntary_ctxt_switches;
    char cpus_allowed_list[256];
    int64_t cpus_allowed_count;
    int64_t uid; /* real uid */
} sop_status;

/* /proc/PID/smaps_rollup (kB). */
typedef struct {
    int64_t rss_kb, pss_kb, pss_anon_kb, pss_file_kb, pss_shmem_kb;
    int64_t shared_clean_kb, shared_dirty_kb, private_clean_kb, private_dirty_kb;
    int64_t anonymous_kb, swap_kb, locked_kb;
} sop_smaps;

/* /proc/PID/io. */
typedef struct {
    int64_t rchar, wchar, syscr, syscw, read_bytes, write_bytes, cancelled_write_bytes;
} sop_io;

/* /proc/PID/limits (soft values; -1 = unlimited). */
typedef struct {
    int64_t nofile_soft, nofile_hard, memlock_bytes, as_bytes, nproc;
} sop_limits;

/* /proc/PID/schedstat: time on CPU, time waiting on a run queue, timeslices. */
typedef struct {
    int64_t run_ns, wait_ns, timeslices;
} sop_schedstat;

/* Allow-listed environment variables (names in probes/proc_environ.c). Values kept verbatim. */
#define SOP_ENV_MAX 48
typedef struct {
    char name[40];
    char value[256];
} sop_env_var;
typedef struct {
    sop_env_var vars[SOP_ENV_MAX];
    size_t n;
} sop_env;

/* Notable libraries mapped (from /proc/PID/maps). */
#define SOP_LIBS_MAX 48
typedef struct {
    char kind[16]; /* blas openmp allocator python torch numpy uvloop tokenizers cuda */
    char name[64]; /* short name, e.g. "libopenblas", "libjemalloc" */
    char path[SOP_PATH_MAX];
} sop_lib;
typedef struct {
    sop_lib libs[SOP_LIBS_MAX];
    size_t n;
} sop_libs;

/* Files mapped into the address space (probes/proc_mapped.c), summed per path: data files,
 * shared memory (/dev/shm, memfd, SysV) and libraries; the largest non-library ones kept.
 * rss_kb/pss_kb only when read from smaps (`resident`); SOP_NA otherwise. */
#define SOP_MAPPED_MAX 16
typedef struct {
    char path[SOP_PATH_MAX];
    char kind[8]; /* data shmem lib */
    int64_t size_kb, rss_kb, pss_kb, swap_kb, vmas;
    int64_t rss_growth_kb; /* resident kB gained over the window (signed; sop__mapped_growth) */
} sop_mapped_file;
typedef struct {
    sop_mapped_file files[SOP_MAPPED_MAX];
    size_t n;
    int64_t files_total; /* data + shmem paths seen */
    int64_t data_size_kb, data_rss_kb, shmem_size_kb, shmem_rss_kb, lib_size_kb, lib_rss_kb;
    bool resident;  /* from smaps: rss_kb/pss_kb filled */
    bool truncated; /* more paths than kept, or the text was cut */
} sop_mapped;

/* Rates over the window (NaN when duration is 0 or a side is missing). */
typedef struct {
    double cpu_pct; /* 100 = one core */
    double majflt_per_s, rss_growth_kb_per_s;
    double minflt_per_s; /* minor faults: pages first touched (new memory being filled) */
    double anon_growth_kb_per_s, file_growth_kb_per_s, shmem_growth_kb_per_s; /* signed */
    double rchar_per_s, wchar_per_s, syscr_per_s, syscw_per_s;
    double read_bytes_per_s, write_bytes_per_s;
    double mean_read_bytes, mean_write_bytes; /* rchar/syscr over the window */
    double sched_wait_ms_per_s;
    double reaped_cpu_pct; /* CPU of children reaped in the window (cutime + cstime) */
    double threads_growth_per_s, fds_growth_per_s; /* signed: end minus start over the window */
    int64_t threads_start, fds_start;              /* at the window's start; SOP_NA unread */
} sop_proc_rates;

/* glibc malloc's non-main arenas as seen in /proc/PID/maps: each arena lives in heaps that are
 * 64 MiB-aligned anonymous reservations (read-write part in use, PROT_NONE rest). */
typedef struct {
    int64_t heaps;       /* 64 MiB heap reservations (an arena that outgrew one has several) */
    int64_t rw_kb;       /* their read-write part: committed arena memory, >= its RSS */
    int64_t reserved_kb; /* address space they reserve */
} sop_malloc_heaps;

typedef struct {
    int pid;
    char cmdline[SOP_CMDLINE_MAX]; /* NUL separators replaced by spaces; may hold any byte */
    char exe[SOP_PATH_MAX];
    char cwd[SOP_PATH_MAX]; /* its working directory ("" when unreadable) */
    sop_stat stat;
    sop_status status;
    sop_smaps smaps;
    sop_io io;
    sop_limits limits;
    sop_schedstat sched;
    sop_env env;
    sop_libs libs;
    sop_malloc_heaps heaps; /* from maps (probes/alloc.c) */
    sop_mapped mapped;      /* from maps, resident figures from smaps when big (proc_mapped.c) */
    int64_t fds;
    double start_time_s; /* epoch seconds */
    sop_proc_rates rate;
    bool have_stat, have_status, have_smaps, have_io, have_limits, have_sched, have_env, have_maps;
    bool have_mapped;
} sop_proc;

typedef struct {
    int tid;
    char name[SOP_COMM_MAX];
    sop_stat stat;
    sop_schedstat sched;
    int64_t voluntary_ctxt_switches, nonvoluntary_ctxt_switches;
    double cpu_pct;      /* window */
    double sys_pct;      /* window: the part of cpu_pct in the kernel (stime), 100 = one core */
    double majflt_per_s; /* window: major page faults (reads of mapped files from storage) */
    sop_io io;           /* task/TID/io: this thread's own IO */
    bool have_io;
    double read_bytes_per_s, rchar_per_s, syscr_per_s; /* window, from io */
    double wait_pct; /* window: time runnable but waiting for a CPU (run queue), % of the window */
    sop_wait_class wait; /* asleep: what its syscall waits on (task/TID/syscall); NONE running */
} sop_thread;

typedef struct {
    sop_thread *items;
    size_t n;
} sop_thread_list;

typedef struct {
    int pid, ppid, depth;
    char cmdline[SOP_CMDLINE_MAX];
    sop_stat stat;
    sop_status status;
    sop_smaps smaps;
    sop_io io;
    sop_env env;
    double cpu_pct, read_bytes_per_s, rchar_per_s;
    double start_time_s; /* epoch seconds (stat starttime + boot time); NaN if unread */
    bool have_smaps;
} sop_child;

typedef struct {
    sop_child *items;
    size_t n;
    /* the target's own children, every one (not bounded by SOP_CHILDREN_MAX: at most
     * SOP_CENSUS_MAX), and of those the zombies (exited, not waited for); SOP_NA unread */
    int64_t direct, zombies;
    int64_t zombies_start;       /* at the window's start (sop__children_rates); SOP_NA unread */
    double zombies_growth_per_s; /* window, signed; NaN unread */
} sop_child_list;
#define SOP_CENSUS_MAX 65536

/* ---- pure parsers: text (NUL-terminated) in, struct out; 0 or -EINVAL/-ENODATA ---- */
int sop__parse_stat(const char *text, sop_stat *out);
int sop__parse_status(const char *text, sop_status *out);
int sop__parse_smaps_rollup(const char *text, sop_smaps *out);
int sop__parse_io(const char *text, sop_io *out);
int sop__parse_limits(const char *text, sop_limits *out);
int sop__parse_schedstat(const char *text, sop_schedstat *out);
/* Read and parse the schedstat file `path` under dirfd ("schedstat", "task/TID/schedstat"):
 * the one reader of these files. 0; -errno of the read; -ENODATA when empty; -EINVAL when
 * unparsable. *out is all SOP_NA unless 0. */
int sop__read_schedstat_at(int dirfd, const char *path, sop_schedstat *out);
/* The most of /proc/PID/environ read (a collection's process, sop_process_env). */
#define SOP_ENVIRON_MAX_BYTES (1u << 20)
/* environ is NUL-separated: give the length. Only allow-listed names are kept. */
int sop__parse_environ(const char *buf, size_t len, sop_env *out);
bool sop__env_allowed(const char *name);
/* One allow-listed variable of environ text, with no cap on how many others there are: true
 * and its value (cut to cap) when set; false and "" when unset, cut off or not allow-listed. */
bool sop__environ_get(const char *buf, size_t len, const char *name, char *out, size_t cap);
int sop__parse_cmdline(const char *buf, size_t len, char *out, size_t cap);
int sop__parse_maps(const char *text, sop_libs *out);
/* maps or smaps text -> mapped files (resident figures when smaps). 0, -ENODATA (no file
 * mapping), -ENOMEM. */
int sop__parse_mapped(const char *text, sop_mapped *out);
void sop__mapped_init(sop_mapped *out);
/* Address space of data and shared-memory file mappings (kB); decides whether smaps is read. */
int64_t sop__mapped_big_kb(const sop_mapped *m);
/* Per file kept in both snapshots (by path, both from smaps): now's rss_growth_kb = its resident
 * kB at the end minus at the start of the window, the file whose pages were faulted in; SOP_NA
 * when either side has no resident figure or the file was not among the kept ones. */
void sop__mapped_growth(sop_mapped *now, const sop_mapped *before);

/* ---- readers: proc_dirfd is an open /proc/PID (or fixture) directory ---- */
/* Entries of proc_dirfd/fd (bounded), or -errno. */
int64_t sop__proc_count_fds(int proc_dirfd);

#define SOP_FD_SCAN_LINKS 512 /* new descriptors whose link target is read */
#define SOP_FD_SCAN_PATHS 8   /* distinct file paths kept among them */
#define SOP_FD_SET_BITS 65536 /* descriptor numbers a set holds (higher ones always look new) */

/* Descriptor numbers (a bitmap). */
typedef struct {
    uint64_t w[SOP_FD_SET_BITS / 64];
} sop_fd_set;

/* One listing of proc_dirfd/fd: the count, the highest number, and of the descriptors not in
 * `before` (a number reused since counts as old), how many, and what the first
 * SOP_FD_SCAN_LINKS of them are. */
typedef struct {
    int64_t count, max_fd, fresh;
    int64_t sockets, pipes, files, other; /* of those read */
    struct {
        char path[128];
        int64_t count;
    } paths[SOP_FD_SCAN_PATHS];
    size_t npaths;
} sop_fd_scan;

/* Lists proc_dirfd/fd: every number into *record (when not NULL), the ones not in *before
 * (when not NULL) described. 0, or -errno (the directory unreadable). */
int sop__proc_fd_scan(int proc_dirfd, sop_fd_set *record, const sop_fd_set *before,
                      sop_fd_scan *out);
/* The numeric entries of dirfd/path (at most max), malloc'd into *out (caller frees, NULL when
 * none). Returns the count or -errno. */
long sop__list_numeric_at(int dirfd, const char *path, int **out, size_t max);
/* System boot time (btime of /proc/stat), epoch seconds; read once and cached. NaN if unread. */
double sop__proc_btime_s(void);
/* Clock ticks per second of the stat times (sysconf(_SC_CLK_TCK)). */
double sop__proc_ticks_per_s(void);
/* ---- readers by path under a proc root ("/proc" or a fixture tree; probes/proc_ident.c) ---- */
/* comm of pid (tid 0) or of its task tid, newline cut; "" and -errno / -ENODATA when unread. */
int sop__comm_read(const char *proc_root, int pid, int tid, char *out, size_t cap);
/* cmdline as one line (sop__parse_cmdline), cut to cap; "" and -errno / -ENODATA when unread. */
int sop__cmdline_read(const char *proc_root, int pid, char *out, size_t cap);
/* /proc/PID/stat (tid 0) or /proc/PID/task/TID/stat into *out (sop__parse_stat). 0, or -errno
 * / -ENODATA / -EINVAL when unread. */
int sop__stat_read(const char *proc_root, int pid, int tid, sop_stat *out);
/* When pid started, epoch seconds (stat starttime + boot time); NaN when unread. */
double sop__start_time_read(const char *proc_root, int pid);
/* /proc/PID/io into *out (SOP_NA where absent). 0, or -errno / -ENODATA when unread. */
int sop__io_read(const char *proc_root, int pid, sop_io *out);
#define SOP_THREADS_MAX 16384
/* Everything about one process; failures go to `missing`. Returns 0, or -ENOENT/-ESRCH when
 * the process is gone, -EACCES when nothing at all could be read. */
int sop__proc_collect(int proc_dirfd, int pid, sop_proc *out, sop_missing *missing);
/* The same, handing the maps text it read to *maps (malloc'd, the caller frees; NULL when
 * unread): the collection's other readers of maps (the CPython probe, the asyncio check) take
 * it instead of reading the file again (3 ms a read for a process with torch loaded). */
int sop__proc_collect_maps(int proc_dirfd, int pid, sop_proc *out, char **maps,
                           sop_missing *missing);
/* All threads under task/. The list is malloc'd; free with sop__thread_list_free. */
int sop__threads_collect(int proc_dirfd, sop_thread_list *out, sop_missing *missing);
void sop__thread_list_free(sop_thread_list *l);
/* All descendants of pid (bounded: SOP_CHILDREN_MAX, depth 4) via /proc/PID/task/TID/children,
 * with their memory. proc_root_fd is an open /proc. */
#define SOP_CHILDREN_MAX 256
int sop__children_collect(int proc_root_fd, int pid, sop_child_list *out, sop_missing *missing);
/* The same; smaps false leaves out each one's smaps_rollup (a page-table walk, milliseconds for a
 * worker with torch loaded): the first snapshot of a window, whose memory figures nothing reads. */
int sop__children_collect_ex(int proc_root_fd, int pid, bool smaps, sop_child_list *out,
                             sop_missing *missing);
/* The direct children of pid (every thread's /proc/PID/task/TID/children, under the proc_root
 * path), at most max, into out: how many, or -errno when its tasks are not listable. */
long sop__proc_child_pids(const char *proc_root, int pid, int *out, long max);
void sop__child_list_free(sop_child_list *l);
/* Only the pids (and parents) of pid's descendants, the same walk without reading them: at
 * most cap into pids/ppids. Returns the count or -errno (the target gone: -ESRCH). */
long sop__descendants(int proc_root_fd, int pid, int *pids, int *ppids, size_t cap,
                      sop_missing *missing);
/* Read one process (stat, status, smaps_rollup, io, cmdline, allow-listed environ) into *c as
 * a child at `depth` of `ppid`. Returns false when it is gone. proc_root_fd is an open /proc. */
bool sop__child_read(int proc_root_fd, int pid, int ppid, int depth, sop_child *c,
                     sop_missing *missing);
/* The target's parent (*parent, *have_parent) and its other children (its siblings: ranks of a
 * launcher, workers of one pool), bounded by SOP_SIBLINGS_MAX; nothing when the parent is
 * pid 0/1/2 (init's children are every daemon, not a family). proc_root_fd is an open /proc. */
#define SOP_SIBLINGS_MAX 64
int sop__siblings_collect(int proc_root_fd, int pid, int ppid, sop_child *parent, bool *have_parent,
                          sop_child_list *siblings, sop_missing *missing);

/* ---- window: fill rates in `now` from `before`, `secs` apart ---- */
void sop__proc_rates(sop_proc *now, const sop_proc *before, double secs, double ticks_per_s);
void sop__threads_rates(sop_thread_list *now, const sop_thread_list *before, double secs,
                        double ticks_per_s);
void sop__children_rates(sop_child_list *now, const sop_child_list *before, double secs,
                         double ticks_per_s);

#endif
