-- plugins/progress.lua — SOP §9, is the job making progress (issue 38): a hang, where no thread
-- runs and none waits on outside work (a socket, a pipe, a file, a timer, a child, a signal), so
-- only its own threads could wake each other and none does. What each thread sleeps in comes
-- from /proc/PID/task/TID/syscall (threads[].wait at the window's end, the sampled Python
-- threads' *_wait_frac over it). The test itself is common.stall (summary.verdict reads it too).
-- Thresholds: hang_*.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local REFS = {
  "https://docs.python.org/3/library/concurrent.futures.html#threadpoolexecutor",
  "https://docs.python.org/3/library/threading.html#lock-objects",
  "https://man7.org/linux/man-pages/man2/futex.2.html",
}

rule {
  id = "progress.hang", section = "9", severity = "high",
  title = T("The job makes no progress: its threads wait on each other (a deadlock or a pool that waits on itself)",
            "作业没有进展：线程互相等待（死锁，或线程池等待自身）"),
  doc = [[High when, over the window (at least hang_min_s), the process and its children used at most
    hang_cpu_pct of one core, no thread was running or in D state at its end, every thread of the process was
    asleep on a futex with no timeout or on the GIL (threads[].wait "lock"/"gil": only another thread of the
    process can wake it), no child process ran, and each sampled Python thread slept that way at least
    hang_wait_frac of its samples on one stack. A thread waiting on a socket, a pipe, a file, a timer, a child
    or a signal, or a futex with a timeout, clears it: the job may be idle, waiting for work (healthy). The
    waiters are grouped by the frame they wait in.]],
  reads = { "alive", "duration_s", "proc.cpu_pct", "threads[].tid", "threads[].state", "threads[].wait",
            "threads[].name", "children[].state", "children[].cpu_pct", "children[].pid",
            "python.threads[].tid", "python.threads[].name", "python.threads[].frames",
            "python.threads[].window.samples", "python.threads[].window.lock_wait_frac",
            "python.threads[].window.gil_wait_frac", "python.threads[].window.top_stacks", "pid",
            "proc.cmdline", "proc.cwd", "proc.env" },
  uses = { "hang_cpu_pct", "hang_wait_frac", "sampled_min_samples" },
  cause = T("§9: every thread sleeps on a lock, a condition, a queue or a future that only another thread of "
            .. "the process can release, and none runs, so none ever will: a deadlock. The usual shapes: tasks "
            .. "of a pool that block on results of tasks queued to the same pool (all workers wait, the "
            .. "sub-tasks never start); two locks taken in opposite orders; a join or result() on work that "
            .. "is itself waiting; a queue nobody will feed.",
            "§9：每个线程都睡在只有本进程其他线程才能释放的锁、条件变量、队列或 future 上，而没有线程在运行，"
            .. "所以永远不会被唤醒：死锁。常见形态：线程池中的任务阻塞等待提交到同一个池的子任务结果（所有 worker "
            .. "都在等，子任务永远排不上）；两把锁以相反顺序获取；对本身在等待的工作 join 或 result()；没人会"
            .. "往里放东西的队列。"),
  fix = T("Break the cycle the stacks show. A pool waiting on itself: give sub-tasks their own pool, or do not "
          .. "block inside a task (return the sub-futures and wait outside, add_done_callback, or asyncio "
          .. "gather); a pool larger than the nesting only hides it. Locks: take them in one fixed order "
          .. "everywhere (or use one lock); acquire(timeout=...) with a log turns a silent hang into an error. "
          .. "`sopctl dump --pid N` (py-spy dump) shows each waiter's frame.",
          "打破栈里显示的等待环。线程池等待自身：给子任务单独的池，或者不要在任务里阻塞（返回子 future 在外面"
          .. "等待、add_done_callback，或 asyncio gather）；把池调大于嵌套深度只是掩盖问题。锁：所有地方按同一"
          .. "固定顺序获取（或只用一把锁）；acquire(timeout=...) 加日志能把无声的卡死变成报错。"
          .. "`sopctl dump --pid N`（py-spy dump）显示每个等待者所在的帧。"),
  refs = REFS,
  check = function(ev, th)
    local s, why = common.stall(ev, th)
    if not s then return unknown(why) end
    if not s.stalled then return clear(s.why) end
    return hit {
      symptom = tr("No progress: {n} threads wait on each other, none runs (a deadlock)",
                   "没有进展：{n} 个线程互相等待，没有线程在运行（死锁）", { n = s.nthreads }),
      evidence = tr("over {d:%.1f} s the process used {cpu:%.1f}% of a core{kids}; all {n} threads slept on locks, "
                      .. "conditions or futures with no timeout (futex), none on a socket, file, timer, child or "
                      .. "signal; the same stacks throughout: {groups}",
                    "{d:%.1f} 秒内进程只用了 {cpu:%.1f}% 个核{kids}；全部 {n} 个线程都睡在没有超时的锁、条件变量或 "
                      .. "future 上（futex），没有线程在等 socket、文件、定时器、子进程或信号；整个窗口栈不变：{groups}",
                    { d = ev.duration_s, cpu = s.cpu, n = s.nthreads, groups = s.groups,
                      kids = s.nchildren > 0 and tr(" (its {c} child processes none)", "（其 {c} 个子进程为 0）",
                                                    { c = s.nchildren }) or T("", "") }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: threads run or wait on outside work; `sopctl dump --pid "
                    .. "{pid}` twice shows the stacks moving",
                  "`sopctl run --pid {pid} --duration 3`：有线程在运行或在等外部工作；两次 `sopctl dump --pid {pid}` "
                    .. "栈在变化", { pid = ev.pid }),
    }
  end,
}

-- The nearest task limit for `current` tasks growing at `rate`/s: the seconds to reach it, its name.
-- Limits: the cgroup's pids.max (what the group holds beyond this process counts), RLIMIT_NPROC, the
-- host's threads-max and pid_max (this process alone: an optimistic bound).
local function task_limit(ev, current, rate)
  local best_s, best_name, best_limit
  local function try(limit, used, name)
    if not limit or limit <= 0 or not used then return end
    local s = math.max(0, limit - used) / rate
    if not best_s or s < best_s then best_s, best_name, best_limit = s, name, limit end
  end
  local pids = ev.cgroup and ev.cgroup.pids
  if pids and not pids.unlimited then try(pids.max, pids.current, "the cgroup's pids.max") end
  local p = ev.proc or {}
  if p.nproc_limit and p.nproc_limit > 0 then try(p.nproc_limit, current, "RLIMIT_NPROC (ulimit -u)") end
  local h = ev.host or {}
  try(h.threads_max, current, "the host's kernel.threads-max")
  try(h.pid_max, current, "the host's kernel.pid_max")
  return best_s, best_name, best_limit
end

local function duration_text(s)
  if s < 120 then return tr("{v:%.0f} s", "{v:%.0f} 秒", { v = s }) end
  if s < 7200 then return tr("{v:%.0f} min", "{v:%.0f} 分钟", { v = s / 60 }) end
  return tr("{v:%.1f} h", "{v:%.1f} 小时", { v = s / 3600 })
end

local function severity_for(s, th)
  if not s then return "info" end
  if s <= th.grow_high_s then return "high" end
  if s <= th.grow_warn_s then return "warn" end
  return "info"
end

local function limit_text(ev, current, rate, th)
  local s, name, limit = task_limit(ev, current, rate)
  if not s then
    return severity_for(nil, th), T("; no task limit read", "；未读到任务数上限")
  end
  return severity_for(s, th), tr("; at this rate {name_en} ({limit}) is reached in {when}",
                                 "；按此速率 {when}后达到 {name_zh}（{limit}）",
                                 { name_en = name, name_zh = name, limit = limit, when = duration_text(s) })
end

local GROW_READS = { "cgroup.pids.max", "cgroup.pids.current", "cgroup.pids.unlimited", "proc.nproc_limit",
                     "host.threads_max", "host.pid_max" }
local function reads(extra)
  local out = {}
  for _, k in ipairs(GROW_READS) do out[#out + 1] = k end
  for _, k in ipairs(extra) do out[#out + 1] = k end
  return out
end

rule {
  id = "progress.threads_grow", section = "9", severity = "warn",
  title = T("The thread count grows steadily (a thread leak)", "线程数持续增长（线程泄漏）"),
  doc = [[A hit when the process had at least grow_min_threads more threads at the window's end than at its
    start, the threads alive at the end that were born in the window came in both halves of it (each at least
    grow_steady_share: a pool filling up at once is no leak) and the growth is at least grow_kept_share of those
    births (they do not exit). Severity from the projection: the nearest task limit (the cgroup's pids.max,
    RLIMIT_NPROC, kernel.threads-max, kernel.pid_max) reached within grow_high_s at the window's rate is high,
    within grow_warn_s warn, later info. The new threads are grouped by the frame they sit in.]],
  reads = reads({ "duration_s", "proc.threads", "proc.threads_start", "proc.threads_growth_per_s", "threads[].tid",
                  "threads[].age_s", "threads[].wait", "python.threads[].tid", "python.threads[].frames",
                  "proc.cmdline", "proc.cwd", "proc.env", "pid", "alive" }),
  uses = { "grow_min_threads", "grow_steady_share", "grow_kept_share", "grow_high_s", "grow_warn_s" },
  cause = T("§9: threads are started and never end: one per job, request or connection that then blocks "
            .. "forever (a reply that never comes, a queue nobody feeds, a join on itself), or a pool created "
            .. "per call and never shut down. Each holds a stack and a task slot until the process meets its "
            .. "limit: `can't start new thread`, then failures everywhere.",
            "§9：线程启动后从不结束：每个任务、请求或连接一个线程，然后永远阻塞（等不到的回复、没人喂的队列、"
            .. "等待自身的 join），或者每次调用都新建线程池且从不 shutdown。每个线程占着栈和一个任务名额，直到进程"
            .. "碰到上限：`can't start new thread`，然后处处失败。"),
  fix = T("Bound the threads: a fixed pool (ThreadPoolExecutor(max_workers=N)) created once, not per call, and "
          .. "`with`/shutdown() for pools that are; give every blocking wait a timeout (queue.get(timeout=), "
          .. "Event.wait(timeout=), socket timeouts) and end the thread when it expires. The frames below are "
          .. "where the new threads sit.",
          "限制线程数：固定大小的池（ThreadPoolExecutor(max_workers=N)）只创建一次，而不是每次调用都建；确实按"
          .. "调用创建的池用 `with`/shutdown()；每个阻塞等待都带超时（queue.get(timeout=)、Event.wait(timeout=)、"
          .. "socket 超时），超时后结束线程。下面的帧是新线程停留的位置。"),
  refs = { "https://docs.python.org/3/library/concurrent.futures.html#threadpoolexecutor",
           "https://docs.python.org/3/library/threading.html#thread-objects" },
  check = function(ev, th)
    if ev.alive == false then return unknown(T("the process is gone", "进程已不存在")) end
    local p = ev.proc
    if common.no_window(ev) or not p or not p.threads_start or not p.threads then
      return unknown(common.one_snapshot_text("no thread count at the window's start", "没有窗口开始时的线程数"))
    end
    local d = ev.duration_s
    local grew = p.threads - p.threads_start
    local base = tr("threads {a} → {b} over {d:%.1f} s", "{d:%.1f} 秒内线程 {a} → {b}",
                    { a = p.threads_start, b = p.threads, d = d })
    if grew < th.grow_min_threads then
      return clear(tr("{base} (a leak needs {min} more)", "{base}（泄漏的阈值：多 {min} 个）",
                      { base = base, min = th.grow_min_threads }))
    end
    local early, late, born = 0, 0, {}
    for _, t in ipairs(ev.threads or {}) do
      if t.age_s and t.age_s < d then
        born[t.tid] = true
        if t.age_s >= d / 2 then early = early + 1 else late = late + 1 end
      end
    end
    local nborn = early + late
    if nborn == 0 or early < th.grow_steady_share * nborn or late < th.grow_steady_share * nborn then
      return clear(tr("{base}; of the {n} threads born in the window {e} came in its first half, {l} in its "
                        .. "second: a burst (a pool filling up), not a steady leak",
                      "{base}；窗口内新生的 {n} 个线程中前半段 {e} 个、后半段 {l} 个：是一次性增长（线程池填满），"
                        .. "不是持续泄漏", { base = base, n = nborn, e = early, l = late }))
    end
    if grew < th.grow_kept_share * nborn then
      return clear(tr("{base}; {n} threads born in the window, the count grew by {g}: most of them end",
                      "{base}；窗口内新生 {n} 个线程，总数只增加 {g}：多数会结束", { base = base, n = nborn, g = grew }))
    end
    local rate = p.threads_growth_per_s or grew / d
    local sev, lim = limit_text(ev, p.threads, rate, th)
    -- where the new threads sit: their frames, grouped
    local groups, order = {}, {}
    for _, t in ipairs(ev.python and ev.python.threads or {}) do
      if t.tid and born[t.tid] then
        local label = common.user_frame(t.frames, ev) or "?"
        if not groups[label] then groups[label], order[#order + 1] = 0, label end
        groups[label] = groups[label] + 1
      end
    end
    table.sort(order, function(a, b) return groups[a] > groups[b] end)
    local parts = {}
    for i = 1, math.min(3, #order) do parts[#parts + 1] = fmt("%d × %s", groups[order[i]], order[i]) end
    local where = #parts > 0 and tr("; the new threads sit in {w}", "；新线程停在 {w}", { w = table.concat(parts, "; ") })
                  or T("", "")
    return hit {
      severity = sev,
      symptom = tr("Threads leak: +{r:%.1f}/s ({a} → {b} in {d:%.1f} s), none of the new ones ends",
                   "线程泄漏：每秒 +{r:%.1f}（{d:%.1f} 秒内 {a} → {b}），新线程没有一个结束",
                   { r = rate, a = p.threads_start, b = p.threads, d = d }),
      evidence = tr("{base}; {n} threads born in the window ({e} in its first half, {l} in its second), all still "
                      .. "alive{lim}{where}",
                    "{base}；窗口内新生 {n} 个线程（前半段 {e}，后半段 {l}），全部仍在{lim}{where}",
                    { base = base, n = nborn, e = early, l = late, lim = lim, where = where }),
      verify = tr("`sopctl run --pid {pid} --duration 5`: proc.threads_growth_per_s near 0 under the same load",
                  "`sopctl run --pid {pid} --duration 5`：同样负载下 proc.threads_growth_per_s 接近 0", { pid = ev.pid }),
    }
  end,
}

rule {
  id = "progress.zombies", section = "9", severity = "warn",
  title = T("Child processes exit and are never waited for (zombies pile up)", "子进程退出后从未被 wait（僵尸进程堆积）"),
  doc = [[Counts every child of the target (proc.children_direct; children[] is bounded) and its zombies at the
    window's start and end. A hit when the zombies grew by at least zombie_min_growth (severity from the projection
    to the nearest task limit, as progress.threads_grow: a zombie holds a pid and a task slot until reaped), or,
    not growing, when at least zombie_held_warn are held (warn). A zombie is not a worker: summary.verdict counts
    them apart.]],
  reads = reads({ "duration_s", "proc.zombies", "proc.zombies_start", "proc.zombies_growth_per_s",
                  "proc.children_direct", "proc.threads", "children[].state", "children[].comm", "children[].ppid",
                  "pid", "proc.comm", "alive" }),
  uses = { "zombie_min_growth", "zombie_held_warn", "grow_high_s", "grow_warn_s" },
  cause = T("§9: a child that exits stays a zombie (its pid and exit status kept) until its parent waits for it. "
            .. "subprocess.Popen without wait()/communicate() (kept in a list, so never collected), os.fork without "
            .. "os.waitpid, multiprocessing.Process without join(): each run leaves one, until the pid or task "
            .. "limit is hit and every fork fails.",
            "§9：子进程退出后一直是僵尸（保留 pid 和退出状态），直到父进程 wait 它。subprocess.Popen 不调用 "
            .. "wait()/communicate()（又存进列表，永远不被回收）、os.fork 不 os.waitpid、multiprocessing.Process 不 "
            .. "join()：每次都留下一个，直到碰到 pid 或任务数上限，所有 fork 都失败。"),
  fix = T("Wait for every child: subprocess.run(), or Popen.wait()/communicate() (poll() in a loop for many at "
          .. "once); os.waitpid for os.fork; join() for multiprocessing.Process, close()+join() for a Pool. For "
          .. "children nobody needs the status of, signal.signal(SIGCHLD, SIG_IGN) lets the kernel reap them "
          .. "(side effect: wait() then fails with ECHILD, subprocess's returncode is lost).",
          "wait 每个子进程：subprocess.run()，或 Popen.wait()/communicate()（多个时循环 poll()）；os.fork 配 "
          .. "os.waitpid；multiprocessing.Process 配 join()，Pool 配 close()+join()。不需要退出状态的子进程，"
          .. "signal.signal(SIGCHLD, SIG_IGN) 让内核回收（副作用：wait() 会以 ECHILD 失败，subprocess 的 "
          .. "returncode 丢失）。"),
  refs = { "https://docs.python.org/3/library/subprocess.html#subprocess.Popen.wait",
           "https://man7.org/linux/man-pages/man2/wait.2.html" },
  check = function(ev, th)
    if ev.alive == false then return unknown(T("the process is gone", "进程已不存在")) end
    local p = ev.proc
    if not p or not p.zombies then
      return unknown(T("its children were not counted", "未统计其子进程"))
    end
    local z, z0 = p.zombies, p.zombies_start
    local base = tr("{z} zombie children of {n} (pid {pid}, {comm})", "{n} 个子进程中 {z} 个僵尸（pid {pid}，{comm}）",
                    { z = z, n = p.children_direct or z, pid = ev.pid, comm = p.comm or "?" })
    local names = {}
    for _, c in ipairs(ev.children or {}) do
      if c.state == "Z" and c.ppid == ev.pid and c.comm then names[c.comm] = (names[c.comm] or 0) + 1 end
    end
    local top, topn = nil, 0
    for k, v in pairs(names) do if v > topn then top, topn = k, v end end
    local what = top and tr(" (most were `{c}`)", "（多数是 `{c}`）", { c = top }) or T("", "")
    local grew = z0 and z - z0
    if grew and not common.no_window(ev) and grew >= th.zombie_min_growth then
      local rate = p.zombies_growth_per_s or grew / ev.duration_s
      local sev, lim = limit_text(ev, (p.threads or 0) + z, rate, th)
      return hit {
        severity = sev,
        symptom = tr("Zombies pile up: +{r:%.1f}/s ({a} → {b} in {d:%.1f} s), children never waited for",
                     "僵尸进程堆积：每秒 +{r:%.1f}（{d:%.1f} 秒内 {a} → {b}），子进程从未被 wait",
                     { r = rate, a = z0, b = z, d = ev.duration_s }),
        evidence = tr("{base}{what}; {a} at the window's start{lim}", "{base}{what}；窗口开始时 {a} 个{lim}",
                      { base = base, what = what, a = z0, lim = lim }),
        verify = tr("`sopctl run --pid {pid} --duration 5`: proc.zombies stays near 0",
                    "`sopctl run --pid {pid} --duration 5`：proc.zombies 保持接近 0", { pid = ev.pid }),
      }
    end
    if z >= th.zombie_held_warn then
      return hit {
        severity = "warn",
        symptom = tr("{z} zombie children held (not growing over the window)", "持有 {z} 个僵尸子进程（窗口内未增长）",
                     { z = z }),
        evidence = tr("{base}{what}", "{base}{what}", { base = base, what = what }),
        verify = tr("`sopctl run --pid {pid}`: proc.zombies near 0", "`sopctl run --pid {pid}`：proc.zombies 接近 0",
                    { pid = ev.pid }),
      }
    end
    return clear(tr("{base}{grew} (a problem from +{g} in the window or {h} held)",
                    "{base}{grew}（阈值：窗口内 +{g} 或持有 {h} 个）",
                    { base = base, grew = grew and tr(", {x} at the window's start", "，窗口开始时 {x} 个", { x = z0 })
                                                  or T("", ""), g = th.zombie_min_growth, h = th.zombie_held_warn }))
  end,
}

rule {
  id = "progress.fds_grow", section = "9", severity = "warn",
  title = T("Open file descriptors grow steadily (a descriptor leak)", "打开的文件描述符持续增长（描述符泄漏）"),
  doc = [[Counts the target's open descriptors up to 17 times over the window (ev.fds). A hit when the count at
    the end is at least grow_min_fds above the start, it rose in both halves of the window (a pool or a batch
    opening its connections at once rises in one interval: no leak), and at least grow_kept_share of what was
    opened stayed open; and not when the new descriptors are mostly sockets that come with work piling
    up (pending asyncio tasks, or threads, grown by half as many: a backlog of connections, reported by
    asyncio.tasks_piling / progress.threads_grow). Severity from the projection to RLIMIT_NOFILE's soft
    limit (proc.fd_limit) at the window's rate: within grow_high_s high, within grow_warn_s warn, later (or
    no limit) info. Names what the new descriptors are: sockets, pipes, files (the commonest path).]],
  reads = { "fds.first", "fds.last", "fds.polls", "fds.window_s", "fds.rises", "fds.falls", "fds.rises_first_half",
            "fds.rises_second_half", "fds.risen", "fds.growth_per_s", "fds.new", "fds.new_sockets", "fds.new_pipes",
            "fds.new_files", "fds.new_other", "fds.new_path", "fds.new_path_count", "proc.fd_limit", "pid",
            "alive", "duration_s", "python.tasks.pending_growth", "proc.threads", "proc.threads_start" },
  uses = { "grow_min_fds", "grow_kept_share", "grow_high_s", "grow_warn_s" },
  cause = T("§9: descriptors are opened and never closed: a socket, HTTP response or session made per request and "
            .. "kept (in a list, a cache, a closure), a file opened without `with`, a subprocess's pipes never "
            .. "closed. Each holds a slot (and for sockets a connection, for files disk space after deletion) until "
            .. "the process meets RLIMIT_NOFILE: `OSError: [Errno 24] Too many open files` in whatever opens next.",
            "§9：描述符打开后从不关闭：每个请求新建并保留（在列表、缓存、闭包里）的 socket、HTTP 响应或 session，"
            .. "不用 `with` 打开的文件，从不关闭的子进程管道。每个都占一个名额（socket 还占一条连接，文件删除后仍占磁盘），"
            .. "直到进程碰到 RLIMIT_NOFILE：下一个打开操作报 `OSError: [Errno 24] Too many open files`。"),
  fix = T("Close what you open: `with open(...)`, `with socket.create_connection(...)`, `with session.get(...) as r` "
          .. "(or r.close()); reuse one client/session or a connection pool instead of one per request; "
          .. "contextlib.closing / ExitStack for objects without `with`; Popen with communicate() or closing its "
          .. "pipes. The kinds below say which to look for.",
          "打开的都要关闭：`with open(...)`、`with socket.create_connection(...)`、`with session.get(...) as r`"
          .. "（或 r.close()）；复用一个 client/session 或连接池，而不是每个请求新建；没有 `with` 的对象用 "
          .. "contextlib.closing / ExitStack；Popen 用 communicate() 或关闭其管道。下面的类型说明该找什么。"),
  refs = { "https://docs.python.org/3/reference/compound_stmts.html#the-with-statement",
           "https://man7.org/linux/man-pages/man2/getrlimit.2.html" },
  check = function(ev, th)
    if ev.alive == false then return unknown(T("the process is gone", "进程已不存在")) end
    local f = ev.fds
    if common.no_window(ev) or not f or not f.first or not f.last then
      return unknown(common.one_snapshot_text("open descriptors were not counted over a window",
                                              "没有在窗口内统计打开的描述符"))
    end
    local grew = f.last - f.first
    local d = f.window_s or ev.duration_s
    local base = tr("open descriptors {a} → {b} over {d:%.1f} s ({n} counts)", "{d:%.1f} 秒内打开的描述符 {a} → {b}（计数 {n} 次）",
                    { a = f.first, b = f.last, d = d, n = f.polls or 0 })
    if grew < th.grow_min_fds then
      return clear(tr("{base} (a leak needs {min} more)", "{base}（泄漏的阈值：多 {min} 个）",
                      { base = base, min = th.grow_min_fds }))
    end
    if (f.rises_first_half or 0) == 0 or (f.rises_second_half or 0) == 0 then
      return clear(tr("{base}; it rose in {r} interval(s), all in one half of the window: a burst (a pool or batch "
                        .. "opening at once), not a steady leak",
                      "{base}；只在 {r} 个间隔内上升，且都在窗口的同一半：一次性打开（连接池或批处理），不是持续泄漏",
                      { base = base, r = f.rises or 0 }))
    end
    if f.risen and f.risen > 0 and grew < th.grow_kept_share * f.risen then
      return clear(tr("{base}; {o} opened over the rises, {g} stayed open: most are closed again",
                      "{base}；上升期间共打开 {o} 个，仅 {g} 个保持打开：多数会关闭", { base = base, o = f.risen, g = grew }))
    end
    -- Sockets that come with work piling up (pending asyncio tasks, threads) are a backlog of
    -- connections being served, not descriptors forgotten: the pile is the finding
    -- (asyncio.tasks_piling, progress.threads_grow), its sockets go when it drains.
    local sockets = (f.new_sockets or 0) >= 0.5 * math.max(f.new or 0, 1)
    local tk = ev.python and ev.python.tasks
    local pile = tk and tk.pending_growth and tk.pending_growth >= 0.5 * grew
                 and tr("{n} more pending asyncio tasks over the window (asyncio.tasks_piling)",
                        "窗口内待处理的 asyncio 任务多了 {n} 个（asyncio.tasks_piling）", { n = tk.pending_growth })
    local p = ev.proc or {}
    if not pile and p.threads and p.threads_start and p.threads - p.threads_start >= 0.5 * grew then
      pile = tr("{n} more threads over the window (progress.threads_grow)", "窗口内线程多了 {n} 个（progress.threads_grow）",
                { n = p.threads - p.threads_start })
    end
    if sockets and pile then
      return clear(tr("{base}; the new ones are mostly sockets ({s} of {n}) and they come with {pile}: "
                        .. "connections waiting for work that piles up, not descriptors forgotten",
                      "{base}；新增的主要是 socket（{n} 个中 {s} 个），伴随{pile}：等待处理的连接在堆积，不是忘记关闭的描述符",
                      { base = base, s = f.new_sockets or 0, n = f.new or 0, pile = pile }))
    end
    local rate = f.growth_per_s or grew / d
    local sev, lim = "info", T("; no RLIMIT_NOFILE read", "；未读到 RLIMIT_NOFILE")
    local limit = ev.proc and ev.proc.fd_limit
    if limit and limit > 0 and rate > 0 then
      local s = math.max(0, limit - f.last) / rate
      sev = s <= th.grow_high_s and "high" or s <= th.grow_warn_s and "warn" or "info"
      lim = tr("; at this rate RLIMIT_NOFILE ({limit}) is reached in {when}", "；按此速率 {when}后达到 RLIMIT_NOFILE（{limit}）",
               { limit = limit, when = duration_text(s) })
    end
    local kinds = {}
    if (f.new_sockets or 0) > 0 then kinds[#kinds + 1] = fmt("%d sockets", f.new_sockets) end
    if (f.new_pipes or 0) > 0 then kinds[#kinds + 1] = fmt("%d pipes", f.new_pipes) end
    if (f.new_files or 0) > 0 then
      kinds[#kinds + 1] = fmt("%d files", f.new_files)
        .. (f.new_path and fmt(" (%d × %s)", f.new_path_count or 0, f.new_path) or "")
    end
    if (f.new_other or 0) > 0 then kinds[#kinds + 1] = fmt("%d other", f.new_other) end
    local what = #kinds > 0 and tr("; the {n} new ones: {k}", "；新增的 {n} 个：{k}",
                                   { n = f.new or 0, k = table.concat(kinds, ", ") }) or T("", "")
    return hit {
      severity = sev,
      symptom = tr("Descriptors leak: +{r:%.1f}/s ({a} → {b} in {d:%.1f} s), the new ones stay open",
                   "描述符泄漏：每秒 +{r:%.1f}（{d:%.1f} 秒内 {a} → {b}），新打开的一直不关闭",
                   { r = rate, a = f.first, b = f.last, d = d }),
      evidence = tr("{base}; it rose in {r} of {i} intervals, in both halves of the window, fell in {fl}{lim}{what}",
                    "{base}；{i} 个间隔中 {r} 个上升，窗口前后两半都有，{fl} 个下降{lim}{what}",
                    { base = base, r = f.rises or 0, i = (f.polls or 1) - 1, fl = f.falls or 0, lim = lim,
                      what = what }),
      verify = tr("`sopctl run --pid {pid} --duration 5`: fds.growth_per_s near 0 under the same load",
                  "`sopctl run --pid {pid} --duration 5`：同样负载下 fds.growth_per_s 接近 0", { pid = ev.pid }),
    }
  end,
}
