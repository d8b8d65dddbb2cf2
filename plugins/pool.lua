-- plugins/pool.lua — SOP §8.4 (start-up and transfer cost above the work) with §2.4's shared
-- memory fix: a process pool (multiprocessing.Pool, ProcessPoolExecutor) whose workers spend their
-- CPU receiving and unpickling arguments (and pickling results) rather than in the task. Read from
-- the sampled CPython workers: the share of their samples in multiprocessing's pipe, queue and
-- pickling code, the share in the program's own code, their CPU and the bytes they read.
-- Thresholds: ship_*.

local common = require "plugins.common"
local T = common.T
local tr = common.tr

local TRANSPORT = { "(connection.py)", "(queues.py)", "(reduction.py)", "(synchronize.py)", "(pickle.py)",
                    "(copyreg.py)" }

local function transport(f)
  for _, t in ipairs(TRANSPORT) do
    if f:find(t, 1, true) then return true end
  end
  return false
end

-- The pool's worker loop: multiprocessing.Pool's worker(), concurrent.futures' _process_worker().
local function worker_loop(f)
  return f == "worker (pool.py)" or f == "_process_worker (process.py)"
end
local LOOP_FILES = { ["(pool.py)"] = true, ["(process.py)"] = true, ["(threading.py)"] = true }

-- Over a worker process's sampled stacks: samples moving data (a transport frame inside the worker
-- loop, the task not running) and samples in the task (a frame inside the loop that is neither
-- transport nor the loop's own files), and all samples. Forked workers keep the parent's frames
-- below the loop, so only what is inside it counts.
local function worker_split(w)
  local ship, task, n = 0, 0, 0
  for _, t in ipairs(w.threads or {}) do
    local d = t.window and t.window.dist
    if d then
      n = n + (d.samples or 0)
      local frames = d.frames or {}
      for _, st in ipairs(d.stacks or {}) do
        local inside, moving, working = false, false, false
        for _, id in ipairs(st.ids or {}) do
          local f = frames[id] or ""
          if inside then
            if transport(f) then
              moving = true
            elseif not LOOP_FILES[f:match("%([^)]*%)$") or ""] then
              working = true
            end
          elseif worker_loop(f) then
            inside = true
          end
        end
        if working then
          task = task + (st.count or 0)
        elseif moving then
          ship = ship + (st.count or 0)
        end
      end
    end
  end
  return ship, task, n
end

rule {
  id = "pool.shipping", section = "8.4", severity = "warn",
  title = T("A process pool spends its time shipping data to its workers, not working",
            "进程池的时间花在给 worker 传数据上，而不是干活"),
  doc = [[A hit when the target's sampled CPython workers used at least ship_worker_cpu_pct of a core each on
    average, spent at least ship_transport_frac of their samples in multiprocessing's pipe, queue and pickling
    code (connection, queues, reduction, synchronize, pickle) inside the pool's worker loop and at most
    ship_work_max_frac in the task (any other frame inside that loop). Names the bytes/s the workers read and the
    parent thread that sends.]],
  reads = { "missing[]", "python.workers[].pid", "python.workers[].threads[].window.dist",
            "python.workers[].threads[].window.top_stacks", "python.workers[].threads[].window.samples",
            "children[].pid", "children[].cpu_pct",
            "children[].rchar_per_s", "python.threads[].window.dist", "python.threads[].window.top_stacks",
            "python.threads[].window.samples", "python.threads[].window.active_frac", "python.threads[].name", "pid",
            "python.threads[].window",
            "duration_s" },
  uses = { "ship_worker_cpu_pct", "ship_transport_frac", "ship_work_max_frac" },
  cause = T("§8.4/§2.4: every task's arguments are pickled in the parent, written through a pipe, read and "
            .. "unpickled in a worker (and the result back the same way). For large arrays and trivial work "
            .. "that copying is nearly all the time: more workers only add copies.",
            "§8.4/§2.4：每个任务的参数都要在父进程 pickle、经管道写出，再在 worker 里读取、反序列化（结果再原路"
            .. "返回）。大数组配上很轻的计算时，几乎全部时间都花在拷贝上：加 worker 只会多拷几份。"),
  fix = T("Do not send the data, send where it is: put large arrays in multiprocessing.shared_memory (or an "
          .. "np.memmap / a file path) and pass names and index ranges; load read-only data once per worker in "
          .. "the pool's initializer; give each task more work (larger chunks, chunksize=) so the transfer is "
          .. "amortised; for numpy work that releases the GIL, threads share memory without copies.",
          "不要传数据，传它在哪：大数组放进 multiprocessing.shared_memory（或 np.memmap / 文件路径），只传名字和"
          .. "下标范围；只读数据在池的 initializer 里每个 worker 加载一次；让每个任务多干活（更大的分块、chunksize=），"
          .. "摊薄传输；释放 GIL 的 numpy 计算用线程即可共享内存、无需拷贝。"),
  refs = { "https://docs.python.org/3/library/multiprocessing.shared_memory.html",
           "https://docs.python.org/3/library/multiprocessing.html#programming-guidelines" },
  check = function(ev, th)
    local py = ev.python
    if not py then return unknown(common.NO_STACKS) end
    if common.no_window(ev) then return unknown(common.NO_WINDOW) end
    local workers = py.workers or {}
    if #workers == 0 then return clear(T("no sampled CPython worker processes", "没有采样到 CPython worker 进程")) end
    local kids = {}
    for _, c in ipairs(ev.children or {}) do kids[c.pid] = c end
    local cpu, nw, ship_n, own_n, total, rchar = 0, 0, 0, 0, 0, 0
    for _, w in ipairs(workers) do
      local c = kids[w.pid]
      if c and c.cpu_pct then
        nw = nw + 1
        cpu = cpu + c.cpu_pct
        rchar = rchar + (c.rchar_per_s or 0)
        local sh, tk, n = worker_split(w)
        ship_n, own_n, total = ship_n + sh, own_n + tk, total + n
      end
    end
    if nw == 0 or total == 0 then
      return unknown(T("the workers' CPU or samples were not measured", "未测到 worker 的 CPU 或样本"))
    end
    local mean_cpu, ship, own = cpu / nw, ship_n / total, own_n / total
    local base = tr("{n} sampled workers at {cpu:%.0f}% of a core each; {ship:%.0f}% of their samples in "
                      .. "multiprocessing's pipe/queue/pickling code, {own:%.0f}% in the task; they read "
                      .. "{mb:%.0f} MB/s",
                    "{n} 个采样 worker 平均各用 {cpu:%.0f}% 个核；其样本 {ship:%.0f}% 在 multiprocessing 的管道/队列/pickle "
                      .. "代码里，{own:%.0f}% 在任务里；读取 {mb:%.0f} MB/s",
                    { n = nw, cpu = mean_cpu, ship = 100 * ship, own = 100 * own, mb = rchar / 1e6 })
    if mean_cpu < th.ship_worker_cpu_pct or ship < th.ship_transport_frac or own > th.ship_work_max_frac then
      return clear(tr("{base} (needs >= {c:%g}% CPU, >= {s:%.0f}% shipping, <= {o:%.0f}% in the task)",
                      "{base}（阈值：CPU >= {c:%g}%、传输 >= {s:%.0f}%、任务 <= {o:%.0f}%）",
                      { base = base, c = th.ship_worker_cpu_pct, s = 100 * th.ship_transport_frac,
                        o = 100 * th.ship_work_max_frac }))
    end
    -- the parent's sender: the thread most in send/dumps
    local sender = T("", "")
    local best, bt = 0, nil
    for _, t in ipairs(py.threads or {}) do
      local f = common.share(t, function(fr)
        return fr:find("(connection.py)", 1, true) and (fr:find("send", 1, true) ~= nil) or
               fr:find("(reduction.py)", 1, true) ~= nil
      end)
      if f and f > best then best, bt = f, t end
    end
    if bt and best > 0 then
      sender = tr("; the parent's thread {name} sends (pickle + pipe) in {f:%.0f}% of its samples",
                  "；父进程线程 {name} 有 {f:%.0f}% 的样本在发送（pickle + 管道）", { name = bt.name or "?", f = 100 * best })
    end
    return hit {
      symptom = tr("The process pool ships data, not work: {ship:%.0f}% of the workers' samples move arguments, "
                     .. "{own:%.0f}% run the task", "进程池在传数据而不是干活：worker 样本 {ship:%.0f}% 在搬运参数，"
                     .. "{own:%.0f}% 在执行任务", { ship = 100 * ship, own = 100 * own }),
      evidence = tr("{base}{sender}", "{base}{sender}", { base = base, sender = sender }),
      verify = tr("`sopctl run --pid {pid} --duration 5`: the workers' samples in the task, not in connection/pickle; "
                    .. "tasks per second up", "`sopctl run --pid {pid} --duration 5`：worker 样本落在任务代码而不是 "
                    .. "connection/pickle；每秒任务数上升", { pid = ev.pid }),
    }
  end,
}
