-- examples/site/site.lua — a site file: local policy over the shipped rule pack, without editing
-- it. `sopctl run --site FILE` loads one; without --site, sopctl loads $SOP_SITE (empty: none) or
-- else /etc/sop/site.lua when it exists (`--no-site` skips it). A site file that does not load
-- stops the run (exit 2): it is never skipped silently. Validate one with
-- `sopctl check default --site FILE`.

-- 1. Change thresholds (names and defaults: docs/rules.md). Our jobs run with little headroom on
--    purpose, so warn about the memory limit later and about throttling earlier.
thresholds {
  rss_limit_pct = 95,
  throttled_pct = 10,
  site_max_fds_pct = 80,        -- declared here: a threshold only this site's rule uses
}

-- 2. Turn off rules that do not apply here: every node of this cluster runs with one NUMA node
--    and our serving fleet logs synchronously to local disk by policy.
-- disable "io.small_reads"
-- disable { "a.rule", "another.rule" }

-- 3. Add rules: the same DSL as the pack (docs/rule-runner.md), run in the same sandbox.
local function T(en, zh) return { en = en, zh = zh } end

rule {
  id = "site.fd_limit", section = "8", severity = "warn",
  title = T("the process is close to its open-file limit", "进程接近打开文件数上限"),
  reads = { "proc.fds", "proc.fd_limit", "pid" },
  uses = { "site_max_fds_pct" },
  check = function(ev, th)
    local p = ev.proc or {}
    if not p.fds or not p.fd_limit or p.fd_limit <= 0 then
      return unknown(T("open files or their limit not readable", "无法读取打开文件数或其上限"))
    end
    local pct = 100 * p.fds / p.fd_limit
    if pct < th.site_max_fds_pct then
      return clear(fmt("%d of %d file descriptors open (%.0f%%)", p.fds, p.fd_limit, pct))
    end
    return hit {
      symptom = T("the process is about to run out of file descriptors", "进程即将用尽文件描述符"),
      evidence = fmt("%d of %d file descriptors open (%.0f%% >= %g%%)", p.fds, p.fd_limit, pct,
                     th.site_max_fds_pct),
      cause = T("Sockets or files are opened faster than they are closed (a leak), or the limit is too low for "
                .. "the number of workers.", "打开套接字或文件的速度快于关闭（泄漏），或上限相对 worker 数太低。"),
      fix = T("Close files with `with` blocks; raise `LimitNOFILE` in the unit file if the count is expected.",
              "用 `with` 块关闭文件；若数量符合预期，在 unit 文件中调高 `LimitNOFILE`。"),
      verify = fmt("`ls /proc/%d/fd | wc -l` stays flat over minutes", ev.pid),
      refs = { "https://man7.org/linux/man-pages/man2/getrlimit.2.html" },
    }
  end,
}
