-- plugins/dataloader.lua — SOP §6: the torch DataLoader as the bottleneck. The training loop
-- starved of batches (and why: CPU-bound or IO-bound workers), num_workers=0, far more workers
-- than CPUs, pure-Python tokenizers, TOKENIZERS_PARALLELISM with forked workers, workers re-created
-- at each epoch (persistent_workers=False). Reads the sampled window: ev.python.threads[].window
-- (top_stacks, data_wait_frac), ev.python.workers[] and ev.python.loader, plus ev.children
-- (cpu_pct, env, age_s), ev.proc (cpu_pct, env, libs, age_s), ev.threads, ev.effective_cpus,
-- ev.io_files. Thresholds: loader_*, cpu_saturated_pct.
--
-- DataLoader workers are told from other multiprocessing children by torch's `_worker_loop
-- (worker.py)` on their main thread's stacks; the training loop is the target's main thread.
-- Stack shares come from each thread's top stacks (at most 5 kept), so they are lower bounds.
-- persistent_workers=False is read from ages: the sampler finds the workers alive when the
-- window starts (python.workers[].age_s then, .exited when they die within it), and the end of
-- the window lists the children started meanwhile (children[].age_s < duration_s).
-- Not checked (docs/rules.md): pin_memory (torch drops it without a GPU, and with one the
-- evidence cannot say whether the batches go to the GPU).

local common = require "plugins.common"
local T = common.T
local tr = common.tr

-- The verdict of the worker rules when no process runs torch's _worker_loop, spelled once.
local NO_WORKERS = T("no torch DataLoader workers (_worker_loop) among the sampled processes",
                     "采样到的进程中没有 torch DataLoader worker（_worker_loop）")

local REF_DATA = "https://pytorch.org/docs/stable/data.html"
local REF_TOK = "https://huggingface.co/docs/transformers/main_classes/tokenizer"
local REF_TOKENIZERS = "https://huggingface.co/docs/tokenizers/index"
local REF_MP = "https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods"

local function has(s, needle) return s:find(needle, 1, true) ~= nil end

-- The frames of a collapsed stack "outer (f.py);...;inner (f.py)", outermost first.
local function frames(stack)
  local out = {}
  for f in stack:gmatch("[^;]+") do out[#out + 1] = f end
  return out
end

local function main_thread(ev)
  for _, t in ipairs(ev.python and ev.python.threads or {}) do
    if t.tid == ev.pid then return t end
  end
end

local function top_stacks(t) return t and t.window and t.window.top_stacks or {} end

-- The window's distinct stacks as {stack = "outer (f.py);...;inner (f.py)", count}: every one
-- from the full distribution (dist) when the evidence has it, else the 5 top stacks. Loading
-- code (PIL decode, a chain of transforms, collate) spreads over many distinct stacks, each too
-- rare for the top 5: counting the top stacks only under-counts it (a fetch timed at 61% of each
-- step read as 48%).
local function stacks_of(w)
  local d = w.dist
  if not (d and d.frames and d.stacks) then return w.top_stacks or {} end
  local out = {}
  for _, st in ipairs(d.stacks) do
    local names = {}
    for i, id in ipairs(st.ids or {}) do names[i] = d.frames[id] or "?" end
    out[#out + 1] = { stack = table.concat(names, ";"), count = st.count or 0 }
  end
  return out
end

-- Share of thread t's samples whose stack satisfies pred, the matching count, and the most
-- frequent matching stack: over the top stacks only (a lower bound), or with `all` over every
-- stack of the window's distribution when the evidence has it (stacks_of).
local function share(t, pred, all)
  local w = t and t.window
  if not w or not w.samples or w.samples == 0 then return nil end
  local n, best = 0, nil
  for _, s in ipairs(all and stacks_of(w) or w.top_stacks or {}) do
    if pred(s.stack) then
      n = n + s.count
      if not best or s.count > best.count then best = s end
    end
  end
  return n / w.samples, n, best
end

-- DataLoader workers: CPython descendants whose main thread runs torch's _worker_loop.
local function dl_workers(ev)
  local out = {}
  for _, w in ipairs(ev.python and ev.python.workers or {}) do
    for _, t in ipairs(w.threads or {}) do
      if t.tid == w.pid then
        local f = share(t, function(s) return has(s, "_worker_loop (worker.py)") end)
        if f and f > 0 then out[#out + 1] = { w = w, t = t } end
      end
    end
  end
  return out
end

-- The innermost frames of a stack from the one after the last frame matching `after` (or the
-- last `n` frames), joined with " > ".
local function tail(stack, after, n)
  local fr = frames(stack)
  local from = math.max(1, #fr - (n or 2) + 1)
  if after then
    for i = #fr, 1, -1 do
      if has(fr[i], after) then from = math.min(i + 1, #fr); break end
    end
  end
  local out = {}
  for i = from, math.min(#fr, from + 2) do out[#out + 1] = fr[i] end
  return table.concat(out, " > ")
end

-- The common prelude: a sampled window of a CPython target. Returns the main thread, or nil and
-- the unknown() verdict to return.
local function sampled(ev)
  if not ev.python or not ev.python.threads then
    return nil, unknown(common.NO_STACKS)
  end
  if common.no_window(ev) then
    return nil, common.one_snapshot("the DataLoader checks need a sampled window", "DataLoader 检查需要采样窗口")
  end
  local mt = main_thread(ev)
  if not mt or not mt.window or not mt.window.samples or mt.window.samples == 0 then
    return nil, unknown(common.not_sampled("--rate 0, or the main thread's stack was not readable",
                                               "--rate 0，或读不到主线程的栈"))
  end
  return mt
end

-- CPU the job (target + every descendant) used over the window, and its capacity (% of a core).
local function job_cpu(ev)
  local used = ev.proc and ev.proc.cpu_pct
  if not used then return nil end
  for _, c in ipairs(ev.children or {}) do used = used + (c.cpu_pct or 0) end
  local eff = common.effective_cpus(ev) or 1
  local cap = common.capacity_cpus(ev, eff)
  return used, cap * 100, eff
end

local pct_text = common.pct_text

-- ---------------------------------------------------------------------------------------------

rule {
  id = "dataloader.starved", section = "6.4", severity = "high",
  title = T("the training loop waits for DataLoader batches; says whether the workers are CPU- or IO-bound",
            "训练循环在等 DataLoader 的 batch；并判断 worker 是 CPU 瓶颈还是 IO 瓶颈"),
  reads = { "python.loader.main_data_wait_frac", "python.workers[].threads[].window.top_stacks",
            "python.workers[].cpu_frac", "python.workers[].io_frac", "python.workers[].idle_frac",
            "python.workers[].io", "python.workers[].read_bytes_per_s", "proc.cpu_pct", "children[].cpu_pct",
            "effective_cpus", "io_files", "cgroup.cpu.quota_cpus", "duration_s", "host.ncpu", "pid",
            "python.threads[].tid", "python.threads[].window.samples", "python.threads[].window.top_stacks",
            "python.workers[].cpu_pct", "python.workers[].pid", "python.workers[].threads[].tid",
            "python.workers[].threads[].window.samples", "python.threads[].window.dist", "gpu.busy_pct",
            "gpu.idle_frac", "gpu.devices[].name", "gpu.devices[].used_by_tree", "gpu.devices[].util_samples" },
  uses = { "loader_wait_pct", "loader_wait_high_pct", "loader_worker_cpu_pct", "loader_worker_io_pct",
           "cpu_saturated_pct" },
  refs = { REF_DATA, "https://docs.nvidia.com/deeplearning/dali/user-guide/docs/index.html",
           "https://github.com/webdataset/webdataset", "https://github.com/libffcv/ffcv" },
  check = function(ev, th)
    local mt, verdict = sampled(ev)
    if not mt then return verdict end
    local dw = dl_workers(ev)
    local ld = ev.python.loader
    if #dw == 0 then
      local inproc = share(mt, function(s) return has(s, "DataLoaderIter") end, true)
      if inproc and inproc > 0 then
        return clear(T("the DataLoader has no worker processes (num_workers=0): dataloader.no_workers judges it",
                       "DataLoader 没有 worker 进程（num_workers=0）：由 dataloader.no_workers 判断"))
      end
      return clear(NO_WORKERS)
    end
    local wait = ld and ld.main_data_wait_frac
    if not wait then
      return unknown(T("the main thread's wait for batches was not measured", "未测得主线程等待 batch 的比例"))
    end
    -- Of the wait, the part spent receiving a batch already produced (torch's file-descriptor
    -- passing of each tensor's shared memory) rather than blocked until one is.
    local transfer = share(mt, function(st)
      return has(st, "_try_get_data") and (has(st, "rebuild_storage") or has(st, "(resource_sharer.py)")
                                           or has(st, "recvfds"))
    end, true) or 0
    local base = tr("the main thread waited for a batch in {wait} of {samples} samples over {secs:%.1f} s (receiving "
                      .. "one from the workers' shared memory in {transfer}), with {n} DataLoader workers",
                    "{secs:%.1f} 秒内主线程 {samples} 个样本中有 {wait} 在等 batch（其中 {transfer} 在从 worker 共享内存接收），"
                      .. "DataLoader worker {n} 个",
                    { wait = pct_text(wait), samples = mt.window.samples, secs = ev.duration_s,
                      transfer = pct_text(transfer), n = #dw })
    if 100 * wait < th.loader_wait_pct then return clear(base) end

    -- The workers: what their main threads do (state R / D / asleep) and what they read.
    local cpu, io, idle, n, rd, syscr, wcpu = 0, 0, 0, 0, 0, 0, 0
    local pids, best = {}, nil
    for _, d in ipairs(dw) do
      local w = d.w
      if w.cpu_frac and w.io_frac and w.idle_frac then
        cpu, io, idle, n = cpu + w.cpu_frac, io + w.io_frac, idle + w.idle_frac, n + 1
      end
      rd = rd + (w.read_bytes_per_s or 0)
      syscr = syscr + (w.io and w.io.syscr_per_s or 0)
      wcpu = wcpu + (w.cpu_pct or 0)
      pids[w.pid] = true
      for _, s in ipairs(top_stacks(d.t)) do
        if not has(s.stack, "(queues.py)") and (not best or s.count > best.count) then best = s end
      end
    end
    if n == 0 then
      return unknown(tr("{base}; but the workers' states were not sampled", "{base}；但没有采样到 worker 的状态",
                        { base = base }))
    end
    cpu, io, idle = cpu / n, io / n, idle / n
    local work = best and tail(best.stack, "(fetch.py)", 3)
    local stack_end = work and tr("; the workers' most sampled stack ends in {work:%s}",
                                  "；worker 最常见的栈末端是 {work:%s}", { work = work }) or T("", "")
    local states = tr("the workers ran (state R) {run}, were in disk IO (state D) {io} and asleep {idle} of their "
                        .. "samples, together {wcpu:%.0f}% CPU; they read {rd}/s from the devices in {syscr:%.0f} "
                        .. "read calls/s",
                      "worker 运行（R 态）{run}、磁盘 IO（D 态）{io}、睡眠 {idle}，合计 CPU {wcpu:%.0f}%；每秒从设备读 {rd}，"
                        .. "read 调用 {syscr:%.0f} 次/秒",
                      { run = pct_text(cpu), io = pct_text(io), idle = pct_text(idle), wcpu = wcpu, rd = kb(rd / 1024),
                        syscr = syscr })
    -- The files the workers read, when the window saw their read position move.
    local files, listed = {}, {}
    for _, f in ipairs(ev.io_files or {}) do
      if pids[f.pid] and f.advance_bytes_per_s and f.advance_bytes_per_s > 0 and #files < 2
         and not listed[f.path or "?"] then
        listed[f.path or "?"] = true
        files[#files + 1] = fmt("%s (%s %s)", f.path or "?", f.fstype or "?", f.fs_kind or "?")
      end
    end
    local reading = #files > 0 and T("; files being read: " .. table.concat(files, ", "),
                                     "；正在读的文件：" .. table.concat(files, "、")) or T("", "")

    local used, cap, eff = job_cpu(ev)
    local full = used and used >= th.cpu_saturated_pct / 100 * cap
    local job_use = used and tr("; the job used {used:%.0f}% CPU of a {cap:%.0f}% capacity ({eff} effective CPUs)",
                                "；作业共用 CPU {used:%.0f}%，容量 {cap:%.0f}%（有效 CPU {eff} 个）",
                                { used = used, cap = cap, eff = eff }) or T("", "")

    local kind, cause, fix
    if 100 * io >= th.loader_worker_io_pct then
      kind = T("IO-bound", "IO 瓶颈")
      cause = tr("The workers cannot read samples as fast as the step consumes them: they spend {io} of their time "
                   .. "blocked in disk IO (SOP §6.3, §6.4 IO branch); small random reads of many files make it worse.",
                 "worker 读样本的速度跟不上训练消耗：{io} 的时间阻塞在磁盘 IO（SOP §6.3、§6.4 IO 分支）；大量小文件随机读会更糟。",
                 { io = pct_text(io) })
      fix = T("Make the reads sequential and fewer: pack small files into shards read in order (webdataset tar "
              .. "shards, LMDB), keep the hot data on local NVMe/SSD instead of network storage, and keep "
              .. "prefetch_factor at 2-4 so reads overlap the step. More workers only help while the device has "
              .. "headroom: check its utilisation (io.* findings, `iostat -xm 1`) before changing num_workers.",
              "让读取变成顺序、少次：把小文件打包成按序读取的 shard（webdataset tar、LMDB），热数据放本地 NVMe/SSD "
              .. "而不是网络存储，prefetch_factor 保持 2~4 让读取与 step 重叠。只有设备还有余量时加 worker 才有用："
              .. "先看设备利用率（io.* 结论、`iostat -xm 1`）再改 num_workers。")
    elseif 100 * cpu >= th.loader_worker_cpu_pct then
      kind = T("CPU-bound", "CPU 瓶颈")
      cause = tr("The per-sample work (decoding, transforms, tokenizing) in __getitem__/collate is heavier than the "
                   .. "step: the workers run {cpu} of the time and still cannot keep up (SOP §6.4 CPU branch).",
                 "__getitem__/collate 里的逐样本工作（解码、变换、分词）比训练 step 还重：worker {cpu} 的时间在运行，仍跟不上（SOP §6.4 CPU 分支）。",
                 { cpu = pct_text(cpu) })
      local more_en = full
        and "The CPUs are already full, so more workers will not help; make each sample cheaper: "
        or fmt("The CPUs have room: raise num_workers by one at a time (at most %d, the effective CPUs) and "
               .. "keep the value only while samples/s improves; and make each sample cheaper: ", eff or 1)
      local more_zh = full
        and "CPU 已经跑满，加 worker 没有用；应让每个样本更便宜："
        or fmt("CPU 还有余量：num_workers 每次加 1（最多 %d，即有效 CPU 数），只有 samples/s 提高才保留；"
               .. "同时让每个样本更便宜：", eff or 1)
      fix = T(more_en .. "vectorize transforms (torch/numpy on whole arrays, not per-element Python), decode once "
              .. "and store pre-processed tensors/parquet (or ffcv), move augmentation to the GPU (NVIDIA DALI), "
              .. "and limit BLAS/OpenMP threads inside each worker (threadpoolctl.threadpool_limits(1) in "
              .. "worker_init_fn).",
              more_zh .. "变换向量化（整块数组上的 torch/numpy，而不是逐元素 Python），解码一次并存成预处理好的 "
              .. "tensor/parquet（或 ffcv），把数据增强放到 GPU（NVIDIA DALI），并在每个 worker 里限制 BLAS/OpenMP "
              .. "线程（worker_init_fn 里 threadpoolctl.threadpool_limits(1)）。")
    elseif transfer >= wait / 2 then
      kind = T("idle: the batches wait in the queue", "空闲：batch 已在队列里等待")
      cause = tr("The workers have batches ready (asleep {idle} of their samples); the loop's time goes to receiving "
                   .. "them: {transfer} of its samples are in rebuild_storage_fd / resource_sharer, the per-tensor "
                   .. "file-descriptor handshake that moves each tensor's shared memory to the main process.",
                 "worker 已备好 batch（{idle} 的样本在睡眠）；训练循环的时间花在接收上：{transfer} 的样本在 rebuild_storage_fd / resource_sharer，即把"
                   .. "每个 tensor 的共享内存交给主进程的逐 tensor 文件描述符握手。",
                 { idle = pct_text(idle), transfer = pct_text(transfer) })
      fix = T("Return fewer, larger tensors per batch: collate each field into one tensor (not lists or dicts of "
              .. "many small tensors), or return numpy arrays/bytes for small items and convert in the step. "
              .. "Measure samples/s after the change.",
              "每个 batch 返回更少、更大的 tensor：每个字段 collate 成一个 tensor（不要许多小 tensor 组成的 list/dict），"
              .. "或小项返回 numpy 数组/bytes、在 step 里再转换。改动后测 samples/s。")
    else
      kind = T("waiting, neither computing nor in disk IO", "既不计算也不在磁盘 IO，而是在等待")
      cause = tr("The workers are asleep {idle} of their samples while the loop waits for them: they wait on "
                   .. "something other than the CPU or the disk (network reads, locks, sleeps), see their stack.",
                 "训练循环在等 worker，而 worker {idle} 的样本在睡眠：它们在等 CPU 和磁盘以外的东西（网络读、锁、sleep），见其栈。",
                 { idle = pct_text(idle) })
      fix = T("Look at what the workers wait on (`sopctl dump --pid WORKER`): for network/object storage, stream "
              .. "large shards (webdataset, StreamingDataset) with prefetching instead of one request per sample; "
              .. "remove locks and sleeps from __getitem__. Measure samples/s after each change.",
              "看 worker 在等什么（`sopctl dump --pid WORKER`）：网络/对象存储要用大 shard 流式读（webdataset、"
              .. "StreamingDataset）并预取，而不是每个样本一次请求；去掉 __getitem__ 里的锁和 sleep。每次改动后测 samples/s。")
    end
    return hit {
      severity = 100 * wait >= th.loader_wait_high_pct and "high" or "warn",
      symptom = tr("the training loop is starved by the DataLoader ({wait} of the time waiting); workers {kind_en:%s}",
                   "训练循环被 DataLoader 拖住（{wait} 的时间在等数据）；worker {kind_zh:%s}",
                   { wait = pct_text(wait), kind_en = kind.en, kind_zh = kind.zh }),
      evidence = tr("{base}; {states}{stack_end}{reading}{job_use}{gpu}.",
                    "{base}；{states}{stack_end}{reading}{job_use}{gpu}。",
                    { base = base, states = states, stack_end = stack_end, reading = reading, job_use = job_use,
                      gpu = common.gpu_idle_text(ev) }),
      cause = cause,
      fix = fix,
      verify = tr("`sopctl run --pid {pid} --duration 5`: the main thread's wait for batches below "
                    .. "{loader_wait_pct:%g}% (dataloader.starved clear) and the step time (samples/s) improves.",
                  "`sopctl run --pid {pid} --duration 5`：主线程等 batch 的比例低于 {loader_wait_pct:%g}%（dataloader.starved 为 "
                    .. "clear），step 时间（samples/s）改善。",
                  { pid = ev.pid, loader_wait_pct = th.loader_wait_pct }),
    }
  end,
}

rule {
  id = "dataloader.no_workers", section = "6.2", severity = "warn",
  title = T("num_workers=0: the training loop itself loads every sample (single-process DataLoader)",
            "num_workers=0：训练循环自己加载每个样本（单进程 DataLoader）"),
  reads = { "python.threads[].window.top_stacks", "python.threads[].window.dist",
            "python.threads[].window.running_frac",
            "python.threads[].window.io_wait_frac", "effective_cpus", "duration_s", "host.ncpu", "pid",
            "python.threads[].tid", "python.threads[].window.samples", "gpu.busy_pct", "gpu.idle_frac",
            "gpu.devices[].name", "gpu.devices[].used_by_tree", "gpu.devices[].util_samples" },
  uses = { "loader_inline_fetch_pct" },
  refs = { REF_DATA, "https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading" },
  check = function(ev, th)
    local mt, verdict = sampled(ev)
    if not mt then return verdict end
    local single = share(mt, function(s) return has(s, "_SingleProcessDataLoaderIter") end, true)
    if not single or single == 0 then
      return clear(T("no single-process DataLoader (_SingleProcessDataLoaderIter) on the main thread's stacks",
                     "主线程栈上没有单进程 DataLoader（_SingleProcessDataLoaderIter）"))
    end
    local f, cnt, best = share(mt, function(s)
      return has(s, "_SingleProcessDataLoaderIter") and has(s, "(fetch.py)")
    end, true)
    local w = mt.window
    local base = tr("the main thread was inside the in-process fetch (_SingleProcessDataLoaderIter > fetch.py) "
                      .. "in {cnt} of {samples} samples ({share}) over {secs:%.1f} s",
                    "{secs:%.1f} 秒内主线程 {samples} 个样本中有 {cnt} 个（{share}）在进程内取数（_SingleProcessDataLoaderIter > fetch.py）",
                    { cnt = cnt, samples = w.samples, share = pct_text(f), secs = ev.duration_s })
    if 100 * f < th.loader_inline_fetch_pct then return clear(base) end
    local eff = common.effective_cpus(ev) or 1
    local what = best and tail(best.stack, "(fetch.py)", 3) or "?"
    local evidence = tr("{base}; no worker processes; most sampled: {what:%s}; the main thread ran {run} and was in "
                          .. "disk IO {io} of the samples; {eff} effective CPUs{gpu}.",
                        "{base}；没有 worker 进程；最常见：{what:%s}；主线程运行 {run}、磁盘 IO {io}；有效 CPU {eff} 个{gpu}。",
                        { base = base, what = what, run = pct_text(w.running_frac or 0),
                          io = pct_text(w.io_wait_frac or 0), eff = eff, gpu = common.gpu_idle_text(ev) })
    local one = eff < 2
    return hit {
      severity = one and "info" or "warn",
      symptom = tr("num_workers=0: the training loop spends {share} of its time loading samples",
                   "num_workers=0：训练循环 {share} 的时间花在加载样本上",
                   { share = pct_text(f) }),
      evidence = evidence,
      cause = T("With num_workers=0 the DataLoader fetches and collates every batch in the training process, "
                .. "between steps: loading and training never overlap, so each step pays the full loading time "
                .. "(SOP §6.1, §6.2)" .. (one and "; with one effective CPU, workers would share it with the step, "
                .. "so only IO waits would overlap." or "."),
                "num_workers=0 时 DataLoader 在训练进程里、两个 step 之间取数并 collate：加载与训练从不重叠，每个 step "
                .. "都付全部加载时间（SOP §6.1、§6.2）" .. (one and "；只有一个有效 CPU 时 worker 要与训练争同一个核，"
                .. "只有 IO 等待能被重叠。" or "。")),
      fix = tr("Load in worker processes: DataLoader(num_workers=2, persistent_workers=True, prefetch_factor=2) "
               .. "as a start, then raise num_workers one at a time (at most {eff}, the effective CPUs, minus what "
               .. "the step needs) keeping a value only while samples/s improves. Limit BLAS/OpenMP threads per "
               .. "worker (threadpoolctl.threadpool_limits(1) in worker_init_fn).",
               "用 worker 进程加载：先设 DataLoader(num_workers=2, persistent_workers=True, prefetch_factor=2)，"
               .. "再每次加 1（最多 {eff} 个有效 CPU 减去训练 step 需要的），只有 samples/s 提高才保留。每个 worker "
               .. "限制 BLAS/OpenMP 线程（worker_init_fn 里 threadpoolctl.threadpool_limits(1)）。", { eff = eff }),
      verify = tr("`sopctl run --pid {pid} --duration 5`: dataloader.no_workers clear, dataloader.starved clear, "
                  .. "and the step time (samples/s) improves.",
                  "`sopctl run --pid {pid} --duration 5`：dataloader.no_workers 与 dataloader.starved 为 clear，"
                  .. "step 时间（samples/s）改善。", { pid = ev.pid }),
    }
  end,
}

rule {
  id = "dataloader.too_many_workers", section = "6.2", severity = "warn",
  title = T("far more DataLoader workers than effective CPUs, with the CPUs full",
            "DataLoader worker 远多于有效 CPU，且 CPU 已跑满"),
  reads = { "python.workers[].threads[].window.top_stacks", "python.workers[].cpu_pct",
            "python.workers[].cpu_frac", "effective_cpus", "proc.cpu_pct", "children[].cpu_pct",
            "threads[].wait_pct", "cgroup.cpu.quota_cpus", "duration_s", "host.ncpu", "pid",
            "python.threads[].tid", "python.threads[].window.samples", "python.workers[].pid",
            "python.workers[].threads[].tid", "python.workers[].threads[].window.samples",
            "threads[].cpu_pct", "threads[].tid" },
  uses = { "loader_workers_per_cpu", "cpu_saturated_pct" },
  refs = { REF_DATA, "https://github.com/joblib/threadpoolctl",
           "https://pytorch.org/docs/stable/generated/torch.set_num_threads.html" },
  check = function(ev, th)
    local mt, verdict = sampled(ev)
    if not mt then return verdict end
    local dw = dl_workers(ev)
    if #dw == 0 then
      return clear(NO_WORKERS)
    end
    local used, cap, eff = job_cpu(ev)
    if not used then return unknown(T("the job's CPU over the window was not measured", "未测得窗口内作业的 CPU")) end
    local ratio = #dw / eff
    local base = tr("{n} DataLoader workers on {eff} effective CPUs ({ratio:%.1f} per CPU); the job used {used:%.0f}% "
                      .. "CPU of a {cap:%.0f}% capacity",
                    "{n} 个 DataLoader worker，有效 CPU {eff} 个（每 CPU {ratio:%.1f} 个）；作业共用 CPU {used:%.0f}%，容量 {cap:%.0f}%",
                    { n = #dw, eff = eff, ratio = ratio, used = used, cap = cap })
    if ratio < th.loader_workers_per_cpu then return clear(base) end
    -- The CPUs are full when the job uses its capacity, or when the workers alone are runnable
    -- (state R: running or queued for a CPU) for more CPU-time than the capacity: the second holds
    -- on a host shared with other load, where the job gets less than its capacity.
    local busy, wcpu, want = 0, 0, 0
    for _, d in ipairs(dw) do
      wcpu = wcpu + (d.w.cpu_pct or 0)
      want = want + (d.w.cpu_frac or 0)
      if d.w.cpu_frac and d.w.cpu_frac >= 0.5 then busy = busy + 1 end
    end
    base = tr("{base}; the workers were runnable (state R) for {want:%.1f} CPUs' worth of samples",
              "{base}；worker 处于可运行态（R）的样本合计相当于 {want:%.1f} 个 CPU", { base = base, want = want })
    local full = th.cpu_saturated_pct / 100
    if used < full * cap and 100 * want < full * cap then
      return clear(tr("{base}: the CPUs are not full, the extra workers cost memory, not CPU time",
                      "{base}：CPU 未跑满，多出的 worker 只占内存，不抢 CPU", { base = base }))
    end
    local main = T("", "")
    for _, t in ipairs(ev.threads or {}) do
      if t.tid == ev.pid and t.cpu_pct then
        main = tr("; the training process's main thread ran {cpu:%.0f}% of a core and waited {wait:%.0f}% of the "
                    .. "window in the run queue",
                  "；训练进程主线程用了单核 {cpu:%.0f}%，在运行队列里等了窗口的 {wait:%.0f}%",
                  { cpu = t.cpu_pct, wait = t.wait_pct or 0 })
      end
    end
    return hit {
      symptom = tr("{n_dw} DataLoader workers compete for {eff} effective CPUs",
                   "{n_dw} 个 DataLoader worker 争抢 {eff} 个有效 CPU",
                   { n_dw = #dw, eff = eff }),
      evidence = tr("{base}; {busy} workers runnable half their samples or more, together {wcpu:%.0f}% "
                      .. "CPU{main}.",
                    "{base}；{busy} 个 worker 至少一半样本处于可运行态，合计 CPU {wcpu:%.0f}%{main}。",
                    { base = base, busy = busy, wcpu = wcpu, main = main }),
      cause = tr("num_workers is sized beyond the {eff} CPUs the job may use: the workers time-slice the same "
                 .. "cores, take CPU from the training step and each other, and each holds its own copy of the "
                 .. "dataset state and prefetched batches (SOP §6.2: num_workers above the cores fights the "
                 .. "BLAS threads).",
                 "num_workers 超过了作业可用的 {eff} 个 CPU：worker 在同几个核上轮转，抢训练 step 和彼此的 CPU，"
                 .. "每个 worker 还各持一份数据集状态和预取 batch（SOP §6.2：num_workers 超过核数会与 BLAS 线程抢核）。", { eff = eff }),
      fix = tr("Set num_workers to at most {eff} (the effective CPUs) minus the cores the training step uses; "
               .. "measure samples/s at that value and one below, keep the faster. Inside each worker limit "
               .. "BLAS/OpenMP to one thread (threadpoolctl.threadpool_limits(1) in worker_init_fn, or "
               .. "OMP_NUM_THREADS=1). If loading is still too slow with the CPUs full, make each sample "
               .. "cheaper (see dataloader.starved) or give the job more CPUs.",
               "num_workers 最多设为 {eff}（有效 CPU 数）减去训练 step 占用的核；在该值和少 1 的值各测 samples/s，"
               .. "取较快者。每个 worker 内 BLAS/OpenMP 限一个线程（worker_init_fn 里 "
               .. "threadpoolctl.threadpool_limits(1)，或 OMP_NUM_THREADS=1）。CPU 跑满后加载仍慢，就让每个样本"
               .. "更便宜（见 dataloader.starved）或给作业更多 CPU。", { eff = eff }),
      verify = tr("`sopctl run --pid {pid} --duration 5`: dataloader.too_many_workers and cpu.oversubscribed "
                  .. "clear, and samples/s is not lower than before.",
                  "`sopctl run --pid {pid} --duration 5`：dataloader.too_many_workers 与 cpu.oversubscribed 为 clear，"
                  .. "samples/s 不低于调整前。", { pid = ev.pid }),
    }
  end,
}

-- Tokenizer frames (is_tok below). Frames of the Rust-backed fast
-- path (transformers' *_fast.py, *TokenizerFast, the `tokenizers` package's Python wrappers) are
-- the caller of native code, not pure-Python tokenizing.
local FAST_FILES = { ["tokenization_utils_fast.py"] = true, ["base_tokenizer.py"] = true,
                     ["byte_level_bpe.py"] = true, ["char_level_bpe.py"] = true, ["bert_wordpiece.py"] = true,
                     ["sentencepiece_bpe.py"] = true, ["sentencepiece_unigram.py"] = true }

local function frame_file(f) return f:match("%(([^()]*)%)%s*$") or "" end

-- A tokenizer frame: its (qualified) function name says tokeniz/tokenis, or its file's name starts
-- so (tokenization_bert.py, tokenizer.py). A script's `<module>` frame never counts: a file named
-- train_tokenizer.py is not tokenizing while it waits for batches.
local function is_tok(f)
  local l = f:lower()
  if l:sub(1, 8) == "<module>" then return false end
  local func = l:match("^(.-) %(") or l
  local file = frame_file(l)
  return has(func, "tokeniz") or has(func, "tokenis") or file:sub(1, 7) == "tokeniz"
         or file:sub(1, 7) == "tokenis"
end

local function is_fast(f)
  local file = frame_file(f)
  return FAST_FILES[file] or file:match("_fast%.py$") ~= nil or has(f, "TokenizerFast")
end

-- transformers' own slow (pure-Python) tokenizer files: tokenization_utils.py, tokenization_bert.py ...
local function is_hf_slow(f)
  local file = frame_file(f)
  return file:match("^tokenization_.*%.py$") ~= nil and file ~= "tokenization_utils_base.py"
         and not is_fast(f)
end

-- A stack tokenizing in Python: a tokenizer frame among its innermost TOK_DEPTH frames (so a
-- `<module>` in a file named *tokeniz* waiting for batches does not count; helpers such as re's
-- are allowed under it), and the innermost such frame is not the fast path's. With the Rust
-- library loaded it must be in transformers' own slow classes: a user's frame named "tokenize"
-- could then be calling Rust.
local TOK_DEPTH = 3

local function slow_tok_stack(rust_loaded)
  return function(stack)
    local fr = frames(stack)
    for i = #fr, math.max(1, #fr - TOK_DEPTH + 1), -1 do
      if is_tok(fr[i]) then
        if is_fast(fr[i]) then return false end
        return not rust_loaded or is_hf_slow(fr[i])
      end
    end
    return false
  end
end

local function rust_tokenizers(ev)
  for _, l in ipairs(ev.proc and ev.proc.libs or {}) do
    if l.kind == "tokenizers" then return l end
  end
end

-- Whether the Rust tokenizers library (rust_tokenizers(ev)) is loaded, as a bilingual text.
local function rust_lib_text(rust)
  if not rust then return T("the Rust tokenizers library is not loaded", "未加载 Rust tokenizers 库") end
  return tr("the Rust tokenizers library is loaded ({lib:%s})", "已加载 Rust tokenizers 库（{lib:%s}）",
            { lib = rust.path or rust.name or "?" })
end

rule {
  id = "dataloader.slow_tokenizer", section = "6.6", severity = "warn",
  title = T("a pure-Python (slow) tokenizer takes a large share of the loading or training process's time",
            "纯 Python（slow）tokenizer 占了加载或训练进程的大部分时间"),
  reads = { "python.threads[].window.top_stacks", "python.workers[].threads[].window.top_stacks", "proc.libs",
            "duration_s", "pid", "python.threads[].tid", "python.threads[].window.samples",
            "python.workers[].pid", "python.workers[].threads[].tid",
            "python.workers[].threads[].window.samples" },
  uses = { "loader_tokenizer_pct" },
  cause = T("The text is tokenized by Python code (a slow tokenizer: transformers' use_fast=False or a model "
            .. "without a fast version, or a hand-written one), 10-100x slower than the Rust `tokenizers` "
            .. "implementation, and one sample at a time (SOP §6.6).",
            "文本由 Python 代码分词（slow tokenizer：transformers 的 use_fast=False、没有 fast 版本的模型，"
            .. "或手写的分词器），比 Rust `tokenizers` 实现慢 10~100 倍，且逐条处理（SOP §6.6）。"),
  fix = T("Use the Rust fast tokenizer (AutoTokenizer.from_pretrained(name, use_fast=True); check "
          .. "tok.is_fast is True), encode in batches (tok(list_of_texts) instead of one call per text), "
          .. "truncate long texts before tokenizing, and tokenize once ahead of training "
          .. "(datasets' map(batched=True) + save_to_disk) so the DataLoader only reads token ids.",
          "改用 Rust fast tokenizer（AutoTokenizer.from_pretrained(name, use_fast=True)，确认 tok.is_fast 为 "
          .. "True），批量编码（tok(list_of_texts)，不要逐条调用），长文本先截断再分词，并在训练前一次性分词"
          .. "（datasets 的 map(batched=True) + save_to_disk），让 DataLoader 只读 token id。"),
  refs = { REF_TOK, REF_TOKENIZERS, REF_DATA },
  check = function(ev, th)
    local mt, verdict = sampled(ev)
    if not mt then return verdict end
    local rust = rust_tokenizers(ev)
    local pred = slow_tok_stack(rust ~= nil)
    -- The target's main thread, and each worker's main thread, on their own.
    local seen = { { what = tr("main thread of pid {pid}", "pid {pid} 主线程", { pid = ev.pid }), t = mt } }
    for _, w in ipairs(ev.python.workers or {}) do
      for _, t in ipairs(w.threads or {}) do
        if t.tid == w.pid then
          seen[#seen + 1] = { what = tr("worker pid {pid}", "worker pid {pid}", { pid = w.pid }), t = t }
        end
      end
    end
    local hits, top, any_tok = {}, 0, false
    local best
    for _, s in ipairs(seen) do
      local f, _, b = share(s.t, pred)
      if f and f > 0 then any_tok = true end
      if f and 100 * f >= th.loader_tokenizer_pct then
        hits[#hits + 1] = { what = s.what, f = f, b = b }
        if f > top then top, best = f, b end
      end
    end
    local lib = rust_lib_text(rust)
    if #hits == 0 then
      return clear(tr("no process spent {loader_tokenizer_pct:%g}% or more of its samples in Python tokenizer "
                        .. "code{below_en}; {lib}",
                      "没有进程把 {loader_tokenizer_pct:%g}% 以上的样本花在 Python tokenizer 代码里{below_zh}；{lib}",
                      { loader_tokenizer_pct = th.loader_tokenizer_pct,
                        below_en = any_tok and " (some seen, below the threshold)" or "", lib = lib,
                        below_zh = any_tok and "（有少量，低于阈值）" or "" }))
    end
    local parts_en, parts_zh = {}, {}
    for i = 1, math.min(#hits, 6) do
      parts_en[#parts_en + 1] = fmt("%s %s", hits[i].what.en, pct_text(hits[i].f))
      parts_zh[#parts_zh + 1] = fmt("%s %s", hits[i].what.zh, pct_text(hits[i].f))
    end
    local where = best and tail(best.stack, nil, 3) or "?"
    return hit {
      symptom = tr("tokenizing in pure Python takes up to {top} of a process's time",
                   "纯 Python 分词最多占一个进程 {top} 的时间",
                   { top = pct_text(top) }),
      evidence = tr("share of samples inside Python tokenizer frames over {duration_s:%.1f} s: {parts_en}; most "
                      .. "sampled: {where:%s}; {lib}.",
                    "{duration_s:%.1f} 秒内落在 Python tokenizer 帧里的样本比例：{parts_zh}；最常见：{where:%s}；{lib}。",
                    { duration_s = ev.duration_s, parts_en = table.concat(parts_en, ", "), where = where,
                      lib = lib, parts_zh = table.concat(parts_zh, "，") }),
      verify = tr("`sopctl run --pid {pid} --duration 5`: dataloader.slow_tokenizer clear (tokenizer frames below "
                    .. "{loader_tokenizer_pct:%g}%) and samples/s improves.",
                  "`sopctl run --pid {pid} --duration 5`：dataloader.slow_tokenizer 为 clear（tokenizer 帧低于 "
                    .. "{loader_tokenizer_pct:%g}%），samples/s 改善。",
                  { pid = ev.pid, loader_tokenizer_pct = th.loader_tokenizer_pct }),
    }
  end,
}

-- TOKENIZERS_PARALLELISM as the Rust library reads it: "", off, false, f, no, n, 0 mean false.
local FALSEY = { [""] = true, off = true, ["false"] = true, f = true, no = true, n = true, ["0"] = true }

rule {
  id = "dataloader.tokenizers_fork", section = "6.6", severity = "warn",
  title = T("TOKENIZERS_PARALLELISM not false while workers are started with fork",
            "worker 以 fork 启动时 TOKENIZERS_PARALLELISM 不是 false"),
  reads = { "python.workers[].start_method", "python.workers[].env", "children[].env", "proc.env",
            "proc.libs", "children[].pid", "pid", "python.workers[].pid" },
  uses = {},
  fix = T("Export TOKENIZERS_PARALLELISM=false in the job's environment before Python starts (the workers "
          .. "then tokenize single-threaded, which is what a worker per core wants). Alternatively start the "
          .. "workers with DataLoader(multiprocessing_context='spawn' or 'forkserver'); side effects: every "
          .. "worker re-imports the modules (slower start, more memory), the dataset and worker_init_fn must "
          .. "be picklable, and the script needs an `if __name__ == '__main__':` guard.",
          "在 Python 启动前，在作业环境里导出 TOKENIZERS_PARALLELISM=false（worker 单线程分词，正符合每核一个 "
          .. "worker）。或者用 DataLoader(multiprocessing_context='spawn' 或 'forkserver') 启动 worker；副作用："
          .. "每个 worker 重新 import 模块（启动更慢、内存更多），dataset 与 worker_init_fn 必须可 pickle，"
          .. "脚本需要 `if __name__ == '__main__':` 保护。"),
  refs = { REF_TOKENIZERS, REF_MP, REF_DATA },
  check = function(ev, _)
    if not ev.python then
      return unknown(common.NO_STACKS)
    end
    local forked, env = {}, nil
    for _, w in ipairs(ev.python.workers or {}) do
      if w.start_method == "fork" then
        forked[#forked + 1] = w
        env = env or w.env
      end
    end
    if #forked == 0 then
      if not ev.python.workers then
        return clear(T("no CPython worker processes were sampled", "没有采样到 CPython worker 进程"))
      end
      return clear(T("no worker started by fork (spawn/forkserver workers start a fresh interpreter)",
                     "没有 fork 启动的 worker（spawn/forkserver 会启动新的解释器）"))
    end
    for _, c in ipairs(ev.children or {}) do
      if env then break end
      if c.pid == forked[1].pid then env = c.env end
    end
    env = env or (ev.proc and ev.proc.env)
    if not env then
      return unknown(T("the workers' environment was not readable", "读不到 worker 的环境变量"))
    end
    local v = env.TOKENIZERS_PARALLELISM
    local rust = rust_tokenizers(ev)
    local pids = {}
    for i = 1, math.min(#forked, 4) do pids[#pids + 1] = tostring(forked[i].pid) end
    local forks = tr("{n} workers started by fork (pid {pids:%s}{more:%s})",
                     "{n} 个 fork 启动的 worker（pid {pids:%s}{more:%s}）",
                     { n = #forked, pids = table.concat(pids, ", "), more = #forked > 4 and ", ..." or "" })
    local lib = rust_lib_text(rust)
    if v ~= nil and FALSEY[v:lower()] then
      return clear(tr("{forks}; TOKENIZERS_PARALLELISM={v:%s}",
                      "{forks}；TOKENIZERS_PARALLELISM={v:%s}",
                      { forks = forks, v = v }))
    end
    if v == nil and not rust then
      return clear(tr("{forks}; TOKENIZERS_PARALLELISM unset and {lib}",
                      "{forks}；TOKENIZERS_PARALLELISM 未设置，且{lib}",
                      { forks = forks, lib = lib }))
    end
    local sev, cause_en, cause_zh
    if v ~= nil then
      sev = rust and "warn" or "info"
      cause_en = "With TOKENIZERS_PARALLELISM set to a true value the Rust tokenizers library keeps its thread pool "
                 .. "on in forked children; a pool already used in the parent does not survive fork, and a worker "
                 .. "that encodes in parallel can hang (SOP §6.6)"
                 .. (rust and "." or "; the library is not loaded now, so this becomes a hazard once a fast "
                 .. "tokenizer is used.")
      cause_zh = "TOKENIZERS_PARALLELISM 为真时，Rust tokenizers 库在 fork 出的子进程里仍开启线程池；父进程用过的线程池"
                 .. "不能跨 fork 存活，worker 并行编码会卡住（SOP §6.6）"
                 .. (rust and "。" or "；目前未加载该库，一旦使用 fast tokenizer 就会成为隐患。")
    else
      sev = "info"
      cause_en = "The Rust tokenizers library is loaded and the workers are forked with TOKENIZERS_PARALLELISM "
                 .. "unset in the environment: if the parent encoded in parallel before the fork, the library "
                 .. "disables parallelism in each worker with a warning (and older versions could hang). A value "
                 .. "set in code through os.environ does not show in /proc, so this stays at info (SOP §6.6)."
      cause_zh = "已加载 Rust tokenizers 库，worker 由 fork 启动，而环境里没有设置 TOKENIZERS_PARALLELISM：若父进程在 "
                 .. "fork 前并行编码过，库会在每个 worker 里关闭并行并告警（旧版本会卡住）。代码里用 os.environ "
                 .. "设置的值在 /proc 中看不到，所以只给 info（SOP §6.6）。"
    end
    return hit {
      severity = sev,
      symptom = tr("TOKENIZERS_PARALLELISM is {v_en} while DataLoader workers are forked",
                   "DataLoader worker 以 fork 启动，而 TOKENIZERS_PARALLELISM {v_zh}",
                   { v_en = v and ("'" .. v .. "'") or "unset", v_zh = v and ("为 '" .. v .. "'") or "未设置" }),
      evidence = tr("{forks}; TOKENIZERS_PARALLELISM={v_en} in their environment; {lib}.",
                    "{forks}；其环境中 TOKENIZERS_PARALLELISM={v_zh}；{lib}。",
                    { forks = forks, v_en = v or "(unset)", lib = lib, v_zh = v or "（未设置）" }),
      cause = T(cause_en, cause_zh),
      verify = tr("`sopctl evidence --pid {pid} --duration 1 | jq '.python.workers[].env'` shows "
                  .. "TOKENIZERS_PARALLELISM=false, and `sopctl run --pid {pid}` clears dataloader.tokenizers_fork.",
                  "`sopctl evidence --pid {pid} --duration 1 | jq '.python.workers[].env'` 显示 "
                  .. "TOKENIZERS_PARALLELISM=false，`sopctl run --pid {pid}` 中 dataloader.tokenizers_fork 为 clear。",
                  { pid = ev.pid }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------

-- Children that started during the window with the command line of a DataLoader worker (fork
-- workers carry the target's, spawn/forkserver ones multiprocessing's): workers a new epoch
-- created while the window ran. Returns their count and pids.
local function appeared_workers(ev, dw)
  local cmd, seen = {}, {}
  for _, d in ipairs(dw) do
    if d.w.cmdline then cmd[d.w.cmdline] = true end
    seen[d.w.pid] = true
  end
  local n, pids = 0, {}
  for _, c in ipairs(ev.children or {}) do
    if c.ppid == ev.pid and not seen[c.pid] and c.age_s and c.age_s < ev.duration_s and c.cmdline
       and cmd[c.cmdline] then
      n = n + 1
      if #pids < 4 then pids[#pids + 1] = tostring(c.pid) end
    end
  end
  return n, pids
end

rule {
  id = "dataloader.workers_restarted", section = "6.2", severity = "warn",
  title = T("DataLoader workers re-created at each epoch (persistent_workers=False) in a long-running job",
            "长时间运行的作业中 DataLoader worker 每个 epoch 重建（persistent_workers=False）"),
  doc = [[Hit when the target has run at least loader_restart_parent_s and its DataLoader workers (torch's
    _worker_loop on their main thread) were at most loader_restart_worker_s old when the window started: warn
    when the window also saw the re-creation (one of those workers exited, or children with a worker's command
    line started during the window), info when it did not (a first epoch after a long start-up looks the same
    until the next epoch). Clear when there are no DataLoader workers, the job is younger than
    loader_restart_parent_s, or every worker is older than loader_restart_worker_s (persistent workers, or an
    epoch longer than that). Unknown when not CPython, with --duration 0, or when the ages were not measured.]],
  reads = { "python.workers[].threads[].window.top_stacks", "python.workers[].age_s",
            "python.workers[].exited", "python.workers[].cmdline", "python.loader.main_data_wait_frac",
            "proc.age_s", "children[].age_s", "children[].ppid", "children[].cmdline", "duration_s",
            "children[].pid", "pid", "python.threads[].tid", "python.threads[].window.samples",
            "python.workers[].pid", "python.workers[].threads[].tid",
            "python.workers[].threads[].window.samples" },
  uses = { "loader_restart_parent_s", "loader_restart_worker_s" },
  fix = T("Keep the workers across epochs: DataLoader(..., persistent_workers=True) with num_workers > 0, "
          .. "keeping the current num_workers and prefetch_factor. The workers then keep the dataset object "
          .. "they were given at the first epoch: state the training loop changes on it later (set_epoch on a "
          .. "dataset, not on a sampler) must be passed another way.",
          "让 worker 跨 epoch 保留：DataLoader(..., persistent_workers=True)（num_workers > 0），保持现有的 "
          .. "num_workers 与 prefetch_factor。此后 worker 一直使用第一个 epoch 拿到的 dataset 对象：训练循环之后"
          .. "在 dataset 上修改的状态（dataset 上的 set_epoch，而不是 sampler 上的）要换一种方式传递。"),
  refs = { REF_DATA, "https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader" },
  check = function(ev, th)
    local mt, verdict = sampled(ev)
    if not mt then return verdict end
    local dw = dl_workers(ev)
    if #dw == 0 then
      return clear(NO_WORKERS)
    end
    local parent = ev.proc and ev.proc.age_s
    if not parent then
      return unknown(T("the target's age (proc.age_s) was not measured", "未测得目标进程的运行时长（proc.age_s）"))
    end
    local young, aged, oldest, exited = {}, 0, nil, 0
    for _, d in ipairs(dw) do
      local a = d.w.age_s
      if a then
        aged = aged + 1
        if not oldest or a > oldest then oldest = a end
        if a <= th.loader_restart_worker_s then
          young[#young + 1] = d.w
          if d.w.exited then exited = exited + 1 end
        end
      end
    end
    if aged == 0 then
      return unknown(tr("the ages of the {n_dw} DataLoader workers were not measured",
                        "未测得 {n_dw} 个 DataLoader worker 的运行时长",
                        { n_dw = #dw }))
    end
    if parent < th.loader_restart_parent_s then
      return clear(tr("the job is {parent:%.0f} s old (< {loader_restart_parent_s:%g} s): its DataLoader workers are "
                        .. "as young as its first epoch",
                      "作业只运行了 {parent:%.0f} 秒（< {loader_restart_parent_s:%g} 秒）：DataLoader worker 与第一个 epoch 一样新",
                      { parent = parent, loader_restart_parent_s = th.loader_restart_parent_s }))
    end
    if #young == 0 then
      return clear(tr("the {aged} DataLoader workers are up to {oldest:%.0f} s old in a {parent:%.0f} s old job: none "
                        .. "started in the last {loader_restart_worker_s:%g} s (persistent workers, or epochs longer "
                        .. "than that)",
                      "{aged} 个 DataLoader worker 最长已运行 {oldest:%.0f} 秒（作业 {parent:%.0f} 秒）：最近 "
                        .. "{loader_restart_worker_s:%g} 秒内没有新建 worker（persistent worker，或 epoch 比这更长）",
                      { aged = aged, oldest = oldest, parent = parent,
                        loader_restart_worker_s = th.loader_restart_worker_s }))
    end
    local appeared, new_pids = appeared_workers(ev, dw)
    local ages = {}
    for i, w in ipairs(young) do
      if i <= 4 then ages[#ages + 1] = fmt("%d: %.1f s", w.pid, w.age_s) end
    end
    local wait = ev.python.loader and ev.python.loader.main_data_wait_frac
    local seen = exited > 0 or appeared > 0
    local new = #new_pids > 0 and T(" (pids " .. table.concat(new_pids, ", ") .. ")",
                                    "（pid " .. table.concat(new_pids, ", ") .. "）") or T("", "")
    local waited = wait and tr("; the training loop waited for batches {wait} of the window",
                               "；训练循环在 {wait} 的窗口时间里等 batch", { wait = pct_text(wait) }) or T("", "")
    local evidence = tr("the target is {parent:%.0f} s old; {young} of its {n} DataLoader workers were at most "
                          .. "{max_s:%g} s old when the window started (pid: age {ages:%s}); over the {secs:%.1f} s "
                          .. "window {exited} of them exited and {appeared} new children with a worker's command line "
                          .. "started{new}{waited}.",
                        "目标进程已运行 {parent:%.0f} 秒；{n} 个 DataLoader worker 中有 {young} 个在窗口开始时不超过 "
                          .. "{max_s:%g} 秒（pid: 时长 {ages:%s}）；{secs:%.1f} 秒窗口内其中 {exited} 个退出，另有 {appeared} "
                          .. "个与 worker 命令行相同的子进程启动{new}{waited}。",
                        { parent = parent, young = #young, n = #dw, max_s = th.loader_restart_worker_s,
                          ages = table.concat(ages, ", "), secs = ev.duration_s, exited = exited, appeared = appeared,
                          new = new, waited = waited })
    local cause
    if seen then
      cause = T("The DataLoader shuts its workers down at the end of each epoch and starts new ones when the "
                .. "next epoch's iterator is created (persistent_workers=False, the default): every epoch pays "
                .. "the process start, the dataset's re-creation in each worker (fork copy or spawn re-import) "
                .. "and an empty prefetch queue, during which the training loop waits (SOP §6.2).",
                "DataLoader 在每个 epoch 结束时关闭 worker，下一个 epoch 创建迭代器时再启动新的（persistent_workers="
                .. "False，默认值）：每个 epoch 都要付进程启动、每个 worker 重建 dataset（fork 复制或 spawn 重新 import）"
                .. "和预取队列清空的代价，期间训练循环在等（SOP §6.2）。")
    else
      cause = tr("The workers started {late_s:%.0f} s after the job: a DataLoader with persistent_workers=False (the "
               .. "default) starts new workers at each epoch and pays the process start and an empty prefetch "
               .. "queue each time (SOP §6.2). The window saw no worker exit or start, so this stays at info: "
               .. "a first epoch that began after a long start-up shows the same ages.",
             "worker 在作业启动 {late_s:%.0f} 秒后才启动：persistent_workers=False（默认值）的 DataLoader 每个 epoch "
               .. "都启动新 worker，每次都付进程启动和预取队列清空的代价（SOP §6.2）。窗口内没有看到 worker 退出"
               .. "或启动，所以只给 info：启动阶段很长、之后才开始的第一个 epoch 也是这样的时长。",
             { late_s = parent - young[1].age_s })
    end
    return hit {
      severity = seen and "warn" or "info",
      symptom = seen and tr("DataLoader workers {age_s:%.1f} s old in a {parent:%.0f} s old job: re-created at each "
                              .. "epoch",
                            "DataLoader worker 仅运行 {age_s:%.1f} 秒，作业已运行 {parent:%.0f} 秒：每个 epoch 重建 worker",
                            { age_s = young[1].age_s, parent = parent })
                or tr("DataLoader workers {age_s:%.1f} s old in a {parent:%.0f} s old job: started {late_s:%.0f} s "
                        .. "after it",
                      "DataLoader worker 仅运行 {age_s:%.1f} 秒，作业已运行 {parent:%.0f} 秒：比作业晚 {late_s:%.0f} 秒启动",
                      { age_s = young[1].age_s, parent = parent, late_s = parent - young[1].age_s }),
      evidence = evidence,
      cause = cause,
      verify = tr("`ps -o pid,etimes --ppid {pid}` twice, an epoch apart, shows the same worker pids with growing "
                  .. "etimes, and `sopctl run --pid {pid} --duration 5` clears dataloader.workers_restarted.",
                  "相隔一个 epoch 运行两次 `ps -o pid,etimes --ppid {pid}`，worker pid 不变且 etimes 增长；"
                  .. "`sopctl run --pid {pid} --duration 5` 中 dataloader.workers_restarted 为 clear。", { pid = ev.pid }),
    }
  end,
}
