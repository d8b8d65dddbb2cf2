-- plugins/numpy.lua — SOP §3: numpy traps seen in the sampled stacks of busy Python threads
-- (target and workers), and §3.6/§4.4: worker processes each running a host-sized BLAS/OpenMP
-- pool. Reads ev.python.threads[].window and ev.python.workers[].threads[].window (samples,
-- active_frac, leaves[] {count active leaf entry caller}, entries[] {func file count active
-- top_site_active sites}), ev.children[] (threads, cpu_pct, env), ev.proc (libs, env),
-- ev.effective_cpus, ev.cgroup.cpu.
-- What the stacks can show: only Python frames. numpy's Python wrappers appear (einsum,
-- einsum_path, tile, stack/vstack/hstack, fromnumeric's wrappers, and before numpy 1.25 every
-- public function as "<__array_function__ internals>"); C functions and methods (np.concatenate
-- from numpy 1.25 on, ndarray.flatten, fancy indexing, ufunc operators) show only as their
-- caller's line, so they are seen only through that line's source text (leaf.code), when the
-- source file is readable.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local function numpy_file(f)
  return f ~= nil and (f == "<__array_function__ internals>" or f:find("/numpy/", 1, true) ~= nil)
end

local function base(f) return f and (f:match("([^/]+)$") or f) or "?" end

local function at(s)
  if not s then return "?" end
  local code = s.code and fmt(" `%s`", s.code) or ""
  return fmt("%s:%s%s", base(s.file), tostring(s.line or "?"), code)
end

-- Every sampled Python thread of the target and its workers, with a label.
local function sampled_threads(ev)
  local out, py = {}, ev.python
  if not py then return out end
  for _, t in ipairs(py.threads or {}) do
    if t.window then
      out[#out + 1] = { w = t.window, label = fmt("tid %d (%s)", t.tid, t.name or "?") }
    end
  end
  for _, wk in ipairs(py.workers or {}) do
    for _, t in ipairs(wk.threads or {}) do
      if t.window then
        out[#out + 1] = { w = t.window, label = fmt("worker pid %d tid %d", wk.pid, t.tid) }
      end
    end
  end
  return out
end

-- Shared preconditions of the stack rules: a window was sampled, and which threads were busy.
local function busy_threads(ev, th)
  if common.no_window(ev) then return nil, unknown(common.NO_WINDOW) end
  if not ev.python then
    return nil, unknown(common.NO_STACKS)
  end
  local all = sampled_threads(ev)
  if #all == 0 then
    return nil, unknown(common.NOT_SAMPLED)
  end
  local busy = {}
  for _, t in ipairs(all) do
    local w = t.w
    if (w.samples or 0) >= th.numpy_min_samples and (w.active_frac or 0) >= th.numpy_busy_frac then
      busy[#busy + 1] = t
    end
  end
  if #busy == 0 then
    return nil, clear(tr("no Python thread was busy (>= {numpy_min_samples} samples, active >= "
                           .. "{numpy_busy_frac_pct:%.0f}% of them)",
                         "没有繁忙的 Python 线程（>= {numpy_min_samples} 个样本且其中 >= {numpy_busy_frac_pct:%.0f}% 在运行）",
                         { numpy_min_samples = th.numpy_min_samples, numpy_busy_frac_pct = 100 * th.numpy_busy_frac }))
  end
  return busy
end

local NUMPY_REFS = {
  "https://numpy.org/doc/stable/user/basics.broadcasting.html",
  "https://numpy.org/doc/stable/user/basics.copies.html",
}

-- ---------------------------------------------------------------------------------------------

rule {
  id = "numpy.einsum_unoptimized", section = "3.4", severity = "warn",
  title = T("np.einsum hot in its unoptimized C loop (optimize=False: no BLAS) in a busy thread",
            "繁忙线程里 np.einsum 热点在未优化的 C 循环（optimize=False，不走 BLAS）"),
  reads = { "python.workers[].threads[].window", "duration_s", "pid", "python.threads[].name",
            "python.threads[].tid", "python.threads[].window", "python.workers[].pid",
            "python.workers[].threads[].tid" },
  uses = { "numpy_min_samples", "numpy_busy_frac", "einsum_hot_pct" },
  cause = T("np.einsum defaults to optimize=False: it runs numpy's own nested C loop over "
            .. "all indices and never calls BLAS, so a contraction that is a matrix product "
            .. "runs 10-100x slower than A @ B (SOP §3.4).",
            "np.einsum 默认 optimize=False：用 numpy 自己的 C 嵌套循环遍历所有下标，从不调用 BLAS，"
            .. "本是矩阵乘的收缩比 A @ B 慢 10~100 倍（SOP §3.4）。"),
  refs = { "https://numpy.org/doc/stable/reference/generated/numpy.einsum.html",
           "https://numpy.org/doc/stable/reference/generated/numpy.einsum_path.html" },
  check = function(ev, th)
    local busy, verdict = busy_threads(ev, th)
    if not busy then return verdict end
    local best, unreadable, optimized = nil, 0, 0
    for _, t in ipairs(busy) do
      local n, site = 0, nil
      for _, l in ipairs(t.w.leaves or {}) do
        local lf = l.leaf or {}
        if lf.func == "einsum" and lf.file and lf.file:find("einsumfunc%.py$") then
          -- The optimize=False branch is numpy's `return c_einsum(*operands, **kwargs)`; the
          -- optimized path calls c_einsum per contraction (`new_view = c_einsum(...)`) after
          -- einsum_path, or tensordot (BLAS).
          if not lf.code then
            unreadable = unreadable + l.active
          elseif lf.code:find("^return c_einsum%(%*operands") then
            n = n + l.active
            site = site or l
          else
            optimized = optimized + l.active
          end
        end
      end
      local pct = 100 * n / t.w.samples
      if n > 0 and (not best or pct > best.pct) then best = { t = t, n = n, pct = pct, site = site } end
    end
    if not best or best.pct < th.einsum_hot_pct then
      if unreadable > 0 and not best then
        return unknown(tr("einsum is on top of the stack in {unreadable} samples, but numpy's einsumfunc.py "
                          .. "was not readable to tell the optimize=False branch",
                          "einsum 在栈顶出现 {unreadable} 个样本，但读不到 numpy 的 einsumfunc.py，无法判断是否 optimize=False",
                          { unreadable = unreadable }))
      end
      local pct = best and best.pct or 0
      return clear(tr("unoptimized einsum at most {pct:%.0f}% of a busy thread's samples (< {einsum_hot_pct:%g}%); "
                      .. "{optimized} samples in optimized einsum paths",
                      "未优化 einsum 最多占繁忙线程样本的 {pct:%.0f}%（< {einsum_hot_pct:%g}%）；优化路径的 einsum 样本 {optimized} 个",
                      { pct = pct, einsum_hot_pct = th.einsum_hot_pct, optimized = optimized }))
    end
    local w, c = best.t.w, best.site.caller
    return hit {
      symptom = tr("np.einsum without optimize takes {pct:%.0f}% of {label:%s}",
                   "未开 optimize 的 np.einsum 占 {label:%s} 的 {pct:%.0f}%", { pct = best.pct, label = best.t.label }),
      evidence = tr("{label:%s}: {n} of {samples} samples ({pct:%.0f}%, thread active {active_frac_pct:%.0f}%) on top "
                      .. "of the stack in numpy's einsum at {leaf:%s}, the optimize=False branch (no einsum_path, no "
                      .. "tensordot/BLAS below it); called from {caller:%s}.",
                    "{label:%s}：{n} / {samples} 个样本（{pct:%.0f}%，线程活跃 {active_frac_pct:%.0f}%）栈顶是 numpy 的 einsum "
                      .. "{leaf:%s}，即 optimize=False 分支（下面没有 einsum_path，也没有 tensordot/BLAS）；调用处 {caller:%s}。",
                    { label = best.t.label, n = best.n, samples = w.samples, pct = best.pct,
                      active_frac_pct = 100 * w.active_frac, leaf = at(best.site.leaf), caller = at(c) }),
      fix = tr("At {caller:%s} pass optimize=True (or 'greedy'), or write the contraction as A @ B / "
                 .. "np.tensordot / np.matmul; for a fixed expression in a loop compute the path once with "
                 .. "np.einsum_path and pass it as optimize=path.",
               "在 {caller:%s} 传 optimize=True（或 'greedy'），或改写为 A @ B / np.tensordot / np.matmul；循环里固定的表达式用 "
                 .. "np.einsum_path 先算一次路径，再以 optimize=path 传入。",
               { caller = at(c) }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: numpy.einsum_unoptimized clear, and "
                  .. "`sopctl record --pid {pid} --duration 3 -o s.txt` shows tensordot/dot under "
                  .. "einsum; time per step drops.",
                  "`sopctl run --pid {pid} --duration 3`：numpy.einsum_unoptimized 为 clear，"
                  .. "`sopctl record --pid {pid} --duration 3 -o s.txt` 里 einsum 下出现 tensordot/dot；"
                  .. "每步耗时下降。", { pid = ev.pid }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------

-- Materialised copies (§3.1, §3.3). The signature: a busy thread's time in calls whose result is
-- a new array holding the elements of their input again -- rearranged, repeated or broadcast --
-- with no arithmetic: pure allocation and data movement. numpy's Python wrappers (np.tile,
-- np.repeat, np.broadcast_to, concatenate/stack, ...) show as their own frames; C functions and
-- methods (x.repeat(), np.ascontiguousarray, torch's x.expand(...).contiguous(), x.clone(),
-- torch.cat, ...) show only as the program's line, read through its source text. The names below
-- only say which calls do that job, whatever the library (numpy, torch, cupy-like APIs).
local MATERIALISE = {
  ["repeat"] = true, tile = true, repeat_interleave = true, ascontiguousarray = true,
  asfortranarray = true, contiguous = true, flatten = true, copy = true, clone = true,
  broadcast_arrays = true, meshgrid = true, pad = true,
}
-- Calls that copy all their inputs into one new array: a copy per call, O(n^2) when an array
-- grows by being re-copied whole in a loop.
local JOIN = { concatenate = true, cat = true, stack = true, vstack = true, hstack = true,
               dstack = true, column_stack = true, row_stack = true, block = true, append = true }
-- Views: what a materialising call after them turns into a full copy of the broadcast.
local VIEW = { broadcast_to = true, expand = true, expand_as = true }

local function array_lib_file(f)
  return numpy_file(f) or (f ~= nil and f:find("/torch/", 1, true) ~= nil)
end

-- `x = np.concatenate([x, ...])` and kin: the array grows by being copied whole every call.
local function grows(code)
  if not code then return nil end
  local lhs, rhs = code:match("^([%w_%.]+)%s*=([^=].*)$")
  if not lhs then return nil end
  local call, args = rhs:match("^%s*([%w_%.]+)%((.*)$")
  if not call then return nil end
  local api, first = call:match("([%w_]+)$"), args:match("^[%s%[%(]*([%w_%.]+)")
  if JOIN[api] and lhs == first then return lhs end
  return nil
end

-- What a line of code materialises, from the calls written on it: "x.expand(...).contiguous()",
-- "repeat", "concatenate (growing x)", or nil.
local function line_copy(code)
  if not code then return nil end
  local view, mat
  for name in code:gmatch("([%a_][%w_]*)%s*%(") do
    if VIEW[name] then view = view or name end
    if MATERIALISE[name] and not mat then mat = name end
  end
  if view and mat then return fmt("%s(...).%s()", view, mat) end
  if mat then return mat end
  local g = grows(code)
  if g then return fmt("%s (growing %s)", code:match("([%w_]+)%(") or "join", g) end
  return nil
end

-- A sampled site's copy: the library entry the program called (a Python wrapper such as
-- np.tile), else -- when numpy or torch is loaded (`arrays`) -- a C call made on the program's
-- own line (the leaf is that line).
local function site_copy(l, arrays)
  local e, lf = l.entry, l.leaf or {}
  if e and array_lib_file(e.file) then
    if MATERIALISE[e.func] or JOIN[e.func] or VIEW[e.func] then
      local lib = numpy_file(e.file) and "np." or "torch."
      return lib .. e.func, l.caller
    end
    return nil
  end
  if arrays and not e and lf.file and not array_lib_file(lf.file) then
    local op = line_copy(lf.code)
    if op then return op, lf end
  end
  return nil
end

rule {
  id = "numpy.hidden_copies", section = "3.1", severity = "warn",
  title = T("materialised copies hot in a busy thread: calls that only allocate and refill an array "
            .. "with their input's elements (repeat, tile, broadcast_to/expand then copy/contiguous, "
            .. "ascontiguousarray, clone, concatenate/cat/stack growing an array, "
            .. "flatten), numpy or torch, seen as numpy's frames or through the calling line's text; "
            .. "fancy indexing with an index array is not told apart from plain indexing",
            "繁忙线程里物化复制是热点：只做分配并用输入元素重新填充数组的调用（repeat、tile、broadcast_to/expand "
            .. "后再 copy/contiguous、ascontiguousarray、clone、循环里增长数组的 concatenate/cat/stack、"
            .. "flatten），numpy 或 torch 均可，经 numpy 栈帧或调用行的源码识别；用索引数组的花式索引无法与普通索引区分"),
  reads = { "python.workers[].threads[].window", "duration_s", "pid", "python.threads[].name",
            "python.threads[].tid", "python.threads[].window", "python.workers[].pid",
            "python.workers[].threads[].tid", "proc.libs" },
  uses = { "numpy_min_samples", "numpy_busy_frac", "copies_hot_pct" },
  fix = T("Let broadcasting do what the copy spells out: A + v instead of A + np.tile(v, (N, 1)), "
          .. "x[:, None, :] * w instead of np.repeat(x[:, None, :], K, 1) * w, x.expand(...) (a view) "
          .. "without .contiguous() in torch; collect pieces in a list and concatenate once after "
          .. "the loop, or preallocate out = np.empty(shape) and fill slices; use .ravel() / "
          .. ".reshape(-1) / .view() instead of .flatten() / .clone() when a view will do. Check with "
          .. "`b.base is a` (numpy) or `b.data_ptr() == a.data_ptr()` (torch) that a view is a view.",
          "让广播完成复制想做的事：用 A + v 代替 A + np.tile(v, (N, 1))，用 x[:, None, :] * w 代替 "
          .. "np.repeat(x[:, None, :], K, 1) * w，torch 里用 x.expand(...)（视图）且不要再 .contiguous()；循环里把"
          .. "片段放进 list，循环后只 concatenate 一次，或预分配 out = np.empty(shape) 再按切片填充；只需视图时用 "
          .. ".ravel() / .reshape(-1) / .view() 代替 .flatten() / .clone()。用 `b.base is a`（numpy）或 "
          .. "`b.data_ptr() == a.data_ptr()`（torch）确认视图确实是视图。"),
  refs = NUMPY_REFS,
  check = function(ev, th)
    local busy, verdict = busy_threads(ev, th)
    if not busy then return verdict end
    -- A line's C calls are read as array copies only in a process that loaded numpy or torch
    -- (a dict's .copy() is no materialised array).
    local arrays = false
    for _, lib in ipairs(ev.proc and ev.proc.libs or {}) do
      if lib.kind == "numpy" or lib.kind == "torch" then arrays = true end
    end
    local best
    for _, t in ipairs(busy) do
      local per, n, sites, fresh_kb, grown = {}, 0, {}, 0, nil
      for _, l in ipairs(t.w.leaves or {}) do
        local op, s = site_copy(l, arrays)
        if op then
          n = n + l.active
          fresh_kb = fresh_kb + (l.fresh_kb or 0)
          local found = false
          for _, p in ipairs(per) do
            if p.op == op then p.n, found = p.n + l.active, true end
          end
          if not found then per[#per + 1] = { op = op, n = l.active } end
          local key = at(s)
          local seen = false
          for _, x in ipairs(sites) do seen = seen or x == key end
          if not seen and #sites < 3 then sites[#sites + 1] = key end
          grown = grown or grows(s and s.code)
        end
      end
      local pct = 100 * n / t.w.samples
      if n > 0 and (not best or pct > best.pct) then
        best = { t = t, per = per, n = n, pct = pct, sites = sites, fresh_kb = fresh_kb, grown = grown }
      end
    end
    if not best or best.pct < th.copies_hot_pct then
      local pct = best and best.pct or 0
      return clear(tr("materialising copies at most {pct:%.0f}% of a busy thread's samples (< {copies_hot_pct:%g}%)",
                      "物化复制最多占繁忙线程样本的 {pct:%.0f}%（< {copies_hot_pct:%g}%）",
                      { pct = pct, copies_hot_pct = th.copies_hot_pct }))
    end
    local t, w = best.t, best.t.w
    table.sort(best.per, function(a, b) return a.n > b.n end)
    local parts = {}
    for _, p in ipairs(best.per) do
      if 100 * p.n / w.samples >= 1 then parts[#parts + 1] = fmt("%s %.0f%%", p.op, 100 * p.n / w.samples) end
    end
    local site_s = #best.sites > 0 and table.concat(best.sites, "; ") or "?"
    local secs = ev.duration_s
    local fresh = ""
    if best.fresh_kb >= 1024 and secs and secs > 0 then
      fresh = tr(" At those sites the thread touched {mib:%.0f} MiB/s of new pages (minor faults).",
                 " 这些位置上线程每秒触碰 {mib:%.0f} MiB 新页（次缺页）。",
                 { mib = best.fresh_kb / 1024 / secs })
    end
    local regrow = best.grown and tr(" `{grown:%s}` is re-copied whole to grow by a little each call: the loop "
                                       .. "costs O(n^2) copying.",
                                     " `{grown:%s}` 每次只增长一点却整体重新复制：整个循环是 O(n^2) 的复制。",
                                     { grown = best.grown }) or ""
    return hit {
      symptom = tr("materialised copies take {pct:%.0f}% of {label:%s}",
                   "物化复制占 {label:%s} 的 {pct:%.0f}%", { pct = best.pct, label = t.label }),
      evidence = tr("{label:%s}: {n} of {samples} samples ({pct:%.0f}%, thread active {active_frac_pct:%.0f}%) "
                      .. "in calls that only allocate a new array and fill it with their input's elements: "
                      .. "{parts_en}; at {site_s:%s}.{fresh}",
                    "{label:%s}：{n} / {samples} 个样本（{pct:%.0f}%，线程活跃 {active_frac_pct:%.0f}%）在只分配新数组并用"
                      .. "输入元素填充的调用里：{parts_zh}；位置 {site_s:%s}。{fresh}",
                    { label = t.label, n = best.n, samples = w.samples, pct = best.pct,
                      active_frac_pct = 100 * w.active_frac, parts_en = table.concat(parts, ", "), site_s = site_s,
                      parts_zh = table.concat(parts, "，"), fresh = fresh }),
      cause = tr("Each call allocates an array as large as its output and writes every element into it, "
                   .. "with no arithmetic: repeat/tile and broadcast_to/expand followed by a copy "
                   .. "materialise what broadcasting reads in place for free, concatenate/cat/stack copy all "
                   .. "their inputs, flatten/clone/contiguous always copy. The step pays memory bandwidth "
                   .. "and allocation for data it already has (SOP §3.1, §3.3).{regrow}",
                 "每次调用都分配一个与输出一样大的数组并逐元素写入，不做任何计算：repeat/tile 以及 broadcast_to/expand "
                   .. "之后再复制，把广播本可原地读取的数据真正展开；concatenate/cat/stack 复制所有输入；flatten/clone/"
                   .. "contiguous 总是复制。每一步都在为已有的数据付内存带宽和分配的代价（SOP §3.1、§3.3）。{regrow}",
                 { regrow = regrow }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: numpy.hidden_copies clear (copies below "
                  .. "{copies_hot_pct:%g}% of the thread's samples); step time drops.",
                  "`sopctl run --pid {pid} --duration 3`：numpy.hidden_copies 为 clear（复制低于线程样本的 "
                  .. "{copies_hot_pct:%g}%）；每步耗时下降。", { pid = ev.pid, copies_hot_pct = th.copies_hot_pct }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------

rule {
  id = "numpy.tiny_calls", section = "3.5", severity = "warn",
  title = T("many tiny numpy calls: a busy thread's time inside numpy's Python wrappers is spread "
            .. "over their per-call overhead lines instead of one heavy kernel line (ufunc "
            .. "operators and C methods on small arrays leave no numpy frame and are not counted)",
            "大量小 numpy 调用：繁忙线程在 numpy Python 包装层里的时间分散在每次调用的开销代码上，而不是集中在"
            .. "一行重计算（小数组上的 ufunc 运算符和 C 方法没有 numpy 栈帧，不计入）"),
  reads = { "python.workers[].threads[].window", "duration_s", "pid", "python.threads[].name",
            "python.threads[].tid", "python.threads[].window", "python.workers[].pid",
            "python.workers[].threads[].tid" },
  uses = { "numpy_min_samples", "numpy_busy_frac", "tiny_numpy_min_pct", "tiny_overhead_pct", "tiny_gil_min_pct" },
  cause = T("Each numpy call costs about a microsecond of Python/C boundary work (argument "
            .. "parsing, __array_function__ dispatch, wrapper code) whatever the array size; on "
            .. "arrays of a few elements that overhead is the whole cost, and the samples spread "
            .. "over the wrappers' lines instead of one compute line (SOP §3.5).",
            "每次 numpy 调用无论数组多大都有约 1 微秒的 Python/C 边界开销（参数解析、__array_function__ 分派、"
            .. "包装代码）；数组只有几个元素时这部分就是全部开销，样本分散在包装函数的各行，而不是集中在一行计算"
            .. "（SOP §3.5）。"),
  refs = { "https://numpy.org/doc/stable/user/basics.broadcasting.html",
           "https://numba.readthedocs.io/en/stable/user/5minguide.html" },
  check = function(ev, th)
    local busy, verdict = busy_threads(ev, th)
    if not busy then return verdict end
    local best, any_entries, native = nil, false, nil
    for _, t in ipairs(busy) do
      local n, over, list = 0, 0, {}
      -- Native compute means long stays in C with the GIL released: a thread that holds the GIL in
      -- under tiny_gil_min_pct % of its active samples spends its time in kernels, however its
      -- wrapper lines spread (np.std on 2M elements: _var's lines each call one heavy kernel).
      if t.w.entries or t.w.leaves then any_entries = true end
      local g = t.w.gil_frac or 0
      local nat = (t.w.runnable_nogil_frac or 0) - (t.w.gil_wait_frac or 0)
      if g + nat > 0 and 100 * g / (g + nat) < th.tiny_gil_min_pct then
        native = native or { t = t, g = g / (g + nat) }
        goto next_thread
      end
      -- Evidence from before the per-site statistics has neither table; a window whose
      -- threads never entered a library has leaves only.
      if t.w.entries or t.w.leaves then any_entries = true end
      for _, e in ipairs(t.w.entries or {}) do
        if numpy_file(e.file) then
          -- A call on a large array spends its time on one line (the C kernel it calls); a call
          -- on a few elements spends it spread over the wrapper's dispatch and argument lines.
          n = n + e.active
          over = over + (e.active - (e.top_site_active or e.active))
          list[#list + 1] = e
        end
      end
      local s = t.w.samples
      if n > 0 and (not best or over / s > best.over / best.t.w.samples) then
        best = { t = t, n = n, over = over, list = list }
      end
      ::next_thread::
    end
    if not any_entries then
      return unknown(T("the sampled windows carry no per-call entry statistics (older evidence)",
                       "采样窗口里没有逐调用的入口统计（旧版证据）"))
    end
    if not best and native then
      return clear(tr("{label:%s} holds the GIL in {g:%.0f}% of its active samples (< {min:%g}%): its time is in "
                        .. "native kernels, not per-call overhead",
                      "{label:%s} 只在 {g:%.0f}% 的活跃样本里持有 GIL（< {min:%g}%）：时间花在原生计算核里，不是逐次调用开销",
                      { label = native.t.label, g = 100 * native.g, min = th.tiny_gil_min_pct }))
    end
    if not best then
      return clear(T("no numpy call was sampled in a busy thread", "繁忙线程里没有采样到 numpy 调用"))
    end
    local w = best.t.w
    local np_pct, over_pct = 100 * best.n / w.samples, 100 * best.over / w.samples
    local head = tr("{label:%s}: numpy calls {np_pct:%.0f}% of {samples} samples, of which {over_pct:%.0f}% away from "
                    .. "each call's main line",
                    "{label:%s}：numpy 调用占 {samples} 个样本的 {np_pct:%.0f}%，其中 {over_pct:%.0f}% 不在各调用的主计算行",
                    { label = best.t.label, np_pct = np_pct, samples = w.samples, over_pct = over_pct })
    if np_pct < th.tiny_numpy_min_pct or over_pct < th.tiny_overhead_pct then
      return clear(tr("{head} (fires at >= {tiny_numpy_min_pct:%g}% and >= {tiny_overhead_pct:%g}%)",
                      "{head}（阈值 >= {tiny_numpy_min_pct:%g}% 且 >= {tiny_overhead_pct:%g}%）",
                      { head = head, tiny_numpy_min_pct = th.tiny_numpy_min_pct,
                        tiny_overhead_pct = th.tiny_overhead_pct }))
    end
    table.sort(best.list, function(a, b) return a.active > b.active end)
    local parts = {}
    for i = 1, math.min(#best.list, 5) do
      local e = best.list[i]
      parts[#parts + 1] = fmt("np.%s %.0f%% over %d lines (%.0f%% of it on its main line)", e.func,
                              100 * e.active / w.samples, e.sites or 0,
                              e.active > 0 and 100 * (e.top_site_active or 0) / e.active or 0)
    end
    local sites = {}
    for _, l in ipairs(w.leaves or {}) do
      if l.entry and numpy_file(l.entry.file) and l.caller and #sites < 3 then
        local key = at(l.caller)
        local seen = false
        for _, x in ipairs(sites) do seen = seen or x == key end
        if not seen then sites[#sites + 1] = key end
      end
    end
    local site_s = #sites > 0 and table.concat(sites, "; ") or "?"
    return hit {
      symptom = tr("many tiny numpy calls: {over_pct:%.0f}% of {label:%s} is numpy's per-call overhead",
                   "大量小 numpy 调用：{label:%s} 的 {over_pct:%.0f}% 是 numpy 的逐次调用开销",
                   { over_pct = over_pct, label = best.t.label }),
      evidence = tr("{head} (thread active {active_frac_pct:%.0f}%): {parts_en}; called at {site_s:%s}.",
                    "{head}（线程活跃 {active_frac_pct:%.0f}%）：{parts_zh}；调用处 {site_s:%s}。",
                    { head = head, active_frac_pct = 100 * w.active_frac, parts_en = table.concat(parts, ", "),
                      site_s = site_s, parts_zh = table.concat(parts, "，") }),
      fix = tr("Batch the work at {site_s:%s}: stack the small arrays into one (N, k) array and make one "
               .. "call per operation over axis=...; for scalar math use the math module or "
               .. "plain floats; for loops that cannot be vectorized use numba @njit.",
               "在 {site_s:%s} 批量化：把小数组堆成一个 (N, k) 数组，每种运算沿 axis=... 只调用一次；标量运算用 math 模块"
               .. "或 Python float；无法向量化的循环用 numba @njit。", { site_s = site_s }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: numpy.tiny_calls clear (overhead below "
                  .. "{tiny_overhead_pct:%g}%), and items/s of the loop rises.",
                  "`sopctl run --pid {pid} --duration 3`：numpy.tiny_calls 为 clear（开销低于 {tiny_overhead_pct:%g}%），"
                  .. "循环吞吐（条/秒）上升。", { pid = ev.pid, tiny_overhead_pct = th.tiny_overhead_pct }),
    }
  end,
}

-- ---------------------------------------------------------------------------------------------

local POOL_VARS = { "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS" }

rule {
  id = "numpy.blas_threads_in_workers", section = "4.4", severity = "warn",
  title = T("busy worker processes each run a native BLAS/OpenMP thread pool sized to the host "
            .. "(OMP/MKL/OPENBLAS_NUM_THREADS unset or > 1): workers x pool threads exceed the "
            .. "effective CPUs while they are full",
            "繁忙的 worker 进程各自运行按整机核数开的 BLAS/OpenMP 原生线程池（OMP/MKL/OPENBLAS_NUM_THREADS "
            .. "未设或 > 1）：CPU 跑满时 worker 数 × 池线程数超过有效 CPU"),
  reads = { "children[].threads", "children[].cpu_pct", "children[].env", "python.workers[].threads",
            "python.workers[].cpu_frac", "proc.libs", "proc.cpu_pct", "effective_cpus",
            "cgroup.cpu.quota_cpus", "host.ncpu", "host.cpu.idle_pct", "children[].pid", "duration_s", "pid",
            "python.workers[].env", "python.workers[].pid" },
  uses = { "busy_thread_pct", "numpy_busy_frac", "cpu_saturated_pct" },
  fix = T("Give each worker one pool thread: export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "
          .. "OPENBLAS_NUM_THREADS=1 for the workers before they start, or call "
          .. "threadpoolctl.threadpool_limits(1) (and torch.set_num_threads(1) where torch is "
          .. "used) in the worker_init_fn / Pool initializer; keep the main process's pool sized "
          .. "to the CPUs left. Change one number and measure the step time.",
          "让每个 worker 只用 1 个池线程：worker 启动前导出 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "
          .. "OPENBLAS_NUM_THREADS=1，或在 worker_init_fn / Pool initializer 里调用 "
          .. "threadpoolctl.threadpool_limits(1)（用到 torch 时再加 torch.set_num_threads(1)）；主进程的线程池"
          .. "按剩余 CPU 设置。一次只改一个数并测 step 时间。"),
  refs = { "https://github.com/joblib/threadpoolctl",
           "https://pytorch.org/docs/stable/generated/torch.set_num_threads.html",
           "https://numpy.org/doc/stable/reference/global_state.html" },
  check = function(ev, th)
    local p = ev.proc
    if not p then return unknown(T("the process is gone", "进程已不存在")) end
    if common.no_window(ev) then return unknown(common.NO_CPU_RATES) end
    local eff = common.effective_cpus(ev)
    if not eff then return unknown(common.NO_CPUS) end
    local libs, seen = {}, {}
    for _, l in ipairs(p.libs or {}) do
      local name = l.name or l.kind
      if (l.kind == "blas" or l.kind == "openmp" or l.kind == "torch") and not seen[name] then
        seen[name] = true
        libs[#libs + 1] = name
      end
    end
    local pyw = {}
    for _, wk in ipairs(ev.python and ev.python.workers or {}) do pyw[wk.pid] = wk end
    local workers, pool_sum, used, any = {}, 0, p.cpu_pct or 0, false
    for _, c in ipairs(ev.children or {}) do
      if c.cpu_pct then used = used + c.cpu_pct end
      local wk = pyw[c.pid]
      if wk and c.threads and c.cpu_pct then
        any = true
        -- Native threads: the OS threads the interpreter does not know (pool threads).
        local native = c.threads - #(wk.threads or {})
        -- Busy: used CPU, or its main thread was runnable (state R: running or queued for a
        -- CPU) in most samples, which is what a CPU-starved worker looks like.
        local wants = c.cpu_pct >= th.busy_thread_pct or (wk.cpu_frac or 0) >= th.numpy_busy_frac
        if wants and native >= 1 then
          local env = c.env or wk.env or {}
          local set, loose = {}, true
          for _, name in ipairs(POOL_VARS) do
            local v = tonumber(env[name] or "")
            if v then
              set[#set + 1] = fmt("%s=%s", name, env[name])
              if v <= 1 then loose = false end
            end
          end
          if loose then
            workers[#workers + 1] = { pid = c.pid, cpu = c.cpu_pct, run = wk.cpu_frac, threads = c.threads,
                                      native = native,
                                      env = #set > 0 and table.concat(set, " ") or "pool variables unset" }
            pool_sum = pool_sum + native + 1
          end
        end
      end
    end
    if not any then
      return clear(T("no sampled CPython worker processes", "没有被采样的 CPython worker 进程"))
    end
    local cap = common.capacity_cpus(ev, eff)
    -- The pools compete once the CPUs are full, with the job's own load or anyone's.
    local host_idle = ev.host and ev.host.cpu and ev.host.cpu.idle_pct
    local full = used >= th.cpu_saturated_pct / 100 * cap * 100
                 or (host_idle ~= nil and host_idle <= 100 - th.cpu_saturated_pct)
    local idle = host_idle and tr("; host CPUs {idle:%.0f}% idle", "；整机 CPU 空闲 {idle:%.0f}%", { idle = host_idle })
                 or T("", "")
    local head = tr("{n} busy workers with a native thread pool and no per-worker limit, {pool_sum} threads in their "
                    .. "pools (native threads + each main thread), on {eff} effective CPUs; the job uses {used:%.0f}% "
                    .. "CPU of {cap:%.0f}%{idle}",
                    "{n} 个繁忙 worker 带原生线程池且未限制为 1，池内线程合计 {pool_sum} 个（原生线程 + 各自主线程），有效 CPU "
                    .. "{eff} 个；作业用 CPU {used:%.0f}%，容量 {cap:%.0f}%{idle}",
                    { n = #workers, pool_sum = pool_sum, eff = eff, used = used, cap = cap * 100, idle = idle })
    if #workers < 2 or pool_sum <= eff then return clear(head) end
    if #libs == 0 then
      return unknown(tr("{head}: no BLAS/OpenMP/torch library seen in the target's maps, so what the native threads "
                        .. "are cannot be told",
                        "{head}：目标进程映射里没有 BLAS/OpenMP/torch 库，无法判断这些原生线程是什么", { head = head }))
    end
    if not full then
      return clear(tr("{head}: the CPUs are not full, the pools do not compete yet",
                      "{head}：CPU 未跑满，线程池尚未互相争抢", { head = head }))
    end
    table.sort(workers, function(a, b) return a.cpu > b.cpu end)
    local wl = {}
    for i = 1, math.min(#workers, 6) do
      local x = workers[i]
      local run = x.run and fmt(" (main thread runnable in %.0f%% of samples)", 100 * x.run) or ""
      wl[#wl + 1] = fmt("pid %d %.0f%% CPU%s, %d threads (%d native), %s", x.pid, x.cpu, run, x.threads,
                        x.native, x.env)
    end
    return hit {
      symptom = tr("{n_workers} worker processes each run a BLAS/OpenMP pool: {pool_sum} pool threads on {eff} CPUs",
                   "{n_workers} 个 worker 进程各自运行 BLAS/OpenMP 线程池：{pool_sum} 个池线程挤 {eff} 个 CPU",
                   { n_workers = #workers, pool_sum = pool_sum, eff = eff }),
      evidence = tr("{head}; pools loaded: {libs_en}; workers: {wl_en}.",
                    "{head}；已加载线程池库：{libs_zh}；worker：{wl_zh}。",
                    { head = head, libs_en = table.concat(libs, ", "), wl_en = table.concat(wl, "; "),
                      libs_zh = table.concat(libs, "、"), wl_zh = table.concat(wl, "；") }),
      cause = tr("With OMP_NUM_THREADS/MKL_NUM_THREADS/OPENBLAS_NUM_THREADS unset, every process that loads an "
                   .. "OpenMP/BLAS runtime starts a pool of one thread per CPU it sees; {n_workers} workers x their "
                   .. "pools = {pool_sum} threads contend for {eff} CPUs, and the spinning, context switches and "
                   .. "cache thrash make it slower than one thread per worker (SOP §3.6, §4.4). cpu.oversubscribed "
                   .. "counts each worker as one busy thread from its CPU % and cannot see the pools inside.",
                 "OMP_NUM_THREADS/MKL_NUM_THREADS/OPENBLAS_NUM_THREADS 未设置时，每个加载 OpenMP/BLAS 运行时的进程都按看到的 CPU 数开线程池；"
                   .. "{n_workers} 个 worker × 线程池 = {pool_sum} 个线程争 {eff} 个 CPU，自旋、上下文切换和缓存抖动让它比每个 worker 1 线程还慢（SOP "
                   .. "§3.6、§4.4）。cpu.oversubscribed 按 CPU% 把每个 worker 当作一个繁忙线程，看不到其内部的线程池。",
                 { n_workers = #workers, pool_sum = pool_sum, eff = eff }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: numpy.blas_threads_in_workers clear, "
                  .. "each worker shows 0 native pool threads (children[].threads), throughput "
                  .. "per worker rises.",
                  "`sopctl run --pid {pid} --duration 3`：numpy.blas_threads_in_workers 为 clear，"
                  .. "每个 worker 原生池线程为 0（children[].threads），单 worker 吞吐上升。", { pid = ev.pid }),
    }
  end,
}
