-- plugins/oom.lua — SOP §2.1: was the target, or a worker in its memory cgroup, killed by the
-- kernel OOM killer? Reads ev.alive, ev.host.oom_kills, ev.cgroup (path, memory.events),
-- ev.proc (comm, start_time_s), the process tree (children, sched.procs, python.workers). Threshold:
-- oom_recent_s. DSL globals from the rule runner.

local REFS = {
  "https://www.kernel.org/doc/gorman/html/understand/understand016.html",
  "https://docs.python.org/3/library/tracemalloc.html",
  "https://github.com/bloomberg/memray",
}

local common = require "plugins.common"
local T, no_proc = common.T, common.no_proc
local tr = common.tr

-- Why a rule that needs the live process cannot judge.

-- Seconds since the kill: the collector's age_s, else from the epoch stamps.
local function age_of(ev, k)
  if k.age_s then return k.age_s end
  if k.time and ev.collected_at then return ev.collected_at - k.time end
  return nil
end

local function ago(s)
  if not s then return "at an unknown time", "时间未知" end
  if s < 120 then return fmt("%.0f s ago", s), fmt("%.0f 秒前", s) end
  if s < 7200 then return fmt("%.1f min ago", s / 60), fmt("%.1f 分钟前", s / 60) end
  return fmt("%.1f h ago", s / 3600), fmt("%.1f 小时前", s / 3600)
end

local function span(s)
  if s < 7200 then return fmt("%.0f min", s / 60), fmt("%.0f 分钟", s / 60) end
  return fmt("%.1f h", s / 3600), fmt("%.1f 小时", s / 3600)
end

-- Is cgroup path p the cgroup root, or below it? Never true for the root memcg "/".
local function at_or_below(p, root)
  if not p or not root or root == "" or root == "/" or p == "/" then return false end
  root = root:gsub("/+$", "")
  return p == root or p:sub(1, #root + 1) == root .. "/"
end

local function size(k) return k and kb(k) or "?" end

-- The pids of the target's tree as the evidence saw it: the target, its children now, every
-- descendant polled over the window (sched.procs keeps those that exited), sampled workers.
local function tree_pids(ev)
  local out = { [ev.pid] = true }
  for _, c in ipairs(ev.children or {}) do if c.pid then out[c.pid] = true end end
  for _, sp in ipairs(ev.sched and ev.sched.procs or {}) do if sp.pid then out[sp.pid] = true end end
  for _, w in ipairs(ev.python and ev.python.workers or {}) do if w.pid then out[w.pid] = true end end
  return out
end

-- The cgroup's own oom_kill counter: v2 memory.events.local (this group only) where the kernel
-- has it, else memory.events (v2: this group and every group below it; v1: this group).
-- Returns the count and whether it is hierarchical.
local function oom_counter(cg)
  local mem = cg and cg.memory
  local loc = mem and mem.events_local and mem.events_local.oom_kill
  if loc then return loc, false end
  local n = mem and mem.events and mem.events.oom_kill
  return n, n ~= nil and cg.version == 2
end

-- The victim's pid as text ("?" when the record lacks it; integral floats print bare).
local function pid_of(k)
  if not k.pid then return "?" end
  return tostring(math.tointeger(k.pid) or k.pid)
end

-- One kill record in words (en, zh).
local function describe(ev, k)
  local en_ago, zh_ago = ago(age_of(ev, k))
  local memcg = k.task_memcg or "?"
  local en = fmt("pid %s (%s) killed %s: anon-rss %s, file-rss %s, total-vm %s, memcg %s",
                 pid_of(k), k.comm or "?", en_ago, size(k.anon_rss_kb), size(k.file_rss_kb),
                 size(k.total_vm_kb), memcg)
  local zh = fmt("pid %s (%s) 于%s被杀：anon-rss %s，file-rss %s，total-vm %s，memcg %s",
                 pid_of(k), k.comm or "?", zh_ago, size(k.anon_rss_kb), size(k.file_rss_kb),
                 size(k.total_vm_kb), memcg)
  if k.constraint then
    en = en .. fmt(", %s", k.constraint)
    zh = zh .. fmt("，%s", k.constraint)
  end
  if k.oom_memcg and k.oom_memcg ~= memcg then
    en = en .. fmt(" (limit reached in %s)", k.oom_memcg)
    zh = zh .. fmt("（触顶的是 %s 的上限）", k.oom_memcg)
  end
  return en, zh
end

local function cause_of(k, who_en, who_zh)
  if k.constraint == "CONSTRAINT_MEMCG" then
    local cg = k.oom_memcg or k.task_memcg or "?"
    return tr("{who_en}: the memory cgroup {cg:%s} reached its limit and the kernel killed the task with the largest "
                .. "footprint, {anon_rss_kb:%s} anonymous memory (heap, arrays, tensors it allocated itself).",
              "{who_zh}：内存 cgroup {cg:%s} 达到上限，内核杀掉了占用最大的任务，其匿名内存 {anon_rss_kb:%s}（进程自己分配的堆、数组、张量）。",
              { who_en = who_en, cg = cg, anon_rss_kb = size(k.anon_rss_kb), who_zh = who_zh })
  end
  return tr("{who_en}: the host ran out of RAM and swap ({constraint_en}) and the kernel killed the task with the "
              .. "largest footprint, {anon_rss_kb:%s} anonymous memory.",
            "{who_zh}：整机 RAM 与 swap 耗尽（{constraint_zh}），内核杀掉了占用最大的任务，其匿名内存 {anon_rss_kb:%s}。",
            { who_en = who_en, constraint_en = k.constraint or "no constraint recorded",
              anon_rss_kb = size(k.anon_rss_kb), who_zh = who_zh, constraint_zh = k.constraint or "无约束记录" })
end

-- SOP §2.2 table, keyed on what the profile shows (no guessing in the report itself).
local FIX = T(
  "Profile the peak before changing limits: tracemalloc (tracemalloc.start(10); take_snapshot() "
  .. "at the peak; statistics('lineno')) or memray (memray run -o mem.bin job.py; memray "
  .. "flamegraph mem.bin; `memray attach PID` on a running job). Then per SOP §2.2: killed right "
  .. "after start -> stream the dataset in chunks or np.load(..., mmap_mode='r') instead of "
  .. "loading it whole; grows until killed -> bound the growing list/cache "
  .. "(functools.lru_cache(maxsize=N), weakref); killed right after forking workers -> start "
  .. "them with multiprocessing 'spawn'/'forkserver' (side effect: each worker re-imports the "
  .. "main module, gets its arguments pickled and starts slower) or put the big arrays in "
  .. "multiprocessing.shared_memory. Raise the memory limit only when the profile shows the "
  .. "peak is needed.",
  "先定位峰值再改上限：tracemalloc（tracemalloc.start(10)；峰值处 take_snapshot()；"
  .. "statistics('lineno')）或 memray（memray run -o mem.bin job.py；memray flamegraph mem.bin；"
  .. "对运行中的进程用 `memray attach PID`）。再按 SOP §2.2 表：一启动就被杀 → 数据集分块流式读"
  .. "或 np.load(..., mmap_mode='r')，不要一次全量读入；越跑越大直到被杀 → 给增长的 list/缓存"
  .. "设上限（functools.lru_cache(maxsize=N)、weakref）；fork worker 后立刻被杀 → 用 "
  .. "multiprocessing 'spawn'/'forkserver' 启动 worker（副作用：每个 worker 重新 import 主模块、"
  .. "参数经 pickle 传入、启动更慢）或把大数组放进 multiprocessing.shared_memory。"
  .. "只有 profile 证明峰值确实需要时才调大内存上限。")

local function verify(cgpath, n)
  return tr("`dmesg -T | grep -i 'killed process'` shows no new kill for the job; the memory cgroup {cgpath} "
              .. "oom_kill counter stays at {count_en}; VmHWM in `sopctl run` stays below the limit over a full "
              .. "epoch.",
            "`dmesg -T | grep -i 'killed process'` 不再出现该作业的新记录；内存 cgroup {cgpath} 的 oom_kill 计数保持 {count_zh}；完整跑"
              .. "一个 epoch，`sopctl run` 里的 VmHWM 始终低于上限。",
            { cgpath = cgpath or "?", count_en = n or "its current value", count_zh = n or "当前值" })
end

rule {
  id = "oom.killed", section = "2.1", severity = "high",
  title = T("The process, or a task in its memory cgroup, was killed by the kernel OOM killer",
            "进程或其内存 cgroup 中的任务被内核 OOM killer 杀掉"),
  doc = [[Matches the kernel log's OOM records (host.oom_kills) to the target precisely. The target is gone and a record
    has its pid: post-mortem, high (anon-rss, file-rss, total-vm, memcg, constraint, how long ago). A record whose
    task_memcg is the target's cgroup, younger than oom_recent_s: high if it happened while the target ran, warn
    if before (an earlier run in the same cgroup). A record in a cgroup below the target's: only while the target
    ran (high). The cgroup's oom_kill counter > 0 with no matching record: warn (the counter proves a kill in this
    cgroup, not when or whom). The same command name killed in the root memcg after the target started: info only.
    Kills in sibling cgroups, in the root memcg of other commands, or of an earlier process with the target's pid
    are never attributed. A record in a cgroup below the target's counts (high) only when its pid is in the
    target's tree (the target, its children, a descendant polled over the window, a sampled worker); another
    process there (a job of its own in a group nested under ours) is info at most. The counter is v2
    memory.events.local (this group only) where present; v2's memory.events counts the groups below too, so
    without .local it warns only when no kernel-log record below the target's group explains it. Unknown when
    the kernel log and the cgroup counter are both unreadable.]],
  reads = { "host.oom_kills", "cgroup.memory.events.oom_kill", "cgroup.memory.events_local.oom_kill",
            "cgroup.version", "cgroup.path", "proc.start_time_s", "proc.comm", "children[].pid",
            "sched.procs", "python.workers", "alive", "collected_at", "pid" },
  uses = { "oom_recent_s" },
  check = function(ev, th)
    local kills = ev.host and ev.host.oom_kills
    local cg = ev.cgroup
    local counter, hierarchical = oom_counter(cg)

    -- The target itself is gone: post-mortem from the kernel log.
    if ev.alive == false then
      local rec
      for _, k in ipairs(kills or {}) do
        if k.pid == ev.pid then rec = k end -- newest last
      end
      if not rec then
        return unknown(tr("pid {pid} is gone and the kernel log has no OOM-kill record for it",
                          "pid {pid} 已不存在，内核日志里也没有它的 OOM-kill 记录", { pid = ev.pid }))
      end
      local en, zh = describe(ev, rec)
      return hit {
        symptom = tr("Process {pid} ({comm}) was killed by the kernel OOM killer",
                     "进程 {pid} ({comm}) 被内核 OOM killer 杀掉",
                     { pid = rec.pid, comm = rec.comm or "?" }),
        evidence = T("Kernel log: " .. en .. ".", "内核日志：" .. zh .. "。"),
        cause = cause_of(rec, fmt("pid %d", rec.pid), fmt("pid %d", rec.pid)),
        fix = FIX, verify = verify(rec.task_memcg, nil), refs = REFS,
      }
    end

    if not ev.proc then
      return no_proc(ev)
    end
    if not kills and not counter then
      return unknown(T("neither the kernel log nor the memory cgroup's oom_kill counter could be read",
                       "内核日志与内存 cgroup 的 oom_kill 计数都读不到"))
    end

    local path = cg and cg.path
    local start = ev.proc.start_time_s
    local linked, same_comm, below_other = {}, {}, {}
    local tree = tree_pids(ev)
    for _, k in ipairs(kills or {}) do
      local age = age_of(ev, k)
      local recent = age == nil or age <= th.oom_recent_s
      -- k.pid == ev.pid while the target lives is an earlier process with a reused pid.
      if recent and k.pid ~= ev.pid then
        -- Same cgroup: ours whenever it happened (an earlier run counts, as warn). A cgroup below
        -- ours: only while the target ran (clock slack 0.1 s: the start is known to 10 ms ticks,
        -- the kill to microseconds), else it is someone else's job.
        local during = start and k.time and k.time >= start - 0.1
        local same = at_or_below(k.task_memcg, path) and k.task_memcg:gsub("/+$", "") == path:gsub("/+$", "")
        if same or (at_or_below(k.task_memcg, path) and during and k.pid and tree[k.pid]) then
          linked[#linked + 1] = k
        elseif at_or_below(k.task_memcg, path) then
          -- below ours but not a process of the target's tree: a job of its own nested under ours
          if during then below_other[#below_other + 1] = k end
        elseif (k.task_memcg == nil or k.task_memcg == "/") and k.comm == ev.proc.comm
            and start and k.time and k.time >= start then
          same_comm[#same_comm + 1] = k
        end
      end
    end
    local win_en, win_zh = span(th.oom_recent_s)

    if #linked > 0 then
      local k = linked[#linked]
      local en, zh = describe(ev, k)
      local during = start and k.time and k.time >= start - 0.1
      local same_cg = k.task_memcg:gsub("/+$", "") == path:gsub("/+$", "")
      local count = #linked > 1 and tr("{n} kills in cgroup {path:%s} in the last {win}; newest: ",
                                       "最近 {win} 内 cgroup {path:%s} 有 {n} 次被杀；最新一次：",
                                       { n = #linked, path = path, win = T(win_en, win_zh) }) or ""
      local when_en = during and "while this process ran"
                      or "before this process started (an earlier run in the same cgroup)"
      local when_zh = during and "发生在本进程运行期间" or "发生在本进程启动之前（同一 cgroup 里的上一次运行）"
      local cnt = counter and tr("; cgroup oom_kill counter {counter:%d}", "；cgroup oom_kill 计数 {counter:%d}",
                                 { counter = counter }) or ""
      return hit {
        severity = during and "high" or "warn",
        symptom = same_cg
          and tr("pid {victim:%s} ({comm}), in the same memory cgroup as pid {pid}, was OOM-killed",
                 "与 pid {pid} 同一内存 cgroup 的 pid {victim:%s}（{comm}）被 OOM 杀掉",
                 { victim = pid_of(k), comm = k.comm or "?", pid = ev.pid })
          or tr("pid {victim:%s} ({comm}), in a memory cgroup below pid {pid}'s, was OOM-killed while it ran",
                "pid {pid} 运行期间，其内存 cgroup 之下的 pid {victim:%s}（{comm}）被 OOM 杀掉",
                { victim = pid_of(k), comm = k.comm or "?", pid = ev.pid }),
        evidence = tr("Kernel log: {count}{en:%s}, {when_en}; target cgroup {path:%s}{cnt}.",
                      "内核日志：{count}{zh:%s}，{when_zh}；目标 cgroup {path:%s}{cnt}。",
                      { count = count, en = en, when_en = when_en, path = path, cnt = cnt, zh = zh,
                        when_zh = when_zh }),
        cause = cause_of(k, "pid " .. pid_of(k), "pid " .. pid_of(k)),
        fix = FIX, verify = verify(path, counter), refs = REFS,
      }
    end

    -- A v2 counter without .local also counts the groups below ours: a kill record below explains it.
    local below_any = false
    for _, k in ipairs(kills or {}) do
      if at_or_below(k.task_memcg, path) and k.task_memcg:gsub("/+$", "") ~= path:gsub("/+$", "") then
        below_any = true
      end
    end
    if counter and counter > 0 and path and path ~= "/" and not (hierarchical and below_any) then
      local why = kills and tr("no matching kernel-log record in the last {win}", "最近 {win} 的内核日志里没有对应记录",
                               { win = T(win_en, win_zh) })
                  or T("the kernel log is not readable", "内核日志不可读")
      return hit {
        severity = "warn",
        symptom = tr("The memory cgroup {path:%s} of pid {pid} has had OOM kills",
                     "pid {pid} 所在内存 cgroup {path:%s} 发生过 OOM kill", { path = path, pid = ev.pid }),
        evidence = tr("cgroup {path:%s} memory oom_kill counter = {counter} ({scope_en}{why}, so victim and "
                        .. "time are unknown).",
                      "cgroup {path:%s} 的 oom_kill 计数 = {counter}（{scope_zh}{why}，被杀进程与时间未知）。",
                      { path = path, counter = counter,
                        scope_en = hierarchical and "memory.events, which also counts the groups below; " or "",
                        why = why, scope_zh = hierarchical and "memory.events，也计入其下各组；" or "" }),
        cause = tr("A task in cgroup {path:%s} exceeded the cgroup's memory limit and was killed by "
                   .. "the kernel.",
                   "cgroup {path:%s} 里有任务超过该 cgroup 的内存上限，被内核杀掉。", { path = path }),
        fix = FIX, verify = verify(path, counter), refs = REFS,
      }
    end

    if #below_other > 0 then
      local k = below_other[#below_other]
      local en, zh = describe(ev, k)
      return hit {
        severity = "info",
        symptom = tr("pid {victim:%s} ({comm}), in a memory cgroup nested below pid {pid}'s, was OOM-killed "
                       .. "while it ran; it is not one of its processes",
                     "pid {pid} 运行期间，其内存 cgroup 之下嵌套的 pid {victim:%s}（{comm}）被 OOM 杀掉；它不是本作业的进程",
                     { victim = pid_of(k), comm = k.comm or "?", pid = ev.pid }),
        evidence = tr("Kernel log: {en:%s}. Its pid is not in pid {pid}'s process tree (children, descendants polled "
                        .. "over the window, workers), so it belongs to another job nested under cgroup "
                        .. "{path:%s}{others}.",
                      "内核日志：{zh:%s}。其 pid 不在 pid {pid} 的进程树里（子进程、窗口内轮询到的后代、worker），属于嵌套在 cgroup {path:%s} 之下的其他作业"
                        .. "{others}。",
                      { en = en, pid = ev.pid, path = path, zh = zh,
                        others = #below_other > 1 and tr(" ({n} such kills)", "（共 {n} 次）", { n = #below_other })
                                 or "" }),
        cause = cause_of(k, "pid " .. pid_of(k), "pid " .. pid_of(k)),
        fix = T("Nothing to change in this job unless pid " .. pid_of(k) .. " was one of its workers started "
                .. "before the window (job logs, worker exit codes -9); if so, follow the oom.killed profile steps.",
                "除非 pid " .. pid_of(k) .. " 是本作业在窗口之前启动的 worker（看作业日志、worker 退出码 -9），否则本作业无需改动；"
                .. "若是，按 oom.killed 的 profile 步骤处理。"),
        verify = verify(path, counter), refs = REFS,
      }
    end

    if #same_comm > 0 then
      local k = same_comm[#same_comm]
      local en, zh = describe(ev, k)
      return hit {
        severity = "info",
        symptom = tr("A process named {comm} was OOM-killed host-wide after pid {pid} started",
                     "pid {pid} 启动后，整机范围有一个同名进程 {comm} 被 OOM 杀掉",
                     { comm = k.comm or "?", pid = ev.pid }),
        evidence = tr("Kernel log: {en:%s}. Only the name links it to this job: it was in the root memory cgroup, "
                        .. "target cgroup {path}.",
                      "内核日志：{zh:%s}。与本作业的唯一联系是同名：它在根内存 cgroup，目标 cgroup 为 {path}。",
                      { en = en, path = path or "?", zh = zh }),
        cause = cause_of(k, "pid " .. pid_of(k), "pid " .. pid_of(k)),
        fix = T("Check whether pid " .. pid_of(k) .. " was one of this job's workers (job logs, "
                .. "worker exit codes -9); if so, follow the oom.killed profile steps: "
                .. "tracemalloc/memray at the peak, then stream/bound/spawn per SOP §2.2.",
                "先确认 pid " .. pid_of(k) .. " 是否是本作业的 worker（作业日志、worker 退出码 -9）；"
                .. "若是，按 oom.killed 的步骤：峰值处 tracemalloc/memray，再按 SOP §2.2 流式读/限缓存/spawn。"),
        verify = verify(path, counter), refs = REFS,
      }
    end

    local n = kills and #kills or 0
    local en = fmt("no OOM kill of pid %d or in its memory cgroup %s in the last %s (%d kill "
                   .. "records in the kernel log)", ev.pid, path or "?", win_en, n)
    local zh = fmt("最近 %s 内没有 pid %d 或其内存 cgroup %s 的 OOM kill（内核日志共 %d 条 kill 记录）",
                   win_zh, ev.pid, path or "?", n)
    if not kills then
      en = fmt("memory cgroup %s oom_kill counter is %d (kernel log not readable)", path or "?", counter)
      zh = fmt("内存 cgroup %s 的 oom_kill 计数为 %d（内核日志不可读）", path or "?", counter)
    elseif counter then
      en = en .. fmt("; cgroup oom_kill counter %d", counter)
      zh = zh .. fmt("；cgroup oom_kill 计数 %d", counter)
    end
    local all = cg and cg.memory and cg.memory.events and cg.memory.events.oom_kill
    if counter and not hierarchical and cg.version == 2 and all and all ~= counter then
      en = en .. fmt(" in memory.events.local (%d in memory.events, which counts the groups below too)", all)
      zh = zh .. fmt("（memory.events.local；memory.events 为 %d，它也计入其下各组）", all)
    elseif counter and hierarchical and below_any then
      en = en .. " (memory.events, which also counts the kills in the groups below)"
      zh = zh .. "（memory.events，也计入其下各组的 kill）"
    end
    return clear(T(en, zh))
  end,
}
