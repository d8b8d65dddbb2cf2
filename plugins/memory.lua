-- plugins/memory.lua — SOP §2.2 (memory near the cgroup limit or the host out of RAM) and §2.4
-- (fork copy-on-write growth of workers). Reads ev.proc, ev.children, ev.cgroup.memory and
-- ev.host. Thresholds: rss_limit_pct, host_avail_min_pct, host_share_pct, cow_*.

local common = require "plugins.common"
local T, no_proc = common.T, common.no_proc
local tr = common.tr
local census = require "plugins.heap_census"

-- The heap census's sentence appended to a finding's evidence, and its fix put first.
local function with_census(f, c)
  if not c then return f end
  f.evidence = T(f.evidence.en .. " " .. c.en .. ".", f.evidence.zh .. c.zh .. "。")
  if c.fix then
    local fx = f.fix or T("", "")
    f.fix = T(c.fix.en .. (fx.en or ""), c.fix.zh .. (fx.zh or ""))
  end
  return f
end

-- Why a rule that needs the live process cannot judge.
local function percent(a, b) return 100 * a / b end

-- A v1 "unlimited" limit is 2^63 bytes rounded down to a page; anything this big is no limit.
local UNLIMITED_KB = 2 ^ 50

-- Memory of the target and all its workers: PSS when known (shared pages counted once),
-- else RSS (shared pages counted in each process: an upper bound).
local function tree_kb(ev)
  local p = ev.proc
  local pss = p.smaps and p.smaps.pss_kb
  local total, kind = pss or p.rss_kb, pss and "PSS" or "RSS"
  if not total then return nil end
  local n = 0
  for _, c in ipairs(ev.children or {}) do
    local v = c.pss_kb or c.rss_kb
    if v then
      total = total + v
      n = n + 1
      if not c.pss_kb then kind = "RSS" end
    end
  end
  return total, kind, n
end

-- A forked worker keeps its parent's command line (spawn/forkserver/exec change it).
local function forked_from(c, p)
  if c.cmdline and p.cmdline then return c.cmdline == p.cmdline end
  return c.comm == p.comm
end

local function who(n)
  if n == 0 then return "the process", "进程" end
  if n == 1 then return "the process and its worker", "进程及其 1 个 worker " end
  return fmt("the process and its %d workers", n), fmt("进程及其 %d 个 worker ", n)
end

local MEM_REFS = {
  "https://docs.kernel.org/admin-guide/cgroup-v2.html#memory",
  "https://www.kernel.org/doc/gorman/html/understand/understand016.html",
  "https://docs.python.org/3/library/tracemalloc.html",
  "https://github.com/bloomberg/memray",
}

local MEM_FIX = T(
  "Find what holds the memory before raising the limit: tracemalloc snapshot at the peak "
  .. "(tracemalloc.start(10); take_snapshot().statistics('lineno')) or `memray attach PID`. "
  .. "Per SOP §2.2: a dataset loaded whole -> stream it in chunks or np.load(..., "
  .. "mmap_mode='r'); a growing list/cache -> bound it (functools.lru_cache(maxsize=N), "
  .. "weakref); every worker holding a copy -> see mem.fork_cow (spawn/forkserver, "
  .. "shared_memory); pinned buffers counted in RSS -> cap pin_memory. Raise the container "
  .. "memory limit only when the profile shows the peak is needed.",
  "调大上限之前先找出谁占着内存：峰值处做 tracemalloc 快照（tracemalloc.start(10)；"
  .. "take_snapshot().statistics('lineno')）或 `memray attach PID`。按 SOP §2.2：数据集一次全量读入"
  .. " → 分块流式读或 np.load(..., mmap_mode='r')；list/缓存持续增长 → 设上限"
  .. "（functools.lru_cache(maxsize=N)、weakref）；每个 worker 各持一份拷贝 → 见 mem.fork_cow"
  .. "（spawn/forkserver、shared_memory）；pinned 内存算进 RSS → 限制 pin_memory 总量。只有 profile "
  .. "证明峰值确实需要时才调大容器内存上限。")

rule {
  id = "mem.near_limit", section = "2.2", severity = "high",
  title = T("Memory of the process tree near the cgroup limit, or host RAM nearly exhausted by it",
            "进程树内存接近 cgroup 上限，或整机内存几乎被它耗尽"),
  doc = [[Hit (high) when target + workers (PSS, else RSS), less the target's file-backed pages (page cache of mapped
    files, reclaimable), reach rss_limit_pct of the cgroup memory limit; warn when the
    cgroup usage reaches that with limit hits; or when host MemAvailable is below host_avail_min_pct of RAM while
    the job holds at least host_share_pct of it. Unknown with no limit and no host memory figures.]],
  reads = { "proc.rss_kb", "proc.smaps.pss_kb", "children[].pss_kb", "children[].rss_kb",
            "proc.mem.pss_file_kb", "proc.mem.file_kb", "cgroup.memory.limit_kb", "cgroup.memory.usage_kb",
            "cgroup.memory.events", "cgroup.memory.failcnt", "host.mem_total_kb", "host.mem_available_kb",
            "host.swap_free_kb", "python.heap", "alive", "cgroup.memory.limit_path", "cgroup.path",
            "host.swap_total_kb", "pid" },
  uses = { "rss_limit_pct", "host_avail_min_pct", "host_share_pct", "heap_python_pct" },
  cause = T("The cgroup is charged for page cache and other tasks besides this process "
            .. "tree; the kernel is already reclaiming at the limit, so allocation "
            .. "stalls and an OOM kill follow when the cache cannot be dropped fast "
            .. "enough.",
            "cgroup 除了本进程树，还计入了 page cache 与其他任务；内核已经在上限处回收，"
            .. "回收跟不上时就会分配卡顿并触发 OOM kill。"),
  fix = MEM_FIX,
  verify = T("memory.events max/oom (v2) or memory.failcnt (v1) stop growing over an epoch.",
             "一个 epoch 内 memory.events 的 max/oom（v2）或 memory.failcnt（v1）不再增长。"),
  refs = MEM_REFS,
  check = function(ev, th)
    if not ev.proc then return no_proc(ev) end
    local used, kind, nw = tree_kb(ev)
    if not used then return unknown(T("RSS/PSS of the process not readable", "读不到进程的 RSS/PSS")) end
    local who_en, who_zh = who(nw)
    local mem = ev.cgroup and ev.cgroup.memory
    local lim = mem and mem.limit_kb
    if lim and lim >= UNLIMITED_KB then lim = nil end
    local host = ev.host
    local total, avail = host and host.mem_total_kb, host and host.mem_available_kb
    local notes_en, notes_zh = {}, {}

    if lim and lim > 0 then
      local lpct = percent(used, lim)
      local where = mem.limit_path or ev.cgroup.path or "?"
      local ctx = tr("memory of {who:%s} {used} ({kind:%s}) = {lpct:%.0f}% of the memory limit {lim} set on cgroup "
                       .. "{where:%s}",
                     "{who:%s}占用 {used}（{kind:%s}）= cgroup {where:%s} 内存上限 {lim} 的 {lpct:%.0f}%",
                     { who = T(who_en, who_zh), used = kb(used), kind = kind, lpct = lpct, lim = kb(lim),
                       where = where })
      local extra = T("", "")
      if mem.usage_kb then
        extra = tr("; cgroup usage incl. page cache {usage} ({pct:%.0f}%)",
                   "；cgroup 用量（含 page cache）{usage}（{pct:%.0f}%）",
                   { usage = kb(mem.usage_kb), pct = percent(mem.usage_kb, lim) })
      end
      local ev_ = mem.events or {}
      local pressure = (ev_.max or 0) + (ev_.high or 0) + (ev_.oom or 0) + (mem.failcnt or 0)
      if pressure > 0 then
        extra = tr("{extra}; limit hits: max {max}, high {high}, oom {oom}, failcnt {failcnt}",
                   "{extra}；触顶次数：max {max}，high {high}，oom {oom}，failcnt {failcnt}",
                   { extra = extra, max = ev_.max or 0, high = ev_.high or 0, oom = ev_.oom or 0,
                     failcnt = mem.failcnt or 0 })
      end
      -- File-backed pages of the target (page cache of its mapped files) count in the limit, but
      -- the kernel reclaims them before it OOM-kills: judge what cannot be reclaimed.
      local pm = ev.proc.mem
      local file_kb = pm and (pm.pss_file_kb or pm.file_kb)
      local hard_pct = file_kb and percent(used - file_kb, lim)
      if lpct >= th.rss_limit_pct and hard_pct and hard_pct < th.rss_limit_pct then
        extra = tr("{extra}; of it {file} file-backed (page cache of mapped files, reclaimable): {hard:%.0f}% of the "
                     .. "limit cannot be reclaimed",
                   "{extra}；其中 {file} 为文件映射（映射文件的 page cache，可回收）：不可回收部分占上限的 {hard:%.0f}%",
                   { extra = extra, file = kb(file_kb), hard = hard_pct })
      end
      if lpct >= th.rss_limit_pct and not (hard_pct and hard_pct < th.rss_limit_pct) then
        return hit(with_census({
          symptom = tr("Memory at {lpct:%.0f}% of the cgroup limit",
                       "内存已达 cgroup 上限的 {lpct:%.0f}%", { lpct = lpct }),
          evidence = tr("{ctx}{extra}.", "{ctx}{extra}。", { ctx = ctx, extra = extra }),
          cause = tr("Anonymous memory of the job fills the cgroup limit (>= {rss_limit_pct:%g}%): the next "
                     .. "allocation burst makes the kernel reclaim page cache and then "
                     .. "OOM-kill a task in the cgroup.",
                     "作业的匿名内存占满了 cgroup 上限（>= {rss_limit_pct:%g}%）：下一次分配高峰会让内核先回收 "
                     .. "page cache，然后在该 cgroup 内 OOM 杀进程。", { rss_limit_pct = th.rss_limit_pct }),
          fix = MEM_FIX,
          verify = tr("`sopctl run --pid {pid}` over a full epoch shows the tree below {rss_limit_pct:%g}% of "
                      .. "the limit and the cgroup's oom/max events stop growing.",
                      "完整跑一个 epoch，`sopctl run --pid {pid}` 显示进程树低于上限的 {rss_limit_pct:%g}%，"
                      .. "cgroup 的 oom/max 事件不再增长。", { pid = ev.pid, rss_limit_pct = th.rss_limit_pct }),
          refs = MEM_REFS,
        }, census.view(ev, th)))
      end
      local upct = mem.usage_kb and percent(mem.usage_kb, lim)
      if upct and upct >= th.rss_limit_pct and pressure > 0 then
        return hit {
          severity = "warn",
          symptom = tr("Memory cgroup usage at {upct:%.0f}% of its limit, with reclaim at the limit",
                       "内存 cgroup 用量达上限的 {upct:%.0f}%，且已在上限处回收", { upct = upct }),
          evidence = tr("{ctx}{extra}.", "{ctx}{extra}。", { ctx = ctx, extra = extra }),
        }
      end
      notes_en[#notes_en + 1] = ctx.en .. extra.en
      notes_zh[#notes_zh + 1] = ctx.zh .. extra.zh
    else
      notes_en[#notes_en + 1] = fmt("no memory limit on cgroup %s", ev.cgroup and ev.cgroup.path or "?")
      notes_zh[#notes_zh + 1] = fmt("cgroup %s 没有内存上限", ev.cgroup and ev.cgroup.path or "?")
    end

    if total and avail and total > 0 then
      local apct, share = percent(avail, total), percent(used, total)
      local swap = T("", "")
      if host.swap_total_kb and host.swap_total_kb > 0 and host.swap_free_kb then
        swap = tr("; swap free {free} of {total}", "；swap 剩余 {free} / {total}",
                  { free = kb(host.swap_free_kb), total = kb(host.swap_total_kb) })
      end
      local ctx = tr("host MemAvailable {avail} of {total} ({apct:%.1f}%); memory of {who:%s} {used} ({kind:%s}) = "
                       .. "{share:%.0f}% of RAM{swap}",
                     "整机 MemAvailable {avail} / {total}（{apct:%.1f}%）；{who:%s}占用 {used}（{kind:%s}）= "
                       .. "内存的 {share:%.0f}%{swap}",
                     { avail = kb(avail), total = kb(total), apct = apct, who = T(who_en, who_zh), used = kb(used),
                       kind = kind, share = share, swap = swap })
      if apct < th.host_avail_min_pct and share >= th.host_share_pct then
        return hit {
          symptom = tr("Host RAM nearly exhausted ({apct:%.1f}% available), mostly by this job",
                       "整机内存几乎耗尽（仅剩 {apct:%.1f}%），主要被本作业占用", { apct = apct }),
          evidence = tr("{ctx}.", "{ctx}。", { ctx = ctx }),
          cause = tr("The job holds {share:%.0f}% of RAM and less than {host_avail_min_pct:%g}% is available: the host "
                     .. "OOM killer picks the largest process next.",
                     "作业占用内存的 {share:%.0f}%，可用内存不足 {host_avail_min_pct:%g}%：整机 OOM killer 下一个就会挑最大的进程。",
                     { share = share, host_avail_min_pct = th.host_avail_min_pct }),
          verify = tr("`free -g` and `sopctl run --pid {pid}` show MemAvailable above {host_avail_min_pct:%g}% "
                        .. "through an epoch.",
                      "整个 epoch 中 `free -g` 与 `sopctl run --pid {pid}` 显示 MemAvailable 高于 {host_avail_min_pct:%g}%。",
                      { pid = ev.pid, host_avail_min_pct = th.host_avail_min_pct }),
        }
      end
      notes_en[#notes_en + 1] = ctx.en
      notes_zh[#notes_zh + 1] = ctx.zh
    elseif not lim then
      return unknown(T("no memory limit and no host memory figures", "既没有内存上限也没有整机内存数据"))
    end
    return clear(T(table.concat(notes_en, "; "), table.concat(notes_zh, "；")))
  end,
}

local COW_REFS = {
  "https://instagram-engineering.com/copy-on-write-friendly-python-garbage-collection-ad6ed5233ddf",
  "https://docs.python.org/3/library/gc.html#gc.freeze",
  "https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods",
}

rule {
  id = "mem.fork_cow", section = "2.4", severity = "warn",
  title = T("Forked workers each hold a private copy of the parent's memory (copy-on-write)",
            "fork 出的 worker 各自持有父进程内存的私有拷贝（写时复制）"),
  doc = [[Hit when at least cow_min_children forked workers (same command line as the parent) each hold private memory
    of at least cow_child_private_pct of the parent's anon RSS and at least cow_child_min_mb MiB; high when the
    job is near its memory limit (rss_limit_pct). Workers holding more than sib_own_ratio x the parent's anon
    memory are left to
    mem.siblings_full_copy (they hold their own data). Unknown when the workers' smaps are unreadable.]],
  reads = { "proc.anon_kb", "proc.rss_kb", "proc.cmdline", "children[].private_kb", "children[].cmdline",
            "cgroup.memory.limit_kb", "alive", "children[].comm", "children[].pid", "pid", "proc.comm" },
  uses = { "cow_child_private_pct", "cow_child_min_mb", "cow_min_children", "sib_own_ratio",
           "rss_limit_pct" },
  cause = T("Workers forked from the parent read its Python objects; every access writes the "
            .. "object's reference count (and the GC walks write GC headers), so the kernel "
            .. "copies each touched page into each worker (copy-on-write): N workers grow to "
            .. "about N x the parent's heap (SOP §2.4).",
            "从父进程 fork 出的 worker 读取父进程的 Python 对象；每次访问都会写对象的引用计数"
            .. "（GC 扫描还会写 GC 头），内核于是把每个被碰到的页复制进每个 worker（写时复制）："
            .. "N 个 worker 膨胀到约 N 倍父进程堆（SOP §2.4）。"),
  fix = T("Pick one (SOP §2.4): (1) start workers with multiprocessing.get_context('spawn') "
          .. "or 'forkserver' (torch: DataLoader(multiprocessing_context='spawn')); side "
          .. "effects: each worker starts a fresh interpreter, re-imports the main module "
          .. "(guard it with if __name__ == '__main__'), receives its arguments by pickling "
          .. "(they must be picklable) and starts slower; (2) keep the big table out of "
          .. "per-element Python objects: one numpy array or multiprocessing.shared_memory "
          .. "buffer has one refcount, not millions; (3) call gc.freeze() in the parent "
          .. "right before forking (Python 3.7+) so GC passes stop writing to the inherited "
          .. "objects; refcount writes on objects the workers touch still copy pages, so "
          .. "(1) or (2) remove more.",
          "三选一（SOP §2.4）：(1) 用 multiprocessing.get_context('spawn') 或 'forkserver' 启动 "
          .. "worker（torch：DataLoader(multiprocessing_context='spawn')）；副作用：每个 worker "
          .. "启动全新解释器、重新 import 主模块（需 if __name__ == '__main__' 保护）、参数经 "
          .. "pickle 传入（必须可 pickle）、启动更慢；(2) 大表不要存成逐元素的 Python 对象："
          .. "一个 numpy 数组或 multiprocessing.shared_memory 缓冲区只有一个引用计数；(3) 父进程 "
          .. "fork 前调用 gc.freeze()（Python 3.7+），GC 不再写继承下来的对象；但 worker 碰到的对象"
          .. "其引用计数写入仍会复制页，(1)(2) 去得更彻底。"),
  refs = COW_REFS,
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local parent_kb = p.anon_kb or p.rss_kb
    if not parent_kb then return unknown(T("parent RSS not readable", "读不到父进程 RSS")) end
    local kids = ev.children or {}
    if #kids == 0 then return clear(T("no worker processes", "没有 worker 子进程")) end

    local min_kb = math.max(th.cow_child_min_mb * 1024, parent_kb * th.cow_child_private_pct / 100)
    local forked, spawned, own, measured, largest = {}, 0, 0, 0, 0
    for _, c in ipairs(kids) do
      if c.private_kb then
        measured = measured + 1
        if c.private_kb > largest then largest = c.private_kb end
        if c.private_kb >= min_kb then
          -- A forked worker keeps the parent's command line; spawn/forkserver/exec change it.
          -- Private memory well beyond the parent's anon memory was not inherited: the worker
          -- allocated it itself (mem.siblings_full_copy).
          if not forked_from(c, p) then
            spawned = spawned + 1
          elseif c.private_kb > th.sib_own_ratio * parent_kb then
            own = own + 1
          else
            forked[#forked + 1] = c
          end
        end
      end
    end
    if measured == 0 then
      return unknown(tr("workers' private memory not readable (smaps_rollup of {n_kids} workers)",
                        "读不到 {n_kids} 个 worker 的私有内存（smaps_rollup）",
                        { n_kids = #kids }))
    end
    if #forked < th.cow_min_children then
      local en = fmt("%d workers; largest private memory %s = %.0f%% of the parent's %s "
                     .. "(threshold %g%% and %g MiB in %g forked workers)", #kids, kb(largest),
                     percent(largest, parent_kb), kb(parent_kb), th.cow_child_private_pct,
                     th.cow_child_min_mb, th.cow_min_children)
      local zh = fmt("%d 个 worker；最大私有内存 %s = 父进程 %s 的 %.0f%%（阈值：%g 个 fork 的 worker 各 "
                     .. ">= %g%% 且 >= %g MiB）", #kids, kb(largest), kb(parent_kb),
                     percent(largest, parent_kb), th.cow_min_children, th.cow_child_private_pct,
                     th.cow_child_min_mb)
      if spawned > 0 then
        en = en .. fmt("; %d large workers were started by exec/spawn, not forked", spawned)
        zh = zh .. fmt("；%d 个大 worker 是 exec/spawn 启动的，不是 fork", spawned)
      end
      if own > 0 then
        en = en .. fmt("; %d forked workers hold more than %g x the parent's memory: their own "
                       .. "data, not inherited pages (see mem.siblings_full_copy)", own, th.sib_own_ratio)
        zh = zh .. fmt("；%d 个 fork 的 worker 私有内存超过父进程的 %g 倍：是它们自己的数据，不是继承的页"
                       .. "（见 mem.siblings_full_copy）", own, th.sib_own_ratio)
      end
      return clear(T(en, zh))
    end

    local sum, list_en, list_zh = 0, {}, {}
    for i, c in ipairs(forked) do
      sum = sum + c.private_kb
      if i <= 8 then
        list_en[#list_en + 1] = fmt("pid %d %s (%.0f%%)", c.pid, kb(c.private_kb),
                                    percent(c.private_kb, parent_kb))
        list_zh[#list_zh + 1] = list_en[#list_en]
      end
    end
    local ratio = sum / parent_kb
    local sev = "warn"
    local lim = ev.cgroup and ev.cgroup.memory and ev.cgroup.memory.limit_kb
    local of_limit = T("", "")
    if lim and lim < UNLIMITED_KB then
      local tot = parent_kb + sum
      of_limit = tr("; parent + copies = {pct:%.0f}% of the cgroup memory limit {lim}",
                    "；父进程 + 拷贝 = cgroup 内存上限 {lim} 的 {pct:%.0f}%", { pct = percent(tot, lim), lim = kb(lim) })
      if percent(tot, lim) >= th.rss_limit_pct then sev = "high" end
    end
    return hit {
      severity = sev,
      symptom = tr("{n_forked} forked workers each hold a private copy of the parent's memory",
                   "{n_forked} 个 fork 出的 worker 各自持有父进程内存的私有拷贝",
                   { n_forked = #forked }),
      evidence = tr("Parent pid {pid} anonymous memory {parent_kb}; forked workers' private memory: {list_en}; "
                      .. "together {sum} = {ratio:%.1f} x the parent{of_limit}.",
                    "父进程 pid {pid} 匿名内存 {parent_kb}；fork 的 worker 私有内存：{list_zh}；合计 {sum} = 父进程的 {ratio:%.1f} 倍"
                      .. "{of_limit}。",
                    { pid = ev.pid, parent_kb = kb(parent_kb), list_en = table.concat(list_en, ", "), sum = kb(sum),
                      ratio = ratio, of_limit = of_limit, list_zh = table.concat(list_zh, "，") }),
      verify = tr("`sopctl run --pid {pid}`: each worker's private memory falls well below "
                  .. "{cow_child_private_pct:%g}% of the parent's, and the tree's total PSS is about parent + "
                  .. "the workers' own data.",
                  "`sopctl run --pid {pid}`：每个 worker 的私有内存远低于父进程的 {cow_child_private_pct:%g}%，进程树总 PSS "
                  .. "约等于父进程 + worker 自身数据。", { pid = ev.pid, cow_child_private_pct = th.cow_child_private_pct }),
    }
  end,
}

-- ---- §2.2 rows: loaded whole at start, steady growth, every rank a full copy, pinned ----------

-- The memory limit that applies (cgroup, else host RAM): limit kB, what it is (en, zh).
local function limit_of(ev)
  local mem = ev.cgroup and ev.cgroup.memory
  local lim = mem and mem.limit_kb
  if lim and lim > 0 and lim < UNLIMITED_KB then
    return lim, fmt("the cgroup memory limit %s", kb(lim)), fmt("cgroup 内存上限 %s", kb(lim)), true
  end
  local total = ev.host and ev.host.mem_total_kb
  if total and total > 0 then
    return total, fmt("host RAM %s", kb(total)), fmt("整机内存 %s", kb(total)), false
  end
end

-- Frames of code that reads a whole file or dataset into memory ("func (file.py)" as in
-- top_stacks). Basenames only: json's and pickle's loaders are told by their module files.
local LOAD_FRAMES = {
  "^load %(npyio%.py%)", "^load %(_npyio_impl%.py%)", "^read_array %(format%.py%)",
  "^loadtxt ", "^_read %(npyio%.py%)", "^genfromtxt ", "^fromfile ",
  "%(decoder%.py%)$",                                    -- json.load / json.loads
  "^load %(pickle%.py%)", "^_Unpickler%.", "^loads %(pickle%.py%)",
  "^load %(serialization%.py%)", "^_load %(serialization%.py%)",   -- torch.load
  "^load %(numpy_pickle%.py%)",                          -- joblib.load
  "^read_csv ", "^read_table ", "^read_parquet ", "^read_json ", "^read_pickle ",
  "^read_feather ", "^read_hdf ", "^read_excel ", "^read_orc ",      -- pandas
  "^read_bytes %(pathlib%.py%)", "^read_text %(pathlib%.py%)", "^Path%.read_bytes ",
  "^Path%.read_text ", "^load_dataset ", "^load_file %(",
}

local function is_load_frame(frame)
  for _, pat in ipairs(LOAD_FRAMES) do
    if frame:find(pat) then return true end
  end
  return false
end

-- The thread of the target that spent the largest share of its sampled window in loading code:
-- share (0..1), the loading frame most seen, samples. nil when nothing was sampled.
local function loading_share(ev)
  local py = ev.python
  if not py or not py.threads then return nil end
  local best, best_frame, best_n
  for _, t in ipairs(py.threads) do
    local w = t.window
    local d = w and w.dist
    if w and w.samples and w.samples > 0 and d and d.frames and d.stacks then
      -- Every stack of the window (the full distribution), each frame tested once.
      local n, frames, is_load = 0, {}, {}
      for i, f in ipairs(d.frames) do is_load[i] = is_load_frame(f) end
      for _, st in ipairs(d.stacks) do
        local found
        for _, id in ipairs(st.ids or {}) do
          if is_load[id] then found = d.frames[id] end   -- innermost loading frame
        end
        if found then
          n = n + (st.count or 0)
          frames[found] = (frames[found] or 0) + (st.count or 0)
        end
      end
      local share = n / w.samples
      if not best or share > best then
        best, best_n, best_frame = share, w.samples, nil
        local top = 0
        for f, c in pairs(frames) do
          if c > top then best_frame, top = f, c end
        end
      end
    elseif w and w.samples and w.samples > 0 and w.top_stacks then
      local n, frames = 0, {}
      for _, st in ipairs(w.top_stacks) do
        local found
        for frame in (st.stack or ""):gmatch("[^;]+") do
          if is_load_frame(frame) then found = frame end   -- innermost loading frame
        end
        if found then
          n = n + st.count
          frames[found] = (frames[found] or 0) + st.count
        end
      end
      local share = n / w.samples
      if not best or share > best then
        best, best_n, best_frame = share, w.samples, nil
        local top = 0
        for f, c in pairs(frames) do
          if c > top then best_frame, top = f, c end
        end
      end
    end
  end
  return best, best_frame, best_n
end

local LOAD_REFS = {
  "https://numpy.org/doc/stable/reference/generated/numpy.load.html",
  "https://docs.python.org/3/library/tracemalloc.html",
  "https://pandas.pydata.org/docs/user_guide/io.html#iterating-through-files-chunk-by-chunk",
  "https://docs.kernel.org/admin-guide/cgroup-v2.html#memory",
}

rule {
  id = "mem.load_at_start", section = "2.2", severity = "warn",
  title = T("A just-started process already holds a large share of its memory limit and is "
            .. "loading a whole dataset into RAM",
            "刚启动的进程已占内存上限的很大比例，且正把整个数据集读进内存"),
  reads = { "proc.age_s", "proc.rss_kb", "proc.anon_kb", "proc.rss_growth_kb_per_s", "cgroup.memory.limit_kb",
            "host.mem_total_kb", "python.threads[].window.top_stacks", "python.threads[].window.samples",
            "python.threads[].window.dist", "alive", "pid" },
  uses = { "load_young_s", "load_share_pct", "load_rate_mb_per_s", "load_stack_pct", "rss_limit_pct" },
  cause = T("The whole dataset is read into RAM at start-up (SOP §2.2 row 1, 'killed right "
            .. "after start'): memory grows with the file size, not with the batch, and the "
            .. "peak lands before the first step.",
            "启动时把整个数据集一次性读进内存（SOP §2.2 第 1 行“进程启动就被杀”）：内存随文件大小"
            .. "增长而不是随 batch，峰值出现在第一个 step 之前。"),
  fix = T("Stream or map the data instead of loading it whole: np.load(path, mmap_mode='r') "
          .. "(pages come from the page cache on demand, reclaimable); pandas "
          .. "read_csv(..., chunksize=N) / iterator=True; json -> JSON Lines read line by "
          .. "line; a torch Dataset whose __getitem__ reads one sample (IterableDataset for "
          .. "streams); torch.load(..., mmap=True) for checkpoints (PyTorch 2.1+).",
          "改为流式读或 mmap，不要一次全量读入：np.load(path, mmap_mode='r')（按需从 page cache "
          .. "读页，可回收）；pandas read_csv(..., chunksize=N) / iterator=True；json 改为 JSON Lines "
          .. "逐行读；torch Dataset 的 __getitem__ 只读一个样本（流式数据用 IterableDataset）；"
          .. "checkpoint 用 torch.load(..., mmap=True)（PyTorch 2.1+）。"),
  refs = LOAD_REFS,
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    if not p.age_s or not p.rss_kb then
      return unknown(T("process age or RSS not readable", "读不到进程年龄或 RSS"))
    end
    if p.age_s > th.load_young_s then
      return clear(tr("process started {age_s:%.0f} s ago (a start-up load is judged in its first {load_young_s:%g} s)",
                      "进程已启动 {age_s:%.0f} 秒（启动期加载只在前 {load_young_s:%g} 秒内判断）",
                      { age_s = p.age_s, load_young_s = th.load_young_s }))
    end
    local lim, lim_en, lim_zh, is_cg = limit_of(ev)
    if not lim then return unknown(T("no memory limit and no host RAM figure", "既无内存上限也无整机内存数据")) end
    local held = p.anon_kb or p.rss_kb
    local share = percent(held, lim)
    local avg = held / math.max(p.age_s, 1) / 1024                  -- MiB/s since start
    local now = p.rss_growth_kb_per_s and p.rss_growth_kb_per_s / 1024 -- MiB/s over the window
    local rate = math.max(avg, now or 0)
    local frac, frame, n = loading_share(ev)
    local in_window = now and tr(", {now:%.0f} MiB/s over the window", "，窗口内 {now:%.0f} MiB/s", { now = now })
                      or T("", "")
    local base = tr("pid {pid} started {age:%.0f} s ago; anonymous memory {held} = {share:%.0f}% of {lim:%s}; "
                      .. "{avg:%.0f} MiB/s on average since start{in_window}",
                    "pid {pid} 启动 {age:%.0f} 秒；匿名内存 {held} = {lim:%s}的 {share:%.0f}%；自启动平均 {avg:%.0f} MiB/s{in_window}",
                    { pid = ev.pid, age = p.age_s, held = kb(held), share = share, lim = T(lim_en, lim_zh), avg = avg,
                      in_window = in_window })
    if share < th.load_share_pct or rate < th.load_rate_mb_per_s then
      return clear(tr("{base} (needs >= {load_share_pct:%g}% and >= {load_rate_mb_per_s:%g} MiB/s)",
                      "{base}（阈值：>= {load_share_pct:%g}% 且 >= {load_rate_mb_per_s:%g} MiB/s）",
                      { base = base, load_share_pct = th.load_share_pct,
                        load_rate_mb_per_s = th.load_rate_mb_per_s }))
    end
    if not frac then
      return unknown(tr("{base}; no sampled Python stacks to tell loading from other work "
                          .. "(run with --duration >= 1 on a CPython target)",
                        "{base}；没有 Python 栈采样，无法区分加载与其他工作（对 CPython 目标用 --duration >= 1）",
                        { base = base }))
    end
    if 100 * frac < th.load_stack_pct then
      return clear(tr("{base}; only {frac_pct:%.0f}% of the busiest thread's samples in loading code (needs "
                        .. "{load_stack_pct:%g}%)",
                      "{base}；最忙线程只有 {frac_pct:%.0f}% 的采样在加载代码里（阈值 {load_stack_pct:%g}%）",
                      { base = base, frac_pct = 100 * frac, load_stack_pct = th.load_stack_pct }))
    end
    local sev = (is_cg and share >= th.rss_limit_pct) and "high" or "warn"
    return hit {
      severity = sev,
      symptom = tr("Process {age_s:%.0f} s old already holds {share:%.0f}% of {lim_en} while loading data",
                   "进程启动 {age_s:%.0f} 秒就占了{lim_zh}的 {share:%.0f}%，且仍在加载数据",
                   { age_s = p.age_s, share = share, lim_en = lim_en, lim_zh = lim_zh }),
      evidence = tr("{base}; {frac_pct:%.0f}% of {n} stack samples in loading code, mostly {frame}.",
                    "{base}；{n} 个栈采样中 {frac_pct:%.0f}% 在加载代码里，主要是 {frame}。",
                    { base = base, frac_pct = 100 * frac, n = n, frame = frame or "?" }),
      verify = tr("tracemalloc.start(); load; print(tracemalloc.get_traced_memory()[1]) shows the peak no "
                    .. "longer proportional to the dataset, and `sopctl run --pid N` in the first minute shows "
                    .. "anonymous memory below {load_share_pct:%g}% of the limit.",
                  "tracemalloc.start(); 加载; print(tracemalloc.get_traced_memory()[1]) 显示峰值不再与数据集大小成正比，启动后一分钟内 "
                    .. "`sopctl run --pid N` 显示匿名内存低于上限的 {load_share_pct:%g}%。",
                  { load_share_pct = th.load_share_pct }),
    }
  end,
}

-- How the anonymous memory rose over the window, from its 13 readings (sampling.anon_trace_kb):
-- the share of twelfths that rose, the largest twelfth's share of the net rise, and the last
-- third's rate against the window's mean. nil when the window was not traced or did not rise.
local function growth_shape(ev)
  local tr_kb = ev.sampling and ev.sampling.anon_trace_kb
  if not tr_kb or #tr_kb < 7 then return nil end
  local n = #tr_kb - 1
  local net = tr_kb[#tr_kb] - tr_kb[1]
  if net <= 0 then return nil end
  local rising, largest = 0, 0
  for i = 1, n do
    local d = tr_kb[i + 1] - tr_kb[i]
    if d > 0 then rising = rising + 1 end
    if d > largest then largest = d end
  end
  local third = math.floor(n / 3)
  local last = (tr_kb[#tr_kb] - tr_kb[#tr_kb - third]) / third
  return { rising_pct = 100 * rising / n, step_pct = 100 * largest / net,
           last_pct = 100 * last / (net / n), n = n }
end

-- How the anonymous + shared memory moved across the windows of a watch (ev.watch.history: the
-- earlier windows on this process and this one, oldest first, read at each window's end): the
-- same shape as within a window, over the steps between windows. nil outside a watch or before
-- growth_watch_windows windows; else {windows, span, net (kB), rate (kB/s)} and, when it rose by
-- growth_watch_min_mb, the shape: rising_pct, step_pct, last_pct, steady.
local function watch_trend(ev, th)
  local h = ev.watch and ev.watch.history
  if type(h) ~= "table" or #h < math.max(th.growth_watch_windows, 2) then return nil end
  local function kb_of(x) return x.anon_kb and x.anon_kb + (x.shmem_kb or 0) end
  for _, x in ipairs(h) do
    if not x.at_s or not kb_of(x) then return nil end
  end
  local a, b, n = h[1], h[#h], #h - 1
  local span = b.at_s - a.at_s
  if span <= 0 then return nil end
  local net = kb_of(b) - kb_of(a)
  local t = { windows = #h, span = span, net = net, rate = net / span }
  if net < th.growth_watch_min_mb * 1024 then return t end
  local rising, largest = 0, 0
  for i = 1, n do
    local d = kb_of(h[i + 1]) - kb_of(h[i])
    if d > 0 then rising = rising + 1 end
    if d > largest then largest = d end
  end
  local k = #h - math.max(1, math.floor(n / 3))
  local dt = b.at_s - h[k].at_s
  local last = dt > 0 and (kb_of(b) - kb_of(h[k])) / dt or 0
  t.rising_pct, t.step_pct, t.last_pct = 100 * rising / n, 100 * largest / net, 100 * last / t.rate
  t.steady = t.step_pct < th.growth_step_pct and t.rising_pct >= th.growth_steady_pct
             and t.last_pct >= th.growth_persist_pct
  return t
end

-- Seconds until the cgroup limit (else host MemAvailable) is reached at `rate` kB/s, and the text
-- saying so; nil, "" when neither is known.
local function time_to_limit(ev, p, rate)
  local mem = ev.cgroup and ev.cgroup.memory
  local lim = mem and mem.limit_kb
  if lim and lim > 0 and lim < UNLIMITED_KB then
    local used = mem.usage_kb or p.rss_kb
    local left = math.max(lim - used, 0) / rate
    return left, tr("; at this rate the cgroup limit {lim} (usage {used}) is reached in {left:%.0f} s",
                    "；按此速率 {left:%.0f} 秒后达到 cgroup 上限 {lim}（当前用量 {used}）",
                    { lim = kb(lim), used = kb(used), left = left })
  elseif ev.host and ev.host.mem_available_kb then
    local left = ev.host.mem_available_kb / rate
    return left, tr("; at this rate host MemAvailable {avail} is used up in {left:%.0f} s",
                    "；按此速率 {left:%.0f} 秒后耗尽整机 MemAvailable {avail}",
                    { avail = kb(ev.host.mem_available_kb), left = left })
  end
  return nil, T("", "")
end

-- The trend across watch windows as a judgement: t.sev ("high"/"warn") when the memory rose
-- steadily between windows and would reach the limit within growth_steady_warn_s (high within
-- growth_high_s), whatever the process's size; t.text says what was seen. A young process's
-- steady climb is start-up (caches, pools) unless high. nil outside a watch.
local function judge_trend(ev, th, p)
  local t = watch_trend(ev, th)
  if not t then return nil end
  if not t.steady then
    t.text = tr("; across {n} watch windows over {span:%.0f} s: {mib:%+.1f} MiB, not a steady climb",
                "；{n} 个 watch 窗口（{span:%.0f} 秒）内：{mib:%+.1f} MiB，不是持续上涨",
                { n = t.windows, span = t.span, mib = t.net / 1024 })
    return t
  end
  local left, left_s = time_to_limit(ev, p, t.rate)
  local young = p.age_s and p.age_s < th.growth_young_s
  if left and left <= th.growth_high_s then
    t.sev = "high"
  elseif left and left <= th.growth_steady_warn_s and not young then
    t.sev = "warn"
  end
  t.text = tr("; across {n} watch windows over {span:%.0f} s anonymous + shared memory rose {mib:%+.1f} MiB "
                .. "({rate:%.2f} MiB/min) steadily: up between {rising:%.0f}% of the windows, the largest step "
                .. "{step:%.0f}% of the rise, the last third at {last:%.0f}% of the mean rate{left_s}",
              "；{n} 个 watch 窗口（{span:%.0f} 秒）内匿名 + 共享内存持续上涨 {mib:%+.1f} MiB（{rate:%.2f} MiB/分钟）："
                .. "{rising:%.0f}% 的相邻窗口间上涨，最大一步占涨幅 {step:%.0f}%，最后三分之一速率为平均的 {last:%.0f}%{left_s}",
              { n = t.windows, span = t.span, mib = t.net / 1024, rate = 60 * t.rate / 1024,
                rising = t.rising_pct, step = t.step_pct, last = t.last_pct, left_s = left_s })
  return t
end

local GROWTH_REFS = {
  "https://docs.python.org/3/library/tracemalloc.html",
  "https://bloomberg.github.io/memray/attach.html",
  "https://docs.python.org/3/library/functools.html#functools.lru_cache",
  "https://docs.python.org/3/library/weakref.html",
}

-- The cause, fix and verify lines of a mem.growth hit.
local function growth_advice(pid, th)
  return {
    cause = T("Something keeps references to new objects (SOP §2.2 row 2, 'grows the longer it "
              .. "runs'): a list appended to every step, a dict/cache without a bound, tensors kept "
              .. "with their graph (loss history without .item()), or reference cycles the GC "
              .. "does not free (see gc.pauses).",
              "有东西一直持有新对象的引用（SOP §2.2 第 2 行“跑着跑着越来越大”）：每步 append 的 list、"
              .. "没有上限的 dict/缓存、连同计算图一起保存的张量（记录 loss 没用 .item()），或 GC "
              .. "没有回收的循环引用（见 gc.pauses）。"),
    fix = tr("Find the growing allocation site, then bound it: `memray attach --aggregate -o "
             .. "grow.bin {pid}` (non-interactive; then `memray flamegraph grow.bin`), or in the "
             .. "code tracemalloc.start(25) and compare two snapshots a few minutes apart "
             .. "(snap2.compare_to(snap1, 'traceback')[:10]). Then: "
             .. "functools.lru_cache(maxsize=N) instead of an unbounded dict, weakref / "
             .. "WeakValueDictionary for caches of live objects, store loss.item() not loss, "
             .. "del per-step references.",
             "先找到增长的分配点再设上限：`memray attach --aggregate -o grow.bin {pid}`（非交互；"
             .. "再 `memray flamegraph grow.bin`），或在代码里 tracemalloc.start(25)，相隔几分钟取两次快照"
             .. "比较（snap2.compare_to(snap1, 'traceback')[:10]）。然后：无上限 dict 改为 "
             .. "functools.lru_cache(maxsize=N)；活对象缓存用 weakref / WeakValueDictionary；记录 "
             .. "loss.item() 而不是 loss；及时 del 每步的引用。", { pid = pid }),
    verify = tr("`sopctl run --pid {pid} --duration 10` twice, minutes apart: RSS growth below "
                  .. "{growth_floor_mb_per_s:%g} MiB/s and VmHWM no longer rising.",
                "相隔几分钟两次 `sopctl run --pid {pid} --duration 10`：RSS 增长低于 "
                  .. "{growth_floor_mb_per_s:%g} MiB/s，VmHWM 不再上升。",
                { pid = pid, growth_floor_mb_per_s = th.growth_floor_mb_per_s }),
  }
end

local SEV_RANK = { high = 0, warn = 1, info = 2 }

-- A mem.growth hit on the trend across watch windows alone (this window too short, or its
-- growth below what one window can tell from noise).
local function trend_hit(ev, th, p, t)
  local advice = growth_advice(ev.pid, th)
  return hit(with_census({
    severity = t.sev,
    symptom = tr("Anonymous memory grows steadily across watch windows: {rate:%+.2f} MiB/min",
                 "匿名内存跨 watch 窗口持续增长：{rate:%+.2f} MiB/分钟", { rate = 60 * t.rate / 1024 }),
    evidence = tr("RSS {rss}; anonymous + shared {anon}{trend}.", "RSS {rss}；匿名 + 共享内存 {anon}{trend}。",
                  { rss = kb(p.rss_kb or 0), anon = kb((p.anon_kb or 0) + (p.shmem_kb or 0)), trend = t.text }),
    cause = advice.cause, fix = advice.fix,
    verify = tr("`sopctl watch --pid {pid} --every 60 --duration 2` for {n} windows or more: anonymous memory "
                  .. "no longer rising between windows.",
                "`sopctl watch --pid {pid} --every 60 --duration 2` 观察 {n} 个以上窗口：匿名内存在窗口之间不再上涨。",
                { pid = ev.pid, n = th.growth_watch_windows }),
    refs = GROWTH_REFS,
  }, census.view(ev, th)))
end

rule {
  id = "mem.growth", section = "2.2", severity = "warn",
  title = T("Resident memory grows steadily over the window or across watch windows (a leak or an unbounded cache)",
            "常驻内存在窗口内或跨 watch 窗口持续增长（泄漏或无上限缓存）"),
  reads = { "duration_s", "proc.rss_kb", "proc.vm_hwm_kb", "proc.rss_growth_kb_per_s", "proc.age_s",
            "proc.mem.anon_kb", "proc.mem.shmem_kb", "proc.mem.file_kb", "proc.mem.anon_growth_kb_per_s",
            "proc.mem.shmem_growth_kb_per_s", "proc.mem.file_growth_kb_per_s", "proc.mem.mapped",
            "cgroup.memory.limit_kb", "cgroup.memory.usage_kb", "host.mem_available_kb",
            "python.threads[].window.top_stacks", "python.heap", "alive", "pid",
            "python.threads[].window.samples", "sampling.anon_trace_kb", "python.threads[].window.import_frac",
            "python.threads[].window.dist", "proc.anon_kb", "proc.shmem_kb", "watch.history",
            "watch.history[].at_s", "watch.history[].anon_kb", "watch.history[].shmem_kb" },
  uses = { "data_file_min_mb", "growth_min_window_s", "growth_floor_mb_per_s", "growth_min_pct", "growth_hwm_slack_pct",
           "growth_high_s", "growth_warn_rss_mb", "growth_warn_s", "growth_young_s", "load_rate_mb_per_s",
           "load_young_s", "load_stack_pct", "heap_python_pct", "growth_step_pct", "growth_steady_pct",
           "growth_persist_pct", "growth_steady_warn_s", "growth_import_pct", "growth_watch_windows",
           "growth_watch_min_mb" },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    -- In a watch, the trend across its windows: a steady climb slower than one window can
    -- tell from noise (or in windows too short to judge) is a leak once it persists.
    local trend = judge_trend(ev, th, p)
    local by_trend = trend and trend.sev and function() return trend_hit(ev, th, p, trend) end
    local d = ev.duration_s or 0
    if not common.window_at_least(ev, th.growth_min_window_s) or not p.rss_growth_kb_per_s then
      if by_trend then return by_trend() end
      return unknown(tr("window {d:%.1f} s: growth needs a window of at least {growth_min_window_s:%g} s (--duration)",
                        "窗口 {d:%.1f} 秒：判断增长至少需要 {growth_min_window_s:%g} 秒窗口（--duration）",
                        { d = d, growth_min_window_s = th.growth_min_window_s }))
    end
    if not p.rss_kb then return unknown(T("RSS not readable", "读不到 RSS")) end
    -- By kind (proc.mem): anonymous and shared memory cannot be reclaimed, only swapped; the
    -- file-backed part is page cache of mapped files (np.memmap, safetensors, mmap=True loads)
    -- that the kernel drops under pressure: its growth is no leak. Judge anon + shmem when known.
    local m = p.mem
    local by_kind = m and m.anon_growth_kb_per_s and m.anon_kb
    local rate, base = p.rss_growth_kb_per_s, p.rss_kb -- kB/s, kB
    local file = T("", "")
    if by_kind then
      rate = m.anon_growth_kb_per_s + (m.shmem_growth_kb_per_s or 0)
      base = m.anon_kb + (m.shmem_kb or 0)
      local fr = m.file_growth_kb_per_s or 0
      local maps_en, maps_zh, nmaps = common.mapped_text(ev, th.data_file_min_mb * 1024, 2)
      file = tr("; file-backed {file_kb} {mib:%+.1f} MiB/s (page cache of mapped files: reclaimable, not a leak){maps}",
                "；文件映射 {file_kb} {mib:%+.1f} MiB/s（映射文件的 page cache：可回收，不是泄漏）{maps}",
                { file_kb = kb(m.file_kb or 0), mib = fr / 1024,
                  maps = nmaps > 0 and T("; mapped: " .. maps_en, "；映射：" .. maps_zh) or T("", "") })
    end
    local gained = rate * d
    local gpct = percent(gained, math.max(base, 1))
    local summary
    if by_kind then
      summary = tr("RSS {rss}; anonymous + shared {base}, {mib:%+.1f} MiB/s over {secs:%.1f} s ({gpct:%+.1f}%){file}",
                   "RSS {rss}；匿名 + 共享内存 {base}，{secs:%.1f} 秒内 {mib:%+.1f} MiB/s（{gpct:%+.1f}%）{file}",
                   { rss = kb(p.rss_kb), base = kb(base), mib = rate / 1024, secs = d, gpct = gpct, file = file })
    else
      summary = tr("RSS {rss}, {mib:%+.1f} MiB/s over {secs:%.1f} s ({gpct:%+.1f}% of RSS)",
                   "RSS {rss}，{secs:%.1f} 秒内 {mib:%+.1f} MiB/s（占 RSS 的 {gpct:%+.1f}%）",
                   { rss = kb(p.rss_kb), mib = rate / 1024, secs = d, gpct = gpct })
    end
    if rate / 1024 < th.growth_floor_mb_per_s or gpct < th.growth_min_pct then
      if by_trend then return by_trend() end
      return clear(tr("{summary} (needs >= {growth_floor_mb_per_s:%g} MiB/s and >= {growth_min_pct:%g}%){trend}",
                      "{summary}（阈值：>= {growth_floor_mb_per_s:%g} MiB/s 且 >= {growth_min_pct:%g}%）{trend}",
                      { summary = summary, growth_floor_mb_per_s = th.growth_floor_mb_per_s,
                        growth_min_pct = th.growth_min_pct, trend = trend and trend.text or T("", "") }))
    end
    -- Steady: the RSS is at its high-water mark, not a sawtooth below an earlier peak (when the
    -- gap below the peak could be file pages dropped, the peak says nothing about the heap).
    local gap = p.vm_hwm_kb and p.vm_hwm_kb - p.rss_kb
    if p.vm_hwm_kb and p.rss_kb < p.vm_hwm_kb * (1 - th.growth_hwm_slack_pct / 100)
       and not (by_kind and (m.file_kb or 0) >= gap) then
      if by_trend then return by_trend() end
      return clear(tr("{summary}; but below its earlier peak VmHWM {vm_hwm_kb}: memory goes up and down, not a "
                        .. "steady climb",
                      "{summary}；但低于之前的峰值 VmHWM {vm_hwm_kb}：内存有升有降，不是持续上涨",
                      { summary = summary, vm_hwm_kb = kb(p.vm_hwm_kb) }))
    end
    local frac = loading_share(ev)
    if p.age_s and p.age_s <= th.load_young_s and frac and 100 * frac >= th.load_stack_pct then
      if by_trend then return by_trend() end
      return clear(tr("{summary}; the process is {age_s:%.0f} s old and {frac_pct:%.0f}% of its samples are in "
                        .. "loading code: start-up loading, see mem.load_at_start",
                      "{summary}；进程启动 {age_s:%.0f} 秒且 {frac_pct:%.0f}% 的采样在加载代码里：属于启动期加载，见 mem.load_at_start",
                      { summary = summary, age_s = p.age_s, frac_pct = 100 * frac }))
    end
    -- Time left at this rate.
    local left, time_left = time_to_limit(ev, p, rate)
    -- Persistence: how the rise was spread over the window (the target's anonymous memory traced
    -- while it was sampled). A step -- most of the rise in one twelfth: a model built, workers
    -- forked, a batch or a file loaded -- is no climb, whatever its rate: info. A steady climb
    -- that still holds in the window's last third is a leak whatever the process's size or age.
    local shape = growth_shape(ev)
    local step = shape and shape.step_pct >= th.growth_step_pct
    local steady = shape and not step and shape.rising_pct >= th.growth_steady_pct
                   and shape.last_pct >= th.growth_persist_pct
    local shape_s = T("", "")
    if shape then
      shape_s = tr("; over the window the anonymous memory rose in {rising:%.0f}% of its twelfths, the largest "
                     .. "holding {step:%.0f}% of the rise, the last third at {last:%.0f}% of the mean rate ({what_en})",
                   "；窗口内匿名内存在 {rising:%.0f}% 的十二分段里上涨，最大一段占涨幅的 {step:%.0f}%，最后三分之一的速率为"
                     .. "平均的 {last:%.0f}%（{what_zh}）",
                   { rising = shape.rising_pct, step = shape.step_pct, last = shape.last_pct,
                     what_en = step and "a step, not a climb" or steady and "steady" or "uneven",
                     what_zh = step and "一次性跳升而非持续上涨" or steady and "持续" or "不均匀" })
    end
    -- Start-up: a young process still importing builds its modules, models and pools once; its
    -- growth says nothing about a trend yet.
    local importing = 0
    for _, t in ipairs(ev.python and ev.python.threads or {}) do
      local f = t.window and t.window.import_frac
      if f and f > importing then importing = f end
    end
    local starting = p.age_s and p.age_s < th.growth_young_s and 100 * importing >= th.growth_import_pct
    if starting then
      shape_s = tr("{shape_s}; the process is {age:%.0f} s old and still importing ({pct:%.0f}% of a thread's "
                     .. "samples): start-up, not yet a trend",
                   "{shape_s}；进程启动 {age:%.0f} 秒且仍在 import（某线程 {pct:%.0f}% 的样本）：属于启动期，尚不构成趋势",
                   { shape_s = shape_s, age = p.age_s, pct = 100 * importing })
    end
    -- A young process's caches and pools fill as steadily as a leak grows (a bounded cache
    -- filling looks the same in one window): info until it is past start-up, unless the limit
    -- is near.
    local young = p.age_s and p.age_s < th.growth_young_s
    if steady and young then
      shape_s = tr("{shape_s}; the process is {age:%.0f} s old: caches and pools filling at start look the "
                     .. "same, judged again after {growth_young_s:%g} s",
                   "{shape_s}；进程仅启动 {age:%.0f} 秒：启动期缓存和池的填充看起来一样，{growth_young_s:%g} 秒后再判断",
                   { shape_s = shape_s, age = p.age_s, growth_young_s = th.growth_young_s })
    end
    local pid = ev.pid
    local sev
    if step or starting then
      sev = "info"
    elseif left and left <= th.growth_high_s then
      sev = "high"
    elseif left and left <= th.growth_warn_s then
      -- the limit within the hour (issue 38: severity from the projection, whatever the load did to the
      -- window's shape): a steady climb of a process past start-up is high; any other warn, but a young
      -- process's start-up allocations stay info unless it holds growth_warn_rss_mb or grows as fast as
      -- a load does (load_rate_mb_per_s)
      if steady and not young then
        sev = "high"
      elseif not young or base >= 1024 * th.growth_warn_rss_mb or rate >= 1024 * th.load_rate_mb_per_s then
        sev = "warn"
      else
        sev = "info"
      end
    elseif steady and left and left <= th.growth_steady_warn_s and not young then
      sev = "warn"
    elseif (base >= 1024 * th.growth_warn_rss_mb or (left and left <= th.growth_warn_s)) and not young then
      -- Without a steady trace, a small process whose growth would take hours to matter is
      -- warming up as often as it leaks, and a young one (imports, model build, pools and caches
      -- filling) grows as a leak does: info then, unless the limit is near.
      sev = "warn"
    else
      sev = "info"
    end
    if trend then -- across watch windows: at least what the trend says
      if trend.sev and SEV_RANK[trend.sev] < SEV_RANK[sev] then sev = trend.sev end
      shape_s = tr("{shape_s}{trend}", "{shape_s}{trend}", { shape_s = shape_s, trend = trend.text })
    end
    local advice = growth_advice(pid, th)
    return hit(with_census({
      severity = sev,
      symptom = step and tr("{what_en} rose in one step: {rate:%+.1f} MiB/s over the window",
                            "{what_zh}一次性跳升：窗口内 {rate:%+.1f} MiB/s",
                            { what_en = by_kind and "Anonymous memory" or "Memory", rate = rate / 1024,
                              what_zh = by_kind and "匿名内存" or "内存" })
                or tr("{what_en} grows steadily: {rate:%+.1f} MiB/s",
                      "{what_zh}持续增长：{rate:%+.1f} MiB/s",
                      { what_en = by_kind and "Anonymous memory" or "Memory", rate = rate / 1024,
                        what_zh = by_kind and "匿名内存" or "内存" }),
      evidence = tr("{summary}; RSS at its peak (VmHWM {rss_kb}){time_left}{shape_s}.",
                    "{summary}；RSS 处于峰值（VmHWM {rss_kb}）{time_left}{shape_s}。",
                    { summary = summary, rss_kb = kb(p.vm_hwm_kb or p.rss_kb), time_left = time_left,
                      shape_s = shape_s }),
      cause = advice.cause, fix = advice.fix, verify = advice.verify,
      refs = GROWTH_REFS,
    }, census.view(ev, th)))
  end,
}

-- Same program: same comm and the same command line once numbers (ranks, fds, ports) are blanked.
local function program_of(x)
  return (x.comm or "?") .. "\0" .. ((x.cmdline or ""):gsub("%d+", "#"))
end

-- The largest group of similar big copies among `list` (items with private_kb): list, total.
local function similar_big(list, th)
  local min_kb = th.sib_min_mb * 1024
  local big = {}
  for _, c in ipairs(list) do
    if c.private_kb and c.private_kb >= min_kb then big[#big + 1] = c end
  end
  table.sort(big, function(a, b) return a.private_kb > b.private_kb end)
  local best = {}
  for i = 1, #big do  -- each as the largest of a group: those within sib_similar_pct below it
    local grp = { big[i] }
    for j = i + 1, #big do
      if big[j].private_kb >= big[i].private_kb * (1 - th.sib_similar_pct / 100) then
        grp[#grp + 1] = big[j]
      end
    end
    if #grp > #best then best = grp end
  end
  return best
end

-- The private memory a fresh process of the target's program holds before it loads any data:
-- the interpreter's heap and the mapped libraries' own pages (torch's import alone builds ~100+ MiB
-- of them; a CUDA context more), from the libraries the target maps. Ranks and workers of the same
-- program have it each; it is runtime, not a duplicated dataset.
local function runtime_kb(ev, th)
  local kb, torch, cuda = th.sib_runtime_mb * 1024, false, false
  for _, l in ipairs(ev.proc and ev.proc.libs or {}) do
    torch = torch or l.kind == "torch"
    cuda = cuda or l.kind == "cuda"
  end
  if torch then kb = kb + th.sib_runtime_torch_mb * 1024 end
  if cuda then kb = kb + th.sib_runtime_cuda_mb * 1024 end
  return kb, torch, cuda
end

-- A copy of process x whose private_kb is its data: its private anonymous memory (private pages
-- of mapped libraries are code and relocations) beyond the runtime every such process holds.
local function as_data(x, rt)
  local priv = x.private_kb
  if x.anon_kb and x.anon_kb < priv then priv = x.anon_kb end
  return { pid = x.pid, comm = x.comm, cmdline = x.cmdline, total_kb = x.private_kb,
           private_kb = math.max(0, priv - rt) }
end

local SIB_REFS = {
  "https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler",
  "https://docs.python.org/3/library/multiprocessing.shared_memory.html",
  "https://numpy.org/doc/stable/reference/generated/numpy.load.html",
}

rule {
  id = "mem.siblings_full_copy", section = "2.2", severity = "warn",
  doc = [[Hit when at least sib_min_count workers of the target, or the target and its same-program siblings (ranks
    of one launcher), each hold at least sib_min_mb MiB of data, within sib_similar_pct of each other. Data is a
    process's private anonymous memory beyond the runtime any fresh interpreter with the same libraries holds
    (sib_runtime_mb, plus sib_runtime_torch_mb when torch is mapped, plus sib_runtime_cuda_mb with CUDA): a plain
    torchrun rank's own interpreter and torch are not a duplicated dataset. Forked workers holding no more than
    sib_own_ratio x the parent's anon memory are inherited pages (mem.fork_cow).]],
  title = T("Several workers or ranks each hold a similar, large private copy of the data "
            .. "(every rank loads the full dataset)",
            "多个 worker 或 rank 各自持有相近的大块私有数据（每个 rank 都加载了完整数据集）"),
  reads = { "children[].private_kb", "children[].cmdline", "children[].comm", "proc.private_kb",
            "proc.anon_kb", "proc.cmdline", "parent.cmdline", "parent.anon_kb", "siblings[].private_kb",
            "siblings[].cmdline", "siblings[].comm", "cgroup.memory.limit_kb", "host.mem_total_kb", "alive",
            "children[].pid", "parent.comm", "parent.pid", "parent.rss_kb", "pid", "proc.comm", "proc.ppid",
            "proc.rss_kb", "siblings[].pid", "children[].anon_kb", "siblings[].anon_kb", "proc.libs[].kind" },
  uses = { "sib_min_mb", "sib_min_count", "sib_similar_pct", "sib_own_ratio", "rss_limit_pct",
           "sib_runtime_mb", "sib_runtime_torch_mb", "sib_runtime_cuda_mb" },
  cause = T("Each process built its own full copy of the same data (SOP §2.2 row 4, 'every rank "
            .. "blows up'): the memory is private to each of them, not inherited from a parent "
            .. "(that would be shared or copy-on-write, mem.fork_cow), so the total grows with "
            .. "the number of ranks/workers.",
            "每个进程都各自构建了同一份完整数据（SOP §2.2 第 4 行“多 rank 训练每个 rank 都爆”）：内存是"
            .. "各自私有的，不是从父进程继承的（那会是共享页或写时复制，见 mem.fork_cow），总量随 rank/"
            .. "worker 数线性增长。"),
  fix = T("Give each rank only its shard: torch.utils.data.distributed.DistributedSampler "
          .. "(or shard files per rank: webdataset / split by rank), and load lazily in "
          .. "__getitem__; data every process needs whole goes in one read-only copy: "
          .. "np.load(path, mmap_mode='r') (the page cache is shared by all processes) or "
          .. "multiprocessing.shared_memory created once by the launcher.",
          "每个 rank 只读自己的分片：torch.utils.data.distributed.DistributedSampler（或按 rank 切分"
          .. "文件：webdataset / 按 rank 分片），在 __getitem__ 里按需读取；所有进程都要的完整数据只保留"
          .. "一份只读副本：np.load(path, mmap_mode='r')（page cache 由所有进程共享）或由启动进程创建一次 "
          .. "multiprocessing.shared_memory。"),
  refs = SIB_REFS,
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    -- (1) the target's workers. Forked ones count only beyond what they could have inherited.
    local parent_kb = p.anon_kb or p.rss_kb or 0
    local rt, rt_torch, rt_cuda = runtime_kb(ev, th)
    local cands, inherited = {}, 0
    for _, c in ipairs(ev.children or {}) do
      if c.private_kb then
        if forked_from(c, p) and c.private_kb <= th.sib_own_ratio * parent_kb then
          inherited = inherited + 1
        else
          cands[#cands + 1] = as_data(c, rt)
        end
      end
    end
    local grp = similar_big(cands, th)
    local role = tr("workers of pid {pid:%s}", "pid {pid} 的 worker", { pid = ev.pid })
    -- (2) the target is one of several ranks under one launcher: it and its same-program siblings.
    if #grp < th.sib_min_count and ev.siblings and p.private_kb then
      local me = { pid = ev.pid, comm = p.comm, cmdline = p.cmdline, private_kb = p.private_kb,
                   anon_kb = p.anon_kb }
      local par = ev.parent
      local own_ok = not (par and forked_from(me, par))
                     or p.private_kb > th.sib_own_ratio * (par.anon_kb or par.rss_kb or 0)
      if own_ok then
        local peers = { as_data(me, rt) }
        for _, s in ipairs(ev.siblings) do
          if s.private_kb and program_of(s) == program_of(me)
              and not (par and forked_from(s, par) and s.private_kb <= th.sib_own_ratio * (par.anon_kb or 0)) then
            peers[#peers + 1] = as_data(s, rt)
          end
        end
        local g2 = similar_big(peers, th)
        local has_me = false
        for _, x in ipairs(g2) do if x.pid == ev.pid then has_me = true end end
        if has_me and #g2 >= th.sib_min_count then
          grp = g2
          role = tr("pid {pid} and its sibling processes under parent pid {ppid} ({comm:%s})",
                    "pid {pid} 及其同一父进程 pid {ppid}（{comm:%s}）下的兄弟进程",
                    { pid = ev.pid, ppid = par and par.pid or p.ppid or 0, comm = par and par.comm or "?" })
        end
      end
    end
    if #grp < th.sib_min_count then
      local rt_en = (rt_torch and " + torch" or "") .. (rt_cuda and " + CUDA" or "")
      local en = fmt("%d workers, %d siblings: fewer than %g similar processes with >= %g MiB private "
                     .. "memory each beyond the %s a fresh interpreter%s holds", #(ev.children or {}),
                     ev.siblings and #ev.siblings or 0, th.sib_min_count, th.sib_min_mb, kb(rt), rt_en)
      local zh = fmt("%d 个 worker、%d 个兄弟进程：除去新启动的解释器%s本身就有的 %s 之外，私有内存各 >= %g MiB "
                     .. "且相近的进程不足 %g 个", #(ev.children or {}), ev.siblings and #ev.siblings or 0,
                     rt_en, kb(rt), th.sib_min_mb, th.sib_min_count)
      if inherited > 0 then
        en = en .. fmt("; %d forked workers hold no more than the parent's memory (inherited pages: "
                       .. "mem.fork_cow)", inherited)
        zh = zh .. fmt("；%d 个 fork 的 worker 私有内存不超过父进程（继承的页：mem.fork_cow）", inherited)
      end
      if not ev.children and not ev.siblings then
        return unknown(T("neither workers nor sibling processes were read", "没有读到 worker 或兄弟进程"))
      end
      return clear(T(en, zh))
    end
    local sum, list = 0, {}
    for i, c in ipairs(grp) do
      sum = sum + c.total_kb
      if i <= 8 then list[#list + 1] = fmt("pid %d %s", c.pid, kb(c.total_kb)) end
    end
    local lim, lim_en, lim_zh, is_cg = limit_of(ev)
    local share = lim and percent(sum, lim)
    return hit {
      severity = (is_cg and share >= th.rss_limit_pct) and "high" or "warn",
      symptom = tr("{n_grp} processes each hold about {private_kb} of private memory",
                   "{n_grp} 个进程各自持有约 {private_kb} 私有内存",
                   { n_grp = #grp, private_kb = kb(grp[#grp].total_kb) }),
      evidence = tr("{role}: private (unshared) memory {list_en}, each at least {data} beyond the {rt} a fresh "
                      .. "interpreter with the same libraries holds; together {sum}{of_limit}.",
                    "{role}：私有（未共享）内存 {list_zh}，每个都比同样库的新解释器本身的 {rt} 多出至少 {data}；"
                      .. "合计 {sum}{of_limit}。",
                    { role = role, list_en = table.concat(list, ", "), sum = kb(sum), rt = kb(rt),
                      data = kb(grp[#grp].private_kb),
                      list_zh = table.concat(list, "，"),
                      of_limit = share and tr(" = {share:%.0f}% of {lim:%s}", " = {lim:%s}的 {share:%.0f}%",
                                              { share = share, lim = T(lim_en, lim_zh) }) or T("", "") }),
      verify = tr("`sopctl run --pid {pid}`: each process's private memory drops to about 1/{n_grp} of the dataset "
                    .. "(or the data moves to shared/file-backed pages), and the total stops scaling with the process "
                    .. "count.",
                  "`sopctl run --pid {pid}`：每个进程的私有内存降到数据集的约 1/{n_grp}（或数据转为共享/文件页），总量不再随进程数增长。",
                  { pid = ev.pid, n_grp = #grp }),
    }
  end,
}

local PIN_REFS = {
  "https://pytorch.org/docs/stable/data.html#memory-pinning",
  "https://man7.org/linux/man-pages/man2/mlock.2.html",
  "https://docs.kernel.org/filesystems/proc.html",
}

rule {
  id = "mem.pinned", section = "2.2", severity = "warn",
  title = T("Locked / pinned memory is a large share of RSS or of the memory limit "
            .. "(\"free is enough but still OOM\")",
            "锁定/pinned 内存占 RSS 或内存上限的很大比例（“free 够但还 OOM”）"),
  reads = { "proc.vm_lck_kb", "proc.vm_pin_kb", "proc.smaps.locked_kb", "proc.rss_kb",
            "proc.memlock_limit_kb", "cgroup.memory.limit_kb", "host.mem_total_kb", "host.mlocked_kb",
            "alive", "pid" },
  uses = { "pinned_min_mb", "pinned_rss_pct", "pinned_limit_pct" },
  cause = T("Locked (mlock) or pinned (page-locked for DMA: DataLoader pin_memory=True, CUDA "
            .. "host allocations, RDMA registrations) pages count in RSS and the memory "
            .. "cgroup but can be neither reclaimed nor swapped (SOP §2.2 row 6, 'free is "
            .. "enough but still OOM'): the kernel OOM-kills once the unlockable rest no "
            .. "longer fits.",
            "被锁定（mlock）或 pinned（为 DMA 锁页：DataLoader pin_memory=True、CUDA 主机内存、RDMA "
            .. "注册）的页计入 RSS 和内存 cgroup，但既不能回收也不能换出（SOP §2.2 第 6 行“free 够但还 "
            .. "OOM”）：剩下可回收的部分放不下时内核就会 OOM kill。"),
  fix = T("Bound what is pinned: DataLoader pins num_workers x prefetch_factor batches when "
          .. "pin_memory=True; lower prefetch_factor, or pin only in the training process "
          .. "(pin_memory=False with .pin_memory() on the batch you send to the GPU); free "
          .. "pinned staging buffers you no longer use (torch.cuda.empty_cache() releases "
          .. "the caching host allocator's blocks); remove mlock/mlockall calls or cap them "
          .. "with `ulimit -l` (RLIMIT_MEMLOCK).",
          "限制 pinned 总量：pin_memory=True 时 DataLoader 会 pin num_workers x prefetch_factor 个 "
          .. "batch；调小 prefetch_factor，或只在训练进程里 pin（pin_memory=False，对要送 GPU 的 batch "
          .. "调用 .pin_memory()）；释放不再用的 pinned 中转缓冲（torch.cuda.empty_cache() 会释放缓存的"
          .. "主机内存块）；去掉 mlock/mlockall，或用 `ulimit -l`（RLIMIT_MEMLOCK）限制。"),
  refs = PIN_REFS,
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local lck, pin = p.vm_lck_kb, p.vm_pin_kb
    local sm = p.smaps and p.smaps.locked_kb
    if not lck and not pin and not sm then
      return unknown(T("VmLck/VmPin/Locked not readable", "读不到 VmLck/VmPin/Locked"))
    end
    local locked = math.max(lck or 0, pin or 0, sm or 0)
    local rss = p.rss_kb
    local lim, lim_en, lim_zh = limit_of(ev)
    local rpct = rss and rss > 0 and percent(locked, rss) or 0
    local lpct = lim and percent(locked, lim) or 0
    local en = fmt("VmLck %s, VmPin %s, smaps Locked %s; RSS %s (%.0f%% locked)",
                   lck and kb(lck) or "?", pin and kb(pin) or "?", sm and kb(sm) or "?",
                   rss and kb(rss) or "?", rpct)
    local zh = fmt("VmLck %s，VmPin %s，smaps Locked %s；RSS %s（%.0f%% 被锁定）",
                   lck and kb(lck) or "?", pin and kb(pin) or "?", sm and kb(sm) or "?",
                   rss and kb(rss) or "?", rpct)
    if lim then
      en = en .. fmt("; %.0f%% of %s", lpct, lim_en)
      zh = zh .. fmt("；占%s的 %.0f%%", lim_zh, lpct)
    end
    if locked < th.pinned_min_mb * 1024 or (rpct < th.pinned_rss_pct and lpct < th.pinned_limit_pct) then
      return clear(tr("{en:%s} (needs >= {pinned_min_mb:%g} MiB and >= {pinned_rss_pct:%g}% of RSS or >= "
                        .. "{pinned_limit_pct:%g}% of the limit)",
                      "{zh:%s}（阈值：>= {pinned_min_mb:%g} MiB，且 >= RSS 的 {pinned_rss_pct:%g}% 或 >= 上限的 "
                        .. "{pinned_limit_pct:%g}%）",
                      { en = en, pinned_min_mb = th.pinned_min_mb, pinned_rss_pct = th.pinned_rss_pct,
                        pinned_limit_pct = th.pinned_limit_pct, zh = zh }))
    end
    local host = ev.host
    if host and host.mlocked_kb then
      en = en .. fmt("; host Mlocked %s", kb(host.mlocked_kb))
      zh = zh .. fmt("；整机 Mlocked %s", kb(host.mlocked_kb))
    end
    if p.memlock_limit_kb then
      en = en .. (p.memlock_limit_kb < 0 and "; RLIMIT_MEMLOCK unlimited"
                  or fmt("; RLIMIT_MEMLOCK %s", kb(p.memlock_limit_kb)))
      zh = zh .. (p.memlock_limit_kb < 0 and "；RLIMIT_MEMLOCK 不限"
                  or fmt("；RLIMIT_MEMLOCK %s", kb(p.memlock_limit_kb)))
      if p.memlock_limit_kb >= 0 and (lck or 0) > p.memlock_limit_kb then
        en = en .. " (exceeded: the process has CAP_IPC_LOCK, e.g. runs as root)"
        zh = zh .. "（已超出：进程有 CAP_IPC_LOCK，例如以 root 运行）"
      end
    end
    return hit {
      symptom = tr("{locked} of the process's memory is locked in RAM",
                   "进程有 {locked} 内存被锁定在 RAM 中",
                   { locked = kb(locked) }),
      evidence = T(en .. ".", zh .. "。"),
      verify = tr("`grep -E 'VmLck|VmPin' /proc/{pid}/status` and `sopctl run --pid {pid}` show locked "
                  .. "memory below {pinned_rss_pct:%g}% of RSS.",
                  "`grep -E 'VmLck|VmPin' /proc/{pid}/status` 与 `sopctl run --pid {pid}` 显示锁定内存低于 "
                  .. "RSS 的 {pinned_rss_pct:%g}%。", { pid = ev.pid, pinned_rss_pct = th.pinned_rss_pct }),
    }
  end,
}
