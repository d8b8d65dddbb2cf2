-- plugins/memory.lua — SOP §2.2 (memory near the cgroup limit or the host out of RAM) and §2.4
-- (fork copy-on-write growth of workers). Reads ev.proc, ev.children, ev.cgroup.memory and
-- ev.host. Thresholds: rss_limit_pct, host_avail_min_pct, host_share_pct, cow_*.

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
  title = T("the job (target + workers) is close to its cgroup memory limit, or the host is short of memory "
            .. "because of it",
            "作业（目标进程 + worker）接近 cgroup 内存上限，或主机因它而内存紧张"),
  doc = [[Hit (high) when target + workers (PSS, else RSS) reach rss_limit_pct of the cgroup memory limit; warn when the
    cgroup usage reaches that with limit hits; or when host MemAvailable is below host_avail_min_pct of RAM while
    the job holds at least host_share_pct of it. Unknown with no limit and no host memory figures.]],
  reads = { "proc.rss_kb", "proc.smaps.pss_kb", "children[].pss_kb", "children[].rss_kb", "cgroup.memory.limit_kb",
            "cgroup.memory.usage_kb", "cgroup.memory.events", "host.mem_total_kb", "host.mem_available_kb" },
  uses = { "rss_limit_pct", "host_avail_min_pct", "host_share_pct" },
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
      local ctx_en = fmt("memory of %s %s (%s) = %.0f%% of the memory limit %s set on cgroup %s",
                         who_en, kb(used), kind, lpct, kb(lim), where)
      local ctx_zh = fmt("%s占用 %s（%s）= cgroup %s 内存上限 %s 的 %.0f%%", who_zh, kb(used),
                         kind, where, kb(lim), lpct)
      local extra_en, extra_zh = "", ""
      if mem.usage_kb then
        extra_en = fmt("; cgroup usage incl. page cache %s (%.0f%%)", kb(mem.usage_kb),
                       percent(mem.usage_kb, lim))
        extra_zh = fmt("；cgroup 用量（含 page cache）%s（%.0f%%）", kb(mem.usage_kb),
                       percent(mem.usage_kb, lim))
      end
      local ev_ = mem.events or {}
      local pressure = (ev_.max or 0) + (ev_.high or 0) + (ev_.oom or 0) + (mem.failcnt or 0)
      if pressure > 0 then
        extra_en = extra_en .. fmt("; limit hits: max %d, high %d, oom %d, failcnt %d",
                                   ev_.max or 0, ev_.high or 0, ev_.oom or 0, mem.failcnt or 0)
        extra_zh = extra_zh .. fmt("；触顶次数：max %d，high %d，oom %d，failcnt %d",
                                   ev_.max or 0, ev_.high or 0, ev_.oom or 0, mem.failcnt or 0)
      end
      if lpct >= th.rss_limit_pct then
        return hit {
          symptom = T(fmt("Memory at %.0f%% of the cgroup limit", lpct),
                      fmt("内存已达 cgroup 上限的 %.0f%%", lpct)),
          evidence = T(ctx_en .. extra_en .. ".", ctx_zh .. extra_zh .. "。"),
          cause = T(fmt("Anonymous memory of the job fills the cgroup limit (>= %g%%): the next "
                        .. "allocation burst makes the kernel reclaim page cache and then "
                        .. "OOM-kill a task in the cgroup.", th.rss_limit_pct),
                    fmt("作业的匿名内存占满了 cgroup 上限（>= %g%%）：下一次分配高峰会让内核先回收 "
                        .. "page cache，然后在该 cgroup 内 OOM 杀进程。", th.rss_limit_pct)),
          fix = MEM_FIX,
          verify = T(fmt("`sopctl run --pid %d` over a full epoch shows the tree below %g%% of "
                         .. "the limit and the cgroup's oom/max events stop growing.", ev.pid,
                         th.rss_limit_pct),
                     fmt("完整跑一个 epoch，`sopctl run --pid %d` 显示进程树低于上限的 %g%%，"
                         .. "cgroup 的 oom/max 事件不再增长。", ev.pid, th.rss_limit_pct)),
          refs = MEM_REFS,
        }
      end
      local upct = mem.usage_kb and percent(mem.usage_kb, lim)
      if upct and upct >= th.rss_limit_pct and pressure > 0 then
        return hit {
          severity = "warn",
          symptom = T(fmt("Memory cgroup usage at %.0f%% of its limit, with reclaim at the limit",
                          upct),
                      fmt("内存 cgroup 用量达上限的 %.0f%%，且已在上限处回收", upct)),
          evidence = T(ctx_en .. extra_en .. ".", ctx_zh .. extra_zh .. "。"),
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
        }
      end
      notes_en[#notes_en + 1] = ctx_en .. extra_en
      notes_zh[#notes_zh + 1] = ctx_zh .. extra_zh
    else
      notes_en[#notes_en + 1] = fmt("no memory limit on cgroup %s", ev.cgroup and ev.cgroup.path or "?")
      notes_zh[#notes_zh + 1] = fmt("cgroup %s 没有内存上限", ev.cgroup and ev.cgroup.path or "?")
    end

    if total and avail and total > 0 then
      local apct, share = percent(avail, total), percent(used, total)
      local ctx_en = fmt("host MemAvailable %s of %s (%.1f%%); memory of %s %s (%s) = %.0f%% of RAM",
                         kb(avail), kb(total), apct, who_en, kb(used), kind, share)
      local ctx_zh = fmt("整机 MemAvailable %s / %s（%.1f%%）；%s占用 %s（%s）= 内存的 %.0f%%",
                         kb(avail), kb(total), apct, who_zh, kb(used), kind, share)
      if host.swap_total_kb and host.swap_total_kb > 0 and host.swap_free_kb then
        ctx_en = ctx_en .. fmt("; swap free %s of %s", kb(host.swap_free_kb), kb(host.swap_total_kb))
        ctx_zh = ctx_zh .. fmt("；swap 剩余 %s / %s", kb(host.swap_free_kb), kb(host.swap_total_kb))
      end
      if apct < th.host_avail_min_pct and share >= th.host_share_pct then
        return hit {
          symptom = T(fmt("Host RAM nearly exhausted (%.1f%% available), mostly by this job", apct),
                      fmt("整机内存几乎耗尽（仅剩 %.1f%%），主要被本作业占用", apct)),
          evidence = T(ctx_en .. ".", ctx_zh .. "。"),
          cause = T(fmt("The job holds %.0f%% of RAM and less than %g%% is available: the host "
                        .. "OOM killer picks the largest process next.", share,
                        th.host_avail_min_pct),
                    fmt("作业占用内存的 %.0f%%，可用内存不足 %g%%：整机 OOM killer 下一个就会挑最大的进程。",
                        share, th.host_avail_min_pct)),
          fix = MEM_FIX,
          verify = T(fmt("`free -g` and `sopctl run --pid %d` show MemAvailable above %g%% through an epoch.",
                         ev.pid, th.host_avail_min_pct),
                     fmt("整个 epoch 中 `free -g` 与 `sopctl run --pid %d` 显示 MemAvailable 高于 %g%%。",
                         ev.pid, th.host_avail_min_pct)),
          refs = MEM_REFS,
        }
      end
      notes_en[#notes_en + 1] = ctx_en
      notes_zh[#notes_zh + 1] = ctx_zh
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
  title = T("forked workers copied the parent's memory (copy-on-write bloat)", "fork 出的 worker 复制了父进程内存（写时复制膨胀）"),
  doc = [[Hit when at least cow_min_children forked workers (same command line as the parent) each hold private memory
    of at least cow_child_private_pct of the parent's anon RSS and at least cow_child_min_mb MiB; high when the
    job is near its memory limit (rss_limit_pct). Unknown when the workers' smaps are unreadable.]],
  reads = { "proc.anon_kb", "proc.cmdline", "children[].private_kb", "children[].shared_kb", "children[].cmdline",
            "cgroup.memory.limit_kb" },
  uses = { "cow_child_private_pct", "cow_child_min_mb", "cow_min_children", "rss_limit_pct" },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local parent_kb = p.anon_kb or p.rss_kb
    if not parent_kb then return unknown(T("parent RSS not readable", "读不到父进程 RSS")) end
    local kids = ev.children or {}
    if #kids == 0 then return clear(T("no worker processes", "没有 worker 子进程")) end

    local min_kb = math.max(th.cow_child_min_mb * 1024, parent_kb * th.cow_child_private_pct / 100)
    local forked, spawned, measured, largest = {}, 0, 0, 0
    for _, c in ipairs(kids) do
      if c.private_kb then
        measured = measured + 1
        if c.private_kb > largest then largest = c.private_kb end
        if c.private_kb >= min_kb then
          -- A forked worker keeps the parent's command line; spawn/forkserver/exec change it.
          if (c.cmdline and p.cmdline and c.cmdline == p.cmdline)
              or (not c.cmdline and c.comm == p.comm) then
            forked[#forked + 1] = c
          else
            spawned = spawned + 1
          end
        end
      end
    end
    if measured == 0 then
      return unknown(T(fmt("workers' private memory not readable (smaps_rollup of %d workers)", #kids),
                       fmt("读不到 %d 个 worker 的私有内存（smaps_rollup）", #kids)))
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
    local lim_en, lim_zh = "", ""
    if lim and lim < UNLIMITED_KB then
      local tot = parent_kb + sum
      lim_en = fmt("; parent + copies = %.0f%% of the cgroup memory limit %s", percent(tot, lim), kb(lim))
      lim_zh = fmt("；父进程 + 拷贝 = cgroup 内存上限 %s 的 %.0f%%", kb(lim), percent(tot, lim))
      if percent(tot, lim) >= th.rss_limit_pct then sev = "high" end
    end
    return hit {
      severity = sev,
      symptom = T(fmt("%d forked workers each hold a private copy of the parent's memory", #forked),
                  fmt("%d 个 fork 出的 worker 各自持有父进程内存的私有拷贝", #forked)),
      evidence = T(fmt("Parent pid %d anonymous memory %s; forked workers' private memory: %s; "
                       .. "together %s = %.1f x the parent%s.", ev.pid, kb(parent_kb),
                       table.concat(list_en, ", "), kb(sum), ratio, lim_en),
                   fmt("父进程 pid %d 匿名内存 %s；fork 的 worker 私有内存：%s；合计 %s = 父进程的 %.1f 倍%s。",
                       ev.pid, kb(parent_kb), table.concat(list_zh, "，"), kb(sum), ratio, lim_zh)),
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
      verify = T(fmt("`sopctl run --pid %d`: each worker's private memory falls well below "
                     .. "%g%% of the parent's, and the tree's total PSS is about parent + "
                     .. "the workers' own data.", ev.pid, th.cow_child_private_pct),
                 fmt("`sopctl run --pid %d`：每个 worker 的私有内存远低于父进程的 %g%%，进程树总 PSS "
                     .. "约等于父进程 + worker 自身数据。", ev.pid, th.cow_child_private_pct)),
      refs = COW_REFS,
    }
  end,
}
