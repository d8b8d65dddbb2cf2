-- plugins/summary.lua — SOP §9: the one-line verdict of every run, the decision tree "CPU-bound vs
-- IO-bound": is a CPU full (one core: a single thread or the GIL; many cores: real CPU work)?
-- If not, is the job waiting on the disk (D state, disk utilisation; random or sequential)? If
-- not, it waits on the network, on locks or queues, or for work. An info finding: the numbers,
-- the branch, and the SOP section to read next. Reads the job's CPU (target + workers), thread
-- states and sampled stacks, IO rates and the disks of the files it reads.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local ends_with = common.ends_with

-- What the sampled stacks of the job's threads wait in, by share of samples: the innermost
-- frame of each top stack, sorted into network / locks+queues / DataLoader data.
local function waits(ev)
  local py = ev.python
  local out = { network = 0, locks = 0, data = 0, total = 0 }
  if not py or not py.threads then return out end
  for _, t in ipairs(py.threads) do
    local w = t.window
    if w and w.samples and w.samples > 0 then
      out.total = out.total + w.samples
      out.data = out.data + (w.data_wait_frac or 0) * w.samples
      for _, s in ipairs(w.top_stacks or {}) do
        local inner = s.stack and s.stack:match("([^;]*)$") or ""
        local file = inner:match("%(([^)]*)%)") or ""
        if file == "selectors.py" or file == "socket.py" or file == "ssl.py" or file == "client.py"
            or file == "connection.py" and inner:find("recv", 1, true) then
          out.network = out.network + s.count
        elseif file == "threading.py" or file == "queue.py" or ends_with(inner, "(synchronize.py)") then
          out.locks = out.locks + s.count
        end
      end
    end
  end
  return out
end

-- The target's sampled Python threads on a GPU job (issue 25): the most waiting for batches, the
-- most busy on the host (GIL or native, its GPU waits aside) and the one most at one GPU sync site.
local function gpu_threads(ev, th)
  local out = { data = 0, host = 0, gpu_wait = 0 }
  for _, t in ipairs(ev.python and ev.python.threads or {}) do
    local w = t.window
    if w and (w.samples or 0) >= th.sampled_min_samples then
      local gw = w.gpu_wait_frac or 0
      if (w.data_wait_frac or 0) > out.data then out.data, out.data_tid = w.data_wait_frac, t.tid end
      local host = (w.active_frac or 0) - gw
      if host > out.host then out.host, out.host_tid, out.host_w = host, t.tid, w end
      if gw > out.gpu_wait then out.gpu_wait, out.gpu_tid, out.gpu_w = gw, t.tid, w end
    end
  end
  return out
end

-- The §9 verdict of a job whose GPU evidence says how busy the device was: GPU-bound (healthy), or,
-- the GPU idle, input-bound (the loop waits for batches) or host-bound (a Python thread busy between
-- kernels). nil: the CPU/IO tree decides.
local function gpu_verdict(ev, th, who, who_zh)
  local u = common.gpu_use(ev)
  if not u then return nil end
  local g = gpu_threads(ev, th)
  local gpu = tr("the GPU ({names:%s}) was {busy:%.0f}% busy (mean SM utilisation over {duration_s:%.1f} s{idle})",
                 "GPU（{names:%s}）在 {duration_s:%.1f} 秒内利用率 {busy:%.0f}%（SM 平均{idle}）",
                 { names = u.names, busy = u.busy_pct, duration_s = ev.duration_s,
                   idle = u.idle_frac and tr(", idle in {i:%.0f}% of the readings", "，{i:%.0f}% 的读数空闲",
                                             { i = 100 * u.idle_frac }) or T("", "") })
  local site = function(w)
    if w and w.gpu_sync_site and (w.gpu_sync_site_frac or 0) > 0 then
      return tr(", most at {site:%s} ({frac:%.0f}% of its samples)", "，最多在 {site:%s}（占其样本 {frac:%.0f}%）",
                { site = w.gpu_sync_site, frac = 100 * w.gpu_sync_site_frac })
    end
    return T("", "")
  end
  if u.busy_pct >= th.gpu_busy_pct then
    local wait_txt = g.gpu_tid and tr("; thread {tid} waited on the GPU in {frac:%.0f}% of its samples{site}",
                                   "；线程 {tid} 在 {frac:%.0f}% 的样本中等 GPU{site}",
                                   { tid = g.gpu_tid, frac = 100 * g.gpu_wait, site = site(g.gpu_w) }) or T("", "")
    return hit {
      symptom = T("GPU-bound: the host waits on the GPU (healthy)", "GPU 密集：主机在等 GPU（正常）"),
      evidence = tr("{gpu}{waits}; {who:%s} used {job:%.0f}% CPU", "{gpu}{waits}；{who_zh}用了 {job:%.0f}% CPU",
                    { gpu = gpu, waits = wait_txt, who = who, who_zh = who_zh, job = ev.proc.cpu_pct }),
      cause = T("§9 on a GPU job: the device is the limit and the host keeps it fed; a host thread at 100% CPU "
                .. "there is spinning in the driver's wait, not computing. More CPU threads cannot make it faster.",
                "§9（GPU 作业）：瓶颈在设备，主机喂得上；此时主机线程 100% CPU 是在驱动里自旋等待，不是在计算。"
                .. "加 CPU 线程不会更快。"),
      fix = T("Nothing to fix on the host. To go faster, profile the GPU side (torch.profiler, Nsight Systems) and "
              .. "make the device work cheaper: bf16/AMP, fused kernels or torch.compile, a larger batch per step.",
              "主机侧无需修改。要更快，就分析 GPU 侧（torch.profiler、Nsight Systems）并降低设备上的开销：bf16/AMP、"
              .. "融合 kernel 或 torch.compile、每步更大的 batch。"),
      verify = tr("`nvidia-smi dmon -s u` during training: SM utilisation stays high; `sopctl run --pid {pid} "
                  .. "--duration 5` says GPU-bound", "训练时 `nvidia-smi dmon -s u`：SM 利用率保持高位；"
                  .. "`sopctl run --pid {pid} --duration 5` 结论为 GPU 密集", { pid = ev.pid }),
      refs = { "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html",
               "https://docs.nvidia.com/deploy/nvml-api/" },
    }
  end
  if u.busy_pct > th.gpu_idle_pct then return nil end
  if 100 * g.data >= th.loader_wait_pct then
    return hit {
      symptom = T("input-bound: the GPU idles while the training loop waits for batches",
                  "输入瓶颈：训练循环在等 batch，GPU 空闲"),
      evidence = tr("{gpu}; thread {tid} waited for a DataLoader batch in {frac:%.0f}% of its samples",
                    "{gpu}；线程 {tid} 在 {frac:%.0f}% 的样本中等 DataLoader 的 batch",
                    { gpu = gpu, tid = g.data_tid, frac = 100 * g.data }),
      cause = T("§9 → §6: the input pipeline cannot produce batches as fast as the GPU consumes them, so the device "
                .. "sits idle between steps (see the dataloader.* findings for why).",
                "§9 → §6：输入管道产出 batch 的速度跟不上 GPU 消耗，设备在 step 之间空闲（原因见 dataloader.* 结论）。"),
      fix = T("Follow the dataloader.* findings (§6.2-§6.4): workers, cheaper per-sample work, sharded sequential "
              .. "reads, pin_memory=True and prefetch_factor 2-4.",
              "按 dataloader.* 结论处理（§6.2~§6.4）：worker 数、降低逐样本开销、分片顺序读、pin_memory=True、"
              .. "prefetch_factor 2~4。"),
      verify = tr("`sopctl run --pid {pid} --duration 5`: the GPU busier and the loop's batch wait lower",
                  "`sopctl run --pid {pid} --duration 5`：GPU 利用率上升，循环等 batch 的比例下降", { pid = ev.pid }),
      refs = { "https://pytorch.org/docs/stable/data.html" },
    }
  end
  -- num_workers=0: the loop loads its batches itself (inline fetch), the GPU idle meanwhile.
  local inline = 0
  for _, t in ipairs(ev.python and ev.python.threads or {}) do
    local f = t.window and (t.window.samples or 0) >= th.sampled_min_samples
              and common.share(t, "_SingleProcessDataLoaderIter", true) or 0
    if f > inline then inline = f end
  end
  if 100 * inline >= th.loader_inline_fetch_pct then
    return hit {
      symptom = T("input-bound: the GPU idles while the training loop loads its own batches (num_workers=0)",
                  "输入瓶颈：训练循环自己加载 batch（num_workers=0），GPU 空闲"),
      evidence = tr("{gpu}; the main thread was inside the single-process DataLoader in {frac:%.0f}% of its samples",
                    "{gpu}；主线程 {frac:%.0f}% 的样本在单进程 DataLoader 里", { gpu = gpu, frac = 100 * inline }),
      cause = T("§9 → §6.2: loading and training take turns in one process, so the GPU waits for every batch.",
                "§9 → §6.2：加载与训练在同一进程里轮流进行，GPU 要等每个 batch。"),
      fix = T("See dataloader.no_workers: load in worker processes (num_workers >= 2, persistent_workers=True).",
              "见 dataloader.no_workers：用 worker 进程加载（num_workers >= 2，persistent_workers=True）。"),
      verify = tr("`sopctl run --pid {pid} --duration 5`: the GPU busier",
                  "`sopctl run --pid {pid} --duration 5`：GPU 利用率上升", { pid = ev.pid }),
      refs = { "https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading" },
    }
  end
  if g.host >= th.gpu_host_busy_frac then
    local w = g.host_w
    local sync = w and (w.gpu_sync_site_frac or 0) >= th.gpu_sync_frac
    return hit {
      symptom = T("host-bound: the GPU idles while a Python thread works between kernels",
                  "主机瓶颈：Python 线程在 kernel 之间忙碌，GPU 空闲"),
      evidence = tr("{gpu}; thread {tid} ran on the host (GIL or native code, GPU waits aside) in {frac:%.0f}% of its "
                      .. "samples and waited on the GPU in {gw:%.0f}%{site}",
                    "{gpu}；线程 {tid} 在 {frac:%.0f}% 的样本中在主机上运行（持有 GIL 或原生代码，不含等 GPU），"
                      .. "{gw:%.0f}% 在等 GPU{site}",
                    { gpu = gpu, tid = g.host_tid, frac = 100 * g.host, gw = 100 * ((w and w.gpu_wait_frac) or 0),
                      site = site(w) }),
      cause = T(sync and "§9 on a GPU job: the host cannot queue work ahead: each step waits for the GPU at a "
                .. "device-to-host sync (see gpu.sync_per_step), then the GPU idles while Python prepares the next "
                .. "step." or "§9 on a GPU job: the host is the limit: Python between kernels (launch overhead of "
                .. "many small ops, per-step Python work) leaves the device idle.",
                sync and "§9（GPU 作业）：主机无法提前排队工作：每个 step 都在一次设备到主机的同步处等 GPU（见 "
                .. "gpu.sync_per_step），然后 GPU 在 Python 准备下一个 step 时空闲。"
                or "§9（GPU 作业）：瓶颈在主机：kernel 之间的 Python（大量小算子的启动开销、每步的 Python 工作）让设备空闲。"),
      fix = T("Give the GPU bigger pieces of work: a larger batch, fused ops or torch.compile / CUDA graphs to cut "
              .. "launch overhead, move per-step Python (metrics, logging, .item()) out of the hot loop or to every N "
              .. "steps; profile with `sopctl record --pid N --duration 10 -o hot.svg`.",
              "给 GPU 更大块的工作：更大的 batch，用融合算子或 torch.compile / CUDA graphs 降低启动开销，把每步的 "
              .. "Python（指标、日志、.item()）移出热循环或每 N 步一次；用 `sopctl record --pid N --duration 10 -o hot.svg` 分析。"),
      verify = tr("`sopctl run --pid {pid} --duration 5`: the GPU busier at the same or a higher step rate",
                  "`sopctl run --pid {pid} --duration 5`：相同或更高 step 速率下 GPU 利用率更高", { pid = ev.pid }),
      refs = { "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html",
               "https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs" },
    }
  end
  return nil
end

rule {
  id = "summary.verdict", section = "9", severity = "info",
  title = T("the run's verdict: CPU-bound on one core or many, IO-bound (random or sequential), or waiting "
            .. "on the network, locks or for work", "本次运行的结论：CPU 密集（单核或多核）、IO 密集（随机或顺序），"
            .. "或在等网络、锁或任务"),
  doc = [[Always an info finding when the window measured CPU. CPU-bound when the job (target + workers)
    uses at least summary_cpu_bound_pct of one core and a thread (or single-threaded worker) is pegged at
    that, or the target's threads together reach it (taking turns: the GIL), or the job fills that share
    of its capacity (effective CPUs, or a smaller CPU quota): on one core below 1.5 cores, else on many
    cores. Starved when its threads'
    run-queue wait sums to at least that, or the host is at most 10% idle (other processes hold the
    CPUs), unless it is IO-bound (below) and its sampled threads wait on storage at least as long as in
    the run queue (summed, in % of a core). Otherwise
    IO-bound when at least summary_io_wait_pct of the job's threads/samples are in D state or a disk it
    reads is at least io_util_pct busy; random when the mean read is at most small_read_max_bytes.
    Page faults of mapped files count as waits on storage (np.memmap, mmap=True loads: no read() calls):
    when the job reads at least page_cache_min_disk_kb_per_s from storage (or a thread waits on it in
    mapped_wait_frac of its samples) through at least mapped_fault_min_per_s major faults/s with read()
    bringing less than mapped_read_share of the bytes,
    a sampled thread's fault_wait_frac (D state or a major fault since the previous sample) counts in
    place of its D-state share; it is then IO-bound on page faults of its mapped files (random when each
    fault reads at most random_read_max_request_kb, or file-backed memory grows by less than
    mapped_touch_ratio of the bytes read).
    Otherwise waiting: the sampled stacks say on what (network, locks/queues, DataLoader data); a lock
    convoy (threads.lock_contention's test) is named with its site and holder. Unknown
    with --duration 0 or for a process that is gone.
    A GPU job (ev.gpu with utilisation readings of a device the tree uses) is judged on the device first:
    GPU-bound (healthy) when it was at least gpu_busy_pct busy; at most gpu_idle_pct busy, input-bound when a
    sampled thread waited for DataLoader batches at least loader_wait_pct of its samples or sat in a
    single-process DataLoader at least loader_inline_fetch_pct, else host-bound when a thread ran on the host
    (active, its GPU waits aside) at least gpu_host_busy_frac of its samples (naming its GPU sync site); otherwise
    the CPU/IO tree above. Without GPU evidence the verdicts are exactly those above.]],
  reads = { "sched.runnable_load", "proc.cpu_pct", "children[].cpu_pct", "children[].threads",
            "threads[].cpu_pct", "threads[].wait_pct", "threads[].state", "children[].state", "host.load1",
            "host.ncpu", "host.cpu.idle_pct", "cgroup.cpu.quota_cpus", "effective_cpus", "proc.io",
            "io_files[].disk_util_pct", "host.disks[].util_pct", "python.threads[].window",
            "proc.majflt_per_s", "proc.mem.file_growth_kb_per_s", "duration_s", "alive", "children[].pid",
            "host.disks[].name", "io_files[].disk", "pid", "threads[].tid", "python.threads[].tid", "gpu.busy_pct",
            "gpu.idle_frac",
            "gpu.devices[].name", "gpu.devices[].used_by_tree", "gpu.devices[].util_samples", "python.locks[].site",
            "python.locks[].threads", "python.locks[].wait_frac", "python.locks[].held_frac",
            "python.locks[].crowded_frac", "python.locks[].holder", "python.locks[].one_word_frac",
            "threads[].wait_pct",
            "python.concurrency.contended_frac", "threads[].wait", "threads[].name", "python.threads[].frames",
            "python.threads[].name", "proc.cmdline", "proc.cwd", "proc.env", "proc.threads", "proc.threads_start",
            "proc.zombies", "proc.zombies_start", "proc.rss_growth_kb_per_s", "fds.first", "fds.last",
            "fds.rises_first_half", "fds.rises_second_half", "python.tasks.pending_growth" },
  uses = { "hang_cpu_pct", "hang_wait_frac", "grow_min_threads", "grow_min_fds",
           "zombie_min_growth", "growth_min_window_s", "growth_floor_mb_per_s", "lock_min_threads", "lock_wait_pct",
           "lock_held_pct", "lock_handoff_pct", "summary_cpu_bound_pct",
           "summary_io_wait_pct", "io_util_pct", "small_read_max_bytes",
           "page_cache_min_disk_kb_per_s", "mapped_fault_min_per_s", "mapped_read_share",
           "random_read_max_request_kb", "mapped_touch_ratio", "mapped_wait_frac", "gpu_busy_pct", "gpu_idle_pct",
           "gpu_host_busy_frac", "gpu_sync_frac", "loader_wait_pct", "loader_inline_fetch_pct",
           "sampled_min_samples", "gil_tick_contended_pct" },
  symptom = T("CPU-bound on many cores", "CPU 密集：用满多个核"),
  cause = T("Real parallel CPU work (§9: many cores full). Faster means less work per item, not more threads.",
            "真正的并行 CPU 计算（§9：多核打满）。要更快只能减少每条数据的计算量，而不是加线程。"),
  fix = T("Profile the hot thread (`sopctl record --pid N --duration 10 -o hot.svg`); vectorize it "
          .. "(numpy/torch, numba) or split it over processes (§4.3).",
          "对热点线程采样（`sopctl record --pid N --duration 10 -o hot.svg`）；向量化（numpy/torch、numba）"
          .. "或拆到多进程（§4.3）。"),
  refs = { "https://fio.readthedocs.io/", "https://www.brendangregg.com/linuxperf.html" },
  check = function(ev, th)
    if ev.alive == false then
      return unknown(T("the process is gone: no live state to classify", "进程已不存在：无法判断运行状态"))
    end
    local p = ev.proc or {}
    if not ev.duration_s or ev.duration_s <= 0 or not p.cpu_pct then
      return common.one_snapshot("no CPU rates to classify the run", "没有 CPU 速率，无法判断")
    end
    local eff = common.effective_cpus(ev) or 1
    -- A zombie (exited, not yet reaped by its parent) is not a worker: counted apart (issue 38).
    local job, nworkers, nzombies = p.cpu_pct, 0, 0
    for _, c in ipairs(ev.children or {}) do
      if c.state == "Z" then
        nzombies = nzombies + 1
      elseif c.cpu_pct then
        job, nworkers = job + c.cpu_pct, nworkers + 1
      end
    end
    local busiest, busiest_tid, runq = 0, nil, 0
    for _, t in ipairs(ev.threads or {}) do
      if t.cpu_pct and t.cpu_pct > busiest then busiest, busiest_tid = t.cpu_pct, t.tid end
      runq = runq + (t.wait_pct or 0)
    end
    -- A worker process pegged at one core counts like a thread (its threads are not listed).
    for _, c in ipairs(ev.children or {}) do
      if c.cpu_pct and c.cpu_pct > busiest and (c.threads or 1) == 1 then
        busiest, busiest_tid = c.cpu_pct, fmt("%d (worker)", c.pid)
      end
    end
    local who = nworkers > 0 and fmt("process + %d workers", nworkers) or "process"
    local who_zh = nworkers > 0 and fmt("进程 + %d 个 worker", nworkers) or "进程"
    if nzombies > 0 then
      who = who .. fmt(" (and %d exited children not reaped: zombies)", nzombies)
      who_zh = who_zh .. fmt("（另有 %d 个已退出未回收的子进程：僵尸进程）", nzombies)
    end
    local cores = job / 100

    -- A GPU job (ev.gpu): the device's busy share decides first.
    local on_gpu = gpu_verdict(ev, th, who, who_zh)
    if on_gpu then return on_gpu end

    -- CPU-bound: one thread pegged; or the target's threads together at about a core (taking
    -- turns: the GIL); or the job fills its effective CPUs.
    -- The job's capacity: its effective CPUs, or a smaller CFS quota (0.5 CPU is half a core).
    local cap = common.capacity_cpus(ev, eff)
    local pegged = busiest >= th.summary_cpu_bound_pct
    local turns = p.cpu_pct >= th.summary_cpu_bound_pct
    local full = cores >= cap * th.summary_cpu_bound_pct / 100
    -- The whole tree's runnable load (ev.sched: CPU + run-queue wait / window) above the CPUs
    -- it may use: the job fills them by itself, whatever else the host runs (its wait is for
    -- its own threads), so it is CPU-bound, not starved by others.
    -- Threads taking turns on the GIL at most ticks run on one core at a time, however many of
    -- them are runnable: a waiter wakes to ask for the GIL and queues for a CPU too (its run-queue
    -- wait grows with the host's load, not with the work).
    local conc = ev.python and ev.python.concurrency
    local gil_turns = nworkers == 0 and conc and conc.contended_frac
                      and 100 * conc.contended_frac >= th.gil_tick_contended_pct
    local wanted = ev.sched and ev.sched.runnable_load
    local own_full = wanted ~= nil and wanted >= cap and not gil_turns
    -- "many cores" is said of the cores it used, never of the ones it queued for (issue 38: beside
    -- foreign load a job at 0.6 of a core was called "CPU-bound on many cores")
    local busy_cores = cores
    if full or own_full or (job >= th.summary_cpu_bound_pct and (pegged or turns)) then
      if own_full and wanted > cap then
        who = who .. fmt(" (runnable load %.1f on %g CPUs: its own threads queue for them)", wanted, cap)
        who_zh = who_zh .. fmt("（可运行负载 %.1f，CPU %g 个：自身线程在排队）", wanted, cap)
      end
      if busy_cores < 1.5 or cap < 2 or gil_turns then
        local single = pegged
        -- Threads taking turns on one lock (§4.2) share a core because of the lock, not the GIL.
        local convoy = not single and common.lock_convoy(ev, th)
        if convoy then
          return hit {
            symptom = T("CPU-bound on one core: threads take turns on one lock",
                        "CPU 密集：只用到一个核，线程轮流持有同一把锁"),
            evidence = tr("{who:%s} used {job:%.0f}% CPU ({cores:%.1f} cores) of {eff} effective CPUs over "
                            .. "{duration_s:%.1f} s; {n} threads queue on one lock at {site}",
                          "{who_zh}在 {duration_s:%.1f} 秒内用了 {job:%.0f}% CPU（{cores:%.1f} 个核），有效 CPU {eff} 个；"
                            .. "{n} 个线程在 {site} 排队等同一把锁",
                          { who = who, job = job, cores = cores, eff = eff, duration_s = ev.duration_s,
                            n = convoy.threads, site = convoy.site or "?", who_zh = who_zh }),
            cause = T("The work runs under one lock, one thread at a time (§4.2): the lock, not the GIL, caps it "
                      .. "at a core.", "工作在同一把锁下一次只由一个线程执行（§4.2）：是锁而不是 GIL 把它限制在一个核上。"),
            fix = T("See threads.lock_contention.", "见 threads.lock_contention。"),
            verify = tr("`sopctl run --pid {pid} --duration 5`: more cores in use, no threads.lock_contention",
                        "`sopctl run --pid {pid} --duration 5`：用到更多核，不再有 threads.lock_contention",
                        { pid = ev.pid }),
          }
        end
        return hit {
          symptom = T("CPU-bound on one core", "CPU 密集：只用到一个核"),
          evidence = tr("{who:%s} used {job:%.0f}% CPU ({cores:%.1f} cores) of {eff} effective CPUs over "
                          .. "{duration_s:%.1f} s; busiest thread tid {busiest_tid} at {busiest:%.0f}%",
                        "{who_zh}在 {duration_s:%.1f} 秒内用了 {job:%.0f}% CPU（{cores:%.1f} 个核），有效 CPU {eff} 个；最忙的线程 tid "
                          .. "{busiest_tid} 占 {busiest:%.0f}%",
                        { who = who, job = job, cores = cores, eff = eff, duration_s = ev.duration_s,
                          busiest_tid = tostring(busiest_tid), busiest = busiest, who_zh = who_zh }),
          cause = T(single and "One thread does the work: Python code runs on one core at a time (§9: single core "
                    .. "at 100% → the GIL or a serial loop; see the §4 and §3 findings)."
                    or "Several threads share about one core: they take turns (the GIL, §4).",
                    single and "一个线程在干活：Python 代码同一时刻只在一个核上跑（§9：单核 100% → GIL 或串行循环；"
                    .. "看 §4、§3 的结论）。" or "多个线程共用约一个核，在轮流执行（GIL，§4）。"),
          verify = tr("`sopctl run --pid {pid} --duration 5`: more cores in use, or less CPU per unit of work",
                      "`sopctl run --pid {pid} --duration 5`：用到更多核，或单位工作量的 CPU 更少", { pid = ev.pid }),
          refs = { "https://www.brendangregg.com/linuxperf.html",
                   "https://docs.python.org/3/library/multiprocessing.html" },
        }
      end
      return hit {
        evidence = tr("{who:%s} used {job:%.0f}% CPU ({cores:%.1f} cores, {eff_pct:%.0f}% of {eff} effective "
                        .. "CPUs) over {duration_s:%.1f} s",
                      "{who_zh}在 {duration_s:%.1f} 秒内用了 {job:%.0f}% CPU（{cores:%.1f} 个核，占 {eff} 个有效 CPU 的 "
                        .. "{eff_pct:%.0f}%）",
                      { who = who, job = job, cores = cores, eff_pct = 100 * cores / eff, eff = eff,
                        duration_s = ev.duration_s, who_zh = who_zh }),
        fix = T("Find the hot code (`sopctl record --pid N --duration 10 -o hot.svg`) and make it cheaper: "
                .. "vectorized numpy, numba, C++ (§3.6); check the §4.4 / §8.5 findings for oversubscription.",
                "找到热点（`sopctl record --pid N --duration 10 -o hot.svg`）并降低开销：numpy 向量化、numba、C++"
                .. "（§3.6）；查看 §4.4 / §8.5 关于线程过多的结论。"),
        verify = tr("`sopctl run --pid {pid} --duration 5`: the same throughput at lower CPU",
                    "`sopctl run --pid {pid} --duration 5`：同样吞吐下 CPU 更低", { pid = ev.pid }),
        refs = { "https://www.brendangregg.com/linuxperf.html", "https://numba.readthedocs.io/" },
      }
    end

    -- Not CPU-bound: the disk? (Measured before the starved test: a job whose threads wait on
    -- storage at least as long as in the run queue is IO-bound first, on a busy host too.)
    local nthreads, nd = 0, 0
    for _, t in ipairs(ev.threads or {}) do
      nthreads = nthreads + 1
      if t.state == "D" then nd = nd + 1 end
    end
    for _, c in ipairs(ev.children or {}) do
      nthreads = nthreads + 1
      if c.state == "D" then nd = nd + 1 end
    end
    local d_pct = nthreads > 0 and 100 * nd / nthreads or 0
    local io = p.io or {}
    local reads = io.read_bytes_per_s or 0
    -- IO through page faults of mapped files (no read() calls), judged as io.mapped_faults does:
    -- major faults, bytes from storage (or, on a slow device, a thread mostly waiting on it), and
    -- read() bringing few of them. Then a thread's samples after a major fault wait on storage as
    -- D-state samples do (engine/sample/sampler.c fault_wait_frac); alone, a fault per sample interval
    -- says nothing of how long it took, so it counts only then.
    local py = ev.python
    local faults, most_wait = p.majflt_per_s or 0, 0
    for _, t in ipairs(py and py.threads or {}) do
      local w = t.window
      if w and (w.samples or 0) > 0 then
        most_wait = math.max(most_wait, w.fault_wait_frac or 0)
      end
    end
    local mapped = faults >= th.mapped_fault_min_per_s and reads > 0
                   and (reads >= th.page_cache_min_disk_kb_per_s * 1024 or most_wait >= th.mapped_wait_frac)
                   and (io.rchar_per_s or 0) < th.mapped_read_share * reads
    local samples, io_samples, io_sum = 0, 0, 0
    for _, t in ipairs(py and py.threads or {}) do
      local w = t.window
      local wait = w and (mapped and w.fault_wait_frac or w.io_wait_frac) or 0
      if w and w.samples and w.samples > 0 and (w.active_frac or 0) + wait > 0.05 then
        samples, io_samples = samples + w.samples, io_samples + wait * w.samples
        io_sum = io_sum + 100 * wait
      end
    end
    local io_wait = samples > 0 and 100 * io_samples / samples or d_pct
    local util, disk = nil, nil
    for _, f in ipairs(ev.io_files or {}) do
      if f.disk_util_pct and (not util or f.disk_util_pct > util) then util, disk = f.disk_util_pct, f.disk end
    end
    if not util and reads >= 1048576 then
      for _, d in ipairs(ev.host and ev.host.disks or {}) do
        if d.util_pct and (not util or d.util_pct > util) then util, disk = d.util_pct, d.name end
      end
    end
    local io_bound = io_wait >= th.summary_io_wait_pct or (util and util >= th.io_util_pct)
    local io_first = io_bound and samples > 0 and io_sum >= runq

    -- Runnable but not running: other processes hold the CPUs (run-queue wait, in % of a core).
    local idle = ev.host and ev.host.cpu and ev.host.cpu.idle_pct
    local host_full = idle and idle <= 10 and job >= 20
    if ((runq >= th.summary_cpu_bound_pct and job + runq >= th.summary_cpu_bound_pct) or host_full)
       and not io_first then
      local wait = runq > 0 and tr("its threads waited {runq:%.0f}% (of a core, summed) in the run queue",
                                   "其线程在运行队列里等了 {runq:%.0f}%（按单核累计）", { runq = runq })
                   or tr("the host was {idle:%.0f}% idle", "主机空闲仅 {idle:%.0f}%", { idle = idle or -1 })
      -- What the job itself asks for (the CPU it got + its run-queue wait) is its shape, whatever
      -- the host's load: a process runnable for about a core is CPU-bound on one core, starved or
      -- not; so are threads taking turns on the GIL at most ticks (their wake-ups to ask for it
      -- queue too, but one runs at a time).
      local demand = job + runq
      local shape = T("", "")
      if nworkers == 0 and runq > 0 and demand >= th.summary_cpu_bound_pct
         and (gil_turns or demand < 150 or cap < 2) then
        shape = T("CPU-bound on one core, ", "CPU 密集（一个核），")
      end -- (more than a core asked for: threads on the GIL wake to ask for it too; not said)
      return hit {
        symptom = tr("{shape}starved of CPU: runnable, but the CPUs are busy with other processes",
                     "{shape}CPU 饥饿：线程可运行，但 CPU 被其他进程占用", { shape = shape }),
        evidence = tr("{who:%s} used {job:%.0f}% CPU of {eff} effective CPUs over {duration_s:%.1f} s while "
                        .. "{wait}; host load {load1:%.1f} on {ncpu} CPUs",
                      "{who_zh}在 {duration_s:%.1f} 秒内用了 {job:%.0f}% CPU（有效 CPU {eff} 个），而{wait}；主机负载 {load1:%.1f}，"
                        .. "CPU {ncpu} 个",
                      { who = who, job = job, eff = eff, duration_s = ev.duration_s, wait = wait,
                        load1 = ev.host and ev.host.load1 or -1, ncpu = ev.host and ev.host.ncpu or 0,
                        who_zh = who_zh }),
        cause = T("The job wants more CPU than it gets: other work on the host (or its own other processes) "
                  .. "keeps the CPUs busy (§9: CPU-bound, but the CPUs are not ours; §8.5).",
                  "作业想要的 CPU 多于它得到的：主机上其他任务（或它自己的其他进程）占满了 CPU（§9；§8.5）。"),
        fix = T("Give the job dedicated CPUs (cpuset / a K8s CPU request equal to the limit) or move the other load "
                .. "away; `top -b -n 1 | head -30` shows who holds the CPUs.",
                "给作业独占 CPU（cpuset / K8s request 等于 limit），或把其他负载移走；"
                .. "`top -b -n 1 | head -30` 查看谁占着 CPU。"),
        verify = tr("`sopctl run --pid {pid} --duration 5`: run-queue wait near 0",
                    "`sopctl run --pid {pid} --duration 5`：运行队列等待接近 0", { pid = ev.pid }),
        refs = { "https://www.brendangregg.com/linuxperf.html",
                 "https://docs.kernel.org/scheduler/sched-design-CFS.html" },
      }
    end

    if mapped and io_bound then
      -- Random: each fault reads a small piece, or read-around fetches far more than is touched.
      local per_fault_kb = reads / faults / 1024
      local grown = p.mem and p.mem.file_growth_kb_per_s
      local random = per_fault_kb <= th.random_read_max_request_kb
                     or (grown ~= nil and math.max(grown, 0) * 1024 < th.mapped_touch_ratio * reads)
      local disk_busy = util and tr("; disk {disk:%s} {util:%.0f}% busy", "；磁盘 {disk:%s} 利用率 {util:%.0f}%",
                                    { disk = disk or "?", util = util }) or ""
      return hit {
        symptom = random and T("IO-bound: page faults of mapped files at random places",
                               "IO 密集：随机位置的映射文件缺页")
                  or T("IO-bound: waiting on page faults of mapped files", "IO 密集：在等映射文件的缺页"),
        evidence = tr("{who:%s} used {job:%.0f}% CPU over {duration_s:%.1f} s; {io_wait:%.0f}% of its {time_en} "
                        .. "waiting on storage (D state or a major page fault); {faults:%.0f} major faults/s, "
                        .. "{disk_mb:%.1f} MB/s from storage ({per_fault_kb} per fault), {read_mb:%.1f} MB/s through "
                        .. "read(){disk_busy}",
                      "{who_zh}在 {duration_s:%.1f} 秒内只用了 {job:%.0f}% CPU；{io_wait:%.0f}% 的{time_zh}在等存储（D 状态或主缺页）；每秒 "
                        .. "{faults:%.0f} 次主缺页，存储读 {disk_mb:%.1f} MB/s（每次缺页 {per_fault_kb}），read() 读 {read_mb:%.1f} "
                        .. "MB/s{disk_busy}",
                      { who = who, job = job, duration_s = ev.duration_s, io_wait = io_wait,
                        time_en = samples > 0 and "sampled thread time" or "threads", faults = faults,
                        disk_mb = reads / 1e6, per_fault_kb = kb(per_fault_kb), read_mb = (io.rchar_per_s or 0) / 1e6,
                        disk_busy = disk_busy, who_zh = who_zh, time_zh = samples > 0 and "采样线程时间" or "线程" }),
        cause = T("The job waits for pages of memory-mapped files (np.memmap, np.load(mmap_mode='r'), safetensors, "
                  .. "torch.load(mmap=True)) to come from storage: each touch of a page not in memory is a major "
                  .. "fault the thread waits for (§9 → §7.3; see io.mapped_faults).",
                  "作业在等内存映射文件（np.memmap、np.load(mmap_mode='r')、safetensors、torch.load(mmap=True)）"
                  .. "的页从存储读入：每次访问不在内存中的页都是一次要等待的主缺页（§9 → §7.3；见 io.mapped_faults）。"),
        fix = T("Access the mapping in order (sort each batch's indices), madvise(MADV_RANDOM) for true random "
                .. "lookups or MADV_WILLNEED/MADV_SEQUENTIAL for ranges read in order, copy the hot part to RAM, "
                .. "put the file on local NVMe, or size the page cache to the working set (§7.3).",
                "按顺序访问映射（对每个 batch 的索引排序），真正随机查找用 madvise(MADV_RANDOM)，顺序读的范围用 "
                .. "MADV_WILLNEED/MADV_SEQUENTIAL，把热点部分复制到内存，文件放本地 NVMe，或让 page cache 容得下工作集（§7.3）。"),
        verify = tr("`sopctl run --pid {pid} --duration 5`: fewer major faults/s and less time waiting on storage",
                    "`sopctl run --pid {pid} --duration 5`：每秒主缺页更少，等存储的时间更少", { pid = ev.pid }),
        refs = { "https://man7.org/linux/man-pages/man2/madvise.2.html",
                 "https://www.brendangregg.com/linuxperf.html" },
      }
    end
    if io_bound then
      local random = io.mean_read_bytes and io.mean_read_bytes <= th.small_read_max_bytes
      local disk_busy = util and tr("; disk {disk:%s} {util:%.0f}% busy", "；磁盘 {disk:%s} 利用率 {util:%.0f}%",
                                    { disk = disk or "?", util = util }) or ""
      local rd = io.mean_read_bytes and tr("; {mb:%.1f} MB/s from disk, mean read {bytes:%.0f} bytes",
                                           "；磁盘读 {mb:%.1f} MB/s，平均每次读 {bytes:%.0f} 字节",
                                           { mb = reads / 1e6, bytes = io.mean_read_bytes }) or ""
      return hit {
        symptom = random and T("IO-bound: small random reads", "IO 密集：小块随机读")
                  or T("IO-bound: waiting on the disk", "IO 密集：在等磁盘"),
        evidence = tr("{who:%s} used {job:%.0f}% CPU over {duration_s:%.1f} s; {io_wait:%.0f}% of its {time_en} in D "
                        .. "state (waiting for IO){disk_busy}{rd}",
                      "{who_zh}在 {duration_s:%.1f} 秒内只用了 {job:%.0f}% CPU；{io_wait:%.0f}% 的{time_zh}处于 D 状态（等 IO）"
                        .. "{disk_busy}{rd}",
                      { who = who, job = job, duration_s = ev.duration_s, io_wait = io_wait,
                        time_en = samples > 0 and "sampled thread time" or "threads", disk_busy = disk_busy, rd = rd,
                        who_zh = who_zh, time_zh = samples > 0 and "采样线程时间" or "线程" }),
        cause = T(random and "The job waits for the disk, reading small pieces at random offsets (§9 → §7.3: "
                  .. "random reads are 10-100x slower than sequential)."
                  or "The job waits for the disk (§9 → §7): the device or the file system is the limit.",
                  random and "作业在等磁盘，并以小块随机读（§9 → §7.3：随机读比顺序读慢 10~100 倍）。"
                  or "作业在等磁盘（§9 → §7）：瓶颈在设备或文件系统。"),
        fix = T(random and "Pack small samples into shards read sequentially (webdataset/tar, LMDB, parquet) or mmap "
                .. "them (§7.3, §7.5)." or "Measure the device with fio; stage data on local NVMe, read with more "
                .. "parallel streams, cache hot data (§7.2, §7.4).",
                random and "把小样本打包成顺序读取的 shard（webdataset/tar、LMDB、parquet）或用 mmap（§7.3、§7.5）。"
                or "用 fio 测设备带宽；数据放本地 NVMe、增加并发流、缓存热数据（§7.2、§7.4）。"),
        verify = tr("`sopctl run --pid {pid} --duration 5`: less time in D state; `iostat -xm 1 3` %util lower",
                    "`sopctl run --pid {pid} --duration 5`：D 状态时间减少；`iostat -xm 1 3` 的 %util 下降", { pid = ev.pid }),
      }
    end

    -- Neither: waiting on something else.
    local w = waits(ev)
    local parts, parts_zh = {}, {}
    if w.total > 0 then
      local function add(n, en, zh)
        if n / w.total >= 0.05 then
          parts[#parts + 1] = fmt("%.0f%% %s", 100 * n / w.total, en)
          parts_zh[#parts_zh + 1] = fmt("%.0f%% %s", 100 * n / w.total, zh)
        end
      end
      add(w.network, "in network/selector waits", "在网络/selector 等待")
      add(w.locks, "in locks or queues", "在锁或队列上")
      add(w.data, "waiting for DataLoader batches", "在等 DataLoader 数据")
    end
    local on_en = #parts > 0 and "; sampled thread time: " .. table.concat(parts, ", ") or ""
    local on_zh = #parts_zh > 0 and "；采样的线程时间：" .. table.concat(parts_zh, "，") or ""
    -- §4.2: a convoy is named, not "waiting" in general.
    local convoy = common.lock_convoy(ev, th)
    if convoy then
      local l_en = fmt("; %d threads queue on one lock at %s (holder: %s; threads.lock_contention)", convoy.threads,
                       convoy.site or "?", convoy.holder or "?")
      local l_zh = fmt("；%d 个线程在 %s 排队等同一把锁（持有者：%s；threads.lock_contention）", convoy.threads,
                       convoy.site or "?", convoy.holder or "?")
      on_en, on_zh = on_en .. l_en, on_zh .. l_zh
    end
    -- Never "an idle server is healthy" of a job whose threads wait on each other (progress.hang).
    local stall = common.stall(ev, th)
    if stall and stall.stalled then
      return hit {
        symptom = tr("not CPU-bound, not IO-bound: stalled, its {n} threads wait on each other (progress.hang)",
                     "既非 CPU 密集也非 IO 密集：卡住了，{n} 个线程互相等待（progress.hang）", { n = stall.nthreads }),
        evidence = tr("{who:%s} used {job:%.1f}% CPU over {duration_s:%.1f} s; no thread waits on outside work: "
                        .. "{groups}",
                      "{who_zh}在 {duration_s:%.1f} 秒内用了 {job:%.1f}% CPU；没有线程在等外部工作：{groups}",
                      { who = who, who_zh = who_zh, job = job, duration_s = ev.duration_s, groups = stall.groups }),
        cause = T("§9: no thread runs and none waits on a socket, file, timer, child or signal: only the job's own "
                  .. "threads could wake each other, and none does (see progress.hang).",
                  "§9：没有线程在运行，也没有线程在等 socket、文件、定时器、子进程或信号：只有作业自己的线程能互相唤醒，"
                  .. "而没有一个在做（见 progress.hang）。"),
        fix = T("See progress.hang.", "见 progress.hang。"),
        verify = tr("`sopctl dump --pid {pid}` twice: the stacks move", "两次 `sopctl dump --pid {pid}`：栈有变化",
                    { pid = ev.pid }),
        refs = { "https://www.brendangregg.com/linuxperf.html" },
      }
    end
    -- Never "an idle server is healthy" while something piles up (progress.threads_grow, .zombies,
    -- .fds_grow).
    local grows_en, grows_zh = {}, {}
    if p.threads_start and p.threads and p.threads - p.threads_start >= th.grow_min_threads then
      grows_en[#grows_en + 1] = fmt("threads %d → %d (progress.threads_grow)", p.threads_start, p.threads)
      grows_zh[#grows_zh + 1] = fmt("线程 %d → %d（progress.threads_grow）", p.threads_start, p.threads)
    end
    local fd = ev.fds
    local tk = ev.python and ev.python.tasks
    local fd_grew = fd and fd.first and fd.last and fd.last - fd.first or 0
    local backlog = (tk and tk.pending_growth or 0) >= 0.5 * fd_grew   -- sockets of work piling up
                    or p.threads and p.threads_start and p.threads - p.threads_start >= 0.5 * fd_grew
    if fd_grew >= th.grow_min_fds and (fd.rises_first_half or 0) > 0 and (fd.rises_second_half or 0) > 0
       and not backlog then
      grows_en[#grows_en + 1] = fmt("open descriptors %d → %d (progress.fds_grow)", fd.first, fd.last)
      grows_zh[#grows_zh + 1] = fmt("打开的描述符 %d → %d（progress.fds_grow）", fd.first, fd.last)
    end
    if p.zombies_start and p.zombies and p.zombies - p.zombies_start >= th.zombie_min_growth then
      grows_en[#grows_en + 1] = fmt("zombies %d → %d (progress.zombies)", p.zombies_start, p.zombies)
      grows_zh[#grows_zh + 1] = fmt("僵尸进程 %d → %d（progress.zombies）", p.zombies_start, p.zombies)
    end
    local mem_rate = p.rss_growth_kb_per_s
    if mem_rate and ev.duration_s >= th.growth_min_window_s and mem_rate >= 1024 * th.growth_floor_mb_per_s then
      grows_en[#grows_en + 1] = fmt("memory %+.1f MiB/s (mem.growth)", mem_rate / 1024)
      grows_zh[#grows_zh + 1] = fmt("内存 %+.1f MiB/s（mem.growth）", mem_rate / 1024)
    end
    if #grows_en > 0 then
      local g_en, g_zh = table.concat(grows_en, ", "), table.concat(grows_zh, "，")
      return hit {
        symptom = tr("not CPU-bound, not IO-bound: waiting while {g_en}",
                     "既非 CPU 密集也非 IO 密集：在等待，同时{g_zh}", { g_en = g_en, g_zh = g_zh }),
        evidence = tr("{who:%s} used {job:%.0f}% CPU of {eff} effective CPUs over {duration_s:%.1f} s{on_en}; over the "
                        .. "window {g_en}",
                      "{who_zh}在 {duration_s:%.1f} 秒内用了 {job:%.0f}% CPU（有效 CPU {eff} 个）{on_zh}；窗口内{g_zh}",
                      { who = who, who_zh = who_zh, job = job, eff = eff, duration_s = ev.duration_s, on_en = on_en,
                        on_zh = on_zh, g_en = g_en, g_zh = g_zh }),
        cause = T("§9: the CPU is not full and the disk is not the limit, and something piles up while the job waits: "
                  .. "not an idle job (see the findings named).",
                  "§9：CPU 没满、磁盘也不是瓶颈，而作业等待时有东西在堆积：不是空闲（见所列结论）。"),
        fix = T("See the findings named in the verdict.", "见结论中列出的各项。"),
        verify = tr("`sopctl run --pid {pid} --duration 5`: nothing grows",
                    "`sopctl run --pid {pid} --duration 5`：没有东西在增长",
                    { pid = ev.pid }),
        refs = { "https://www.brendangregg.com/linuxperf.html" },
      }
    end
    return hit {
      symptom = convoy and tr("not CPU-bound, not IO-bound: waiting on a lock at {site} ({n} threads queued)",
                              "既非 CPU 密集也非 IO 密集：在 {site} 等锁（{n} 个线程排队）",
                              { site = convoy.site or "?", n = convoy.threads })
                or T("not CPU-bound, not IO-bound: waiting (network, locks or for work)",
                     "既非 CPU 密集也非 IO 密集：在等待（网络、锁或任务）"),
      evidence = tr("{who:%s} used {job:%.0f}% CPU of {eff} effective CPUs over {duration_s:%.1f} s; {d_pct:%.0f}% of "
                      .. "its threads in D state{util}{on_en}",
                    "{who_zh}在 {duration_s:%.1f} 秒内用了 {job:%.0f}% CPU（有效 CPU {eff} 个）；{d_pct:%.0f}% 的线程处于 D 状态"
                      .. "{util}{on_zh}",
                    { who = who, job = job, eff = eff, duration_s = ev.duration_s, d_pct = d_pct,
                      util = util and tr("; busiest disk it reads {util:%.0f}% busy", "；所读磁盘利用率 {util:%.0f}%",
                                         { util = util }) or "", on_en = on_en, who_zh = who_zh, on_zh = on_zh }),
      cause = T("§9: the CPU is not full and the disk is not the limit, so the job waits on something else: the "
                .. "network, a lock or queue, another process — or it has no work (an idle server is healthy).",
                "§9：CPU 没满、磁盘也不是瓶颈，作业在等别的东西：网络、锁或队列、其他进程——或者没有任务（空闲服务是正常的）。"),
      fix = T("If it should be busy: `sopctl dump --pid N` shows where each thread waits; for asyncio servers see §5, "
              .. "for lock waits §4.3.", "如果它本该在忙：`sopctl dump --pid N` 查看每个线程在哪里等待；asyncio 服务看 §5，"
              .. "锁等待看 §4.3。"),
      verify = tr("`sopctl dump --pid {pid}` during the slow period",
                  "在变慢期间运行 `sopctl dump --pid {pid}`", { pid = ev.pid }),
      refs = { "https://www.brendangregg.com/linuxperf.html" },
    }
  end,
}
