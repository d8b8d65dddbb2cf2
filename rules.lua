-- rules.lua — the default rule pack: every threshold of the pack (one table, overridable with
-- `sopctl run --set KEY=VALUE` or a site file), then the rule files under plugins/, one per
-- section of the triage SOP, in the order of its §1 decision tree. Rules read the evidence tree
-- `ev` described in docs/evidence.md. docs/rules.md is generated from this file and the plugins
-- (`sopctl check rules.lua --doc`), the comments below included.

thresholds {
  -- oom.killed (§2.1)
  oom_recent_s = 3600,          -- a kernel OOM kill younger than this (seconds) is "recent"

  -- mem.near_limit (§2.2)
  rss_limit_pct = 90,           -- target + workers (PSS, else RSS) at/above this % of the cgroup limit
  host_avail_min_pct = 10,      -- host MemAvailable below this % of MemTotal is memory pressure ...
  host_share_pct = 30,          -- ... that is ours when target + workers hold at least this % of MemTotal

  -- mem.fork_cow (§2.4)
  cow_child_private_pct = 50,   -- a forked worker's private memory at least this % of the parent's anon RSS ...
  cow_child_min_mb = 64,        -- ... and at least this many MiB ...
  cow_min_children = 2,         -- ... in at least this many workers

  -- cpu.oversubscribed (§4.4, §8.5)
  busy_thread_pct = 20,         -- a thread (or worker) using at least this % of one core over the window is busy;
                                --   low on purpose: threads squeezed by a quota get only a share each
  cpu_saturated_pct = 90,       -- the job's threads use (run + run-queue wait) at least this % of its CPU
                                --   capacity: the CPUs are full
  oversub_load_ratio = 1.5,     -- whole-tree runnable load (CPU + run-queue wait / window) at least this x the
                                --   CPUs the job may use (and one CPU above them): oversubscribed
  oversub_high_ratio = 2,       -- load (or, without ev.sched, busy threads) >= this x the CPUs is high

  -- cpu.pool_undersized (§8.5, §9)
  pool_native_frac = 0.5,       -- a pegged thread (summary_cpu_bound_pct of a core, run + run-queue wait)
                                --   runnable without the GIL this fraction of its samples computes natively ...
  pool_spare_cpus = 0.75,       -- ... while the whole tree's runnable load leaves at least this many CPUs idle

  -- cpu.throttled (§8.5)
  throttled_pct = 20,           -- at least this % of CFS periods throttled over the window: warn ...
  throttled_high_pct = 50,      -- ... at least this %: high

  -- io.d_state, io.small_reads (§7)
  d_state_min_threads = 1,      -- at least this many threads/workers in D (uninterruptible) state
  d_state_window_pct = 25,      -- a sampled Python thread counts as in D when in D at least this % of its samples
  io_pressure_pct = 10,         -- IO PSI some avg10 / host iowait at/above this %, or disk util at/above
                                --   io_util_pct, makes a D-state finding warn instead of info
  io_util_pct = 80,             -- busiest disk utilisation over the window (%) counted as IO pressure
  small_read_syscr_per_s = 1000,  -- read syscalls per second at/above this ...
  small_read_max_bytes = 16384,   -- ... with a mean read size at/below this (bytes): small reads

  -- gil.contention (§4)
  gil_thread_busy_pct = 10,     -- a Python thread using at least this % of a core over the window wants the GIL ...
  gil_min_threads = 2,          -- ... at least this many such threads ...
  gil_min_process_pct = 60,     -- ... while the whole process uses at least this % CPU ...
  gil_one_core_max_pct = 130,   -- ... and at most this % (about one core)
  gil_max_runqueue_wait_pct = 25, -- threads waiting this % of the window in the run queue are starved by
                                  --   other processes, not by the GIL: no verdict
  gil_tick_contended_pct = 50,  -- counted per tick (threads that come and go count): one thread holds the GIL
                                --   while another sleeps on it at this % of the ticks, gil_min_threads wanting it
                                --   at once on average

  -- gil.handoff_churn (§4)
  gil_churn_min_x = 20,         -- the GIL went to another thread at least this many times as often as the switch
                                --   interval forces (1e6 / interval per second: 200/s at the default 5 ms) ...
  gil_churn_min_sys_pct = 15,   -- ... and the process spent at least this % of its CPU in the kernel (the handoffs'
                                --   cost: futex wake-ups, context switches)
  gil_churn_min_want_pct = 60,  -- ... and the busy threads wanted to run (R, holding the GIL or asleep on it) at least
                                --   this % of their samples: threads blocked in IO (fsync, recv) hand the GIL over
                                --   because they block, which is what the GIL is for (measured: 92-100% for tiny-op
                                --   and small-read threads, 17-28% for six fsync writers)

  -- Foreign load (issue 38): other processes kept the CPUs busy over the window when the host was at most
  -- foreign_idle_max_pct idle and they used at least foreign_min_cores beyond the job (the process and its
  -- workers). A rule whose measure needs the job's threads to run side by side says unknown then, naming the
  -- load, rather than clearing on a measure the load spoilt.
  foreign_idle_max_pct = 10,
  foreign_min_cores = 0.5,

  -- progress.hang (§9, issue 38): no thread ran and none waited on outside work over the window
  hang_cpu_pct = 2,             -- the process and its children used at most this % of one core ...
  hang_wait_frac = 0.95,        -- ... and each sampled Python thread slept in an untimed futex (a lock, condition,
                                --   queue or future; or on the GIL) at least this share of its samples, on one
                                --   stack; every OS thread asleep on one at the window's end

  -- progress.threads_grow, progress.zombies (§9, issue 38): what grows, and when it meets its limit
  grow_min_threads = 8,         -- threads: at least this many more at the window's end than at its start ...
  grow_steady_share = 0.25,     -- ... born in each half of the window at least this share of those born in it (a
                                --   pool filling up at once is no leak) ...
  grow_kept_share = 0.8,        -- ... and the growth at least this share of the births (they do not exit)
  grow_min_fds = 16,            -- open descriptors: at least this many more at the window's end than at its start
  zombie_min_growth = 4,        -- zombies: at least this many more at the window's end ...
  zombie_held_warn = 32,        -- ... or, not growing, at least this many held (a few while a parent waits are normal)
  grow_high_s = 3600,           -- the limit (pids.max, RLIMIT_NPROC/NOFILE, threads-max, pid_max) reached within
  grow_warn_s = 86400,          --   this many seconds at the window's rate: high; within this many: warn; else info

  -- gil.busy_wait (§4, issue 38): a thread that spins on a flag instead of waiting on it
  spin_active_frac = 0.3,       -- a sampled thread active (GIL or running) at least this share of its samples ...
  spin_share = 0.8,             -- ... this share of them on loop lines that only test (`while not flag: pass`) ...
  spin_others_wait_frac = 0.1,  -- ... while another thread waited for the GIL at least this share of its samples

  -- pool.shipping (§8.4, §2.4, issue 38): a process pool that mostly moves its arguments
  ship_worker_cpu_pct = 20,     -- its sampled workers used at least this % of a core each on average ...
  ship_transport_frac = 0.5,    -- ... in multiprocessing's pipe, queue and pickling code this share of their
                                --   samples ...
  ship_work_max_frac = 0.1,     -- ... and in the task (inside the pool's worker loop) at most this share

  -- threads.lock_contention (§4.2)
  lock_min_threads = 2,         -- at least this many threads seen asleep at the same acquire site ...
  lock_wait_pct = 30,           -- ... each waiting there this % of the window on average ...
  lock_held_pct = 80,           -- ... while exactly one other thread is past the site at this % of those ticks
                                --   (and several at no more than 100 - this %: a queue or pool is no mutex),
                                --   most waiters asleep on one futex word (one mutex) ...
  lock_handoff_pct = 95,        -- ... or, each on its own word (Semaphore, Condition), at this % of them: never free
  lock_high_wait_pct = 60,      -- the waiters waiting this % of the window: high

  -- asyncio.loop_blocked (§5)
  loop_busy_cpu_pct = 80,       -- the loop thread at/above this % of a core while stuck in a callback: high
  loop_block_ms = 100,          -- sampled window: the loop away from its selector this long in one stretch

  -- asyncio.tasks_piling (§5)
  tasks_pile_min = 20,          -- pending asyncio tasks grew by at least this many over the window ...
  tasks_pile_per_s = 5,         -- ... at least this many per second ...
  tasks_pile_group_pct = 50,    -- ... and at least this % of the pending ones wait on the same thing (kind + line)

  -- asyncio.lock_convoy (§5)
  tasks_convoy_min = 8,         -- at least this many tasks wait on one asyncio.Lock/Semaphore at both window ends

  -- asyncio.task_stuck (§5)
  tasks_stuck_siblings = 5,     -- at least this many tasks of the same coroutine, pending at the window's start,
                                --   finished within it ...
  tasks_stuck_pct = 10,         -- ... while at most this % of them stayed pending at the end (the stuck ones)

  -- asyncio.fire_and_forget (§5)
  tasks_forgotten_min = 1,      -- pending tasks unreferenced (ob_refcnt 1) at both reads of the window

  -- asyncio.no_uvloop (§5.4)
  uvloop_busy_pct = 50,         -- an asyncio default-loop thread using at least this % of a core is a busy server

  -- summary.verdict (§9)
  summary_cpu_bound_pct = 80,   -- the job (target + workers) using at least this % of one core is CPU-bound
  summary_io_wait_pct = 20,     -- not CPU-bound, and at least this % of its thread time in D state: IO-bound

  -- summary.verdict on a GPU job, gpu.sync_per_step, gpu.memory_near_full (ev.gpu; issue 25); cpu.pool_undersized
  gpu_busy_pct = 70,            -- the devices the tree uses busy (mean SM utilisation over the window) at least
                                --   this %: GPU-bound (the host waits on it); no CPU-thread advice
  gpu_idle_pct = 40,            -- ... at most this %: the GPU idles, the host decides (input- or host-bound)
  gpu_host_busy_frac = 0.5,     -- host-bound: a Python thread running (GIL or native, GPU waits aside) this
                                --   fraction of its samples while the GPU idles
  gpu_sync_frac = 0.1,          -- a thread waiting on the GPU at one line of its own code this fraction of its
                                --   samples, the GPU below gpu_busy_pct: a device-to-host sync in the hot loop
  gpu_mem_pct = 90,             -- device memory in use at least this % of the device's, most of it the tree's
                                --   (gpu_mem_tree_share): out-of-memory risk
  gpu_mem_tree_share = 0.5,     -- ... the tree's processes holding at least this share of what is in use

  -- dataloader.starved, dataloader.no_workers, dataloader.too_many_workers, dataloader.slow_tokenizer (§6)
  loader_wait_pct = 30,         -- the training loop (target's main thread) waits for a batch at least this % of
                                --   its samples: starved (warn) ...
  loader_wait_high_pct = 60,    -- ... at least this %: high
  loader_worker_io_pct = 10,    -- starved, and the DataLoader workers in disk IO (state D) at least this % of their
                                --   samples: IO-bound (checked first) ...
  loader_worker_cpu_pct = 70,   -- ... else running (state R) at least this %: CPU-bound; else they wait on other things
  loader_inline_fetch_pct = 50, -- num_workers=0: the main thread inside the in-process fetch at least this % of samples
  loader_workers_per_cpu = 2,   -- DataLoader workers at least this many per effective CPU, with the CPUs full
                                --   (cpu_saturated_pct), are too many
  loader_tokenizer_pct = 30,    -- a process (main thread or worker) with at least this % of its samples in
                                --   pure-Python tokenizer frames (SOP §6.6: preprocessing > 30% of the time)

  -- io.random_reads, io.network_fs, io.page_cache_pressure (§7.1, §7.3, §7.4);
  -- checkpoint.pickle_bound, checkpoint.io_bound (§7.7)
  random_read_min_per_s = 200,  -- a process making at least this many read calls/s ...
  random_read_disk_share = 0.5, -- ... with at least this fraction of the bytes read coming from disk (read_bytes/rchar)
  data_file_min_mb = 1,         -- open files at least this large (MiB) on storage count as data files
  random_seq_advance_ratio = 0.5, -- data-file positions moving between this and 1/this x the bytes read: sequential
  random_read_max_request_kb = 32, -- the disk's mean read request (KiB) at/below this: the device serves small
                                --   random requests (readahead makes sequential ones 128 KiB or more)
  netfs_wait_frac = 0.2,        -- a thread of a process with NFS/FUSE files open sampled in D state this fraction
                                --   of the window: the job waits on the network filesystem
  page_cache_min_file_mb = 64,  -- files being read at least this large (MiB) make the working set
  page_cache_fit_ratio = 1.0,   -- working set >= this x the memory left for the page cache: it cannot stay cached
  page_cache_min_disk_kb_per_s = 8192, -- the job's disk reads (KiB/s) at/above this: it is reading from disk now
  -- io.mapped_faults (§7.3 through memory maps; also page_cache_min_disk_kb_per_s, random_read_max_request_kb)
  mapped_fault_min_per_s = 5,   -- at least this many major page faults/s (readahead makes each one up to MiBs) ...
  mapped_read_share = 0.5,      -- ... while read() calls bring less than this fraction of the bytes from storage
  mapped_touch_ratio = 0.25,    -- file-backed memory growing by less than this x the bytes read: read-around
                                --   fetches pages nobody touches (random access)
  mapped_wait_frac = 0.2,       -- a thread waiting on storage (D / faulting) this fraction of its samples: warn
  ckpt_frac = 0.3,              -- a thread inside torch.save/torch.load/pickle this fraction of the window ...
  ckpt_busy_frac = 0.6,         -- ... running on a CPU this fraction of its samples: serialization is CPU bound
  ckpt_io_wait_frac = 0.2,      -- ... in D state this fraction of its samples: storage bound

  -- alloc.glibc_arenas, startup.slow_imports, logging.hot_path, subprocess.storm,
  -- cpu.affinity_mismatch (§8, plugins/runtime.lua)
  arena_min_count = 8,          -- at least this many glibc arena heaps (64 MiB reservations) ...
  arena_share_pct = 30,         -- ... whose read-write part is at least this % of RSS ...
  arena_min_mb = 128,           -- ... and at least this many MiB ...
  arena_growth_kb_per_s = 1024, -- ... while RSS grows at least this fast (kB/s): warn; not growing: info
  sampled_min_samples = 20,     -- a sampled thread needs this many samples for a share to count
  startup_age_s = 300,          -- a process younger than this (seconds) is still starting up
  import_frac_pct = 50,         -- the main thread inside importlib at least this % of its samples
  per_row_pct = 30,             -- perrow.python_calls: a working thread with per-row pandas/torch machinery on
                                --   the stack in at least this % of its samples
  eager_log_pct = 5,            -- logging.eager_format: a logger call with an f-string/%/.format message at
                                --   least this % of a working thread's samples
  logging_frac_pct = 20,        -- a working thread inside logging at least this % of its samples: info;
                                --   twice this (or a log file on network storage): warn
  logging_work_pct = 50,        -- a thread is working when running or in D state this % of its samples
  subprocess_frac_pct = 30,     -- a thread inside subprocess (launch + wait) at least this % of samples ...
  subprocess_spawn_pct = 5,     -- ... of which launching (Popen._execute_child) at least this % ...
  forks_min_per_s = 20,         -- ... while the host forks at least this many processes per second
  pool_env_over_cpus = 1,       -- a thread-pool variable at least this many threads above effective CPUs
  quota_over_affinity_cpus = 1, -- a CPU quota at least this many CPUs wider than the affinity mask

  -- numpy.einsum_unoptimized, numpy.hidden_copies, numpy.tiny_calls (§3);
  -- numpy.blas_threads_in_workers (§3.6, §4.4) uses busy_thread_pct and cpu_saturated_pct
  numpy_min_samples = 50,       -- a thread needs at least this many samples in the window for a §3 verdict ...
  numpy_busy_frac = 0.5,        -- ... and to be active (running or holding the GIL) in this fraction of them
  einsum_hot_pct = 20,          -- einsum's optimize=False C loop on top in at least this % of a busy thread's samples
  copies_hot_pct = 25,          -- materialising copies (repeat, tile, expand+copy, concatenate, ...) in at least this %
                                --   of a busy thread's samples
  tiny_numpy_min_pct = 30,      -- numpy calls in at least this % of a busy thread's samples
                                --   (SOP §10: "numpy > 30%") ...
  tiny_overhead_pct = 25,       -- ... and at least this % of them away from each call's most sampled line
                                --   (per-call wrapper overhead, not the C kernel): many tiny calls
  -- perrow.tiny_ops (§3.5, any library); also keeps cpu.pool_undersized and numpy.tiny_calls off such threads
  tiny_gil_min_pct = 25,        -- a busy thread holding the GIL at least this % of its active samples (Python) ...
  tiny_native_min_pct = 15,     -- ... and running without it at least this % (native calls that release it) ...
  tiny_mixing = 0.6,            -- ... changing GIL state between consecutive samples at least this x 2p(1-p)
                                --   (p: its GIL share; a memoryless mix: calls far shorter than the interval) ...
  tiny_min_pairs = 20,          -- ... over at least this many consecutive pairs between which it ran
  tiny_min_rechecks = 10,       -- ... and, where at least this many of its samples with and without the GIL were
                                --   each looked at again 0.05 ms later (gil_rechecks, native_rechecks), ...
  tiny_recheck_persist = 0.4,   -- ... holding the GIL then after a sample with it at most this much more often than
                                --   after one without (gil_kept_frac - recheck_gil_frac): its calls and Python
                                --   stretches last µs (tiny: 0.0-0.2; kernels, copies of MB: 0.8-1). Measured: warn
  tiny_max_syscalls_per_s = 1000, -- ... in a process making fewer read+write system calls per second:
                                --   above it the GIL is released around system calls (small reads, a
                                --   socket server), §7 and §5, not around tiny native library calls
  tiny_max_sys_pct = 10,        -- ... and by a thread spending less than this % of its CPU in the kernel
                                --   (threads[].sys_pct / cpu_pct): above it its GIL releases are system calls
                                --   (send/recv of an event loop, which /proc's read+write counts miss; small
                                --   reads). Measured: torch/hashlib tiny calls 0-1%, an asyncio server 25%

  -- mem.load_at_start, mem.growth, mem.siblings_full_copy, mem.pinned (§2.2), gc.pauses (§2.5)
  load_young_s = 300,           -- a process younger than this (s) is still starting up ...
  load_share_pct = 40,          -- ... and already holds this % of its memory limit (cgroup, else host RAM) ...
  load_rate_mb_per_s = 20,      -- ... gained at this many MiB/s (average since start, or over the window) ...
  load_stack_pct = 30,          -- ... with this % of a thread's stack samples in loading code (np.load, json...)
  growth_min_window_s = 2,      -- windows shorter than this (s, less 0.1 s or 5% tolerance) are too noisy for growth
  growth_floor_mb_per_s = 2,    -- RSS growing at least this many MiB/s over the window ...
  growth_min_pct = 3,           -- ... and by at least this % of the RSS within the window ...
  growth_hwm_slack_pct = 2,     -- ... with the RSS within this % of its peak VmHWM (a climb, not a sawtooth)
  growth_high_s = 600,          -- the limit / MemAvailable reached within this many seconds at that rate: high;
                                --   within growth_warn_s: high for a steady climb past start-up, else warn (a young
                                --   process: when it holds growth_warn_rss_mb or grows at load_rate_mb_per_s)
  growth_warn_rss_mb = 256,     -- warn only when RSS is at least this many MiB ...
  growth_warn_s = 3600,         -- ... or the limit / MemAvailable is reached within this many seconds; else info
  growth_young_s = 120,         -- a process younger than this (s) is starting up: growth is info unless high
  growth_step_pct = 50,         -- one twelfth of the window holding this % of the rise: a step, not a climb: info
  growth_steady_pct = 65,       -- steady: anonymous memory rose in this % of the window's twelfths ...
  growth_persist_pct = 50,      -- ... and its last third still grew at this % of the window's mean rate
  growth_steady_warn_s = 21600, -- steady growth reaching the limit / MemAvailable within this many s: warn at least
  growth_import_pct = 5,        -- a young process with this % of a thread's samples in imports is starting up: info
  growth_watch_windows = 4,     -- across watch windows (ev.watch.history): judged over at least this many windows ...
  growth_watch_min_mb = 1,      -- ... whose anonymous + shared memory rose by at least this many MiB in all;
                                --   steady by growth_steady_pct / growth_step_pct / growth_persist_pct between
                                --   windows, reaching the limit within growth_steady_warn_s: warn at least
  heap_python_pct = 50,         -- Python objects (heap census) explaining less than this % of the (growth of)
                                --   anonymous memory: the memory is native (C extensions, tensors, allocator)
  sib_min_mb = 128,             -- a worker/rank holding at least this many MiB of private memory ...
  sib_min_count = 2,            -- ... in at least this many similar processes ...
  sib_similar_pct = 25,         -- ... each within this % below the largest of them: full copies
  sib_own_ratio = 1.5,          -- a forked worker's private memory above this x the parent's anon memory is
                                --   its own data, not inherited pages (splits siblings_full_copy/fork_cow)
  sib_runtime_mb = 32,          -- the private memory any fresh interpreter holds (its heap, the libraries'
                                --   own pages) is not data: only what a worker/rank holds beyond this ...
  sib_runtime_torch_mb = 192,   -- ... plus this when it maps torch (torch 1.13 CPU: 112 MiB anonymous right
                                --   after `import torch`; 2.x more) ...
  sib_runtime_cuda_mb = 512,    -- ... plus this when it maps the CUDA runtime (the context's host memory)
  pinned_min_mb = 64,           -- locked/pinned memory of at least this many MiB ...
  pinned_rss_pct = 25,          -- ... that is at least this % of RSS ...
  pinned_limit_pct = 20,        -- ... or this % of the memory limit (cgroup, else host RAM)
  gc_min_samples = 50,          -- GC state sampled at least this many ticks for a verdict
  gc_time_pct = 10,             -- GC collecting at this % of the ticks: warn ...
  gc_time_high_pct = 30,        -- ... at this %: high
  gc_pause_ms = 200,            -- one collecting stretch this long (with a gen2 collection in the window): warn
  gc_threshold0_high = 10000,   -- a gen0 threshold at/above this is noted as tuned
  -- dataloader.workers_restarted (§6.2 persistent_workers)
  loader_restart_parent_s = 20, -- the target running at least this many s: past its first epoch's start-up (a
                                -- job reaches its first batch within seconds of building its DataLoader); low
                                -- so that the scenario is quick, 4x the worker age below for the margin
  loader_restart_worker_s = 5,  -- ... and its DataLoader workers at most this many s old when the window starts:
                                -- workers re-created per epoch are at most one epoch old (epochs under 5 s are
                                -- seen in every window, longer ones only in their first 5 s)


  -- cpu.numa_remote (§8.5; also uses busy_thread_pct)
  numa_remote_pct = 60,         -- at least this % of the job's resident memory on NUMA nodes other than the one
                                --   its threads run on (margin above the even split interleaving gives) ...
  numa_min_mb = 1024,           -- ... out of at least this many MiB resident (numa_maps total)
}

-- A job-level merge (`sopctl merge`, `run --ranks`) compares key figures across ranks; when a
-- rank's figure stands out, its findings of these rule families (a rule's `family`, by default
-- the first part of its id) explain it and are listed first.
explains {
  cpu_pct = { "cpu", "gil", "numpy", "gc", "runtime", "logging" },
  runnable_load = { "cpu" },
  data_wait_frac = { "dataloader" },
  dstate_frac = { "io", "checkpoint" },
  rss_kb = { "mem", "memory", "oom" },
  gil_frac = { "gil" },
  loop_stretch_ms = { "asyncio" },
  -- a rank whose GPU idles while the others' are busy: its input, its host side, or a sync
  gpu_busy_frac = { "dataloader", "gpu", "cpu", "gil" },
  collective_frac = { "dataloader", "cpu" },
}

-- The §1 decision tree, symptom → where to look; every pack runs on every run, and findings are
-- sorted most severe first, so this order only breaks ties:
--   killed by the kernel           → §2 system RAM (oom, memory, gc)
--   numpy slow                     → §3 (numpy)
--   cores not used                 → §4 GIL / threads (gil, cpu)
--   async throughput low           → §5 (asyncio)
--   GPU waits for batches          → §6 (dataloader)
--   disk reads slow                → §7 (io)
--   jitter, slow start, containers → §8 (runtime, cpu)
-- and §9 (summary) classifies every run: CPU-bound on one core or many, IO-bound, or waiting.
require "plugins.oom"          -- §2.1
require "plugins.memory"       -- §2.2, §2.4
require "plugins.gc"           -- §2.5
require "plugins.numpy"        -- §3 (and §4.4 BLAS pools in workers)
require "plugins.perrow"       -- §3.5 per-row calls into pandas/torch, tiny ops of any library
require "plugins.gil"          -- §4
require "plugins.cpu"          -- §4.4, §8.5
require "plugins.asyncio"      -- §5
require "plugins.dataloader"   -- §6
require "plugins.gpu"          -- GPU jobs: sync per step (§9), GPU memory (§2.2)
require "plugins.io"           -- §7
require "plugins.mapped"       -- §7.3 through memory maps
require "plugins.checkpoint"   -- §7.7
require "plugins.runtime"      -- §8
require "plugins.pool"         -- §8.4 process pools that ship their data
require "plugins.logfmt"       -- §8.3 pitfall 1 (eager log formatting)
require "plugins.progress"     -- §9 is it making progress: hang, what grows
require "plugins.summary"      -- §9
