"""test_e2e_rules.py — end-to-end tests of the default rules on real misbehaving processes (label
e2e, root): an idle process (nothing warn/high, exit 0), a worker OOM-killed in a memory cgroup
(parent and dead pid), 180 MiB held under a 200 MiB limit (mem.near_limit), forked workers copying the parent's objects (mem.fork_cow), busy workers
over a 1-CPU quota (cpu.throttled, cpu.oversubscribed), 512-byte reads from the page cache
(io.small_reads, info), and the bundled demo. Uses cg.py for cgroups, work_*.py and
examples/demo/ as workloads; needs SOPCTL (or SOP_BUILD) and SOP_SRC."""
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cg  # noqa: E402

SRC = os.environ.get("SOP_SRC") or os.path.dirname(os.path.dirname(HERE))
SOPCTL = os.environ.get("SOPCTL") or os.path.join(os.environ.get("SOP_BUILD", os.path.join(SRC, "build")), "sopctl")
PY = sys.executable
POOL_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

passed, failed = 0, 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   %s" % name)
    else:
        failed += 1
        print("FAIL %s%s" % (name, (": " + detail) if detail else ""))
    return cond


class Lines:
    """Lines of a child's stdout, read by a thread, with a deadline per wait."""

    def __init__(self, proc):
        self.q = queue.Queue()
        t = threading.Thread(target=self._pump, args=(proc.stdout,), daemon=True)
        t.start()

    def _pump(self, f):
        for line in f:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def wait_for(self, prefix, timeout_s):
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                line = self.q.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                return None
            if line.startswith(prefix):
                return line


def sopctl_run(pid, duration_s=1, extra=()):
    argv = [SOPCTL, "run", "--pid", str(pid), "--duration", str(duration_s), "--format", "json"]
    p = subprocess.run(argv + list(extra), capture_output=True, text=True, timeout=120)
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        rep = None
    return p.returncode, rep, p.stderr


def text(v):
    """A report text field: a string, or {en, zh} if the renderer kept both."""
    if isinstance(v, dict):
        return v.get("en") or ""
    return v or ""


def finding(rep, rule_id):
    for f in (rep or {}).get("findings", []):
        if f.get("id") == rule_id:
            return f
    return None


def summary(rep):
    if not rep:
        return "no JSON report"
    return "findings=%s cleared=%s unknown=%s errors=%s" % (
        [(f["id"], f.get("severity")) for f in rep.get("findings", [])],
        [c["id"] for c in rep.get("cleared", [])], [u["id"] for u in rep.get("unknown", [])],
        rep.get("rule_errors"))


def no_rule_errors(name, rep):
    check(name + ": no rule errors", rep is not None and not rep.get("rule_errors"),
          repr(rep and rep.get("rule_errors")))


def env_without_pools():
    env = dict(os.environ)
    for v in POOL_VARS:
        env.pop(v, None)
    return env


def test_idle():
    p = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.5)
        rc, rep, err = sopctl_run(p.pid, 1)
        check("idle: JSON report", rep is not None, err.strip()[-400:])
        if rep is None:
            return
        serious = [(f["id"], f["severity"]) for f in rep.get("findings", [])
                   if f.get("severity") in ("warn", "high")]
        check("idle: no warn/high finding", not serious, summary(rep))
        check("idle: exit 0", rc == 0, "exit %d; %s" % (rc, err.strip()[-300:]))
        cleared = {c["id"] for c in rep.get("cleared", [])}
        want = {"oom.killed", "mem.fork_cow", "cpu.oversubscribed", "io.d_state", "io.small_reads"}
        check("idle: the checks ran and cleared", want <= cleared, summary(rep))
        check("idle: report names the target", (rep.get("target") or {}).get("pid") == p.pid,
              repr(rep.get("target")))
        no_rule_errors("idle", rep)
    finally:
        p.kill()
        p.wait()


def test_oom():
    with cg.TestCgroup("oom", memory_max_bytes=100 << 20) as g:
        p = g.popen([PY, os.path.join(HERE, "work_oom.py"), "--seconds", "120"],
                    stdout=subprocess.PIPE, text=True)
        lines = Lines(p)
        wline = lines.wait_for("worker pid=", 30)
        kline = lines.wait_for("killed pid=", 60)
        if not check("oom: worker OOM-killed in a 100 MiB cgroup", kline is not None and wline is not None,
                     "worker line %r, kill line %r" % (wline, kline)):
            return
        victim = int(re.search(r"pid=(\d+)", kline).group(1))
        time.sleep(0.3)

        rc, rep, err = sopctl_run(p.pid, 1)
        f = finding(rep, "oom.killed")
        check("oom parent: oom.killed found", f is not None, summary(rep) + " " + err.strip()[-300:])
        if f:
            ev = text(f.get("evidence"))
            check("oom parent: severity high", f.get("severity") == "high", f.get("severity"))
            check("oom parent: evidence names the victim pid %d" % victim, "pid %d" % victim in ev, ev)
            check("oom parent: evidence has anon-rss figure",
                  re.search(r"anon-rss [0-9.]+ (MiB|GiB|kB)", ev) is not None, ev)
            check("oom parent: evidence names the cgroup", g.path in ev, ev)
            check("oom parent: refs", len(f.get("refs") or []) >= 1, repr(f.get("refs")))
        check("oom parent: exit 1", rc == 1, "exit %d" % rc)
        no_rule_errors("oom parent", rep)

        rc, rep, err = sopctl_run(victim, 1)
        f = finding(rep, "oom.killed")
        check("oom dead pid: post-mortem finding", f is not None, summary(rep) + " " + err.strip()[-300:])
        if f:
            ev = text(f.get("evidence"))
            check("oom dead pid: severity high", f.get("severity") == "high", f.get("severity"))
            check("oom dead pid: evidence has pid, anon-rss, total-vm, memcg",
                  "pid %d" % victim in ev and re.search(r"anon-rss [0-9.]+ (MiB|GiB)", ev)
                  and re.search(r"total-vm [0-9.]+ (MiB|GiB)", ev) and g.path in ev, ev)
        check("oom dead pid: exit 1", rc == 1, "exit %d" % rc)


def test_fork_cow():
    with cg.TestCgroup("cow") as g:
        p = g.popen([PY, os.path.join(SRC, "examples", "demo", "forked_workers.py"), "--mb", "200",
                     "--workers", "3", "--threads", "0", "--seconds", "120"],
                    stdout=subprocess.PIPE, text=True)
        line = Lines(p).wait_for("ready", 120)
        if not check("cow: workload ready", line is not None):
            return
        workers = [int(x) for x in re.search(r"workers=([\d,]+)", line).group(1).split(",")]
        rc, rep, err = sopctl_run(p.pid, 1)
        f = finding(rep, "mem.fork_cow")
        check("cow: mem.fork_cow found", f is not None, summary(rep) + " " + err.strip()[-300:])
        if f:
            ev = text(f.get("evidence"))
            check("cow: severity warn or high", f.get("severity") in ("warn", "high"), f.get("severity"))
            check("cow: evidence names every worker", all("pid %d" % w in ev for w in workers), ev)
            m = re.search(r"together ([0-9.]+) (MiB|GiB) = ([0-9.]+) x the parent", ev)
            check("cow: evidence has the total and the ratio", m is not None, ev)
            if m:
                check("cow: copies >= 2 x the parent", float(m.group(3)) >= 2.0, ev)
        check("cow: exit 1", rc == 1, "exit %d" % rc)
        no_rule_errors("cow", rep)


def test_cpu_quota():
    with cg.TestCgroup("cpu", cpu_quota_cpus=1) as g:
        p = g.popen([PY, os.path.join(HERE, "work_busy.py"), "--workers", "4", "--seconds", "120"],
                    stdout=subprocess.PIPE, text=True, env=env_without_pools())
        line = Lines(p).wait_for("ready", 30)
        if not check("cpu: workload ready", line is not None):
            return
        time.sleep(1)
        rc, rep, err = sopctl_run(p.pid, 2)
        f = finding(rep, "cpu.throttled")
        check("cpu: cpu.throttled found", f is not None, summary(rep) + " " + err.strip()[-300:])
        if f:
            ev = text(f.get("evidence"))
            check("cpu: throttled evidence has quota and %", "quota 1.00 CPUs" in ev
                  and re.search(r"throttled in [0-9]+% of CFS periods", ev), ev)
            check("cpu: throttled severity high", f.get("severity") == "high", f.get("severity") + " " + ev)
        f = finding(rep, "cpu.oversubscribed")
        check("cpu: cpu.oversubscribed found", f is not None, summary(rep))
        if f:
            ev = text(f.get("evidence"))
            fix = text(f.get("fix"))
            # whole-tree runnable load (ev.sched) against the quota; older builds: busy threads
            m = re.search(r"runnable load ([0-9.]+) .* on ([0-9.]+) CPUs", ev)
            check("cpu: oversubscribed evidence has runnable load > the CPUs",
                  m is not None and float(m.group(1)) > float(m.group(2)), ev)
            check("cpu: oversubscribed evidence names the worker processes", "worker" in ev, ev)
            # pure-Python workers: no BLAS/OpenMP pool runs, so no pool-variable advice
            check("cpu: oversubscribed fix gives no BLAS advice to pure-Python workers",
                  "OMP_NUM_THREADS" not in fix and "worker processes" in fix, fix)
        check("cpu: exit 1", rc == 1, "exit %d" % rc)
        no_rule_errors("cpu", rep)


HOLD = r"""
import sys, time
blob = [b"\x01" * (1 << 20) for _ in range(int(sys.argv[1]))]
print("ready", flush=True)
time.sleep(120)
"""


def test_near_limit():
    with cg.TestCgroup("mem", memory_max_bytes=200 << 20) as g:
        p = g.popen([PY, "-u", "-c", HOLD, "180"], stdout=subprocess.PIPE, text=True)
        if not check("near limit: 180 MiB held under a 200 MiB limit", Lines(p).wait_for("ready", 30) is not None):
            return
        rc, rep, err = sopctl_run(p.pid, 1)
        f = finding(rep, "mem.near_limit")
        check("near limit: mem.near_limit found", f is not None, summary(rep) + " " + err.strip()[-300:])
        if f:
            ev = text(f.get("evidence"))
            m = re.search(r"= ([0-9]+)% of the memory limit 200\.0 MiB set on cgroup ([^;\s]+)", ev)
            check("near limit: evidence has the % of the 200 MiB limit and the cgroup",
                  m is not None and int(m.group(1)) >= 90 and m.group(2) == g.path, ev)
            check("near limit: severity high", f.get("severity") == "high", f.get("severity"))
        check("near limit: exit 1", rc == 1, "exit %d" % rc)
        rc, rep, err = sopctl_run(p.pid, 0, ["--set", "rss_limit_pct=99"])
        check("near limit: --set rss_limit_pct=99 clears it", rep is not None and finding(rep, "mem.near_limit") is None
              and "mem.near_limit" in {c["id"] for c in rep.get("cleared", [])}, summary(rep))


SMALL_READS = r"""
import os, sys, tempfile
fd, path = tempfile.mkstemp()
os.write(fd, b"x" * (1 << 20))
os.close(fd)
f = open(path, "rb", buffering=0)
os.unlink(path)
print("ready", flush=True)
while True:
    f.seek(0)
    while f.read(512):
        pass
"""


def test_small_reads():
    p = subprocess.Popen([PY, "-u", "-c", SMALL_READS], stdout=subprocess.PIPE, text=True)
    try:
        if not check("small reads: workload ready", Lines(p).wait_for("ready", 30) is not None):
            return
        rc, rep, err = sopctl_run(p.pid, 1)
        f = finding(rep, "io.small_reads")
        check("small reads: io.small_reads found", f is not None, summary(rep) + " " + err.strip()[-300:])
        if f:
            ev = text(f.get("evidence"))
            m = re.search(r"([0-9]+) read syscalls/s, mean ([0-9]+) bytes per call", ev)
            check("small reads: evidence has calls/s >= 1000 and a mean <= 1024 bytes",
                  m is not None and int(m.group(1)) >= 1000 and int(m.group(2)) <= 1024, ev)
            check("small reads: from the page cache, so info", f.get("severity") == "info",
                  "%s: %s" % (f.get("severity"), ev))
        check("small reads: info only, exit 0", rc == 0, "exit %d; %s" % (rc, summary(rep)))
        no_rule_errors("small reads", rep)
    finally:
        p.kill()
        p.wait()


def test_demo():
    script = os.path.join(SRC, "examples", "demo", "run-demo.sh")
    with cg.TestCgroup("demo") as g:  # whatever happens, the demo's processes end with the cgroup
        env = dict(os.environ, SOPCTL=SOPCTL, PYTHON=PY)
        p = g.popen(["bash", script, "--format", "json"], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True, env=env)
        try:
            out, err = p.communicate(timeout=150)
        except subprocess.TimeoutExpired:
            check("demo: finishes", False, "timeout")
            return
        try:
            rep = json.loads(out)
        except ValueError:
            rep = None
        check("demo: JSON report", rep is not None, err.strip()[-400:])
        check("demo: mem.fork_cow found", finding(rep, "mem.fork_cow") is not None, summary(rep))
        check("demo: exit 0 (sopctl ran and reported findings)", p.returncode == 0,
              "exit %d: %s" % (p.returncode, err.strip()[-300:]))


def main():
    if not os.access(SOPCTL, os.X_OK):
        print("FAIL no sopctl at %s" % SOPCTL)
        print("0 passed, 1 failed")
        return 1
    for t in (test_idle, test_oom, test_near_limit, test_fork_cow, test_cpu_quota, test_small_reads,
              test_demo):
        try:
            t()
        except Exception as e:  # one broken case must not hide the others
            check(t.__name__, False, "%s: %s" % (type(e).__name__, e))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
