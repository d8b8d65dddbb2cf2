-- plugins/io.lua — SOP §7: threads stuck in D (uninterruptible IO) state, and many small read()
-- calls. Reads ev.proc (state, io), ev.threads, ev.children, ev.host (psi.io, cpu.iowait_pct,
-- disks). Thresholds: d_state_min_threads, io_pressure_pct, io_util_pct, small_read_*.

local function T(en, zh) return { en = en, zh = zh } end

-- Why a rule that needs the live process cannot judge.
local function no_proc(ev)
  if ev.alive == false then
    return unknown(T("the process is gone: only the kernel log speaks of it",
                     "进程已不存在：只有内核日志记录了它"))
  end
  return unknown(T("the process's status was not read (see missing evidence)",
                   "未能读取进程状态（见缺失的证据）"))
end

local REFS = {
  "https://www.brendangregg.com/linuxperf.html",
  "https://fio.readthedocs.io/en/latest/fio_doc.html",
  "https://github.com/webdataset/webdataset",
}

local function rate(bytes_per_s) return kb(bytes_per_s / 1024) .. "/s" end

-- Host IO pressure figures that are present, in words, and whether one is over its threshold.
local function io_pressure(ev, th)
  local h = ev.host or {}
  local parts, over = {}, false
  local some = h.psi and h.psi.io and h.psi.io.some and h.psi.io.some.avg10
  if some then
    parts[#parts + 1] = fmt("IO PSI some avg10 %.1f%%", some)
    if some >= th.io_pressure_pct then over = true end
  end
  local iow = h.cpu and h.cpu.iowait_pct
  if iow then
    parts[#parts + 1] = fmt("host iowait %.1f%%", iow)
    if iow >= th.io_pressure_pct then over = true end
  end
  local busiest
  for _, d in ipairs(h.disks or {}) do
    if d.util_pct and (not busiest or d.util_pct > busiest.util_pct) then busiest = d end
  end
  if busiest then
    local s = fmt("busiest disk %s util %.0f%%", busiest.name or "?", busiest.util_pct)
    if busiest.r_await_ms then s = s .. fmt(", r_await %.1f ms", busiest.r_await_ms) end
    parts[#parts + 1] = s
    if busiest.util_pct >= th.io_util_pct then over = true end
  end
  return parts, over
end

rule {
  id = "io.d_state", section = "7", severity = "warn",
  title = T("threads or workers stuck in uninterruptible (D) state, waiting for IO", "线程或 worker 处于不可中断（D）状态，在等 IO"),
  doc = [[Hit when at least d_state_min_threads threads/workers are in D state; warn with IO pressure (IO PSI some avg10
    or host iowait at least io_pressure_pct, or a disk at least io_util_pct busy), else info. Unknown without
    thread states.]],
  reads = { "threads[].state", "children[].state", "host.psi.io", "host.cpu.iowait_pct", "host.disks[].util_pct" },
  uses = { "d_state_min_threads", "io_pressure_pct", "io_util_pct" },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local d, seen = {}, 0
    if ev.threads and #ev.threads > 0 then
      for _, t in ipairs(ev.threads) do
        if t.state then
          seen = seen + 1
          if t.state == "D" then d[#d + 1] = fmt("tid %d (%s)", t.tid, t.name or "?") end
        end
      end
    elseif p.state then
      seen = 1
      if p.state == "D" then d[#d + 1] = fmt("pid %d (%s)", ev.pid, p.comm or "?") end
    end
    local nkids = 0
    for _, c in ipairs(ev.children or {}) do
      if c.state then
        nkids = nkids + 1
        if c.state == "D" then d[#d + 1] = fmt("worker pid %d", c.pid) end
      end
    end
    if seen == 0 and nkids == 0 then
      return unknown(T("thread states not readable", "读不到线程状态"))
    end
    if #d < th.d_state_min_threads then
      return clear(T(fmt("no thread in D state (%d threads, %d workers)", seen, nkids),
                     fmt("没有 D 状态线程（%d 个线程，%d 个 worker）", seen, nkids)))
    end
    local parts, over = io_pressure(ev, th)
    local io = p.io or {}
    if io.read_bytes_per_s then parts[#parts + 1] = fmt("process disk reads %s", rate(io.read_bytes_per_s)) end
    if io.write_bytes_per_s then parts[#parts + 1] = fmt("disk writes %s", rate(io.write_bytes_per_s)) end
    local ctx = #parts > 0 and ("; " .. table.concat(parts, ", ")) or ""
    local list = table.concat(d, ", ", 1, math.min(#d, 8))
    return hit {
      severity = over and "warn" or "info",
      symptom = T(fmt("%d threads blocked in uninterruptible IO wait (D state)", #d),
                  fmt("%d 个线程阻塞在不可中断的 IO 等待（D 状态）", #d)),
      evidence = T(fmt("In D state at the sample: %s (of %d threads, %d workers)%s.", list, seen,
                       nkids, ctx),
                   fmt("采样时处于 D 状态：%s（共 %d 个线程，%d 个 worker）%s。", list, seen, nkids, ctx)),
      cause = T(over and "These threads wait inside the kernel for IO (disk reads, NFS, page faults "
                .. "on mapped files) and the IO path is under pressure (figures above): the job "
                .. "is IO bound at this moment (SOP §7)."
                or "These threads wait inside the kernel for IO (disk reads, NFS, page faults on "
                .. "mapped files); host IO figures show no pressure, and one sample does not show that "
                .. "the wait lasts: repeat with --duration 2 before acting.",
                over and "这些线程在内核里等 IO（读盘、NFS、映射文件的缺页），且 IO 路径有压力（见上方数字）："
                .. "作业此刻是 IO bound（SOP §7）。"
                or "这些线程在内核里等 IO（读盘、NFS、映射文件的缺页）；整机 IO 数字没有压力，"
                .. "单次采样不能说明等待是持续的：行动前用 --duration 2 再测一次。"),
      fix = T("See which call blocks: `cat /proc/PID/task/TID/stack` (root) or `sopctl dump "
              .. "--pid PID --native`. Measure what the storage delivers with fio (sequential "
              .. "1M reads vs random 4k, SOP §7.2) and compare with the job's read rate; then "
              .. "read sequential shards (webdataset tar, LMDB, parquet) instead of many small "
              .. "random files, keep hot data on local NVMe, and load checkpoints with "
              .. "safetensors or torch.load(mmap=True).",
              "先看阻塞在哪个调用：`cat /proc/PID/task/TID/stack`（root）或 `sopctl dump --pid PID "
              .. "--native`。用 fio 测存储实际能力（顺序 1M 读 vs 随机 4k，SOP §7.2），与作业读速率对比；"
              .. "再把大量随机小文件换成顺序读的 shard（webdataset tar、LMDB、parquet），热数据放本地 NVMe，"
              .. "checkpoint 用 safetensors 或 torch.load(mmap=True) 加载。"),
      verify = T("`sopctl run --duration 2` repeated a few times shows no D-state threads; "
                 .. "`iostat -xm 1 3` %util and r_await fall.",
                 "多次 `sopctl run --duration 2` 不再出现 D 状态线程；`iostat -xm 1 3` 的 %util 与 r_await 下降。"),
      refs = REFS,
    }
  end,
}

rule {
  id = "io.small_reads", section = "7", severity = "warn",
  title = T("many small read calls: the job reads in tiny pieces", "大量小块读调用：作业以很小的块读数据"),
  doc = [[Hit when the target does at least small_read_syscr_per_s read calls per second with a mean read of at most
    small_read_max_bytes (info when less than 10% comes from disk). Unknown with --duration 0 or /proc/PID/io
    unreadable.]],
  reads = { "proc.io.syscr_per_s", "proc.io.mean_read_bytes", "proc.io.rchar_per_s", "proc.io.read_bytes_per_s",
            "duration_s" },
  uses = { "small_read_syscr_per_s", "small_read_max_bytes" },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    if not ev.duration_s or ev.duration_s <= 0 then
      return unknown(T("one snapshot (--duration 0): no read rates", "只有一次快照（--duration 0）：没有读速率"))
    end
    local io = p.io
    if not io or not io.syscr_per_s then
      return unknown(T("/proc/PID/io not readable: no read-call rate",
                       "读不到 /proc/PID/io：没有 read 调用速率"))
    end
    local calls = io.syscr_per_s
    if calls < th.small_read_syscr_per_s then
      return clear(T(fmt("%.0f read calls/s (< %g)", calls, th.small_read_syscr_per_s),
                     fmt("每秒 %.0f 次 read 调用（< %g）", calls, th.small_read_syscr_per_s)))
    end
    local mean = io.mean_read_bytes
    if not mean and io.rchar_per_s and calls > 0 then mean = io.rchar_per_s / calls end
    if not mean then
      return unknown(T("read sizes not measured (rchar)", "没有测到读大小（rchar）"))
    end
    if mean > th.small_read_max_bytes then
      return clear(T(fmt("%.0f read calls/s with a mean of %.0f bytes (> %g): large reads", calls,
                         mean, th.small_read_max_bytes),
                     fmt("每秒 %.0f 次 read，平均 %.0f 字节（> %g）：大块读", calls, mean,
                         th.small_read_max_bytes)))
    end
    local disk = io.read_bytes_per_s
    local src_en, src_zh
    -- Served from memory (page cache, pipes, sockets): only the syscall cost remains, info.
    local cached = disk and io.rchar_per_s and disk < 0.1 * io.rchar_per_s
    if cached then
      src_en = fmt("only %s of it from disk: served by the page cache or pipes/sockets, so the "
                   .. "cost is the per-call syscall overhead", rate(disk))
      src_zh = fmt("其中只有 %s 来自磁盘：由 page cache 或管道/套接字提供，开销是每次调用的系统调用成本",
                   rate(disk))
    elseif disk then
      src_en = fmt("%s of it from disk: each small random read pays a device access, 10-100x "
                   .. "slower than sequential reads (SOP §7.3)", rate(disk))
      src_zh = fmt("其中 %s 来自磁盘：每次随机小读都要付一次设备访问，比顺序读慢 10~100 倍（SOP §7.3）",
                   rate(disk))
    else
      src_en = "disk share unknown (read_bytes not measured)"
      src_zh = "来自磁盘的比例未知（未测到 read_bytes）"
    end
    local total = io.rchar_per_s and rate(io.rchar_per_s) or "?"
    return hit {
      severity = cached and "info" or "warn",
      symptom = T(fmt("Many small reads: %.0f read calls/s of %.0f bytes on average", calls, mean),
                  fmt("大量小块读：每秒 %.0f 次 read，平均每次 %.0f 字节", calls, mean)),
      evidence = T(fmt("Over %.1f s: %.0f read syscalls/s, mean %.0f bytes per call, %s read in total "
                       .. "(rchar; files, pipes and sockets alike); %s.", ev.duration_s, calls,
                       mean, total, src_en),
                   fmt("%.1f 秒内：每秒 %.0f 次 read 系统调用，平均每次 %.0f 字节，总读取 %s（rchar，含文件、管道、"
                       .. "套接字）；%s。", ev.duration_s, calls, mean, total, src_zh)),
      cause = T(fmt("The process reads in %.0f-byte pieces: throughput is bound by the number of "
                    .. "calls, not by bandwidth.", mean),
                fmt("进程以 %.0f 字节为单位读取：吞吐受调用次数限制，而不是带宽。", mean)),
      fix = T("Read in large sequential pieces: pack many small samples into shards (webdataset "
              .. "tar, LMDB, parquet) and stream them; open files with a large buffer "
              .. "(open(path, 'rb', buffering=1 << 20)) or read each file whole; use "
              .. "np.load(..., mmap_mode='r') for arrays. Check the device with fio (randread 4k "
              .. "vs read 1M, SOP §7.2) to know the gain before rewriting the loader.",
              "改成大块顺序读：把大量小样本打包成 shard（webdataset tar、LMDB、parquet）流式读取；"
              .. "打开文件时用大缓冲（open(path, 'rb', buffering=1 << 20)）或整文件读入；数组用 "
              .. "np.load(..., mmap_mode='r')。改 loader 之前先用 fio（randread 4k vs read 1M，SOP §7.2）"
              .. "测出可得的收益。"),
      verify = T("`sopctl run --duration 2`: read calls/s fall and the mean read size is 64 KiB "
                 .. "or more; samples/s of the loader rise.",
                 "`sopctl run --duration 2`：每秒 read 次数下降，平均读大小 >= 64 KiB；loader 的 samples/s 上升。"),
      refs = REFS,
    }
  end,
}
