-- plugins/io.lua — SOP §7: threads stuck in D (uninterruptible IO) state; many small read()
-- calls; small reads at random offsets served by the disk (§7.3); data on NFS/FUSE the job waits
-- on (§7.4); a dataset larger than the page cache can hold, re-read from disk every epoch
-- (§7.1/§7.4). Reads ev.proc (state, io), ev.threads, ev.children, ev.python (workers[].io,
-- threads[].window), ev.io_files, ev.cgroup.memory, ev.host (memory, vm, psi.io, cpu, disks).
-- Checkpoint (torch.save / torch.load) rules live in plugins/checkpoint.lua.

local common = require "plugins.common"
local T, no_proc = common.T, common.no_proc
local tr = common.tr

-- Preludes spelled once for the rules below.
local NO_READ_RATES = common.one_snapshot_text("no read rates", "没有读速率")
local NO_OPEN_FILES = T("open files not sampled (needs a CPython target and --duration > 0)",
                        "没有采样打开的文件（需要 CPython 目标且 --duration > 0）")

-- Why a rule that needs the live process cannot judge.

local REFS = {
  "https://www.brendangregg.com/linuxperf.html",
  "https://fio.readthedocs.io/en/latest/fio_doc.html",
  "https://github.com/webdataset/webdataset",
}

local rate = common.rate

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

-- The processes whose reads can be judged: the target and its sampled Python workers (DataLoader
-- / multiprocessing), each with its /proc/PID/io rates.
local function readers(ev)
  local out = {}
  if ev.proc and ev.proc.io then out[#out + 1] = { pid = ev.pid, what = "main process", io = ev.proc.io } end
  for _, w in ipairs((ev.python and ev.python.workers) or {}) do
    if w.io and w.pid ~= ev.pid then out[#out + 1] = { pid = w.pid, what = "worker", io = w.io } end
  end
  return out
end

-- Filesystem kinds backed by storage (the page cache sits in front of them); "memory" (tmpfs)
-- and "virtual" (/proc, /sys) are not.
local STORED = { ["local"] = true, network = true, fuse = true, overlay = true }
local REMOTE = { network = true, fuse = true }

-- Data files a process holds open: files on storage of at least min_bytes.
local function data_files(ev, pid, min_bytes)
  local out = {}
  for _, f in ipairs(ev.io_files or {}) do
    if f.pid == pid and STORED[f.fs_kind] and (f.size_bytes or 0) >= min_bytes then out[#out + 1] = f end
  end
  return out
end

local function disk_named(ev, name)
  for _, d in ipairs((ev.host and ev.host.disks) or {}) do
    if name and d.name == name then return d end
  end
end

-- Mean size (KiB) of the read requests a disk served over the window; nil when unknown.
local function request_kb(d)
  if d and d.read_kb_per_s and d.reads_per_s and d.reads_per_s > 0 then
    return d.read_kb_per_s / d.reads_per_s
  end
end

-- One process's reads over the window: x.kind is
--   "few"        fewer than random_read_min_per_s calls or larger than small_read_max_bytes
--   "cached"     small reads, but most bytes come from memory (page cache, pipes, sockets)
--   "nofiles"    small reads from disk, no open data file seen to tell the pattern
--   "random"     small reads from disk, the file position does not follow the bytes read and
--                the device serves small requests (or no device figures: NFS/FUSE)
--   "sequential" small reads from disk, the position advances with them (readahead serves them)
--   "mixed"      the position and the device disagree: no verdict
local function read_pattern(ev, th, r)
  local io = r.io
  local calls, rchar, disk = io.syscr_per_s, io.rchar_per_s, io.read_bytes_per_s
  if not calls or not rchar then return nil end
  local mean = io.mean_read_bytes or (calls > 0 and rchar / calls) or nil
  local x = { r = r, calls = calls, rchar = rchar, disk = disk, mean = mean }
  if calls < th.random_read_min_per_s or not mean or mean > th.small_read_max_bytes then
    x.kind = "few"
    return x
  end
  if not disk then return nil end
  if disk < th.random_read_disk_share * rchar then
    x.kind = "cached"
    return x
  end
  if not ev.io_files then return nil end
  local files = data_files(ev, r.pid, th.data_file_min_mb * 1048576)
  if #files == 0 then
    x.kind = "nofiles"
    return x
  end
  table.sort(files, function(a, b) return a.size_bytes > b.size_bytes end)
  local adv = 0
  for _, f in ipairs(files) do adv = adv + math.abs(f.advance_bytes_per_s or 0) end
  x.files, x.advance = files, adv
  for _, f in ipairs(files) do
    local d = disk_named(ev, f.disk)
    if request_kb(d) then
      x.device, x.req_kb = d, request_kb(d)
      break
    end
  end
  local ratio = th.random_seq_advance_ratio
  local pos_seq = adv >= ratio * rchar and adv <= rchar / ratio
  local dev_small = x.req_kb and x.req_kb <= th.random_read_max_request_kb
  if pos_seq and not dev_small then
    x.kind = "sequential"
  elseif not pos_seq and (dev_small or (not x.req_kb and REMOTE[files[1].fs_kind])) then
    x.kind = "random"
  else
    x.kind = "mixed"
  end
  return x
end

local function short_path(p)
  if not p then return "?" end
  if #p <= 60 then return p end
  return "..." .. p:sub(-57)
end

rule {
  id = "io.d_state", section = "7", severity = "warn",
  title = T("Threads or workers blocked in uninterruptible IO wait (D state)",
            "线程或 worker 阻塞在不可中断的 IO 等待（D 状态）"),
  doc = [[Hit when at least d_state_min_threads threads/workers are in D state: a sampled Python thread in at least
    d_state_window_pct % of its samples (python.threads[].window.io_wait_frac), any other thread or worker at the
    snapshot; warn with IO pressure (IO PSI some avg10 or host iowait at least io_pressure_pct, or a disk at least
    io_util_pct busy), else info. Unknown without thread states.]],
  reads = { "threads[].state", "proc.state", "children[].state", "proc.io.read_bytes_per_s",
            "proc.io.write_bytes_per_s", "host.psi.io.some.avg10", "host.cpu.iowait_pct",
            "host.disks[].util_pct", "host.disks[].r_await_ms", "alive", "children[].pid",
            "host.disks[].name", "pid", "proc.comm", "threads[].name", "threads[].tid", "python.threads[].tid",
            "python.threads[].window.io_wait_frac", "python.threads[].window.samples" },
  uses = { "d_state_min_threads", "d_state_window_pct", "io_pressure_pct", "io_util_pct" },
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
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local d, seen = {}, 0
    -- the sampled window (a Python thread's share of samples in D) where there is one: one
    -- snapshot of six threads each 80% in D can still find none there
    local in_d = {}
    for _, t in ipairs(ev.python and ev.python.threads or {}) do
      local w = t.window
      if t.tid and w and w.io_wait_frac and (w.samples or 0) > 0 then in_d[t.tid] = w.io_wait_frac end
    end
    if ev.threads and #ev.threads > 0 then
      for _, t in ipairs(ev.threads) do
        if t.state then
          seen = seen + 1
          local frac = in_d[t.tid]
          if frac and frac * 100 >= th.d_state_window_pct then
            d[#d + 1] = fmt("tid %d (%s) %.0f%% of samples", t.tid, t.name or "?", 100 * frac)
          elseif t.state == "D" then
            d[#d + 1] = fmt("tid %d (%s) at the snapshot", t.tid, t.name or "?")
          end
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
      return clear(tr("no thread in D state ({seen} threads, {nkids} workers)",
                      "没有 D 状态线程（{seen} 个线程，{nkids} 个 worker）", { seen = seen, nkids = nkids }))
    end
    local parts, over = io_pressure(ev, th)
    local io = p.io or {}
    if io.read_bytes_per_s then parts[#parts + 1] = fmt("process disk reads %s", rate(io.read_bytes_per_s)) end
    if io.write_bytes_per_s then parts[#parts + 1] = fmt("disk writes %s", rate(io.write_bytes_per_s)) end
    local ctx = #parts > 0 and ("; " .. table.concat(parts, ", ")) or ""
    local list = table.concat(d, ", ", 1, math.min(#d, 8))
    return hit {
      severity = over and "warn" or "info",
      symptom = tr("{n_blocked} threads blocked in uninterruptible IO wait (D state)",
                   "{n_blocked} 个线程阻塞在不可中断的 IO 等待（D 状态）",
                   { n_blocked = #d }),
      evidence = tr("In D state: {list:%s} (of {seen} threads, {nkids} workers){ctx:%s}.",
                    "处于 D 状态：{list:%s}（共 {seen} 个线程，{nkids} 个 worker）{ctx:%s}。",
                    { list = list, seen = seen, nkids = nkids, ctx = ctx }),
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
    }
  end,
}

rule {
  id = "io.small_reads", section = "7", severity = "warn",
  title = T("Many small read() calls: throughput bound by the call count, not bandwidth",
            "大量小块 read()：吞吐受调用次数而非带宽限制"),
  reads = { "proc.io.syscr_per_s", "proc.io.mean_read_bytes", "proc.io.rchar_per_s",
            "proc.io.read_bytes_per_s", "io_files[].advance_bytes_per_s", "io_files[].size_bytes",
            "io_files[].disk", "host.disks[].read_kb_per_s", "host.disks[].reads_per_s", "alive",
            "duration_s", "host.disks[].name", "io_files[].fs_kind", "io_files[].pid", "pid" },
  uses = { "small_read_syscr_per_s", "small_read_max_bytes", "random_read_min_per_s",
           "random_read_disk_share", "data_file_min_mb", "random_seq_advance_ratio",
           "random_read_max_request_kb" },
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
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    if common.no_window(ev) then return unknown(NO_READ_RATES) end
    local io = p.io
    if not io or not io.syscr_per_s then
      return unknown(T("/proc/PID/io not readable: no read-call rate",
                       "读不到 /proc/PID/io：没有 read 调用速率"))
    end
    local calls = io.syscr_per_s
    if calls < th.small_read_syscr_per_s then
      return clear(tr("{calls:%.0f} read calls/s (< {small_read_syscr_per_s:%g})",
                      "每秒 {calls:%.0f} 次 read 调用（< {small_read_syscr_per_s:%g}）",
                      { calls = calls, small_read_syscr_per_s = th.small_read_syscr_per_s }))
    end
    local mean = io.mean_read_bytes
    if not mean and io.rchar_per_s and calls > 0 then mean = io.rchar_per_s / calls end
    if not mean then
      return unknown(T("read sizes not measured (rchar)", "没有测到读大小（rchar）"))
    end
    if mean > th.small_read_max_bytes then
      return clear(tr("{calls:%.0f} read calls/s with a mean of {mean:%.0f} bytes (> {small_read_max_bytes:%g}): "
                        .. "large reads",
                      "每秒 {calls:%.0f} 次 read，平均 {mean:%.0f} 字节（> {small_read_max_bytes:%g}）：大块读",
                      { calls = calls, mean = mean, small_read_max_bytes = th.small_read_max_bytes }))
    end
    local disk = io.read_bytes_per_s
    local src
    -- Served from memory (page cache, pipes, sockets): only the syscall cost remains, info.
    local cached = disk and io.rchar_per_s and disk < 0.1 * io.rchar_per_s
    local x = read_pattern(ev, th, { pid = ev.pid, what = "main process", io = io })
    if x and x.kind == "random" then
      return clear(tr("{calls:%.0f} read calls/s of {mean:%.0f} bytes at random offsets, from disk: reported by "
                      .. "io.random_reads",
                      "每秒 {calls:%.0f} 次、每次 {mean:%.0f} 字节的随机位置读，来自磁盘：见 io.random_reads",
                      { calls = calls, mean = mean }))
    end
    local seq = x and x.kind == "sequential"
    if seq then
      local dev = x.req_kb and tr("; the disk serves {req_kb:%.0f} KiB requests: readahead batches them",
                                  "；磁盘请求平均 {req_kb:%.0f} KiB：预读已合并", { req_kb = x.req_kb }) or T("", "")
      src = tr("{disk:%s} of it from disk, read sequentially (file position advances {advance:%s}{dev}), so the "
                 .. "cost is the per-call syscall overhead",
               "其中 {disk:%s} 来自磁盘，顺序读取（文件位置前进 {advance:%s}{dev}），开销是每次调用的系统调用成本",
               { disk = rate(disk), advance = rate(x.advance), dev = dev })
    elseif cached then
      src = tr("only {disk:%s} of it from disk: served by the page cache or pipes/sockets, so the "
                 .. "cost is the per-call syscall overhead",
               "其中只有 {disk:%s} 来自磁盘：由 page cache 或管道/套接字提供，开销是每次调用的系统调用成本",
               { disk = rate(disk) })
    elseif disk then
      src = tr("{disk:%s} of it from disk: each small read that misses the page cache pays a device "
                 .. "access, and random ones are 10-100x slower than sequential reads (SOP §7.3)",
               "其中 {disk:%s} 来自磁盘：每次未命中 page cache 的小读都要付一次设备访问，随机读比顺序读慢 "
                 .. "10~100 倍（SOP §7.3）", { disk = rate(disk) })
    else
      src = T("disk share unknown (read_bytes not measured)", "来自磁盘的比例未知（未测到 read_bytes）")
    end
    local total = io.rchar_per_s and rate(io.rchar_per_s) or "?"
    return hit {
      severity = (cached or seq) and "info" or "warn",
      symptom = tr("Many small reads: {calls:%.0f} read calls/s of {mean:%.0f} bytes on average",
                   "大量小块读：每秒 {calls:%.0f} 次 read，平均每次 {mean:%.0f} 字节", { calls = calls, mean = mean }),
      evidence = tr("Over {duration_s:%.1f} s: {calls:%.0f} read syscalls/s, mean {mean:%.0f} bytes per call, "
                      .. "{total:%s} read in total (rchar; files, pipes and sockets alike); {src}.",
                    "{duration_s:%.1f} 秒内：每秒 {calls:%.0f} 次 read 系统调用，平均每次 {mean:%.0f} 字节，总读取 {total:%s}（rchar，含文件、管道、"
                      .. "套接字）；{src}。",
                    { duration_s = ev.duration_s, calls = calls, mean = mean, total = total, src = src }),
      cause = tr("The process reads in {mean:%.0f}-byte pieces: throughput is bound by the number of "
                 .. "calls, not by bandwidth.",
                 "进程以 {mean:%.0f} 字节为单位读取：吞吐受调用次数限制，而不是带宽。", { mean = mean }),
    }
  end,
}

local function who(r) return fmt("%s %d", r.what, r.pid) end

rule {
  id = "io.random_reads", section = "7.3", severity = "warn",
  title = T("Small reads at random offsets served by the disk instead of sequential reads",
            "小块随机位置读由磁盘逐次服务，而不是顺序读"),
  reads = { "proc.io.syscr_per_s", "proc.io.mean_read_bytes", "proc.io.rchar_per_s",
            "proc.io.read_bytes_per_s", "python.workers[].io", "io_files[].size_bytes",
            "io_files[].advance_bytes_per_s", "io_files[].fs_kind", "io_files[].disk",
            "host.disks[].read_kb_per_s", "host.disks[].reads_per_s", "host.disks[].util_pct",
            "host.disks[].r_await_ms", "alive", "duration_s", "host.disks[].name", "io_files[].fstype",
            "io_files[].path", "io_files[].pid", "pid", "python.workers[].pid" },
  uses = { "random_read_min_per_s", "small_read_max_bytes", "random_read_disk_share",
           "data_file_min_mb", "random_seq_advance_ratio", "random_read_max_request_kb" },
  cause = T("Each sample is fetched with its own small read at a random offset that misses the "
            .. "page cache, so every read is one device access: random 4 KiB IOPS are 10-100x "
            .. "below sequential bandwidth (NVMe 500K IOPS vs 3-7 GB/s, HDD 150 IOPS, NFS "
            .. "1K-10K IOPS; SOP §7.3).",
            "每个样本都用一次随机位置的小读取出，且未命中 page cache，于是每次读都是一次设备访问："
            .. "随机 4 KiB IOPS 比顺序带宽低 10~100 倍（NVMe 50 万 IOPS vs 3~7 GB/s，HDD 150 IOPS，"
            .. "NFS 1K~10K IOPS；SOP §7.3）。"),
  fix = T("Store the dataset so it is read sequentially: pack samples into shards read in "
          .. "order (webdataset tar, parquet, tfrecord) and shuffle with a shuffle buffer "
          .. "across shards rather than by random index; or, for many small records, LMDB / "
          .. "HDF5 / zip on local NVMe. Measure first: fio --rw=randread --bs=4k vs --rw=read "
          .. "--bs=1M on that device (SOP §7.2) gives the gain.",
          "让数据集顺序读：把样本打包成按顺序读的 shard（webdataset tar、parquet、tfrecord），用跨 shard 的 "
          .. "shuffle buffer 代替按随机下标读取；大量小记录用本地 NVMe 上的 LMDB / HDF5 / zip。先测量："
          .. "在该设备上 fio --rw=randread --bs=4k 对比 --rw=read --bs=1M（SOP §7.2）得到可得收益。"),
  refs = REFS,
  check = function(ev, th)
    if not ev.proc then return no_proc(ev) end
    if common.no_window(ev) then return unknown(NO_READ_RATES) end
    local rs = readers(ev)
    if #rs == 0 then
      return unknown(T("/proc/PID/io not readable: no read rates", "读不到 /proc/PID/io：没有读速率"))
    end
    local hits, undecided, notes_en, notes_zh = {}, {}, {}, {}
    for _, r in ipairs(rs) do
      local x = read_pattern(ev, th, r)
      if not x then
        undecided[#undecided + 1] = fmt("%s: read rates or open files not measured", who(r))
      elseif x.kind == "random" then
        hits[#hits + 1] = x
      elseif x.kind == "nofiles" or x.kind == "mixed" then
        undecided[#undecided + 1] = x.kind == "nofiles"
          and fmt("%s: %.0f small reads/s from disk, no open data file >= %g MiB seen", who(r),
                  x.calls, th.data_file_min_mb)
          or fmt("%s: position advances %s for %s read, disk requests %.0f KiB: no clear pattern",
                 who(r), rate(x.advance), rate(x.rchar), x.req_kb or 0)
      elseif r.pid == ev.pid then
        if x.kind == "few" then
          notes_en[#notes_en + 1] = fmt("%.0f read calls/s of %.0f bytes on average", x.calls, x.mean or 0)
          notes_zh[#notes_zh + 1] = fmt("每秒 %.0f 次 read，平均 %.0f 字节", x.calls, x.mean or 0)
        elseif x.kind == "cached" then
          notes_en[#notes_en + 1] = fmt("%.0f small reads/s, only %s of %s from disk (page cache)",
                                        x.calls, rate(x.disk), rate(x.rchar))
          notes_zh[#notes_zh + 1] = fmt("每秒 %.0f 次小读，%s 中只有 %s 来自磁盘（page cache）",
                                        x.calls, rate(x.rchar), rate(x.disk))
        else
          notes_en[#notes_en + 1] = fmt("%.0f small reads/s, sequential (position advances %s)",
                                        x.calls, rate(x.advance))
          notes_zh[#notes_zh + 1] = fmt("每秒 %.0f 次小读，顺序读（位置前进 %s）", x.calls, rate(x.advance))
        end
      end
    end
    if #hits == 0 then
      if #undecided > 0 then
        return unknown(T("small reads from disk, pattern not decided: " .. table.concat(undecided, "; "),
                         "有来自磁盘的小读，但访问模式无法判定：" .. table.concat(undecided, "；")))
      end
      return clear(T("no small random reads from disk: main process " .. (notes_en[1] or "reads little"),
                     "没有来自磁盘的随机小读：主进程" .. (notes_zh[1] or "读得很少")))
    end
    table.sort(hits, function(a, b) return a.disk > b.disk end)
    local x = hits[1]
    local f = x.files[1]
    local total_calls, total_disk = 0, 0
    for _, h in ipairs(hits) do
      total_calls, total_disk = total_calls + h.calls, total_disk + h.disk
    end
    local procs = {}
    for i = 1, math.min(#hits, 6) do procs[#procs + 1] = who(hits[i].r) end
    local dev
    if x.device then
      dev = tr("; disk {name:%s} serves {reads:%.0f} reads/s of {req_kb:%.0f} KiB on average (sequential reads with "
                 .. "readahead are 128 KiB or more), util {util:%.0f}%, r_await {await:%.2f} ms",
               "；磁盘 {name:%s} 每秒 {reads:%.0f} 次读请求，平均 {req_kb:%.0f} KiB（带预读的顺序读在 128 KiB 以上），"
                 .. "util {util:%.0f}%，r_await {await:%.2f} ms",
               { name = x.device.name, reads = x.device.reads_per_s, req_kb = x.req_kb,
                 util = x.device.util_pct or 0, await = x.device.r_await_ms or 0 })
    else
      dev = tr("; the file is on {fstype:%s} ({kind:%s}), no device figures", "；文件在 {fstype:%s}（{kind:%s}）上，没有设备数字",
               { fstype = f.fstype or "?", kind = f.fs_kind })
    end
    return hit {
      severity = "warn",
      symptom = tr("Small random reads from disk: {total_calls:%.0f} reads/s of {mean:%.0f} bytes in {n_hits} "
                     .. "process(es)",
                   "来自磁盘的随机小读：{n_hits} 个进程每秒共 {total_calls:%.0f} 次、每次 {mean:%.0f} 字节",
                   { total_calls = total_calls, mean = x.mean, n_hits = #hits }),
      evidence = tr("Over {duration_s:%.1f} s, {who:%s}: {calls:%.0f} read calls/s, mean {mean:%.0f} bytes, {rchar} "
                      .. "read of which {disk} from disk; the open data file {path} ({size_bytes}) moves its position "
                      .. "only {advance} while {rchar} is read: the reads jump (pread/seek), they do not "
                      .. "stream{dev}. All random readers: {procs}, {total_disk} from disk.",
                    "{duration_s:%.1f} 秒内，{who:%s}：每秒 {calls:%.0f} 次 read，平均 {mean:%.0f} 字节，读取 {rchar}，其中 {disk} 来自磁盘；"
                      .. "打开的数据文件 {path}（{size_bytes}）的文件位置只前进 {advance}，而读取为 {rchar}：读在跳（pread/seek），不是流式读{dev}。"
                      .. "所有随机读进程：{procs}，磁盘读 {total_disk}。",
                    { duration_s = ev.duration_s, who = who(x.r), calls = x.calls, mean = x.mean,
                      rchar = rate(x.rchar), disk = rate(x.disk), path = short_path(f.path),
                      size_bytes = kb(f.size_bytes / 1024), advance = rate(x.advance), dev = dev,
                      procs = table.concat(procs, ", "), total_disk = rate(total_disk) }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: io.random_reads clears and the disk's mean read request "
                    .. "grows past {random_read_max_request_kb:%g} KiB; samples/s rise.",
                  "`sopctl run --pid {pid} --duration 3`：io.random_reads 不再触发，磁盘平均读请求超过 "
                    .. "{random_read_max_request_kb:%g} KiB；samples/s 上升。",
                  { pid = ev.pid, random_read_max_request_kb = th.random_read_max_request_kb }),
    }
  end,
}

-- Python threads of one process with their sampled window: the target's, or a worker's.
local function windows_of(ev, pid)
  local py = ev.python
  if not py then return nil end
  if pid == ev.pid then return py.threads end
  for _, w in ipairs(py.workers or {}) do
    if w.pid == pid then return w.threads end
  end
end

-- Largest io_wait_frac (sampled D state) among a process's threads; nil when not sampled.
local function max_io_wait(ev, pid)
  local best
  for _, t in ipairs(windows_of(ev, pid) or {}) do
    local f = t.window and t.window.io_wait_frac
    if f and (not best or f > best) then best = f end
  end
  return best
end

rule {
  id = "io.network_fs", section = "7.4", severity = "warn",
  title = T("The job's files live on NFS/FUSE/network storage and its threads wait on them",
            "作业的文件在 NFS/FUSE/网络存储上，线程在等它们"),
  reads = { "io_files[].fs_kind", "io_files[].fstype", "io_files[].mount", "io_files[].source",
            "io_files[].path", "io_files[].advance_bytes_per_s", "python.threads[].window.io_wait_frac",
            "python.workers[].threads[].window.io_wait_frac", "proc.io.rchar_per_s", "proc.io.wchar_per_s",
            "python.workers[].io", "alive", "io_files[].pid", "io_files[].size_bytes", "pid",
            "python.workers[].pid" },
  uses = { "netfs_wait_frac", "data_file_min_mb" },
  cause = T("Every read (and every checkpoint write/fsync) goes over the network or through a "
            .. "user-space FUSE daemon: per-request latency is 0.5-10 ms instead of NVMe's "
            .. "0.1 ms, random 4 KiB IOPS drop to 1K-10K (SOP §7.3), and many ranks reading "
            .. "the same share at epoch start load its metadata server (SOP §7.4).",
            "每次读（以及每次 checkpoint 写/fsync）都要走网络或用户态 FUSE 守护进程：单次请求延迟 0.5~10 ms，"
            .. "而 NVMe 约 0.1 ms；随机 4 KiB IOPS 降到 1K~10K（SOP §7.3），且多个 rank 在 epoch 开始时同时"
            .. "读同一共享目录会压垮元数据服务器（SOP §7.4）。"),
  fix = T("Stage the data to local NVMe before training (rsync/cp to /scratch or $TMPDIR at "
          .. "job start, or a rank-local cache directory: HF datasets cache_dir per rank) and "
          .. "read it from there; pre-distribute shards per rank instead of all ranks reading "
          .. "one share; write checkpoints to local disk first, then copy them to the network "
          .. "share in the background (SOP §7.4, §7.7).",
          "训练前把数据落到本地 NVMe（作业开始时 rsync/cp 到 /scratch 或 $TMPDIR，或按 rank 的本地缓存目录："
          .. "HF datasets 的 cache_dir 按 rank 拆开）再从本地读；按 rank 预分发 shard，而不是所有 rank 读同一"
          .. "共享目录；checkpoint 先写本地盘，再在后台拷到网络共享（SOP §7.4、§7.7）。"),
  refs = { "https://www.brendangregg.com/linuxperf.html",
           "https://huggingface.co/docs/datasets/cache",
           "https://fio.readthedocs.io/en/latest/fio_doc.html" },
  check = function(ev, th)
    if not ev.proc then return no_proc(ev) end
    if not ev.io_files then
      return unknown(NO_OPEN_FILES)
    end
    local remote, by_pid, order, kinds = 0, {}, {}, {}
    for _, f in ipairs(ev.io_files) do
      kinds[f.fs_kind or "?"] = (kinds[f.fs_kind or "?"] or 0) + 1
      if REMOTE[f.fs_kind] then
        remote = remote + 1
        if not by_pid[f.pid] then
          by_pid[f.pid] = { remote = {}, local_adv = 0 }
          order[#order + 1] = f.pid
        end
        local e = by_pid[f.pid].remote
        e[#e + 1] = f
      end
    end
    if remote == 0 then
      local ks = {}
      for k, n in pairs(kinds) do ks[#ks + 1] = fmt("%s %d", k, n) end
      table.sort(ks)
      return clear(tr("no open file on NFS/FUSE/network storage ({n_io_files} files: {ks})",
                      "没有在 NFS/FUSE/网络存储上的打开文件（{n_io_files} 个文件：{ks}）",
                      { n_io_files = #ev.io_files, ks = table.concat(ks, ", ") }))
    end
    -- Local data files moving faster than the remote ones: a wait may be on them instead.
    for _, f in ipairs(ev.io_files) do
      local e = by_pid[f.pid]
      if e and (f.fs_kind == "local" or f.fs_kind == "overlay")
          and (f.size_bytes or 0) >= th.data_file_min_mb * 1048576 then
        e.local_adv = e.local_adv + math.abs(f.advance_bytes_per_s or 0)
      end
    end
    local waiting, quiet, unsampled, ambiguous = {}, {}, {}, {}
    for _, pid in ipairs(order) do
      local e = by_pid[pid]
      local adv = 0
      for _, f in ipairs(e.remote) do adv = adv + math.abs(f.advance_bytes_per_s or 0) end
      e.adv = adv
      e.wait = max_io_wait(ev, pid)
      if not e.wait then
        unsampled[#unsampled + 1] = pid
      elseif e.wait < th.netfs_wait_frac then
        quiet[#quiet + 1] = fmt("pid %d %.0f%%", pid, 100 * e.wait)
      elseif e.local_adv > adv then
        ambiguous[#ambiguous + 1] = pid
      else
        waiting[#waiting + 1] = pid
      end
    end
    local first = by_pid[order[1]].remote[1]
    local example = fmt("%s on %s (%s, %s)", short_path(first.path), first.mount or "?",
                         first.fstype or "?", first.source or "?")
    if #waiting == 0 then
      if #ambiguous > 0 then
        return unknown(tr("{remote} files on network storage ({example}); pid {ambiguous} waits in IO but reads "
                            .. "local data files faster than the network ones",
                          "{remote} 个文件在网络存储上（{example}）；pid {ambiguous} 在等 IO，但读本地数据文件比网络文件更快",
                          { remote = remote, example = example, ambiguous = ambiguous[1] }))
      end
      if #quiet == 0 then
        return unknown(tr("{remote} files on network storage ({example}), but no sampled window tells whether the "
                            .. "job waits on them (pids not sampled: {n_unsampled})",
                          "{remote} 个文件在网络存储上（{example}），但没有采样窗口可判断作业是否在等它们（未采样进程 {n_unsampled} 个）",
                          { remote = remote, example = example, n_unsampled = #unsampled }))
      end
      return clear(tr("{remote} files on network storage ({example}), but threads spend little time in IO wait (max "
                        .. "per process: {quiet}, < {netfs_wait_frac_pct:%.0f}%)",
                      "{remote} 个文件在网络存储上（{example}），但线程很少处于 IO 等待（各进程最大值：{quiet}，< {netfs_wait_frac_pct:%.0f}%）",
                      { remote = remote, example = example, quiet = table.concat(quiet, ", "),
                        netfs_wait_frac_pct = 100 * th.netfs_wait_frac }))
    end
    table.sort(waiting, function(a, b) return by_pid[a].wait > by_pid[b].wait end)
    local lines = {}
    for i = 1, math.min(#waiting, 4) do
      local pid = waiting[i]
      local e = by_pid[pid]
      local f = e.remote[1]
      lines[#lines + 1] = fmt("pid %d: a thread in D state %.0f%% of the window, %d file(s) there "
                              .. "e.g. %s (%s), position moving %s", pid, 100 * e.wait, #e.remote,
                              short_path(f.path), f.size_bytes and kb(f.size_bytes / 1024) or "?",
                              rate(e.adv))
    end
    local io = ev.proc.io or {}
    local rates = ""
    if io.rchar_per_s then
      rates = fmt("; main process reads %s, writes %s", rate(io.rchar_per_s), rate(io.wchar_per_s or 0))
    end
    local kind = first.fs_kind == "fuse" and "FUSE" or "network"
    return hit {
      severity = "warn",
      symptom = tr("The job waits on files on {kind:%s} storage ({fstype})",
                   "作业在等 {kind:%s} 存储（{fstype}）上的文件",
                   { kind = kind, fstype = first.fstype or "?" }),
      evidence = tr("{remote} open files on {kind:%s} storage, e.g. {example}. {lines_en}{rates:%s}.",
                    "{remote} 个打开的文件在 {kind:%s} 存储上，例如 {example}。{lines_zh}{rates:%s}。",
                    { remote = remote, kind = kind, example = example, lines_en = table.concat(lines, "; "),
                      rates = rates, lines_zh = table.concat(lines, "；") }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: io.network_fs clears (data files on fs_kind local) and "
                    .. "io_wait_frac falls below {netfs_wait_frac_pct:%.0f}%.",
                  "`sopctl run --pid {pid} --duration 3`：io.network_fs 不再触发（数据文件在 local 文件系统），io_wait_frac 低于 "
                    .. "{netfs_wait_frac_pct:%.0f}%。",
                  { pid = ev.pid, netfs_wait_frac_pct = 100 * th.netfs_wait_frac }),
    }
  end,
}

rule {
  id = "io.page_cache_pressure", section = "7.1", severity = "warn",
  title = T("The files read are larger than the page cache can hold: every epoch re-reads them from disk",
            "读取的文件大于 page cache 能容纳的量：每个 epoch 都要从磁盘重读"),
  reads = { "io_files[].size_bytes", "io_files[].advance_bytes_per_s", "io_files[].fs_kind", "io_files[].pid",
            "proc.io.read_bytes_per_s", "proc.io.mean_read_bytes", "python.workers[].io.read_bytes_per_s",
            "host.mem_available_kb", "host.cached_kb", "host.vm.pgmajfault_per_s", "cgroup.memory.limit_kb",
            "cgroup.memory.usage_kb", "proc.anon_kb", "children[].anon_kb", "alive",
            "cgroup.memory.unlimited", "duration_s", "io_files[].path", "pid",
            "python.workers[].io.mean_read_bytes", "python.workers[].pid" },
  uses = { "page_cache_min_file_mb", "page_cache_fit_ratio", "page_cache_min_disk_kb_per_s",
           "small_read_max_bytes" },
  cause = T("A file larger than the memory left for the page cache is evicted while it is read "
            .. "(LRU), so no epoch finds it cached: each epoch is as slow as the first and the "
            .. "disk (or network share) sets the pace (SOP §7.1, §7.4 \"every epoch starts slow\").",
            "比 page cache 可用内存更大的文件在读的过程中就被（LRU）淘汰，任何 epoch 都命中不了缓存："
            .. "每个 epoch 都和第一个一样慢，速度由磁盘（或网络共享）决定（SOP §7.1、§7.4“每 epoch 开始慢”）。"),
  refs = { "https://www.brendangregg.com/linuxperf.html", "https://hoytech.com/vmtouch/",
           "https://docs.kernel.org/admin-guide/cgroup-v2.html" },
  check = function(ev, th)
    if not ev.proc then return no_proc(ev) end
    if common.no_window(ev) then return unknown(NO_READ_RATES) end
    local disk, measured = 0, false
    for _, r in ipairs(readers(ev)) do
      if r.io.read_bytes_per_s then
        measured = true
        disk = disk + r.io.read_bytes_per_s
      end
    end
    if not measured then
      return unknown(T("/proc/PID/io not readable: no disk read rate", "读不到 /proc/PID/io：没有磁盘读速率"))
    end
    if disk < th.page_cache_min_disk_kb_per_s * 1024 then
      return clear(tr("the job reads {disk} from storage (< {page_cache_min_disk_kb_per_s}/s): not re-reading a "
                        .. "dataset from disk",
                      "作业从存储读 {disk}（< {page_cache_min_disk_kb_per_s}/s）：没有在从磁盘重读数据集",
                      { disk = rate(disk), page_cache_min_disk_kb_per_s = kb(th.page_cache_min_disk_kb_per_s) }))
    end
    if not ev.io_files then
      return unknown(NO_OPEN_FILES)
    end
    -- The working set: distinct large files on storage whose position moves (being read now).
    -- A position that did not move forward still streams when its reader read at least the file's
    -- size from disk over the window in large reads: it went round (a new epoch reopened it).
    local io_of = {}
    for _, r in ipairs(readers(ev)) do io_of[r.pid] = r.io end
    local function wrapped(f)
      local io = io_of[f.pid]
      return io and io.read_bytes_per_s and io.mean_read_bytes and io.mean_read_bytes > th.small_read_max_bytes
             and io.read_bytes_per_s * ev.duration_s >= f.size_bytes
    end
    local seen, files, ws = {}, {}, 0
    for _, f in ipairs(ev.io_files) do
      if STORED[f.fs_kind] and (f.size_bytes or 0) >= th.page_cache_min_file_mb * 1048576
          and ((f.advance_bytes_per_s or 0) > 0 or wrapped(f)) and not seen[f.path] then
        seen[f.path] = true
        files[#files + 1] = f
        ws = ws + f.size_bytes / 1024
      end
    end
    if #files == 0 then
      return unknown(tr("the job reads {disk} from disk, but no file >= {page_cache_min_file_mb:%g} MiB is being read "
                          .. "sequentially (random reads or mmap: see io.random_reads)",
                        "作业从磁盘读 {disk}，但没有 >= {page_cache_min_file_mb:%g} MiB 的文件在被顺序读（随机读或 mmap：见 io.random_reads）",
                        { disk = rate(disk), page_cache_min_file_mb = th.page_cache_min_file_mb }))
    end
    table.sort(files, function(a, b) return a.size_bytes > b.size_bytes end)
    -- Memory the page cache can use for them: the host's MemAvailable (free + reclaimable cache),
    -- and under a cgroup limit, the limit minus the job's anonymous memory (v1 and v2 charge the
    -- page cache to the cgroup).
    local h = ev.host or {}
    local room, cap = h.mem_available_kb, T("host MemAvailable", "整机 MemAvailable")
    local mem = ev.cgroup and ev.cgroup.memory
    if mem and mem.limit_kb and not mem.unlimited then
      local anon = ev.proc.anon_kb or 0
      for _, c in ipairs(ev.children or {}) do anon = anon + (c.anon_kb or 0) end
      local cg_room = math.max(mem.limit_kb - anon, 0)
      if not room or cg_room < room then
        room = cg_room
        cap = tr("the cgroup memory limit {limit} minus the job's {anon} anonymous memory",
                 "cgroup 内存上限 {limit} 减去作业 {anon} 匿名内存", { limit = kb(mem.limit_kb), anon = kb(anon) })
      end
    end
    if not room then
      return unknown(T("memory available for the page cache not measured", "未测到可用于 page cache 的内存"))
    end
    local names = {}
    for i = 1, math.min(#files, 3) do
      names[#names + 1] = fmt("%s (%s)", short_path(files[i].path), kb(files[i].size_bytes / 1024))
    end
    local list = table.concat(names, ", ")
    if ws < th.page_cache_fit_ratio * room then
      return clear(tr("reading {disk} from disk, but the files being read ({ws} in all: {list:%s}) fit in the page "
                        .. "cache ({room}, {cap}): a first pass (first epoch) fills the cache and later passes "
                        .. "come from memory; that is not a problem (SOP §7.1)",
                      "从磁盘读 {disk}，但正在读的文件（共 {ws}：{list:%s}）放得进 page cache（{room}，{cap}）：第一遍（第一个 epoch）读入缓存，之后的遍历来自"
                        .. "内存；这不是问题（SOP §7.1）",
                      { disk = rate(disk), ws = kb(ws), list = list, room = kb(room), cap = cap }))
    end
    local extra_en, extra_zh = {}, {}
    if h.cached_kb then
      extra_en[#extra_en + 1] = fmt("host page cache %s", kb(h.cached_kb))
      extra_zh[#extra_zh + 1] = fmt("整机 page cache %s", kb(h.cached_kb))
    end
    if mem and mem.usage_kb and mem.limit_kb and not mem.unlimited then
      extra_en[#extra_en + 1] = fmt("cgroup usage %s of %s", kb(mem.usage_kb), kb(mem.limit_kb))
      extra_zh[#extra_zh + 1] = fmt("cgroup 用量 %s / %s", kb(mem.usage_kb), kb(mem.limit_kb))
    end
    local mf = h.vm and h.vm.pgmajfault_per_s
    if mf then
      extra_en[#extra_en + 1] = fmt("%.0f major faults/s", mf)
      extra_zh[#extra_zh + 1] = fmt("每秒 %.0f 次 major fault", mf)
    end
    local ex_en = #extra_en > 0 and ("; " .. table.concat(extra_en, ", ")) or ""
    local ex_zh = #extra_zh > 0 and ("；" .. table.concat(extra_zh, "，")) or ""
    local by_cgroup = cap.en:find("cgroup", 1, true) ~= nil
    return hit {
      severity = "warn",
      symptom = tr("The data read ({ws}) does not fit in the page cache ({room}): every pass re-reads it from disk",
                   "读取的数据（{ws}）放不进 page cache（{room}）：每一遍都要从磁盘重读",
                   { ws = kb(ws), room = kb(room) }),
      evidence = tr("Over {duration_s:%.1f} s the job read {disk} from disk while streaming {list:%s}; memory the "
                      .. "page cache can use: {room} ({cap}){ex_en}.",
                    "{duration_s:%.1f} 秒内作业从磁盘读 {disk}，正在流式读 {list:%s}；page cache 可用内存：{room}（{cap}）{ex_zh}。",
                    { duration_s = ev.duration_s, disk = rate(disk), list = list, room = kb(room), cap = cap,
                      ex_en = ex_en, ex_zh = ex_zh }),
      fix = by_cgroup and T("The container's memory limit is what evicts: give the cgroup room for the "
              .. "working set plus the job's own memory (memory.max / memory.limit_in_bytes), or "
              .. "shrink the working set (store uint8 instead of float32, compress, subsample), or "
              .. "read it in sequential shards from local NVMe so each re-read runs at full disk "
              .. "bandwidth. Pinning with vmtouch -l only helps once the data fits.",
              "是容器内存上限在淘汰缓存：给 cgroup 留出工作集加作业自身内存的空间（memory.max / "
              .. "memory.limit_in_bytes），或缩小工作集（存 uint8 而非 float32、压缩、子采样），或从本地 NVMe "
              .. "按顺序 shard 读取，让每次重读跑满磁盘带宽。vmtouch -l 固定缓存只在数据放得下时才有用。")
        or T("Shrink the working set below the free memory (store uint8 instead of float32, "
              .. "compress, subsample, or give each node only its shard), then keep it resident "
              .. "with vmtouch -t / -l; otherwise stage it on local NVMe and read sequential shards "
              .. "so each re-read runs at full disk bandwidth, or add a caching layer (BeeGFS "
              .. "cache, rank-local copy) in front of network storage (SOP §7.4).",
              "把工作集缩小到可用内存以下（存 uint8 而非 float32、压缩、子采样，或每个节点只放自己的 shard），"
              .. "再用 vmtouch -t / -l 常驻缓存；否则放到本地 NVMe 并按顺序 shard 读取，让每次重读跑满磁盘"
              .. "带宽，或在网络存储前加缓存层（BeeGFS 缓存、rank 本地副本）（SOP §7.4）。"),
      verify = tr("`vmtouch FILE` shows the file resident after one epoch, and `sopctl run --pid {pid} --duration 3` "
                    .. "in the second epoch shows disk reads below {page_cache_min_disk_kb_per_s}/s.",
                  "一个 epoch 后 `vmtouch FILE` 显示文件常驻内存，第二个 epoch 中 `sopctl run --pid {pid} --duration 3` 显示磁盘读低于 "
                    .. "{page_cache_min_disk_kb_per_s}/s。",
                  { pid = ev.pid, page_cache_min_disk_kb_per_s = kb(th.page_cache_min_disk_kb_per_s) }),
    }
  end,
}
