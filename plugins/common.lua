-- plugins/common.lua — what several packs share, in one place: T(en, zh) builds a bilingual
-- text; no_proc(ev) is the verdict of a rule that needs the process's own status when it was not
-- read (a process that is gone, or a status file that could not be read); where(frame) names a
-- Python frame "func (file:line)"; ends_with(s, suffix); rate(bytes_per_s) as "12.0 MiB/s";
-- pool_libs(proc) lists the loaded libraries that run thread pools (BLAS, OpenMP, torch);
-- window_at_least(ev, min_s) says whether the measured window is long enough.
-- short_path(path) is a path's last part; mapped_text(ev, min_kb, n) names the first n mapped data
-- files of at least min_kb ("ckpt.pt 128 MiB mapped, 128 MiB resident; ...", en and zh, "" if none);
-- faulted_file(ev, min_kb) is the mapped data file whose resident pages grew most over the window.
-- share(thread_or_proc, pattern [, plain]) is the exact share of samples in code matching pattern.
-- own_frame(frames, ev) / user_frame(frames, ev): the innermost frame of the program's own code
-- (is_own_file, overridable by a site) and "own (file:line) -> leaf (file:line)".
-- tr(en, zh, args) is one bilingual text with named placeholders ("{n} threads", "{s:%.1f} s").
-- The preludes many rules open with: effective_cpus(ev) (NO_CPUS), need_stacks(ev) (NO_STACKS),
-- no_window(ev) / one_snapshot(en, zh) ("one snapshot (--duration 0): ..."; NO_WINDOW,
-- NO_CPU_RATES), NOT_SAMPLED / not_sampled(why_en, why_zh) ("the window was not sampled (--rate
-- 0?)"), NO_WORKING_THREAD; pct_text(frac) is "42%". gpu_use(ev) is the GPU the tree uses (busy share,
-- idle share, name; nil without GPU evidence) and gpu_idle_text(ev) says it ("" without). Use:
--   local common = require "plugins.common"
--   local T, no_proc = common.T, common.no_proc

local common = {}

function common.T(en, zh) return { en = en, zh = zh } end

-- One text in both languages, with named placeholders filled from args, so the two texts may
-- place them in different orders: "{name}" is the value as %s for a string and %d for a number
-- (an integer: a fraction raises, as fmt's %d would; a missing value raises), "{name:%.1f}" is
-- fmt("%.1f", value). Anything else in braces is kept as is. A value may itself be a bilingual
-- text ({en=, zh=}, what tr() and T() return): each language takes its own side, so a fragment
-- built once with tr() goes into a larger text as "{where}".
-- tr("{n} busy threads on {cpus} CPUs", "{n} 个繁忙线程，{cpus} 个 CPU", { n = 3, cpus = 2 }).
local function fill(text, args, lang)
  local out, i = {}, 1
  while true do
    local a = text:find("{", i, true)
    if not a then break end
    -- on a short piece: the sandbox prices a pattern by the subject's length
    local name, spec, e = text:sub(a, a + 63):match("^{([%w_]+)(:?[^{}%s]*)}()")
    if name and (spec == "" or spec:sub(1, 2) == ":%") then
      local v = args[name]
      if type(v) == "table" then v = v[lang] end
      if v == nil and spec == "" then error("tr: no value for {" .. name .. "}") end
      out[#out + 1] = text:sub(i, a - 1)
      if spec ~= "" then
        out[#out + 1] = fmt(spec:sub(2), v)
      else
        out[#out + 1] = type(v) == "number" and fmt("%d", v) or tostring(v)
      end
      i = a + e - 1
    else
      out[#out + 1] = text:sub(i, a) -- not a placeholder: kept as is
      i = a + 1
    end
  end
  out[#out + 1] = text:sub(i)
  return table.concat(out)
end

function common.tr(en, zh, args)
  args = args or {}
  return { en = fill(en, args, "en"), zh = fill(zh, args, "zh") }
end

-- A share in [0, 1] as a whole percentage: pct_text(0.423) = "42%". (The DSL's pct(a, b) is
-- the number 100 * a / b.)
function common.pct_text(frac) return fmt("%.0f%%", 100 * frac) end

-- The CPUs the job may use: the one figure engine/collect/collect.c computes (quota, cpuset, affinity;
-- ev.effective_cpus), else the host's CPU count on older evidence; nil when neither is known.
function common.effective_cpus(ev)
  return ev.effective_cpus or (ev.host and ev.host.ncpu)
end

-- What the job may use with the CFS quota as a fraction (0.5 CPU is half a core): eff (normally
-- effective_cpus(ev)), or a smaller ev.cgroup.cpu.quota_cpus; the same figure as
-- ev.sched.capacity_cpus (engine/collect/collect.c), for rules that also run on evidence without ev.sched.
function common.capacity_cpus(ev, eff)
  local q = ev.cgroup and ev.cgroup.cpu and ev.cgroup.cpu.quota_cpus
  if q and q < eff then return q end
  return eff
end

common.NO_CPUS = common.T("effective CPU count unknown", "有效 CPU 数未知")

-- The verdict of a rule that needs the sampled Python threads when there are none.
common.NO_STACKS = common.T("no Python stacks (not CPython, or its memory was not readable)",
                            "没有 Python 栈（不是 CPython，或无法读取其内存）")

-- Why the Python probe read nothing, as it said (the first reason that is not "not a CPython
-- process"): "CPython 3.16: layout not known to this sop ...", a memory refused, ...; nil when
-- it said nothing more.
function common.python_unread_reason(ev)
  for _, m in ipairs(ev.missing or {}) do
    if m.probe == "python" and m.reason and not m.reason:find("not a CPython process", 1, true) then
      return m.reason
    end
  end
  return nil
end

-- unknown(NO_STACKS) when ev.python has no threads (with the probe's reason when it gave one);
-- nil (go on) otherwise.
function common.need_stacks(ev)
  local py = ev.python
  if not py or not py.threads then
    local why = not py and common.python_unread_reason(ev)
    if why then
      return unknown(common.tr("no Python stacks: {why:%s}", "没有 Python 栈：{why:%s}", { why = why }))
    end
    return unknown(common.NO_STACKS)
  end
  return nil
end

-- Whether there is no measured window (one snapshot, --duration 0); a rule then says what it
-- lacks with one_snapshot(en, zh): unknown("one snapshot (--duration 0): no read rates").
function common.no_window(ev) return not ev.duration_s or ev.duration_s <= 0 end

function common.one_snapshot_text(en, zh)
  return common.T("one snapshot (--duration 0): " .. en, "只有一次快照（--duration 0）：" .. zh)
end

function common.one_snapshot(en, zh) return unknown(common.one_snapshot_text(en, zh)) end

-- The preludes several packs share, spelled here once: no window at all (--duration 0), no CPU
-- rates (the same), and a window that was not sampled (the sampler did not run, --rate 0;
-- not_sampled(why_en, why_zh) names another reason in the parentheses).
common.NO_WINDOW = common.one_snapshot_text("no sampled window", "没有采样窗口")
common.NO_CPU_RATES = common.one_snapshot_text("no CPU rates", "没有 CPU 速率")

function common.not_sampled(why_en, why_zh)
  return common.tr("the window was not sampled ({why_en})", "窗口未采样（{why_zh}）",
                   { why_en = why_en or "--rate 0?", why_zh = why_zh or "--rate 0？" })
end

common.NOT_SAMPLED = common.not_sampled()

-- Stack rules that look for a working thread with enough samples and find none.
common.NO_WORKING_THREAD = common.T("no working thread with enough samples", "没有样本足够的工作线程")

function common.no_proc(ev)
  if ev.alive == false then
    return unknown(common.T("the process is gone: only the kernel log speaks of it",
                            "进程已不存在：只有内核日志记录了它"))
  end
  return unknown(common.T("the process's status was not read (see missing evidence)",
                          "未能读取进程状态（见缺失的证据）"))
end

function common.where(frame)
  if not frame then return "?" end
  return fmt("%s (%s:%s)", frame.func or "?", frame.file or "?", tostring(frame.line or "?"))
end

function common.ends_with(s, suffix) return s ~= nil and s:sub(-#suffix) == suffix end

function common.rate(bytes_per_s) return kb(bytes_per_s / 1024) .. "/s" end

function common.pool_libs(proc)
  local out = {}
  for _, l in ipairs(proc.libs or {}) do
    if l.kind == "blas" or l.kind == "openmp" or l.kind == "torch" then
      out[#out + 1] = l.name or l.kind
    end
  end
  return out
end

-- The measured window ends a little before or after the requested one (the last sample, the
-- second snapshot's own reading time): `--duration 2` measures 1.99 s as often as 2.01 s. A rule
-- needing a window of at least min_s accepts one within WINDOW_TOLERANCE_S (or 5 %) below it.
common.WINDOW_TOLERANCE_S = 0.1

function common.window_at_least(ev, min_s)
  local d = ev.duration_s or 0
  return d > 0 and d >= min_s - math.max(common.WINDOW_TOLERANCE_S, 0.05 * min_s)
end

function common.short_path(p)
  if not p then return "?" end
  return p:match("[^/]+$") or p
end

-- Mapped data files (proc.mem.mapped, most resident first) as text: what is mapped and how much of
-- it is resident. -> en, zh, count named.
function common.mapped_text(ev, min_kb, n)
  local en, zh = {}, {}
  for _, f in ipairs((ev.proc and ev.proc.mem and ev.proc.mem.mapped) or {}) do
    if #en >= n then break end
    if f.kind == "data" and (f.size_kb or 0) >= min_kb then
      local name = common.short_path(f.path)
      local g = f.rss_growth_kb
      local grew = (g and g ~= 0) and common.tr(" ({sign:%s}{size:%s} over the window)", "（窗口内 {sign:%s}{size:%s}）",
                                                { sign = g > 0 and "+" or "-", size = kb(math.abs(g)) })
                   or common.T("", "")
      en[#en + 1] = fmt("%s %s mapped%s%s", name, kb(f.size_kb),
                        f.rss_kb and fmt(", %s resident", kb(f.rss_kb)) or "", grew.en)
      zh[#zh + 1] = fmt("%s 映射 %s%s%s", name, kb(f.size_kb), f.rss_kb and fmt("，驻留 %s", kb(f.rss_kb)) or "",
                        grew.zh)
    end
  end
  return table.concat(en, "; "), table.concat(zh, "；"), #en
end

-- The mapped data file (at least min_kb) whose resident kB grew most over the window
-- (proc.mem.mapped[].rss_growth_kb: smaps at the window's start and end): the file being faulted
-- in, which need not be the largest or most resident one. nil when none grew (or not measured).
function common.faulted_file(ev, min_kb)
  local best
  for _, f in ipairs((ev.proc and ev.proc.mem and ev.proc.mem.mapped) or {}) do
    if f.kind == "data" and (f.size_kb or 0) >= min_kb and (f.rss_growth_kb or 0) > 0
       and (not best or f.rss_growth_kb > best.rss_growth_kb) then
      best = f
    end
  end
  return best
end

-- Library code: the interpreter's standard library, installed packages, and pseudo files
-- ("<frozen ...>", "<string>"). The sampler's leaves[].caller uses the same test (engine/sample/sampler.c
-- library_file).
function common.is_library_file(file)
  if not file or file == "" then return true end
  return file:sub(1, 1) == "<" or file:find("/site-packages/", 1, true) ~= nil
         or file:find("/dist-packages/", 1, true) ~= nil or file:find("/lib/python3", 1, true) ~= nil
         or file:find("/lib64/python3", 1, true) ~= nil
end

local function dir_of(path) return path and path:match("^(.*)/[^/]*$") end

-- The roots of the program's own code: the target's working directory and its main script's
-- directory (the first *.py argument of its command line; relative to the cwd).
function common.own_roots(ev)
  local p = ev and ev.proc or {}
  local roots = {}
  if p.cwd and p.cwd ~= "" and p.cwd ~= "/" then roots[#roots + 1] = p.cwd end
  for arg in (p.cmdline or ""):gmatch("%S+") do
    if arg:sub(-3) == ".py" then
      local path = arg:sub(1, 1) == "/" and arg or (p.cwd and (p.cwd .. "/" .. arg))
      local d = dir_of(path)
      if d and d ~= "" and d ~= "/" then roots[#roots + 1] = d end
      break
    end
  end
  return roots
end

-- Own code, defined once for every rule: not library code, and under one of own_roots(ev) when
-- any is known (a file elsewhere counts when no frame of the stack is under a root). A site may
-- replace it: `require("plugins.common").is_own_file = function(file, ev) ... end`.
function common.is_own_file(file, ev, roots)
  if common.is_library_file(file) then return false end
  roots = roots or common.own_roots(ev)
  if #roots == 0 then return true end
  for _, r in ipairs(roots) do
    if file:sub(1, #r + 1) == r .. "/" then return true end
  end
  return false
end

-- The innermost frame of the program's own code in frames (innermost first), and its index;
-- else the innermost non-library frame; nil when all are library code.
function common.own_frame(frames, ev)
  local roots = common.own_roots(ev)
  local fallback, fi
  for i, f in ipairs(frames or {}) do
    if common.is_own_file(f.file, ev, roots) then return f, i end
    if not fallback and not common.is_library_file(f.file) then fallback, fi = f, i end
  end
  return fallback, fi
end

local function short(f)
  return fmt("%s (%s:%s)", f.func or "?", (f.file or "?"):match("[^/]*$"), tostring(f.line or "?"))
end

-- "get_user (app.py:20) → SocketIO.readinto (socket.py:706)": the user's own frame and the leaf
-- below it; the leaf alone when no own frame; nil for no frames.
function common.user_frame(frames, ev)
  if not frames or #frames == 0 then return nil end
  local own, i = common.own_frame(frames, ev)
  if not own then return short(frames[1]) end
  if i == 1 then return short(own) end
  return short(own) .. " → " .. short(frames[1])
end

-- The dists of a thread (ev.python.threads[i], ...workers[j].threads[i]) or of every thread of a
-- process (ev.python, ev.python.workers[j]: anything with .threads).
local function dists_of(x)
  local out = {}
  if type(x) ~= "table" then return out end
  if x.window then
    out[1] = x.window
  else
    for _, t in ipairs(x.threads or {}) do
      if t.window then out[#out + 1] = t.window end
    end
  end
  return out
end

-- share(thread_or_proc, pattern [, plain]) -> frac, count, samples, exact
-- The fraction of the sampled window in which a frame matching `pattern` (a Lua pattern, a
-- plain substring when `plain`, or a function(frame) -> boolean) was anywhere on the stack,
-- over the thread's (or all the process's threads') samples. A frame reads "func (file.py)"
-- (the file's base name). Counted on the full distribution of samples (window.dist: every
-- distinct stack), so it does not depend on how many distinct stacks the work spreads over;
-- top_stacks are for display only. `exact` is false when some samples were not stored (table
-- full), or only top_stacks were there (older evidence: then frac is a lower bound).
-- nil, 0, 0, false when nothing was sampled.
function common.share(x, pattern, plain)
  local hits, n, exact = 0, 0, true
  -- a pattern, or a function(frame_text) -> boolean
  local test = type(pattern) == "function" and pattern
               or function(f) return f:find(pattern, 1, plain) ~= nil end
  for _, w in ipairs(dists_of(x)) do
    local d = w.dist
    if d then
      local match = {}
      for i, f in ipairs(d.frames or {}) do match[i] = test(f) end
      for _, st in ipairs(d.stacks or {}) do
        for _, id in ipairs(st.ids or {}) do
          if match[id] then
            hits = hits + (st.count or 0)
            break
          end
        end
      end
      n = n + (d.samples or 0)
      if (d.stored or 0) < (d.samples or 0) or d.frames_cut then exact = false end
    elseif w.samples and w.samples > 0 then
      exact = false
      for _, st in ipairs(w.top_stacks or {}) do
        for f in (st.stack or ""):gmatch("[^;]+") do
          if test(f) then
            hits = hits + (st.count or 0)
            break
          end
        end
      end
      n = n + w.samples
    end
  end
  if n == 0 then return nil, 0, 0, false end
  return hits / n, hits, n, exact
end

-- The GPU the tree uses (ev.gpu, issue 25): nil when there is no GPU evidence or no device the tree
-- uses has utilisation readings; else { busy_pct, idle_frac, names ("NVIDIA H200" or "2 x ...") }.
function common.gpu_use(ev)
  local g = ev.gpu
  if not g or not g.busy_pct then return nil end
  local n, name = 0, nil
  for _, d in ipairs(g.devices or {}) do
    if d.used_by_tree and (d.util_samples or 0) > 0 then n, name = n + 1, name or d.name end
  end
  if n == 0 then return nil end
  local names = n == 1 and (name or "GPU") or fmt("%d GPUs", n)
  return { busy_pct = g.busy_pct, idle_frac = g.idle_frac, names = names }
end

-- " (GPU NVIDIA H200 busy 3%, idle in 95% of its readings)" / its zh text, "" without GPU evidence.
function common.gpu_idle_text(ev)
  local u = common.gpu_use(ev)
  if not u then return common.T("", "") end
  local idle = u.idle_frac and common.tr(", idle in {idle:%.0f}% of its readings", "，{idle:%.0f}% 的读数空闲",
                                         { idle = 100 * u.idle_frac }) or common.T("", "")
  return common.tr("; the GPU ({names:%s}) was {busy:%.0f}% busy over the window{idle}",
                   "；窗口内 GPU（{names:%s}）利用率 {busy:%.0f}%{idle}", { names = u.names, busy = u.busy_pct, idle = idle })
end

-- The share of the window the threads that slept on locks spent in the run queue, waiting for a CPU
-- (threads[].wait_pct of each, weighted by how long it slept on a lock), at most LOCK_QUEUED_MAX. A
-- thread queued for a CPU cannot be seen asleep on a lock at the same tick: on CPUs full of other
-- work, or with more runnable threads than CPUs, a convoy's waiters spend much of the window queued,
-- and the lock's wait share is read over the time they were off the run queue. 0 when unknown.
local LOCK_QUEUED_MAX = 0.8 -- read over at least a fifth of the window
local function lock_waiters_queued(ev)
  local q = {}
  for _, t in ipairs(ev.threads or {}) do
    if t.tid and t.wait_pct then q[t.tid] = t.wait_pct / 100 end
  end
  local sum, wsum = 0, 0
  for _, t in ipairs(ev.python and ev.python.threads or {}) do
    local w = t.window and t.window.lock_wait_frac
    local share = t.tid and q[t.tid]
    if w and w > 0 and share then sum, wsum = sum + w * share, wsum + w end
  end
  if wsum == 0 then return 0 end
  return math.max(0, math.min(sum / wsum, LOCK_QUEUED_MAX))
end

-- §4.2: a lock convoy. Several threads asleep at the same acquire site (the innermost frame of the
-- program's own code, in a futex that is not the GIL's) while exactly one other thread is past it
-- (its stack holds the site's function): the threads take turns on a lock, whatever its type
-- (Lock, RLock, a Condition's lock, a Semaphore, a lock inside a library). Counted at each tick of
-- the window (ev.python.locks[], engine/sample/sample_agg.c). Returns the lock, its waiters' wait
-- share of the time they were off the run queue (lock_waiters_queued) and that queued share.
function common.lock_convoy(ev, th)
  local py = ev.python
  local best, best_wait
  local queued = py and py.locks and py.locks[1] and lock_waiters_queued(ev) or 0
  for _, l in ipairs(py and py.locks or {}) do
    -- One futex word for most waiters is one mutex (Lock, RLock); threads that each sleep on their own
    -- word (a Semaphore, a Condition, a queue's get) are a lock only when it is never free: handed straight
    -- from holder to waiter, where consumers waiting for work see gaps with nobody inside.
    local held = l.held_frac and l.held_frac * 100 or 0
    local mutex = (l.one_word_frac or 0) >= 0.5 and held >= th.lock_held_pct or held >= th.lock_handoff_pct
    local wait = l.wait_frac and math.min(1, l.wait_frac / (1 - queued))
    if l.threads and l.threads >= th.lock_min_threads and wait and wait * 100 >= th.lock_wait_pct
       and mutex and (l.crowded_frac or 0) * 100 <= 100 - th.lock_held_pct then
      if not best or wait * l.threads > best_wait * best.threads then best, best_wait = l, wait end
    end
  end
  return best, best_wait, queued
end

-- GIL handoff churn (gil.handoff_churn, §4). Hit (1st return) when all hold:
--   * at least gil_min_threads Python threads each use gil_thread_busy_pct of a core ("busy");
--   * the threads may run on at least 2 CPUs at once (effective CPUs: affinity and cpuset; a CFS
--     quota limits time, not how many run at once): on one, a released GIL is taken only when its
--     holder blocks or is preempted, so the count says how often threads block, not that they churn;
--   * the busy threads want to run (state R, holding the GIL, or asleep on it) at least
--     gil_churn_min_want_pct % of their samples on average: threads that hand the GIL over because
--     they block (fsync, a socket recv: D or S state) take turns as IO concurrency means them to;
--   * the GIL went to another thread at least gil_churn_min_x times as often as the switch
--     interval forces (1e6 / gil_interval_us per second: threads taking turns at the interval);
--   * the process spent at least gil_churn_min_sys_pct % of its CPU in the kernel, where each
--     handoff is paid (a futex wake-up, a context switch).
-- Returns hit-or-nil and the figures { per_s, x, forced, interval_ms, sys_share, sys_pct, busy
-- (list of { t = python thread, o = OS thread }), want_pct, cpus, why (the first condition that
-- failed: "busy", "cpus", "want", "rate") }; nil, nil when the counter was not read.
-- Other processes' CPU over the window: the host's busy cores minus the job's (the process and
-- its workers), with the host's idle % and CPU count; `busy` when they kept the CPUs full
-- (foreign_idle_max_pct, foreign_min_cores). nil when the host's CPU was not measured.
function common.foreign_load(ev, th)
  local h = ev.host
  local idle, n = h and h.cpu and h.cpu.idle_pct, h and h.ncpu
  if not idle or not n or n <= 0 or not ev.proc or not ev.proc.cpu_pct then return nil end
  local job = ev.proc.cpu_pct
  for _, c in ipairs(ev.children or {}) do job = job + (c.cpu_pct or 0) end
  local cores = math.max(0, n * (100 - idle) / 100 - job / 100)
  return { idle_pct = idle, ncpu = n, cores = cores, load1 = h.load1,
           busy = idle <= th.foreign_idle_max_pct and cores >= th.foreign_min_cores }
end

-- Is the job stalled, its threads waiting on each other (progress.hang, summary.verdict)? Returns
-- nil, why when it cannot be told; else { stalled = bool, why = text (when not), nthreads, cpu (% of a
-- core, the process and its children), nchildren, groups (text: the waiters by their frame) }.
-- Stalled: no CPU to speak of (hang_cpu_pct), no child running, every OS thread asleep at the window's
-- end on a futex with no timeout (threads[].wait "lock"; a timed one only when the sampler saw that
-- thread wait on the GIL), and each sampled Python thread asleep so (lock_wait_frac + gil_wait_frac)
-- for hang_wait_frac of its samples on one stack. Anything waiting on the outside clears it.
local OUTSIDE = {
  net = { "a socket or pipe (poll/select/epoll, accept, recv)", "socket 或管道（poll/select/epoll、accept、recv）" },
  read = { "a read or write (a pipe, socket, terminal or file)", "read/write（管道、socket、终端或文件）" },
  timer = { "a timer (sleep)", "定时器（sleep）" },
  child = { "a child process (wait)", "子进程（wait）" },
  signal = { "a signal", "信号" },
  lock_timed = { "a futex with a timeout (it wakes by itself)", "带超时的 futex（会自己醒来）" },
  other = { "another system call", "其他系统调用" },
}

function common.stall(ev, th)
  if ev.alive == false then
    return nil, common.T("the process is gone: no live state", "进程已不存在：没有运行状态")
  end
  local p = ev.proc
  if common.no_window(ev) or not p or not p.cpu_pct then return nil, common.NO_CPU_RATES end
  if not ev.threads or #ev.threads == 0 then
    return nil, common.T("thread states not read", "未读到线程状态")
  end
  local cpu, nkids = p.cpu_pct, 0
  for _, c in ipairs(ev.children or {}) do
    if c.state ~= "Z" then
      nkids = nkids + 1
      cpu = cpu + (c.cpu_pct or 0)
      if c.state == "R" or c.state == "D" then
        return { stalled = false, why = common.tr("child process {pid} is running ({st})", "子进程 {pid} 在运行（{st}）",
                                                  { pid = c.pid, st = c.state }) }
      end
    end
  end
  if cpu > th.hang_cpu_pct then
    return { stalled = false, why = common.tr("the job used {cpu:%.1f}% of a core over {d:%.1f} s: its threads run "
                                                .. "(a hang needs at most {max:%g}%)",
                                              "作业在 {d:%.1f} 秒内用了 {cpu:%.1f}% 个核：线程在运行（卡死的阈值 <= {max:%g}%）",
                                              { cpu = cpu, d = ev.duration_s, max = th.hang_cpu_pct }) }
  end
  local gil_waiter = {}
  local py = ev.python
  for _, t in ipairs(py and py.threads or {}) do
    local w = t.window
    if t.tid and w and (w.gil_wait_frac or 0) >= 0.5 then gil_waiter[t.tid] = true end
  end
  for _, t in ipairs(ev.threads) do
    local name = t.name or "?"
    if t.state == "R" or t.state == "D" then
      return { stalled = false, why = common.tr("thread {tid} ({name}) is {st} at the window's end",
                                                "线程 {tid}（{name}）在窗口结束时处于 {st}",
                                                { tid = t.tid, name = name,
                                                  st = t.state == "R" and "running" or "in D state" }) }
    end
    local kind = t.wait
    if kind == "lock_timed" and gil_waiter[t.tid] then kind = "lock" end
    if not kind then
      if t.state ~= "Z" and t.state ~= "X" then
        return nil, common.tr("what thread {tid} sleeps in is unreadable (/proc/PID/task/TID/syscall needs ptrace "
                                .. "access)",
                              "读不到线程 {tid} 睡在哪个系统调用（/proc/PID/task/TID/syscall 需要 ptrace 权限）", { tid = t.tid })
      end
    elseif kind ~= "lock" then
      local o = OUTSIDE[kind] or OUTSIDE.other
      return { stalled = false, why = common.tr("thread {tid} ({name}) waits on {what_en}: the job can be woken from "
                                                  .. "outside (idle, waiting for work, is healthy)",
                                                "线程 {tid}（{name}）在等{what_zh}：作业可以被外部唤醒（空闲等任务是正常的）",
                                                { tid = t.tid, name = name, what_en = o[1], what_zh = o[2] }) }
    end
  end
  local groups, order = {}, {}
  for _, t in ipairs(py and py.threads or {}) do
    local w = t.window
    if w and (w.samples or 0) >= th.sampled_min_samples then
      local f = (w.lock_wait_frac or 0) + (w.gil_wait_frac or 0)
      if f < th.hang_wait_frac then
        return { stalled = false, why = common.tr("Python thread {tid} slept on locks in {f:%.0f}% of its samples "
                                                    .. "(a hang needs {min:%.0f}%)",
                                                  "Python 线程 {tid} 只有 {f:%.0f}% 的样本睡在锁上（卡死的阈值 {min:%.0f}%）",
                                                  { tid = t.tid or 0, f = 100 * f, min = 100 * th.hang_wait_frac }) }
      end
      local top = w.top_stacks and w.top_stacks[1]
      if not top or (top.count or 0) < th.hang_wait_frac * w.samples then
        return { stalled = false, why = common.tr("Python thread {tid}'s stack changed over the window",
                                                  "Python 线程 {tid} 的栈在窗口内有变化", { tid = t.tid or 0 }) }
      end
    end
    local label = common.user_frame(t.frames, ev) or "?"
    if not groups[label] then
      groups[label] = 0
      order[#order + 1] = label
    end
    groups[label] = groups[label] + 1
  end
  table.sort(order, function(a, b) return groups[a] > groups[b] end)
  local parts = {}
  for i, label in ipairs(order) do
    if i > 6 then break end
    parts[#parts + 1] = fmt("%d × %s", groups[label], label)
  end
  local npy = py and py.threads and #py.threads or 0
  if #ev.threads > npy then parts[#parts + 1] = fmt("%d × native", #ev.threads - npy) end
  return { stalled = true, nthreads = #ev.threads, cpu = cpu, nchildren = nkids,
           groups = table.concat(parts, "; ") }
end

-- Busy-waiting threads (gil.busy_wait): a sampled Python thread active (holding the GIL or running)
-- at least spin_active_frac of its samples whose active samples sit, for spin_share of them, on loop
-- lines that only test (the source at the frame: `while <cond>:` with nothing or `pass`/`continue` or
-- `sleep(0)` in it), calling nothing but a cheap predicate (Event.is_set, Queue.empty, time.time...).
-- Returns a list of { tid, name, site ("func (file:line)"), code, share, active }, busiest first.
local SPIN_SPAN = 8 -- a spin loop's lines lie within this many lines of each other
local SPIN_CALLS = { is_set = true, isSet = true, empty = true, full = true, qsize = true, locked = true,
                     done = true, is_alive = true, time = true, monotonic = true, perf_counter = true,
                     poll = true, ready = true, len = true, get = true }
-- A line a spin loop is made of: its `while` test, an `if` test, `pass`/`continue`/`break`, a
-- counter bump (`n += 1`), `sleep(0)`. Returns "while", "trivial" or nil.
local function spin_line(code)
  if not code then return nil end
  local c = code:gsub("#.*$", ""):gsub("%s+$", ""):gsub("^%s+", "")
  -- the tests call nothing but cheap predicates (`while os.read(fd, n):` does the work in its test)
  for name in c:gmatch("([%w_]+)%s*%(") do
    if not SPIN_CALLS[name] and name ~= "sleep" then return nil end
  end
  if c:match("^while%s.+:") then return "while" end
  if c:match("^if%s.+:$") or c:match("^elif%s.+:$") or c == "pass" or c == "continue" or c == "break"
      or c:match("^[%w_%.%[%]]+%s*[%+%-]=%s*1$") or c:match("sleep%(%s*0%.?0*%s*%)$") then
    return "trivial"
  end
  return nil
end

function common.spinners(ev, th)
  local out = {}
  for _, t in ipairs(ev.python and ev.python.threads or {}) do
    local w = t.window
    if w and (w.samples or 0) >= th.sampled_min_samples and (w.active_frac or 0) >= th.spin_active_frac then
      -- the loop: lines of one function within SPIN_SPAN lines, one of them its `while` test
      local active, spin, site, code, func, lo, hi = 0, 0, nil, nil, nil, nil, nil
      for _, l in ipairs(w.leaves or {}) do
        local a = l.active or 0
        active = active + a
        local own = l.caller or l.leaf
        local leaf = l.leaf or {}
        local own_code = own and (own.code or (leaf.line == own.line and leaf.file == own.file and leaf.code))
        local call_ok = not l.entry or SPIN_CALLS[(l.entry.func or ""):match("[^.]*$")]
        local kind = own and call_ok and spin_line(own_code)
        local key = own and (own.func or "") .. (own.file or "")
        local line = own and own.line
        if kind and line and (not func or func == key) and
            (not lo or (math.max(hi, line) - math.min(lo, line) <= SPIN_SPAN)) then
          func = key
          lo, hi = math.min(lo or line, line), math.max(hi or line, line)
          spin = spin + a
          if kind == "while" and not site then
            site = fmt("%s (%s:%s)", own.func or "?", (own.file or "?"):match("[^/]*$"), tostring(line))
            code = own_code:gsub("^%s+", "")
          end
        end
      end
      if active > 0 and site and spin >= th.spin_share * active then
        out[#out + 1] = { tid = t.tid, name = t.name, site = site, code = code, share = spin / active,
                          active = w.active_frac, gil = w.gil_frac }
      end
    end
  end
  table.sort(out, function(a, b) return a.active > b.active end)
  return out
end

function common.gil_churn(ev, th)
  local c = ev.python and ev.python.concurrency
  local sw, iv = c and c.gil_switches_per_s, c and c.gil_interval_us
  local p = ev.proc
  if not sw or not iv or iv <= 0 or not p or not p.cpu_pct or p.cpu_pct <= 0 then return nil end
  local sys, os_threads = 0, {}
  for _, t in ipairs(ev.threads or {}) do
    sys = sys + (t.sys_pct or 0)
    os_threads[t.tid] = t
  end
  local busy, want = {}, 0
  for _, t in ipairs(ev.python.threads or {}) do
    local o = os_threads[t.tid]
    if o and o.cpu_pct and o.cpu_pct >= th.gil_thread_busy_pct then
      busy[#busy + 1] = { t = t, o = o }
      local w = t.window or {}
      want = want + math.min(1, (w.active_frac or 0) + (w.gil_wait_frac or 0))
    end
  end
  local forced = 1e6 / iv
  local eff = common.effective_cpus(ev)
  local f = { per_s = sw, x = sw / forced, forced = forced, interval_ms = iv / 1000, sys_pct = sys,
              sys_share = 100 * sys / p.cpu_pct, busy = busy, want_pct = #busy > 0 and 100 * want / #busy or 0,
              cpus = eff }
  if #busy < th.gil_min_threads then
    f.why = "busy"
  elseif f.cpus and f.cpus < 2 then
    f.why = "cpus"
  elseif f.want_pct < th.gil_churn_min_want_pct then
    f.why = "want"
  elseif f.x < th.gil_churn_min_x or f.sys_share < th.gil_churn_min_sys_pct then
    f.why = "rate"
  else
    return f, f
  end
  return nil, f
end

-- §3.5, call-overhead-bound: a thread window (python.threads[].window) whose active samples
-- alternate between holding the GIL (the interpreter: the loop's lines, argument parsing) and
-- running without it (short native calls that release it), changing state from one sample to the
-- next about as often as chance makes it (2p(1-p), p its GIL share): each native call is much
-- shorter than the sampling interval and the GIL is taken back after each. A long native kernel
-- stays in one state across samples (or the GIL share is small: native compute). Returns
-- { gil = p, native = 1 - p, mix = observed / expected, pairs } or nil.
function common.overhead_bound(w, th)
  if not w or not w.alternation_frac or not w.alternation_pairs or w.alternation_pairs < th.tiny_min_pairs then
    return nil
  end
  local g = w.gil_frac or 0
  -- native calls: running without the GIL, its waits for the GIL and for the GPU aside (a sync that
  -- spins in the driver is a wait, not a short native call: issue 25)
  local nat = (w.runnable_nogil_frac or 0) - (w.gil_wait_frac or 0) - (w.gpu_wait_frac or 0)
  if g + nat <= 0 then return nil end
  local p = g / (g + nat)
  local expect = 2 * p * (1 - p)
  if 100 * p < th.tiny_gil_min_pct or 100 * (1 - p) < th.tiny_native_min_pct or expect <= 0 then return nil end
  local mix = w.alternation_frac / expect
  if mix < th.tiny_mixing then return nil end
  -- How long its native calls and Python stretches last, measured: its samples looked at again
  -- 0.05 ms later. Stretches of µs leave no trace by then: it holds the GIL as often after a
  -- sample with it (gil_kept_frac) as after one without (recheck_gil_frac). Calls of 0.1 ms and
  -- more keep it in the state it was in (a loop of np.repeat copies and ufuncs on 4 MB arrays
  -- alternates at 100 Hz like one of tiny calls: kept 0.93, back 0.07). Unmeasured (older
  -- evidence, too few rechecks): the alternation alone, and `measured` is false.
  local measured = (w.native_rechecks or 0) >= th.tiny_min_rechecks and (w.gil_rechecks or 0) >= th.tiny_min_rechecks
                   and w.recheck_gil_frac ~= nil and w.gil_kept_frac ~= nil
  local persist = measured and w.gil_kept_frac - w.recheck_gil_frac or nil
  if persist and persist > th.tiny_recheck_persist then
    return nil, { kept = w.gil_kept_frac, back = w.recheck_gil_frac }  -- alternates, but in long stretches
  end
  return { gil = p, native = 1 - p, mix = mix, pairs = w.alternation_pairs, alt = w.alternation_frac,
           measured = measured, rechecks = (w.native_rechecks or 0) + (w.gil_rechecks or 0),
           back = w.recheck_gil_frac, kept = w.gil_kept_frac }
end

return common
