/* window.h — the figures of one sampled window as its evidence rows read them, and the turn of
 * a window (engine/sample/sample_window.h: the aggregation, the sampled processes, the open
 * files, the loop's own counts) into ev.sampling, ev.io_files and the window parts of
 * ev.python (engine/bridge/window.c). Depends on sample_window.h, value.h. */
#ifndef SOP_BRIDGE_WINDOW_H
#define SOP_BRIDGE_WINDOW_H

#include <stdbool.h>
#include <stddef.h>

#include "sample_window.h"
#include "value.h"

/* The figures of one thread's window, as the window rows of sop__evk_python read them
 * (engine/bridge/python.c); NaN = absent. */
typedef struct {
    int64_t samples, alternation_pairs, native_rechecks, gil_rechecks;
    double alternation_frac, recheck_gil_frac, gil_kept_frac;
    double active_frac, gil_frac, runnable_nogil_frac, gil_wait_frac, running_frac, io_wait_frac,
        data_wait_frac, checkpoint_frac, loop_longest_block_ms, import_frac, logging_frac,
        logging_format_frac, logging_write_frac, subprocess_frac, subprocess_spawn_frac,
        import_module_frac, logging_site_frac, majflt_frac, fault_wait_frac, fault_site_frac,
        gpu_wait_frac, gpu_sync_site_frac, fresh_frac, collective_frac, collective_op_frac,
        collective_longest_ms, own_frac, own_frame_frac;
    double lock_wait_frac, lock_timed_frac, net_wait_frac, read_wait_frac, timer_wait_frac,
        child_wait_frac, signal_wait_frac;
    int64_t fresh_kb;
} sop_window_figs;

/* The counts of one of a thread window's top_stacks[] (count) and leaves[] (count, active). */
typedef struct {
    int64_t count, active, fresh, fresh_kb;
} sop_window_count_figs;

/* The counts of one of a thread window's entries[]. */
typedef struct {
    int64_t count, active, top_site_active, sites;
} sop_window_entry_figs;

/* The figures of python.gc.window, python.loop and python.loader (NaN, SOP_NA = absent). */
typedef struct {
    int64_t samples;
    double collecting_frac, longest_collecting_ms;
} sop_gc_window_figs;

typedef struct {
    int64_t tid;
    double longest_block_ms;
} sop_loop_figs;

typedef struct {
    int64_t workers;
    double workers_per_cpu, main_data_wait_frac, workers_cpu_frac, workers_io_frac,
        workers_idle_frac;
} sop_loader_figs;

/* python.concurrency: the target's threads wanting the GIL at once, counted per tick. */
typedef struct {
    int64_t ticks, wanting_max, threads, threads_wanting, gil_interval_us;
    double wanting_mean, runnable_mean, contended_frac, two_plus_frac, gil_switches_per_s;
} sop_concurrency_figs;

/* One of python.locks[] (engine/sample/sample_agg.h sop_agg_lock). */
typedef struct {
    int64_t ticks, waiters_max, threads;
    double waiters_mean, wait_frac, multi_frac, one_word_frac, held_frac, crowded_frac,
        holder_running_frac, holder_native_frac, holder_frac;
} sop_lock_figs;

/* The figures of one of python.workers[] (NaN = absent). */
typedef struct {
    int64_t pid;
    double cpu_frac, io_frac, idle_frac;
    int64_t samples;
    double start_time_s, age_s, read_bytes_per_s, rchar_per_s, cpu_pct;
} sop_worker_figs;

/* Bounds on the rates of counters the target keeps in its own memory (per second, over the
 * window): beyond them a counter moved faster than what it counts can happen, so it was
 * written (a ctypes poke, a stray store), and its rate is left out (window.c).
 * A GIL switch hands the GIL to a thread asleep on its condition variable (or one that came
 * for it just as it was released): a mutex handoff and, nearly always, a futex wake-up and a
 * context switch, >= ~1 us each. 1e6/s is also what the shortest switch interval (1 us)
 * forces, and 24 x the most churn measured (41k/s, tests/replay/gil_handoff_churn_*). */
#define SOP_GIL_SWITCHES_MAX_PER_S 1e6
/* A collection is a C call that at least walks its generation's list head and updates its
 * stats: gc.collect(0) in a tight loop does ~1.1e7/s (90 ns each, CPython 3.11 on x86-64);
 * automatic ones need hundreds of allocations each. */
#define SOP_GC_COLLECTIONS_MAX_PER_S 1e8

/* The writers of the window's rows of sop__evk_python: python.c's table names them (SOP_EVK_W),
 * window.c defines them and its walks pass what they read (base: the level's figures; ctx:
 * window.c's own context of that level). */
/* A thread's window (threads[].window., workers[].threads[].window.): base its
 * sop_window_figs. The sites (the most sampled frame of a kind), then the lists. */
void sop__win_import_module(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_logging_site(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_fault_site(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_gpu_sync_site(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_collective_op(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_own_frame(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_top_stacks(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_dist(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_leaves(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_entries(sop_value *o, const char *name, const void *base, void *ctx);

/* One site of a thread window's leaves[] (leaves[].*.): ctx the site. */
void sop__win_site_func(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_site_file(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_site_line(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_site_code(sop_value *o, const char *name, const void *base, void *ctx);

/* One of a thread window's entries[]: ctx its entry frame (sop_agg_frame). */
void sop__win_entry_func(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_entry_file(sop_value *o, const char *name, const void *base, void *ctx);

/* python.gc.window.collections (with collections_per_s). */
void sop__win_gc_collections(sop_value *o, const char *name, const void *base, void *ctx);

/* python.loop: ctx the loop's thread (sop_agg_thread). */
void sop__win_loop_frame(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_loop_frames(sop_value *o, const char *name, const void *base, void *ctx);

/* One of python.locks[]: ctx its lock site (sop_agg_lock). */
void sop__win_lock_site(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_lock_holder(sop_value *o, const char *name, const void *base, void *ctx);

/* One of python.workers[], and one of its threads[] (workers[].threads[].). */
void sop__win_worker_comm(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_worker_cmdline(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_worker_threads(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_worker_tid(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_worker_window(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_worker_exited(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_worker_start_method(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_worker_io(sop_value *o, const char *name, const void *base, void *ctx);
void sop__win_worker_env(sop_value *o, const char *name, const void *base, void *ctx);

/* ev.sampling, ev.io_files, ev.python.threads[i].window, ev.python.gc.window, ev.python.loop,
 * ev.python.workers, ev.python.loader (ev.python must already be there for the per-thread
 * parts). Rates of the target's own counters that went back or beyond the bounds above are
 * left out, with a note in w->missing. */
void sop__bridge_window(sop_value *ev, const sop_window *w);

#endif
