-- plugins/checkpoint.lua — SOP §7.7: checkpoint save/load (torch.save / torch.load, pickle,
-- joblib, safetensors) bound by CPU serialization on one core, or by the storage it writes to /
-- reads from (busy disk, NFS/FUSE fsync). Reads ev.python (threads[] and workers[].threads[]
-- window: checkpoint_frac, running_frac, io_wait_frac, top_stacks), ev.threads (on-CPU and run-queue
-- shares, so a host busy with other processes moves no verdict), ev.io_files, ev.host.disks.

local common = require "plugins.common"
local T, no_proc = common.T, common.no_proc
local tr = common.tr


local REFS = {
  "https://pytorch.org/docs/stable/generated/torch.load.html",
  "https://pytorch.org/docs/stable/notes/serialization.html",
  "https://huggingface.co/docs/safetensors/index",
  "https://docs.python.org/3/library/pickle.html",
}

local STORED = { ["local"] = true, network = true, fuse = true, overlay = true }
local REMOTE = { network = true, fuse = true }

local rate = common.rate

-- The thread of the target or of a worker spending the largest share of the window inside
-- checkpoint code: {pid, tid, name, w (window)} or nil; also whether any window was sampled.
local function checkpoint_thread(ev)
  local py = ev.python
  local best, sampled
  local function scan(pid, threads)
    for _, t in ipairs(threads or {}) do
      local w = t.window
      if w and w.checkpoint_frac then
        sampled = true
        if not best or w.checkpoint_frac > best.w.checkpoint_frac then
          best = { pid = pid, tid = t.tid, name = t.name, w = w }
        end
      end
    end
  end
  scan(ev.pid, py.threads)
  for _, wk in ipairs(py.workers or {}) do scan(wk.pid, wk.threads) end
  return best, sampled
end

-- "torch.save" / "torch.load" / "pickle" ... from the thread's most seen checkpoint stack.
local function what_call(w)
  for _, s in ipairs(w.top_stacks or {}) do
    local st = s.stack or ""
    if st:find("serialization.py", 1, true) or st:find("pickle", 1, true)
        or st:find("safetensors", 1, true) then
      if st:find("save (", 1, true) or st:find("_save (", 1, true) then return "torch.save", st end
      if st:find("load (", 1, true) or st:find("_load (", 1, true) then return "torch.load", st end
      if st:find("dump", 1, true) then return "pickle.dump", st end
      return "serialization", st
    end
  end
  return "serialization", nil
end

-- The file the checkpoint goes to / comes from: the process's storage file whose position moves
-- fastest over the window; nil when none moves.
local function checkpoint_file(ev, pid)
  local best
  for _, f in ipairs(ev.io_files or {}) do
    if f.pid == pid and STORED[f.fs_kind] and (f.advance_bytes_per_s or 0) ~= 0 then
      if not best or math.abs(f.advance_bytes_per_s) > math.abs(best.advance_bytes_per_s) then best = f end
    end
  end
  return best
end

-- Utilisation of the disk behind the file (else the busiest disk): pct, name.
local function disk_util(ev, f)
  if f and f.disk_util_pct then return f.disk_util_pct, f.disk end
  local best
  for _, d in ipairs((ev.host and ev.host.disks) or {}) do
    if d.util_pct and (not best or d.util_pct > best.util_pct) then best = d end
  end
  if best then return best.util_pct, best.name end
end

-- The thread's own progress over the window, from the kernel's accounting (threads[] of the
-- target; nil for a worker or without a window): on-CPU share and run-queue share. A thread
-- that is runnable but queued for a CPU shows state R without running: on a host busy with
-- other processes that time is neither serialization nor storage.
local function sched_of(ev, t)
  if t.pid ~= ev.pid then return nil end
  for _, o in ipairs(ev.threads or {}) do
    if o.tid == t.tid and o.cpu_pct then return o.cpu_pct / 100, (o.wait_pct or 0) / 100 end
  end
end

-- The thread's sampled shares with its run-queue time taken out: the R samples split between
-- on a CPU and queued for one as the kernel's figures do, the queued part dropped from the
-- samples, running and D re-read as shares of the rest. Without the kernel's figures the sampled
-- shares as they are. Returns run, iow, queued (fraction of the window) and the on-CPU share
-- of the window.
local function progress_shares(ev, t)
  local w = t.w
  local run, iow = w.running_frac or 0, w.io_wait_frac or 0
  local cpu, queued = sched_of(ev, t)
  if not cpu or cpu + queued <= 0 then return run, iow, 0, run end
  local on = run * cpu / (cpu + queued)
  local rest = math.max(0.05, 1 - (run - on))
  return math.min(1, on / rest), math.min(1, iow / rest), queued, on
end

-- Lower bound of the share of the checkpoint samples also counted in `frac` (both are fractions
-- of the same samples): max(0, frac + ckpt - 1) / ckpt.
local function overlap(frac, ckpt)
  if not frac or ckpt <= 0 then return 0 end
  return math.max(0, frac + ckpt - 1) / ckpt
end

-- Shared start of both rules: nil + verdict when there is nothing to judge.
local function find(ev, th)
  if not ev.proc then return nil, no_proc(ev) end
  if not ev.python or not ev.python.threads then
    return nil, unknown(common.NO_STACKS)
  end
  if common.no_window(ev) then return nil, unknown(common.NO_WINDOW) end
  local t, sampled = checkpoint_thread(ev)
  if not sampled then
    return nil, unknown(common.NOT_SAMPLED)
  end
  if not t or t.w.checkpoint_frac < th.ckpt_frac then
    local f = t and t.w.checkpoint_frac or 0
    return nil, clear(tr("no thread spends {ckpt_frac_pct:%.0f}% of the window in torch.save/torch.load/pickle (most: "
                           .. "{f_pct:%.0f}%)",
                         "没有线程在 torch.save/torch.load/pickle 中度过 {ckpt_frac_pct:%.0f}% 的窗口（最多 {f_pct:%.0f}%）",
                         { ckpt_frac_pct = 100 * th.ckpt_frac, f_pct = 100 * f }))
  end
  return t
end

-- " (of the time not queued for a CPU: queued 80%)" when the run queue took a visible share.
local function QUEUED(queued, run_n, iow_n)
  if queued < 0.1 then return T("", "") end
  return tr("; queued for a CPU {q:%.0f}% of the window (the host is busy): of the rest, on CPU {r:%.0f}%, "
              .. "in IO wait {d:%.0f}%",
            "；排队等 CPU 占窗口 {q:%.0f}%（主机繁忙）：其余时间中在 CPU 上 {r:%.0f}%，IO 等待 {d:%.0f}%",
            { q = 100 * queued, r = 100 * run_n, d = 100 * iow_n })
end

local function thread_label(t) return fmt("pid %d tid %d (%s)", t.pid, t.tid or 0, t.name or "?") end

rule {
  id = "checkpoint.pickle_bound", section = "7.7", severity = "warn",
  title = T("Checkpoint save/load bound by single-threaded pickle serialization on one core",
            "checkpoint 保存/加载受单线程 pickle 序列化（单核）限制"),
  reads = { "python.threads[].window.checkpoint_frac", "python.threads[].window.running_frac",
            "python.threads[].window.io_wait_frac", "python.threads[].window.top_stacks",
            "python.workers[].threads[].window", "io_files[].advance_bytes_per_s", "io_files[].disk_util_pct",
            "host.disks[].util_pct", "alive", "duration_s", "host.disks[].name", "io_files[].disk",
            "io_files[].fs_kind", "io_files[].fstype", "io_files[].path", "io_files[].pid", "pid", "proc",
            "python.threads[].name", "python.threads[].tid", "python.workers[].pid",
            "python.workers[].threads[].name", "python.workers[].threads[].tid",
            "threads[].tid", "threads[].cpu_pct", "threads[].wait_pct" },
  uses = { "ckpt_frac", "ckpt_busy_frac", "ckpt_io_wait_frac", "io_util_pct" },
  cause = T("torch.save / torch.load run pickle in one Python thread: every Python object in the "
            .. "checkpoint (dicts, lists, per-tensor persistent_id calls, optimizer state, "
            .. "custom classes) costs interpreter time, so a checkpoint of many small objects "
            .. "is bound by one core, not by the disk (SOP §7.7: \"CPU 100% on one core, disk "
            .. "not busy\").",
            "torch.save / torch.load 在一个 Python 线程里跑 pickle：checkpoint 中每个 Python 对象（dict、list、"
            .. "每个 tensor 的 persistent_id 调用、optimizer 状态、自定义类）都消耗解释器时间，所以由大量小对象组成的 "
            .. "checkpoint 受单核限制而不是磁盘（SOP §7.7：“CPU 单核 100%，磁盘反而不忙”）。"),
  refs = REFS,
  check = function(ev, th)
    local t, verdict = find(ev, th)
    if not t then return verdict end
    local w = t.w
    local ck = w.checkpoint_frac
    local run, iow, queued, oncpu = progress_shares(ev, t)
    local busy = overlap(run, ck)
    local f = checkpoint_file(ev, t.pid)
    local util, dname = disk_util(ev, f)
    local call, stack = what_call(w)
    local base = tr("{thread:%s} in {call:%s} {ck:%.0f}% of the window, on CPU {run:%.0f}%, "
                      .. "in IO wait {iow:%.0f}%{q}",
                    "{thread:%s} 在 {call:%s} 中占窗口 {ck:%.0f}%，在 CPU 上 {run:%.0f}%，IO 等待 {iow:%.0f}%{q}",
                    { thread = thread_label(t), call = call, ck = 100 * ck, run = 100 * oncpu,
                      iow = 100 * (w.io_wait_frac or 0), q = QUEUED(queued, run, iow) })
    if busy < th.ckpt_busy_frac then
      local waits = iow >= th.ckpt_io_wait_frac
      return clear(tr("{base}: not CPU bound{see}", "{base}：不是 CPU 瓶颈{see}",
                      { base = base,
                        see = waits and T(" (storage: see checkpoint.io_bound)", "（存储：见 checkpoint.io_bound）")
                              or T("", "") }))
    end
    if iow >= th.ckpt_io_wait_frac or (util and util >= th.io_util_pct) then
      return unknown(tr("{base}, disk {dname} util {util:%.0f}%: both CPU and storage are busy",
                        "{base}，磁盘 {dname} util {util:%.0f}%：CPU 与存储都忙",
                        { base = base, dname = dname or "?", util = util or 0 }))
    end
    local file = T("", "")
    if f then
      file = tr("; the file {path:%s} ({kind:%s}, {fstype:%s}) moves {moves:%s}",
                "；文件 {path:%s}（{kind:%s}，{fstype:%s}）推进 {moves:%s}",
                { path = f.path, kind = f.fs_kind, fstype = f.fstype or "?",
                  moves = rate(math.abs(f.advance_bytes_per_s)) })
    end
    local disk = util and tr("; disk {dname:%s} util {util:%.0f}% (< {max:%g}%): the storage is not the limit",
                             "；磁盘 {dname:%s} util {util:%.0f}%（< {max:%g}%）：存储不是瓶颈",
                             { dname = dname or "?", util = util, max = th.io_util_pct })
                 or T("; disk utilisation not measured", "；未测到磁盘利用率")
    local stack_en = stack and ("; most seen stack: ..." .. stack:sub(-160)) or ""
    local load = call == "torch.load"
    return hit {
      severity = "warn",
      symptom = tr("{call:%s} is CPU bound: one thread serializes on one core while the disk idles",
                   "{call:%s} 受 CPU 限制：单线程在一个核上序列化，磁盘却空闲", { call = call }),
      evidence = tr("Over {duration_s:%.1f} s: {base}{file}{disk}{stack_en}.",
                    "{duration_s:%.1f} 秒内：{base}{file}{disk}{stack_en}。",
                    { duration_s = ev.duration_s, base = base, file = file, disk = disk, stack_en = stack_en }),
      fix = load and T("Load without unpickling the tensors: torch.load(path, mmap=True, "
              .. "weights_only=True) (PyTorch 2.1+), or save as safetensors and "
              .. "safetensors.torch.load_file (zero-copy mmap); keep the checkpoint a flat "
              .. "state_dict of tensors (no Python objects).",
              "加载时不反序列化 tensor：torch.load(path, mmap=True, weights_only=True)（PyTorch 2.1+），"
              .. "或存成 safetensors 并用 safetensors.torch.load_file（零拷贝 mmap）；checkpoint 只保留 tensor 组成的扁平 "
              .. "state_dict（不含 Python 对象）。")
        or T("Save a flat state_dict of tensors with safetensors.torch.save_file (no pickle), "
              .. "or move Python objects (lists of dicts, metrics history) out of the checkpoint; "
              .. "merge many small tensors into few large ones; in distributed jobs save on rank 0 "
              .. "only (if rank == 0: torch.save(...); dist.barrier()); load with "
              .. "torch.load(mmap=True, weights_only=True).",
              "用 safetensors.torch.save_file 保存 tensor 组成的扁平 state_dict（不走 pickle），或把 Python 对象"
              .. "（list of dict、指标历史）移出 checkpoint；把大量小 tensor 合并成少量大 tensor；分布式只在 rank 0 保存"
              .. "（if rank == 0: torch.save(...); dist.barrier()）；加载用 torch.load(mmap=True, weights_only=True)。"),
      verify = tr("Time the save/load (time.perf_counter around it) before and after; `sopctl run --pid {pid} "
                    .. "--duration 3` during a checkpoint shows checkpoint_frac below {ckpt_frac_pct:%.0f}% or "
                    .. "checkpoint.pickle_bound clear.",
                  "修改前后给保存/加载计时（time.perf_counter）；checkpoint 期间 `sopctl run --pid {pid} --duration 3` 显示 "
                    .. "checkpoint_frac 低于 {ckpt_frac_pct:%.0f}% 或 checkpoint.pickle_bound 不再触发。",
                  { pid = ev.pid, ckpt_frac_pct = 100 * th.ckpt_frac }),
    }
  end,
}

rule {
  id = "checkpoint.io_bound", section = "7.7", severity = "warn",
  title = T("Checkpoint save/load waits on storage: busy disk or NFS/FUSE writes and fsync",
            "checkpoint 保存/加载在等存储：磁盘繁忙或 NFS/FUSE 写与 fsync"),
  reads = { "python.threads[].window.checkpoint_frac", "python.threads[].window.io_wait_frac",
            "python.threads[].window.running_frac", "python.workers[].threads[].window", "io_files[].fs_kind",
            "io_files[].advance_bytes_per_s", "io_files[].disk_util_pct", "host.disks[].util_pct",
            "host.dirty_kb", "host.writeback_kb", "alive", "cgroup.memory.limit_kb",
            "cgroup.memory.unlimited", "duration_s", "host.disks[].name", "io_files[].disk",
            "io_files[].fstype", "io_files[].path", "io_files[].pid", "io_files[].source", "pid", "proc",
            "python.threads[].name", "python.threads[].tid", "python.threads[].window.top_stacks",
            "python.workers[].pid", "python.workers[].threads[].name", "python.workers[].threads[].tid",
            "threads[].tid", "threads[].cpu_pct", "threads[].wait_pct" },
  uses = { "ckpt_frac", "ckpt_io_wait_frac", "io_util_pct" },
  refs = { "https://pytorch.org/docs/stable/notes/serialization.html",
           "https://huggingface.co/docs/safetensors/index",
           "https://fio.readthedocs.io/en/latest/fio_doc.html",
           "https://www.brendangregg.com/linuxperf.html" },
  check = function(ev, th)
    local t, verdict = find(ev, th)
    if not t then return verdict end
    local w = t.w
    local ck = w.checkpoint_frac
    local run, iow, queued, oncpu = progress_shares(ev, t)
    local call = what_call(w)
    local f = checkpoint_file(ev, t.pid)
    local util, dname = disk_util(ev, f)
    local base = tr("{thread:%s} in {call:%s} {ck:%.0f}% of the window, in IO wait (D) {iow:%.0f}%, "
                      .. "on CPU {run:%.0f}%{q}",
                    "{thread:%s} 在 {call:%s} 中占窗口 {ck:%.0f}%，IO 等待（D）{iow:%.0f}%，在 CPU 上 {run:%.0f}%{q}",
                    { thread = thread_label(t), call = call, ck = 100 * ck, iow = 100 * (w.io_wait_frac or 0),
                      run = 100 * oncpu, q = QUEUED(queued, run, iow) })
    -- The D-state samples surely inside the checkpoint (lower bound of the overlap).
    local inside = overlap(iow, ck)
    if inside < th.ckpt_io_wait_frac then
      return clear(tr("{base}: at most {inside_pct:%.0f}% of the checkpoint time is surely spent waiting on "
                        .. "storage (< {ckpt_io_wait_frac_pct:%.0f}%)",
                      "{base}：checkpoint 时间中确定在等存储的部分至多 {inside_pct:%.0f}%（< {ckpt_io_wait_frac_pct:%.0f}%）",
                      { base = base, inside_pct = 100 * inside, ckpt_io_wait_frac_pct = 100 * th.ckpt_io_wait_frac }))
    end
    local remote = f and REMOTE[f.fs_kind]
    local busy = util and util >= th.io_util_pct
    local h = ev.host or {}
    local where
    if remote then
      where = tr("the file {path:%s} is on {on} ({fstype:%s}, {source:%s})",
                 "文件 {path:%s} 在 {on}（{fstype:%s}，{source:%s}）上",
                 { path = f.path, on = f.fs_kind == "fuse" and T("FUSE", "FUSE") or T("network storage", "网络存储"),
                   fstype = f.fstype or "?", source = f.source or "?" })
    elseif busy then
      where = tr("disk {dname:%s} util {util:%.0f}% (>= {max:%g}%){file}",
                 "磁盘 {dname:%s} util {util:%.0f}%（>= {max:%g}%）{file}",
                 { dname = dname or "?", util = util, max = th.io_util_pct,
                   file = f and tr(", file {path:%s}", "，文件 {path:%s}", { path = f.path }) or T("", "") })
    else
      where = tr("disk {dname:%s} util {util} (not saturated): the thread waits on each request{file}",
                 "磁盘 {dname:%s} util {util}（未饱和）：线程在等每一个请求{file}",
                 { dname = dname or "?",
                   util = util and tr("{util:%.0f}%", "{util:%.0f}%", { util = util }) or T("unknown", "未知"),
                   file = f and tr(", file {path:%s} ({fstype:%s})", "，文件 {path:%s}（{fstype:%s}）",
                                   { path = f.path, fstype = f.fstype or "?" }) or T("", "") })
    end
    local mem = ev.cgroup and ev.cgroup.memory
    local capped = mem and mem.limit_kb and not mem.unlimited
    local dirty, moves = T("", ""), T("", "")
    if h.dirty_kb and h.writeback_kb then
      dirty = tr("; host dirty {dirty}, writeback {writeback}", "；整机 dirty {dirty}，writeback {writeback}",
                 { dirty = kb(h.dirty_kb), writeback = kb(h.writeback_kb) })
    end
    if f then
      moves = tr("; position moves {moves}", "；文件位置推进 {moves}",
                 { moves = rate(math.abs(f.advance_bytes_per_s)) })
    end
    return hit {
      severity = "warn",
      symptom = tr("{call:%s} waits on storage: {what_en}",
                   "{call:%s} 在等存储：{what_zh}",
                   { call = call,
                     what_en = remote and "network/FUSE filesystem" or busy and "busy disk"
                               or "synchronous or throttled writes",
                     what_zh = remote and "网络/FUSE 文件系统" or busy and "磁盘繁忙" or "同步或被节流的写" }),
      evidence = tr("Over {duration_s:%.1f} s: {base}; {where}{dirty}{moves}.",
                    "{duration_s:%.1f} 秒内：{base}；{where}{dirty}{moves}。",
                    { duration_s = ev.duration_s, base = base, where = where, dirty = dirty, moves = moves }),
      cause = remote and T("The checkpoint is written to (or read from) network storage: each write "
                .. "and the final fsync/close wait for the server, so the save is bound by network "
                .. "latency, not by serialization (SOP §7.4, §7.7: \"NFS fsync is slow\").",
                "checkpoint 写到（或读自）网络存储：每次写以及最后的 fsync/close 都要等服务器，保存速度受网络延迟限制，"
                .. "而不是序列化（SOP §7.4、§7.7：“NFS 写 fsync 慢”）。")
        or busy and T("The disk behind the checkpoint is saturated: the thread waits in D state for "
                .. "writes or reads to complete (SOP §7.7: %util high).",
                "checkpoint 所在磁盘已饱和：线程在 D 状态等读写完成（SOP §7.7：%util 高）。")
        or T("The save waits in D state for the device although the disk is not saturated: "
                .. "the writes are synchronous (fsync / O_SYNC / a sync-mounted share flushing each "
                .. "write) or throttled by writeback (dirty pages over the dirty limit, or a cgroup "
                .. "memory limit that charges the page cache to the job), so the save runs at the "
                .. "storage's per-request latency, not at memory speed. `cat /proc/PID/task/TID/stack` "
                .. "during the save names which.",
                "磁盘并未饱和，保存却在 D 状态等设备：写是同步的（fsync / O_SYNC / 每次写都刷盘的 sync 挂载），或被回写节流"
                .. "（脏页超过 dirty 上限，或 cgroup 内存上限把 page cache 计入作业），保存速度取决于存储的单次请求延迟，"
                .. "而不是内存速度。保存期间 `cat /proc/PID/task/TID/stack` 可看出是哪一种。"),
      fix = remote and T("Write the checkpoint to local NVMe first (torch.save(state, "
              .. "'/scratch/ckpt.pt')), then copy it to the share in the background (rsync -a or a "
              .. "subprocess); in distributed jobs save on rank 0 only; shard large checkpoints "
              .. "into several files written in parallel; use safetensors.",
              "checkpoint 先写本地 NVMe（torch.save(state, '/scratch/ckpt.pt')），再在后台拷到共享存储（rsync -a 或"
              .. "子进程）；分布式只在 rank 0 保存；大 checkpoint 拆成多个文件并行写；使用 safetensors。")
        or T("Measure the device with fio --rw=write --bs=1M (SOP §7.2) and compare with the save "
              .. "rate; keep other writers off that disk during checkpoints, save less often or "
              .. "only on rank 0, save to a faster local NVMe, shard large checkpoints, and make "
              .. "the file durable once at the end (one fsync) instead of at every write"
              .. (capped and "; under a cgroup memory limit, leave room above the job's own memory "
              .. "for the checkpoint's dirty pages (memory.max / memory.limit_in_bytes)." or "."),
              "用 fio --rw=write --bs=1M 测设备能力（SOP §7.2），与保存速率对比；checkpoint 时避免其他进程写同一块盘，"
              .. "降低保存频率或只在 rank 0 保存，存到更快的本地 NVMe，把大 checkpoint 分片，并只在最后 fsync 一次而不是每次写都刷盘"
              .. (capped and "；有 cgroup 内存上限时，在作业自身内存之上为 checkpoint 的脏页留出空间"
              .. "（memory.max / memory.limit_in_bytes）。" or "。")),
      verify = tr("Time the save before and after; `sopctl run --pid {pid} --duration 3` during a checkpoint shows "
                    .. "io_wait below {ckpt_io_wait_frac_pct:%.0f}% and `iostat -xm 1 3` %util below "
                    .. "{io_util_pct:%g}%.",
                  "修改前后给保存计时；checkpoint 期间 `sopctl run --pid {pid} --duration 3` 显示 IO 等待低于 "
                    .. "{ckpt_io_wait_frac_pct:%.0f}%，`iostat -xm 1 3` 的 %util 低于 {io_util_pct:%g}%。",
                  { pid = ev.pid, ckpt_io_wait_frac_pct = 100 * th.ckpt_io_wait_frac, io_util_pct = th.io_util_pct }),
    }
  end,
}
