-- plugins/cpu.lua — SOP §4.4/§8.5: more runnable threads than effective CPUs (thread pools sized
-- for the host, not the quota; process pools x thread pools), and CFS quota throttling. Reads
-- ev.sched (whole tree), ev.python (threads, workers), ev.proc (cmdline, env), and without
-- ev.sched ev.threads, ev.children, ev.effective_cpus, ev.cgroup.cpu, ev.host.ncpu. Thresholds:
-- oversub_load_ratio, oversub_high_ratio, busy_thread_pct, cpu_saturated_pct, throttled_pct,
-- throttled_high_pct.

local common = require "plugins.common"
local T, no_proc = common.T, common.no_proc
local tr = common.tr

-- Why a rule that needs the live process cannot judge.

local POOL_VARS = { "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS" }

-- Thread-pool variables not set in the target's environment, else in its first worker's
-- (workers inherit it); nil when no environment was readable.
local function unset_pool_vars(ev)
  local env = ev.proc.env
  for _, c in ipairs(ev.children or {}) do
    if env then break end
    env = c.env
  end
  if not env then return nil, nil end
  local out = {}
  for _, name in ipairs(POOL_VARS) do
    if env[name] == nil or env[name] == "" then out[#out + 1] = name end
  end
  return out, env
end

local pool_libs = common.pool_libs

-- A process seen only through its total cpu_pct counts as this many busy threads.
local function busy_in(cpu_pct, nthreads, busy_pct)
  if not cpu_pct or cpu_pct < busy_pct then return 0 end
  local n = math.max(1, math.floor(cpu_pct / 100 + 0.5))
  if nthreads and nthreads < n then n = nthreads end
  return n
end

-- Without ev.sched (older evidence): busy threads of the target and busy workers against the
-- effective CPUs, as before whole-tree scheduling was read.
local function legacy_check(ev, th)
  local p = ev.proc
  if not p then return no_proc(ev) end
  if common.no_window(ev) then
    return common.one_snapshot("no CPU rates to tell busy threads", "没有 CPU 速率，无法判断繁忙线程")
  end
  local eff = common.effective_cpus(ev)
  if not eff then return unknown(common.NO_CPUS) end
  local cpu = ev.cgroup and ev.cgroup.cpu or {}
  local cap = common.capacity_cpus(ev, eff)

  -- A thread wants CPU for the time it ran plus the time it sat runnable in the run queue
  -- (wait_pct); threads blocked on the GIL or IO sleep and count for neither.
  local busy, used, waited, seen, top = 0, 0, 0, false, {}
  if ev.threads and #ev.threads > 0 then
    for _, t in ipairs(ev.threads) do
      if t.cpu_pct then
        seen = true
        used = used + t.cpu_pct
        waited = waited + (t.wait_pct or 0)
        if t.cpu_pct + (t.wait_pct or 0) >= th.busy_thread_pct then
          busy = busy + 1
          top[#top + 1] = { what = fmt("tid %d %s", t.tid, t.name or "?"), pct = t.cpu_pct }
        end
      end
    end
  elseif p.cpu_pct then
    seen = true
    used = p.cpu_pct
    local n = busy_in(p.cpu_pct, p.threads, th.busy_thread_pct)
    if n > 0 then
      busy = n
      top[#top + 1] = { what = fmt("pid %d %s", ev.pid, p.comm or "?"), pct = p.cpu_pct }
    end
  end
  local nworkers = 0
  for _, c in ipairs(ev.children or {}) do
    if c.cpu_pct then
      seen = true
      used = used + c.cpu_pct
      local n = busy_in(c.cpu_pct, c.threads, th.busy_thread_pct)
      if n > 0 then
        busy = busy + n
        nworkers = nworkers + 1
        top[#top + 1] = { what = fmt("worker pid %d", c.pid), pct = c.cpu_pct }
      end
    end
  end
  if not seen then
    return unknown(T("no per-thread or per-worker CPU usage over the window",
                     "没有窗口内的线程/worker CPU 使用率"))
  end

  local cap_pct = cap * 100
  local thr = cpu.throttled_pct
  -- The job's demand is the CPU all its threads and workers used plus the time the target's
  -- threads sat runnable in the run queue. The CPUs are full for the job when it uses its
  -- capacity, the quota throttles it, or that demand reaches its capacity. When the host is
  -- full with other load and the job does not use its capacity, the run-queue waits are for
  -- CPUs others use (and GIL-bound threads, which take turns, inflate them): no verdict.
  local host_idle = ev.host and ev.host.cpu and ev.host.cpu.idle_pct
  local full_pct = th.cpu_saturated_pct / 100 * cap_pct
  local own_full = used >= full_pct or (cpu.quota_cpus and thr and thr >= th.throttled_pct)
  local demand = used + waited
  local host_full = host_idle and host_idle <= 100 - th.cpu_saturated_pct
  local saturated = own_full or (demand >= full_pct and not host_full)
  local idle = host_idle and tr("; host CPUs {idle:%.0f}% idle", "；整机 CPU 空闲 {idle:%.0f}%", { idle = host_idle })
               or T("", "")
  local waits = waited > 0 and tr("; its threads also waited {waited:%.0f}% of the window in the run queue",
                                  "；其线程另在运行队列中等待了窗口的 {waited:%.0f}%", { waited = waited })
                or T("", "")
  local base = tr("{busy} busy threads (>= {busy_pct:%g}% of a core each, target + workers) on {eff} "
                    .. "effective CPUs; the job uses {used:%.0f}% CPU of a {cap_pct:%.0f}% capacity{idle}{waits}",
                  "{busy} 个繁忙线程（各 >= 单核 {busy_pct:%g}%，含目标与 worker），有效 CPU {eff} 个；作业共用 CPU "
                    .. "{used:%.0f}%，容量 {cap_pct:%.0f}%{idle}{waits}",
                  { busy = busy, busy_pct = th.busy_thread_pct, eff = eff, used = used, cap_pct = cap_pct,
                    idle = idle, waits = waits })
  if busy <= eff then return clear(base) end
  if not saturated and demand >= full_pct then
    return unknown(tr("{base}: the host is full with other load, so these waits are for CPUs others use; the job's "
                        .. "own oversubscription cannot be told apart",
                      "{base}：整机被其他负载占满，这些等待是在等别人占用的 CPU，无法区分作业自身的超额订阅", { base = base }))
  end
  if not saturated then
    return clear(tr("{base}: the CPUs are not full", "{base}：CPU 未跑满", { base = base }))
  end

  table.sort(top, function(a, b) return a.pct > b.pct end)
  local tl = {}
  for i = 1, math.min(#top, 6) do tl[#tl + 1] = fmt("%s %.0f%%", top[i].what, top[i].pct) end
  local limits = {}
  if cpu.quota_cpus then limits[#limits + 1] = fmt("quota %.2f CPUs", cpu.quota_cpus) end
  if p.affinity and p.affinity.count then
    limits[#limits + 1] = fmt("affinity %s (%d)", p.affinity.cpus or "?", p.affinity.count)
  end
  if cpu.cpuset_count then limits[#limits + 1] = fmt("cpuset %d", cpu.cpuset_count) end
  if ev.host and ev.host.ncpu then limits[#limits + 1] = fmt("host ncpu %d", ev.host.ncpu) end
  if thr then limits[#limits + 1] = fmt("throttled %.0f%% of periods", thr) end

  local unset, env = unset_pool_vars(ev)
  local env_en, env_zh, over = {}, {}, {}
  if not unset then
    env_en[1], env_zh[1] = "environment not readable", "环境变量不可读"
  else
    for _, name in ipairs(POOL_VARS) do
      local v = env[name]
      if v ~= nil and v ~= "" then
        env_en[#env_en + 1] = fmt("%s=%s", name, v)
        env_zh[#env_zh + 1] = env_en[#env_en]
        local n = tonumber(v)
        if n and n > eff then over[#over + 1] = env_en[#env_en] end
      end
    end
    if #unset > 0 then
      env_en[#env_en + 1] = table.concat(unset, ", ") .. " unset"
      env_zh[#env_zh + 1] = table.concat(unset, "、") .. " 未设置"
    end
  end
  local libs = pool_libs(p)
  local libs_s = #libs > 0 and ("; pools: " .. table.concat(libs, ", ")) or ""
  local libs_z = #libs > 0 and ("；线程池库：" .. table.concat(libs, "、")) or ""
  local lim_s = table.concat(limits, ", ")

  local ncpu = ev.host and ev.host.ncpu or eff
  local share = 100 * eff / busy
  local pools = T("", "")
  if #over > 0 then
    pools = tr("; {over} asks for more threads than the {eff} effective CPUs", "；{over} 要求的线程数超过了 {eff} 个有效 CPU",
               { over = T(table.concat(over, ", "), table.concat(over, "、")), eff = eff })
  elseif unset and #unset == #POOL_VARS then
    local host = ncpu > eff and tr("{ncpu}, not the {eff} the job may use", "{ncpu}，而不是作业可用的 {eff} 个",
                                   { ncpu = ncpu, eff = eff })
                 or tr("{ncpu}", "{ncpu}", { ncpu = ncpu })
    pools = tr("; with the thread-pool variables unset, each OpenMP/BLAS/torch pool starts one thread per host CPU "
                 .. "({host}) and every worker process starts its own pool",
               "；线程池变量未设置时，每个 OpenMP/BLAS/torch 线程池按整机 CPU 数（{host}）开线程，且每个 worker 进程各开一套",
               { host = host })
  end
  local workers = nworkers > 0 and tr("; {n} busy worker processes take part", "；其中有 {n} 个繁忙 worker 进程",
                                      { n = nworkers }) or T("", "")
  local cause = tr("{busy} runnable threads share {eff} CPUs, so each runs about {share:%.0f}% of the time and pays "
                     .. "context switches{pools}{workers} (SOP §4.4, §8.5).",
                   "{busy} 个可运行线程分享 {eff} 个 CPU，每个只有约 {share:%.0f}% 的时间在跑，还要付上下文切换{pools}{workers}"
                     .. "（SOP §4.4、§8.5）。",
                   { busy = busy, eff = eff, share = share, pools = pools, workers = workers })

  return hit {
    severity = busy >= th.oversub_high_ratio * eff and "high" or "warn",
    symptom = tr("{busy} busy threads compete for {eff} effective CPUs",
                 "{busy} 个繁忙线程争抢 {eff} 个有效 CPU", { busy = busy, eff = eff }),
    evidence = tr("{base} ({lim_s:%s}); {env_en}{libs_s:%s}; busiest: {busiest_en}.",
                  "{base}（{lim_s:%s}）；{env_zh}{libs_z:%s}；最忙：{busiest_zh}。",
                  { base = base, lim_s = lim_s, env_en = table.concat(env_en, ", "), libs_s = libs_s,
                    busiest_en = table.concat(tl, ", "), env_zh = table.concat(env_zh, "，"),
                    libs_z = libs_z, busiest_zh = table.concat(tl, "，") }),
    cause = cause,
    fix = tr("Size every pool to the {eff} effective CPUs: in the job spec, before Python "
             .. "starts, export OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS "
             .. "= {eff} divided by the number of busy worker processes (at least 1); in "
             .. "code, threadpoolctl.threadpool_limits(1) inside each DataLoader/"
             .. "multiprocessing worker and torch.set_num_threads({eff}) in the main "
             .. "process; keep CPU-bound worker processes <= {eff}. Do not raise num_workers "
             .. "or thread counts to compensate: change one number and measure step time.",
             "让所有线程池对齐 {eff} 个有效 CPU：在作业配置里、Python 启动前导出 OMP_NUM_THREADS、"
             .. "MKL_NUM_THREADS、OPENBLAS_NUM_THREADS = {eff} 除以繁忙 worker 进程数（至少 1）；代码里在"
             .. "每个 DataLoader/multiprocessing worker 内调用 threadpoolctl.threadpool_limits(1)，主进程"
             .. " torch.set_num_threads({eff})；CPU 密集的 worker 进程 <= {eff} 个。不要靠加 num_workers 或"
             .. "线程数来补偿：一次只改一个数并测 step 时间。", { eff = eff }),
    verify = tr("`sopctl run --pid {pid} --duration 2`: busy threads <= {eff}, cpu.throttled "
                .. "clear, and the step time (samples/s) improves.",
                "`sopctl run --pid {pid} --duration 2`：繁忙线程 <= {eff}，cpu.throttled 为 clear，"
                .. "step 时间（samples/s）改善。", { pid = ev.pid, eff = eff }),
    refs = {
      "https://github.com/joblib/threadpoolctl",
      "https://pytorch.org/docs/stable/generated/torch.set_num_threads.html",
      "https://docs.kernel.org/scheduler/sched-bwc.html",
    },
  }
end

-- A thread counts as runnable in a process when it wanted a CPU (ran or sat in the run queue)
-- at least this fraction of the window.
local RUNNABLE_MIN_FRAC = 0.05

-- Python thread ids per pid (the target's and its sampled workers'), and the workers by pid.
local function python_threads(ev)
  local py = ev.python
  if not py then return nil, {} end
  local tids, workers = {}, {}
  local own = {}
  for _, t in ipairs(py.threads or {}) do
    if t.tid then own[t.tid] = t end -- a thread ended in the window may have no tid
  end
  tids[ev.pid] = own
  for _, w in ipairs(py.workers or {}) do
    workers[w.pid] = w
    local ws = {}
    for _, t in ipairs(w.threads or {}) do
      if t.tid then ws[t.tid] = t end
    end
    tids[w.pid] = ws
  end
  return tids, workers
end

-- What kind of Python thread pool a thread belongs to: the pool's worker entry on its stack (frames[]
-- by file, else its sampled distribution, window.dist frames "func (file.py)"), then what runs in it:
-- joblib's threading backend (Parallel(prefer="threads"), an estimator's n_jobs) is a
-- multiprocessing.pool.ThreadPool whose threads run joblib's batches. A joblib frame without a pool
-- entry is not a pool thread (a loky worker's main thread runs joblib too).
local PY_POOLS = {
  { "concurrent/futures/thread.py", "_worker", "_worker (thread.py)", "ThreadPoolExecutor" },
  { "multiprocessing/pool.py", "worker", "worker (pool.py)", "multiprocessing.pool.ThreadPool" },
}
local JOBLIB_THREADS = "joblib threading backend (an estimator's n_jobs / Parallel(prefer='threads'))"
local function py_pool_of(t)
  local pool, joblib = nil, false
  for _, f in ipairs(t and t.frames or {}) do
    for _, pp in ipairs(PY_POOLS) do
      if f.file and f.file:find(pp[1], 1, true) and f.func == pp[2] then pool = pool or pp[4] end
    end
    if f.file and f.file:find("/joblib/", 1, true) then joblib = true end
  end
  local d = t and t.window and t.window.dist
  for _, f in ipairs(d and d.frames or {}) do
    for _, pp in ipairs(PY_POOLS) do
      if f:sub(1, #pp[3]) == pp[3] then pool = pool or pp[4] end
    end
    if f:find("(_parallel_backends.py)", 1, true) or f:find("BatchedCalls.__call__ (parallel.py)", 1, true) then
      joblib = true
    end
  end
  if pool == "multiprocessing.pool.ThreadPool" and joblib then return JOBLIB_THREADS end
  return pool
end

-- Pre-fork servers whose workers are processes: recognised from the command line (setproctitle's
-- "gunicorn: worker [app]" or the server's own argv, inherited by its forked workers), with the
-- knob that sets how many workers they run.
local PREFORK_SERVERS = {
  { pat = "gunicorn", name = "gunicorn", knob = "--workers N (-w, or WEB_CONCURRENCY)" },
  { pat = "uvicorn", name = "uvicorn", knob = "--workers N" },
  { pat = "celery", name = "celery", knob = "--concurrency N" },
  { pat = "uwsgi", name = "uWSGI", knob = "--processes N" },
}
local function prefork_server_of(cmd)
  for _, srv in ipairs(PREFORK_SERVERS) do
    if cmd and cmd:find(srv.pat, 1, true) then return srv end
  end
  return nil
end

-- The process's role in the tree.
local function role_of(sp, ev, workers)
  if sp.pid == ev.pid then return "the target" end
  local cmd = sp.cmdline or ""
  if cmd:find("loky", 1, true) then return "joblib/loky worker" end
  local srv = prefork_server_of(cmd)
  if srv then return srv.name .. " worker", srv end
  local w = workers[sp.pid]
  if w and w.start_method then return fmt("multiprocessing worker (%s)", w.start_method) end
  if cmd:find("multiprocessing", 1, true) then return "multiprocessing worker" end
  if ev.proc and ev.proc.cmdline and cmd == ev.proc.cmdline then return "forked worker" end
  return fmt("child process %s", sp.comm or "?")
end

-- One process's share of the excess: its runnable threads split into Python threads (and
-- their pool) and native threads (and the thread-pool libraries mapped that run them).
local function describe_proc(sp, ev, py_tids, workers, window_s)
  local d = { pid = sp.pid, load = sp.load or 0, libs = {},
              kinds = {}, native = 0, python = 0, runnable = 0, pools = {} }
  d.role, d.server = role_of(sp, ev, workers)
  for _, l in ipairs(sp.libs or {}) do
    d.libs[#d.libs + 1] = l.name or l.kind
    d.kinds[l.kind] = true
  end
  local tids = py_tids and py_tids[sp.pid]
  local pypools = {}
  for _, t in ipairs(sp.top or {}) do
    if ((t.cpu_s or 0) + (t.wait_s or 0)) / window_s >= RUNNABLE_MIN_FRAC then
      d.runnable = d.runnable + 1
      if tids and tids[t.tid] then
        d.python = d.python + 1
        local pool = py_pool_of(tids[t.tid])
        if pool then pypools[pool] = (pypools[pool] or 0) + 1 end
      else
        d.native = d.native + 1
      end
    end
  end
  -- the top list holds the 16 busiest: a larger load means more runnable threads than listed
  local est = math.floor(d.load + 0.5)
  if #(sp.top or {}) >= 16 and est > d.runnable then
    d.native = d.native + (est - d.runnable)
    d.runnable = est
  end
  if not tids then
    -- no Python stacks for this process: threads, and the libraries that may run them
    d.pools[1] = fmt("%d runnable threads", d.runnable)
    d.python, d.native_unknown = 0, true
  else
    for name, n in pairs(pypools) do d.pools[#d.pools + 1] = fmt("%s (%d Python threads)", name, n) end
    d.joblib_threads = pypools[JOBLIB_THREADS] ~= nil
    local plain = d.python
    for _, n in pairs(pypools) do plain = plain - n end
    if plain > 0 then d.pools[#d.pools + 1] = fmt("%d plain Python threads", plain) end
    if d.native > 0 then d.pools[#d.pools + 1] = fmt("%d native threads", d.native) end
  end
  table.sort(d.pools)
  if d.kinds.openmp or d.kinds.blas or d.kinds.torch then
    d.pool_lib = true
    d.pools[#d.pools + 1] = "OpenMP/BLAS/torch intra-op pool libraries loaded: " .. table.concat(d.libs, ", ")
  end
  local names = {}
  for _, n in ipairs(sp.names or {}) do
    if n.name and n.name ~= sp.comm and (n.count or 0) > 1 then
      names[#names + 1] = fmt("%s x%d", n.name, n.count)
    end
  end
  if #names > 0 then d.pools[#d.pools + 1] = "thread names " .. table.concat(names, ", ") end
  return d
end

rule {
  id = "cpu.oversubscribed", section = "8.5", severity = "warn",
  title = T("more runnable threads (target + workers) than the CPUs the job may use",
            "可运行线程（目标 + worker）多于作业可用的 CPU"),
  doc = [[From ev.sched (whole tree, every thread, over the window): hit when the runnable load (CPU time plus
    run-queue wait of every thread of the target and its descendants, divided by the window) is at least
    oversub_load_ratio x the CPUs the job may use (capacity_cpus: affinity ∩ cpuset ∩ quota) and at least one
    CPU above it; high at oversub_high_ratio x. The load counts only the job's own runnable threads, so a host
    busy with other work raises it only by stretching the runnable time of threads that block now and then (a
    thread always runnable counts 1 either way), and many light threads (none busy) count as much as a few busy
    ones.
    Python threads queued while they wait for the GIL are left out: for a thread asleep on the GIL at least as
    often as it holds it (window.gil_wait_frac >= gil_frac), sched.procs[].top[].wait_s x its runnable samples'
    share without the GIL ((active_frac - gil_frac) / active_frac). They take turns on one interpreter
    (gil.contention), and beside other processes on the same CPUs their wake-ups to ask for the GIL queue
    longer without any more work to do.
    The evidence names the processes that own the excess and their pools (Python thread pools from the stacks,
    native threads, OpenMP/BLAS/torch libraries mapped, joblib/loky or multiprocessing workers, pre-fork server
    workers: gunicorn, uvicorn, celery, uWSGI from their command lines; a multiprocessing.pool.ThreadPool whose
    threads run joblib batches is joblib's threading backend, i.e. an inner n_jobs); the fix follows from what the
    busy processes (load >= 0.5) run: nested pools only when two of them each run several runnable threads (an
    inner n_jobs=1 where joblib threads run inside workers), the server's own worker-count option for server
    workers, no BLAS advice where no BLAS/OpenMP library is mapped, nothing about a light process beside them (a
    load client). Without ev.sched: busy threads
    (busy_thread_pct of a core, run + run-queue wait) against effective CPUs with the CPUs full
    (cpu_saturated_pct). Unknown with --duration 0.]],
  reads = { "python.threads", "python.workers", "proc.cmdline", "proc.env", "children[].env",
            "threads[].cpu_pct", "threads[].wait_pct", "children[].cpu_pct", "effective_cpus", "host.ncpu",
            "host.cpu.idle_pct", "cgroup.cpu", "proc.cpu_pct", "alive", "children[].pid",
            "children[].threads", "duration_s", "pid", "proc.affinity.count", "proc.affinity.cpus",
            "proc.comm", "proc.libs", "proc.threads", "sched", "threads[].name", "threads[].tid" },
  uses = { "oversub_load_ratio", "oversub_high_ratio", "busy_thread_pct", "cpu_saturated_pct", "throttled_pct" },
  refs = {
    "https://docs.kernel.org/scheduler/sched-stats.html",
    "https://github.com/joblib/threadpoolctl",
    "https://joblib.readthedocs.io/en/stable/parallel.html#avoiding-over-subscription-of-cpu-resources",
  },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    if common.no_window(ev) then
      return common.one_snapshot("no CPU rates to tell runnable threads", "没有 CPU 速率，无法判断可运行线程")
    end
    local s = ev.sched
    if not s or not s.runnable_load or not s.window_s or s.window_s <= 0 then return legacy_check(ev, th) end
    local eff = s.effective_cpus or common.effective_cpus(ev)
    local cap = s.capacity_cpus or eff
    if not cap or cap <= 0 then return unknown(common.NO_CPUS) end
    local py_tids, workers = python_threads(ev)
    -- Python threads of one interpreter run Python one at a time: one waiting for the GIL wakes to
    -- ask for it and is queued for a CPU to do so, which is taking turns on the GIL (gil.contention),
    -- not demand for CPU. That share of the run-queue wait is left out of the load: for each listed
    -- thread that waits asleep on the GIL at least as often as it holds it, its wait x the share of
    -- its runnable samples without the GIL (a thread that releases the GIL to compute in C holds
    -- it more than it waits for it, and keeps its wait). With other processes on the same CPUs
    -- those wake-ups queue longer, and a GIL-bound program read as oversubscribed.
    local gil_queued_s = 0
    for _, sp in ipairs(s.procs or {}) do
      local tids = py_tids and py_tids[sp.pid]
      for _, t in ipairs(tids and sp.top or {}) do
        local w = tids[t.tid] and tids[t.tid].window
        local g, hold, act = w and w.gil_wait_frac or 0, w and w.gil_frac or 0, w and w.active_frac or 0
        if g > 0 and g >= hold and act > 0 then
          gil_queued_s = gil_queued_s + (t.wait_s or 0) * math.max(0, math.min(1, (act - hold) / act))
        end
      end
    end
    local gil_load = gil_queued_s / s.window_s
    local load = math.max(0, s.runnable_load - gil_load)
    local nprocs = #(s.procs or {})
    local gil_note = gil_load >= 0.05
      and tr(", less {gil:%.1f} of Python threads queued while waiting for the GIL (taking turns, not CPU demand)",
             "，减去 Python 线程等待 GIL 时的排队 {gil:%.1f}（轮流持有 GIL，不是 CPU 需求）", { gil = gil_load })
      or T("", "")
    local base = tr("runnable load {load:%.1f} (CPU {cpu_s:%.1f} s + run-queue wait {wait_s:%.1f} s over "
                      .. "{window_s:%.1f} s, {threads} threads in {nprocs} processes{gil_note}) on {cap:%g} CPUs "
                      .. "the job may use",
                    "可运行负载 {load:%.1f}（{window_s:%.1f} 秒内 CPU {cpu_s:%.1f} 秒 + 运行队列等待 {wait_s:%.1f} 秒，{nprocs} "
                      .. "个进程共 {threads} 个线程{gil_note}），作业可用 CPU {cap:%g} 个",
                    { load = load, cpu_s = s.cpu_s or 0, wait_s = s.runqueue_wait_s or 0, window_s = s.window_s,
                      threads = s.threads or 0, nprocs = nprocs, cap = cap, gil_note = gil_note })
    if load < th.oversub_load_ratio * cap or load < cap + 1 then
      return clear(tr("{base}: below {oversub_load_ratio:%g} x the CPUs",
                      "{base}：低于 CPU 数的 {oversub_load_ratio:%g} 倍",
                      { base = base, oversub_load_ratio = th.oversub_load_ratio }))
    end

    -- who owns the excess
    local ds = {}
    for _, sp in ipairs(s.procs or {}) do
      if (sp.load or 0) >= RUNNABLE_MIN_FRAC then ds[#ds + 1] = describe_proc(sp, ev, py_tids, workers, s.window_s) end
    end
    table.sort(ds, function(a, b) return a.load > b.load end)
    -- What makes the excess is read from the busy processes (load >= 0.5) only: a light process
    -- beside them (a load client's threads, a supervisor) is not a pool to shrink. When none is
    -- busy (the load spread thin over many processes), from all of them.
    local any_busy = false
    for _, d in ipairs(ds) do any_busy = any_busy or d.load >= 0.5 end
    local busy_procs, multi_thread_procs, pool_lib, plain_native, py_threads = 0, 0, false, false, false
    local server_procs, server = 0, nil
    local joblib_threads, loky = false, false
    local who = {}
    for i, d in ipairs(ds) do
      if d.load >= 0.5 then busy_procs = busy_procs + 1 end
      if d.load >= 0.5 or not any_busy then
        if d.runnable >= 2 then multi_thread_procs = multi_thread_procs + 1 end
        if d.runnable >= 2 and d.pool_lib and (d.native > 0 or d.native_unknown) then pool_lib = true end
        if d.native > 0 and not d.pool_lib then plain_native = true end
        if d.python >= 2 then py_threads = true end
        if d.server then server_procs, server = server_procs + 1, d.server end
        if d.joblib_threads then joblib_threads = true end
        if d.role == "joblib/loky worker" then loky = true end
      end
      if i <= 6 then
        who[#who + 1] = fmt("pid %d %s: load %.1f, %s", d.pid, d.role, d.load,
                            #d.pools > 0 and table.concat(d.pools, "; ") or "no runnable thread listed")
      end
    end
    if #ds > 6 then who[#who + 1] = fmt("%d more processes", #ds - 6) end
    -- process pool x thread pool: at least two busy processes each run several runnable threads
    local nested = multi_thread_procs >= 2

    local per = math.max(1, math.floor(eff / math.max(1, busy_procs)))
    local fix_en, fix_zh = {}, {}
    if nested then
      fix_en[#fix_en + 1] = fmt("Nested pools: %d busy processes each run a thread pool; keep processes x threads per "
                                .. "process <= %d (e.g. %d processes x %d threads, or fewer processes).",
                                multi_thread_procs, eff, math.min(busy_procs, eff), per)
      fix_zh[#fix_zh + 1] = fmt("嵌套线程池：%d 个繁忙进程各跑一个线程池；让 进程数 x 每进程线程数 <= %d（如 %d 个进程 x %d 个线程，"
                                .. "或减少进程）。", multi_thread_procs, eff, math.min(busy_procs, eff), per)
      if joblib_threads then
        fix_en[#fix_en + 1] = fmt("The joblib threads inside the workers are an inner n_jobs (an estimator's n_jobs, "
                                  .. "Parallel(prefer='threads')): parallelize one level only, e.g. "
                                  .. "GridSearchCV(RandomForestClassifier(n_jobs=1), n_jobs=%d), or the outer "
                                  .. "n_jobs=1 and the inner n_jobs=%d.", math.min(busy_procs, eff), eff)
        fix_zh[#fix_zh + 1] = fmt("worker 里的 joblib 线程来自内层 n_jobs（估计器的 n_jobs、Parallel(prefer='threads')）："
                                  .. "只并行一层，如 GridSearchCV(RandomForestClassifier(n_jobs=1), n_jobs=%d)，或外层 "
                                  .. "n_jobs=1、内层 n_jobs=%d。", math.min(busy_procs, eff), eff)
      elseif pool_lib and loky then
        fix_en[#fix_en + 1] = fmt("joblib: parallel_backend('loky', inner_max_num_threads=%d) (parallel_config in "
                                  .. "joblib >= 1.3) caps the OpenMP/BLAS pools in its workers.", per)
        fix_zh[#fix_zh + 1] = fmt("joblib：parallel_backend('loky', inner_max_num_threads=%d)（joblib >= 1.3 为 "
                                  .. "parallel_config）限制其 worker 里的 OpenMP/BLAS 线程池。", per)
      else
        fix_en[#fix_en + 1] = "multiprocessing/DataLoader: limit the pool in each worker's initializer."
        fix_zh[#fix_zh + 1] = "multiprocessing/DataLoader：在每个 worker 的 initializer 里限制线程池。"
      end
    elseif server and server_procs > eff then
      fix_en[#fix_en + 1] = fmt("%d busy %s workers compute on %d CPUs: run %s with %s = %d for CPU-bound requests "
                                .. "(the \"2 x CPUs + 1\" rule of thumb is for workers that mostly wait on IO); "
                                .. "threads per worker add no CPU for pure-Python handlers (the GIL).",
                                server_procs, server.name, eff, server.name, server.knob, eff)
      fix_zh[#fix_zh + 1] = fmt("%d 个繁忙的 %s worker 在 %d 个 CPU 上计算：CPU 密集的请求下 %s 用 %s = %d"
                                .. "（“2 x CPU + 1”的经验值针对主要等 IO 的 worker）；纯 Python 处理函数每个 worker 多开线程"
                                .. "不会多得 CPU（GIL）。",
                                server_procs, server.name, eff, server.name, server.knob, eff)
    elseif busy_procs > eff then
      fix_en[#fix_en + 1] = fmt("Run at most %d CPU-bound worker processes (Pool(processes=%d), n_jobs=%d, "
                                .. "num_workers).", eff, eff, eff)
      fix_zh[#fix_zh + 1] = fmt("CPU 密集的 worker 进程至多 %d 个（Pool(processes=%d)、n_jobs=%d、num_workers）。",
                                eff, eff, eff)
    end
    if pool_lib then
      fix_en[#fix_en + 1] = fmt("Size the OpenMP/BLAS/torch pools before Python starts: OMP_NUM_THREADS, "
                                .. "MKL_NUM_THREADS and OPENBLAS_NUM_THREADS = %d in the job spec; in code "
                                .. "threadpoolctl.threadpool_limits(%d) in each worker and torch.set_num_threads(%d).",
                                per, per, per)
      fix_zh[#fix_zh + 1] = fmt("在 Python 启动前限定 OpenMP/BLAS/torch 线程池：作业配置里 OMP_NUM_THREADS、MKL_NUM_THREADS、"
                                .. "OPENBLAS_NUM_THREADS = %d；代码里在每个 worker 中 threadpoolctl.threadpool_limits(%d)，"
                                .. "torch.set_num_threads(%d)。", per, per, per)
    end
    if py_threads or plain_native or (not pool_lib and multi_thread_procs >= 1) then
      fix_en[#fix_en + 1] = fmt("Size the thread pools the code creates to %d per process "
                                .. "(ThreadPoolExecutor(max_workers=%d), the library's thread-count option); "
                                .. "threads that wait on IO need no CPU, threads that compute do.", per, per)
      fix_zh[#fix_zh + 1] = fmt("代码自建的线程池每进程限为 %d 个（ThreadPoolExecutor(max_workers=%d)、库自身的线程数选项）；"
                                .. "等 IO 的线程不占 CPU，做计算的线程才占。", per, per)
    end
    if #fix_en == 0 then
      fix_en[1] = fmt("Keep the job's runnable threads <= %d: fewer worker processes or threads.", eff)
      fix_zh[1] = fmt("让作业的可运行线程 <= %d：减少 worker 进程或线程。", eff)
    end
    fix_en[#fix_en + 1] = "Change one number at a time and measure step time; do not add workers to compensate."
    fix_zh[#fix_zh + 1] = "一次只改一个数并测 step 时间；不要靠加 worker 来补偿。"

    local who_runs = T("", "")
    if nested then
      who_runs = tr("; {n} busy processes each run their own pool (process pool x thread pool)",
                    "；{n} 个繁忙进程各自再开线程池（进程池 x 线程池）", { n = multi_thread_procs })
    elseif server and server_procs > eff then
      who_runs = tr("; {n} {server:%s} worker processes are each runnable (CPU-bound requests)",
                    "；{n} 个 {server:%s} worker 进程都处于可运行状态（CPU 密集的请求）",
                    { n = server_procs, server = server.name })
    end
    local unset_vars = T("", "")
    if pool_lib then
      local unset = unset_pool_vars(ev)
      if unset and #unset == #POOL_VARS then
        unset_vars = T("; with OMP_NUM_THREADS/MKL_NUM_THREADS/OPENBLAS_NUM_THREADS unset each OpenMP/BLAS "
                         .. "pool starts one thread per host CPU in every process",
                       "；OMP_NUM_THREADS/MKL_NUM_THREADS/OPENBLAS_NUM_THREADS 未设置时，每个进程的 OpenMP/BLAS "
                         .. "线程池都按整机 CPU 数开线程")
      end
    end
    local cause = tr("On average {load:%.1f} threads wanted the {cap:%g} CPUs the job may use, so each ran about "
                       .. "{share:%.0f}% of the time it wanted and the rest waited in the run queue, paying context "
                       .. "switches{who_runs}{unset_vars} (SOP §4.4, §8.5).",
                     "平均 {load:%.1f} 个线程争抢作业可用的 {cap:%g} 个 CPU，每个只得到所需时间的约 {share:%.0f}%，其余时间在运行队列里等待，"
                       .. "还要付上下文切换{who_runs}{unset_vars}（SOP §4.4、§8.5）。",
                     { load = load, cap = cap, share = 100 * math.min(1, cap / load), who_runs = who_runs,
                       unset_vars = unset_vars })
    return hit {
      severity = load >= th.oversub_high_ratio * cap and "high" or "warn",
      symptom = tr("{load:%.1f} runnable threads on average compete for {cap} CPUs",
                   "平均 {load:%.1f} 个可运行线程争抢 {cap} 个 CPU",
                   { load = load, cap = fmt("%g", cap) }),
      evidence = tr("{base}; {who}.", "{base}；{who}。", { base = base, who = table.concat(who, " | ") }),
      cause = cause,
      fix = T(table.concat(fix_en, " "), table.concat(fix_zh, "")),
      verify = tr("`sopctl run --pid {pid} --duration 2`: runnable load <= {cap} and the step time (samples/s) "
                    .. "improves.",
                  "`sopctl run --pid {pid} --duration 2`：可运行负载 <= {cap}，step 时间（samples/s）改善。",
                  { pid = ev.pid, cap = fmt("%g", cap) }),
    }
  end,
}

-- The knob that sizes a process's native compute pool, from the libraries it has mapped: torch's
-- intra-op pool (torch.set_num_threads; its default comes from OMP_NUM_THREADS), else the BLAS's
-- own variable, else OpenMP's. Reference BLAS (libblas) runs on the calling thread only.
local function pool_knob(libs)
  local has = {}
  for _, l in ipairs(libs or {}) do has[l.name or l.kind] = true; has[l.kind] = true end
  if has.torch then return "torch.set_num_threads", "OMP_NUM_THREADS" end
  if has.libopenblas then return "OPENBLAS_NUM_THREADS", "threadpoolctl.threadpool_limits" end
  if has.libmkl then return "MKL_NUM_THREADS", "threadpoolctl.threadpool_limits" end
  if has.openmp or has.libblis or has.libflexiblas then return "OMP_NUM_THREADS", "threadpoolctl.threadpool_limits" end
  return nil
end

rule {
  id = "cpu.pool_undersized", section = "8.5", severity = "info",
  title = T("a torch/BLAS compute pool smaller than the CPUs the job may use, while the job is CPU-bound in it",
            "作业在 torch/BLAS 计算线程池里 CPU 密集，而该线程池小于作业可用的 CPU"),
  doc = [[Info only. From ev.sched (whole tree) and the sampled Python threads: hit when a process that maps a
    torch/BLAS/OpenMP library has a Python thread that is pegged (CPU time plus run-queue wait at least
    summary_cpu_bound_pct of a core, so a busy host does not hide it) and runnable without the GIL in at least
    pool_native_frac of its samples (native compute, not a call-overhead-bound loop of tiny calls whose brief GIL
    releases look native: common.overhead_bound, perrow.tiny_ops), its pool (that thread plus the native threads of the
    process that ran at all) is smaller than the CPUs the job may use (capacity_cpus), and the whole tree's
    runnable load leaves at least pool_spare_cpus CPUs idle (so DataLoader workers or a process pool that
    together fill the CPUs do not count). A thread's GPU waits (window.gpu_wait_frac) are not native compute
    (they leave its runnable-without-GIL share), and a process on a GPU that is at least gpu_busy_pct busy
    is not looked at: more CPU threads cannot help a thread that waits on the device. Names the knob from the
    libraries mapped (torch.set_num_threads,
    OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, OMP_NUM_THREADS) and any such variable set below the CPUs. Clear on
    one CPU. Unknown without ev.sched, without sampled threads, or with --duration 0.]],
  reads = { "python.threads", "python.workers", "proc.env", "children[].env", "proc.libs", "alive",
            "children[].pid", "duration_s", "pid", "sched", "gpu.procs", "gpu.busy_pct" },
  uses = { "summary_cpu_bound_pct", "pool_native_frac", "pool_spare_cpus", "sampled_min_samples", "gpu_busy_pct",
           "tiny_gil_min_pct", "tiny_native_min_pct", "tiny_mixing", "tiny_min_pairs", "tiny_min_rechecks",
           "tiny_recheck_persist" },
  refs = {
    "https://pytorch.org/docs/stable/generated/torch.set_num_threads.html",
    "https://github.com/joblib/threadpoolctl",
  },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    if common.no_window(ev) then return unknown(common.NO_CPU_RATES) end
    local s = ev.sched
    if not s or not s.runnable_load or not s.window_s or s.window_s <= 0 then
      return unknown(T("no whole-tree scheduling evidence (ev.sched)", "没有整棵进程树的调度证据（ev.sched）"))
    end
    local cap = s.capacity_cpus or s.effective_cpus
    if not cap then return unknown(common.NO_CPUS) end
    local caps = fmt("%g", cap)
    if cap < 2 then
      return clear(tr("{caps:%s} CPU: no pool can use more than one", "{caps:%s} 个 CPU：线程池无法用到更多", { caps = caps }))
    end
    local load = s.runnable_load
    if cap - load < th.pool_spare_cpus then
      return clear(tr("the tree's runnable load {load:%.1f} fills the {caps:%s} CPUs the job may use",
                      "进程树的可运行负载 {load:%.1f} 已占满作业可用的 {caps:%s} 个 CPU", { load = load, caps = caps }))
    end
    local py_tids = python_threads(ev)
    if not py_tids then
      return unknown(T("no sampled Python threads to tell native compute", "没有 Python 线程采样，无法判断原生计算"))
    end
    local envs = {}
    for _, c in ipairs(ev.children or {}) do envs[c.pid] = c.env end
    envs[ev.pid] = p.env

    -- Processes on a busy GPU wait for the device, not for CPU threads (issue 25).
    local on_busy_gpu = {}
    local g = ev.gpu
    if g and g.busy_pct and g.busy_pct >= th.gpu_busy_pct then
      for _, gp in ipairs(g.procs or {}) do on_busy_gpu[gp.pid or -1] = true end
    end
    local best
    for _, sp in ipairs(s.procs or {}) do
      local knob, alt = pool_knob(sp.libs)
      local tids = py_tids[sp.pid]
      if knob and tids and not on_busy_gpu[sp.pid] then
        local working_native, pegged = 0, nil
        for _, t in ipairs(sp.top or {}) do
          local tl = ((t.cpu_s or 0) + (t.wait_s or 0)) / s.window_s
          local pt = tids[t.tid]
          local w = pt and pt.window
          if not pt then
            if tl >= RUNNABLE_MIN_FRAC then working_native = working_native + 1 end
          elseif tl >= th.summary_cpu_bound_pct / 100 and w and (w.samples or 0) >= th.sampled_min_samples
              and (w.runnable_nogil_frac or 0) - (w.gpu_wait_frac or 0) >= th.pool_native_frac
              and not common.overhead_bound(w, th) -- brief GIL releases of tiny calls are no native compute
              and (not pegged or tl > pegged.load) then
            pegged = { tid = t.tid, load = tl, cpu_s = t.cpu_s or 0, wait_s = t.wait_s or 0, win = w }
          end
        end
        local pool = 1 + working_native
        if pegged and pool < cap and (not best or pegged.load > best.pegged.load) then
          best = { sp = sp, pegged = pegged, pool = pool, knob = knob, alt = alt }
        end
      end
    end
    if not best then
      return clear(tr("no pegged thread computing natively (torch/BLAS/OpenMP mapped) with a pool smaller than "
                      .. "the {caps:%s} CPUs; the tree's runnable load is {load:%.1f}",
                      "没有在原生计算（已加载 torch/BLAS/OpenMP）中占满一个核、且线程池小于 {caps:%s} 个 CPU 的线程；"
                      .. "进程树的可运行负载为 {load:%.1f}", { caps = caps, load = load }))
    end

    local sp, pg = best.sp, best.pegged
    local libs, seen_lib = {}, {}
    for _, l in ipairs(pool_libs(sp)) do
      if not seen_lib[l] then libs[#libs + 1], seen_lib[l] = l, true end
    end
    local at = ""
    local lv = pg.win.leaves and pg.win.leaves[1]
    if lv and lv.leaf then at = " at " .. common.where(lv.leaf) end
    local set_en = {}
    local env = envs[sp.pid]
    if env then
      for _, name in ipairs(POOL_VARS) do
        local n = tonumber(env[name] or "")
        if n and n < cap then set_en[#set_en + 1] = fmt("%s=%s", name, env[name]) end
      end
    end
    local env_en, env_zh
    if #set_en > 0 then
      env_en = "; set in its environment: " .. table.concat(set_en, ", ")
      env_zh = "；环境变量中设置了 " .. table.concat(set_en, "、")
    elseif env then
      env_en = "; none of OMP_NUM_THREADS/MKL_NUM_THREADS/OPENBLAS_NUM_THREADS is set below the CPUs"
      env_zh = "；OMP_NUM_THREADS/MKL_NUM_THREADS/OPENBLAS_NUM_THREADS 都没有设成小于 CPU 数"
    else
      env_en, env_zh = "; environment not readable", "；环境变量不可读"
    end
    local n = math.floor(cap)
    local knob_call = best.knob == "torch.set_num_threads" and fmt("torch.set_num_threads(%d)", n)
                      or fmt("%s=%d", best.knob, n)
    local alt = best.alt == "threadpoolctl.threadpool_limits" and fmt("threadpoolctl.threadpool_limits(%d)", n)
                or fmt("%s=%d", best.alt, n)
    local who = sp.pid == ev.pid and "the target" or fmt("worker pid %d", sp.pid)
    local who_zh = sp.pid == ev.pid and "目标进程" or fmt("worker pid %d", sp.pid)
    return hit {
      severity = "info",
      symptom = tr("CPU-bound in native compute on a pool of {pool} thread{plural} while the job may use "
                     .. "{caps:%s} CPUs (knob: {knob:%s})",
                   "在 {pool} 个线程的线程池里做原生计算、CPU 密集，而作业可用 {caps:%s} 个 CPU（设置项：{knob:%s}）",
                   { pool = best.pool, plural = best.pool == 1 and "" or "s", caps = caps, knob = best.knob }),
      evidence = tr("tid {tid} of {who:%s} (pid {pid}) wanted {load_pct:%.0f}% of a core (CPU {cpu_s:%.1f} s + "
                      .. "run-queue wait {wait_s:%.1f} s over {window_s:%.1f} s) and ran without the GIL in "
                      .. "{runnable_nogil_frac_pct:%.0f}% of {samples} samples{at:%s}; {pool} thread{plural} of that "
                      .. "process computed (the pool); the whole tree's runnable load is {load:%.1f} on {caps:%s} "
                      .. "CPUs the job may use; libraries: {libs_en}{env_en}.",
                    "{who_zh}（pid {pid}）的 tid {tid} 需要单核的 {load_pct:%.0f}%（{window_s:%.1f} 秒内 CPU {cpu_s:%.1f} 秒 + 运行队"
                      .. "列等待 {wait_s:%.1f} 秒），{samples} 个采样中 {runnable_nogil_frac_pct:%.0f}% 不持有 GIL 在运行{at:%s}；该进程中有"
                      .. " {pool} 个线程在计算（即线程池）；整棵进程树的可运行负载为 {load:%.1f}，作业可用 CPU {caps:%s} 个；库：{libs_zh}{env_zh}。",
                    { tid = pg.tid, who = who, pid = sp.pid, load_pct = 100 * pg.load, cpu_s = pg.cpu_s,
                      wait_s = pg.wait_s, window_s = s.window_s,
                      runnable_nogil_frac_pct = 100 * pg.win.runnable_nogil_frac, samples = pg.win.samples, at = at,
                      pool = best.pool, plural = best.pool == 1 and "" or "s", load = load, caps = caps,
                      libs_en = table.concat(libs, ", "), env_en = env_en, who_zh = who_zh,
                      libs_zh = table.concat(libs, "、"), env_zh = env_zh }),
      cause = tr("The native compute (torch/BLAS releases the GIL) runs on a pool of {pool} thread{plural}, so "
                   .. "{idle:%.1f} of the {caps:%s} CPUs the job may use stay idle while it is CPU-bound; the pool's "
                   .. "size is set by {knob:%s} (torch's default is the physical cores, or OMP_NUM_THREADS) "
                   .. "(SOP §8.5, §9).",
                 "原生计算（torch/BLAS 会释放 GIL）只在 {pool} 个线程的线程池里跑，作业 CPU 密集时可用的 {caps:%s} 个 CPU 中有 {idle:%.1f} 个空闲；线程池大小由 "
                   .. "{knob:%s} 决定（torch 默认取物理核数，或 OMP_NUM_THREADS）（SOP §8.5、§9）。",
                 { pool = best.pool, plural = best.pool == 1 and "" or "s", idle = cap - load, caps = caps,
                   knob = best.knob }),
      fix = tr("If nothing else needs those CPUs, size the pool to them: {knob_call:%s} (or remove the call that caps "
                 .. "it), or {alt:%s} in the job spec before Python starts. Leave it when the cap is deliberate "
                 .. "(other processes will share the CPUs, a latency-bound server); measure step time before and "
                 .. "after.",
               "若这些 CPU 没有别的用处，让线程池与之对齐：{knob_call:%s}（或去掉限制它的调用），或在 Python 启动前于作业配置里设 {alt:%s}。若是有意限制（其他进程会共用这些 CPU、延"
                 .. "迟敏感的服务）则保留；改动前后测 step 时间。",
               { knob_call = knob_call, alt = alt }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: the runnable load approaches {caps:%s} and the step time "
                    .. "improves.",
                  "`sopctl run --pid {pid} --duration 3`：可运行负载接近 {caps:%s}，step 时间改善。",
                  { pid = ev.pid, caps = caps }),
    }
  end,
}

rule {
  id = "cpu.throttled", section = "8.5", severity = "warn",
  title = T("the cgroup CPU quota throttles the job", "cgroup CPU 配额在限流作业"),
  doc = [[Hit when a CPU quota is set and at least throttled_pct of CFS periods were throttled over the window (high at
    throttled_high_pct); with --duration 0 the counts since the cgroup was created, warn at most. Unknown without
    cpu.stat.]],
  reads = { "cgroup.cpu.quota_cpus", "cgroup.cpu.throttled_pct", "cgroup.cpu.nr_periods",
            "cgroup.cpu.nr_throttled", "cgroup.cpu.path", "cgroup.cpu_path", "cgroup.path", "host.ncpu",
            "duration_s", "alive", "cgroup.cpu.period_us", "cgroup.cpu.quota_us",
            "cgroup.cpu.throttled_ms_per_s" },
  uses = { "throttled_pct", "throttled_high_pct" },
  refs = {
    "https://docs.kernel.org/scheduler/sched-bwc.html",
    "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/",
  },
  check = function(ev, th)
    if ev.alive == false then return no_proc(ev) end
    local cg = ev.cgroup
    local cpu = cg and cg.cpu
    if not cpu then return unknown(T("cgroup CPU controller not readable", "读不到 cgroup CPU 控制器")) end
    -- the cpu controller's own group (v1 may place memory elsewhere)
    local cpu_path = cpu.path or cg.cpu_path or cg.path
    local q = cpu.quota_cpus
    if not q then
      return clear(tr("no CPU quota on cgroup {cpu_path}",
                      "cgroup {cpu_path} 没有 CPU quota",
                      { cpu_path = cpu_path or "?" }))
    end
    local window = ev.duration_s and ev.duration_s > 0 and cpu.throttled_pct ~= nil
    local tp, since
    if window then
      tp = cpu.throttled_pct
      since = tr("over the {secs:%.1f} s window", "{secs:%.1f} 秒窗口内", { secs = ev.duration_s })
    elseif cpu.nr_periods and cpu.nr_periods > 0 and cpu.nr_throttled then
      tp = 100 * cpu.nr_throttled / cpu.nr_periods
      since = T("since the cgroup was created", "自 cgroup 创建以来")
    else
      return unknown(T("no throttling counters (cpu.stat) for the cgroup",
                       "该 cgroup 没有 throttling 计数（cpu.stat）"))
    end
    local qs = fmt("%.2f", q)
    local base = tr("cgroup {path:%s} quota {qs:%s} CPUs ({quota:%s}/{period:%s} us): throttled in {tp:%.0f}% of CFS "
                      .. "periods {since}",
                    "cgroup {path:%s} 的 quota 为 {qs:%s} 个 CPU（{quota:%s}/{period:%s} us）："
                      .. "{since}有 {tp:%.0f}% 的 CFS 周期被 throttle",
                    { path = cpu_path or "?", qs = qs, quota = tostring(cpu.quota_us or "?"),
                      period = tostring(cpu.period_us or "?"), tp = tp, since = since })
    if tp < th.throttled_pct then return clear(base) end

    local per_s, counts, host = T("", ""), T("", ""), T("", "")
    if window and cpu.throttled_ms_per_s then
      per_s = tr(", {ms:%.0f} ms/s throttled", "，每秒被 throttle {ms:%.0f} ms", { ms = cpu.throttled_ms_per_s })
    end
    if cpu.nr_throttled and cpu.nr_periods then
      counts = tr("; nr_throttled {throttled} of nr_periods {periods} in total",
                  "；累计 nr_throttled {throttled} / nr_periods {periods}",
                  { throttled = cpu.nr_throttled, periods = cpu.nr_periods })
    end
    if ev.host and ev.host.ncpu then
      host = tr("; host has {ncpu} CPUs", "；整机 {ncpu} 个 CPU", { ncpu = ev.host.ncpu })
    end
    local n = math.max(1, math.floor(q))
    return hit {
      severity = (window and tp >= th.throttled_high_pct) and "high" or "warn",
      symptom = tr("CPU quota throttling: {tp:%.0f}% of periods throttled",
                   "CPU quota 限流：{tp:%.0f}% 的周期被 throttle", { tp = tp }),
      evidence = tr("{base}{per_s}{counts}{host}.", "{base}{per_s}{counts}{host}。",
                    { base = base, per_s = per_s, counts = counts, host = host }),
      cause = tr("The job's threads want more CPU time than the {qs:%s}-CPU quota: once the cgroup "
                 .. "has used its quota in a period, all its threads stop until the next "
                 .. "period starts, which stalls steps and adds latency (CFS bandwidth "
                 .. "control).",
                 "作业线程需要的 CPU 时间超过 {qs:%s} 个 CPU 的 quota：cgroup 在一个周期内用完 quota 后，"
                 .. "它的所有线程都要停到下一个周期开始，step 卡顿、延迟上升（CFS 带宽控制）。", { qs = qs }),
      fix = tr("Match demand and quota (SOP §8.5): set OMP_NUM_THREADS, MKL_NUM_THREADS and "
               .. "OPENBLAS_NUM_THREADS to {n} (the quota), torch.set_num_threads({n}), and keep "
               .. "worker processes x threads per worker <= {n}; in Kubernetes set CPU "
               .. "requests == limits in whole CPUs, or raise the limit when the node has the "
               .. "cores.",
               "让需求与 quota 对齐（SOP §8.5）：OMP_NUM_THREADS、MKL_NUM_THREADS、OPENBLAS_NUM_THREADS "
               .. "设为 {n}（即 quota），torch.set_num_threads({n})，worker 进程数 × 每个 worker 线程数 <= {n}；"
               .. "Kubernetes 里 CPU requests == limits 且为整数核，或在节点有余量时调大 limit。", { n = n }),
      verify = tr("Read cpu.stat of {group_en} twice 10 s apart: nr_throttled stops growing; `sopctl run --duration "
                    .. "2` shows throttling below {throttled_pct:%g}%.",
                  "间隔 10 秒读两次 {group_zh} 的 cpu.stat：nr_throttled 不再增长；`sopctl run --duration 2` 显示 throttle 低于 "
                    .. "{throttled_pct:%g}%。",
                  { group_en = cpu_path or "the cgroup", throttled_pct = th.throttled_pct,
                    group_zh = cpu_path or "cgroup" }),
    }
  end,
}
