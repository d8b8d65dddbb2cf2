-- plugins/gc.lua — SOP §2.5 (GC pauses and reference-cycle collection): the target's cyclic GC
-- observed over the sampled window (python.gc.window: share of ticks collecting, the longest
-- collecting stretch, collections per generation) and its state (enabled, thresholds, frozen).
-- Thresholds: gc_*.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local REFS = {
  "https://docs.python.org/3/library/gc.html",
  "https://devguide.python.org/internals/garbage-collector/",
  "https://instagram-engineering.com/copy-on-write-friendly-python-garbage-collection-ad6ed5233ddf",
}

-- What the GC's configuration says, for the notes (en, zh).
local function state_notes(gc, th)
  local en, zh = {}, {}
  if gc.enabled == false then
    en[#en + 1] = "automatic GC disabled (gc.disable()): no pauses, but reference cycles are "
                  .. "only freed by explicit gc.collect() calls"
    zh[#zh + 1] = "自动 GC 已关闭（gc.disable()）：没有停顿，但循环引用只在显式 gc.collect() 时释放"
  end
  if gc.frozen and gc.frozen > 0 then
    en[#en + 1] = fmt("%d objects frozen (gc.freeze()): never scanned", gc.frozen)
    zh[#zh + 1] = fmt("%d 个对象已冻结（gc.freeze()）：不再被扫描", gc.frozen)
  end
  local t = gc.thresholds
  if t and t[1] then
    if t[1] >= th.gc_threshold0_high then
      en[#en + 1] = fmt("thresholds (%d, %d, %d): gen0 raised (default 700), fewer but longer collections",
                        t[1], t[2], t[3])
      zh[#zh + 1] = fmt("阈值 (%d, %d, %d)：gen0 已调高（默认 700），收集更少但每次更长", t[1], t[2], t[3])
    elseif t[1] == 0 then
      en[#en + 1] = "threshold0 = 0: automatic collection off"
      zh[#zh + 1] = "threshold0 = 0：自动收集已关闭"
    end
  end
  return en, zh
end

rule {
  id = "gc.pauses", section = "2.5", severity = "warn",
  title = T("The cyclic garbage collector runs for a large share of the time or in long pauses",
            "循环垃圾回收器占用大量时间或出现长停顿"),
  reads = { "python.gc.window.samples", "python.gc.window.collecting_frac",
            "python.gc.window.longest_collecting_ms", "python.gc.window.collections",
            "python.gc.window.collections_per_s", "python.gc.enabled", "python.gc.thresholds",
            "python.gc.frozen", "python.gc.collections", "pid" },
  uses = { "gc_min_samples", "gc_time_pct", "gc_time_high_pct", "gc_pause_ms", "gc_threshold0_high" },
  cause = T("CPython's cyclic GC stops the interpreter while it traverses every tracked "
            .. "container of the generations it collects; with millions of long-lived "
            .. "objects each full (gen2) collection takes hundreds of ms, and frequent "
            .. "collections (explicit gc.collect() per step, or allocation bursts of "
            .. "containers) add up (SOP §2.5).",
            "CPython 的循环 GC 在遍历所收集各代中每个被跟踪的容器对象时会暂停解释器；存活对象达数百万时"
            .. "每次完整（gen2）收集要几百毫秒，频繁收集（每步显式 gc.collect()，或容器对象的分配高峰）"
            .. "会累积起来（SOP §2.5）。"),
  fix = T("Per SOP §2.5: remove per-step gc.collect() calls; after loading long-lived data call "
          .. "gc.freeze() (3.7+) so collections skip it; raise the gen0 threshold for "
          .. "allocation-heavy services (gc.set_threshold(100000, 20, 20): fewer collections, "
          .. "more memory between them); or gc.disable() around the hot loop with gc.collect() "
          .. "at a known point (side effect: cycles accumulate until then); keep big data in "
          .. "numpy arrays instead of millions of lists/dicts; break cycles with weakref. Find "
          .. "what is collected with gc.callbacks timing or gc.set_debug(gc.DEBUG_STATS).",
          "按 SOP §2.5：去掉每步的 gc.collect()；长期存活的数据加载完后调用 gc.freeze()（3.7+），"
          .. "收集时跳过它们；分配密集的服务调高 gen0 阈值（gc.set_threshold(100000, 20, 20)：收集更少，"
          .. "两次之间占用更多内存）；或在热循环外 gc.disable()、在确定的时点 gc.collect()（副作用：循环"
          .. "引用会一直累积到那时）；大数据用 numpy 数组而不是数百万个 list/dict；用 weakref 打断循环。"
          .. "用 gc.callbacks 计时或 gc.set_debug(gc.DEBUG_STATS) 查看收集了什么。"),
  refs = REFS,
  check = function(ev, th)
    local py = ev.python
    if not py then
      return unknown(T("not a CPython target (or its state is unreadable)", "不是 CPython 目标（或读不到其状态）"))
    end
    local gc = py.gc
    if not gc then return unknown(T("GC state not readable", "读不到 GC 状态")) end
    local w = gc.window
    local sen, szh = state_notes(gc, th)
    if not w or not w.samples or w.samples < th.gc_min_samples then
      return unknown(tr("GC sampled at {samples} ticks (needs {gc_min_samples:%g}: run with --duration 1 or more)",
                        "GC 只采样到 {samples} 次（需要 {gc_min_samples:%g}：用 --duration 1 以上）",
                        { samples = w and w.samples or 0, gc_min_samples = th.gc_min_samples }))
    end
    local frac = 100 * (w.collecting_frac or 0)
    local longest = w.longest_collecting_ms or 0
    local c, r = w.collections, w.collections_per_s
    local counts = T("", "")
    if c and c[1] then
      counts = tr("; collections in the window gen0 {g0}, gen1 {g1}, gen2 {g2} ({r0:%.1f}, {r1:%.1f}, {r2:%.2f} /s)",
                  "；窗口内收集次数 gen0 {g0}、gen1 {g1}、gen2 {g2}（{r0:%.1f}、{r1:%.1f}、{r2:%.2f} 次/秒）",
                  { g0 = c[1], g1 = c[2], g2 = c[3], r0 = r[1], r1 = r[2], r2 = r[3] })
    end
    local text = tr("GC collecting at {frac:%.0f}% of {samples} ticks; longest collecting stretch "
                      .. "{longest:%.0f} ms{counts}",
                    "{samples} 次采样中 {frac:%.0f}% 正在 GC；最长一次连续收集 {longest:%.0f} ms{counts}",
                    { frac = frac, samples = w.samples, longest = longest, counts = counts })
    local en, zh = text.en, text.zh
    local full = c and c[3] and c[3] > 0
    local long_pause = longest >= th.gc_pause_ms and (full or not c)
    if frac < th.gc_time_pct and not long_pause then
      if #sen > 0 then
        en = en .. "; " .. table.concat(sen, "; ")
        zh = zh .. "；" .. table.concat(szh, "；")
      end
      return clear(tr("{en:%s} (needs >= {gc_time_pct:%g}% of ticks or a {gc_pause_ms:%g} ms stretch)",
                      "{zh:%s}（阈值：>= {gc_time_pct:%g}% 的采样或一次 {gc_pause_ms:%g} ms）",
                      { en = en, gc_time_pct = th.gc_time_pct, gc_pause_ms = th.gc_pause_ms, zh = zh }))
    end
    if #sen > 0 then
      en = en .. "; " .. table.concat(sen, "; ")
      zh = zh .. "；" .. table.concat(szh, "；")
    end
    local pid = ev.pid
    return hit {
      severity = frac >= th.gc_time_high_pct and "high" or "warn",
      symptom = tr("The garbage collector runs {frac:%.0f}% of the time; GC stretches up to {longest:%.0f} ms",
                   "垃圾回收占用 {frac:%.0f}% 的时间；连续 GC 最长 {longest:%.0f} ms", { frac = frac, longest = longest }),
      evidence = T(en .. ".", zh .. "。"),
      verify = tr("`sopctl run --pid {pid} --duration 5`: python.gc.window.collecting_frac below "
                  .. "{gc_time_pct:%g}% and the longest stretch below {gc_pause_ms:%g} ms.",
                  "`sopctl run --pid {pid} --duration 5`：python.gc.window.collecting_frac 低于 {gc_time_pct:%g}%，最长"
                  .. "一次低于 {gc_pause_ms:%g} ms。",
                  { pid = pid, gc_time_pct = th.gc_time_pct, gc_pause_ms = th.gc_pause_ms }),
    }
  end,
}
