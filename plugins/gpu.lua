-- plugins/gpu.lua — a GPU job's own pitfalls (ev.gpu and the sampled GPU waits, issue 25): a
-- device-to-host sync in the hot loop (.item()/.cpu() every step, the GPU idle between steps), and
-- GPU memory of the tree near the device's total (out-of-memory risk). Reads ev.gpu and
-- python.threads[].window.gpu_*; thresholds gpu_busy_pct, gpu_sync_frac, gpu_mem_pct,
-- gpu_mem_tree_share, sampled_min_samples.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local NO_GPU = T("no GPU evidence (ev.gpu): no NVML, or no GPU in use", "没有 GPU 证据（ev.gpu）：没有 NVML，或未使用 GPU")
local MIG_NO_UTIL = T("the GPU is in MIG mode: NVML gives no utilisation per MIG instance, so how busy the job's "
                        .. "instance was is unknown (the whole GPU's figures are not the job's)",
                      "GPU 处于 MIG 模式：NVML 不提供单个 MIG 实例的利用率，作业所在实例有多忙未知（整卡的数据不是该作业的）")

-- Does ev.gpu list a device in MIG mode (no utilisation figures of the job's own)?
local function on_mig(ev)
  for _, d in ipairs(ev.gpu and ev.gpu.devices or {}) do
    if d.mig_enabled then return true end
  end
  return false
end

rule {
  id = "gpu.sync_per_step", section = "9", severity = "warn",
  title = T("a device-to-host sync in the hot loop (.item()/.cpu() every step) leaves the GPU idle between steps",
            "热循环里的设备到主机同步（每步 .item()/.cpu()）让 GPU 在 step 之间空闲"),
  doc = [[Sampled window on a GPU job: hit when a Python thread of the target waited on the GPU at one line of the
    program's own code (window.gpu_sync_site) in at least gpu_sync_frac of its samples (at least
    sampled_min_samples) while the devices the tree uses were less than gpu_busy_pct busy: each step stops to
    fetch a value from the device, the host cannot queue the next step meanwhile, and the GPU idles while Python
    prepares it. Clear when the GPU is busy (the sync costs little then) or no thread syncs that often. Unknown
    without ev.gpu or sampled threads, and on a MIG instance (NVML has no utilisation per instance).]],
  reads = { "python.threads[].tid", "python.threads[].window.samples", "python.threads[].window.gpu_wait_frac",
            "python.threads[].window.gpu_sync_site", "python.threads[].window.gpu_sync_site_frac",
            "python.threads[].window.active_frac", "gpu.busy_pct", "gpu.idle_frac", "gpu.devices[].name",
            "gpu.devices[].used_by_tree", "gpu.devices[].util_samples", "gpu.devices[].mig_enabled", "duration_s",
            "pid" },
  uses = { "gpu_busy_pct", "gpu_sync_frac", "sampled_min_samples" },
  refs = { "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
             .. "#avoid-unnecessary-cpu-gpu-synchronization",
           "https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution" },
  check = function(ev, th)
    if common.no_window(ev) then return unknown(common.NO_WINDOW) end
    local u = common.gpu_use(ev)
    if not u then return unknown(on_mig(ev) and MIG_NO_UTIL or NO_GPU) end
    local best
    for _, t in ipairs(ev.python and ev.python.threads or {}) do
      local w = t.window
      if w and (w.samples or 0) >= th.sampled_min_samples and w.gpu_sync_site
         and (not best or (w.gpu_sync_site_frac or 0) > (best.w.gpu_sync_site_frac or 0)) then
        best = { tid = t.tid, w = w }
      end
    end
    if not best then
      return clear(tr("no sampled thread waited on the GPU at a line of its own; the GPU was {busy:%.0f}% busy",
                      "没有采样线程在自己的代码行上等 GPU；GPU 利用率 {busy:%.0f}%", { busy = u.busy_pct }))
    end
    local w = best.w
    local base = tr("thread {tid} waited on the GPU at {site:%s} in {frac:%.0f}% of its {samples} samples "
                      .. "(on the GPU in {gw:%.0f}% in all){gpu}",
                    "线程 {tid} 的 {samples} 个样本中有 {frac:%.0f}% 在 {site:%s} 等 GPU（等 GPU 共 {gw:%.0f}%）{gpu}",
                    { tid = best.tid, site = w.gpu_sync_site, frac = 100 * (w.gpu_sync_site_frac or 0),
                      samples = w.samples, gw = 100 * (w.gpu_wait_frac or 0), gpu = common.gpu_idle_text(ev) })
    if (w.gpu_sync_site_frac or 0) < th.gpu_sync_frac or u.busy_pct >= th.gpu_busy_pct then
      return clear(base)
    end
    return hit {
      symptom = tr("a device-to-host sync in the hot loop at {site:%s}: the GPU idles between steps",
                   "热循环里 {site:%s} 处的设备到主机同步：GPU 在 step 之间空闲", { site = w.gpu_sync_site }),
      evidence = base,
      cause = T("Reading a value from the GPU (.item(), .cpu(), .tolist(), .numpy(), .to('cpu')) or calling "
                .. "synchronize() waits until every queued kernel has run. Done every step, it drains the queue: "
                .. "the host cannot launch the next step while it waits, and the GPU sits idle while Python "
                .. "prepares it (§9: host-bound).",
                "从 GPU 读取数值（.item()、.cpu()、.tolist()、.numpy()、.to('cpu')）或调用 synchronize() 会等到所有已排队的 "
                .. "kernel 跑完。每步都这样做会清空队列：等待期间主机无法启动下一步，而 Python 准备下一步时 GPU "
                .. "空闲（§9：主机瓶颈）。"),
      fix = T("Keep values on the device in the loop: accumulate the loss as a tensor (total += loss.detach()) and "
              .. "call .item() every N steps or at logging time; compare on the device (torch.where, masks) instead "
              .. "of Python `if tensor:`; copy results with .to('cpu', non_blocking=True) into pinned memory and read "
              .. "them a step later.",
              "循环里让数值留在设备上：把 loss 累加成 tensor（total += loss.detach()），每 N 步或打日志时再 "
              .. ".item()；在设备上比较（torch.where、mask），不要用 Python 的 `if tensor:`；结果用 "
              .. ".to('cpu', non_blocking=True) 拷到 pinned 内存，下一步再读。"),
      verify = tr("`sopctl run --pid {pid} --duration 5`: gpu.sync_per_step clear and the GPU busier at a higher "
                  .. "step rate", "`sopctl run --pid {pid} --duration 5`：gpu.sync_per_step 为 clear，GPU 利用率和 step "
                  .. "速率都提高", { pid = ev.pid }),
    }
  end,
}

rule {
  id = "gpu.memory_near_full", section = "2.2", severity = "warn",
  title = T("GPU memory of the job near the device's total: out-of-memory risk",
            "作业占用的 GPU 显存接近设备总量：有 OOM 风险"),
  doc = [[From ev.gpu: hit when a device the tree uses has at least gpu_mem_pct of its memory in use and the tree's
    processes (gpu.procs) hold at least gpu_mem_tree_share of what is in use, naming the process that holds the
    most. PyTorch's caching allocator keeps freed blocks reserved, so NVML's figure is what the process holds
    (reserved), not only live tensors. On a MIG instance the instance's memory is the bound
    (devices[].mig_mem_*); a GPU in MIG mode without it is left out (the whole GPU's memory is shared with the
    other instances). Unknown without ev.gpu.]],
  reads = { "gpu.devices[].index", "gpu.devices[].name", "gpu.devices[].used_by_tree", "gpu.devices[].mem_used_kb",
            "gpu.devices[].mem_total_kb", "gpu.devices[].mig_enabled", "gpu.devices[].mig_uuid",
            "gpu.devices[].mig_mem_used_kb", "gpu.devices[].mig_mem_total_kb", "gpu.procs[].pid",
            "gpu.procs[].device", "gpu.procs[].mem_kb", "pid" },
  uses = { "gpu_mem_pct", "gpu_mem_tree_share" },
  refs = { "https://pytorch.org/docs/stable/notes/cuda.html#memory-management",
           "https://pytorch.org/docs/stable/torch_cuda_memory.html" },
  check = function(ev, th)
    local g = ev.gpu
    if not g or not g.devices then return unknown(NO_GPU) end
    local worst
    for _, dev in ipairs(g.devices) do
      local d = dev
      if dev.mig_enabled then -- the instance's memory is the job's bound; the whole GPU's is shared
        d = dev.mig_mem_total_kb and { index = dev.index, name = (dev.name or "?") .. " " .. (dev.mig_uuid or "MIG"),
                                       used_by_tree = dev.used_by_tree, mem_used_kb = dev.mig_mem_used_kb,
                                       mem_total_kb = dev.mig_mem_total_kb } or {}
      end
      if d.used_by_tree and d.mem_used_kb and d.mem_total_kb and d.mem_total_kb > 0 then
        local tree, top = 0, nil
        for _, p in ipairs(g.procs or {}) do
          if p.device == d.index and p.mem_kb then
            tree = tree + p.mem_kb
            if not top or p.mem_kb > top.mem_kb then top = p end
          end
        end
        local used = d.mem_used_kb / d.mem_total_kb
        if not worst or used > worst.used then worst = { d = d, used = used, tree = tree, top = top } end
      end
    end
    if not worst and on_mig(ev) then
      return unknown(T("the GPU is in MIG mode and the job's instance is not known (CUDA_VISIBLE_DEVICES names no MIG "
                         .. "device): the whole GPU's memory is not the job's bound",
                       "GPU 处于 MIG 模式，且不知道作业所在的实例（CUDA_VISIBLE_DEVICES 未指定 MIG 设备）：整卡显存不是作业的上限"))
    end
    if not worst then
      return unknown(T("no memory figures of a device the tree uses", "没有作业所用设备的显存数据"))
    end
    local d = worst.d
    local base = tr("GPU {index} ({name:%s}): {used_gib:%.1f} GiB of {total_gib:%.1f} GiB in use ({pct:%.0f}%), "
                      .. "{tree_gib:%.1f} GiB of it held by the job's processes",
                    "GPU {index}（{name:%s}）：已用 {used_gib:%.1f} GiB / {total_gib:%.1f} GiB（{pct:%.0f}%），"
                      .. "其中作业进程占 {tree_gib:%.1f} GiB",
                    { index = d.index or 0, name = d.name or "?", used_gib = d.mem_used_kb / 1048576,
                      total_gib = d.mem_total_kb / 1048576, pct = 100 * worst.used, tree_gib = worst.tree / 1048576 })
    if 100 * worst.used < th.gpu_mem_pct or worst.tree < th.gpu_mem_tree_share * d.mem_used_kb or not worst.top then
      return clear(base)
    end
    local top = worst.top
    return hit {
      symptom = tr("GPU {index} memory {pct:%.0f}% full, {top_gib:%.1f} GiB held by pid {top_pid}: out-of-memory risk",
                   "GPU {index} 显存已用 {pct:%.0f}%，pid {top_pid} 占 {top_gib:%.1f} GiB：有 OOM 风险",
                   { index = d.index or 0, pct = 100 * worst.used, top_gib = top.mem_kb / 1048576, top_pid = top.pid }),
      evidence = tr("{base}; pid {top_pid} holds {top_gib:%.1f} GiB", "{base}；pid {top_pid} 占 {top_gib:%.1f} GiB",
                    { base = base, top_pid = top.pid, top_gib = top.mem_kb / 1048576 }),
      cause = T("The device has little memory left: a larger batch, a longer sequence or allocator fragmentation "
                .. "turns the next allocation into torch.cuda.OutOfMemoryError. NVML counts what the process "
                .. "reserved, including the caching allocator's free blocks.",
                "设备剩余显存很少：batch 变大、序列变长或分配器碎片都会让下一次分配变成 torch.cuda.OutOfMemoryError。"
                .. "NVML 统计的是进程预留的显存，包括缓存分配器里的空闲块。"),
      fix = tr("See what pid {top_pid} holds (torch.cuda.memory_summary(), torch.cuda.memory._record_memory_history "
               .. "+ snapshot): drop references kept across steps (a list of losses as tensors, cached outputs), use "
               .. "bf16/AMP or activation checkpointing, lower the batch size, and against fragmentation set "
               .. "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
               "查看 pid {top_pid} 占了什么（torch.cuda.memory_summary()、torch.cuda.memory._record_memory_history + "
               .. "快照）：去掉跨 step 保留的引用（以 tensor 形式保存的 loss 列表、缓存的输出），用 bf16/AMP 或 "
               .. "activation checkpointing，减小 batch；碎片问题设 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True。",
               { top_pid = top.pid }),
      verify = tr("`nvidia-smi --query-gpu=memory.used,memory.total --format=csv` below {pct:%g}% during the peak "
                  .. "step; `sopctl run --pid {pid} --duration 5`: gpu.memory_near_full clear",
                  "峰值 step 时 `nvidia-smi --query-gpu=memory.used,memory.total --format=csv` 低于 {pct:%g}%；"
                  .. "`sopctl run --pid {pid} --duration 5`：gpu.memory_near_full 为 clear",
                  { pct = th.gpu_mem_pct, pid = ev.pid }),
    }
  end,
}
