-- plugins/logfmt.lua — SOP §8.3 pitfall 1: a logging call whose message is formatted eagerly
-- (an f-string, `%` or `.format` in the argument) on a hot line, at a level the process likely
-- does not emit (debug): the string is built on every call and then dropped. Reads
-- ev.python.threads[].window (samples, active_frac, leaves[] with the source text of the leaf
-- and caller lines). Thresholds: eager_log_pct, sampled_min_samples.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local LEVELS = { debug = "DEBUG", info = "INFO", warning = "WARNING", warn = "WARNING", error = "ERROR",
                 critical = "CRITICAL", exception = "ERROR", log = "?" }

-- A logging call with an eagerly formatted message in one source line: the method, the level,
-- and how the message is built; nil when the line is not such a call.
local function eager_call(code)
  if not code or #code > 400 then return nil end
  -- patterns with one unbounded repetition each: the sandbox prices them by subject length
  local init = 1
  while true do
    local i, j, method = code:find("%.(%a+) ?%(", init)
    if not i then return nil end
    init = j + 1
    local recv = code:sub(1, i - 1):match("[%w_%.]*$") or ""
    if LEVELS[method] and recv:lower():find("log", 1, true) then
      local args = code:sub(j + 1):gsub("^%s+", "")
      if method == "log" then
        local comma = args:find(",", 1, true)
        args = comma and args:sub(comma + 1):gsub("^%s+", "") or ""
      end
      local q = args:sub(1, 1)
      local how
      if args:match("^[fF][rR]?[\"']") or args:match("^[rR][fF][\"']") then
        how = "an f-string"
      elseif q == '"' or q == "'" then
        local close = args:find(q, 2, true)
        local after = close and args:sub(close + 1):gsub("^%s+", "") or ""
        if after:sub(1, 1) == "%" then
          how = "the % operator"
        elseif after:sub(1, 8) == ".format(" then
          how = "str.format"
        end
      elseif args:sub(1, 4) == "str(" or args:sub(1, 5) == "repr(" then
        how = "str()/repr()"
      end
      if how then return method, LEVELS[method], how end
    end
  end
end

rule {
  id = "logging.eager_format", section = "8.3", severity = "warn",
  title = T("a hot line builds a log message eagerly (f-string, %, .format) for a level that is probably not emitted",
            "热点行在急切地构造日志消息（f-string、%、.format），而该级别很可能不输出"),
  doc = [[Sampled window: for each working thread (running or holding the GIL in at least half of at least
    sampled_min_samples samples), the program's own source lines it was sampled at (the leaf, or the caller when the
    leaf is library code, e.g. inside the logger or a __repr__) whose text is a logger call (debug/info/...) with an
    f-string, a `%`-formatted or `.format`ted message. Hit when one such line holds at least eager_log_pct of the
    thread's samples: warn for debug, info for other levels (more likely emitted). The logger's effective level is not
    read from the process; the finding says so. Unknown without a sampled window.]],
  reads = { "python.threads[].window.samples", "python.threads[].window.active_frac",
            "python.threads[].window.leaves", "duration_s", "pid", "python.threads[].name",
            "python.threads[].tid" },
  uses = { "eager_log_pct", "sampled_min_samples" },
  refs = { "https://docs.python.org/3/howto/logging.html#optimization",
           "https://docs.python.org/3/library/logging.html#logging.Logger.isEnabledFor" },
  check = function(ev, th)
    local py = ev.python
    if not py or not py.threads then
      return unknown(common.NO_STACKS)
    end
    if common.no_window(ev) then return unknown(common.NO_WINDOW) end
    local best, sampled = nil, 0
    for _, t in ipairs(py.threads) do
      local w = t.window
      if w and w.samples and w.samples >= th.sampled_min_samples and (w.active_frac or 0) >= 0.5 then
        sampled = sampled + 1
        local sites = {}
        for _, l in ipairs(w.leaves or {}) do
          local s = (l.caller and l.caller.code and l.caller) or l.leaf
          if s and s.file and s.line and s.code then
            local key = s.file .. ":" .. s.line
            local e = sites[key]
            if not e then
              e = { site = s, count = 0 }
              sites[key] = e
            end
            e.count = e.count + (l.count or 0)
          end
        end
        for _, e in pairs(sites) do
          local method, level, how = eager_call(e.site.code)
          local share = e.count / w.samples
          if method and (not best or share > best.share) then
            best = { t = t, site = e.site, share = share, method = method, level = level, how = how }
          end
        end
      end
    end
    if sampled == 0 then
      return unknown(common.NO_WORKING_THREAD)
    end
    if not best or 100 * best.share < th.eager_log_pct then
      return clear(tr("no hot line builds a log message eagerly (most: {share_pct:%.0f}% of a thread's samples)",
                      "没有热点行在急切构造日志消息（最多 {share_pct:%.0f}% 样本）",
                      { share_pct = best and 100 * best.share or 0 }))
    end
    local s = best.site
    local at = fmt("%s (%s:%s)", s.func or "?", (s.file or "?"):match("[^/]*$"), tostring(s.line))
    local code = s.code:gsub("^%s+", "")
    return hit {
      severity = best.method == "debug" and "warn" or "info",
      symptom = tr("thread {tid} builds a {level:%s} log message with {how:%s} on a hot line ({share_pct:%.0f}% of "
                     .. "its samples)",
                   "线程 {tid} 在热点行上用 {how:%s} 构造 {level:%s} 级日志消息（占其样本 {share_pct:%.0f}%）",
                   { tid = best.t.tid, level = best.level, how = best.how, share_pct = 100 * best.share }),
      evidence = tr("{at:%s}: `{code:%s}` — {share_pct:%.0f}% of {samples} samples of tid {tid} ({name}) at this "
                      .. "line, the message built by {how:%s} before logging sees it; the logger's effective level "
                      .. "was not read from the process, so whether {level:%s} records are emitted is not known here",
                    "{at:%s}：`{code:%s}` —— tid {tid}（{name}）{samples} 个样本中 {share_pct:%.0f}% 在这一行，消息在进入 logging 之前就用 "
                      .. "{how:%s} 构造好了；未从进程读取 logger 的有效级别，无法确定 {level:%s} 记录是否输出",
                    { at = at, code = code, share_pct = 100 * best.share, samples = best.t.window.samples,
                      tid = best.t.tid, name = best.t.name or "?", how = best.how, level = best.level }),
      cause = tr("An f-string, `%` or `.format` argument is evaluated on every call, before the logger checks its "
                 .. "level: with {level:%s} not enabled the string (and every repr() in it) is built and thrown away "
                 .. "(SOP §8.3 pitfall 1).",
                 "f-string、`%` 或 `.format` 参数在每次调用时、logger 检查级别之前就被求值：{level:%s} 未开启时，字符串"
                 .. "（以及其中每个 repr()）被构造后直接丢弃（SOP §8.3 陷阱 1）。", { level = best.level }),
      fix = tr("Pass the arguments lazily: logger.{method:%s}(\"row %s: %r\", n, row) instead of an f-string; for "
                 .. "costly arguments guard the call with `if logger.isEnabledFor(logging.{level}):`.",
               "改为惰性传参：logger.{method:%s}(\"row %s: %r\", n, row)，不要用 f-string；参数本身很贵时用 `if "
                 .. "logger.isEnabledFor(logging.{level}):` 包住。",
               { method = best.method, level = best.level ~= "?" and best.level or "DEBUG" }),
      verify = tr("`sopctl run --pid {pid} --duration 3`: the line no longer appears among the thread's hot leaves; "
                  .. "items/s rises.",
                  "`sopctl run --pid {pid} --duration 3`：该行不再出现在线程的热点叶子里；每秒处理条数上升。", { pid = ev.pid }),
    }
  end,
}
