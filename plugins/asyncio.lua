-- plugins/asyncio.lua — SOP §5: the event-loop thread is running code that does not await (a
-- synchronous sleep, HTTP or DB call, CPU work, a big json parse), so every other request waits.
-- Reads ev.python (frames per thread; loop = the sampled window's longest stretch away from the
-- selector), ev.threads (OS state, cpu_pct), ev.sampling. Thresholds: loop_busy_cpu_pct,
-- loop_block_ms.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local NO_LOOP = T("no asyncio event loop among the Python threads", "Python 线程中没有 asyncio 事件循环")

local ends_with = common.ends_with

local where = common.where

-- Index (1 = innermost) of the frame that dispatches loop callbacks, and the loop kind.
-- uvloop's own files (its package directory), not any path that merely contains the word
-- (a user's "asyncio_no_uvloop.py" is the user's code).
local function is_uvloop_file(file)
  return file:find("/uvloop/", 1, true) ~= nil or file:sub(1, 7) == "uvloop/"
end

local function loop_dispatch(frames)
  for i, f in ipairs(frames) do
    if ends_with(f.file, "asyncio/events.py") and (f.func == "Handle._run" or f.func == "_run") then
      return i, "asyncio"
    end
  end
  for i, f in ipairs(frames) do
    local file = f.file or ""
    if ends_with(file, "asyncio/base_events.py") and f.func and f.func:find("run_forever", 1, true) then
      return i, "asyncio"
    end
    if ends_with(file, "asyncio/runners.py") or is_uvloop_file(file) then
      return i, "uvloop"
    end
  end
  return nil
end

-- Frames inside the loop that belong to the loop machinery itself (waiting in the selector).
local function in_loop_machinery(f)
  local file = f.file or ""
  return ends_with(file, "selectors.py") or ends_with(file, "asyncio/base_events.py")
      or ends_with(file, "asyncio/events.py") or ends_with(file, "asyncio/runners.py")
      or is_uvloop_file(file)
end

-- The asyncio task (ev.python.tasks.running_tasks, read at the window's end) whose coroutine is
-- one of the blocked stretch's frames (same function and file): the task the loop was stuck in.
local function blocking_task(frames, tasks)
  for _, r in ipairs(tasks and tasks.running_tasks or {}) do
    for _, f in ipairs(frames) do
      if f.func == r.func and f.file == r.file then return r end
    end
  end
  return nil
end

rule {
  id = "asyncio.loop_blocked", section = "5", severity = "warn",
  title = T("the asyncio event loop is stuck in one callback (sync sleep, HTTP, CPU work): every other request waits",
            "asyncio 事件循环卡在一个回调里（同步 sleep、HTTP、CPU 计算）：其他请求都在排队"),
  doc = [[Sampled window: hit when a thread running an asyncio (or uvloop) loop stayed away from its selector for at
    least loop_block_ms in one stretch, naming the frame (and the asyncio task running it at the window's end,
    when its coroutine is one of the stretch's frames). Snapshot: hit when the loop thread is inside a callback
    in user code rather than the selector, blocked (S/D) or running (R); high when the loop thread used at least
    loop_busy_cpu_pct of a core; an asyncio loop measured over the window is judged by the window only (a busy
    loop is inside some callback at most snapshots). Unknown when not CPython. When the loop thread waited on the
    GPU (window.gpu_wait_frac) at least gpu_sync_frac of its samples, the finding is high with the §5.5 cause and
    fix (a GPU thread or process behind a request queue with dynamic batching; never synchronise on the loop).]],
  reads = { "python.loop", "python.tasks", "python.threads[].frames", "proc.cwd", "proc.cmdline", "threads[].state",
            "threads[].cpu_pct", "sampling", "duration_s", "pid", "python.threads[].tid", "threads[].tid",
            "python.threads[].window.gpu_wait_frac", "python.threads[].window.gpu_sync_site", "gpu.busy_pct",
            "gpu.idle_frac", "gpu.devices[].name", "gpu.devices[].used_by_tree", "gpu.devices[].util_samples" },
  uses = { "loop_block_ms", "loop_busy_cpu_pct", "gpu_sync_frac" },
  symptom = T("the asyncio event loop is stuck in one callback: every other request waits",
              "asyncio 事件循环卡在一个回调里：其他请求都在排队"),
  fix = T("In the coroutine: replace time.sleep with await asyncio.sleep; use an async client (aiohttp, "
          .. "httpx.AsyncClient) instead of requests; move CPU work or large parsing to "
          .. "await loop.run_in_executor(...) (a ProcessPoolExecutor for pure-Python CPU work) "
          .. "(SOP §5.2).",
          "在协程里：time.sleep 改为 await asyncio.sleep；requests 改为 aiohttp / httpx.AsyncClient；"
          .. "CPU 计算或大数据解析放进 await loop.run_in_executor(...)"
          .. "（纯 Python 计算用 ProcessPoolExecutor）（SOP §5.2）。"),
  refs = { "https://docs.python.org/3/library/asyncio-dev.html#running-blocking-code",
           "https://docs.python.org/3/library/asyncio-eventloop.html"
             .. "#executing-code-in-thread-or-process-pools" },
  check = function(ev, th)
    local py = ev.python
    if not py or not py.threads then
      return unknown(common.NO_STACKS)
    end
    -- Over the sampled window: the longest stretch the loop thread ran without its selector.
    local lp = py.loop
    local block_ms = th.loop_block_ms or 100
    if lp and lp.longest_block_ms and lp.longest_block_ms >= block_ms then
      local smp = ev.sampling or {}
      -- the user's own frame and the leaf below it, when the stretch's frames were kept
      local own = lp.frames and common.own_frame(lp.frames, ev)
      local frame = lp.frames and common.user_frame(lp.frames, ev) or lp.frame or "?"
      local fname = own and own.func or (lp.frame or "?"):match("^(.-) %(") or lp.frame or "?"
      local task = lp.frames and blocking_task(lp.frames, py.tasks)
      local task_en = task and fmt("; task \"%s\" (coroutine %s) was running it at the end of the window",
                                   task.task, task.func) or ""
      local task_zh = task and fmt("；窗口结束时正在运行它的是任务 \"%s\"（协程 %s）", task.task, task.func) or ""
      -- §5.5: the loop thread waits on the GPU inside the handler (a model run synchronously there).
      local lw
      for _, t in ipairs(py.threads) do
        if t.tid == lp.tid and t.window then lw = t.window end
      end
      if lw and (lw.gpu_wait_frac or 0) >= th.gpu_sync_frac then
        return hit {
          severity = "high",
          symptom = T("the asyncio event loop waits for the GPU inside a handler: every other request waits",
                      "asyncio 事件循环在处理函数里等 GPU：其他请求都在排队"),
          evidence = tr("event-loop thread tid {tid} ran {longest_block_ms:%.0f} ms without returning to the selector, "
                          .. "in {frame:%s}, and waited on the GPU in {gw:%.0f}% of its samples{site}{gpu}",
                        "事件循环线程 tid {tid} 有 {longest_block_ms:%.0f} ms 没有回到 selector，位置 {frame:%s}，"
                          .. "{gw:%.0f}% 的样本在等 GPU{site}{gpu}",
                        { tid = lp.tid or 0, longest_block_ms = lp.longest_block_ms, frame = frame,
                          gw = 100 * lw.gpu_wait_frac, gpu = common.gpu_idle_text(ev),
                          site = lw.gpu_sync_site and tr(" (most at {s:%s})", "（最多在 {s:%s}）",
                                                          { s = lw.gpu_sync_site }) or T("", "") }),
          cause = tr("{fname:%s} runs the model on the event-loop thread and waits for the GPU's result there: for "
                       .. "the whole inference no other request is read, parsed or answered (SOP §5.5: the loop must "
                       .. "never synchronise on the GPU).",
                     "{fname:%s} 在事件循环线程上运行模型并在那里等 GPU 的结果：整个推理期间没有其他请求被读取、解析或应答"
                       .. "（SOP §5.5：事件循环上绝不能同步等待 GPU）。", { fname = fname }),
          fix = T("Give the GPU its own thread or process fed by a request queue (asyncio.Queue(maxsize=N) for "
                  .. "backpressure): the handler puts (input, future) on it and awaits the future; the GPU worker "
                  .. "takes what is queued (dynamic batching: up to a batch size or a few ms), runs one batch and "
                  .. "sets the futures with loop.call_soon_threadsafe. Keep .item()/.cpu()/synchronize off the loop "
                  .. "thread (SOP §5.5; vLLM/SGLang split the same way).",
                  "给 GPU 单独的线程或进程，通过请求队列喂数据（asyncio.Queue(maxsize=N) 做背压）：处理函数把"
                  .. "（输入, future）放进队列并 await future；GPU worker 取出已排队的请求（动态 batching：凑满 batch "
                  .. "或等几毫秒），跑一个 batch，再用 loop.call_soon_threadsafe 设置 future 结果。.item()/.cpu()/"
                  .. "synchronize 不要在事件循环线程上调用（SOP §5.5；vLLM/SGLang 也是这样拆分的）。"),
          verify = tr("`sopctl evidence --pid {pid} --duration 10`: python.loop.longest_block_ms below {block_ms:%g} "
                      .. "and the loop thread's window.gpu_wait_frac near 0, under the same load.",
                      "同样负载下 `sopctl evidence --pid {pid} --duration 10`：python.loop.longest_block_ms 低于 "
                      .. "{block_ms:%g}，事件循环线程的 window.gpu_wait_frac 接近 0。", { pid = ev.pid, block_ms = block_ms }),
          refs = { "https://docs.python.org/3/library/asyncio-queue.html",
                   "https://docs.python.org/3/library/asyncio-eventloop.html#asyncio.loop.call_soon_threadsafe" },
        }
      end
      return hit {
        evidence = tr("event-loop thread tid {tid} ran {longest_block_ms:%.0f} ms without returning to the selector, "
                        .. "in {frame:%s} (longest stretch over a {duration_s:%.1f} s window sampled at {rate_hz:%g} "
                        .. "Hz, {samples} samples){task_en}",
                      "事件循环线程 tid {tid} 有 {longest_block_ms:%.0f} ms 没有回到 selector，位置 {frame:%s}（{duration_s:%.1f} 秒窗口"
                        .. "内以 {rate_hz:%g} Hz 采样 {samples} 次中最长的一段）{task_zh}",
                      { tid = lp.tid or 0, longest_block_ms = lp.longest_block_ms, frame = frame,
                        duration_s = ev.duration_s or 0, rate_hz = smp.rate_hz or 0, samples = smp.samples or 0,
                        task_en = task_en, task_zh = task_zh }),
        cause = tr("asyncio runs every coroutine on one thread: code in {fname:%s} that does not await (time.sleep, "
                   .. "requests/sync DB client, CPU work, json.loads of a large body) holds the whole loop for "
                   .. "as long as it runs (SOP §5.1, §5.2).",
                   "asyncio 在单线程上调度所有协程：{fname:%s} 中不 await 的代码（time.sleep、requests/同步数据库客户端、"
                   .. "CPU 计算、大 JSON 解析）运行多久，整个事件循环就卡多久（SOP §5.1、§5.2）。", { fname = fname }),
        verify = tr("`sopctl evidence --pid {pid} --duration 10`: python.loop.longest_block_ms below {block_ms:%g}; "
                    .. "PYTHONASYNCIODEBUG=1 prints no 'Executing <Task ...> took' warnings.",
                    "`sopctl evidence --pid {pid} --duration 10`：python.loop.longest_block_ms 低于 {block_ms:%g}；"
                    .. "PYTHONASYNCIODEBUG=1 不再出现 'Executing <Task ...> took' 告警。",
                    { pid = ev.pid, block_ms = block_ms }),
        refs = { "https://docs.python.org/3/library/asyncio-dev.html#running-blocking-code" },
      }
    end
    local os_threads = {}
    for _, t in ipairs(ev.threads or {}) do os_threads[t.tid] = t end
    local loops = 0
    for _, t in ipairs(py.threads) do
      local frames = t.frames or {}
      local idx, kind = loop_dispatch(frames)
      if idx then
        loops = loops + 1
        -- The innermost frame outside the loop machinery, if it is inside the loop's dispatch.
        local user
        for i = 1, idx - 1 do
          if not in_loop_machinery(frames[i]) then user = frames[i]; break end
        end
        local o = os_threads[t.tid] or {}
        local state, cpu = o.state, o.cpu_pct
        -- named as the user's own frame and the leaf below it (within the callback)
        local cb = {}
        for i = 1, idx - 1 do cb[i] = frames[i] end
        local own = common.own_frame(cb, ev)
        local at = common.user_frame(cb, ev)
        -- An asyncio loop measured over the window is judged by that measurement (above): a
        -- snapshot inside a callback only says the loop is busy, which a saturated loop running
        -- many short callbacks is nearly all the time. uvloop's C loop has no dispatch frames to
        -- measure, so for it (and with --duration 0) the snapshot is the evidence.
        local measured = kind == "asyncio" and lp and lp.longest_block_ms and (not lp.tid or lp.tid == t.tid)
        if user and not measured and (kind == "asyncio" or idx > 1) then
          local cpu_bound = state == "R" or (cpu and cpu >= th.loop_busy_cpu_pct)
          local what_en = cpu_bound and "running CPU work without awaiting" or "blocked in a synchronous call"
          local what_zh = cpu_bound and "在执行 CPU 计算且不 await" or "阻塞在同步调用里"
          local cpu_txt = cpu and fmt(", %.0f%% of a core over %.1f s", cpu, ev.duration_s or 0) or ""
          return hit {
            severity = cpu_bound and cpu and cpu >= th.loop_busy_cpu_pct and "high" or nil,
            evidence = tr("event-loop thread tid {tid} ({kind:%s} loop, OS state {state}{cpu_txt:%s}) is {what_en} in "
                            .. "{at:%s}, not in the selector; loop stack: {loop_frame}",
                          "事件循环线程 tid {tid}（{kind:%s} 循环，OS 状态 {state}{cpu_txt:%s}）{what_zh}，位置 {at:%s}，不在 selector 中；"
                            .. "循环栈：{loop_frame}",
                          { tid = t.tid, kind = kind, state = state or "?", cpu_txt = cpu_txt, what_en = what_en,
                            at = at or where(user), loop_frame = where(frames[idx]), what_zh = what_zh }),
            cause = tr("asyncio runs every coroutine on one thread: code in {func} that does not await (time.sleep, "
                         .. "requests/sync DB client, CPU work, json.loads of a large body) holds the whole loop for "
                         .. "as long as it runs (SOP §5.1, §5.2).",
                       "asyncio 在单线程上调度所有协程：{func} 中不 await 的代码（time.sleep、requests/同步数据库客户端、CPU 计算、大 JSON 解析）运行多久，整个事"
                         .. "件循环就卡多久（SOP §5.1、§5.2）。",
                       { func = (own or user).func or "?" }),
            verify = tr("Run with PYTHONASYNCIODEBUG=1 (or loop.set_debug(True), "
                        .. "loop.slow_callback_duration = 0.1): no 'Executing <Task ...> took' warnings; "
                        .. "`sopctl dump --pid {pid}` shows the loop "
                        .. "thread in the selector (selectors.py select) between requests.",
                        "以 PYTHONASYNCIODEBUG=1 运行（或 loop.set_debug(True)、loop.slow_callback_duration = 0.1）："
                        .. "不再出现 'Executing <Task ...> took' 告警；`sopctl dump --pid {pid}` 显示请求之间事件循环线程停在 "
                        .. "selector（selectors.py select）。", { pid = ev.pid }),
          }
        end
      end
    end
    if loops == 0 then
      return clear(NO_LOOP)
    end
    if lp and lp.longest_block_ms then
      return clear(tr("{loops} event loop(s), each waiting in the selector at the snapshot; longest stretch away "
                      .. "from the selector over the window {longest_block_ms:%.0f} ms",
                      "{loops} 个事件循环，快照时都在 selector 中等待；窗口内离开 selector 最长 {longest_block_ms:%.0f} ms",
                      { loops = loops, longest_block_ms = lp.longest_block_ms }))
    end
    return clear(tr("{loops} event loop(s), each waiting in the selector at the snapshot",
                    "{loops} 个事件循环，快照时都在 selector 中等待", { loops = loops }))
  end,
}

-- §5: request tasks pile up behind one thing they all wait on (a saturated default executor, a
-- lock, a semaphore, a full queue, a downstream call that never answers). Reads ev.python.tasks
-- (the tasks read at the window's start and end, grouped by what they wait on).
local WAIT_WHAT = {
  executor = T("the default executor (run_in_executor)", "默认线程池（run_in_executor）"),
  lock = T("an asyncio.Lock", "一个 asyncio.Lock"),
  semaphore = T("an asyncio.Semaphore", "一个 asyncio.Semaphore"),
  condition = T("an asyncio.Condition", "一个 asyncio.Condition"),
  queue_put = T("a full asyncio.Queue (put)", "已满的 asyncio.Queue（put）"),
  queue_get = T("an empty asyncio.Queue (get)", "空的 asyncio.Queue（get）"),
  event = T("an asyncio.Event", "一个 asyncio.Event"),
  sleep = T("asyncio.sleep", "asyncio.sleep"),
  task = T("another task", "另一个任务"),
  gather = T("an asyncio.gather group", "一个 asyncio.gather 组"),
  wait = T("asyncio.wait / wait_for", "asyncio.wait / wait_for"),
  stream = T("a stream read", "一次流读取"),
  socket = T("a socket (loop.sock_*)", "一个 socket（loop.sock_*）"),
  future = T("a future", "一个 future"),
}

local PILE_CAUSE = {
  executor = T("loop.run_in_executor(None, ...) queues every call on the default ThreadPoolExecutor, which has "
               .. "min(32, CPUs + 4) threads: calls arrive faster than those threads finish them, so each "
               .. "request waits in the executor's unbounded queue before its call even starts (SOP §5.2).",
               "loop.run_in_executor(None, ...) 把每个调用排进默认 ThreadPoolExecutor（min(32, CPU 数 + 4) 个线程）："
               .. "调用到达得比这些线程完成得快，每个请求都要先在线程池的无界队列里等，调用才开始（SOP §5.2）。"),
  lock = T("the tasks are admitted one at a time by a lock whose holder takes longer than the arrival interval: "
           .. "they form a convoy behind it (SOP §5).",
           "任务被一把锁逐个放行，而持锁者的耗时长于到达间隔：任务在锁后排成长队（SOP §5）。"),
  semaphore = T("the tasks are admitted N at a time by a semaphore whose holders take longer than the arrival "
                .. "interval: the rest queue behind it (SOP §5).",
                "任务被信号量每次放行 N 个，而持有者的耗时长于到达间隔：其余任务在它后面排队（SOP §5）。"),
}
local PILE_CAUSE_ANY = T("tasks are created faster than what they wait on completes, with nothing bounding how many "
                         .. "are in flight: the backlog grows and every reply gets later (SOP §5).",
                         "任务创建得比它们等待的东西完成得快，且没有限制同时在途的数量：积压越来越多，每个响应都越来越晚（SOP §5）。")
local PILE_FIX = {
  executor = T("Bound the work in flight: admit requests through an asyncio.Semaphore sized to what the blocking "
               .. "backend sustains (or answer 503 when it is full); give the blocking calls an executor of their "
               .. "own, ThreadPoolExecutor(max_workers=N) passed to run_in_executor, with N measured against the "
               .. "backend; better, replace the blocking client with an async one (aiohttp, httpx.AsyncClient, an "
               .. "async DB driver); put a timeout (asyncio.wait_for) on each call.",
               "限制在途工作量：用与阻塞后端承受能力相当的 asyncio.Semaphore 控制请求准入（满了就返回 503）；"
               .. "给阻塞调用单独的线程池 ThreadPoolExecutor(max_workers=N) 传给 run_in_executor，N 按后端实测确定；"
               .. "更好的是把阻塞客户端换成异步的（aiohttp、httpx.AsyncClient、异步数据库驱动）；每个调用加超时"
               .. "（asyncio.wait_for）。"),
}
local PILE_FIX_ANY = T("Bound the tasks in flight (an asyncio.Semaphore, or a bounded asyncio.Queue between the "
                       .. "producer and a fixed set of workers), keep awaits of I/O out of critical sections, and put "
                       .. "a timeout (asyncio.wait_for / asyncio.timeout) on every downstream await.",
                       "限制在途任务数（asyncio.Semaphore，或在生产者与固定数量的工作协程之间放一个有界 asyncio.Queue），"
                       .. "不要在临界区内 await I/O，并给每个下游 await 加超时（asyncio.wait_for / asyncio.timeout）。")

rule {
  id = "asyncio.tasks_piling", section = "5", severity = "warn",
  title = T("asyncio tasks pile up behind one thing they all wait on (a saturated executor, a lock, a semaphore)",
            "asyncio 任务堆积在同一个等待对象后面（线程池饱和、锁、信号量）"),
  doc = [[Reads python.tasks (the asyncio tasks read at the window's start and end, docs/asyncio.md). Hit when the
    pending tasks grew by at least tasks_pile_min and tasks_pile_per_s per second over the window and at least
    tasks_pile_group_pct of them wait on the same thing (the same kind of wait at the same line), naming it.
    Clear when they did not grow; unknown without a window; clear when the target has no asyncio.]],
  reads = { "python.tasks", "duration_s", "pid" },
  uses = { "tasks_pile_min", "tasks_pile_per_s", "tasks_pile_group_pct" },
  symptom = T("pending asyncio tasks keep growing, all waiting on the same thing: replies get later and later",
              "待处理的 asyncio 任务不断增加，都在等同一个东西：响应越来越慢"),
  fix = PILE_FIX_ANY,
  refs = { "https://docs.python.org/3/library/asyncio-eventloop.html#asyncio.loop.run_in_executor",
           "https://docs.python.org/3/library/asyncio-sync.html#asyncio.Semaphore" },
  check = function(ev, th)
    local py = ev.python
    if not py then return unknown(common.NO_STACKS) end
    local tk = py.tasks
    if not tk then
      return clear(T("no asyncio tasks read (asyncio's C module not loaded)", "未读取到 asyncio 任务（未加载 asyncio 的 C 模块）"))
    end
    if common.no_window(ev) or tk.pending_growth == nil then
      return common.one_snapshot("no growth of pending tasks to measure", "无法度量待处理任务的增长")
    end
    local g = tk.waits and tk.waits[1]
    local per_s = tk.pending_growth_per_s or 0
    if tk.pending_growth < th.tasks_pile_min or per_s < th.tasks_pile_per_s or not g
        or g.count * 100 < th.tasks_pile_group_pct * math.max(tk.pending, 1) then
      return clear(tr("pending asyncio tasks {pending_start} -> {pending} over {window_s:%.1f} s "
                        .. "({created} created, {finished} finished): not piling up",
                      "待处理 asyncio 任务 {window_s:%.1f} 秒内 {pending_start} -> {pending}"
                        .. "（新建 {created}，完成 {finished}）：没有堆积",
                      { pending_start = tk.pending_start, pending = tk.pending, window_s = tk.window_s or 0,
                        created = tk.created or 0, finished = tk.finished or 0 }))
    end
    local what = WAIT_WHAT[g.kind] or T(g.kind, g.kind)
    return hit {
      evidence = tr("pending asyncio tasks grew from {pending_start} to {pending} in {window_s:%.1f} s "
                      .. "({per_s:%+.1f}/s; {created} created, {finished} finished); {count} of them wait on "
                      .. "{what_en} at {frame}, {whole} of those pending the whole window (e.g. task {task})",
                    "待处理 asyncio 任务在 {window_s:%.1f} 秒内从 {pending_start} 增加到 {pending}"
                      .. "（{per_s:%+.1f}/秒；新建 {created}，完成 {finished}）；其中 {count} 个在 {frame} 等待"
                      .. "{what_zh}，其中 {whole} 个整个窗口都在等（例如任务 {task}）",
                    { pending_start = tk.pending_start, pending = tk.pending, window_s = tk.window_s or 0,
                      per_s = per_s, created = tk.created or 0, finished = tk.finished or 0, count = g.count,
                      what_en = what.en, what_zh = what.zh, frame = g.frame or "?", whole = g.whole_window or 0,
                      task = g.task or "?" }),
      cause = PILE_CAUSE[g.kind] or PILE_CAUSE_ANY,
      fix = PILE_FIX[g.kind] or PILE_FIX_ANY,
      verify = tr("`sopctl tasks --pid {pid}` a few seconds apart shows the same number of pending tasks; "
                    .. "`sopctl evidence --pid {pid} --duration 5`: python.tasks.pending_growth below {min:%g}.",
                  "相隔几秒运行 `sopctl tasks --pid {pid}`，待处理任务数不变；`sopctl evidence --pid {pid} "
                    .. "--duration 5`：python.tasks.pending_growth 低于 {min:%g}。",
                  { pid = ev.pid, min = th.tasks_pile_min }),
    }
  end,
}

-- §5: a convoy of tasks on one asyncio.Lock / Semaphore: many pending tasks whose innermost await
-- is the same lock object (read by address: the `self` of their Lock/Semaphore.acquire level), at
-- the window's start and end alike, while the holder awaits something else inside its
-- `async with`. Recognised by the object the tasks wait on, never by a function name.
local CONVOY_HOLDER_WAITS = {
  sleep = T("asyncio.sleep (a stand-in for a slow call, or a retry back-off)", "asyncio.sleep（慢调用的替身，或重试退避）"),
  stream = T("a stream read (a reply from a downstream service)", "一次流读取（下游服务的应答）"),
  socket = T("a socket (loop.sock_*)", "一个 socket（loop.sock_*）"),
  executor = T("an executor job (run_in_executor)", "一个线程池任务（run_in_executor）"),
  task = T("another task", "另一个任务"),
  gather = T("an asyncio.gather group", "一个 asyncio.gather 组"),
  wait = T("asyncio.wait / wait_for", "asyncio.wait / wait_for"),
  future = T("a future (often a client library's pending reply)", "一个 future（通常是客户端库待返回的应答）"),
  queue_get = T("an empty asyncio.Queue (get)", "空的 asyncio.Queue（get）"),
  queue_put = T("a full asyncio.Queue (put)", "已满的 asyncio.Queue（put）"),
  event = T("an asyncio.Event", "一个 asyncio.Event"),
  lock = T("another asyncio.Lock", "另一个 asyncio.Lock"),
  semaphore = T("another asyncio.Semaphore", "另一个 asyncio.Semaphore"),
}

rule {
  id = "asyncio.lock_convoy", section = "5", severity = "warn",
  title = T("asyncio tasks queue on one asyncio.Lock / Semaphore whose holder awaits something slow inside it",
            "asyncio 任务在同一个 asyncio.Lock / Semaphore 上排队，而持有者在临界区内 await 慢操作"),
  doc = [[Reads python.tasks.convoys (docs/asyncio.md): the asyncio.Lock and Semaphore objects pending tasks wait
    on, found by the object each task's innermost await is the acquire of (its address, not a function name), with
    the length of its own _waiters queue and the tasks holding it (inside an `async with` on it). Hit when at least
    tasks_convoy_min tasks wait on the same object at the window's end and at least tasks_convoy_min waited on it
    at the start: a queue that lasted the window, not a momentary one. Names the waiters' acquire site and the
    holder's await chain (what it awaits while holding). Unknown without a window; clear when no object has such
    a queue, or the target has no asyncio.]],
  reads = { "python.tasks", "duration_s", "pid" },
  uses = { "tasks_convoy_min" },
  symptom = T("requests wait in line for one asyncio lock or semaphore: the service handles one (or N) at a time",
              "请求排队等同一个 asyncio 锁或信号量：服务一次只处理一个（或 N 个）"),
  cause = T("The tasks are admitted through one asyncio.Lock or Semaphore, and whoever holds it awaits I/O (a "
            .. "downstream call, a sleep, a query) before releasing it: the awaited time is serialised, so throughput "
            .. "is at most (slots / hold time) whatever the load, and every waiter's latency grows with the queue "
            .. "(SOP §5).",
            "任务经由同一个 asyncio.Lock 或 Semaphore 放行，而持有者在释放前 await I/O（下游调用、sleep、查询）："
            .. "等待时间被串行化，吞吐最多为（名额数 / 持有时间），与负载无关；每个等待者的延迟随队列变长（SOP §5）。"),
  fix = T("Shorten the critical section: do the awaited I/O outside the `async with` and take the lock only to read "
          .. "or update the shared state; cache the result with a single in-flight fetch that others await (a "
          .. "shared future) instead of holding the lock across it; for a semaphore that models a pool, size it to "
          .. "what the backend sustains and put a timeout on the acquire and on the awaited call "
          .. "(asyncio.wait_for / asyncio.timeout) so a slow downstream sheds load instead of queueing it.",
          "缩短临界区：把 await 的 I/O 移到 `async with` 之外，只在读写共享状态时持锁；用“单个在途请求 + "
          .. "其他人 await 同一个 future”的方式缓存结果，而不是持锁等待；若信号量代表连接池，按后端承受能力设定大小，"
          .. "并给 acquire 和被等待的调用加超时（asyncio.wait_for / asyncio.timeout），让慢下游丢弃负载而不是积压。"),
  refs = { "https://docs.python.org/3/library/asyncio-sync.html" },
  check = function(ev, th)
    local py = ev.python
    if not py then return unknown(common.NO_STACKS) end
    local tk = py.tasks
    if not tk then
      return clear(T("no asyncio tasks read (asyncio's C module not loaded)", "未读取到 asyncio 任务（未加载 asyncio 的 C 模块）"))
    end
    if common.no_window(ev) or tk.pending_start == nil then
      return common.one_snapshot("no queue on a lock to follow over time", "无法跟踪锁上的队列随时间的变化")
    end
    local min = th.tasks_convoy_min
    local c
    for _, x in ipairs(tk.convoys or {}) do
      if x.waiting >= min and (x.waiting_start or 0) >= min then c = x; break end
    end
    if not c then
      local top = tk.convoys and tk.convoys[1]
      if top then
        return clear(tr("at most {n} task(s) wait on one asyncio {kind} ({start} at the window's start): "
                          .. "no lasting queue",
                        "同一个 asyncio {kind} 上最多 {n} 个任务在等（窗口开始时 {start} 个）：没有持续的队列",
                        { n = top.waiting, kind = top.kind, start = top.waiting_start or 0 }))
      end
      return clear(T("no pending task waits on an asyncio.Lock or Semaphore", "没有待处理任务在等 asyncio.Lock 或 Semaphore"))
    end
    local state
    if c.kind == "lock" then
      state = tr("{q} queued in its _waiters, locked: {locked}", "其 _waiters 中排队 {q} 个，locked: {locked}",
                 { q = c.queue or -1, locked = tostring(c.locked) })
    else
      state = tr("{q} queued in its _waiters, free slots: {v}", "其 _waiters 中排队 {q} 个，空闲名额：{v}",
                 { q = c.queue or -1, v = c.value or -1 })
    end
    local holder
    if c.holder then
      local w = CONVOY_HOLDER_WAITS[c.holder_waits] or T(c.holder_waits or "?", c.holder_waits or "?")
      holder = tr("; held by task \"{h}\" ({n} holder(s) seen), which awaits {w_en} at {f} (await chain: {chain})",
                  "；持有者为任务 \"{h}\"（共看到 {n} 个持有者），它在 {f} 等待{w_zh}（await 链：{chain}）",
                  { h = c.holder, n = c.holders or 1, w_en = w.en, w_zh = w.zh, f = c.holder_frame or "?",
                    chain = c.holder_chain or "?" })
    else
      holder = T("; no holder seen (taken by `await acquire()` rather than `async with`, or held by code that is not "
                 .. "a task)", "；未看到持有者（用 `await acquire()` 而非 `async with` 获取，或由非任务代码持有）")
    end
    return hit {
      evidence = tr("{n} asyncio tasks wait on one asyncio.{type} acquired at {site} "
                      .. "({start} waited on it at the window's start, {whole} of them at both reads; {state}; "
                      .. "e.g. task \"{task}\"){holder}",
                    "{n} 个 asyncio 任务在 {site} 等待同一个 asyncio.{type}（窗口开始时 {start} 个，"
                      .. "其中 {whole} 个两次读取时都在等；{state}；例如任务 \"{task}\"）{holder}",
                    { n = c.waiting, type = c.type or "?", kind = c.kind, site = c.site or "?",
                      start = c.waiting_start or 0, whole = c.whole_window or 0, state = state, task = c.task or "?",
                      holder = holder }),
      verify = tr("`sopctl tasks --pid {pid}`: the lock's line under \"Locks and semaphores tasks wait on\" shows "
                    .. "fewer than {min} waiting, run a few seconds apart.",
                  "相隔几秒运行 `sopctl tasks --pid {pid}`：\"Locks and semaphores tasks wait on\" 下该锁的等待数少于 {min}。",
                  { pid = ev.pid, min = min }),
    }
  end,
}

-- §5: a stuck request: a task pending through the whole window while nearly all its siblings (the
-- tasks of the same coroutine pending at the window's start) finished within it. Reads
-- python.tasks.stuck (the window's two reads; the age is a lower bound: the window).
rule {
  id = "asyncio.task_stuck", section = "5", severity = "warn",
  title = T("an asyncio task has been pending far longer than its siblings (a stuck request)",
            "一个 asyncio 任务比同类任务挂起得久得多（卡住的请求）"),
  doc = [[Reads python.tasks.stuck (docs/asyncio.md): per coroutine function, the tasks pending at the window's start
    read, how many of them finished by the end read, and those pending at both (at least window_s old: CPython keeps
    no creation time on a task, so the age is measured by the two reads). Hit when at least tasks_stuck_siblings of
    those siblings finished within the window while no more than tasks_stuck_pct% of them stayed pending: the
    typical sibling lives less than the window, the stuck one longer. Names the task, its age bound, what it waits
    on and its await chain. Unknown without a window; clear when no such task.]],
  reads = { "python.tasks", "duration_s", "pid" },
  uses = { "tasks_stuck_siblings", "tasks_stuck_pct" },
  symptom = T("one request never finishes while the others of its kind come and go",
              "一个请求一直不结束，而同类请求来来去去"),
  cause = T("The task awaits something that does not answer and nothing bounds the wait: a downstream call with no "
            .. "timeout (a peer that accepted the connection and went silent), a future or event that no code path "
            .. "will set, a queue nobody feeds any more. Its caller waits with it, and whatever it holds (a "
            .. "connection, a lock, memory) stays held (SOP §5).",
            "任务在等一个不会应答的东西，且等待没有上限：没有超时的下游调用（对端接受了连接却不再回应）、"
            .. "没有任何代码路径会设置的 future 或 event、没人再往里放数据的队列。调用方跟着一起等，它持有的东西"
            .. "（连接、锁、内存）也一直不释放（SOP §5）。"),
  fix = T("Put a deadline on every downstream await: asyncio.wait_for(..., timeout) or `async with "
          .. "asyncio.timeout(s)` (3.11+), the client's own timeout (aiohttp.ClientTimeout(total=...), "
          .. "httpx timeouts, the DB driver's command timeout); make sure every path sets or cancels a future it "
          .. "hands out; cancel a request's task when its client disconnects. Then find why that one call hangs "
          .. "from the await chain above.",
          "给每个下游 await 设截止时间：asyncio.wait_for(..., timeout) 或 `async with asyncio.timeout(s)`（3.11+）、"
          .. "客户端自身的超时（aiohttp.ClientTimeout(total=...)、httpx 超时、数据库驱动的命令超时）；确保交出的 future "
          .. "在每条路径上都会被设置或取消；客户端断开时取消对应请求的任务。再根据上面的 await 链查明那次调用为什么卡住。"),
  refs = { "https://docs.python.org/3/library/asyncio-task.html#timeouts" },
  check = function(ev, th)
    local py = ev.python
    if not py then return unknown(common.NO_STACKS) end
    local tk = py.tasks
    if not tk then
      return clear(T("no asyncio tasks read (asyncio's C module not loaded)", "未读取到 asyncio 任务（未加载 asyncio 的 C 模块）"))
    end
    if common.no_window(ev) or tk.pending_start == nil then
      return common.one_snapshot("no task age to measure", "无法度量任务的存活时间")
    end
    local s
    for _, x in ipairs(tk.stuck or {}) do
      if x.siblings_finished >= th.tasks_stuck_siblings
          and x.count * 100 <= th.tasks_stuck_pct * x.siblings_start then
        s = x
        break
      end
    end
    if not s then
      return clear(T("no task outlived the window while its siblings came and went",
                     "没有任务在同类任务来来去去时挂起整个窗口"))
    end
    local w = WAIT_WHAT[s.waits] or T(s.waits or "?", s.waits or "?")
    return hit {
      evidence = tr("task \"{task}\" (coroutine {coro}) has been pending for at least {age:%.1f} s (at both reads of "
                      .. "the window) while {fin} of the {start} tasks of the same coroutine pending at the window's "
                      .. "start finished within it ({n} stayed, itself included; {created} new ones pending at the "
                      .. "end); it waits on {w_en} at {frame} (await chain: {chain})",
                    "任务 \"{task}\"（协程 {coro}）至少已挂起 {age:%.1f} 秒（窗口的两次读取时都在），而窗口开始时同一协程的 "
                      .. "{start} 个待处理任务中有 {fin} 个在窗口内完成（留下 {n} 个，含它自己；结束时另有 {created} 个新任务待处理）；它在 "
                      .. "{frame} 等待{w_zh}（await 链：{chain}）",
                    { task = s.task, coro = s.coroutine or "?", age = s.age_min_s or 0, fin = s.siblings_finished,
                      start = s.siblings_start, created = s.siblings_created or 0, n = s.count, w_en = w.en,
                      w_zh = w.zh, frame = s.frame or "?", chain = s.chain or "?" }),
      verify = tr("`sopctl tasks --pid {pid}` twice, a few seconds apart: task \"{task}\" is gone or its chain "
                    .. "moved on; after the fix, a hung downstream call ends in a timeout error instead.",
                  "相隔几秒运行两次 `sopctl tasks --pid {pid}`：任务 \"{task}\" 已消失或其 await 链已前进；修复后，"
                    .. "挂起的下游调用会以超时错误结束。",
                  { pid = ev.pid, task = s.task }),
    }
  end,
}

-- §5: fire-and-forget tasks: pending tasks nothing refers to but what they await (ob_refcnt 1),
-- the same tasks at both reads of the window. asyncio keeps only weak references to tasks.
rule {
  id = "asyncio.fire_and_forget", section = "5", severity = "info",
  title = T("asyncio tasks were created and forgotten: nothing holds a reference to them",
            "asyncio 任务创建后被遗忘：没有任何引用持有它们"),
  doc = [[Reads python.tasks.unreferenced_both and python.tasks.forgotten (docs/asyncio.md): pending tasks whose only
    reference is the wakeup callback of what they await (their ob_refcnt is 1: no variable, collection, done-callback
    closure or awaiting task holds them), the same tasks at both reads of the window. Hit (info) when at least
    tasks_forgotten_min such tasks lasted the window, naming their coroutine. Unknown without a window; clear when
    every pending task is referenced.]],
  reads = { "python.tasks", "duration_s", "pid" },
  uses = { "tasks_forgotten_min" },
  symptom = T("tasks run with no reference kept: their failures go unseen and they can vanish mid-flight",
              "任务运行时没有保留引用：它们的失败无人察觉，所等待的对象一旦被回收它们就中途消失"),
  cause = T("asyncio.create_task / ensure_future was called and its result dropped. The event loop keeps only weak "
            .. "references to tasks, so such a task lives only as long as what it awaits is reachable: when that is "
            .. "collected the task is destroyed while pending (\"Task was destroyed but it is pending!\"); nobody "
            .. "awaits it, so its exception is only logged at garbage collection (\"Task exception was never "
            .. "retrieved\"), and nothing can cancel it at shutdown (SOP §5).",
            "调用了 asyncio.create_task / ensure_future 却丢弃了返回值。事件循环对任务只保留弱引用，这样的任务只在它等待的"
            .. "对象可达时才存活：那个对象被回收时任务就在挂起状态下被销毁（\"Task was destroyed but it is pending!\"）；"
            .. "没人 await 它，它的异常只在垃圾回收时被记录（\"Task exception was never retrieved\"），关闭时也无法取消它"
            .. "（SOP §5）。"),
  fix = T("Keep every task you create: add it to a set and discard it when done (tasks.add(t); "
          .. "t.add_done_callback(tasks.discard)), or run them in an asyncio.TaskGroup (3.11+) / await them with "
          .. "asyncio.gather; log or handle each task's exception in its done-callback; cancel and await the set at "
          .. "shutdown.",
          "保存创建的每个任务：放进一个集合并在完成时移除（tasks.add(t); t.add_done_callback(tasks.discard)），"
          .. "或在 asyncio.TaskGroup（3.11+）中运行 / 用 asyncio.gather 等待它们；在 done 回调里记录或处理每个任务的异常；"
          .. "关闭时取消并等待这个集合。"),
  refs = { "https://docs.python.org/3/library/asyncio-task.html#asyncio.create_task" },
  check = function(ev, th)
    local py = ev.python
    if not py then return unknown(common.NO_STACKS) end
    local tk = py.tasks
    if not tk then
      return clear(T("no asyncio tasks read (asyncio's C module not loaded)", "未读取到 asyncio 任务（未加载 asyncio 的 C 模块）"))
    end
    if common.no_window(ev) then
      return common.one_snapshot("no forgotten task to follow over the window", "无法在窗口内跟踪被遗忘的任务")
    end
    if tk.unreferenced_both == nil then
      return unknown(T("the tasks' reference counts were not read (evidence from an older sopctl)",
                       "未读取任务的引用计数（旧版 sopctl 采集的证据）"))
    end
    local g = tk.forgotten and tk.forgotten[1]
    if tk.unreferenced_both < th.tasks_forgotten_min or not g then
      return clear(tr("{n} pending task(s) unreferenced at the end, {both} of them through the window",
                      "结束时 {n} 个待处理任务无引用，其中 {both} 个整个窗口都是如此",
                      { n = tk.unreferenced or 0, both = tk.unreferenced_both }))
    end
    local w = WAIT_WHAT[g.waits] or T(g.waits or "?", g.waits or "?")
    return hit {
      evidence = tr("{n} pending asyncio task(s) are referenced by nothing but what they await ({both} of them at both "
                      .. "reads of the window); {count} of them run coroutine {coro} (e.g. task \"{task}\", waiting on "
                      .. "{w_en} at {frame})",
                    "{n} 个待处理 asyncio 任务除了它们等待的对象外没有任何引用（其中 {both} 个在窗口的两次读取时都是如此）；"
                      .. "其中 {count} 个运行协程 {coro}（例如任务 \"{task}\"，在 {frame} 等待{w_zh}）",
                    { n = tk.unreferenced, both = tk.unreferenced_both, count = g.count, coro = g.coroutine or "?",
                      task = g.task or "?", w_en = w.en, w_zh = w.zh, frame = g.frame or "?" }),
      verify = tr("`sopctl tasks --pid {pid} --json`: no pending task has \"unreferenced\": true.",
                  "`sopctl tasks --pid {pid} --json`：没有待处理任务带 \"unreferenced\": true。", { pid = ev.pid }),
    }
  end,
}

-- §5.4: a busy event loop on asyncio's own (pure-Python) loop where uvloop would do the same
-- work in C. Info: an optimisation, not a defect; not when the loop is stuck in a callback
-- (asyncio.loop_blocked: uvloop would not help).
rule {
  id = "asyncio.no_uvloop", section = "5.4", severity = "info",
  title = T("a busy asyncio server runs on the default event loop, not uvloop",
            "繁忙的 asyncio 服务使用默认事件循环，而不是 uvloop"),
  doc = [[Hit (info) when a thread runs asyncio's default loop (base_events.run_forever on its stack) and
    uses at least uvloop_busy_pct of a core over the window, while the loop is not stuck in one
    callback (python.loop.longest_block_ms below loop_block_ms). Clear for uvloop loops and idle loops.]],
  reads = { "python.threads[].frames", "python.loop", "threads[].cpu_pct", "proc.libs", "duration_s", "pid",
            "python.threads[].tid", "threads[].tid", "threads[].wait_pct" },
  uses = { "uvloop_busy_pct", "loop_block_ms" },
  symptom = T("a busy asyncio server runs on the default (pure-Python) event loop",
              "繁忙的 asyncio 服务使用默认（纯 Python）事件循环"),
  cause = T("asyncio's default loop schedules callbacks and handles sockets in Python; uvloop (libuv, Cython) "
            .. "does the same in C, typically 2-4x faster on HTTP-style workloads (SOP §5.4).",
            "asyncio 默认循环用 Python 调度回调和处理 socket；uvloop（libuv + Cython）用 C 做同样的事，"
            .. "HTTP 类负载通常快 2~4 倍（SOP §5.4）。"),
  fix = T("Install uvloop and call uvloop.install() first thing in main (Python 3.11+: "
          .. "asyncio.set_event_loop_policy(uvloop.EventLoopPolicy()), or uvloop.run(main())); uvicorn: "
          .. "--loop uvloop. Benchmark before and after.",
          "安装 uvloop，并在 main 最前面调用 uvloop.install()（Python 3.11+：asyncio.set_event_loop_policy("
          .. "uvloop.EventLoopPolicy())，或 uvloop.run(main())）；uvicorn：--loop uvloop。前后做基准对比。"),
  refs = { "https://github.com/MagicStack/uvloop", "https://docs.python.org/3/library/asyncio-policy.html" },
  check = function(ev, th)
    local py = ev.python
    if not py or not py.threads then
      return unknown(common.NO_STACKS)
    end
    if common.no_window(ev) then return common.one_snapshot("no loop CPU to judge", "没有循环的 CPU 数据") end
    local os_threads = {}
    for _, t in ipairs(ev.threads or {}) do os_threads[t.tid] = t end
    local uvloop_loaded = false
    for _, l in ipairs(ev.proc and ev.proc.libs or {}) do
      if l.kind == "uvloop" then uvloop_loaded = true end
    end
    local found
    for _, t in ipairs(py.threads) do
      local idx, kind = loop_dispatch(t.frames or {})
      if idx then
        local o = os_threads[t.tid] or {}
        -- what the thread wanted: its CPU and its run-queue wait (beside foreign load it queues)
        local want = o.cpu_pct and o.cpu_pct + (o.wait_pct or 0)
        found = found or { tid = t.tid, kind = kind, cpu = want }
        if kind == "asyncio" and want and want >= th.uvloop_busy_pct then
          found = { tid = t.tid, kind = kind, cpu = want }
          break
        end
      end
    end
    if not found then
      return clear(NO_LOOP)
    end
    if found.kind ~= "asyncio" then
      return clear(tr("the event loop (tid {tid}) runs on uvloop",
                      "事件循环（tid {tid}）运行在 uvloop 上", { tid = found.tid }))
    end
    if not found.cpu or found.cpu < th.uvloop_busy_pct then
      return clear(tr("asyncio loop thread tid {tid} used or waited in the run queue for {cpu:%.0f}% of a core "
                        .. "(< {uvloop_busy_pct:%g}%): not busy enough for the loop's own cost to matter",
                      "asyncio 事件循环线程 tid {tid} 运行加排队等 CPU 共 {cpu:%.0f}% 个核（< {uvloop_busy_pct:%g}%）：负载不高，"
                        .. "循环本身的开销无关紧要",
                      { tid = found.tid, cpu = found.cpu or 0, uvloop_busy_pct = th.uvloop_busy_pct }))
    end
    local lp = py.loop
    if lp and lp.longest_block_ms and lp.longest_block_ms >= th.loop_block_ms then
      return clear(tr("the loop is busy because one callback holds it ({longest_block_ms:%.0f} ms): see "
                        .. "asyncio.loop_blocked; uvloop would not help",
                      "循环繁忙是因为某个回调占住了它（{longest_block_ms:%.0f} ms）：见 asyncio.loop_blocked；uvloop 帮不上",
                      { longest_block_ms = lp.longest_block_ms }))
    end
    local longest = lp and lp.longest_block_ms and fmt("; longest stretch away from the selector %.0f ms",
                                                         lp.longest_block_ms) or ""
    local longest_zh = lp and lp.longest_block_ms and fmt("；离开 selector 最长 %.0f ms", lp.longest_block_ms) or ""
    return hit {
      evidence = tr("event-loop thread tid {tid} used {cpu:%.0f}% of a core over {duration_s:%.1f} s on asyncio's "
                      .. "default loop (base_events.run_forever){longest_en:%s}; uvloop {uvloop_en}",
                    "事件循环线程 tid {tid} 在 {duration_s:%.1f} 秒内用了单核 {cpu:%.0f}%，运行的是 asyncio 默认循环（"
                      .. "base_events.run_forever）{longest_zh}；uvloop {uvloop_zh}",
                    { tid = found.tid, cpu = found.cpu, duration_s = ev.duration_s, longest_en = longest,
                      uvloop_en = uvloop_loaded and "is loaded but not the running loop" or "is not loaded",
                      longest_zh = longest_zh, uvloop_zh = uvloop_loaded and "已加载但未被使用" or "未加载" }),
      verify = tr("`sopctl dump --pid {pid}` shows no base_events.run_forever frame on the loop thread; the loop "
                  .. "thread's CPU per request drops (`sopctl run --pid {pid} --duration 5`)",
                  "`sopctl dump --pid {pid}` 的循环线程栈里不再有 base_events.run_forever；每个请求的 CPU 下降"
                  .. "（`sopctl run --pid {pid} --duration 5`）", { pid = ev.pid }),
    }
  end,
}
