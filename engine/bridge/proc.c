/* proc.c (bridge) — adds `proc`, `threads`, `children`, `parent` and `siblings` to the ev tree
 * from the process probes' structs. Their keys are the tables below (sop__evk_proc,
 * sop__evk_threads, sop__evk_children: children[], parent and siblings[] share one shape), from
 * which docs/evidence.md is generated; a row that is not a plain field (a derived figure, an
 * object, an array) names its own writer (SOP_EVK_W), called where the walk reaches it, so no
 * key is compared to choose what to write. The H rows left are written elsewhere: the zombie
 * counts by sop__bridge_proc below, proc.numa by engine/collect/collect_numa.c. Absent values stay
 * absent; text from the target goes through sop__bridge_text. Depends on engine/core/value.h,
 * probes/proc.h, schema.h. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "bridge.h"
#include "schema.h"

/* The writers of the rows that are not plain fields (defined below the tables): proc's get
 * the sop_proc as base and a proc_ctx (now, ticks per second) as ctx; threads[]' a sop_thread
 * and a thread_ctx; children[]' a sop_child and a child_ctx. */
static void w_pid(sop_value *o, const char *name, const void *base, void *ctx);
static void w_ppid(sop_value *o, const char *name, const void *base, void *ctx);
static void w_state(sop_value *o, const char *name, const void *base, void *ctx);
static void w_state_name(sop_value *o, const char *name, const void *base, void *ctx);
static void w_utime_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_stime_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_reaped_cpu_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_threads(sop_value *o, const char *name, const void *base, void *ctx);
static void w_age_s(sop_value *o, const char *name, const void *base, void *ctx);
static void w_smaps(sop_value *o, const char *name, const void *base, void *ctx);
static void w_private_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_shared_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_mem(sop_value *o, const char *name, const void *base, void *ctx);
static void w_mapped_resident(sop_value *o, const char *name, const void *base, void *ctx);
static void w_mapped_truncated(sop_value *o, const char *name, const void *base, void *ctx);
static void w_mapped(sop_value *o, const char *name, const void *base, void *ctx);
static void w_sched(sop_value *o, const char *name, const void *base, void *ctx);
static void w_sched_run_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_sched_wait_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_io(sop_value *o, const char *name, const void *base, void *ctx);
static void w_memlock_limit_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_as_limit_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_affinity(sop_value *o, const char *name, const void *base, void *ctx);
static void w_env(sop_value *o, const char *name, const void *base, void *ctx);
static void w_libs(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_tid(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_state(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_age_s(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_wait(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_utime_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_stime_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_run_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_wait_ms(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_pid(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_ppid(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_depth(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_state(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_threads(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_age_s(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_private_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_shared_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_swap_kb(sop_value *o, const char *name, const void *base, void *ctx);
static void w_c_env(sop_value *o, const char *name, const void *base, void *ctx);

#define H SOP_EVK_H
#define W SOP_EVK_W
#define I(k, f, u, d) SOP_EVK_I(k, sop_proc, f, u, d)
#define D(k, f, u, d) SOP_EVK_D(k, sop_proc, f, u, d)
#define T(k, f, d) SOP_EVK_T(k, sop_proc, f, d)
const sop_evk sop__evk_proc[] = {
    W("pid", SOP_EVK_INT, w_pid, "", "target pid"),
    W("ppid", SOP_EVK_INT, w_ppid, "", "parent pid (stat)"),
    T("comm", stat.comm, "task name (stat)"),
    W("state", SOP_EVK_TEXT, w_state, "", "one letter (stat): the notes below"),
    W("state_name", SOP_EVK_TEXT, w_state_name, "",
      "its name: \"running\", \"sleeping\", \"disk sleep\", ..."),
    I("nice", stat.nice, "", "stat"),
    I("priority", stat.priority, "", "stat"),
    W("utime_ms", SOP_EVK_INT, w_utime_ms, "ms", "user CPU time (stat utime)"),
    W("stime_ms", SOP_EVK_INT, w_stime_ms, "ms", "system CPU time (stat stime)"),
    W("reaped_cpu_ms", SOP_EVK_INT, w_reaped_cpu_ms, "ms",
      "cutime + cstime: CPU of children that exited and were waited for"),
    I("minflt", stat.minflt, "", "minor page faults since start"),
    I("majflt", stat.majflt, "", "major page faults since start"),
    T("cmdline", cmdline, "command line, arguments separated by spaces"),
    T("exe", exe, "the executable's path"),
    T("cwd", cwd, "working directory: a root of the program's own code"),
    W("threads", SOP_EVK_INT, w_threads, "", "status Threads (else stat num_threads)"),
    D("start_time_s", start_time_s, "s", "epoch seconds (stat starttime + boot time)"),
    W("age_s", SOP_EVK_NUM, w_age_s, "s", "at collected_at"),
    I("vm_size_kb", status.vm_size_kb, "kB", "status VmSize"),
    I("vm_peak_kb", status.vm_peak_kb, "kB", "VmPeak"),
    I("rss_kb", status.vm_rss_kb, "kB", "VmRSS"),
    I("vm_hwm_kb", status.vm_hwm_kb, "kB", "VmHWM"),
    I("anon_kb", status.rss_anon_kb, "kB", "RssAnon"),
    I("file_kb", status.rss_file_kb, "kB", "RssFile"),
    I("shmem_kb", status.rss_shmem_kb, "kB", "RssShmem"),
    I("swap_kb", status.vm_swap_kb, "kB", "VmSwap"),
    I("vm_lck_kb", status.vm_lck_kb, "kB", "VmLck"),
    I("vm_pin_kb", status.vm_pin_kb, "kB", "VmPin"),
    I("voluntary_ctxt_switches", status.voluntary_ctxt_switches, "", "status"),
    I("nonvoluntary_ctxt_switches", status.nonvoluntary_ctxt_switches, "", "status"),
    W("smaps", SOP_EVK_OBJ, w_smaps, "", "/proc/PID/smaps_rollup, only when it was read"),
    I("smaps.rss_kb", smaps.rss_kb, "kB", "Rss"),
    I("smaps.pss_kb", smaps.pss_kb, "kB", "Pss"),
    I("smaps.pss_anon_kb", smaps.pss_anon_kb, "kB", "Pss_Anon"),
    I("smaps.pss_file_kb", smaps.pss_file_kb, "kB", "Pss_File"),
    I("smaps.pss_shmem_kb", smaps.pss_shmem_kb, "kB", "Pss_Shmem"),
    I("smaps.shared_clean_kb", smaps.shared_clean_kb, "kB", "Shared_Clean"),
    I("smaps.shared_dirty_kb", smaps.shared_dirty_kb, "kB", "Shared_Dirty"),
    I("smaps.private_clean_kb", smaps.private_clean_kb, "kB", "Private_Clean"),
    I("smaps.private_dirty_kb", smaps.private_dirty_kb, "kB", "Private_Dirty"),
    I("smaps.anonymous_kb", smaps.anonymous_kb, "kB", "Anonymous"),
    I("smaps.swap_kb", smaps.swap_kb, "kB", "Swap"),
    I("smaps.locked_kb", smaps.locked_kb, "kB", "Locked"),
    W("private_kb", SOP_EVK_INT, w_private_kb, "kB",
      "private clean + dirty (smaps_rollup, only when read)"),
    W("shared_kb", SOP_EVK_INT, w_shared_kb, "kB",
      "shared clean + dirty (smaps_rollup, only when read)"),
    W("mem", SOP_EVK_OBJ, w_mem, "", "memory by kind: the note below"),
    I("mem.rss_kb", status.vm_rss_kb, "kB", "status VmRSS"),
    I("mem.anon_kb", status.rss_anon_kb, "kB", "status RssAnon"),
    I("mem.file_kb", status.rss_file_kb, "kB", "status RssFile"),
    I("mem.shmem_kb", status.rss_shmem_kb, "kB", "status RssShmem"),
    I("mem.swap_kb", status.vm_swap_kb, "kB", "status VmSwap"),
    I("mem.pss_anon_kb", smaps.pss_anon_kb, "kB", "smaps_rollup, only when read"),
    I("mem.pss_file_kb", smaps.pss_file_kb, "kB", "smaps_rollup, only when read"),
    I("mem.pss_shmem_kb", smaps.pss_shmem_kb, "kB", "smaps_rollup, only when read"),
    D("mem.anon_growth_kb_per_s", rate.anon_growth_kb_per_s, "kB/s", "over the window, signed"),
    D("mem.file_growth_kb_per_s", rate.file_growth_kb_per_s, "kB/s", "over the window, signed"),
    D("mem.shmem_growth_kb_per_s", rate.shmem_growth_kb_per_s, "kB/s", "over the window, signed"),
    I("mem.mapped_data_size_kb", mapped.data_size_kb, "kB",
      "data file mappings (maps); the mapped_* keys only when maps was read"),
    I("mem.mapped_data_rss_kb", mapped.data_rss_kb, "kB", "only when smaps was read"),
    I("mem.mapped_shmem_size_kb", mapped.shmem_size_kb, "kB", "shared-memory file mappings"),
    I("mem.mapped_shmem_rss_kb", mapped.shmem_rss_kb, "kB", "only when smaps was read"),
    I("mem.mapped_lib_size_kb", mapped.lib_size_kb, "kB", "libraries and executables"),
    I("mem.mapped_lib_rss_kb", mapped.lib_rss_kb, "kB", "only when smaps was read"),
    I("mem.mapped_files_total", mapped.files_total, "", "data + shmem paths"),
    W("mem.mapped_resident", SOP_EVK_BOOL, w_mapped_resident, "",
      "true: the resident figures are from smaps"),
    W("mem.mapped_truncated", SOP_EVK_BOOL, w_mapped_truncated, "",
      "true: more paths than kept, or the text was cut"),
    W("mem.mapped", SOP_EVK_ARR, w_mapped, "",
      "the files mapped, summed per path, most resident first, at most 16: the note below"),
    SOP_EVK_T("mem.mapped[].path", sop_mapped_file, path, "the file"),
    SOP_EVK_S("mem.mapped[].kind", sop_mapped_file, kind, "\"data\" or \"shmem\""),
    SOP_EVK_I("mem.mapped[].size_kb", sop_mapped_file, size_kb, "kB", "address space (maps)"),
    SOP_EVK_I("mem.mapped[].rss_kb", sop_mapped_file, rss_kb, "kB", "resident (smaps)"),
    SOP_EVK_I("mem.mapped[].pss_kb", sop_mapped_file, pss_kb, "kB", "smaps"),
    SOP_EVK_I("mem.mapped[].swap_kb", sop_mapped_file, swap_kb, "kB", "smaps"),
    SOP_EVK_I("mem.mapped[].vmas", sop_mapped_file, vmas, "", "mappings of the file"),
    SOP_EVK_I("mem.mapped[].rss_growth_kb", sop_mapped_file, rss_growth_kb, "kB",
              "signed: resident kB at the window's end minus at its start, from smaps at both; "
              "absent when either side had no resident figure or the file was not among the 16 "
              "kept at the start"),
    D("cpu_pct", rate.cpu_pct, "%", "window, 100 = one core"),
    D("majflt_per_s", rate.majflt_per_s, "1/s", "window"),
    D("minflt_per_s", rate.minflt_per_s, "1/s",
      "window: minor faults, pages first touched (x page size: new memory being filled)"),
    D("reaped_cpu_pct", rate.reaped_cpu_pct, "%",
      "window: CPU of children reaped in it, 100 = one core"),
    D("rss_growth_kb_per_s", rate.rss_growth_kb_per_s, "kB/s", "window"),
    I("threads_start", rate.threads_start, "", "threads at the window's start"),
    H("children_direct", SOP_EVK_INT, "",
      "its own children, every one (children[] holds at most 256 descendants)"),
    H("zombies", SOP_EVK_INT, "", "of those, zombies: exited, not waited for (wait()) by it"),
    H("zombies_start", SOP_EVK_INT, "", "zombies at the window's start"),
    H("zombies_growth_per_s", SOP_EVK_NUM, "1/s", "window, signed"),
    D("threads_growth_per_s", rate.threads_growth_per_s, "1/s",
      "window, signed: threads at its end minus at its start"),
    I("fds_start", rate.fds_start, "", "open file descriptors at the window's start"),
    D("fds_growth_per_s", rate.fds_growth_per_s, "1/s", "window, signed"),
    W("sched", SOP_EVK_OBJ, w_sched, "", "/proc/PID/schedstat, only when it was read"),
    W("sched.run_ms", SOP_EVK_INT, w_sched_run_ms, "ms", "time on a CPU"),
    W("sched.wait_ms", SOP_EVK_INT, w_sched_wait_ms, "ms", "time runnable, waiting for a CPU"),
    I("sched.timeslices", sched.timeslices, "", "times it ran"),
    D("sched.wait_per_s_ms", rate.sched_wait_ms_per_s, "ms/s", "wait over the window"),
    W("io", SOP_EVK_OBJ, w_io, "", "/proc/PID/io, only when it was read"),
    I("io.rchar", io.rchar, "bytes", "through read() and kin"),
    I("io.wchar", io.wchar, "bytes", "through write() and kin"),
    I("io.syscr", io.syscr, "", "read calls"),
    I("io.syscw", io.syscw, "", "write calls"),
    I("io.read_bytes", io.read_bytes, "bytes", "from storage"),
    I("io.write_bytes", io.write_bytes, "bytes", "to storage"),
    I("io.cancelled_write_bytes", io.cancelled_write_bytes, "bytes", ""),
    D("io.rchar_per_s", rate.rchar_per_s, "bytes/s", "window"),
    D("io.wchar_per_s", rate.wchar_per_s, "bytes/s", "window"),
    D("io.syscr_per_s", rate.syscr_per_s, "1/s", "window"),
    D("io.syscw_per_s", rate.syscw_per_s, "1/s", "window"),
    D("io.read_bytes_per_s", rate.read_bytes_per_s, "bytes/s", "window"),
    D("io.write_bytes_per_s", rate.write_bytes_per_s, "bytes/s", "window"),
    D("io.mean_read_bytes", rate.mean_read_bytes, "bytes", "rchar / syscr over the window"),
    D("io.mean_write_bytes", rate.mean_write_bytes, "bytes", "wchar / syscw over the window"),
    I("fds", fds, "", "open file descriptors"),
    I("fd_limit", limits.nofile_soft, "", "open files, soft (limits; -1 unlimited)"),
    I("fd_limit_hard", limits.nofile_hard, "", "open files, hard"),
    W("memlock_limit_kb", SOP_EVK_INT, w_memlock_limit_kb, "kB", "locked memory (-1 unlimited)"),
    W("as_limit_kb", SOP_EVK_INT, w_as_limit_kb, "kB", "address space (-1 unlimited)"),
    I("nproc_limit", limits.nproc, "", "processes (-1 unlimited)"),
    W("affinity", SOP_EVK_OBJ, w_affinity, "", "the CPUs it may run on (status Cpus_allowed_list)"),
    T("affinity.cpus", status.cpus_allowed_list, "\"0-3,8\""),
    I("affinity.count", status.cpus_allowed_count, "CPUs", "CPUs in the list"),
    W("env", SOP_EVK_OBJ, w_env, "",
      "{NAME = value}: only the allow-listed tuning variables (docs/security.md)"),
    W("libs", SOP_EVK_ARR, w_libs, "", "notable libraries mapped (maps)"),
    SOP_EVK_S("libs[].kind", sop_lib, kind,
              "blas openmp allocator python torch numpy uvloop tokenizers cuda other"),
    SOP_EVK_S("libs[].name", sop_lib, name, "short name: \"libopenblas\""),
    SOP_EVK_T("libs[].path", sop_lib, path, "the file"),
    H("numa", SOP_EVK_OBJ, "",
      "resident memory per node (engine/collect/collect_numa.c from /proc/PID/numa_maps): the note "
      "below"),
    H("numa.nodes", SOP_EVK_ARR, "", "every host node (0 kB included) and any other holding pages"),
    H("numa.nodes[].node", SOP_EVK_INT, "", "node id"),
    H("numa.nodes[].kb", SOP_EVK_INT, "kB", "resident on it"),
    H("numa.kb", SOP_EVK_INT, "kB", "their sum"),
    H("numa.other_kb", SOP_EVK_INT, "kB", "pages on node ids >= 64"),
    H("numa.interleave_kb", SOP_EVK_INT, "kB",
      "pages of mappings whose policy is (weighted) interleave"),
    H("numa.mappings", SOP_EVK_INT, "", "mappings read"),
    H("numa.truncated", SOP_EVK_BOOL, "", "true: the sums cover the first part only"),
};
const size_t sop__evk_proc_n = sizeof sop__evk_proc / sizeof sop__evk_proc[0];
#undef I
#undef D
#undef T

#define I(k, f, u, d) SOP_EVK_I(k, sop_thread, f, u, d)
#define D(k, f, u, d) SOP_EVK_D(k, sop_thread, f, u, d)
const sop_evk sop__evk_threads[] = {
    W("tid", SOP_EVK_INT, w_t_tid, "", "thread id"),
    SOP_EVK_T("name", sop_thread, name, "the thread's comm"),
    W("state", SOP_EVK_TEXT, w_t_state, "", "one letter (task/TID/stat)"),
    W("age_s", SOP_EVK_NUM, w_t_age_s, "s",
      "at collected_at (task/TID/stat starttime): a thread with age_s < duration_s started during "
      "the window"),
    W("wait", SOP_EVK_TEXT, w_t_wait, "",
      "asleep at the window's end: what its syscall waits on (task/TID/syscall): \"lock\" (a futex "
      "with no timeout: only another thread wakes it), \"lock_timed\", \"net\" (poll, select, "
      "epoll, accept, recv...), \"read\" (read/write: a pipe, socket, terminal or file), "
      "\"timer\", \"child\", \"signal\", \"other\"; absent when running or unreadable"),
    D("cpu_pct", cpu_pct, "%", "window, 100 = one core"),
    D("sys_pct", sys_pct, "%",
      "window: the part of cpu_pct spent in the kernel (system calls, page faults), 100 = one "
      "core"),
    D("wait_pct", wait_pct, "%",
      "window: % of it spent runnable in the run queue, waiting for a CPU"),
    I("majflt", stat.majflt, "", "major page faults: pages of mapped files read from storage"),
    D("majflt_per_s", majflt_per_s, "1/s", "window"),
    I("read_bytes", io.read_bytes, "bytes",
      "task/TID/io (only when read): the thread's own bytes from storage"),
    I("syscr", io.syscr, "", "its read calls"),
    D("read_bytes_per_s", read_bytes_per_s, "bytes/s", "window"),
    D("rchar_per_s", rchar_per_s, "bytes/s", "bytes through read(), window"),
    D("syscr_per_s", syscr_per_s, "1/s", "window"),
    W("utime_ms", SOP_EVK_INT, w_t_utime_ms, "ms", "user CPU time"),
    W("stime_ms", SOP_EVK_INT, w_t_stime_ms, "ms", "system CPU time"),
    I("processor", stat.processor, "", "the CPU it last ran on"),
    W("run_ms", SOP_EVK_INT, w_t_run_ms, "ms", "time on a CPU (schedstat)"),
    W("wait_ms", SOP_EVK_INT, w_t_wait_ms, "ms", "time runnable, waiting for a CPU (schedstat)"),
    I("voluntary_ctxt_switches", voluntary_ctxt_switches, "", "status"),
    I("nonvoluntary_ctxt_switches", nonvoluntary_ctxt_switches, "", "status"),
};
const size_t sop__evk_threads_n = sizeof sop__evk_threads / sizeof sop__evk_threads[0];
#undef I
#undef D

#define I(k, f, u, d) SOP_EVK_I(k, sop_child, f, u, d)
#define D(k, f, u, d) SOP_EVK_D(k, sop_child, f, u, d)
const sop_evk sop__evk_children[] = {
    W("pid", SOP_EVK_INT, w_c_pid, "", "process id"),
    W("ppid", SOP_EVK_INT, w_c_ppid, "", "its parent (stat; else where the walk found it)"),
    W("depth", SOP_EVK_INT, w_c_depth, "",
      "children[] only: generations below the target, 1 = a child"),
    SOP_EVK_T("comm", sop_child, stat.comm, "task name"),
    SOP_EVK_T("cmdline", sop_child, cmdline, "command line"),
    W("state", SOP_EVK_TEXT, w_c_state, "", "one letter (stat)"),
    W("threads", SOP_EVK_INT, w_c_threads, "", "status Threads (else stat num_threads)"),
    D("start_time_s", start_time_s, "s", "as proc's (stat starttime), epoch seconds"),
    W("age_s", SOP_EVK_NUM, w_c_age_s, "s",
      "at collected_at: a child with age_s < duration_s started during the window"),
    I("rss_kb", status.vm_rss_kb, "kB", "status VmRSS"),
    I("anon_kb", status.rss_anon_kb, "kB", "status RssAnon"),
    I("file_kb", status.rss_file_kb, "kB", "status RssFile"),
    I("shmem_kb", status.rss_shmem_kb, "kB",
      "status RssShmem: a shared_memory buffer every worker maps is in each one's shmem_kb and "
      "RSS, once in their PSS"),
    I("pss_kb", smaps.pss_kb, "kB", "smaps_rollup, only when read"),
    W("private_kb", SOP_EVK_INT, w_c_private_kb, "kB",
      "private clean + dirty (smaps_rollup, only when read)"),
    W("shared_kb", SOP_EVK_INT, w_c_shared_kb, "kB",
      "shared clean + dirty (smaps_rollup, only when read)"),
    W("swap_kb", SOP_EVK_INT, w_c_swap_kb, "kB", "smaps_rollup Swap, else status VmSwap"),
    D("cpu_pct", cpu_pct, "%", "window, 100 = one core"),
    D("read_bytes_per_s", read_bytes_per_s, "bytes/s", "window"),
    D("rchar_per_s", rchar_per_s, "bytes/s", "window"),
    W("env", SOP_EVK_OBJ, w_c_env, "", "{NAME = value}: allow-listed, as proc.env"),
};
const size_t sop__evk_children_n = sizeof sop__evk_children / sizeof sop__evk_children[0];
#undef I
#undef D
#undef H
#undef W

/* A file that was not read writes none of its fields, even when its struct holds figures: the
 * plain rows whose field lies in [from, to) of the base struct are written only when the bool
 * at `have` is true. */
typedef struct {
    size_t from, to, have;
} gate;
#define GATE(st, first, last, flag)                                                                \
    {                                                                                              \
        offsetof(st, first), offsetof(st, last) + sizeof(((st *)0)->last), offsetof(st, flag)      \
    }
static const gate proc_gates[] = {
    GATE(sop_proc, stat, stat, have_stat),    GATE(sop_proc, smaps, smaps, have_smaps),
    GATE(sop_proc, io, io, have_io),          GATE(sop_proc, limits, limits, have_limits),
    GATE(sop_proc, sched, sched, have_sched), GATE(sop_proc, mapped, mapped, have_mapped),
};
static const gate thread_gates[] = {
    GATE(sop_thread, io, io, have_io),
    GATE(sop_thread, read_bytes_per_s, read_bytes_per_s, have_io),
    GATE(sop_thread, rchar_per_s, rchar_per_s, have_io),
    GATE(sop_thread, syscr_per_s, syscr_per_s, have_io),
};
static const gate child_gates[] = {
    GATE(sop_child, smaps, smaps, have_smaps),
};
#define NGATES(a) (sizeof a / sizeof a[0])

/* sop__bridge_keys over the rows of `keys` at `prefix`, leaving out the plain rows a gate
 * closes (a writer row reads its own flags). */
static void walk(sop_value *o, const void *base, const sop_evk *keys, size_t n, const char *prefix,
                 const gate *gates, size_t ngates, void *ctx)
{
    for (size_t i = 0; o && i < n; i++) {
        bool open = true;
        bool plain = keys[i].off != SOP_EVK_HAND && keys[i].off != SOP_EVK_WRITER;
        for (size_t g = 0; plain && g < ngates; g++)
            if (keys[i].off >= gates[g].from && keys[i].off < gates[g].to)
                open = *((const bool *)((const char *)base + gates[g].have));
        if (open)
            sop__bridge_keys(o, base, &keys[i], 1, prefix, NULL, ctx);
    }
}

static const char *state_name(char s)
{
    switch (s) {
    case 'R':
        return "running";
    case 'S':
        return "sleeping";
    case 'D':
        return "disk sleep";
    case 'Z':
        return "zombie";
    case 'T':
        return "stopped";
    case 't':
        return "tracing stop";
    case 'X':
    case 'x':
        return "dead";
    case 'I':
        return "idle";
    case 'P':
        return "parked";
    case 'W':
        return "waking";
    case 'K':
        return "wakekill";
    default:
        return NULL;
    }
}

static void set_text(sop_value *obj, const char *key, const char *s)
{
    if (s && *s)
        sop__v_set(obj, key, sop__bridge_text(s));
}

static void set_state(sop_value *obj, char state)
{
    char letter[2] = {state, '\0'};
    set_text(obj, "state", letter);
}

static int64_t sum2(int64_t a, int64_t b)
{
    return a == SOP_NA || b == SOP_NA ? SOP_NA : a + b;
}

static int64_t ticks_ms(int64_t ticks, double ticks_per_s)
{
    return ticks == SOP_NA ? SOP_NA : (int64_t)llround((double)ticks * 1000.0 / ticks_per_s);
}

static int64_t ns_ms(int64_t ns)
{
    return ns == SOP_NA ? SOP_NA : ns / 1000000;
}

static int64_t first(int64_t a, int64_t b)
{
    return a != SOP_NA ? a : b;
}

/* Limits: -1 (unlimited) is kept as -1; bytes become kB. */
static int64_t limit_kb(int64_t bytes)
{
    return bytes == SOP_NA || bytes < 0 ? bytes : bytes / 1024;
}

static void add_env(sop_value *obj, const sop_env *env)
{
    sop_value *e = sop__v_obj_at(obj, "env");
    for (size_t i = 0; e && i < env->n && i < SOP_ENV_MAX; i++) /* empty values are kept */
        sop__v_set(e, env->vars[i].name, sop__bridge_text(env->vars[i].value));
}

static void age(sop_value *o, double start_time_s, double now)
{
    if (!isnan(start_time_s) && !isnan(now) && now >= start_time_s)
        sop__v_set_dbl(o, "age_s", now - start_time_s);
}

typedef struct {
    const sop_proc *p;
    double now, tps;
} proc_ctx;

static void proc_walk(sop_value *o, const char *prefix, proc_ctx *c);

/* An object row of proc: created (even empty) when its file was read, filled by the walk. */
static void proc_obj(sop_value *o, const char *name, bool read, proc_ctx *c)
{
    if (!read)
        return;
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%s.", name);
    sop_value *s = sop__v_obj_at(o, name);
    if (s)
        proc_walk(s, prefix, c);
}

static void w_pid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ((const sop_proc *)base)->pid);
}

static void w_ppid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_stat && p->stat.ppid >= 0)
        sop__v_set_int(o, name, p->stat.ppid);
}

static void w_state(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_stat && p->stat.state)
        set_state(o, p->stat.state);
}

static void w_state_name(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_stat && p->stat.state)
        sop__v_set_str(o, name, state_name(p->stat.state));
}

static void w_utime_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_proc *p = base;
    if (p->have_stat)
        sop__v_set_int(o, name, ticks_ms(p->stat.utime_ticks, ((const proc_ctx *)ctx)->tps));
}

static void w_stime_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_proc *p = base;
    if (p->have_stat)
        sop__v_set_int(o, name, ticks_ms(p->stat.stime_ticks, ((const proc_ctx *)ctx)->tps));
}

static void w_reaped_cpu_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_proc *p = base;
    const sop_stat *st = &p->stat;
    if (p->have_stat && st->cutime_ticks != SOP_NA && st->cstime_ticks != SOP_NA)
        sop__v_set_int(o, name,
                       ticks_ms(st->cutime_ticks + st->cstime_ticks, ((const proc_ctx *)ctx)->tps));
}

static void w_threads(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    sop__v_set_int(o, name, first(p->status.threads, p->stat.num_threads));
}

static void w_age_s(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    age(o, ((const sop_proc *)base)->start_time_s, ((const proc_ctx *)ctx)->now);
}

static void w_smaps(sop_value *o, const char *name, const void *base, void *ctx)
{
    proc_obj(o, name, ((const sop_proc *)base)->have_smaps, ctx);
}

static void w_private_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_smaps)
        sop__v_set_int(o, name, sum2(p->smaps.private_clean_kb, p->smaps.private_dirty_kb));
}

static void w_shared_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_smaps)
        sop__v_set_int(o, name, sum2(p->smaps.shared_clean_kb, p->smaps.shared_dirty_kb));
}

static void w_mem(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)base;
    proc_obj(o, name, true, ctx);
}

static void w_mapped_resident(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_mapped)
        sop__v_set_bool(o, name, p->mapped.resident);
}

static void w_mapped_truncated(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_mapped)
        sop__v_set_bool(o, name, p->mapped.truncated);
}

static void w_mapped(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    sop_value *arr = p->have_mapped ? sop__v_arr_at(o, name) : NULL;
    for (size_t i = 0; arr && i < p->mapped.n && i < SOP_MAPPED_MAX; i++) {
        sop_value *f = sop__v_obj();
        if (!f)
            break;
        sop__bridge_keys(f, &p->mapped.files[i], sop__evk_proc, sop__evk_proc_n, "mem.mapped[].",
                         NULL, NULL);
        sop__v_push(arr, f);
    }
}

static void w_sched(sop_value *o, const char *name, const void *base, void *ctx)
{
    proc_obj(o, name, ((const sop_proc *)base)->have_sched, ctx);
}

static void w_sched_run_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ns_ms(((const sop_proc *)base)->sched.run_ns));
}

static void w_sched_wait_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ns_ms(((const sop_proc *)base)->sched.wait_ns));
}

static void w_io(sop_value *o, const char *name, const void *base, void *ctx)
{
    proc_obj(o, name, ((const sop_proc *)base)->have_io, ctx);
}

static void w_memlock_limit_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_limits)
        sop__v_set_int(o, name, limit_kb(p->limits.memlock_bytes));
}

static void w_as_limit_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_limits)
        sop__v_set_int(o, name, limit_kb(p->limits.as_bytes));
}

static void w_affinity(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_proc *p = base;
    const sop_status *ss = &p->status;
    proc_obj(o, name,
             p->have_status && (ss->cpus_allowed_list[0] || ss->cpus_allowed_count != SOP_NA), ctx);
}

static void w_env(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_proc *p = base;
    if (p->have_env)
        add_env(o, &p->env);
}

static void w_libs(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_proc *p = base;
    sop_value *libs = p->have_maps ? sop__v_arr_at(o, name) : NULL;
    for (size_t i = 0; libs && i < p->libs.n && i < SOP_LIBS_MAX; i++) {
        sop_value *l = sop__v_obj();
        if (!l)
            break;
        sop__bridge_keys(l, &p->libs.libs[i], sop__evk_proc, sop__evk_proc_n, "libs[].", NULL,
                         NULL);
        sop__v_push(libs, l);
    }
}

static void proc_walk(sop_value *o, const char *prefix, proc_ctx *c)
{
    walk(o, c->p, sop__evk_proc, sop__evk_proc_n, prefix, proc_gates, NGATES(proc_gates), c);
}

typedef struct {
    double tps, now;
} thread_ctx;

static void w_t_tid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ((const sop_thread *)base)->tid);
}

static void w_t_state(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_thread *t = base;
    if (t->stat.state)
        set_state(o, t->stat.state);
}

/* The thread's age from its start in ticks after boot. */
static void w_t_age_s(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_thread *t = base;
    const thread_ctx *c = ctx;
    if (t->stat.starttime_ticks != SOP_NA && c->tps > 0 && !isnan(sop__proc_btime_s()) &&
        !isnan(c->now))
        sop__v_set_dbl(o, name,
                       c->now - (sop__proc_btime_s() + (double)t->stat.starttime_ticks / c->tps));
}

static void w_t_wait(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_thread *t = base;
    if (t->wait != SOP_WC_NONE)
        sop__v_set_str(o, name, sop__wait_class_name(t->wait));
}

static void w_t_utime_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    sop__v_set_int(
        o, name,
        ticks_ms(((const sop_thread *)base)->stat.utime_ticks, ((const thread_ctx *)ctx)->tps));
}

static void w_t_stime_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    sop__v_set_int(
        o, name,
        ticks_ms(((const sop_thread *)base)->stat.stime_ticks, ((const thread_ctx *)ctx)->tps));
}

static void w_t_run_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ns_ms(((const sop_thread *)base)->sched.run_ns));
}

static void w_t_wait_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ns_ms(((const sop_thread *)base)->sched.wait_ns));
}

static void add_threads(sop_value *ev, const sop_thread_list *tl, double tps, double now)
{
    sop_value *arr = sop__v_arr_at(ev, "threads");
    thread_ctx c = {tps, now};
    for (size_t i = 0; arr && i < tl->n; i++) {
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        walk(o, &tl->items[i], sop__evk_threads, sop__evk_threads_n, "", thread_gates,
             NGATES(thread_gates), &c);
        sop__v_push(arr, o);
    }
}

typedef struct {
    bool with_depth;
    double now;
} child_ctx;

static void w_c_pid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_int(o, name, ((const sop_child *)base)->pid);
}

static void w_c_ppid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_child *c = base;
    sop__v_set_int(o, name, c->stat.ppid >= 0 ? c->stat.ppid : c->ppid);
}

static void w_c_depth(sop_value *o, const char *name, const void *base, void *ctx)
{
    if (((const child_ctx *)ctx)->with_depth)
        sop__v_set_int(o, name, ((const sop_child *)base)->depth);
}

static void w_c_state(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    const sop_child *c = base;
    if (c->stat.state)
        set_state(o, c->stat.state);
}

static void w_c_threads(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_child *c = base;
    sop__v_set_int(o, name, first(c->status.threads, c->stat.num_threads));
}

static void w_c_age_s(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    age(o, ((const sop_child *)base)->start_time_s, ((const child_ctx *)ctx)->now);
}

static void w_c_private_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_child *c = base;
    if (c->have_smaps)
        sop__v_set_int(o, name, sum2(c->smaps.private_clean_kb, c->smaps.private_dirty_kb));
}

static void w_c_shared_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_child *c = base;
    if (c->have_smaps)
        sop__v_set_int(o, name, sum2(c->smaps.shared_clean_kb, c->smaps.shared_dirty_kb));
}

static void w_c_swap_kb(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_child *c = base;
    sop__v_set_int(o, name, first(c->have_smaps ? c->smaps.swap_kb : SOP_NA, c->status.vm_swap_kb));
}

static void w_c_env(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)name;
    (void)ctx;
    add_env(o, &((const sop_child *)base)->env);
}

/* One element of children[], siblings[] or `parent`: the rows of sop__evk_children. */
static sop_value *child_obj(const sop_child *c, bool with_depth, double now)
{
    sop_value *o = sop__v_obj();
    child_ctx x = {with_depth, now};
    walk(o, c, sop__evk_children, sop__evk_children_n, "", child_gates, NGATES(child_gates), &x);
    return o;
}

static void add_children(sop_value *ev, const char *key, const sop_child_list *cl, bool depth,
                         double now)
{
    sop_value *arr = sop__v_arr_at(ev, key);
    for (size_t i = 0; arr && i < cl->n; i++) {
        sop_value *o = child_obj(&cl->items[i], depth, now);
        if (!o)
            break;
        sop__v_push(arr, o);
    }
}

void sop__bridge_family(sop_value *ev, const sop_child *parent, const sop_child_list *siblings,
                        double now)
{
    if (!ev)
        return;
    if (parent)
        sop__v_set(ev, "parent", child_obj(parent, false, now));
    if (parent && siblings) /* measured: [] when the parent has no other child */
        add_children(ev, "siblings", siblings, false, now);
}

void sop__bridge_proc(sop_value *ev, const sop_proc *p, const sop_thread_list *threads,
                      const sop_child_list *children, double now)
{
    if (!ev)
        return;
    double tps = sop__proc_ticks_per_s();
    if (p) {
        proc_ctx c = {p, now, tps};
        sop_value *o = sop__v_obj_at(ev, "proc");
        if (o)
            proc_walk(o, "", &c);
        if (o && children && children->zombies != SOP_NA) {
            sop__v_set_int(o, "children_direct", children->direct);
            sop__v_set_int(o, "zombies", children->zombies);
            if (children->zombies_start != SOP_NA)
                sop__v_set_int(o, "zombies_start", children->zombies_start);
            if (isfinite(children->zombies_growth_per_s))
                sop__v_set_dbl(o, "zombies_growth_per_s", children->zombies_growth_per_s);
        }
    }
    if (threads)
        add_threads(ev, threads, tps, now);
    if (children)
        add_children(ev, "children", children, true, now);
}
