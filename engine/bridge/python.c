/* python.c — ev.python from the CPython probe (probes/python/cpython.h): version, executable,
 * GIL holder, GC state and the threads with their Python (and native) frames. The same
 * threads array is the body of `sopctl dump --json`. Its keys are the table sop__evk_python
 * below (docs/evidence.md is generated from it), which also holds what other files write
 * under ev.python: the window parts (engine/bridge/window.c walks those rows and defines their
 * writers, window.h declares them); python.heap is a table of its own (sop__evk_heap,
 * engine/bridge/heap_rows.c). Nearly every snapshot value is a flag, a pointer or a
 * conditional, so most rows of this file's own part have their own writers (SOP_EVK_W), called
 * in table order. Depends on value.h, schema.h, window.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "python/cpython.h"
#include "schema.h"
#include "window.h"

/* The walk's figures (sums over the threads). */
typedef struct {
    int64_t retries, threads_partial, threads_stopped;
    double pause_ms;
} walk_figs;

/* The keys of one thread's window (engine/bridge/window.c walks them), under threads[] and
 * under workers[].threads[]: the figures from sop_window_figs (window.h), the sites and lists by
 * window.c's writers (sop__win_*, window.h). D() keeps a value's doc in the first copy only. */
#define DOC(d) d
#define NODOC(d) ""
#define WI(P, k, d) SOP_EVK_I(P #k, sop_window_figs, k, "", d)
#define WD(P, k, u, d) SOP_EVK_D(P #k, sop_window_figs, k, u, d)
#define WINDOW_ROWS(P, D)                                                                          \
    WI(P, samples, D("its samples")), WD(P, active_frac, "", ""), WD(P, gil_frac, "", ""),         \
        WD(P, runnable_nogil_frac, "", ""), WD(P, gil_wait_frac, "", ""),                          \
        WD(P, running_frac, "", ""), WD(P, io_wait_frac, "", ""), WD(P, data_wait_frac, "", ""),   \
        WD(P, checkpoint_frac, "", ""),                                                            \
        WD(P, loop_longest_block_ms, "ms", D("an asyncio loop thread")),                           \
        WD(P, import_frac, "", ""), WD(P, logging_frac, "", ""),                                   \
        WD(P, logging_format_frac, "", ""), WD(P, logging_write_frac, "", ""),                     \
        WD(P, subprocess_frac, "", ""), WD(P, subprocess_spawn_frac, "", ""),                      \
        SOP_EVK_W(P "import_module", SOP_EVK_TEXT, sop__win_import_module, "", ""),                \
        WD(P, import_module_frac, "", ""),                                                         \
        SOP_EVK_W(P "logging_site", SOP_EVK_TEXT, sop__win_logging_site, "", ""),                  \
        WD(P, logging_site_frac, "", ""), WD(P, majflt_frac, "", ""),                              \
        WD(P, fault_wait_frac, "", ""),                                                            \
        SOP_EVK_W(P "fault_site", SOP_EVK_TEXT, sop__win_fault_site, "", ""),                      \
        WD(P, fault_site_frac, "", ""),                                                            \
        WD(P, gpu_wait_frac, "", D("a thread of a process with GPU device files open")),           \
        SOP_EVK_W(P "gpu_sync_site", SOP_EVK_TEXT, sop__win_gpu_sync_site, "", ""),                \
        WD(P, gpu_sync_site_frac, "", ""), WD(P, fresh_frac, "", ""),                              \
        SOP_EVK_I(P "fresh_kb", sop_window_figs, fresh_kb, "kB", D("new pages touched")),          \
        WD(P, collective_frac, "",                                                                 \
           D("in a collective: the innermost distributed-package frame (torch.distributed, "       \
             "torch.nn.parallel, deepspeed.comm) with only library frames inside it")),            \
        SOP_EVK_W(P "collective_op", SOP_EVK_TEXT, sop__win_collective_op, "",                     \
                  D("the collective most sampled: that frame's function (\"all_reduce\", "         \
                    "\"barrier\")")),                                                              \
        WD(P, collective_op_frac, "", ""),                                                         \
        WD(P, collective_longest_ms, "ms",                                                         \
           D("longest run of consecutive samples in one collective (to the window's end)")),       \
        WD(P, own_frac, "", D("outside collectives, in a frame of the program's own code")),       \
        WD(P, lock_wait_frac, "",                                                                  \
           D("asleep in a futex with no timeout, not the GIL's (/proc/.../syscall): a lock, "      \
             "condition, queue or future only another thread of the process can release")),        \
        WD(P, lock_timed_frac, "", D("asleep in a futex with a timeout (it wakes by itself)")),    \
        WD(P, net_wait_frac, "",                                                                   \
           D("asleep in poll/select/epoll, accept, connect, recv or send: a socket or pipe")),     \
        WD(P, read_wait_frac, "", D("asleep in read/write: a pipe, socket, terminal or file")),    \
        WD(P, timer_wait_frac, "", D("asleep in nanosleep/clock_nanosleep (time.sleep)")),         \
        WD(P, child_wait_frac, "", D("asleep in wait4/waitid: for a child process")),              \
        WD(P, signal_wait_frac, "", D("asleep in pause/sigsuspend/sigtimedwait: for a signal")),   \
        SOP_EVK_W(P "own_frame", SOP_EVK_TEXT, sop__win_own_frame, "",                             \
                  D("its innermost own frame most sampled: \"func (file:line)\"")),                \
        WD(P, own_frame_frac, "", ""),                                                             \
        WI(P, alternation_pairs,                                                                   \
           D("consecutive active samples (holding the GIL or running without it) between which "   \
             "it ran")),                                                                           \
        WD(P, alternation_frac, "",                                                                \
           D("of those pairs, the ones whose GIL state differs: near 2p(1-p) (p its GIL share) "   \
             "when its native calls are much shorter than the sampling interval, far below for "   \
             "long native kernels")),                                                              \
        WI(P, native_rechecks,                                                                     \
           D("samples running without the GIL looked at again 0.05 ms later (at most 16 threads "  \
             "a tick; none made when the tick ran past 0.3 ms)")),                                 \
        WD(P, recheck_gil_frac, "",                                                                \
           D("of those, the share holding the GIL again: its native call had ended")),             \
        WI(P, gil_rechecks, D("samples holding the GIL looked at again 0.05 ms later")),           \
        WD(P, gil_kept_frac, "",                                                                   \
           D("of those, the share still holding it. Calls and Python stretches of µs: near "      \
             "recheck_gil_frac (the state 0.05 ms on does not depend on the state now); kernels "  \
             "or long Python stretches of ms: far above it")),                                     \
        SOP_EVK_W(P "top_stacks", SOP_EVK_ARR, sop__win_top_stacks, "",                            \
                  "the 5 most sampled stacks"),                                                    \
        H(P "top_stacks[].stack", SOP_EVK_TEXT, "", D("\"outer (file.py);...;inner (file.py)\"")), \
        SOP_EVK_I(P "top_stacks[].count", sop_window_count_figs, count, "", ""),                   \
        SOP_EVK_W(P "dist", SOP_EVK_OBJ, sop__win_dist, "",                                        \
                  "the full distribution: every distinct stack of the thread. Read it with "       \
                  "common.share()"),                                                               \
        H(P "dist.samples", SOP_EVK_INT, "", ""),                                                  \
        H(P "dist.stored", SOP_EVK_INT, "", D("< samples when the stack table was full")),         \
        H(P "dist.frames", SOP_EVK_ARR, "", "\"func (file.py)\""),                                 \
        H(P "dist.stacks", SOP_EVK_ARR, "", "the distinct stacks"),                                \
        H(P "dist.stacks[].count", SOP_EVK_INT, "", ""),                                           \
        H(P "dist.stacks[].ids", SOP_EVK_ARR, "", "1-based into frames, root first"),              \
        H(P "dist.frames_cut", SOP_EVK_BOOL, "", D("true: more than 4096 distinct frames")),       \
        SOP_EVK_W(P "leaves", SOP_EVK_ARR, sop__win_leaves, "",                                    \
                  "the 8 most sampled sites (see below)"),                                         \
        SOP_EVK_I(P "leaves[].count", sop_window_count_figs, count, "", ""),                       \
        SOP_EVK_I(P "leaves[].active", sop_window_count_figs, active, "", ""),                     \
        SOP_EVK_I(P "leaves[].fresh", sop_window_count_figs, fresh, "", ""),                       \
        SOP_EVK_I(P "leaves[].fresh_kb", sop_window_count_figs, fresh_kb, "kB", ""),               \
        H(P "leaves[].*", SOP_EVK_OBJ, "", "`leaf`, `entry`, `caller`"),                           \
        SOP_EVK_W(P "leaves[].*.func", SOP_EVK_TEXT, sop__win_site_func, "", ""),                  \
        SOP_EVK_W(P "leaves[].*.file", SOP_EVK_TEXT, sop__win_site_file, "", ""),                  \
        SOP_EVK_W(P "leaves[].*.line", SOP_EVK_INT, sop__win_site_line, "", ""),                   \
        SOP_EVK_W(P "leaves[].*.code", SOP_EVK_TEXT, sop__win_site_code, "", ""),                  \
        SOP_EVK_W(P "entries", SOP_EVK_ARR, sop__win_entries, "",                                  \
                  "the 8 most sampled entries (see below)"),                                       \
        SOP_EVK_W(P "entries[].func", SOP_EVK_TEXT, sop__win_entry_func, "", ""),                  \
        SOP_EVK_W(P "entries[].file", SOP_EVK_TEXT, sop__win_entry_file, "", ""),                  \
        SOP_EVK_I(P "entries[].count", sop_window_entry_figs, count, "", ""),                      \
        SOP_EVK_I(P "entries[].active", sop_window_entry_figs, active, "", ""),                    \
        SOP_EVK_I(P "entries[].top_site_active", sop_window_entry_figs, top_site_active, "", ""),  \
        SOP_EVK_I(P "entries[].sites", sop_window_entry_figs, sites, "", ""),

/* The writers of python.c's own rows (defined below the table). */
static void w_version(sop_value *o, const char *name, const void *base, void *ctx);
static void w_executable(sop_value *o, const char *name, const void *base, void *ctx);
static void w_gc(sop_value *o, const char *name, const void *base, void *ctx);
static void w_gc_enabled(sop_value *o, const char *name, const void *base, void *ctx);
static void w_gc_collecting(sop_value *o, const char *name, const void *base, void *ctx);
static void w_gc_thresholds(sop_value *o, const char *name, const void *base, void *ctx);
static void w_gc_counts(sop_value *o, const char *name, const void *base, void *ctx);
static void w_gc_collections(sop_value *o, const char *name, const void *base, void *ctx);
static void w_walk(sop_value *o, const char *name, const void *base, void *ctx);
static void w_threads(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_tid(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_thread_id(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_name_source(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_interp(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_tid_source(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_state(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_gil(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_os_state(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_frames(sop_value *o, const char *name, const void *base, void *ctx);
static void w_f_func(sop_value *o, const char *name, const void *base, void *ctx);
static void w_f_file(sop_value *o, const char *name, const void *base, void *ctx);
static void w_f_line(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_truncated(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_complete(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_partial(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_walk_retries(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_stopped(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_native(sop_value *o, const char *name, const void *base, void *ctx);
static void w_n_func(sop_value *o, const char *name, const void *base, void *ctx);
static void w_n_file(sop_value *o, const char *name, const void *base, void *ctx);
static void w_n_line(sop_value *o, const char *name, const void *base, void *ctx);
static void w_n_lib(sop_value *o, const char *name, const void *base, void *ctx);
static void w_t_pause_ms(sop_value *o, const char *name, const void *base, void *ctx);

#define H SOP_EVK_H
#define WIN "(window) "
const sop_evk sop__evk_python[] = {
    SOP_EVK_W("version", SOP_EVK_TEXT, w_version, "", "\"3.11.7\""),
    SOP_EVK_W("executable", SOP_EVK_TEXT, w_executable, "", ""),
    SOP_EVK_T("libpython", sop_python, libpython, "absent for static builds"),
    SOP_EVK_S("layout", sop_python, layout,
              "where the offsets came from: \"table 3.11\", \"_Py_DebugOffsets\""),
    SOP_EVK_I("gil_holder_tid", sop_python, gil_holder_tid, "", "absent when unknown / none"),
    SOP_EVK_TRUE("finalizing", sop_python, finalizing, "true, only when shutting down"),
    SOP_EVK_W("gc", SOP_EVK_OBJ, w_gc, "", "the main interpreter's GC"),
    SOP_EVK_W("gc.enabled", SOP_EVK_BOOL, w_gc_enabled, "", ""),
    SOP_EVK_W("gc.collecting", SOP_EVK_BOOL, w_gc_collecting, "", ""),
    SOP_EVK_W("gc.thresholds", SOP_EVK_ARR, w_gc_thresholds, "", "[3]"),
    SOP_EVK_W("gc.counts", SOP_EVK_ARR, w_gc_counts, "", "[3]"),
    SOP_EVK_I("gc.frozen", sop_python, gc_frozen, "", "objects in the permanent generation"),
    SOP_EVK_W("gc.collections", SOP_EVK_ARR, w_gc_collections, "",
              "[3]: collections of generation 0/1/2 since start (generation_stats)"),
    H("gc.window", SOP_EVK_OBJ, "", WIN "the GC over the sampled window (engine/bridge/window.c)"),
    SOP_EVK_I("gc.window.samples", sop_gc_window_figs, samples, "",
              "ticks at which the GC state was read"),
    SOP_EVK_D("gc.window.collecting_frac", sop_gc_window_figs, collecting_frac, "",
              "ticks at which a collection was running"),
    SOP_EVK_D("gc.window.longest_collecting_ms", sop_gc_window_figs, longest_collecting_ms, "ms",
              "longest run of collecting ticks"),
    SOP_EVK_W("gc.window.collections", SOP_EVK_ARR, sop__win_gc_collections, "",
              "[3]: at the last tick minus the first"),
    H("gc.window.collections_per_s", SOP_EVK_ARR, "1/s",
      "[3]: over that span; both absent (missing says why) when a count went back or grew "
      "beyond 1e8/s: written by the target, not counted"),
    SOP_EVK_W("walk", SOP_EVK_OBJ, w_walk, "", "verified walks (issue 12, docs/python-stacks.md)"),
    SOP_EVK_I("walk.retries", walk_figs, retries, "", "re-walks, over all threads"),
    SOP_EVK_I("walk.threads_partial", walk_figs, threads_partial, "",
              "threads whose stack is partial"),
    SOP_EVK_I("walk.threads_stopped", walk_figs, threads_stopped, "",
              "threads --exact stopped for their walk"),
    SOP_EVK_D("walk.pause_ms", walk_figs, pause_ms, "ms", "their stop time, summed"),
    SOP_EVK_W("threads", SOP_EVK_ARR, w_threads, "", "the Python threads"),
    SOP_EVK_W("threads[].tid", SOP_EVK_INT, w_t_tid, "", "OS thread id; absent when unknown"),
    SOP_EVK_W("threads[].thread_id", SOP_EVK_NUM, w_t_thread_id, "",
              "pthread id (threading.get_ident())"),
    SOP_EVK_T("threads[].name", sop_pythread, name, ""),
    SOP_EVK_W("threads[].name_source", SOP_EVK_TEXT, w_t_name_source, "",
              "\"comm\" when not threading's"),
    SOP_EVK_W("threads[].interp", SOP_EVK_INT, w_t_interp, "", "interpreter id, 0 main"),
    SOP_EVK_W("threads[].tid_source", SOP_EVK_TEXT, w_t_tid_source, "",
              "subinterpreter on 3.8-3.12: \"stack\" | \"unknown\""),
    SOP_EVK_W("threads[].state", SOP_EVK_TEXT, w_t_state, "", "\"active\"|\"idle\""),
    SOP_EVK_W("threads[].gil", SOP_EVK_BOOL, w_t_gil, "", "holds the GIL"),
    SOP_EVK_W("threads[].os_state", SOP_EVK_TEXT, w_t_os_state, "", "the kernel's letter"),
    SOP_EVK_W("threads[].frames", SOP_EVK_ARR, w_t_frames, "", "innermost first"),
    SOP_EVK_W("threads[].frames[].func", SOP_EVK_TEXT, w_f_func, "", ""),
    SOP_EVK_W("threads[].frames[].file", SOP_EVK_TEXT, w_f_file, "", ""),
    SOP_EVK_W("threads[].frames[].line", SOP_EVK_INT, w_f_line, "", "absent when unknown"),
    SOP_EVK_W("threads[].truncated", SOP_EVK_BOOL, w_t_truncated, "",
              "true: more frames than the bound"),
    SOP_EVK_W("threads[].complete", SOP_EVK_BOOL, w_t_complete, "", "verified whole"),
    SOP_EVK_W("threads[].partial", SOP_EVK_TEXT, w_t_partial, "", "why not"),
    SOP_EVK_W("threads[].walk_retries", SOP_EVK_INT, w_t_walk_retries, "", "walks after the first"),
    SOP_EVK_W("threads[].stopped", SOP_EVK_BOOL, w_t_stopped, "",
              "true: --exact stopped it for the read"),
    SOP_EVK_W("threads[].native", SOP_EVK_ARR, w_t_native, "",
              "with --native: its native stack, innermost first, Python frames merged in"),
    SOP_EVK_W("threads[].native[].func", SOP_EVK_TEXT, w_n_func, "", ""),
    SOP_EVK_W("threads[].native[].file", SOP_EVK_TEXT, w_n_file, "", "a merged Python frame"),
    SOP_EVK_W("threads[].native[].line", SOP_EVK_INT, w_n_line, "", "a merged Python frame"),
    SOP_EVK_W("threads[].native[].lib", SOP_EVK_TEXT, w_n_lib, "",
              "\"python\" for a merged Python frame"),
    SOP_EVK_W("threads[].pause_ms", SOP_EVK_NUM, w_t_pause_ms, "ms",
              "how long it was stopped (--native, --exact)"),
    SOP_EVK_T("threads[].native_error", sop_pythread, native_error, ""),
    H("threads[].window", SOP_EVK_OBJ, "",
      WIN "the thread over the sampled window (engine/bridge/window.c; the fractions are "
          "over its samples: see Sampling below)"),
    WINDOW_ROWS("threads[].window.", DOC)
        H("loop", SOP_EVK_OBJ, "",
          WIN "asyncio loop threads: the loop that went longest inside one callback"),
    SOP_EVK_I("loop.tid", sop_loop_figs, tid, "", ""),
    SOP_EVK_D("loop.longest_block_ms", sop_loop_figs, longest_block_ms, "ms",
              "the longest stretch"),
    SOP_EVK_W("loop.frame", SOP_EVK_TEXT, sop__win_loop_frame, "",
              "\"func (file:line)\": the frame most seen in it"),
    SOP_EVK_W("loop.frames", SOP_EVK_ARR, sop__win_loop_frames, "",
              "the callback's frames of that stretch, innermost first"),
    H("loop.frames[].func", SOP_EVK_TEXT, "", ""),
    H("loop.frames[].file", SOP_EVK_TEXT, "", ""),
    H("loop.frames[].line", SOP_EVK_INT, "", ""),
    H("concurrency", SOP_EVK_OBJ, "",
      WIN "the target's threads counted together at each tick (threads born and ended in the "
          "window count)"),
    SOP_EVK_I("concurrency.ticks", sop_concurrency_figs, ticks, "", "ticks counted"),
    SOP_EVK_D("concurrency.wanting_mean", sop_concurrency_figs, wanting_mean, "",
              "threads holding or asleep on the GIL at a tick, on average"),
    SOP_EVK_I("concurrency.wanting_max", sop_concurrency_figs, wanting_max, "", "at most"),
    SOP_EVK_D("concurrency.runnable_mean", sop_concurrency_figs, runnable_mean, "",
              "threads holding the GIL, asleep on it or runnable (R), on average"),
    SOP_EVK_D("concurrency.contended_frac", sop_concurrency_figs, contended_frac, "",
              "ticks at which one thread held the GIL while another slept on it"),
    SOP_EVK_D("concurrency.two_plus_frac", sop_concurrency_figs, two_plus_frac, "",
              "ticks with at least two threads holding or asleep on the GIL"),
    SOP_EVK_I("concurrency.threads", sop_concurrency_figs, threads, "",
              "distinct threads of the target sampled in the window"),
    SOP_EVK_I("concurrency.threads_wanting", sop_concurrency_figs, threads_wanting, "",
              "of those, the ones that held or waited for the GIL at some tick"),
    SOP_EVK_D("concurrency.gil_switches_per_s", sop_concurrency_figs, gil_switches_per_s, "1/s",
              "times the GIL went to another thread than its last holder, per second (CPython's "
              "switch_number at the first and last tick): 0 with one thread; about 1e6 / "
              "gil_interval_us when threads take turns at the switch interval; far more when they "
              "release it around short calls and queue for it again. Absent (missing says why) "
              "when the counter went back or moved beyond 1e6/s: written by the target, not "
              "counted"),
    SOP_EVK_I("concurrency.gil_interval_us", sop_concurrency_figs, gil_interval_us, "us",
              "the switch interval (sys.getswitchinterval(), 5000 by default)"),
    H("locks", SOP_EVK_ARR, "",
      WIN "lock sites, most waited first: the innermost own frame (a `with lock:` line, an "
          "acquire() call, a call into a library that locks) at which threads of the target slept "
          "in a futex that is not the GIL's"),
    SOP_EVK_W("locks[].site", SOP_EVK_TEXT, sop__win_lock_site, "", "\"func (file:line)\""),
    SOP_EVK_I("locks[].ticks", sop_lock_figs, ticks, "", "ticks with a thread waiting there"),
    SOP_EVK_D("locks[].waiters_mean", sop_lock_figs, waiters_mean, "",
              "threads waiting there per tick, over all ticks of the window"),
    SOP_EVK_I("locks[].waiters_max", sop_lock_figs, waiters_max, "", ""),
    SOP_EVK_I("locks[].threads", sop_lock_figs, threads, "", "distinct threads seen waiting there"),
    SOP_EVK_D("locks[].wait_frac", sop_lock_figs, wait_frac, "",
              "their waiting share: waiter-ticks / (threads x ticks of the window)"),
    SOP_EVK_D("locks[].multi_frac", sop_lock_figs, multi_frac, "",
              "ticks of the window with at least two threads waiting there"),
    SOP_EVK_D("locks[].one_word_frac", sop_lock_figs, one_word_frac, "",
              "of those, ticks with most of the waiters asleep on one futex word (one mutex: Lock, "
              "RLock; a Condition, Semaphore or queue gives each waiter its own word)"),
    SOP_EVK_D("locks[].held_frac", sop_lock_figs, held_frac, "",
              "of the ticks with a waiter, those with exactly one other thread inside the site's "
              "function (past the acquire: the holder)"),
    SOP_EVK_D("locks[].crowded_frac", sop_lock_figs, crowded_frac, "",
              "... with several threads inside (no mutual exclusion: a queue or a pool)"),
    SOP_EVK_D("locks[].holder_running_frac", sop_lock_figs, holder_running_frac, "",
              "the holder running (R) or holding the GIL, of the held ticks"),
    SOP_EVK_D("locks[].holder_native_frac", sop_lock_figs, holder_native_frac, "",
              "of the held ticks, those whose holder was at the waiters' own call outside Python "
              "(neither holding nor waiting for the GIL): a library call holding its own lock"),
    SOP_EVK_W("locks[].holder", SOP_EVK_TEXT, sop__win_lock_holder, "",
              "the holder's most seen frame: \"own (file:line) > leaf (file:line)\""),
    SOP_EVK_D("locks[].holder_frac", sop_lock_figs, holder_frac, "",
              "that frame's share of the held ticks"),
    H("workers", SOP_EVK_ARR, "", WIN "CPython descendants sampled too"),
    SOP_EVK_I("workers[].pid", sop_worker_figs, pid, "", ""),
    SOP_EVK_W("workers[].comm", SOP_EVK_TEXT, sop__win_worker_comm, "", ""),
    SOP_EVK_W("workers[].cmdline", SOP_EVK_TEXT, sop__win_worker_cmdline, "", ""),
    SOP_EVK_W("workers[].threads", SOP_EVK_ARR, sop__win_worker_threads, "", "its sampled threads"),
    SOP_EVK_W("workers[].threads[].tid", SOP_EVK_INT, sop__win_worker_tid, "", ""),
    SOP_EVK_S("workers[].threads[].name", sop_agg_thread, name, ""),
    SOP_EVK_W("workers[].threads[].window", SOP_EVK_OBJ, sop__win_worker_window, "",
              "as threads[].window"),
    WINDOW_ROWS("workers[].threads[].window.", NODOC) SOP_EVK_D(
        "workers[].cpu_frac", sop_worker_figs, cpu_frac, "", "its main thread's samples: running"),
    SOP_EVK_D("workers[].io_frac", sop_worker_figs, io_frac, "", "in D state"),
    SOP_EVK_D("workers[].idle_frac", sop_worker_figs, idle_frac, "", "asleep"),
    SOP_EVK_I("workers[].samples", sop_worker_figs, samples, "", ""),
    SOP_EVK_D("workers[].start_time_s", sop_worker_figs, start_time_s, "s", "epoch seconds"),
    SOP_EVK_D("workers[].age_s", sop_worker_figs, age_s, "s",
              "its age when the sampler found it, at the window's start; not at collected_at"),
    SOP_EVK_W("workers[].exited", SOP_EVK_BOOL, sop__win_worker_exited, "",
              "true: it exited before the window ended; absent otherwise"),
    SOP_EVK_W("workers[].start_method", SOP_EVK_TEXT, sop__win_worker_start_method, "",
              "\"fork\"|\"spawn\"|\"forkserver\""),
    SOP_EVK_W("workers[].io", SOP_EVK_OBJ, sop__win_worker_io, "", "/proc/PID/io over the window"),
    H("workers[].io.read_bytes_per_s", SOP_EVK_NUM, "B/s", ""),
    H("workers[].io.write_bytes_per_s", SOP_EVK_NUM, "B/s", ""),
    H("workers[].io.rchar_per_s", SOP_EVK_NUM, "B/s", ""),
    H("workers[].io.syscr_per_s", SOP_EVK_NUM, "1/s", ""),
    H("workers[].io.mean_read_bytes", SOP_EVK_NUM, "B", ""),
    H("workers[].io.wchar_per_s", SOP_EVK_NUM, "B/s", ""),
    H("workers[].io.syscw_per_s", SOP_EVK_NUM, "1/s", ""),
    H("workers[].io.mean_write_bytes", SOP_EVK_NUM, "B", ""),
    SOP_EVK_D("workers[].read_bytes_per_s", sop_worker_figs, read_bytes_per_s, "B/s",
              "from children[]"),
    SOP_EVK_D("workers[].rchar_per_s", sop_worker_figs, rchar_per_s, "B/s", "from children[]"),
    SOP_EVK_D("workers[].cpu_pct", sop_worker_figs, cpu_pct, "%", "from children[]"),
    SOP_EVK_W("workers[].env", SOP_EVK_OBJ, sop__win_worker_env, "",
              "{NAME = value}: allow-listed, as children[].env"),
    H("workers[].env.*", SOP_EVK_TEXT, "", ""),
    H("loader", SOP_EVK_OBJ, "", WIN "only when there are workers"),
    SOP_EVK_I("loader.workers", sop_loader_figs, workers, "", ""),
    SOP_EVK_D("loader.workers_per_cpu", sop_loader_figs, workers_per_cpu, "",
              "workers / effective_cpus"),
    SOP_EVK_D("loader.main_data_wait_frac", sop_loader_figs, main_data_wait_frac, "", ""),
    SOP_EVK_D("loader.workers_cpu_frac", sop_loader_figs, workers_cpu_frac, "", ""),
    SOP_EVK_D("loader.workers_io_frac", sop_loader_figs, workers_io_frac, "", ""),
    SOP_EVK_D("loader.workers_idle_frac", sop_loader_figs, workers_idle_frac, "", ""),
};
const size_t sop__evk_python_n = sizeof sop__evk_python / sizeof sop__evk_python[0];
#undef H
static void set(sop_value *o, const void *base, const char *prefix, void *ctx)
{
    sop__bridge_keys(o, base, sop__evk_python, sop__evk_python_n, prefix, NULL, ctx);
}

/* threads[].frames[]: base the sop_pyframe. */
static void w_f_func(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const sop_pyframe *)base)->func));
}

static void w_f_file(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const sop_pyframe *)base)->file));
}

static void w_f_line(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pyframe *f = base;
    if (f->line >= 0)
        sop__v_set_int(o, name, f->line);
}

static sop_value *frame_value(const sop_pyframe *f)
{
    sop_value *o = sop__v_obj();
    if (o)
        set(o, f, "threads[].frames[].", NULL);
    return o;
}

/* One native frame (base the sop_nframe, ctx its thread): a merged Python frame
 * {func file line lib="python"} or {func lib}. */
static const sop_pyframe *merged(const sop_nframe *n, const sop_pythread *t)
{
    return n->py_index >= 0 && (size_t)n->py_index < t->nframes ? &t->frames[n->py_index] : NULL;
}

static void w_n_func(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_pyframe *f = merged(base, ctx);
    sop__v_set(o, name, sop__bridge_text(f ? f->func : ((const sop_nframe *)base)->func));
}

static void w_n_file(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_pyframe *f = merged(base, ctx);
    if (f)
        w_f_file(o, name, f, NULL);
}

static void w_n_line(sop_value *o, const char *name, const void *base, void *ctx)
{
    const sop_pyframe *f = merged(base, ctx);
    if (f)
        w_f_line(o, name, f, NULL);
}

static void w_n_lib(sop_value *o, const char *name, const void *base, void *ctx)
{
    if (merged(base, ctx))
        sop__v_set_str(o, name, "python");
    else
        sop__v_set(o, name, sop__bridge_text(((const sop_nframe *)base)->lib));
}

/* threads[]: base the sop_pythread. */
static void w_t_tid(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (t->tid > 0)
        sop__v_set_int(o, name, t->tid);
}

static void w_t_thread_id(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (t->thread_id)
        sop__v_set_dbl(o, name, (double)t->thread_id);
}

static void w_t_name_source(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    if (((const sop_pythread *)base)->name_from_comm)
        sop__v_set_str(o, name, "comm");
}

static void w_t_interp(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (t->interp_id >= 0) /* 0: the main interpreter */
        sop__v_set_int(o, name, t->interp_id);
}

static void w_t_tid_source(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (t->tid_from_stack)
        sop__v_set_str(o, name, t->tid > 0 ? "stack" : "unknown");
}

static void w_t_state(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_str(o, name, ((const sop_pythread *)base)->active ? "active" : "idle");
}

static void w_t_gil(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set_bool(o, name, ((const sop_pythread *)base)->gil);
}

static void w_t_os_state(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (t->os_state && t->os_state != '?') {
        char st[2] = {t->os_state, '\0'};
        sop__v_set_str(o, name, st);
    }
}

static void w_t_frames(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    sop_value *fr = sop__v_arr_at(o, name);
    for (size_t k = 0; fr && k < t->nframes; k++)
        sop__v_push(fr, frame_value(&t->frames[k]));
}

static void w_t_truncated(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    if (((const sop_pythread *)base)->truncated)
        sop__v_set_bool(o, name, true);
}

static void w_t_complete(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    /* complete: verified whole (docs/python-stacks.md); else `partial` says why */
    sop__v_set_bool(o, name, !t->partial && !t->truncated);
}

static void w_t_partial(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (t->partial)
        sop__v_set(o, name, sop__bridge_text(t->partial_reason));
}

static void w_t_walk_retries(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (t->walk_retries)
        sop__v_set_int(o, name, t->walk_retries);
}

static void w_t_stopped(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    if (((const sop_pythread *)base)->stopped) /* --exact stopped it for the read */
        sop__v_set_bool(o, name, true);
}

static void w_t_native(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (!t->native)
        return;
    sop_value *na = sop__v_arr_at(o, name);
    for (size_t k = 0; na && k < t->nnative; k++) {
        sop_value *no = sop__v_obj();
        if (no)
            set(no, &t->native[k], "threads[].native[].", (void *)t);
        sop__v_push(na, no);
    }
}

static void w_t_pause_ms(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_pythread *t = base;
    if (t->native || t->stopped) /* after native[] when there is one */
        sop__v_set_dbl(o, name, t->pause_ms);
} /* threads[].window: engine/bridge/window.c */

sop_value *sop__bridge_python_threads(const sop_python *py)
{
    sop_value *arr = sop__v_arr();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < py->nthreads; i++) {
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        set(o, &py->threads[i], "threads[].", NULL);
        sop__v_push(arr, o);
    }
    return arr;
}

static void push_gens(sop_value *o, const char *name, const int64_t g3[3])
{
    sop_value *arr = sop__v_arr_at(o, name);
    for (int g = 0; g < 3; g++)
        sop__v_push(arr, sop__v_num((double)g3[g]));
}

/* gc.: base the sop_python; gc.window: engine/bridge/window.c. */
static void w_gc_enabled(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_python *py = base;
    if (py->gc_enabled != SOP_NA)
        sop__v_set_bool(o, name, py->gc_enabled != 0);
}

static void w_gc_collecting(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_python *py = base;
    if (py->gc_collecting != SOP_NA)
        sop__v_set_bool(o, name, py->gc_collecting != 0);
}

static void w_gc_thresholds(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_python *py = base;
    if (py->gc_threshold[0] != SOP_NA)
        push_gens(o, name, py->gc_threshold);
}

static void w_gc_counts(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_python *py = base;
    if (py->gc_threshold[0] != SOP_NA) /* with the thresholds, when they were read */
        push_gens(o, name, py->gc_count);
}

static void w_gc_collections(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const sop_python *py = base;
    if (py->gc_collections[0] != SOP_NA)
        push_gens(o, name, py->gc_collections);
}

sop_value *sop__bridge_python_gc(const sop_python *py)
{
    sop_value *gc = sop__v_obj();
    if (gc)
        set(gc, py, "gc.", NULL);
    return gc;
}

sop_value *sop__bridge_python_others(const sop_python *py)
{
    sop_value *arr = sop__v_arr();
    for (size_t i = 0; arr && i < py->nothers; i++) {
        const sop_ostask *t = &py->others[i];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        char st[2] = {t->os_state, '\0'};
        sop__v_set_int(o, "tid", t->tid);
        sop__v_set(o, "name", sop__bridge_text(t->name));
        sop__v_set_str(o, "os_state", st);
        sop__v_set_str(o, "state", t->os_state == 'R' ? "active" : "idle");
        if (t->native) {
            sop_value *na = sop__v_arr_at(o, "native");
            for (size_t k = 0; na && k < t->nnative; k++) {
                sop_value *no = sop__v_obj();
                if (no) {
                    sop__v_set(no, "func", sop__bridge_text(t->native[k].func));
                    sop__v_set(no, "lib", sop__bridge_text(t->native[k].lib));
                }
                sop__v_push(na, no);
            }
            sop__v_set_dbl(o, "pause_ms", t->pause_ms);
        }
        if (t->native_error[0])
            sop__v_set(o, "native_error", sop__bridge_text(t->native_error));
        sop__v_push(arr, o);
    }
    return arr;
}

sop_value *sop__bridge_python_walk(const sop_python *py)
{
    sop_value *o = sop__v_obj();
    if (o) {
        walk_figs f = {py->walk_retries, py->threads_partial, 0, 0};
        for (size_t i = 0; i < py->nthreads; i++)
            if (py->threads[i].stopped) {
                f.pause_ms += py->threads[i].pause_ms;
                f.threads_stopped++;
            }
        set(o, &f, "walk.", NULL);
    }
    return o;
}

/* ev.python's own level (base the sop_python); heap, loop, workers and loader are written by
 * other files. */
static void w_version(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const sop_python *)base)->version));
}

static void w_executable(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_text(((const sop_python *)base)->executable));
}

static void w_gc(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_python_gc(base));
}

static void w_walk(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_python_walk(base));
}

static void w_threads(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    sop__v_set(o, name, sop__bridge_python_threads(base));
}

void sop__bridge_python(sop_value *ev, const struct sop_python *py)
{
    if (!py)
        return;
    sop_value *p = sop__v_obj_at(ev, "python");
    if (p)
        set(p, py, "", NULL);
}
