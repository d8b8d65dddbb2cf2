-- plugins/cpu.lua — SOP §4.4/§8.5: more busy threads than effective CPUs (thread pools sized for
-- the host, not the quota), and CFS quota throttling. Reads ev.threads, ev.children, ev.proc
-- (cpu_pct, env, libs), ev.effective_cpus, ev.cgroup.cpu, ev.host.ncpu. Thresholds: busy_thread_pct,
-- cpu_saturated_pct, oversub_high_ratio, throttled_pct, throttled_high_pct.

local common = require "plugins.common"
local T, no_proc = common.T, common.no_proc

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

rule {
  id = "cpu.oversubscribed", section = "8.5", severity = "warn",
  title = T("more busy threads (target + workers) than the CPUs the job may use, and those CPUs are full",
            "繁忙线程（目标 + worker）多于作业可用的 CPU，且这些 CPU 已满"),
  doc = [[Hit when busy threads (run + run-queue wait at least busy_thread_pct of a core; target threads and workers)
    outnumber the effective CPUs and the CPUs are full for the job: its threads' run + run-queue wait reaches
    cpu_saturated_pct of its capacity (min of effective CPUs and quota), or the quota throttles at least
    throttled_pct; high at oversub_high_ratio x the CPUs. A host kept busy by others does not count; GIL-bound
    threads sum to one core. Unknown with --duration 0, or when the host is full of other load while the job does
    not use its own capacity.]],
  reads = { "threads[].cpu_pct", "threads[].wait_pct", "children[].cpu_pct", "effective_cpus", "host.ncpu",
            "host.cpu.idle_pct", "cgroup.cpu", "proc.env", "proc.cpu_pct" },
  uses = { "busy_thread_pct", "cpu_saturated_pct", "oversub_high_ratio", "throttled_pct" },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    if not ev.duration_s or ev.duration_s <= 0 then
      return unknown(T("one snapshot (--duration 0): no CPU rates to tell busy threads",
                       "只有一次快照（--duration 0）：没有 CPU 速率，无法判断繁忙线程"))
    end
    local eff = ev.effective_cpus or (ev.host and ev.host.ncpu)
    if not eff then return unknown(T("effective CPU count unknown", "有效 CPU 数未知")) end
    local cpu = ev.cgroup and ev.cgroup.cpu or {}
    local cap = eff
    if cpu.quota_cpus and cpu.quota_cpus < cap then cap = cpu.quota_cpus end

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
    local base_en = fmt("%d busy threads (>= %g%% of a core each, target + workers) on %d "
                        .. "effective CPUs; the job uses %.0f%% CPU of a %.0f%% capacity",
                        busy, th.busy_thread_pct, eff, used, cap_pct)
    local base_zh = fmt("%d 个繁忙线程（各 >= 单核 %g%%，含目标与 worker），有效 CPU %d 个；作业共用 CPU %.0f%%，容量 %.0f%%",
                        busy, th.busy_thread_pct, eff, used, cap_pct)
    if host_idle then
      base_en = base_en .. fmt("; host CPUs %.0f%% idle", host_idle)
      base_zh = base_zh .. fmt("；整机 CPU 空闲 %.0f%%", host_idle)
    end
    if waited > 0 then
      base_en = base_en .. fmt("; its threads also waited %.0f%% of the window in the run queue", waited)
      base_zh = base_zh .. fmt("；其线程另在运行队列中等待了窗口的 %.0f%%", waited)
    end
    if busy <= eff then return clear(T(base_en, base_zh)) end
    if not saturated and demand >= full_pct then
      return unknown(T(base_en .. ": the host is full with other load, so these waits are for CPUs "
                       .. "others use; the job's own oversubscription cannot be told apart",
                       base_zh .. "：整机被其他负载占满，这些等待是在等别人占用的 CPU，无法区分作业自身的超额订阅"))
    end
    if not saturated then
      return clear(T(base_en .. ": the CPUs are not full", base_zh .. "：CPU 未跑满"))
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
    local cause_en = fmt("%d runnable threads share %d CPUs, so each runs about %.0f%% of the "
                         .. "time and pays context switches", busy, eff, share)
    local cause_zh = fmt("%d 个可运行线程分享 %d 个 CPU，每个只有约 %.0f%% 的时间在跑，还要付上下文切换",
                         busy, eff, share)
    if #over > 0 then
      cause_en = cause_en .. fmt("; %s asks for more threads than the %d effective CPUs",
                                 table.concat(over, ", "), eff)
      cause_zh = cause_zh .. fmt("；%s 要求的线程数超过了 %d 个有效 CPU", table.concat(over, "、"), eff)
    elseif unset and #unset == #POOL_VARS then
      local host_en = ncpu > eff and fmt("%d, not the %d the job may use", ncpu, eff) or fmt("%d", ncpu)
      local host_zh = ncpu > eff and fmt("%d，而不是作业可用的 %d 个", ncpu, eff) or fmt("%d", ncpu)
      cause_en = cause_en .. fmt("; with the thread-pool variables unset, each OpenMP/BLAS/torch "
                                 .. "pool starts one thread per host CPU (%s) and every worker "
                                 .. "process starts its own pool", host_en)
      cause_zh = cause_zh .. fmt("；线程池变量未设置时，每个 OpenMP/BLAS/torch 线程池按整机 CPU 数（%s）"
                                 .. "开线程，且每个 worker 进程各开一套", host_zh)
    end
    if nworkers > 0 then
      cause_en = cause_en .. fmt("; %d busy worker processes take part", nworkers)
      cause_zh = cause_zh .. fmt("；其中有 %d 个繁忙 worker 进程", nworkers)
    end
    cause_en = cause_en .. " (SOP §4.4, §8.5)."
    cause_zh = cause_zh .. "（SOP §4.4、§8.5）。"

    return hit {
      severity = busy >= th.oversub_high_ratio * eff and "high" or "warn",
      symptom = T(fmt("%d busy threads compete for %d effective CPUs", busy, eff),
                  fmt("%d 个繁忙线程争抢 %d 个有效 CPU", busy, eff)),
      evidence = T(fmt("%s (%s); %s%s; busiest: %s.", base_en, lim_s,
                       table.concat(env_en, ", "), libs_s, table.concat(tl, ", ")),
                   fmt("%s（%s）；%s%s；最忙：%s。", base_zh, lim_s, table.concat(env_zh, "，"),
                       libs_z, table.concat(tl, "，"))),
      cause = T(cause_en, cause_zh),
      fix = T(fmt("Size every pool to the %d effective CPUs: in the job spec, before Python "
                  .. "starts, export OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS "
                  .. "= %d divided by the number of busy worker processes (at least 1); in "
                  .. "code, threadpoolctl.threadpool_limits(1) inside each DataLoader/"
                  .. "multiprocessing worker and torch.set_num_threads(%d) in the main "
                  .. "process; keep CPU-bound worker processes <= %d. Do not raise num_workers "
                  .. "or thread counts to compensate: change one number and measure step time.",
                  eff, eff, eff, eff),
              fmt("让所有线程池对齐 %d 个有效 CPU：在作业配置里、Python 启动前导出 OMP_NUM_THREADS、"
                  .. "MKL_NUM_THREADS、OPENBLAS_NUM_THREADS = %d 除以繁忙 worker 进程数（至少 1）；代码里在"
                  .. "每个 DataLoader/multiprocessing worker 内调用 threadpoolctl.threadpool_limits(1)，主进程"
                  .. " torch.set_num_threads(%d)；CPU 密集的 worker 进程 <= %d 个。不要靠加 num_workers 或"
                  .. "线程数来补偿：一次只改一个数并测 step 时间。", eff, eff, eff, eff)),
      verify = T(fmt("`sopctl run --pid %d --duration 2`: busy threads <= %d, cpu.throttled "
                     .. "clear, and the step time (samples/s) improves.", ev.pid, eff),
                 fmt("`sopctl run --pid %d --duration 2`：繁忙线程 <= %d，cpu.throttled 为 clear，"
                     .. "step 时间（samples/s）改善。", ev.pid, eff)),
      refs = {
        "https://github.com/joblib/threadpoolctl",
        "https://pytorch.org/docs/stable/generated/torch.set_num_threads.html",
        "https://docs.kernel.org/scheduler/sched-bwc.html",
      },
    }
  end,
}

rule {
  id = "cpu.throttled", section = "8.5", severity = "warn",
  title = T("the cgroup CPU quota throttles the job", "cgroup CPU 配额在限流作业"),
  doc = [[Hit when a CPU quota is set and at least throttled_pct of CFS periods were throttled over the window (high at
    throttled_high_pct); with --duration 0 the counts since the cgroup was created, warn at most. Unknown without
    cpu.stat.]],
  reads = { "cgroup.cpu.quota_cpus", "cgroup.cpu.throttled_pct", "cgroup.cpu.nr_periods", "cgroup.cpu.nr_throttled",
            "cgroup.cpu.path", "cgroup.cpu_path", "cgroup.path", "effective_cpus", "host.ncpu", "duration_s" },
  uses = { "throttled_pct", "throttled_high_pct" },
  check = function(ev, th)
    if ev.alive == false then return no_proc(ev) end
    local cg = ev.cgroup
    local cpu = cg and cg.cpu
    if not cpu then return unknown(T("cgroup CPU controller not readable", "读不到 cgroup CPU 控制器")) end
    -- the cpu controller's own group (v1 may place memory elsewhere)
    local cpu_path = cpu.path or cg.cpu_path or cg.path
    local q = cpu.quota_cpus
    if not q then
      return clear(T(fmt("no CPU quota on cgroup %s", cpu_path or "?"),
                     fmt("cgroup %s 没有 CPU quota", cpu_path or "?")))
    end
    local window = ev.duration_s and ev.duration_s > 0 and cpu.throttled_pct ~= nil
    local tp, since_en, since_zh
    if window then
      tp = cpu.throttled_pct
      since_en = fmt("over the %.1f s window", ev.duration_s)
      since_zh = fmt("%.1f 秒窗口内", ev.duration_s)
    elseif cpu.nr_periods and cpu.nr_periods > 0 and cpu.nr_throttled then
      tp = 100 * cpu.nr_throttled / cpu.nr_periods
      since_en, since_zh = "since the cgroup was created", "自 cgroup 创建以来"
    else
      return unknown(T("no throttling counters (cpu.stat) for the cgroup",
                       "该 cgroup 没有 throttling 计数（cpu.stat）"))
    end
    local qs = fmt("%.2f", q)
    local base_en = fmt("cgroup %s quota %s CPUs (%s/%s us): throttled in %.0f%% of CFS periods %s",
                        cpu_path or "?", qs, tostring(cpu.quota_us or "?"),
                        tostring(cpu.period_us or "?"), tp, since_en)
    local base_zh = fmt("cgroup %s 的 quota 为 %s 个 CPU（%s/%s us）：%s有 %.0f%% 的 CFS 周期被 throttle",
                        cpu_path or "?", qs, tostring(cpu.quota_us or "?"),
                        tostring(cpu.period_us or "?"), since_zh, tp)
    if tp < th.throttled_pct then return clear(T(base_en, base_zh)) end

    local ex_en, ex_zh = "", ""
    if window and cpu.throttled_ms_per_s then
      ex_en = fmt(", %.0f ms/s throttled", cpu.throttled_ms_per_s)
      ex_zh = fmt("，每秒被 throttle %.0f ms", cpu.throttled_ms_per_s)
    end
    if cpu.nr_throttled and cpu.nr_periods then
      ex_en = ex_en .. fmt("; nr_throttled %d of nr_periods %d in total", cpu.nr_throttled, cpu.nr_periods)
      ex_zh = ex_zh .. fmt("；累计 nr_throttled %d / nr_periods %d", cpu.nr_throttled, cpu.nr_periods)
    end
    if ev.host and ev.host.ncpu then
      ex_en = ex_en .. fmt("; host has %d CPUs", ev.host.ncpu)
      ex_zh = ex_zh .. fmt("；整机 %d 个 CPU", ev.host.ncpu)
    end
    local n = math.max(1, math.floor(q))
    return hit {
      severity = (window and tp >= th.throttled_high_pct) and "high" or "warn",
      symptom = T(fmt("CPU quota throttling: %.0f%% of periods throttled", tp),
                  fmt("CPU quota 限流：%.0f%% 的周期被 throttle", tp)),
      evidence = T(base_en .. ex_en .. ".", base_zh .. ex_zh .. "。"),
      cause = T(fmt("The job's threads want more CPU time than the %s-CPU quota: once the cgroup "
                    .. "has used its quota in a period, all its threads stop until the next "
                    .. "period starts, which stalls steps and adds latency (CFS bandwidth "
                    .. "control).", qs),
                fmt("作业线程需要的 CPU 时间超过 %s 个 CPU 的 quota：cgroup 在一个周期内用完 quota 后，"
                    .. "它的所有线程都要停到下一个周期开始，step 卡顿、延迟上升（CFS 带宽控制）。", qs)),
      fix = T(fmt("Match demand and quota (SOP §8.5): set OMP_NUM_THREADS, MKL_NUM_THREADS and "
                  .. "OPENBLAS_NUM_THREADS to %d (the quota), torch.set_num_threads(%d), and keep "
                  .. "worker processes x threads per worker <= %d; in Kubernetes set CPU "
                  .. "requests == limits in whole CPUs, or raise the limit when the node has the "
                  .. "cores.", n, n, n),
              fmt("让需求与 quota 对齐（SOP §8.5）：OMP_NUM_THREADS、MKL_NUM_THREADS、OPENBLAS_NUM_THREADS "
                  .. "设为 %d（即 quota），torch.set_num_threads(%d)，worker 进程数 × 每个 worker 线程数 <= %d；"
                  .. "Kubernetes 里 CPU requests == limits 且为整数核，或在节点有余量时调大 limit。", n, n, n)),
      verify = T(fmt("Read cpu.stat of %s twice 10 s apart: nr_throttled stops growing; `sopctl run "
                     .. "--duration 2` shows throttling below %g%%.", cpu_path or "the cgroup",
                     th.throttled_pct),
                 fmt("间隔 10 秒读两次 %s 的 cpu.stat：nr_throttled 不再增长；`sopctl run --duration 2` "
                     .. "显示 throttle 低于 %g%%。", cpu_path or "cgroup", th.throttled_pct)),
      refs = {
        "https://docs.kernel.org/scheduler/sched-bwc.html",
        "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/",
      },
    }
  end,
}
