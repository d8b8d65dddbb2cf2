-- rules.lua — the default rule pack: every threshold of the pack (one table, overridable with
-- `sopctl run --set KEY=VALUE`), then the rule files under plugins/. Rules read the evidence
-- tree `ev` described in docs/evidence.md; sections refer to the triage SOP.

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
  oversub_high_ratio = 2,       -- busy threads >= this x effective CPUs is high, below it warn

  -- cpu.throttled (§8.5)
  throttled_pct = 20,           -- at least this % of CFS periods throttled over the window: warn ...
  throttled_high_pct = 50,      -- ... at least this %: high

  -- io.d_state, io.small_reads (§7)
  d_state_min_threads = 1,      -- at least this many threads/workers in D (uninterruptible) state
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

  -- asyncio.loop_blocked (§5)
  loop_busy_cpu_pct = 80,       -- the loop thread at/above this % of a core while stuck in a callback: high
  loop_block_ms = 100,          -- sampled window: the loop away from its selector this long in one stretch

  -- mem.load_at_start, mem.growth, mem.siblings_full_copy, mem.pinned (§2.2), gc.pauses (§2.5)
  load_young_s = 300,           -- a process younger than this (s) is still starting up ...
  load_share_pct = 40,          -- ... and already holds this % of its memory limit (cgroup, else host RAM) ...
  load_rate_mb_per_s = 20,      -- ... gained at this many MiB/s (average since start, or over the window) ...
  load_stack_pct = 30,          -- ... with this % of a thread's stack samples in loading code (np.load, json...)
  growth_min_window_s = 2,      -- windows shorter than this (s) are too noisy to call growth
  growth_floor_mb_per_s = 2,    -- RSS growing at least this many MiB/s over the window ...
  growth_min_pct = 3,           -- ... and by at least this % of the RSS within the window ...
  growth_hwm_slack_pct = 2,     -- ... with the RSS within this % of its peak VmHWM (a climb, not a sawtooth)
  growth_high_s = 600,          -- the limit / MemAvailable reached within this many seconds at that rate: high
  sib_min_mb = 128,             -- a worker/rank holding at least this many MiB of private memory ...
  sib_min_count = 2,            -- ... in at least this many similar processes ...
  sib_similar_pct = 25,         -- ... each within this % below the largest of them: full copies
  sib_own_ratio = 1.5,          -- a forked worker's private memory above this x the parent's anon memory is
                                --   its own data, not inherited pages (splits siblings_full_copy/fork_cow)
  pinned_min_mb = 64,           -- locked/pinned memory of at least this many MiB ...
  pinned_rss_pct = 25,          -- ... that is at least this % of RSS ...
  pinned_limit_pct = 20,        -- ... or this % of the memory limit (cgroup, else host RAM)
  gc_min_samples = 50,          -- GC state sampled at least this many ticks for a verdict
  gc_time_pct = 10,             -- GC collecting at this % of the ticks: warn ...
  gc_time_high_pct = 30,        -- ... at this %: high
  gc_pause_ms = 200,            -- one collecting stretch this long (with a gen2 collection in the window): warn
  gc_threshold0_high = 10000,   -- a gen0 threshold at/above this is noted as tuned
}

require "plugins.oom"
require "plugins.memory"
require "plugins.cpu"
require "plugins.io"
require "plugins.gil"
require "plugins.asyncio"
require "plugins.gc"
