-- plugins/gil.lua — SOP §4: GIL contention. Several Python threads want to run Python code,
-- but the process gets about one core, and one thread holds the GIL. Reads ev.python (threads,
-- frames, gil_holder_tid; threads[i].window = gil_frac / runnable_nogil_frac when the window was
-- sampled), ev.threads (per-thread cpu_pct and OS state), ev.proc.cpu_pct, ev.effective_cpus.
-- Thresholds: gil_thread_busy_pct, gil_min_threads, gil_min_process_pct, gil_one_core_max_pct,
-- gil_max_runqueue_wait_pct.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local where = common.where

rule {
  id = "gil.contention", section = "4", severity = "warn",
  title = T("several Python threads compete for the GIL: the process runs on about one core",
            "多个 Python 线程争抢 GIL：进程只用到约一个核"),
  doc = [[Hit when at least gil_min_threads Python threads each use at least gil_thread_busy_pct of a core (or, sampled,
    hold or wait for the GIL 30% of the time) — or, counted at each tick, at least gil_min_threads threads on
    average held or slept on the GIL at once with one holding it while another slept on it at
    gil_tick_contended_pct % of the ticks (threads started and ended in the window count) — while the process
    uses between gil_min_process_pct and gil_one_core_max_pct % CPU on at least 2 effective CPUs; names each
    thread's innermost frame and the GIL holder. Unknown when not CPython, with --duration 0, or when the
    threads waited at least gil_max_runqueue_wait_pct of the window in the run queue without being seen asleep
    on the GIL.]],
  reads = { "proc.cwd", "proc.cmdline", "python.threads[].frames", "python.threads[].window",
            "python.gil_holder_tid", "threads[].cpu_pct", "threads[].wait_pct", "proc.cpu_pct",
            "effective_cpus", "duration_s", "host.ncpu", "pid", "python.threads[].gil",
            "python.threads[].name", "python.threads[].tid", "threads[].tid", "python.concurrency.ticks",
            "python.concurrency.wanting_mean", "python.concurrency.wanting_max", "python.concurrency.contended_frac",
            "python.concurrency.gil_switches_per_s", "python.concurrency.gil_interval_us", "threads[].sys_pct",
            "python.concurrency.threads_wanting", "python.locks[].site", "python.locks[].threads",
            "python.locks[].wait_frac", "python.locks[].held_frac", "python.locks[].crowded_frac",
            "python.locks[].holder", "python.locks[].one_word_frac", "threads[].wait_pct",
            "python.threads[].window.lock_wait_frac" },
  uses = { "spin_active_frac", "spin_share", "gil_thread_busy_pct", "gil_min_threads", "gil_min_process_pct",
           "gil_one_core_max_pct",
            "gil_max_runqueue_wait_pct", "gil_tick_contended_pct", "sampled_min_samples", "lock_min_threads",
            "lock_wait_pct", "lock_held_pct", "lock_handoff_pct", "gil_churn_min_x", "gil_churn_min_sys_pct",
            "gil_churn_min_want_pct" },
  symptom = T("several Python threads compete for the GIL: the process runs on about one core",
              "多个 Python 线程争抢 GIL：进程只用到约一个核"),
  cause = T("Only one thread at a time runs Python bytecode (the GIL). Pure-Python CPU work split over threads "
            .. "takes turns instead of running in parallel, and the switching adds overhead (SOP §4.1).",
            "任意时刻只有一个线程能执行 Python 字节码（GIL）。纯 Python 的 CPU 计算分到多个线程只能轮流执行，"
            .. "还多了切换开销（SOP §4.1）。"),
  fix = T("Move the CPU-bound Python work to processes (multiprocessing / concurrent.futures.ProcessPoolExecutor "
          .. "with the 'spawn' or 'forkserver' start method, which start slower, re-import the main module and "
          .. "need "
          .. "picklable arguments; or joblib), or into C code that releases the GIL "
          .. "(vectorized numpy/torch, numba nopython); keep threads for IO. Try a free-threaded 3.13t build in CI "
          .. "before production (SOP §4.3, §4.5).",
          "把 CPU 密集的 Python 计算移到多进程（multiprocessing / ProcessPoolExecutor，用 'spawn' 或 'forkserver'"
          .. "——启动更慢、会重新 import 主模块、参数须可 pickle，"
          .. "或 joblib），或移到释放 GIL 的 C 代码（numpy/torch 向量化、numba nopython）；线程只用于 IO。"
          .. "3.13t free-threaded 先在 CI 里试，生产仍用稳定版本（SOP §4.3、§4.5）。"),
  refs = { "https://peps.python.org/pep-0703/", "https://docs.python.org/3/library/multiprocessing.html",
           "https://realpython.com/python-gil/" },
  check = function(ev, th)
    local py = ev.python
    if not py or not py.threads then
      return unknown(common.NO_STACKS)
    end
    if common.no_window(ev) then
      return common.one_snapshot("no per-thread CPU to tell contention", "没有线程 CPU 数据，无法判断 GIL 争用")
    end
    local p = ev.proc or {}
    if not p.cpu_pct then return unknown(T("process CPU over the window not measured", "窗口内进程 CPU 未测得")) end
    -- Threads queued on one lock (threads.lock_contention) also take turns on the GIL as each is
    -- handed the lock: the lock is what serialises them, and its finding says so.
    -- Threads that hand the GIL over around short calls, far more often than the interval forces
    -- (gil.handoff_churn): the handoffs are the cost, and that finding says what helps.
    -- A thread that spins on a flag (gil.busy_wait) takes the GIL turns the others lose: an Event or a
    -- Queue is the fix, not processes.
    local spin = common.spinners(ev, th)[1]
    if spin then
      return clear(tr("thread {tid} busy-waits at {site} (gil.busy_wait): the spin takes the GIL turns, not parallel "
                        .. "work", "线程 {tid} 在 {site} 忙等（gil.busy_wait）：是忙等占了 GIL，而不是并行计算",
                      { tid = spin.tid or 0, site = spin.site or "?" }))
    end
    local churn = common.gil_churn(ev, th)
    if churn then
      return clear(tr("the GIL went to another thread {n:%.0f} times/s, {x:%.0f} x what the switch interval forces, "
                        .. "around short calls (gil.handoff_churn): handing it over, not taking turns at the "
                        .. "interval, is the cost",
                      "GIL 每秒 {n:%.0f} 次换到另一个线程，是切换间隔所强制次数的 {x:%.0f} 倍，发生在短调用前后"
                        .. "（gil.handoff_churn）：代价在于交接 GIL，而不是按间隔轮流",
                      { n = churn.per_s, x = churn.x }))
    end
    local convoy = common.lock_convoy(ev, th)
    if convoy then
      return clear(tr("{n} threads queue on one lock at {site} (threads.lock_contention): the lock, not the GIL, "
                        .. "serialises them",
                      "{n} 个线程在 {site} 排队等同一把锁（threads.lock_contention）：串行化它们的是这把锁，不是 GIL",
                      { n = convoy.threads or 0, site = convoy.site or "?" }))
    end
    local os_threads = {}
    for _, t in ipairs(ev.threads or {}) do os_threads[t.tid] = t end

    -- Python threads that used CPU over the window.
    local busy, sum, wait_sum, wait_n = {}, 0, 0, 0
    for _, t in ipairs(py.threads) do
      local o = os_threads[t.tid]
      -- Busy: used CPU over the window, or (sampled) held or waited for the GIL a good part of it
      -- (a loaded host can starve a thread of CPU while it still queues for the GIL).
      local w = t.window
      local wants = w and w.gil_frac and w.gil_wait_frac and (w.gil_frac + w.gil_wait_frac) >= 0.3
      if o and o.cpu_pct and (o.cpu_pct >= th.gil_thread_busy_pct or wants) and t.frames and #t.frames > 0 then
        busy[#busy + 1] = { tid = t.tid, name = t.name, pct = o.cpu_pct, top = t.frames[1], gil = t.gil,
                            win = t.window, at = common.user_frame(t.frames, ev) }
        sum = sum + o.cpu_pct
        if o.wait_pct then wait_sum, wait_n = wait_sum + o.wait_pct, wait_n + 1 end
      end
    end
    local eff = common.effective_cpus(ev) or 1
    -- Counted per tick: how many threads held or slept on the GIL at once. Threads born and ended
    -- inside the window (a thread per request) count, though none lives long enough to be busy.
    local c = py.concurrency
    local ticked = c and c.ticks and c.ticks >= th.sampled_min_samples and c.wanting_mean and c.contended_frac
                   and c.wanting_mean >= th.gil_min_threads and c.contended_frac * 100 >= th.gil_tick_contended_pct
    local summary = tr("{n} Python threads busy (>= {busy_pct:%g}% of a core each); process {cpu_pct:%.0f}% CPU; "
                       .. "{eff} effective CPUs",
                       "{n} 个 Python 线程繁忙（各 >= 单核 {busy_pct:%g}%）；进程 CPU {cpu_pct:%.0f}%；有效 CPU {eff} 个",
                       { n = #busy, busy_pct = th.gil_thread_busy_pct, cpu_pct = p.cpu_pct, eff = eff })
    if c and c.wanting_mean and c.contended_frac then
      summary = tr("{summary}; per tick {want:%.1f} threads held or slept on the GIL, one held it while another slept "
                     .. "on it at {cont:%.0f}% of {ticks} ticks",
                   "{summary}；每个 tick 平均 {want:%.1f} 个线程持有或等待 GIL，{cont:%.0f}% 的 tick（共 {ticks} 个）"
                     .. "一个线程持有 GIL 时另一个在等",
                   { summary = summary, want = c.wanting_mean, cont = 100 * c.contended_frac, ticks = c.ticks or 0 })
    end
    if #busy < th.gil_min_threads and not ticked then return clear(summary) end
    if eff < 2 then
      return clear(tr("{summary}: one CPU, so the GIL is not what limits it", "{summary}：只有一个 CPU，瓶颈不是 GIL",
                      { summary = summary }))
    end
    -- Threads that take turns on the GIL sleep on it; threads starved by other processes wait in
    -- the run queue instead. Only the first is the GIL's doing.
    local wait_mean = wait_n > 0 and wait_sum / wait_n or nil
    -- Sampled window: how often each busy thread held the GIL, and how often it was runnable
    -- but without it (asleep on the GIL's lock, or running-state while another holds it).
    -- Asleep on the GIL's own lock (gil_wait_frac) is direct evidence, whatever the host's load;
    -- running without it is not (C code such as BLAS runs so on purpose).
    local gil_sum, nogil_sum, wait_gil_sum, win_n = 0, 0, 0, 0
    for _, b in ipairs(busy) do
      if b.win and b.win.gil_frac and b.win.runnable_nogil_frac and b.win.gil_wait_frac then
        gil_sum, nogil_sum, win_n = gil_sum + b.win.gil_frac, nogil_sum + b.win.runnable_nogil_frac, win_n + 1
        wait_gil_sum = wait_gil_sum + b.win.gil_wait_frac
      end
    end
    local gil_seen = ticked or (win_n == #busy and win_n > 0 and wait_gil_sum / win_n >= 0.25)
    if wait_mean and wait_mean >= th.gil_max_runqueue_wait_pct and not gil_seen then
      return unknown(tr("{summary}; but they waited {wait_mean:%.0f}% of the window for a CPU (run queue): the "
                          .. "host's CPUs are contended, so the GIL cannot be told apart",
                        "{summary}；但这些线程有 {wait_mean:%.0f}% 的时间在运行队列里等 CPU：主机 CPU 被争用，无法判断是否为 GIL",
                        { summary = summary, wait_mean = wait_mean }))
    end
    if p.cpu_pct < th.gil_min_process_pct and not gil_seen then
      return clear(tr("{summary}: below {gil_min_process_pct:%g}% CPU, the threads are not CPU-bound together",
                      "{summary}：低于 {gil_min_process_pct:%g}% CPU，线程合起来并非 CPU 密集",
                      { summary = summary, gil_min_process_pct = th.gil_min_process_pct }))
    end
    if p.cpu_pct > th.gil_one_core_max_pct then
      return clear(tr("{summary}: more than one core in use, so the threads run in parallel (C code releasing the GIL)",
                      "{summary}：使用超过一个核，线程在并行（C 扩展释放了 GIL）", { summary = summary }))
    end

    table.sort(busy, function(a, b) return a.pct > b.pct end)
    local lines = {}
    for i = 1, math.min(#busy, 6) do
      local b = busy[i]
      local w = b.win and b.win.gil_frac and b.win.runnable_nogil_frac
                and fmt(", GIL held %.0f%% / runnable without it %.0f%% of samples", 100 * b.win.gil_frac,
                        100 * b.win.runnable_nogil_frac) or ""
      lines[#lines + 1] = fmt("tid %d%s %.0f%% in %s%s", b.tid, b.gil and " (GIL)" or "", b.pct,
                              b.at or where(b.top), w)
    end
    local holder = py.gil_holder_tid and fmt("GIL holder at the snapshot: tid %d", py.gil_holder_tid)
                   or "no GIL holder at the snapshot"
    if wait_mean then
      holder = holder .. fmt("; run-queue wait %.0f%% per thread", wait_mean)
    end
    if win_n > 0 then
      holder = holder .. fmt("; sampled: the GIL held %.0f%% of the time in all (one holder at a time), each "
                             .. "thread runnable without it %.0f%% (asleep on the GIL %.0f%%) on average",
                             100 * gil_sum, 100 * nogil_sum / win_n, 100 * wait_gil_sum / win_n)
    end
    local evidence = tr("{n} Python threads each used >= {busy_pct:%g}% of a core over {secs:%.1f} s, together "
                        .. "{sum:%.0f}%, but the process used {cpu_pct:%.0f}% CPU (about one core) of {eff} effective "
                        .. "CPUs; {holder}. {lines}",
                        "{n} 个 Python 线程在 {secs:%.1f} 秒内各用了 >= 单核 {busy_pct:%g}%，合计 {sum:%.0f}%，"
                        .. "但进程只用了 {cpu_pct:%.0f}% CPU（约一个核），有效 CPU {eff} 个；{holder}。{lines}",
                        { n = #busy, busy_pct = th.gil_thread_busy_pct, secs = ev.duration_s, sum = sum,
                          cpu_pct = p.cpu_pct, eff = eff, holder = holder,
                          lines = T(table.concat(lines, "; "), table.concat(lines, "；")) })
    if ticked then
      evidence = tr("{want:%.1f} threads held or slept on the GIL at once on average (at most {max}) over {ticks} "
                      .. "ticks in {secs:%.1f} s; one held it while another slept on it at {cont:%.0f}% of the ticks; "
                      .. "{seen} distinct threads wanted it in the window (threads started and ended inside it "
                      .. "count), {n} of them busy over the whole window; the process used {cpu_pct:%.0f}% CPU (about "
                      .. "one core) of {eff} effective CPUs; {holder}. {lines}",
                    "在 {secs:%.1f} 秒的 {ticks} 个 tick 中，平均同时有 {want:%.1f} 个线程持有或等待 GIL（最多 {max} 个）；"
                      .. "{cont:%.0f}% 的 tick 一个线程持有 GIL 时另一个在等；窗口内共有 {seen} 个不同线程要过 GIL"
                      .. "（窗口内启动又结束的线程也计入），其中 {n} 个在整个窗口内繁忙；进程只用了 {cpu_pct:%.0f}% CPU"
                      .. "（约一个核），有效 CPU {eff} 个；{holder}。{lines}",
                    { want = c.wanting_mean, max = c.wanting_max or 0, ticks = c.ticks, secs = ev.duration_s,
                      cont = 100 * c.contended_frac, seen = c.threads_wanting or 0, n = #busy, cpu_pct = p.cpu_pct,
                      eff = eff, holder = holder, lines = T(table.concat(lines, "; "), table.concat(lines, "；")) })
    end
    return hit {
      evidence = evidence,
      verify = tr("`sopctl run --pid {pid} --duration 5`: process CPU above 100% with the work in several processes "
                  .. "or threads, and `sopctl dump --pid {pid}` shows one thread per core active.",
                  "`sopctl run --pid {pid} --duration 5`：进程（或多个 worker）CPU 超过 100%，"
                  .. "`sopctl dump --pid {pid}` 显示每个核上各有一个活跃线程。", { pid = ev.pid }),
    }
  end,
}

-- §4 (with §3.5): busy threads that release the GIL around short calls hand it to each other far
-- more often than the switch interval would: each handoff is a futex wake-up and a context
-- switch, paid in the kernel. Recognised by what the GIL does (CPython's switch_number over the
-- window), whatever the calls are: tiny torch ops, small socket or file calls.
rule {
  id = "gil.handoff_churn", section = "4", severity = "warn",
  title = T("busy threads hand the GIL to each other around short calls, far more often than the switch interval: "
            .. "the handoffs are the cost",
            "繁忙线程在短调用前后互相交接 GIL，远多于切换间隔所需：交接本身成了开销"),
  doc = [[Sampled window: at least gil_min_threads Python threads each use gil_thread_busy_pct of a core, and the GIL
    went to another thread than its last holder (python.concurrency.gil_switches_per_s, CPython's switch_number) at
    least gil_churn_min_x times as often as the switch interval forces (1e6 / gil_interval_us per second: threads that
    take turns at the interval, as pure-Python work does), while the process spent at least gil_churn_min_sys_pct % of
    its CPU in the kernel (threads[].sys_pct), where each handoff is paid, and the busy threads wanted to run (state
    R, holding the GIL or asleep on it) at least gil_churn_min_want_pct % of their samples. Threads whose GIL releases
    are long (hashing or BLAS on big buffers) hand it over rarely; one thread alone never; threads that hand it over
    because they block (fsync, recv: D or S state) are IO concurrency, not churn; on one CPU a released GIL is taken
    only when its holder blocks or is preempted (clear). Names the busy threads' own frames. Unknown without a
    sampled window, when the GIL's counter was not read, or when the rate stays low while other processes kept the
    CPUs busy (host at most foreign_idle_max_pct idle, foreign_min_cores beyond the job): threads that cannot run
    side by side cannot hand the GIL to each other, so the low rate says nothing of the program.]],
  reads = { "python.concurrency.gil_switches_per_s", "python.concurrency.gil_interval_us", "proc.cpu_pct",
            "threads[].sys_pct", "threads[].cpu_pct", "threads[].tid", "python.threads[].tid",
            "python.threads[].name", "python.threads[].frames", "python.threads[].window.gil_wait_frac",
            "python.threads[].window.active_frac", "effective_cpus", "host.ncpu", "duration_s", "pid", "proc.cwd",
            "proc.cmdline", "host.cpu.idle_pct", "host.load1", "children[].cpu_pct" },
  uses = { "gil_churn_min_x", "gil_churn_min_sys_pct", "gil_churn_min_want_pct", "gil_thread_busy_pct",
           "gil_min_threads", "foreign_idle_max_pct", "foreign_min_cores" },
  symptom = T("busy threads hand the GIL to each other around short calls: the handoffs are the cost",
              "繁忙线程在短调用前后互相交接 GIL：交接本身成了开销"),
  cause = T("Every call that releases the GIL (a torch op, a socket or file call) lets a waiting thread take it, and "
            .. "the caller queues to get it back. With several busy threads making calls of microseconds, the GIL "
            .. "changes hands tens of thousands of times a second and each handoff costs a futex wake-up and a "
            .. "context switch — more than the work between them; more threads make it worse (SOP §4.1, §3.5).",
            "每个释放 GIL 的调用（torch 算子、socket 或文件调用）都让等待的线程拿走 GIL，调用者要排队才能拿回来。"
            .. "几个繁忙线程都做微秒级的调用时，GIL 每秒易手上万次，每次交接都要一次 futex 唤醒和一次上下文切换——"
            .. "比两次交接之间的工作还贵；线程越多越糟（SOP §4.1、§3.5）。"),
  fix = T("Make each GIL release do more work: batch the small calls (one tensor or array op over many elements "
          .. "instead of one per element; read, write or send in larger pieces). Or do not share one interpreter "
          .. "between busy threads: keep that loop in one thread, or spread the work over processes.",
          "让每次释放 GIL 做更多的事：把小调用合并（一个张量/数组运算处理很多元素，而不是逐元素调用；读、写、发送用更大的块）。"
          .. "或者不要让多个繁忙线程共用一个解释器：这个循环放在一个线程里，或者把工作分到多个进程。"),
  refs = { "https://docs.python.org/3/library/sys.html#sys.setswitchinterval",
           "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html" },
  check = function(ev, th)
    local py = ev.python
    if not py or not py.threads then return unknown(common.NO_STACKS) end
    if common.no_window(ev) then return unknown(common.NO_WINDOW) end
    local churn, f = common.gil_churn(ev, th)
    if not f then
      -- A counter that went back or moved faster than switches can happen is left out by the bridge
      -- (engine/bridge/window.c, with a note in missing): not a rate to clear or flag on.
      return unknown(T("no GIL switch rate: its counter was not read (older evidence, an interpreter whose GIL is not "
                         .. "placed) or was no measurement (it went back or moved faster than switches can happen: "
                         .. "see missing evidence)",
                       "没有 GIL 切换速率：切换计数未读到（旧版证据，或未定位 GIL 的解释器），或不是测量值"
                         .. "（计数倒退，或增长快于切换可能的速度：见缺失证据）"))
    end
    local busy = f.busy
    if f.why == "busy" then
      return clear(tr("{busy} busy Python thread(s): no other busy thread to hand the GIL to (it went to another "
                        .. "thread {n:%.0f} times/s)",
                      "{busy} 个繁忙 Python 线程：没有别的繁忙线程可交接 GIL（每秒 {n:%.0f} 次换手）",
                      { busy = #busy, n = f.per_s }))
    elseif f.why == "cpus" then
      return clear(tr("{cpus:%g} CPU for its threads: a released GIL is taken only when its holder blocks or is "
                        .. "preempted, so its {n:%.0f} handoffs/s count blocking calls, not churn (cpu.oversubscribed "
                        .. "judges the threads queued for that CPU)",
                      "线程只能在 {cpus:%g} 个 CPU 上运行：释放的 GIL 只在持有者阻塞或被抢占时才会被拿走，每秒 {n:%.0f} 次换手"
                        .. "数的是阻塞调用，不是频繁交接（排队等这个 CPU 的线程由 cpu.oversubscribed 判断）",
                      { cpus = f.cpus, n = f.per_s }))
    elseif f.why == "want" then
      return clear(tr("the GIL went to another thread {n:%.0f} times/s, but the {busy} busy threads wanted to run "
                        .. "only {want:%.0f}% of their samples (< {mw:%g}%): they hand it over because they block "
                        .. "(IO, sockets), which is what releasing the GIL is for",
                      "GIL 每秒 {n:%.0f} 次换到另一个线程，但 {busy} 个繁忙线程只有 {want:%.0f}% 的采样想运行"
                        .. "（< {mw:%g}%）：它们因阻塞（IO、socket）而交出 GIL，这正是释放 GIL 的用途",
                      { n = f.per_s, busy = #busy, want = f.want_pct, mw = th.gil_churn_min_want_pct }))
    elseif not churn then
      -- Threads hand the GIL to each other only while they run side by side: with the CPUs full of
      -- other work they take turns on what is left, and the rate says nothing of the program.
      local fl = common.foreign_load(ev, th)
      if fl and fl.busy then
        return unknown(tr("the CPUs were busy with other processes ({cores:%.1f} of {ncpu} CPUs beyond the job, "
                            .. "host {idle:%.0f}% idle): its threads could not run side by side to hand the GIL to "
                            .. "each other (it went to another thread {n:%.0f} times/s, {x:%.1f} x the switch "
                            .. "interval's rate, {share:%.0f}% of its CPU in the kernel)",
                          "CPU 被其他进程占满（作业之外占用 {cores:%.1f}/{ncpu} 个 CPU，主机空闲 {idle:%.0f}%）：线程无法"
                            .. "同时运行、互相交接 GIL（每秒换手 {n:%.0f} 次，是切换间隔所强制次数的 {x:%.1f} 倍，进程 CPU 的 "
                            .. "{share:%.0f}% 在内核）",
                          { cores = fl.cores, ncpu = fl.ncpu, idle = fl.idle_pct, n = f.per_s, x = f.x,
                            share = f.sys_share }))
      end
      return clear(tr("the GIL went to another thread {n:%.0f} times/s, {x:%.1f} x what the {iv:%g} ms switch "
                        .. "interval forces ({forced:%.0f}/s), with {share:%.0f}% of the process's CPU in the kernel: "
                        .. "handoffs are not the cost (>= {mx:%g} x and >= {ms:%g}% needed)",
                      "GIL 每秒 {n:%.0f} 次换到另一个线程，是 {iv:%g} 毫秒切换间隔所强制次数（{forced:%.0f}/s）的 "
                        .. "{x:%.1f} 倍，进程 CPU 的 {share:%.0f}% 在内核：交接不是开销所在（需要 >= {mx:%g} 倍且 >= {ms:%g}%）",
                      { n = f.per_s, x = f.x, iv = f.interval_ms, forced = f.forced, share = f.sys_share,
                        mx = th.gil_churn_min_x, ms = th.gil_churn_min_sys_pct }))
    end
    table.sort(busy, function(a, b) return a.o.cpu_pct > b.o.cpu_pct end)
    local lines = {}
    for i = 1, math.min(#busy, 4) do
      local b = busy[i]
      local at = b.t.frames and #b.t.frames > 0 and (common.user_frame(b.t.frames, ev) or where(b.t.frames[1])) or "?"
      local w = b.t.window
      lines[#lines + 1] = fmt("tid %d %.0f%% CPU (%.0f%% in the kernel%s) at %s", b.t.tid, b.o.cpu_pct,
                              b.o.sys_pct or 0,
                              w and w.gil_wait_frac and fmt(", asleep on the GIL %.0f%% of samples",
                                                            100 * w.gil_wait_frac) or "", at)
    end
    return hit {
      evidence = tr("the GIL went to another thread {n:%.0f} times/s over {secs:%.1f} s, {x:%.0f} x what the "
                      .. "{iv:%g} ms switch interval forces ({forced:%.0f}/s); {busy} busy Python threads; the process "
                      .. "spent {share:%.0f}% of its CPU ({sys:%.0f}% of a core) in the kernel, where each handoff is "
                      .. "paid. {lines}",
                    "GIL 在 {secs:%.1f} 秒内每秒 {n:%.0f} 次换到另一个线程，是 {iv:%g} 毫秒切换间隔所强制次数"
                      .. "（{forced:%.0f}/s）的 {x:%.0f} 倍；{busy} 个繁忙 Python 线程；进程 CPU 的 {share:%.0f}%"
                      .. "（单核的 {sys:%.0f}%）花在内核，每次交接都在那里付出。{lines}",
                    { n = f.per_s, secs = ev.duration_s, x = f.x, iv = f.interval_ms, forced = f.forced,
                      busy = #busy, share = f.sys_share, sys = f.sys_pct,
                      lines = T(table.concat(lines, "; "), table.concat(lines, "；")) }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: gil.handoff_churn clear "
                    .. "(python.concurrency.gil_switches_per_s in the hundreds), and the loop's items/s up.",
                  "`sopctl run --pid {pid} --duration 3`：gil.handoff_churn 为 clear"
                    .. "（python.concurrency.gil_switches_per_s 降到几百），循环吞吐上升。", { pid = ev.pid }),
    }
  end,
}

-- §4.2: a lock convoy (common.lock_convoy): several threads asleep at one acquire site while one
-- other thread is past it. Counted at each tick of the window (ev.python.locks[]).
rule {
  id = "threads.lock_contention", section = "4.2", severity = "warn",
  title = T("threads queue on one lock: a convoy serialises them", "多个线程排队等同一把锁：锁让它们串行执行"),
  doc = [[Hit when, in the sampled window, at least lock_min_threads threads of the target were seen asleep in a
    futex that is not the GIL's at the same acquire site (their innermost own frame: a `with lock:` line, an
    acquire() call, a call into a library that locks), waiting lock_wait_pct % or more of the time they were
    not queued for a CPU (a thread in the run queue cannot be seen asleep on the lock: on CPUs full of other
    work the share is read over the rest of the window, threads[].wait_pct, up to five times), while at
    lock_held_pct % of those ticks exactly one other thread was past the site (its stack holds the site's
    function: the holder; or, at the waiters' own call, one thread running native code without the GIL: a
    library call holding its object's own lock, as one sqlite3 connection shared by threads does) and at most
    100 - lock_held_pct % had several (a queue or a pool has no mutual
    exclusion), with most waiters asleep on one futex word (one mutex: Lock, RLock) half the time or more;
    waiters each on their own word (Semaphore, Condition, a queue's get) need a holder at lock_handoff_pct % of
    the ticks (a lock never free; consumers waiting for work see gaps). High when they wait
    lock_high_wait_pct % or more. Names the site, the waiters, their share and
    the holder's frame. Unknown when not CPython or the window was not sampled per tick.]],
  reads = { "python.locks[].site", "python.locks[].threads", "python.locks[].wait_frac",
            "python.locks[].held_frac", "python.locks[].crowded_frac", "python.locks[].waiters_mean",
            "python.locks[].one_word_frac",
            "python.locks[].holder", "python.locks[].holder_running_frac", "python.locks[].holder_frac",
            "python.locks[].holder_native_frac", "threads[].tid", "threads[].wait_pct", "python.threads[].tid",
            "python.threads[].window.lock_wait_frac",
            "python.concurrency.ticks", "python.threads[].frames", "duration_s", "pid" },
  uses = { "lock_min_threads", "lock_wait_pct", "lock_held_pct", "lock_handoff_pct", "lock_high_wait_pct" },
  symptom = T("threads queue on one lock: a convoy serialises them", "多个线程排队等同一把锁：锁让它们串行执行"),
  cause = T("One thread holds the lock across a slow call while the others sleep on it: whatever the thread count, "
            .. "the work under the lock runs one thread at a time, so throughput is that of one thread (SOP §4.2: "
            .. "several threads with the same stack, waiting on a lock).",
            "一个线程在持锁期间执行慢调用，其他线程都在这把锁上睡眠：无论开多少线程，锁内的工作一次只有一个线程在做，"
            .. "吞吐等于单线程（SOP §4.2：多个线程栈相同，都在等锁）。"),
  fix = T("Hold the lock only around the shared state it protects: do the slow call (IO, a backend, compute) "
          .. "outside the critical section, copy what it needs first; give each thread its own client/connection "
          .. "(threading.local or a pool) instead of one shared object behind a lock; or shard the lock by key.",
          "只在访问共享状态时持锁：把慢调用（IO、后端请求、计算）移到临界区之外，先拷贝所需数据；"
          .. "给每个线程各自的客户端/连接（threading.local 或连接池），而不是用锁保护一个共享对象；或按 key 拆分锁。"),
  refs = { "https://docs.python.org/3/library/threading.html#lock-objects",
           "https://en.wikipedia.org/wiki/Lock_convoy" },
  check = function(ev, th)
    local py = ev.python
    if not py or not py.threads then return unknown(common.NO_STACKS) end
    if common.no_window(ev) then
      return common.one_snapshot("no sampled window to see threads wait", "没有采样窗口，无法看到线程等待")
    end
    if not py.concurrency then
      return unknown(T("the window was not counted per tick", "窗口没有逐 tick 统计"))
    end
    local l, wait, queued = common.lock_convoy(ev, th)
    if not l then
      local top = py.locks and py.locks[1]
      if top then
        local queued_text = queued >= 0.1 and tr(" (queued for a CPU {q:%.0f}% of it)", "（另有 {q:%.0f}% 在排队等 CPU）",
                                                 { q = 100 * queued }) or T("", "")
        return clear(tr("most waited site {site}: {n} threads waited {wait:%.0f}% of the window{queued}, one holder "
                          .. "at {held:%.0f}% of those ticks: not a convoy",
                        "等待最多的位置 {site}：{n} 个线程等待了窗口的 {wait:%.0f}%{queued}，"
                          .. "其中 {held:%.0f}% 的 tick 只有一个持有者：不是锁护送",
                        { site = top.site or "?", n = top.threads or 0, wait = 100 * (top.wait_frac or 0),
                          queued = queued_text, held = 100 * (top.held_frac or 0) }))
      end
      return clear(T("no thread of the target was seen waiting on a lock", "没有看到目标的线程在等锁"))
    end
    local holder = l.holder and tr("the holder at {holder} ({share:%.0f}% of those ticks, running {run:%.0f}% of them)",
                                   "持有者在 {holder}（占这些 tick 的 {share:%.0f}%，其中 {run:%.0f}% 在运行）",
                                   { holder = l.holder, share = 100 * (l.holder_frac or 0),
                                     run = 100 * (l.holder_running_frac or 0) })
                   or T("the holder's frame unseen", "未看到持有者的栈帧")
    -- The holder inside the waiters' own call, outside Python (the GIL released): the lock is the
    -- library object's own (a shared connection or client), not one in the program's code.
    if (l.holder_native_frac or 0) >= 0.5 then
      holder = tr("{holder}; at {native:%.0f}% of those ticks the holder was inside that same call in native code "
                    .. "(the GIL released): the lock is the library object's own, one object shared by the threads",
                  "{holder}；其中 {native:%.0f}% 的 tick 持有者就在同一个调用里执行原生代码（已释放 GIL）："
                    .. "这是库对象自身的锁，多个线程共用了一个对象",
                  { holder = holder, native = 100 * l.holder_native_frac })
    end
    -- Threads queued for a CPU much of the window: their wait is read over the rest of it.
    local queued_text = queued >= 0.1
      and tr(" (and {q:%.0f}% of the window runnable in the run queue, waiting for a CPU: the wait is read over "
               .. "the rest)",
             "（另有 {q:%.0f}% 的窗口在运行队列中等 CPU：等待比例按其余时间计算）",
             { q = 100 * queued })
      or T("", "")
    return hit {
      severity = wait * 100 >= th.lock_high_wait_pct and "high" or "warn",
      symptom = tr("{n} threads queue on the lock at {site}: one runs the critical section at a time",
                   "{n} 个线程在 {site} 排队等同一把锁：临界区一次只有一个线程在执行",
                   { n = l.threads, site = l.site or "?" }),
      evidence = tr("{n} threads asleep on a lock (futex, not the GIL) at {site}, each waiting {wait:%.0f}% of "
                      .. "{ticks} ticks over {secs:%.1f} s{queued} ({mean:%.1f} waiting at once on average); "
                      .. "exactly one other thread inside that function at {held:%.0f}% of those ticks: {holder}",
                    "{n} 个线程在 {site} 睡眠等锁（futex，不是 GIL），在 {secs:%.1f} 秒的 {ticks} 个 tick 中各等待 "
                      .. "{wait:%.0f}%{queued}（平均同时 {mean:%.1f} 个在等）；其中 {held:%.0f}% 的 tick 恰有一个其他线程在该函数内：{holder}",
                    { n = l.threads, site = l.site or "?", wait = 100 * l.wait_frac, ticks = py.concurrency.ticks,
                      secs = ev.duration_s, mean = l.waiters_mean or 0, held = 100 * l.held_frac, holder = holder,
                      queued = queued_text }),
      verify = tr("`sopctl run --pid {pid} --duration 5`: no threads.lock_contention, and throughput rising with "
                    .. "the thread count",
                  "`sopctl run --pid {pid} --duration 5`：不再有 threads.lock_contention，吞吐随线程数增加",
                  { pid = ev.pid }),
    }
  end,
}

-- §4.5: a free-threaded (no-GIL, PEP 703) build. Noted so that nobody reads the GIL findings
-- (or their absence) as applying to it; sop cannot read its stacks yet.
rule {
  id = "gil.free_threaded", section = "4.5", severity = "info",
  title = T("the target runs a free-threaded (no-GIL) CPython build", "目标进程运行的是 free-threaded（无 GIL）CPython"),
  doc = [[Hit (info) when the executable is a free-threaded build (python3.13t and later: a name ending in
    "t", or the interpreter's debug offsets say so, which the Python probe reports as missing evidence).
    Clear for a GIL build the Python probe read (3.13+: its own flag says so), or an executable that is not
    CPython. Unknown when the interpreter was found but not read (a version newer than sop knows, memory
    refused): its name is no proof.]],
  reads = { "proc.exe", "python.version", "missing[]" },
  uses = {},
  symptom = T("free-threaded CPython (no GIL): threads run Python in parallel",
              "free-threaded CPython（无 GIL）：线程可并行执行 Python"),
  cause = T("PEP 703 builds (3.13t) drop the GIL: the §4 GIL findings do not apply, and sop does not read this "
            .. "build's thread stacks yet. C extensions not marked Py_GIL_DISABLED turn the GIL back on at import.",
            "PEP 703 构建（3.13t）去掉了 GIL：§4 的 GIL 结论不适用，sop 暂不读取这种构建的线程栈。"
            .. "未声明 Py_GIL_DISABLED 的 C 扩展在 import 时会重新打开 GIL。"),
  fix = T("Keep production on a GIL build (3.11/3.12) until numpy, torch and your extensions support free "
          .. "threading; try 3.13t in CI first (SOP §4.5). Check `python -c \"import sys; "
          .. "print(sys._is_gil_enabled())\"` after your imports.",
          "在 numpy、torch 和你的扩展支持 free-threading 之前，生产仍用带 GIL 的 3.11/3.12；先在 CI 里试 3.13t"
          .. "（SOP §4.5）。import 之后检查 `python -c \"import sys; print(sys._is_gil_enabled())\"`。"),
  verify = T("`python -c \"import sys; print(sys._is_gil_enabled())\"` with the job's imports prints False",
             "带上作业的 import 运行 `python -c \"import sys; print(sys._is_gil_enabled())\"` 输出 False"),
  refs = { "https://peps.python.org/pep-0703/", "https://docs.python.org/3/howto/free-threading-python.html" },
  check = function(ev)
    local exe = ev.proc and ev.proc.exe
    local reason
    for _, m in ipairs(ev.missing or {}) do
      if m.probe == "python" and m.reason and m.reason:find("free-threaded", 1, true) then reason = m.reason end
    end
    local base = exe and exe:match("([^/]+)$") or ""
    local named = base:match("^python3%.%d+t$") ~= nil
    if not reason and not named then
      if ev.python and ev.python.version then
        return clear(tr("CPython {version:%s} with the GIL (read from the interpreter)",
                        "带 GIL 的 CPython {version:%s}（从解释器读出）", { version = ev.python.version }))
      end
      local unread = common.python_unread_reason(ev)
      if unread then
        return unknown(tr("the interpreter was not read: {why:%s}", "未能读取解释器：{why:%s}",
                          { why = unread }))
      end
      if not exe then return unknown(T("executable not readable", "无法读取可执行文件")) end
      return clear(tr("{base:%s} is not a free-threaded CPython", "{base:%s} 不是 free-threaded CPython",
                      { base = base }))
    end
    return hit {
      evidence = tr("executable {exe}{reason}",
                    "可执行文件 {exe}{reason}",
                    { exe = exe or "?",
                      reason = reason and tr("; Python probe: {reason:%s}", "；Python 探针：{reason:%s}",
                                             { reason = reason }) or "" }),
    }
  end,
}

rule {
  id = "gil.busy_wait", section = "4", severity = "warn",
  title = T("A thread busy-waits: it spins on a condition instead of waiting on it",
            "线程忙等：在循环里反复检查条件，而不是等待它"),
  doc = [[A hit when a sampled Python thread was active (holding the GIL or running) at least spin_active_frac of its
    samples and spin_share of those sat on loop lines that only test — the source at the frame is `while <cond>:`
    with nothing, `pass`, `continue` or `sleep(0)` in it — calling nothing but a cheap predicate (Event.is_set,
    Queue.empty, time.time, ...). Names the line and what the other threads lost: their GIL waits.]],
  reads = { "python.threads[].tid", "python.threads[].name", "python.threads[].window.samples",
            "python.threads[].window.active_frac", "python.threads[].window.gil_frac",
            "python.threads[].window.gil_wait_frac", "python.threads[].window.leaves", "pid", "duration_s",
            "missing[]", "python.threads" },
  uses = { "spin_active_frac", "spin_share", "spin_others_wait_frac", "sampled_min_samples" },
  cause = T("§4: a loop that re-tests a flag (`while not done: pass`, `while q.empty(): continue`) burns a core "
            .. "and, in CPython, holds the GIL for its switch interval at every turn, so the threads that would "
            .. "set the flag or do the work get the interpreter a fraction of the time.",
            "§4：反复检查标志的循环（`while not done: pass`、`while q.empty(): continue`）白白占满一个核，而且在 "
            .. "CPython 里每一轮都持有 GIL 直到切换间隔，真正要设置标志或干活的线程只能分到一小部分解释器时间。"),
  fix = T("Wait instead of testing: threading.Event (set() / wait()), a queue.Queue (get() blocks), a Condition, "
          .. "or Future.result()/concurrent.futures.wait; in asyncio, await an Event or Future. If a poll is truly "
          .. "needed, sleep between tests (time.sleep(0.01)) — not sleep(0). Processes do not fix a spin.",
          "用等待代替检查：threading.Event（set() / wait()）、queue.Queue（get() 会阻塞）、Condition，或 "
          .. "Future.result()/concurrent.futures.wait；asyncio 中 await Event 或 Future。确实需要轮询时在两次检查之间 "
          .. "sleep（time.sleep(0.01)），而不是 sleep(0)。换成多进程解决不了忙等。"),
  refs = { "https://docs.python.org/3/library/threading.html#event-objects",
           "https://docs.python.org/3/library/queue.html" },
  check = function(ev, th)
    local stop = common.need_stacks(ev)
    if stop then return stop end
    if common.no_window(ev) then return unknown(common.NO_WINDOW) end
    local spin = common.spinners(ev, th)
    if #spin == 0 then
      return clear(tr("no sampled thread spent {share:%.0f}% of its active samples on a loop line that only tests "
                        .. "(needs active >= {act:%.0f}% of its samples)",
                      "没有采样线程把 {share:%.0f}% 的活跃样本花在只做检查的循环行上（要求活跃 >= {act:%.0f}%）",
                      { share = 100 * th.spin_share, act = 100 * th.spin_active_frac }))
    end
    local s = spin[1]
    local others, worst = 0, 0
    for _, t in ipairs(ev.python.threads) do
      local w = t.window
      if t.tid ~= s.tid and w and (w.gil_wait_frac or 0) > 0 then
        others = others + 1
        if w.gil_wait_frac > worst then worst = w.gil_wait_frac end
      end
    end
    -- a spin that starves nobody (a lone loop to a deadline) is CPU use, not this finding (§4)
    if worst < th.spin_others_wait_frac then
      return clear(tr("thread {tid} spins at {site}, but no other thread waited for the GIL {w:%.0f}% of its samples "
                        .. "(needs {min:%.0f}%)", "线程 {tid} 在 {site} 空转，但没有其他线程等 GIL 达到其样本的 {w:%.0f}%"
                        .. "（阈值 {min:%.0f}%）",
                      { tid = s.tid or 0, site = s.site or "?", w = 100 * worst,
                        min = 100 * th.spin_others_wait_frac }))
    end
    return hit {
      symptom = tr("Thread {tid} busy-waits at {site}: active {act:%.0f}% of the time on a loop that only tests",
                   "线程 {tid} 在 {site} 忙等：{act:%.0f}% 的时间在只做检查的循环里",
                   { tid = s.tid or 0, site = s.site or "?", act = 100 * s.active }),
      evidence = tr("thread {tid} ({name}) active in {act:%.0f}% of its samples (GIL {gil:%.0f}%), {share:%.0f}% of "
                      .. "them at `{code}` ({site}){others}",
                    "线程 {tid}（{name}）{act:%.0f}% 的样本处于活跃（持有 GIL {gil:%.0f}%），其中 {share:%.0f}% 在 "
                      .. "`{code}`（{site}）{others}",
                    { tid = s.tid or 0, name = s.name or "?", act = 100 * s.active, gil = 100 * (s.gil or 0),
                      share = 100 * s.share, code = s.code or "?", site = s.site or "?",
                      others = others > 0 and tr("; {n} other threads waited for the GIL, up to {w:%.0f}% of their "
                                                   .. "samples",
                                                 "；另有 {n} 个线程在等 GIL，最多占其样本的 {w:%.0f}%",
                                                 { n = others, w = 100 * worst }) or T("", "") }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: the thread asleep in a wait, not active",
                  "`sopctl run --pid {pid} --duration 3`：该线程睡在等待里，而不是活跃", { pid = ev.pid }),
    }
  end,
}
