-- plugins/runtime.lua — SOP §8, the "hidden" runtime costs: glibc malloc arenas under many
-- threads (8.1), start-up spent importing (8.2), logging in hot paths (8.3), subprocess storms
-- (8.4), thread pools and CPU affinity that do not match the CPUs the job has, threads on one
-- NUMA node with their memory on another (8.5; quota throttling and observed oversubscription are
-- cpu.lua's). Reads ev.alloc, ev.proc (numa too), ev.threads, ev.python.threads[].window
-- (import_/logging_/subprocess_ shares), ev.io_files, ev.host (forks_per_s, numa),
-- ev.cgroup.cpu, ev.effective_cpus.

local common = require "plugins.common"
local T, no_proc = common.T, common.no_proc
local tr = common.tr

-- A stack rule's verdict when no thread has enough samples to judge.
local function few_samples(th)
  return tr("no thread with >= {sampled_min_samples} samples", "没有样本数 >= {sampled_min_samples} 的线程",
            { sampled_min_samples = th.sampled_min_samples })
end

local function frac_pct(x) return 100 * x end


-- The sampled Python threads of the target, or nil and the reason.
local function sampled_threads(ev)
  local py = ev.python
  if not py or not py.threads then
    return nil, common.NO_STACKS
  end
  if not ev.duration_s or ev.duration_s <= 0 then
    return nil, common.NO_WINDOW
  end
  local out = {}
  for _, t in ipairs(py.threads) do
    if t.window and t.window.samples then out[#out + 1] = t end
  end
  if #out == 0 then
    return nil, common.NOT_SAMPLED
  end
  return out
end

-- ---------------------------------------------------------------------------------------------
-- 8.1 glibc malloc arenas

local ALLOC_REFS = {
  "https://www.gnu.org/software/libc/manual/html_node/Memory-Allocation-Tunables.html",
  "https://github.com/jemalloc/jemalloc/blob/dev/TUNING.md",
  "https://pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html",
}

rule {
  id = "alloc.glibc_arenas", section = "8.1", severity = "warn",
  title = T("glibc malloc with many threads: many per-thread arenas hold most of the memory and RSS grows",
            "glibc malloc + 多线程：大量线程 arena 占去大部分内存且 RSS 在涨"),
  reads = { "alloc.allocator", "alloc.malloc_arena_max", "alloc.ld_preload", "alloc.arenas",
            "alloc.arena_rw_kb", "proc.rss_kb", "proc.rss_growth_kb_per_s", "proc.threads", "alive",
            "alloc.source", "duration_s" },
  uses = { "arena_min_count", "arena_share_pct", "arena_min_mb", "arena_growth_kb_per_s" },
  fix = T("Start the process with another allocator, no code change: "
          .. "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 (apt libjemalloc2) or "
          .. "libtcmalloc_minimal.so.4 (apt libtcmalloc-minimal4); or keep glibc and cap its "
          .. "arenas with MALLOC_ARENA_MAX=2 (less fragmentation, some lock contention "
          .. "between threads). Compare peak RSS and step time before and after.",
          "不改代码换分配器启动：LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2（apt libjemalloc2）"
          .. "或 libtcmalloc_minimal.so.4（apt libtcmalloc-minimal4）；或保留 glibc、用 MALLOC_ARENA_MAX=2 "
          .. "限制 arena 数（碎片少，线程间有些锁竞争）。前后对比 RSS 峰值与 step 时间。"),
  refs = ALLOC_REFS,
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local a = ev.alloc
    if not a or not a.allocator then
      return unknown(T("allocator not known (maps not readable)", "分配器未知（读不到 maps）"))
    end
    if a.allocator ~= "glibc" then
      return clear(tr("malloc is {allocator:%s} ({source}), not glibc's ptmalloc",
                      "malloc 是 {allocator:%s}（{source}），不是 glibc ptmalloc",
                      { allocator = a.allocator, source = a.source or "?" }))
    end
    if a.malloc_arena_max then
      return clear(tr("MALLOC_ARENA_MAX={malloc_arena_max} caps the arenas",
                      "MALLOC_ARENA_MAX={malloc_arena_max} 已限制 arena 数", { malloc_arena_max = a.malloc_arena_max }))
    end
    if not a.arenas or not a.arena_rw_kb then
      return unknown(T("arena heaps not counted (maps not readable)", "未统计 arena heap（读不到 maps）"))
    end
    local n, rw = a.arenas, a.arena_rw_kb
    local base = tr("{n} glibc arena heaps (64 MiB each reserved) holding {rw} read-write, {threads} threads",
                    "{n} 个 glibc arena heap（各保留 64 MiB），读写部分共 {rw}，{threads} 个线程",
                    { n = n, rw = kb(rw), threads = p.threads or 0 })
    if n < th.arena_min_count then
      return clear(tr("{base} (< {arena_min_count} arenas)",
                      "{base}（< {arena_min_count} 个 arena）",
                      { base = base, arena_min_count = th.arena_min_count }))
    end
    if not p.rss_kb or p.rss_kb <= 0 then return unknown(T("RSS not measured", "RSS 未测得")) end
    local share = 100 * rw / p.rss_kb
    local growth = p.rss_growth_kb_per_s
    local grew = growth and tr("; RSS grew {growth}/s over the {secs:%.1f} s window",
                               "；{secs:%.1f} 秒窗口内 RSS 每秒增长 {growth}", { growth = kb(growth), secs = ev.duration_s })
                 or T("", "")
    base = tr("{base} = {share:%.0f}% of RSS {rss}{grew}", "{base}，占 RSS {rss} 的 {share:%.0f}%{grew}",
              { base = base, share = share, rss = kb(p.rss_kb), grew = grew })
    if share < th.arena_share_pct or rw < th.arena_min_mb * 1024 then
      return clear(tr("{base}: arenas below {arena_share_pct:%g}% of RSS or {arena_min_mb:%g} MiB",
                      "{base}：arena 低于 RSS 的 {arena_share_pct:%g}% 或 {arena_min_mb:%g} MiB",
                      { base = base, arena_share_pct = th.arena_share_pct, arena_min_mb = th.arena_min_mb }))
    end
    local growing = growth and growth >= th.arena_growth_kb_per_s
    if not growth then
      return unknown(tr("{base}: one snapshot, RSS growth not measured (use --duration 3)",
                        "{base}：只有一次快照，没有 RSS 增长率（用 --duration 3）", { base = base }))
    end
    local sev = growing and "warn" or "info"
    return hit {
      severity = sev,
      symptom = growing and tr("RSS grows {growth}/s with {n} glibc malloc arenas",
                               "RSS 每秒增长 {growth}，glibc malloc arena 有 {n} 个", { growth = kb(growth), n = n })
                or tr("{n} glibc malloc arenas hold {share:%.0f}% of RSS",
                      "{n} 个 glibc malloc arena 占 RSS 的 {share:%.0f}%", { n = n, share = share }),
      evidence = tr("{base}; LD_PRELOAD {ld_preload_en}; MALLOC_ARENA_MAX unset.",
                    "{base}；LD_PRELOAD {ld_preload_zh}；MALLOC_ARENA_MAX 未设置。",
                    { base = base, ld_preload_en = a.ld_preload or "unset", ld_preload_zh = a.ld_preload or "未设置" }),
      cause = tr("glibc's ptmalloc gives threads that allocate at the same time their own arenas "
                 .. "(up to 8 x CPUs); memory freed in one arena is not returned to the OS nor "
                 .. "reused by the others, so many threads allocating and freeing buffers "
                 .. "fragment {n} arenas and RSS climbs (SOP §8.1). The growth sits in these "
                 .. "arenas; whether it is fragmentation or live objects is told by the fix "
                 .. "below: with jemalloc/tcmalloc fragmentation stops, live objects keep growing.",
                 "glibc 的 ptmalloc 给同时分配内存的线程各开一个 arena（最多 8 x CPU 个）；一个 arena 里释放的"
                 .. "内存既不还给系统也不被其他 arena 复用，多线程反复分配/释放 buffer 会让 {n} 个 arena 碎片化，"
                 .. "RSS 持续上涨（SOP §8.1）。增长就在这些 arena 里；是碎片还是存活对象由下面的修复来区分："
                 .. "换 jemalloc/tcmalloc 后碎片增长停止，存活对象则继续增长。", { n = n }),
      verify = tr("`sopctl run --pid NEW_PID --duration 10`: alloc.glibc_arenas clear (allocator "
                    .. "jemalloc/tcmalloc, or MALLOC_ARENA_MAX set) and proc.rss_growth_kb_per_s in `sopctl "
                    .. "evidence` near 0 (was {growth}/s). If RSS still grows with jemalloc, the objects are "
                    .. "live: find them with tracemalloc snapshots or memray.",
                  "`sopctl run --pid 新PID --duration 10`：alloc.glibc_arenas 为 clear（分配器为 jemalloc/tcmalloc，或已设 "
                    .. "MALLOC_ARENA_MAX），`sopctl evidence` 中 proc.rss_growth_kb_per_s 接近 0（原为每秒 {growth}）。换 "
                    .. "jemalloc 后 RSS 仍在涨，说明对象是存活的：用 tracemalloc 快照或 memray 找出来。",
                  { growth = kb(growth) }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------
-- 8.2 slow imports at start-up

local function main_thread(ev, threads)
  for _, t in ipairs(threads) do
    if t.tid == ev.pid or t.name == "MainThread" then return t end
  end
  return nil
end

rule {
  id = "startup.slow_imports", section = "8.2", severity = "warn",
  title = T("a young process whose main thread spends most of its time importing modules",
            "刚启动的进程主线程大部分时间在 import 模块"),
  reads = { "proc.age_s", "python.threads[].window.import_frac", "python.threads[].window.import_module",
            "python.threads[].window.import_module_frac", "python.threads[].window.io_wait_frac", "alive",
            "duration_s", "pid", "proc.cpu_pct", "python.threads[].name", "python.threads[].tid",
            "python.threads[].window.samples" },
  uses = { "startup_age_s", "import_frac_pct", "sampled_min_samples" },
  cause = T("Module-level code of the import chain (compiling sources, building tables, "
            .. "registering hooks, importing submodules eagerly from __init__.py) runs before "
            .. "the program's first line of real work (SOP §8.2).",
            "import 链上的模块级代码（编译源码、建表、注册 hook、__init__.py 里急切导入子模块）"
            .. "都在程序第一行正事之前执行（SOP §8.2）。"),
  verify = T("`python -X importtime -c 'import MODULE' 2>&1 | sort -t'|' -k2 -n | tail` shows the "
             .. "cumulative time fall; `sopctl run --pid PID --duration 3` right after start "
             .. "shows startup.slow_imports clear.",
             "`python -X importtime -c 'import MODULE' 2>&1 | sort -t'|' -k2 -n | tail` 的累计时间下降；"
             .. "启动后立即 `sopctl run --pid PID --duration 3` 显示 startup.slow_imports 为 clear。"),
  refs = {
    "https://docs.python.org/3/using/cmdline.html#cmdoption-X",
    "https://docs.python.org/3/library/typing.html#typing.TYPE_CHECKING",
    "https://peps.python.org/pep-0690/",
  },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local threads, why = sampled_threads(ev)
    if not threads then return unknown(why) end
    local m = main_thread(ev, threads)
    if not m then return unknown(T("main thread not among the sampled threads", "采样线程中没有主线程")) end
    local w = m.window
    if w.samples < th.sampled_min_samples or not w.import_frac then
      return unknown(tr("only {samples} samples of the main thread (< {sampled_min_samples})",
                        "主线程只有 {samples} 个样本（< {sampled_min_samples}）",
                        { samples = w.samples, sampled_min_samples = th.sampled_min_samples }))
    end
    local share = frac_pct(w.import_frac)
    local age = p.age_s
    local aged = age and tr("; process age {age:%.1f} s", "；进程已运行 {age:%.1f} 秒", { age = age }) or T("", "")
    local base = tr("main thread inside importlib in {share:%.0f}% of {samples} samples{aged}",
                    "主线程 {samples} 个样本中 {share:%.0f}% 在 importlib 内{aged}",
                    { share = share, samples = w.samples, aged = aged })
    if share < th.import_frac_pct then
      return clear(tr("{base} (< {import_frac_pct:%g}%)",
                      "{base}（< {import_frac_pct:%g}%）",
                      { base = base, import_frac_pct = th.import_frac_pct }))
    end
    if not age then
      return unknown(tr("{base}: process age unknown", "{base}：进程运行时长未知", { base = base }))
    end
    if age > th.startup_age_s then
      return clear(tr("{base}: past start-up (> {startup_age_s:%g} s); imports this late are the code's own "
                        .. "lazy imports",
                      "{base}：已过启动期（> {startup_age_s:%g} 秒）；这么晚的 import 是代码自己的延迟 import",
                      { base = base, startup_age_s = th.startup_age_s }))
    end
    local mod = w.import_module or "?"
    local module = w.import_module and tr("; top-level module being imported: {mod:%s} ({pct:%.0f}% of samples)",
                                          "；正在导入的顶层模块：{mod:%s}（{pct:%.0f}% 样本）",
                                          { mod = mod, pct = frac_pct(w.import_module_frac or 0) }) or T("", "")
    local disk = T("", "")
    if w.io_wait_frac and w.io_wait_frac > 0 then
      disk = tr("; in D state (disk) {pct:%.0f}% of samples", "；D 状态（等盘）{pct:%.0f}% 样本",
                { pct = frac_pct(w.io_wait_frac) })
    end
    return hit {
      symptom = tr("start-up spent importing: {share:%.0f}% of the main thread's time in import",
                   "启动时间耗在 import 上：主线程 {share:%.0f}% 时间在 import", { share = share }),
      evidence = tr("{base}{module}{disk}; process CPU {cpu_pct:%.0f}%.",
                    "{base}{module}{disk}；进程 CPU {cpu_pct:%.0f}%。",
                    { base = base, module = module, disk = disk, cpu_pct = p.cpu_pct or 0 }),
      fix = tr("Measure the chain: `python -X importtime -c 'import {module}' 2> import.log` and sort by cumulative "
                 .. "time. Then import heavy modules inside the functions that need them, put type-only imports under "
                 .. "`if typing.TYPE_CHECKING:`, avoid `from x import *`, move work out of package __init__.py files, "
                 .. "keep .pyc caching on (PYTHONDONTWRITEBYTECODE unset, writable __pycache__), and for long-lived "
                 .. "services import once and fork workers after warm-up.",
               "先量出 import 链：`python -X importtime -c 'import {module}' 2> import.log`，按累计时间排序。再把重模块挪到用它的函数里 import，仅类"
                 .. "型注解用的放进 `if typing.TYPE_CHECKING:`，避免 `from x import *`，把包 __init__.py 里的重活挪走，保持 .pyc 缓存（不设 "
                 .. "PYTHONDONTWRITEBYTECODE、__pycache__ 可写）；长驻服务启动时 import 一次、预热后再 fork worker。",
               { module = mod:match("([^/]+)/__init__%.py$") or mod:match("([^/]+)%.py$") or "MODULE" }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------
-- 8.3 logging in hot paths

local function writable_files(ev)
  local local_n, slow = 0, {}
  for _, f in ipairs(ev.io_files or {}) do
    -- the target's own files that moved over the window (a log file's position advances)
    if f.pid == ev.pid and f.path and f.advance_bytes_per_s and f.advance_bytes_per_s ~= 0 then
      if f.fs_kind == "network" or f.fs_kind == "fuse" then
        slow[#slow + 1] = fmt("%s (%s)", f.path, f.fstype or f.fs_kind)
      else
        local_n = local_n + 1
      end
    end
  end
  return slow, local_n
end

rule {
  id = "logging.hot_path", section = "8.3", severity = "warn",
  title = T("a working thread spends a large share of its time inside logging (formatting, handler writes)",
            "工作线程大量时间花在 logging 里（格式化、handler 写）"),
  reads = { "python.threads[].window.logging_frac", "python.threads[].window.logging_format_frac",
            "python.threads[].window.logging_write_frac", "python.threads[].window.logging_site",
            "python.threads[].window.active_frac", "python.threads[].window.io_wait_frac",
            "io_files[].fs_kind", "duration_s", "io_files[].advance_bytes_per_s", "io_files[].fstype",
            "io_files[].path", "io_files[].pid", "pid", "python.threads[].name", "python.threads[].tid",
            "python.threads[].window.logging_site_frac", "python.threads[].window.samples" },
  uses = { "logging_frac_pct", "logging_work_pct", "sampled_min_samples" },
  fix = T("Log less in the loop (every N steps, or aggregate counters); pass arguments lazily "
          .. "(`logger.debug(\"x=%s\", x)`, and guard costly ones with "
          .. "`if logger.isEnabledFor(logging.DEBUG):`); move the file write off the hot "
          .. "thread with logging.handlers.QueueHandler + QueueListener; write logs to local "
          .. "disk, not NFS; keep high-rate metrics out of logging (in-memory buffer, "
          .. "batched writes).",
          "循环里少打日志（每 N 步一次，或累计计数）；参数惰性传递（`logger.debug(\"x=%s\", x)`，昂贵的用 "
          .. "`if logger.isEnabledFor(logging.DEBUG):` 包起来）；用 logging.handlers.QueueHandler + "
          .. "QueueListener 把写文件移出热线程；日志写本地盘而不是 NFS；高频 metrics 不走 logging"
          .. "（内存缓冲、批量写）。"),
  refs = {
    "https://docs.python.org/3/howto/logging.html#optimization",
    "https://docs.python.org/3/howto/logging-cookbook.html#dealing-with-handlers-that-block",
    "https://docs.python.org/3/library/logging.handlers.html#queuehandler",
  },
  check = function(ev, th)
    local threads, why = sampled_threads(ev)
    if not threads then return unknown(why) end
    local worst, worst_share, n_ok = nil, 0, 0
    for _, t in ipairs(threads) do
      local w = t.window
      if w.samples >= th.sampled_min_samples and w.logging_frac then
        n_ok = n_ok + 1
        local working = (w.active_frac or 0) + (w.io_wait_frac or 0)
        if frac_pct(working) >= th.logging_work_pct and w.logging_frac > worst_share then
          worst, worst_share = t, w.logging_frac
        end
      end
    end
    if n_ok == 0 then
      return unknown(few_samples(th))
    end
    local share = frac_pct(worst_share)
    if not worst or share < th.logging_frac_pct then
      return clear(tr("no working thread spends >= {logging_frac_pct:%g}% of samples in logging (most: {share:%.0f}%)",
                      "没有工作线程在 logging 内的样本 >= {logging_frac_pct:%g}%（最多 {share:%.0f}%）",
                      { logging_frac_pct = th.logging_frac_pct, share = share }))
    end
    local w = worst.window
    local fmt_pct, write_pct = frac_pct(w.logging_format_frac or 0), frac_pct(w.logging_write_frac or 0)
    local slow, nlocal = writable_files(ev)
    local site = w.logging_site and tr("; calls from {site:%s} ({pct:%.0f}% of samples)",
                                       "；调用点 {site:%s}（{pct:%.0f}% 样本）",
                                       { site = w.logging_site, pct = frac_pct(w.logging_site_frac or 0) }) or ""
    local files_en, files_zh = "", ""
    if #slow > 0 then
      files_en = "; log files on network/FUSE storage: " .. table.concat(slow, ", ")
      files_zh = "；日志文件在网络/FUSE 存储上：" .. table.concat(slow, "、")
    end
    local io_en = w.io_wait_frac and w.io_wait_frac > 0
                  and fmt("; thread in D state %.0f%%", frac_pct(w.io_wait_frac)) or ""
    local io_zh = w.io_wait_frac and w.io_wait_frac > 0 and fmt("；线程 D 状态 %.0f%%", frac_pct(w.io_wait_frac)) or ""
    local remote = #slow > 0
                   and T("; the file sits on network storage, so each write adds a network round trip to the loop",
                         "；日志文件在网络存储上，每次写都会把等待网络的时间加进循环")
                   or T("", "")
    local cause = tr("Every record walks the logger (findCaller, makeRecord, handler locks), is formatted "
                       .. "({fmt_pct:%.0f}% of samples) and written synchronously by the handler in the calling "
                       .. "thread ({write_pct:%.0f}% in emit/flush){remote}. Arguments built eagerly (f-strings) are "
                       .. "paid even for records the level drops (SOP §8.3).",
                     "每条日志都要走一遍 logger（findCaller、makeRecord、handler 锁），格式化（{fmt_pct:%.0f}% 样本），"
                       .. "并由 handler 在调用线程里同步写出（emit/flush 占 {write_pct:%.0f}%）{remote}。用 f-string "
                       .. "提前拼好的参数，即使该级别被过滤也已付出代价（SOP §8.3）。",
                     { fmt_pct = fmt_pct, write_pct = write_pct, remote = remote })
    return hit {
      severity = (#slow > 0 or share >= 2 * th.logging_frac_pct) and "warn" or "info",
      symptom = tr("thread {tid} ({name}) spends {share:%.0f}% of its time in logging",
                   "线程 {tid}（{name}）有 {share:%.0f}% 的时间花在 logging 上",
                   { tid = worst.tid, name = worst.name or "?", share = share }),
      evidence = tr("tid {tid} {name}: {share:%.0f}% of {samples} samples inside logging (formatting {fmt_pct:%.0f}%, "
                      .. "handler emit/flush {write_pct:%.0f}%){site}{io_en}{files_en}; {nlocal} local log files "
                      .. "open.",
                    "tid {tid} {name}：{samples} 个样本中 {share:%.0f}% 在 logging 内（格式化 {fmt_pct:%.0f}%，handler emit/flush "
                      .. "{write_pct:%.0f}%）{site}{io_zh}{files_zh}；打开的本地日志文件 {nlocal} 个。",
                    { tid = worst.tid, name = worst.name or "?", share = share, samples = w.samples,
                      fmt_pct = fmt_pct, write_pct = write_pct, site = site, io_en = io_en,
                      files_en = files_en, nlocal = nlocal, io_zh = io_zh, files_zh = files_zh }),
      cause = cause,
      verify = tr("`sopctl run --pid PID --duration 3`: logging.hot_path clear (logging share of tid {tid} below "
                    .. "{logging_frac_pct:%g}%), and the loop's items/s rises.",
                  "`sopctl run --pid PID --duration 3`：logging.hot_path 为 clear（tid {tid} 的 logging 占比低于 "
                    .. "{logging_frac_pct:%g}%），循环每秒处理量上升。",
                  { tid = worst.tid, logging_frac_pct = th.logging_frac_pct }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------
-- 8.4 subprocess storms

rule {
  id = "subprocess.storm", section = "8.4", severity = "warn",
  title = T("a thread keeps launching short-lived child processes (fork + exec + wait per call)",
            "线程不停地启动短命子进程（每次调用都 fork + exec + wait）"),
  reads = { "python.threads[].window.subprocess_frac", "python.threads[].window.subprocess_spawn_frac",
            "host.forks_per_s", "proc.reaped_cpu_pct", "proc.cpu_pct", "alive", "duration_s",
            "python.threads[].name", "python.threads[].tid", "python.threads[].window.samples" },
  uses = { "subprocess_frac_pct", "subprocess_spawn_pct", "forks_min_per_s", "sampled_min_samples" },
  cause = T("Each subprocess.run/Popen forks the Python process (copying its page tables), "
            .. "execs and loads the tool, then waits for it: for short commands this fixed "
            .. "cost is larger than the work, and the thread spends its time starting "
            .. "processes (SOP §8.4).",
            "每次 subprocess.run/Popen 都要 fork Python 进程（复制页表）、exec 并加载工具、再等它结束："
            .. "命令很短时这笔固定开销比活本身还大，线程的时间都花在起进程上（SOP §8.4）。"),
  fix = T("Batch the work into fewer invocations (one ffmpeg/sox call with a list of inputs, "
          .. "aria2c -i urls.txt); call the library in-process instead of its CLI (e.g. PyAV "
          .. "for ffmpeg); or reuse a fixed pool of workers (concurrent.futures."
          .. "ProcessPoolExecutor, sized to the effective CPUs and measured) so each "
          .. "process serves many items.",
          "把活合并成少量调用（一次 ffmpeg/sox 处理一批输入，aria2c -i urls.txt）；在进程内调库而不是起 CLI"
          .. "（如 ffmpeg 用 PyAV）；或复用固定的 worker 池（concurrent.futures.ProcessPoolExecutor，"
          .. "大小按有效 CPU 并实测），让每个进程处理多条。"),
  verify = T("`sopctl run --pid PID --duration 3`: subprocess.storm clear and host forks/s "
             .. "(`sopctl evidence` host.forks_per_s) down; items/s up.",
             "`sopctl run --pid PID --duration 3`：subprocess.storm 为 clear，整机 forks/s"
             .. "（`sopctl evidence` 的 host.forks_per_s）下降，每秒处理量上升。"),
  refs = {
    "https://docs.python.org/3/library/subprocess.html",
    "https://docs.python.org/3/library/concurrent.futures.html#processpoolexecutor",
    "https://www.brendangregg.com/blog/2014-07-28/execsnoop-for-linux.html",
  },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local threads, why = sampled_threads(ev)
    if not threads then return unknown(why) end
    local worst
    for _, t in ipairs(threads) do
      local w = t.window
      if w.samples >= th.sampled_min_samples and w.subprocess_frac and
         (not worst or w.subprocess_frac > worst.window.subprocess_frac) then
        worst = t
      end
    end
    if not worst then
      return unknown(few_samples(th))
    end
    local w = worst.window
    local share, spawn = frac_pct(w.subprocess_frac), frac_pct(w.subprocess_spawn_frac or 0)
    local base = tr("tid {tid} {name:%s}: {share:%.0f}% of {samples} samples in subprocess (launching: {spawn:%.0f}%)",
                    "tid {tid} {name:%s}：{samples} 个样本中 {share:%.0f}% 在 subprocess 内（启动阶段 {spawn:%.0f}%）",
                    { tid = worst.tid, name = worst.name or "?", share = share, samples = w.samples, spawn = spawn })
    if share < th.subprocess_frac_pct or spawn < th.subprocess_spawn_pct then
      return clear(tr("{base} (needs >= {subprocess_frac_pct:%g}% and launching >= "
                        .. "{subprocess_spawn_pct:%g}%)",
                      "{base}（需 >= {subprocess_frac_pct:%g}% 且启动 >= {subprocess_spawn_pct:%g}%）",
                      { base = base, subprocess_frac_pct = th.subprocess_frac_pct,
                        subprocess_spawn_pct = th.subprocess_spawn_pct }))
    end
    local forks = ev.host and ev.host.forks_per_s
    if not forks then
      return unknown(tr("{base}: host fork rate not measured", "{base}：整机 fork 速率未测得", { base = base }))
    end
    base = tr("{base}; host forks {forks:%.0f}/s", "{base}；整机每秒 fork {forks:%.0f} 次", { base = base, forks = forks })
    if forks < th.forks_min_per_s then
      return clear(tr("{base} (< {forks_min_per_s:%g}/s): few, long-running children",
                      "{base}（< {forks_min_per_s:%g}/s）：子进程少且长命",
                      { base = base, forks_min_per_s = th.forks_min_per_s }))
    end
    local reaped = p.reaped_cpu_pct and tr("; exited children used {pct:%.0f}% CPU", "；已退出的子进程用了 {pct:%.0f}% CPU",
                                           { pct = p.reaped_cpu_pct }) or T("", "")
    return hit {
      symptom = tr("subprocess storm: about {forks:%.0f} process launches/s, {share:%.0f}% of tid {tid}'s time",
                   "子进程风暴：每秒约 {forks:%.0f} 次进程启动，占 tid {tid} {share:%.0f}% 的时间",
                   { forks = forks, share = share, tid = worst.tid }),
      evidence = tr("{base}{reaped}; process CPU {cpu_pct:%.0f}%.",
                    "{base}{reaped}；进程 CPU {cpu_pct:%.0f}%。",
                    { base = base, reaped = reaped, cpu_pct = p.cpu_pct or 0 }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------
-- 8.5 thread pools / affinity that do not match the CPUs the job has

local POOL_VARS = { "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS" }

local pool_libs = common.pool_libs

rule {
  id = "cpu.affinity_mismatch", section = "8.5", severity = "warn",
  title = T("thread-pool sizes or the CPU quota do not match the CPUs the affinity mask allows",
            "线程池大小或 CPU quota 与亲和性掩码允许的 CPU 数不一致"),
  reads = { "proc.env", "children[].env", "proc.affinity", "proc.libs", "proc.cpu_pct", "effective_cpus",
            "cgroup.cpu.quota_cpus", "host.ncpu", "alive", "pid" },
  uses = { "pool_env_over_cpus", "quota_over_affinity_cpus", "cpu_saturated_pct" },
  refs = {
    "https://www.openmp.org/spec-html/5.0/openmpse50.html",
    "https://pytorch.org/docs/stable/generated/torch.set_num_threads.html",
    "https://docs.kernel.org/scheduler/sched-bwc.html",
    "https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html",
  },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local eff = ev.effective_cpus
    local aff = p.affinity and p.affinity.count
    if not eff and not aff then
      return unknown(T("neither the affinity mask nor the effective CPU count is known",
                       "亲和性掩码和有效 CPU 数都未知"))
    end
    local env = p.env
    for _, c in ipairs(ev.children or {}) do
      if env then break end
      env = c.env
    end
    local found_en, found_zh, warn = {}, {}, false
    local libs = pool_libs(p)
    local over = {}
    if env and eff then
      for _, name in ipairs(POOL_VARS) do
        local n = tonumber(env[name] or "")
        if n and n >= eff + th.pool_env_over_cpus then over[#over + 1] = fmt("%s=%s", name, env[name]) end
      end
    end
    if #over > 0 then
      found_en[#found_en + 1] = fmt("%s above the %d effective CPUs", table.concat(over, ", "), eff)
      found_zh[#found_zh + 1] = fmt("%s 超过 %d 个有效 CPU", table.concat(over, "、"), eff)
      if #libs > 0 then warn = true end
    end
    local q = ev.cgroup and ev.cgroup.cpu and ev.cgroup.cpu.quota_cpus
    if q and aff and q >= aff + th.quota_over_affinity_cpus then
      local pinned_full = p.cpu_pct ~= nil and p.cpu_pct >= th.cpu_saturated_pct / 100 * aff * 100
      found_en[#found_en + 1] = fmt("the cgroup quota pays for %.2f CPUs but the affinity mask "
                                    .. "allows %d (%s)", q, aff, p.affinity.cpus or "?")
      found_zh[#found_zh + 1] = fmt("cgroup quota 为 %.2f 个 CPU，但亲和性掩码只允许 %d 个（%s）", q, aff,
                                    p.affinity.cpus or "?")
      if pinned_full then warn = true end
    end
    local ctx = tr("affinity {cpus:%s} ({aff} CPUs), effective CPUs {eff:%s}, quota {quota:%s}, host {ncpu:%s} CPUs",
                   "亲和性 {cpus:%s}（{aff} 个 CPU），有效 CPU {eff:%s}，quota {quota:%s}，整机 {ncpu:%s} 个 CPU",
                   { cpus = p.affinity and p.affinity.cpus or "?", aff = aff or 0, eff = tostring(eff or "?"),
                     quota = q and fmt("%.2f", q) or T("none", "无"),
                     ncpu = tostring(ev.host and ev.host.ncpu or "?") })
    if #found_en == 0 then
      if not env then
        return unknown(tr("{ctx}; environment not readable", "{ctx}；环境变量不可读", { ctx = ctx }))
      end
      return clear(tr("{ctx}; no thread-pool variable above it", "{ctx}；没有超过它的线程池变量", { ctx = ctx }))
    end
    local libs_en = #libs > 0 and ("; pool libraries loaded: " .. table.concat(libs, ", "))
                    or "; no OpenMP/BLAS/torch library loaded"
    local libs_zh = #libs > 0 and ("；已加载线程池库：" .. table.concat(libs, "、")) or "；未加载 OpenMP/BLAS/torch 库"
    -- (the Chinese text has carried the English fragment so far; kept byte for byte)
    local cpu = p.cpu_pct and tr("; process CPU {pct:%.0f}%", "; process CPU {pct:%.0f}%", { pct = p.cpu_pct }) or ""
    local n = eff or aff
    return hit {
      severity = warn and "warn" or "info",
      symptom = T("thread pools / CPU quota sized for CPUs the process cannot use: " .. table.concat(found_en, "; "),
                  "线程池 / CPU quota 按进程用不上的 CPU 配置：" .. table.concat(found_zh, "；")),
      evidence = tr("{ctx}; {found_en:%s}{libs_en:%s}{cpu}.", "{ctx}；{found_zh:%s}{libs_zh:%s}{cpu}。",
                    { ctx = ctx, found_en = table.concat(found_en, "; "), libs_en = libs_en, cpu = cpu,
                      found_zh = table.concat(found_zh, "；"), libs_zh = libs_zh }),
      cause = tr("OpenMP/BLAS/torch start as many threads as their variables say, whatever the "
                 .. "affinity mask and quota allow: {n} CPUs are really available, so the extra "
                 .. "threads time-share them and pay context switches and cache misses; a "
                 .. "quota wider than the affinity mask is paid for and never used (SOP §8.5).",
                 "OpenMP/BLAS/torch 按变量的值开线程，不管亲和性掩码和 quota 允许多少：真正可用的只有 {n} 个 CPU，"
                 .. "多出来的线程分时复用，付出上下文切换和 cache miss；quota 大于亲和性掩码则是付了钱却用不上"
                 .. "（SOP §8.5）。", { n = n }),
      fix = tr("Size the pools to the CPUs the process may run on: OMP_NUM_THREADS=MKL_NUM_THREADS="
               .. "OPENBLAS_NUM_THREADS={n} (divided by the number of busy worker processes), "
               .. "torch.set_num_threads({n}); and make the affinity mask (taskset -pc, "
               .. "numactl --cpunodebind, K8s static CPU manager) and the quota describe the "
               .. "same CPUs. Change one number at a time and measure step time.",
               "线程池按进程可运行的 CPU 设置：OMP_NUM_THREADS=MKL_NUM_THREADS=OPENBLAS_NUM_THREADS={n}"
               .. "（再除以繁忙 worker 进程数），torch.set_num_threads({n})；并让亲和性掩码（taskset -pc、"
               .. "numactl --cpunodebind、K8s static CPU manager）与 quota 描述同一组 CPU。一次只改一个数并测 step 时间。", { n = n }),
      verify = tr("`taskset -pc {pid}` and `cat /sys/fs/cgroup/cpu.max` agree; `sopctl run --pid {pid} "
                  .. "--duration 2`: cpu.affinity_mismatch and cpu.oversubscribed clear.",
                  "`taskset -pc {pid}` 与 `cat /sys/fs/cgroup/cpu.max` 一致；`sopctl run --pid {pid} --duration 2`："
                  .. "cpu.affinity_mismatch 与 cpu.oversubscribed 为 clear。", { pid = ev.pid }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------
-- 8.5 threads on one NUMA node, memory on another

-- The CPUs of a kernel cpulist ("0-3,8") as a set, or nil when it does not parse.
local function cpu_set(list)
  if type(list) ~= "string" then return nil end
  local set, any = {}, false
  for part in list:gmatch("[^,]+") do
    local a, b = part:match("^%s*(%d+)%-(%d+)%s*$")
    a, b = tonumber(a or part:match("^%s*(%d+)%s*$")), tonumber(b)
    if not a then return nil end
    for c = a, b or a do set[c] = true end
    any = true
  end
  return any and set or nil
end

-- The distinct nodes of `cpus` (a list of CPU numbers), sorted; nil when one is on no node.
local function nodes_of(cpus, node_of)
  local seen, out = {}, {}
  for _, c in ipairs(cpus) do
    local n = node_of[c]
    if n == nil then return nil end
    if not seen[n] then seen[n] = true; out[#out + 1] = n end
  end
  table.sort(out)
  return out
end

local function missing_reason(ev, probe)
  for _, m in ipairs(ev.missing or {}) do
    if m.probe == probe then return m.reason end
  end
  return nil
end

rule {
  id = "cpu.numa_remote", section = "8.5", severity = "warn",
  title = T("the job's threads run on one NUMA node while most of its memory sits on another",
            "作业线程跑在一个 NUMA 节点上，大部分内存却在另一个节点"),
  doc = [[Fires (warn) on a host with at least two NUMA nodes when the target's threads run on one node — its
    affinity mask lies within that node, or else every busy thread (busy_thread_pct of a core over the window) last
    ran on a CPU of it — while at least numa_remote_pct of its resident memory (numa_maps, as numastat -p sums it,
    at least numa_min_mb in all) is on other nodes. Clears on a one-node host ("one NUMA node: no remote memory"),
    when busy threads run on several nodes or none is busy, when the memory is small or mostly local. Unknown when
    the topology was not read (kernel without NUMA support), numa_maps was unreadable, or with --duration 0 and an
    affinity mask spanning nodes.]],
  reads = { "host.numa.nodes[].node", "host.numa.nodes[].cpus", "host.numa.nodes[].cpu_count",
            "host.numa.nodes[].mem_free_kb", "host.numa.nodes[].mem_total_kb", "host.numa.balancing",
            "proc.numa.nodes[].kb", "proc.numa.kb", "proc.numa.interleave_kb", "proc.numa.truncated",
            "proc.affinity.cpus", "threads[].cpu_pct", "threads[].processor", "missing[]", "alive",
            "duration_s", "pid", "proc.numa.mappings", "proc.numa.nodes[].node" },
  uses = { "numa_remote_pct", "numa_min_mb", "busy_thread_pct" },
  refs = {
    "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html",
    "https://man7.org/linux/man-pages/man8/numactl.8.html",
    "https://docs.kernel.org/admin-guide/mm/numa_memory_policy.html",
    "https://man7.org/linux/man-pages/man8/numastat.8.html",
  },
  check = function(ev, th)
    local p = ev.proc
    if not p then return no_proc(ev) end
    local hn = ev.host and ev.host.numa
    if not hn or not hn.nodes then
      return unknown(T("NUMA topology not read (no /sys/devices/system/node: kernel without NUMA support)",
                       "未读到 NUMA 拓扑（没有 /sys/devices/system/node：内核不支持 NUMA）"))
    end
    if #hn.nodes < 2 then
      return clear(T("one NUMA node: no remote memory", "只有一个 NUMA 节点：没有远端内存"))
    end
    local node_of, by_id = {}, {}
    for _, n in ipairs(hn.nodes) do
      by_id[n.node] = n
      if n.cpu_count == nil then
        return unknown(tr("the CPU list of NUMA node {node} was not read",
                          "未读到 NUMA 节点 {node} 的 CPU 列表", { node = n.node }))
      end
      for c in pairs(cpu_set(n.cpus) or {}) do node_of[c] = n.node end
    end

    -- where the threads run: a mask within one node, else the CPUs the busy threads last ran on
    local run_node, where
    local mask = p.affinity and cpu_set(p.affinity.cpus)
    local mask_nodes
    if mask then
      local cpus = {}
      for c in pairs(mask) do cpus[#cpus + 1] = c end
      mask_nodes = nodes_of(cpus, node_of)
    end
    if mask_nodes and #mask_nodes == 1 then
      run_node = mask_nodes[1]
      where = tr("affinity {cpus:%s} lies within node {node}", "亲和性 {cpus:%s} 全在节点 {node} 内",
                 { cpus = p.affinity.cpus, node = run_node })
    else
      if not ev.duration_s or ev.duration_s <= 0 then
        return unknown(T("one snapshot (--duration 0) and an affinity mask spanning nodes: busy threads not told",
                         "只有一次快照（--duration 0）且亲和性跨节点：无法判断繁忙线程"))
      end
      local cpus, n_busy = {}, 0
      for _, t in ipairs(ev.threads or {}) do
        if t.cpu_pct and t.cpu_pct >= th.busy_thread_pct and t.processor then
          n_busy = n_busy + 1
          cpus[#cpus + 1] = t.processor
        end
      end
      if n_busy == 0 then
        return clear(tr("no thread busy (>= {busy_thread_pct:%g}% of a core) over the window: remote memory costs "
                        .. "nothing while idle",
                        "窗口内没有繁忙线程（>= 单核 {busy_thread_pct:%g}%）：空闲时远端内存没有代价", { busy_thread_pct = th.busy_thread_pct }))
      end
      local ran = nodes_of(cpus, node_of)
      if not ran then
        return unknown(T("a busy thread ran on a CPU of no listed node", "有繁忙线程跑在未列出的节点的 CPU 上"))
      end
      if #ran > 1 then
        local list = table.concat(ran, ", ")
        return clear(tr("{n_busy} busy threads ran on nodes {list:%s}: the job spans nodes, no single local node",
                        "{n_busy} 个繁忙线程跑在节点 {list:%s} 上：作业跨节点，没有单一本地节点", { n_busy = n_busy, list = list }))
      end
      run_node = ran[1]
      where = tr("all {n} busy threads last ran on CPUs of node {node} (affinity {cpus:%s})",
                 "{n} 个繁忙线程最后都跑在节点 {node} 的 CPU 上（亲和性 {cpus:%s}）",
                 { n = n_busy, node = run_node, cpus = p.affinity and p.affinity.cpus or "?" })
    end

    local pn = p.numa
    if not pn or not pn.kb or not pn.nodes then
      local why = missing_reason(ev, "proc.numa") or "numa_maps not read"
      return unknown(tr("{where}; memory per node unknown ({why:%s})",
                        "{where}；各节点内存未知（{why:%s}）",
                        { where = where, why = why }))
    end
    local total, local_kb = pn.kb, 0
    local parts, far_node, far_kb = {}, nil, -1
    for _, n in ipairs(pn.nodes) do
      if n.node == run_node then
        local_kb = n.kb
      elseif n.kb > far_kb then
        far_node, far_kb = n.node, n.kb
      end
      if n.kb > 0 and total > 0 then
        parts[#parts + 1] = fmt("node %d %s (%.0f%%)", n.node, kb(n.kb), 100 * n.kb / total)
      end
    end
    local truncated = pn.truncated and tr(" (first {n} mappings only)", "（仅前 {n} 个映射）", { n = pn.mappings or 0 })
                      or T("", "")
    local base = tr("{where}; resident {total}: {parts}{truncated}", "{where}；常驻 {total}：{parts}{truncated}",
                    { where = where, total = kb(total), parts = T(table.concat(parts, ", "), table.concat(parts, "，")),
                      truncated = truncated })
    if total < th.numa_min_mb * 1024 then
      return clear(tr("{base}: below {numa_min_mb:%g} MiB, too small to matter",
                      "{base}：低于 {numa_min_mb:%g} MiB，影响小",
                      { base = base, numa_min_mb = th.numa_min_mb }))
    end
    local remote_kb = total - local_kb
    local share = 100 * remote_kb / total
    if share < th.numa_remote_pct or not far_node then
      return clear(tr("{base}: {share:%.0f}% on other nodes (< {numa_remote_pct:%g}%)",
                      "{base}：其他节点 {share:%.0f}%（< {numa_remote_pct:%g}%）",
                      { base = base, share = share, numa_remote_pct = th.numa_remote_pct }))
    end

    local home = by_id[run_node] or {}
    local free, fits = T("", ""), true
    if home.mem_free_kb then
      fits = home.mem_free_kb >= remote_kb
      free = tr("; node {node} has {free} free of {total}", "；节点 {node} 空闲 {free} / 共 {total}",
                { node = run_node, free = kb(home.mem_free_kb), total = kb(home.mem_total_kb or 0) })
    end
    local interleave, balancing = T("", ""), T("", "")
    if pn.interleave_kb and pn.interleave_kb > 0 then
      interleave = tr("; {kb} under an interleave policy", "；{kb} 在 interleave 策略下", { kb = kb(pn.interleave_kb) })
    end
    if hn.balancing then
      balancing = tr("; automatic NUMA balancing {state}", "；自动 NUMA 平衡{state}",
                     { state = hn.balancing == 0 and T("off", "关闭") or T("on", "开启") })
    end
    local move
    if fits then
      move = tr(" A running process can move its pages: `migratepages {pid} {far} {node}` (package numactl).",
                "运行中的进程可以迁移页面：`migratepages {pid} {far} {node}`（numactl 包）。",
                { pid = ev.pid, far = far_node, node = run_node })
    else
      move = tr(" Node {node} has less free memory than the {remote} to move: --membind={node} would push "
                  .. "the job into reclaim or the OOM killer; use --preferred={node}, free memory on "
                  .. "node {node}, or split the job so each part fits its node.",
                "节点 {node} 的空闲内存少于要迁移的 {remote}：--membind={node} 会让作业进入回收或被 OOM 杀；"
                  .. "改用 --preferred={node}、腾出节点 {node} 的内存，或拆分作业让每部分装进各自节点。",
                { node = run_node, remote = kb(remote_kb) })
    end
    local fix = tr("Keep CPUs and memory on one node: start the job with `numactl --cpunodebind={node} "
                     .. "--membind={node} python train.py`, or, for several workers/ranks, bind each to one "
                     .. "node with its own memory (one numactl per launcher rank, node = rank % nodes).{move}",
                   "让 CPU 与内存在同一节点：用 `numactl --cpunodebind={node} --membind={node} python train.py` 启动；"
                     .. "多个 worker/rank 时每个绑到一个节点并用该节点内存（每个 rank 一个 numactl，节点 = rank % 节点数）。{move}",
                   { node = run_node, move = move })
    return hit {
      symptom = tr("{share:%.0f}% of the job's memory ({remote_kb}) is on NUMA node {far_node}, its threads run on "
                     .. "node {run_node}",
                   "作业 {share:%.0f}% 的内存（{remote_kb}）在 NUMA 节点 {far_node}，线程却跑在节点 {run_node}",
                   { share = share, remote_kb = kb(remote_kb), far_node = far_node, run_node = run_node }),
      evidence = tr("{base}{free}{interleave}{balancing}.", "{base}{free}{interleave}{balancing}。",
                    { base = base, free = free, interleave = interleave, balancing = balancing }),
      cause = tr("Linux places a page on the node of the CPU that first touches it (or where a membind/preferred "
                   .. "policy says). The memory was filled from node {far_node} (data loaded before the job was "
                   .. "pinned, taskset applied after start, a policy naming the other node, or node {run_node} full "
                   .. "at the time), and the threads now run on node {run_node}: {share:%.0f}% of their memory "
                   .. "accesses cross the socket interconnect, with higher latency and shared bandwidth (SOP §8.5).",
                 "Linux 把页面放在第一次访问它的 CPU 所在节点（或 membind/preferred 策略指定的节点）。这些内存是在节点 {far_node} 上填充的（进程绑核前加载的数据、启动后才 "
                   .. "taskset、策略指向了另一个节点，或当时节点 {run_node} 已满），而线程现在跑在节点 {run_node}：{share:%.0f}% 的访存要跨 socket 互联，延迟更高"
                   .. "、带宽共享（SOP §8.5）。",
                 { far_node = far_node, run_node = run_node, share = share }),
      fix = fix,
      verify = tr("`numastat -p {pid}` shows most of the memory on node {run_node}; `sopctl run --pid {pid} "
                  .. "--duration 3`: cpu.numa_remote clear. Compare step time before and after.",
                  "`numastat -p {pid}` 显示大部分内存在节点 {run_node}；`sopctl run --pid {pid} --duration 3`："
                  .. "cpu.numa_remote 为 clear。前后对比 step 时间。", { pid = ev.pid, run_node = run_node }),
    }
  end,
}
