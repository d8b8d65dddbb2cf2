-- plugins/mapped.lua — SOP §7.3 through memory maps: a process whose reads from storage come
-- through major page faults of mapped files (np.memmap, np.load(mmap_mode="r"), safetensors,
-- torch.load(mmap=True)) rather than read() calls, at random places of the file. Reads ev.proc
-- (majflt_per_s, io, mem.mapped, mem.file_growth_kb_per_s), ev.threads[].majflt_per_s,
-- ev.python.threads[].window (fault_wait_frac, fault_site) and ev.host.disks.

local common = require "plugins.common"
local T, no_proc, rate, short_path = common.T, common.no_proc, common.rate, common.short_path
local tr = common.tr

local REFS = {
  "https://man7.org/linux/man-pages/man2/madvise.2.html",
  "https://numpy.org/doc/stable/reference/generated/numpy.memmap.html",
  "https://www.kernel.org/doc/html/latest/admin-guide/mm/concepts.html#page-cache",
  "https://www.brendangregg.com/linuxperf.html",
}

-- Mapped data files, most resident first (the probe's order).
local function data_maps(ev, min_kb)
  local out = {}
  for _, f in ipairs((ev.proc.mem and ev.proc.mem.mapped) or {}) do
    if f.kind == "data" and (f.size_kb or 0) >= min_kb then out[#out + 1] = f end
  end
  return out
end

-- The sampled Python thread that waited most on storage (D state or major faults).
local function waiting_thread(ev)
  local best
  for _, t in ipairs((ev.python and ev.python.threads) or {}) do
    local w = t.window
    if w and w.fault_wait_frac and (w.samples or 0) > 0
       and (not best or w.fault_wait_frac > best.window.fault_wait_frac) then
      best = t
    end
  end
  return best
end

-- The OS thread with the most major faults per second.
local function faulting_thread(ev)
  local best
  for _, t in ipairs(ev.threads or {}) do
    if t.majflt_per_s and (not best or t.majflt_per_s > best.majflt_per_s) then best = t end
  end
  return best
end

local function busiest_disk(ev)
  local best
  for _, d in ipairs((ev.host and ev.host.disks) or {}) do
    if d.read_kb_per_s and (not best or d.read_kb_per_s > best.read_kb_per_s) then best = d end
  end
  return best
end

rule {
  id = "io.mapped_faults", section = "7.3", severity = "warn",
  title = T("Reads from storage through page faults of mapped files at random places",
            "通过映射文件的缺页在随机位置从存储读取"),
  doc = [[Hit when the target reads at least page_cache_min_disk_kb_per_s from storage (or a sampled thread waits on
    storage in mapped_wait_frac of its samples) with at least
    mapped_fault_min_per_s major page faults/s while read() calls bring less than mapped_read_share of those bytes
    (its IO comes through mapped files), and the access is random: each fault reads at most
    random_read_max_request_kb, or the file-backed memory it maps grows by less than mapped_touch_ratio of what the
    disk reads (read-around fetches far more than is touched). Warn when a sampled thread waits on storage (D state
    or faulting) in at least mapped_wait_frac of its samples or nothing was sampled; info below. Clear for a
    sequential stream (read-ahead serves it) or without such faults. Names the mapped files with size and resident
    kB and the Python line that faults; the file faulted is the one whose resident kB grew most over the window
    (mapped[].rss_growth_kb), else the most resident one is named as such.]],
  reads = { "duration_s", "proc.majflt_per_s", "proc.io.read_bytes_per_s", "proc.io.rchar_per_s",
            "proc.io.syscr_per_s", "proc.mem.mapped", "proc.mem.mapped[].rss_growth_kb",
            "proc.mem.file_growth_kb_per_s", "threads[].majflt_per_s", "threads[].read_bytes_per_s",
            "threads[].syscr_per_s", "python.threads[].window.fault_wait_frac",
            "python.threads[].window.fault_site", "python.threads[].window.majflt_frac",
            "host.disks[].read_kb_per_s", "host.disks[].reads_per_s", "alive", "host.disks[].name", "pid",
            "python.threads[].name", "python.threads[].tid",
            "python.threads[].window.samples", "threads[].name", "threads[].tid" },
  uses = { "mapped_fault_min_per_s", "page_cache_min_disk_kb_per_s", "mapped_read_share",
           "random_read_max_request_kb", "mapped_touch_ratio", "mapped_wait_frac", "data_file_min_mb" },
  cause = T("The program reads a memory-mapped file (np.memmap, np.load(mmap_mode='r'), safetensors, "
            .. "torch.load(mmap=True)) at random places with a cold page cache: each touch of a page "
            .. "not in memory is a major fault the thread waits for, so the disk's random IOPS (and, "
            .. "with readahead, its bandwidth spent on pages nobody reads) bound the loop. No read() "
            .. "calls are made, so read-size rules cannot see it (SOP §7.3).",
            "程序在 page cache 冷的情况下随机访问内存映射文件（np.memmap、np.load(mmap_mode='r')、"
            .. "safetensors、torch.load(mmap=True)）：每次访问不在内存中的页都是一次主缺页，线程要等它，"
            .. "于是磁盘的随机 IOPS（以及预读浪费在无人读取的页上的带宽）限制了循环。没有 read() 调用，"
            .. "所以按读大小判断的规则看不到它（SOP §7.3）。"),
  fix = T("For mapped data: (1) access order — sort the indices of each batch (np.sort(idx) before "
          .. "table[idx]) or group lookups by region so neighbouring rows share pages; "
          .. "(2) tell the kernel: mmap.madvise(mmap.MADV_RANDOM) for true random lookups (stops "
          .. "read-around fetching pages nobody reads), MADV_WILLNEED / MADV_SEQUENTIAL for ranges read "
          .. "in order; (3) copy the hot part to RAM (np.array(table[hot_rows])); (4) put the file on "
          .. "local NVMe (a local cache of remote data); (5) size the page cache (RAM or the cgroup "
          .. "memory limit) to the working set so it stays warm. Where the data is meant to be "
          .. "streamed, read it sequentially instead (§7: shards read in order with a shuffle buffer).",
          "对映射数据：(1) 访问顺序——每个批次的下标先排序（table[idx] 之前 np.sort(idx)），或按区域分组"
          .. "查询，让相邻行共享页；(2) 告诉内核：真正随机查询用 mmap.madvise(mmap.MADV_RANDOM)（停止"
          .. "预读无人访问的页），顺序读取的区间用 MADV_WILLNEED / MADV_SEQUENTIAL；(3) 把热的部分拷进内存"
          .. "（np.array(table[hot_rows])）；(4) 文件放到本地 NVMe（远端数据的本地缓存）；(5) 让 page cache"
          .. "（内存或 cgroup 内存上限）装得下工作集，使其保持热。若数据本来就该流式读取，改为顺序读"
          .. "（§7：按顺序读 shard，用 shuffle buffer 打乱）。"),
  refs = REFS,
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    if common.no_window(ev) then return common.one_snapshot("no fault or read rates", "没有缺页与读速率") end
    local io = p.io
    if not p.majflt_per_s or not io or not io.read_bytes_per_s then
      return unknown(T("major faults or /proc/PID/io not measured over the window",
                       "窗口内没有测到缺页次数或 /proc/PID/io"))
    end
    local faults, disk, rchar = p.majflt_per_s, io.read_bytes_per_s, io.rchar_per_s or 0
    local base = tr("{faults:%.0f} major faults/s, {disk} from storage, {calls:%.0f} read calls/s "
                      .. "({rchar} through read())",
                    "每秒 {faults:%.0f} 次主缺页，存储读 {disk}，每秒 {calls:%.0f} 次 read（read() 读 {rchar}）",
                    { faults = faults, disk = rate(disk), calls = io.syscr_per_s or 0, rchar = rate(rchar) })
    -- Reading from storage now: enough bytes, or (a slow device) a thread mostly waiting on it.
    local wt = waiting_thread(ev)
    local wait = wt and wt.window.fault_wait_frac
    local busy = disk >= th.page_cache_min_disk_kb_per_s * 1024 or (wait and wait >= th.mapped_wait_frac)
    if not busy then
      return clear(tr("{base}: mapped files are not being read from storage", "{base}：没有在从存储读取映射文件",
                      { base = base }))
    end
    if rchar >= th.mapped_read_share * disk then
      return clear(tr("{base}: the bytes come through read() calls (see io.random_reads, io.small_reads)",
                      "{base}：字节来自 read() 调用（见 io.random_reads、io.small_reads）", { base = base }))
    end
    if faults < th.mapped_fault_min_per_s then
      return clear(tr("{base}: few faults bring much data in, read-ahead serves the mapping (a sequential stream)",
                      "{base}：少量缺页带来大量数据，预读在服务映射（顺序流式读）", { base = base }))
    end
    local per_fault = disk / faults
    local touched = math.max(0, (p.mem and p.mem.file_growth_kb_per_s) or 0) * 1024
    local small = per_fault <= th.random_read_max_request_kb * 1024
    local amplified = p.mem and p.mem.file_growth_kb_per_s and touched < th.mapped_touch_ratio * disk
    local file_mem = T("", "")
    if p.mem and p.mem.file_growth_kb_per_s then
      file_mem = tr(", file-backed memory {mib:%+.1f} MiB/s ({pct:%.0f}% of the bytes read)",
                    "，文件映射内存 {mib:%+.1f} MiB/s（读入字节的 {pct:%.0f}%）",
                    { mib = p.mem.file_growth_kb_per_s / 1024, pct = 100 * touched / disk })
    end
    local how = tr("{per_fault} per fault{file_mem}", "每次缺页 {per_fault}{file_mem}",
                   { per_fault = kb(per_fault / 1024), file_mem = file_mem })
    if not small and not amplified then
      return clear(tr("{base}; {how}: a sequential stream through the mapping, read-ahead serves it",
                      "{base}；{how}：顺序流式读映射，预读在起作用", { base = base, how = how }))
    end
    -- Where: the mapped files, the thread, the Python line.
    local files = data_maps(ev, th.data_file_min_mb * 1024)
    local maps_en, maps_zh, nmaps = common.mapped_text(ev, th.data_file_min_mb * 1024, 3)
    local map = nmaps > 0 and tr("; mapped: {maps}", "；映射：{maps}", { maps = T(maps_en, maps_zh) })
                or T("; no mapped data file seen", "；未见映射的数据文件")
    -- The file faulted: the one whose resident pages grew over the window; else (not measured, or
    -- dropped again within it) the most resident one, said as such.
    local ff = common.faulted_file(ev, th.data_file_min_mb * 1024)
    local faulted
    if ff then
      faulted = tr("page faults of {file}: +{grown} resident over the window", "{file} 的缺页：窗口内驻留 +{grown}",
                   { file = short_path(ff.path), grown = kb(ff.rss_growth_kb) })
    elseif files[1] then
      faulted = tr("page faults of mapped files; most resident: {file}", "映射文件的缺页；驻留最多的是 {file}",
                   { file = short_path(files[1].path) })
    else
      faulted = T("page faults of mapped files", "映射文件的缺页")
    end
    local thr = T("", "")
    if not wt and ff then
      thr = tr("; {faulted}", "；{faulted}", { faulted = faulted })
    end
    if wt then
      thr = tr("; thread {tid:%s} ({name:%s}) waits on storage in {pct:%.0f}% of {samples} samples, at {site:%s} "
                 .. "({faulted})",
               "；线程 {tid:%s}（{name:%s}）在 {samples} 个采样中 {pct:%.0f}% 等待存储，位置 {site:%s}（{faulted}）",
               { tid = tostring(wt.tid or "?"), name = wt.name or "?", pct = 100 * wait, samples = wt.window.samples,
                 site = wt.window.fault_site or "?", faulted = faulted })
    end
    -- The OS thread whose IO comes through faults: many major faults, few read calls, bytes from
    -- storage (task/TID/io): IO-bound on its mapped files.
    local ft = faulting_thread(ev)
    if ft and ft.majflt_per_s > 0 then
      local tio = T("", "")
      if ft.read_bytes_per_s then
        tio = tr(", {disk} from storage, {calls:%.0f} read calls/s", "，存储读 {disk}，每秒 {calls:%.0f} 次 read",
                 { disk = rate(ft.read_bytes_per_s), calls = ft.syscr_per_s or 0 })
      end
      thr = tr("{thr}; thread {tid} ({name:%s}): {faults:%.0f} major faults/s{tio}",
               "{thr}；线程 {tid}（{name:%s}）：每秒 {faults:%.0f} 次主缺页{tio}",
               { thr = thr, tid = ft.tid, name = ft.name or "?", faults = ft.majflt_per_s, tio = tio })
    end
    local d = busiest_disk(ev)
    local dev = T("", "")
    if d and d.reads_per_s and d.reads_per_s > 0 then
      dev = tr("; disk {name:%s} serves {reads:%.0f} reads/s of {req_kb:%.0f} KiB",
               "；磁盘 {name:%s} 每秒 {reads:%.0f} 次读请求，平均 {req_kb:%.0f} KiB",
               { name = d.name or "?", reads = d.reads_per_s, req_kb = d.read_kb_per_s / d.reads_per_s })
    end
    local why = small and T("each fault reads one small piece: random access", "每次缺页只读一小块：随机访问")
      or T("read-around fetches far more than the process touches: random access amplified by readahead",
           "预读取回的远多于进程实际访问的：随机访问被预读放大")
    return hit {
      severity = (wait == nil or wait >= th.mapped_wait_frac) and "warn" or "info",
      symptom = tr("IO through page faults of {file_en}: {faults:%.0f} major faults/s, {disk} from storage",
                   "经由{file_zh}缺页的 IO：每秒 {faults:%.0f} 次主缺页，存储读 {disk}",
                   { file_en = ff and short_path(ff.path) or "mapped files", faults = faults, disk = rate(disk),
                     file_zh = ff and short_path(ff.path) or "映射文件" }),
      evidence = tr("Over {duration_s:%.1f} s: {base}; {how}: {why}{thr}{map}{dev}.",
                    "{duration_s:%.1f} 秒内：{base}；{how}：{why}{thr}{map}{dev}。",
                    { duration_s = ev.duration_s, base = base, how = how, why = why, thr = thr, map = map,
                      dev = dev }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: major faults/s and bytes from storage drop (or "
                    .. "io.mapped_faults says sequential), and the thread's share of samples waiting on storage falls "
                    .. "below {mapped_wait_frac_pct:%.0f}%.",
                  "`sopctl run --pid {pid} --duration 3`：主缺页/s 与存储读字节下降（或 io.mapped_faults 判为顺序），线程等待存储的采样比例低于 "
                    .. "{mapped_wait_frac_pct:%.0f}%。",
                  { pid = ev.pid, mapped_wait_frac_pct = 100 * th.mapped_wait_frac }),
    }
  end,
}
