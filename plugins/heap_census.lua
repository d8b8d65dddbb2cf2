-- plugins/heap_census.lua — what the census of the Python heap (ev.python.heap: `run --heap`,
-- or taken by itself when memory grows or the limit is near) adds to a memory finding: the
-- types that grew (or the largest ones), a class of the program among them, and whether
-- Python objects explain the growth or it is native memory (C extensions, tensors, numpy
-- buffers, the allocator) — each with its tool. Use:
--   local census = require "plugins.heap_census"
--   local c = census.view(ev, th)   -- nil without a census; c.en/c.zh, c.fix, c.native

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local census = {}

-- A class of the program ("__main__.Response", "app.cache.Entry"), not a builtin type.
local function is_class(name)
  return name:find(".", 1, true) ~= nil and not name:find("^_?collections%.")
    and not name:find("^_?abc%.") and not name:find("^_?weakref")
end

local function bytes_text(b)
  local sign = b < 0 and "-" or "+"
  return sign .. kb(math.abs(b) / 1024)
end

-- Up to n entries with growing bytes (growth lists) or the largest (types), plus the first class
-- of the program further down, as "name +count (+bytes)".
local function pick(list, n, growth)
  local out, names, class_seen = {}, {}, false
  for _, t in ipairs(list or {}) do
    if #out < n and (not growth or (t.bytes or 0) > 0) then
      out[#out + 1] = t
      class_seen = class_seen or is_class(t.name)
    elseif not class_seen and is_class(t.name) and (not growth or (t.bytes or 0) > 0) then
      out[#out + 1] = t
      class_seen = true
    end
  end
  for _, t in ipairs(out) do
    if growth then
      names[#names + 1] = fmt("%s %+d (%s)", t.name, t.count or 0, bytes_text(t.bytes or 0))
    else
      names[#names + 1] = fmt("%s x%d (%s)", t.name, t.count or 0, kb((t.bytes or 0) / 1024))
    end
  end
  local class
  for _, t in ipairs(out) do
    if is_class(t.name) then class = t.name break end
  end
  return table.concat(names, ", "), class
end

function census.view(ev, th)
  local h = ev.python and ev.python.heap
  if not h then return nil end
  local c = {}
  local grew = h.growth and h.anon_growth_kb and h.anon_growth_kb > 0
  local share, what
  if grew and h.growth_explained then
    share = h.growth_explained
    what = tr("{share:%.0f}% of the anonymous-memory growth (Python objects {growth} of {anon} over {secs:%.1f} s)",
              "匿名内存增长的 {share:%.0f}%（{secs:%.1f} 秒内 Python 对象 {growth}，匿名内存 {anon}）",
              { share = 100 * share, growth = bytes_text(h.bytes_growth or 0),
                anon = bytes_text(1024 * h.anon_growth_kb),
                secs = h.window_s or 0 })
  elseif h.explained then
    share = h.explained
    what = tr("{share:%.0f}% of the anonymous memory ({bytes} of Python objects in {anon})",
              "匿名内存的 {share:%.0f}%（Python 对象 {bytes}，匿名内存 {anon}）",
              { share = 100 * share, bytes = kb((h.bytes or 0) / 1024), anon = kb(h.anon_kb or 0) })
  end
  c.share = share
  c.native = share ~= nil and 100 * share < th.heap_python_pct
  local list, class
  if grew then
    list, class = pick(h.growth, 3, true)
  end
  local types
  if not list or list == "" then
    list, class = pick(h.types, 3, false)
    types = tr("largest types: {list}", "最大的类型：{list}", { list = list })
  else
    types = tr("types that grew: {list}", "增长的类型：{list}", { list = list })
  end
  c.class = class
  local np = T("", "")
  if h.numpy and (h.numpy.nbytes or 0) > 0 then
    local g = h.numpy.nbytes_growth
    np = tr("; numpy arrays own {nbytes} of data{grown}", "；numpy 数组持有 {nbytes} 数据{grown}",
            { nbytes = kb(h.numpy.nbytes / 1024),
              grown = g and tr(" ({g} in the window)", "（窗口内 {g}）", { g = bytes_text(g) }) or T("", "") })
  end
  local partial = h.complete == false
                  and tr(" (census partial: {why})", "（普查不完整：{why}）", { why = h.partial or "?" }) or T("", "")
  local text
  if share then
    text = tr("Python heap census: objects explain {what}; {types}{np}{partial}",
              "Python 堆普查：对象解释了{what}；{types}{np}{partial}",
              { what = what, types = types, np = np, partial = partial })
  else
    text = tr("Python heap census: {types}{np}{partial}", "Python 堆普查：{types}{np}{partial}",
              { types = types, np = np, partial = partial })
  end
  c.en, c.zh = text.en, text.zh
  local pid = ev.pid or 0
  local np_growth = h.numpy and h.numpy.nbytes_growth
  if c.native and np_growth and grew and np_growth >= 0.5 * 1024 * h.anon_growth_kb then
    c.fix = tr("Python objects do not explain this memory, numpy buffers do ({np_growth:%s} of {anon_growth:%s}): "
                 .. "arrays are kept alive — a list or cache of arrays, results stored per step; keep copies of what "
                 .. "is needed only (arr.copy() of a slice frees the base), or bound the cache. memray's native mode "
                 .. "shows where they are allocated: `memray attach --native --aggregate -o native.bin {pid}`. ",
               "Python 对象解释不了这部分内存，numpy 缓冲区可以（{np_growth:%s} / {anon_growth:%s}）：数组一直被引用着——存数组的 list 或缓存、每步保存的结果；只"
                 .. "保留需要的拷贝（对切片 arr.copy() 可释放原数组），或给缓存设上限。memray 原生模式可看分配位置：`memray attach --native --aggregate -o "
                 .. "native.bin {pid}`。",
               { np_growth = bytes_text(np_growth), anon_growth = bytes_text(1024 * h.anon_growth_kb), pid = pid })
  elseif c.native then
    c.fix = tr("Python objects do not explain this memory: it is native (C extensions, tensors, "
               .. "numpy buffers, the allocator). Find the native allocation site with memray's "
               .. "native mode: `memray attach --native --aggregate -o native.bin {pid}`, then "
               .. "`memray flamegraph native.bin`. If the RSS stays high after big frees, the "
               .. "allocator keeps it: MALLOC_ARENA_MAX=2 for many threads, and "
               .. "ctypes.CDLL('libc.so.6').malloc_trim(0) after releasing large buffers. ",
               "Python 对象解释不了这部分内存：它是原生内存（C 扩展、张量、numpy 缓冲区、分配器）。"
               .. "用 memray 原生模式找原生分配点：`memray attach --native --aggregate -o native.bin {pid}`，"
               .. "再 `memray flamegraph native.bin`。若大块释放后 RSS 仍高，是分配器留着："
               .. "多线程设 MALLOC_ARENA_MAX=2，释放大缓冲后调用 "
               .. "ctypes.CDLL('libc.so.6').malloc_trim(0)。", { pid = pid })
  elseif share then
    local who = class or "the growing types"
    c.fix = tr("Python objects explain it: bound what holds {who:%s} (a dict or list used as a cache: "
               .. "functools.lru_cache(maxsize=N) or cachetools.LRUCache; weakref.WeakValueDictionary "
               .. "for caches of live objects); `sopctl heap --pid {pid} --duration 30` shows the "
               .. "growth per type. ",
               "Python 对象解释了增长：给持有 {who:%s} 的容器设上限（当缓存用的 dict/list 改为 "
               .. "functools.lru_cache(maxsize=N) 或 cachetools.LRUCache；活对象缓存用 "
               .. "weakref.WeakValueDictionary）；`sopctl heap --pid {pid} --duration 30` 可看各类型的增长。",
               { who = who, pid = pid })
  end
  -- §2.5: with the collector off, every reference cycle the program makes stays.
  if h.gc_enabled == 0 and not c.native and c.fix then
    c.fix = T("The garbage collector is disabled (gc.disable()): objects in reference cycles are "
              .. "never freed. Re-enable it (gc.enable(), after start-up gc.freeze() keeps the "
              .. "long-lived objects out of its way) or break the cycles (weakref for "
              .. "back-references). " .. c.fix.en,
              "垃圾回收器被关闭了（gc.disable()）：循环引用中的对象永远不会释放。重新打开"
              .. "（gc.enable()；启动完成后 gc.freeze() 让长期存活的对象不参与回收），或打破循环"
              .. "（反向引用用 weakref）。" .. c.fix.zh)
    c.en = c.en .. "; the garbage collector is disabled"
    c.zh = c.zh .. "；垃圾回收器已关闭"
  end
  return c
end

return census
