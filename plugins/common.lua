-- plugins/common.lua — what several packs share, in one place: T(en, zh) builds a bilingual
-- text; no_proc(ev) is the verdict of a rule that needs the process's own status when it was not
-- read (a process that is gone, or a status file that could not be read); where(frame) names a
-- Python frame "func (file:line)"; ends_with(s, suffix); rate(bytes_per_s) as "12.0 MiB/s";
-- pool_libs(proc) lists the loaded libraries that run thread pools (BLAS, OpenMP, torch);
-- window_at_least(ev, min_s) says whether the measured window is long enough. Use:
--   local common = require "plugins.common"
--   local T, no_proc = common.T, common.no_proc

local common = {}

function common.T(en, zh) return { en = en, zh = zh } end

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

return common
