-- plugins/common.lua — what every pack shares, in one place: T(en, zh) builds a bilingual text,
-- no_proc(ev) is the verdict of a rule that needs the process's own status when it was not read
-- (a process that is gone, or a status file that could not be read). Use:
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

return common
