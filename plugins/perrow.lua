-- plugins/perrow.lua — SOP §3.5 beyond numpy's tiny calls: a thread spending most of its samples in
-- the Python-level per-row / per-element machinery of pandas (DataFrame.apply(axis=1), iterrows,
-- itertuples, Series.__getitem__, scalar .loc/.iloc/.at) or torch (Tensor.__getitem__/item per
-- element). Reads ev.python.threads[].window (dist via common.share, leaves for the user's
-- function). Thresholds: per_row_pct, sampled_min_samples. And perrow.tiny_ops: a loop of tiny
-- native calls of any library, told by what it does (common.overhead_bound), not by names.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

-- Library frames ("func (file.py)") that run once per row or element, and what they are.
local MACHINERY = {
  { "apply_series_generator (apply.py)", "DataFrame.apply (one Python call per row)" },
  { "apply_standard (apply.py)", "DataFrame.apply (one Python call per row)" },
  { "SeriesApply.apply", "Series.apply / map (one Python call per element)" },
  { "DataFrame.iterrows (frame.py)", "DataFrame.iterrows (a Series built per row)" },
  { "DataFrame.itertuples (frame.py)", "DataFrame.itertuples" },
  { "Series.__getitem__ (series.py)", "Series.__getitem__ (scalar indexing)" },
  { "_LocationIndexer.__getitem__ (indexing.py)", ".loc/.iloc scalar indexing" },
  { "_ScalarAccessIndexer.__getitem__ (indexing.py)", ".at/.iat scalar indexing" },
  { "Tensor.__getitem__ (_tensor.py)", "per-element torch indexing" },
}

local function machinery_of(frame)
  for _, m in ipairs(MACHINERY) do
    if frame:find(m[1], 1, true) then return m[2] end
  end
  return nil
end

local function lib_file(f)
  return f and f.file and (f.file:find("/pandas/", 1, true) or f.file:find("/torch/", 1, true)) ~= nil
end

rule {
  id = "perrow.python_calls", section = "3.5", severity = "warn",
  title = T("a thread spends most of its time in per-row Python calls into pandas/torch (apply, iterrows, scalar "
            .. "indexing)", "线程大部分时间花在逐行调用 pandas/torch 的 Python 机制上（apply、iterrows、标量索引）"),
  doc = [[Sampled window: for each working thread (active in at least half of at least sampled_min_samples samples),
    the exact share of its samples with a per-row/per-element frame of pandas (apply's series generator,
    iterrows, itertuples, Series.__getitem__, .loc/.iloc/.at scalar access) or torch (Tensor.__getitem__) on the
    stack (common.share on the full distribution). Hit at per_row_pct; names the library loop and the user's
    function it calls or that drives it (the leaves' own caller below a pandas/torch entry). Unknown without a
    sampled window.]],
  reads = { "python.threads[].window.dist", "python.threads[].window.leaves",
            "python.threads[].window.samples", "python.threads[].window.active_frac", "duration_s", "pid",
            "python.threads[].name", "python.threads[].tid", "python.threads[].window.top_stacks" },
  uses = { "per_row_pct", "sampled_min_samples" },
  cause = T("Each row (or element) goes through Python: a function call, a Series or tensor object built, index "
            .. "lookups — microseconds of interpreter overhead per row that vectorized column operations pay "
            .. "once per column (SOP §3.5).",
            "每一行（或元素）都要走一遍 Python：函数调用、构造 Series 或张量对象、索引查找——每行几微秒的解释器"
            .. "开销，而向量化的列运算每列只付一次（SOP §3.5）。"),
  fix = T("Express the row function as column operations (df['a'] * df['b'], np.where, Series.map with a dict, "
          .. "groupby/merge); when a row loop is unavoidable iterate over df.to_numpy() or itertuples(index=False, "
          .. "name=None) instead of iterrows/apply(axis=1); for tensors index whole slices, not t[i].item().",
          "把逐行函数改写成列运算（df['a'] * df['b']、np.where、用 dict 的 Series.map、groupby/merge）；"
          .. "必须逐行时遍历 df.to_numpy() 或 itertuples(index=False, name=None)，不要 iterrows/apply(axis=1)；"
          .. "张量按整片索引，不要 t[i].item()。"),
  refs = { "https://pandas.pydata.org/docs/user_guide/enhancingperf.html",
           "https://pandas.pydata.org/docs/reference/api/pandas.DataFrame.iterrows.html" },
  check = function(ev, th)
    local py = ev.python
    if not py or not py.threads then
      return unknown(common.NO_STACKS)
    end
    if common.no_window(ev) then return unknown(common.NO_WINDOW) end
    local best, working = nil, 0
    for _, t in ipairs(py.threads) do
      local w = t.window
      if w and w.samples and w.samples >= th.sampled_min_samples and (w.active_frac or 0) >= 0.5 then
        working = working + 1
        local kinds = {}
        local frac, count, n, exact = common.share(t, function(f)
          local k = machinery_of(f)
          if k then kinds[k] = true end
          return k ~= nil
        end)
        if frac and (not best or frac > best.frac) then
          local names = {}
          for k in pairs(kinds) do names[#names + 1] = k end
          table.sort(names)
          best = { t = t, frac = frac, count = count, n = n, exact = exact, kinds = names }
        end
      end
    end
    if working == 0 then return unknown(common.NO_WORKING_THREAD) end
    if not best or 100 * best.frac < th.per_row_pct then
      return clear(tr("no working thread spends >= {per_row_pct:%g}% of its samples in per-row pandas/torch machinery "
                        .. "(most: {frac_pct:%.0f}%)",
                      "没有工作线程有 >= {per_row_pct:%g}% 的样本在逐行 pandas/torch 机制里（最多 {frac_pct:%.0f}%）",
                      { per_row_pct = th.per_row_pct, frac_pct = best and 100 * best.frac or 0 }))
    end
    -- the user's function: the own caller most seen below a pandas/torch entry
    local callers, top, top_n = {}, nil, 0
    for _, l in ipairs(best.t.window.leaves or {}) do
      if l.caller and (lib_file(l.entry) or lib_file(l.leaf)) then
        local key = fmt("%s (%s:%s)", l.caller.func or "?", (l.caller.file or "?"):match("[^/]*$"),
                        tostring(l.caller.line or "?"))
        callers[key] = (callers[key] or 0) + (l.count or 0)
        if callers[key] > top_n then top, top_n = key, callers[key] end
      end
    end
    local who = top and tr("; the user's code: {top:%s}", "；用户代码：{top:%s}", { top = top })
                or T("; the user's frame was not among the top leaves", "；用户帧不在最热的叶子里")
    local loops = table.concat(best.kinds, ", ")
    return hit {
      symptom = tr("thread {tid} spends {frac_pct:%.0f}% of its samples in per-row Python machinery ({loops:%s})",
                   "线程 {tid} 有 {frac_pct:%.0f}% 的样本在逐行 Python 机制里（{loops:%s}）",
                   { tid = best.t.tid, frac_pct = 100 * best.frac, loops = loops }),
      evidence = tr("tid {tid} ({name}): {count} of {n} samples ({frac_pct:%.0f}%{bound_en}) with {loops:%s} on the "
                      .. "stack{who}",
                    "tid {tid}（{name}）：{n} 个样本中 {count} 个（{frac_pct:%.0f}%{bound_zh}）栈上有 {loops:%s}{who}",
                    { tid = best.t.tid, name = best.t.name or "?", count = best.count, n = best.n,
                      frac_pct = 100 * best.frac, bound_en = best.exact and "" or ", a lower bound", loops = loops,
                      who = who, bound_zh = best.exact and "" or "，下限" }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: the per-row share drops and rows/s rises.",
                  "`sopctl run --pid {pid} --duration 3`：逐行占比下降，每秒处理行数上升。", { pid = ev.pid }),
    }
  end,
}

rule {
  -- warn where the native calls' length was measured (rechecks 0.05 ms after a sample); info on
  -- the alternation alone: at 100 Hz a call of a few ms alternates like one of a few µs.
  id = "perrow.tiny_ops", section = "3.5", severity = "warn",
  title = T("a busy thread is call-overhead-bound: a loop of tiny native calls (any library), the GIL taken back "
            .. "after each", "繁忙线程受调用开销限制：循环里全是很小的原生调用（任意库），每次调用后都要重新拿 GIL"),
  doc = [[Sampled window: a busy thread (at least numpy_min_samples samples, active in numpy_busy_frac of them) whose
    active samples alternate between holding the GIL (the loop's Python lines) and running without it (native calls
    that release it): GIL held at least tiny_gil_min_pct % and released at least tiny_native_min_pct % of its active
    samples, and consecutive samples between which it ran change GIL state at least tiny_mixing x 2p(1-p) (p its GIL
    share) over at least tiny_min_pairs pairs: each call is far shorter than the sampling interval. Where at least
    tiny_min_rechecks of its samples with and without the GIL were each looked at again 0.05 ms later, the share
    holding it then after a sample with it may exceed the share after one without by at most tiny_recheck_persist
    (its calls and Python stretches last µs; a kernel or a copy of MB keeps its state: 0.8-1): warn. Without that
    measurement (older evidence) the alternation alone gives info. A thread with tiny_max_sys_pct % or more of its
    CPU in the kernel (threads[].sys_pct of cpu_pct), or a process making tiny_max_syscalls_per_s read+write calls
    per second, releases the GIL around system calls (sockets, small reads): clear. Native compute
    stays in one kernel across samples, or leaves the GIL share small. Names the thread's own lines (the leaves'
    own caller) and the library entries seen. Unknown without a sampled window or older evidence.]],
  reads = { "python.threads[].window.samples", "python.threads[].window.active_frac",
            "python.threads[].window.gil_frac", "python.threads[].window.runnable_nogil_frac",
            "python.threads[].window.gil_wait_frac", "python.threads[].window.alternation_frac",
            "python.threads[].window.alternation_pairs", "python.threads[].window.native_rechecks",
            "python.threads[].window.recheck_gil_frac", "python.threads[].window.gil_rechecks",
            "python.threads[].window.gil_kept_frac", "python.threads[].window.gpu_wait_frac",
            "python.threads[].window.leaves",
            "python.threads[].window.entries", "python.threads[].name", "python.threads[].tid",
            "python.threads[].window", "sampling.rate_hz", "duration_s", "pid", "proc.io.syscr_per_s",
            "proc.io.syscw_per_s", "threads[].tid", "threads[].cpu_pct", "threads[].sys_pct", "host.cpu.idle_pct",
            "host.ncpu", "host.load1", "proc.cpu_pct", "children[].cpu_pct" },
  uses = { "foreign_idle_max_pct", "foreign_min_cores", "numpy_min_samples", "numpy_busy_frac", "tiny_gil_min_pct",
           "tiny_native_min_pct", "tiny_mixing",
           "tiny_max_syscalls_per_s", "tiny_max_sys_pct", "tiny_min_pairs", "tiny_min_rechecks",
           "tiny_recheck_persist" },
  symptom = T("a busy thread is call-overhead-bound: a loop of tiny native calls", "繁忙线程受调用开销限制：循环里全是很小的原生调用"),
  cause = T("Each library call (a torch op, a numpy ufunc, a pandas scalar access) costs microseconds of fixed "
            .. "overhead — argument parsing, dispatch, an output allocated, the GIL released and taken back — "
            .. "whatever the data size; on a few elements that overhead is the whole cost, and more threads do not "
            .. "help since each call re-takes the GIL (SOP §3.5).",
            "每次库调用（torch 算子、numpy ufunc、pandas 标量访问）无论数据多小都有几微秒的固定开销——参数解析、分派、"
            .. "分配输出、释放又重新获取 GIL；只处理几个元素时这部分就是全部开销，加线程也没用，因为每次调用都要重新拿 "
            .. "GIL（SOP §3.5）。"),
  fix = T("Make fewer, larger calls: stack the elements into one (N, k) array or tensor and apply each operation "
          .. "once over the batch (broadcasting, axis=, torch.stack/vmap), or hand the library whole buffers instead "
          .. "of small pieces; for logic that cannot be vectorized use numba @njit or torch.compile over the whole "
          .. "loop; keep per-element scalar math in plain Python floats. More threads do not help.",
          "减少调用次数、增大每次调用的数据量：把元素堆成一个 (N, k) 数组或张量，每种运算对整批只调用一次（广播、axis=、"
          .. "torch.stack/vmap），或把整块缓冲区而不是小片交给库；无法向量化的逻辑用 numba @njit 或对整个循环用 "
          .. "torch.compile；逐元素的标量运算用 Python float。加线程没有用。"),
  refs = { "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html",
           "https://numpy.org/doc/stable/user/basics.broadcasting.html" },
  check = function(ev, th)
    local py = ev.python
    if not py or not py.threads then return unknown(common.NO_STACKS) end
    if common.no_window(ev) then return unknown(common.NO_WINDOW) end
    -- the kernel's share of each thread's CPU over the window (threads[]: stat utime/stime)
    local sys_share = {}
    for _, o in ipairs(ev.threads or {}) do
      if o.tid and o.sys_pct and o.cpu_pct and o.cpu_pct > 0 then sys_share[o.tid] = 100 * o.sys_pct / o.cpu_pct end
    end
    local best, busy, measured, long, kernel = nil, 0, 0, nil, nil
    for _, t in ipairs(py.threads) do
      local w = t.window
      if w and (w.samples or 0) >= th.numpy_min_samples and (w.active_frac or 0) >= th.numpy_busy_frac then
        busy = busy + 1
        if w.alternation_pairs then measured = measured + 1 end
        local o, stays = common.overhead_bound(w, th)
        if stays and not long then long = { t = t, s = stays } end
        -- A thread whose GIL releases are system calls (an event loop's send/recv and select, small
        -- reads) alternates the same way, but its time without the GIL is the kernel's: not tiny
        -- native library calls (§5.4 / §7 say what helps there).
        local sys = t.tid and sys_share[t.tid]
        if o and sys and sys >= th.tiny_max_sys_pct then
          if not kernel then kernel = { t = t, sys = sys } end
          o = nil
        end
        if o and (not best or o.gil * o.native > best.o.gil * best.o.native) then best = { t = t, o = o } end
      end
    end
    if busy == 0 then return unknown(common.NO_WORKING_THREAD) end
    if measured == 0 then
      return unknown(T("the sampled window carries no GIL alternation (older evidence)",
                       "采样窗口里没有 GIL 交替统计（旧版证据）"))
    end
    -- A thread that releases the GIL around system calls (a read loop in small pieces, a socket
    -- server) alternates the same way: that is §7's io.small_reads or the event loop, not tiny
    -- native library calls, so a process making many read/write calls per second is left out.
    local io = ev.proc and ev.proc.io
    local calls = io and ((io.syscr_per_s or 0) + (io.syscw_per_s or 0)) or 0
    if best and calls >= th.tiny_max_syscalls_per_s then
      return clear(tr("thread {tid} alternates between Python and short calls, but the process makes {calls:%.0f} "
                        .. "read/write system calls/s (>= {max:%g}): the GIL is released around system calls "
                        .. "(small reads or writes, sockets: io.small_reads, §7), not tiny native library calls",
                      "线程 {tid} 在 Python 与短调用之间交替，但进程每秒 {calls:%.0f} 次 read/write 系统调用（>= {max:%g}）："
                        .. "GIL 是在系统调用前后释放的（小块读写、socket：io.small_reads，§7），不是小粒度的原生库调用",
                      { tid = best.t.tid or 0, calls = calls, max = th.tiny_max_syscalls_per_s }))
    end
    if not best and kernel then
      return clear(tr("thread {tid} alternates between Python and short calls, but {sys:%.0f}% of its CPU is in the "
                        .. "kernel (>= {max:%g}%): it releases the GIL around system calls (an event loop's socket "
                        .. "I/O, small reads or writes: §5.4, §7), not around tiny native library calls",
                      "线程 {tid} 在 Python 与短调用之间交替，但它 {sys:%.0f}% 的 CPU 花在内核（>= {max:%g}%）："
                        .. "GIL 是在系统调用前后释放的（事件循环的 socket 读写、小块读写：§5.4、§7），不是小粒度的原生库调用",
                      { tid = kernel.t.tid or 0, sys = kernel.sys, max = th.tiny_max_sys_pct }))
    end
    if not best and long then
      -- the look 0.05 ms later is a timing: beside foreign load the sampler itself waits for a CPU
      local fl = common.foreign_load(ev, th)
      if fl and fl.busy then
        return unknown(tr("the CPUs were busy with other processes ({cores:%.1f} of {ncpu} CPUs beyond the job, host "
                            .. "{idle:%.0f}% idle): the look 0.05 ms after each sample that tells tiny calls from long "
                            .. "ones was delayed by the load",
                          "CPU 被其他进程占满（作业之外占用 {cores:%.1f}/{ncpu} 个 CPU，主机空闲 {idle:%.0f}%）：区分短调用与"
                            .. "长调用所依赖的采样后 0.05 毫秒复查被负载拖延",
                          { cores = fl.cores, ncpu = fl.ncpu, idle = fl.idle_pct }))
      end
      return clear(tr("thread {tid} alternates between holding the GIL and running without it, but in stretches of "
                        .. "0.1 ms and more: looked at again 0.05 ms after a sample, it held the GIL {kept:%.0f}% of "
                        .. "the time after a sample with it and {back:%.0f}% after one without (native kernels or "
                        .. "copies, not tiny calls)",
                      "线程 {tid} 在持有与不持有 GIL 之间交替，但每段都在 0.1 毫秒以上：采样 0.05 毫秒后再看，采样时持有"
                        .. " GIL 的 {kept:%.0f}% 仍持有，不持有的 {back:%.0f}% 已持有（原生内核或拷贝，不是小调用）",
                      { tid = long.t.tid or 0, kept = 100 * long.s.kept, back = 100 * long.s.back }))
    end
    if not best then
      return clear(tr("no busy thread alternates between Python and short native calls ({busy} busy: GIL held >= "
                        .. "{g:%g}% and released >= {n:%g}% of active samples, switching >= {m:%g} x chance)",
                      "没有繁忙线程在 Python 和短原生调用之间交替（{busy} 个繁忙线程；需要持有 GIL >= {g:%g}%、"
                        .. "释放 >= {n:%g}%，切换 >= 随机的 {m:%g} 倍）",
                      { busy = busy, g = th.tiny_gil_min_pct, n = th.tiny_native_min_pct, m = th.tiny_mixing }))
    end
    local w, o = best.t.window, best.o
    -- the user's lines (own caller of the hottest leaves) and library entries seen
    local lines, seen = {}, {}
    for _, l in ipairs(w.leaves or {}) do
      local c = l.caller or l.leaf
      if c and #lines < 3 then
        local key = fmt("%s (%s:%s)", c.func or "?", (c.file or "?"):match("[^/]*$"), tostring(c.line or "?"))
        if not seen[key] then lines[#lines + 1], seen[key] = key, true end
      end
    end
    local entries = {}
    for _, e in ipairs(w.entries or {}) do
      if #entries < 4 then entries[#entries + 1] = e.func or "?" end
    end
    local at = #lines > 0 and table.concat(lines, "; ") or "?"
    local libs = #entries > 0 and tr("; library entries seen: {e}", "；看到的库入口：{e}", { e = table.concat(entries, ", ") })
                 or T("; no library Python frame (C calls: the time sits on the loop's own lines)",
                      "；没有库的 Python 帧（C 调用：时间落在循环自己的行上）")
    local length = o.measured
      and tr("; {k} samples looked at again 0.05 ms later: it held the GIL then {kept:%.0f}% of the time after a "
               .. "sample with it and {back:%.0f}% after one without: its calls and the Python between them last "
               .. "microseconds",
             "；{k} 个样本在 0.05 毫秒后再看：采样时持有 GIL 的，{kept:%.0f}% 仍持有；采样时不持有的，{back:%.0f}% "
               .. "已持有：每次调用及其间的 Python 只有几微秒",
             { k = o.rechecks, kept = 100 * o.kept, back = 100 * o.back })
      or T("; how long its native calls last was not measured (no rechecks in this evidence): info",
           "；没有测到原生调用的时长（证据里没有复查样本）：info")
    return hit {
      severity = not o.measured and "info" or nil,
      symptom = tr("thread {tid} is call-overhead-bound: tiny native calls in a Python loop at {at}",
                   "线程 {tid} 受调用开销限制：{at} 的 Python 循环里全是很小的原生调用", { tid = best.t.tid, at = at }),
      evidence = tr("tid {tid} ({name}): active {act:%.0f}% of {n} samples; of its active samples GIL held "
                      .. "{g:%.0f}% (Python) and released {nat:%.0f}% (native calls); consecutive samples changed GIL "
                      .. "state {alt:%.0f}% of {pairs} pairs, {mix:%.1f} x what independent draws give: each native "
                      .. "call is far shorter than the {ms:%.0f} ms sampling interval{length}; at {at}{libs}",
                    "tid {tid}（{name}）：{n} 个样本中活跃 {act:%.0f}%；活跃样本里持有 GIL {g:%.0f}%（Python）、释放 "
                      .. "{nat:%.0f}%（原生调用）；相邻样本在 {pairs} 对中有 {alt:%.0f}% 切换了 GIL 状态，是独立抽样的 "
                      .. "{mix:%.1f} 倍：每次原生调用都远短于 {ms:%.0f} 毫秒的采样间隔{length}；位置 {at}{libs}",
                    { tid = best.t.tid, name = best.t.name or "?", act = 100 * (w.active_frac or 0), n = w.samples,
                      g = 100 * o.gil, nat = 100 * o.native, alt = 100 * o.alt, pairs = o.pairs, mix = o.mix,
                      ms = ev.sampling and ev.sampling.rate_hz and 1000 / ev.sampling.rate_hz or 10, at = at,
                      libs = libs, length = length }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: perrow.tiny_ops clear, and items/s of the loop rises.",
                  "`sopctl run --pid {pid} --duration 3`：perrow.tiny_ops 为 clear，循环吞吐（条/秒）上升。",
                  { pid = ev.pid }),
    }
  end,
}
