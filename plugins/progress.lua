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
