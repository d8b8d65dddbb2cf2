-- plugins/perrow.lua — SOP §3.5 beyond numpy's tiny calls: a thread spending most of its samples in
-- the Python-level per-row / per-element machinery of pandas (DataFrame.apply(axis=1), iterrows,
-- itertuples, Series.__getitem__, scalar .loc/.iloc/.at) or torch (Tensor.__getitem__/item per
-- element). Reads ev.python.threads[].window (dist via common.share, leaves for the user's
-- function). Thresholds: per_row_pct, sampled_min_samples.

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
