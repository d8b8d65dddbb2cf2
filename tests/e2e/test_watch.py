"""test_watch.py — `sopctl watch` on real processes: a report (JSON + Markdown) and the
--on-finding hook on a new warn/high finding, again when its severity changes or it comes back,
never for one that stays; rotation to --keep; a failing hook logged, not fatal; /metrics,
/report, /healthz on --listen; SIGTERM and SIGINT stop it (exit 0, target untouched); --count;
the target's exit ends it with a post-mortem (exit 3), an OOM kill with the evaluated
post-mortem (oom.killed, exit 1, the hook run); a reused pid is detected (exit 3), in a
private pid namespace where the test reuses the pid itself (ns_last_pid).

The finding comes from a one-rule pack on the target's thread count, which the test sets, so
what fires and when does not depend on machine speed; every wait polls with a generous
deadline. Durations are asserted in one place only, loosely: windows start every --every
seconds (a fixed rate; a late window starts the next at once), and SIGTERM ends the watch
without waiting for the next window; --duration longer than --every is a usage error."""
import glob
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import cg
from sopt import PY, SOPCTL, Checks

t = Checks()
WAIT = 90  # seconds: only ever a ceiling for polling, never a threshold

RULES = r'''
rule { id = "test.threads", section = "8", severity = "warn", check = function(ev, th)
  local n = ev.proc and ev.proc.threads
  if not n then return unknown("no thread count") end
  if n >= 6 then
    return hit { evidence = "threads " .. n, severity = "high",
                 refs = { "https://docs.python.org/3/library/threading.html" } }
  end
  if n >= 3 then
    return hit { evidence = "threads " .. n,
                 refs = { "https://docs.python.org/3/library/threading.html" } }
  end
  return clear("threads " .. n)
end }
'''

# A target whose thread count the test sets: "threads N" on stdin -> N threads in all.
TARGET = r'''
import sys, threading
stops = []
def set_threads(n):
    while len(stops) + 1 < n:
        ev = threading.Event()
        threading.Thread(target=ev.wait, daemon=True).start()
        stops.append(ev)
    while len(stops) + 1 > n:
        stops.pop().set()
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd and cmd[0] == "threads":
        set_threads(int(cmd[1]))
        # wait until the extra threads have ended, so the count the watch reads is exact
        while threading.active_count() != int(cmd[1]):
            threading.Event().wait(0.01)
        print("ok", flush=True)
    elif cmd and cmd[0] == "exit":
        break
'''

HOOK = r'''
import os, sys
with open(os.environ["HOOK_LOG"], "a") as f:
    f.write("%s %s %s\n" % (sys.argv[1], os.environ.get("SOP_REPORT"), os.environ.get("SOP_PID")))
sys.exit(3)
'''


class Target:
    def __init__(self):
        self.p = subprocess.Popen([PY, "-u", "-c", TARGET], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.pid = self.p.pid
        assert self.p.stdout.readline().startswith("ready")

    def threads(self, n):
        self.p.stdin.write("threads %d\n" % n)
        self.p.stdin.flush()
        assert self.p.stdout.readline().startswith("ok")

    def exit(self):
        self.p.stdin.write("exit\n")
        self.p.stdin.flush()
        self.p.wait(timeout=WAIT)

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


class Watch:
    """sopctl watch with its log in a file; `windows()` counts the windows it logged."""

    def __init__(self, d, *args):
        self.log_path = os.path.join(d, "watch-%d.log" % time.monotonic_ns())
        self.log = open(self.log_path, "w")
        self.p = subprocess.Popen([SOPCTL, "watch"] + [str(a) for a in args],
                                  stdout=subprocess.DEVNULL, stderr=self.log)

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def windows(self):
        return self.text().count(" window #")

    def wait_for(self, cond, what):
        deadline = time.time() + WAIT
        while time.time() < deadline:
            if cond():
                return True
            if self.p.poll() is not None and not cond():
                break
            time.sleep(0.05)
        return t.check(cond(), what, self.text()[-3000:])

    def wait_windows(self, n, what):
        start = self.windows()
        return self.wait_for(lambda: self.windows() >= start + n, what)

    def finish(self, sig=None):
        if sig and self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None


def reports(d, pattern="sop-*.json"):
    return sorted(p for p in glob.glob(os.path.join(d, pattern)) if not p.endswith(".tmp"))


# what Prometheus asks for
OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"


def http_get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, "", e.read().decode()


def unix_get(path, url):
    """A GET over the Unix socket at `path`: (status, body)."""
    class Conn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(30)
            self.sock.connect(path)
    c = Conn("localhost", timeout=30)
    try:
        c.request("GET", url)
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


with tempfile.TemporaryDirectory() as d:
    rules = os.path.join(d, "rules.lua")
    open(rules, "w").write(RULES)
    hook = os.path.join(d, "hook.py")
    open(hook, "w").write(HOOK)
    hook_log = os.path.join(d, "hooks.txt")
    os.environ["HOOK_LOG"] = hook_log
    out = os.path.join(d, "reports")
    sock = os.path.join(d, "sop.sock")

    # ---- trigger, severity change, return, rotation, hook, /metrics, SIGTERM -------------
    tg = Target()
    w = Watch(d, rules, "--no-site", "--pid", tg.pid, "--every", "0.2", "--duration", "0.05",
              "--rate", "0", "--out", out, "--keep", "2", "--listen", "127.0.0.1:0",
              "--listen", "unix:" + sock, "--on-finding", "%s %s" % (PY, hook))
    try:
        w.wait_windows(2, "watch: windows run")
        t.check(reports(out) == [], "no report while nothing is wrong", reports(out))
        port = None
        for line in w.text().splitlines():
            if "listening on http://" in line:
                port = line.split("http://")[1].split("/")[0]
        t.check(port is not None, "--listen 127.0.0.1:0 logs the port it bound", w.text())
        code, ctype, body = http_get("http://%s/metrics" % port, accept=OPENMETRICS)
        t.check(code == 200 and "openmetrics-text" in ctype and body.endswith("# EOF\n"),
                "/metrics answers OpenMetrics ending in # EOF", (code, ctype, body[-300:]))
        code, ctype, text = http_get("http://%s/metrics" % port)
        t.check(code == 200 and "version=0.0.4" in ctype and "# EOF" not in text
                and "# TYPE sop_watch_runs_total counter" in text,
                "without Accept: OpenMetrics, the Prometheus text format", (code, ctype, text[-300:]))
        t.check('sop_rule_hit{rule="test.threads",section="8",severity="warn"} 0' in body,
                "/metrics: the cleared rule is 0", body[:1500])

        tg.threads(3)
        w.wait_for(lambda: len(reports(out)) == 1, "a new warn finding writes a report")
        first = reports(out)[:1]
        if first:
            rep = json.load(open(first[0]))
            t.check([(f["id"], f["severity"]) for f in rep["findings"]] == [("test.threads", "warn")],
                    "the report holds the finding", rep.get("findings"))
            t.check(os.path.exists(first[0][:-5] + ".md"), "and its Markdown next to it")
            w.wait_for(lambda: os.path.exists(hook_log) and first[0] in open(hook_log).read(),
                       "--on-finding ran with the report's path")
            line = open(hook_log).read().split()
            t.check(line[:3] == [first[0], first[0], str(tg.pid)],
                    "the hook gets the path as its argument, SOP_REPORT and SOP_PID", line)
            w.wait_for(lambda: "exited with status 3 (the watch goes on)" in w.text(),
                       "a failing hook is logged")
        code, _, body = http_get("http://%s/metrics" % port)
        t.check('sop_rule_hit{rule="test.threads",section="8",severity="warn"} 1' in body,
                "/metrics: the hit rule is 1", body[:1500])
        code, body = unix_get(sock, "/report")
        t.check(code == 200 and json.loads(body)["target"]["pid"] == tg.pid,
                "/report on the Unix socket serves the last JSON report", (code, body[:300]))
        code, _, body = http_get("http://%s/report" % port)
        t.check(code == 403, "/report is not served over TCP", (code, body))
        code, _, body = http_get("http://%s/healthz" % port)
        t.check(code == 200 and body.startswith("ok"), "/healthz answers ok", (code, body))
        code, _, _ = http_get("http://%s/nothing" % port)
        t.check(code == 404, "an unknown path is 404", code)

        w.wait_windows(3, "windows go on after a failing hook")
        t.check(len(reports(out)) == 1, "a finding that stays writes no new report", reports(out))

        tg.threads(6)
        w.wait_for(lambda: len(reports(out)) == 2, "a finding whose severity changes: a report")
        tg.threads(1)
        w.wait_windows(2, "windows after the finding clears")
        tg.threads(3)
        w.wait_for(lambda: "report " in w.text() and w.text().count("new or changed:") >= 3,
                   "a finding that comes back is new again")
        w.wait_for(lambda: len(reports(out)) == 2 and first and not os.path.exists(first[0]),
                   "--keep 2: the oldest report is removed")
        t.check(first and not os.path.exists(first[0][:-5] + ".md"),
                "rotation removes its Markdown too")
        t.check(len(glob.glob(os.path.join(out, "*.md"))) == 2, "two Markdown reports kept")

        code = w.finish(signal.SIGTERM)
        t.check(code == 0, "SIGTERM: exit 0", (code, w.text()[-1500:]))
        t.check("SIGTERM: stopping" in w.text(), "SIGTERM is logged")
        state = open("/proc/%d/stat" % tg.pid).read().rsplit(")", 1)[1].split()[0]
        t.check(tg.p.poll() is None and state in "SR", "the target runs on, not stopped", state)
    finally:
        w.finish(signal.SIGKILL)
        tg.stop()

    # ---- SIGINT, --count ---------------------------------------------------------------
    tg = Target()
    try:
        w = Watch(d, rules, "--no-site", "--pid", tg.pid, "--every", "0.2", "--duration", "0.05",
                  "--rate", "0")
        w.wait_windows(1, "SIGINT run: a window")
        code = w.finish(signal.SIGINT)
        t.check(code == 0 and "SIGINT: stopping" in w.text(), "SIGINT: exit 0", (code, w.text()))
        w = Watch(d, rules, "--no-site", "--pid", tg.pid, "--every", "0.1", "--duration", "0",
                  "--rate", "0", "--count", "3")
        code = w.finish()
        t.check(code == 0 and w.windows() == 3, "--count 3: three windows, exit 0",
                (code, w.text()))
    finally:
        tg.stop()

    # ---- a fixed rate: windows start every --every seconds (issue 40) ---------------------
    # Each window's log line is timed as it arrives (it is written as the window ends). With
    # --every 1 the old schedule waited a full interval after each window (0.5 s + 1 s: one
    # window per ~1.5 s; with --duration 1, per ~2.1 s); now windows start 1 s apart and one
    # that ends late starts the next at once. The bounds are loose for a busy 2-CPU host but
    # below the old spacing, so the old schedule fails them.
    def window_times(w, secs):
        times, seen, end = [], w.windows(), time.monotonic() + secs
        while time.monotonic() < end and w.p.poll() is None:
            n = w.windows()
            times += [time.monotonic()] * (n - seen)
            seen = n
            time.sleep(0.02)
        return times

    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

    sleeper = subprocess.Popen([PY, "-c", "import time; time.sleep(120)"])
    try:
        w = Watch(d, rules, "--no-site", "--pid", sleeper.pid, "--every", "1", "--duration", "0.5")
        w.wait_windows(1, "fixed rate: a first window")
        times = window_times(w, 5)
        gaps = [b - a for a, b in zip(times, times[1:])]
        t.check(4 <= len(times) <= 6, "--every 1 --duration 0.5: 4-6 windows in 5 s (%d)" % len(times),
                (gaps, w.text()[-1500:]))
        t.check(gaps and 0.8 <= median(gaps) <= 1.25,
                "--every 1 --duration 0.5: windows start ~1 s apart (median %.2f s; the old "
                "schedule: 1.5 s)" % (median(gaps) if gaps else -1), gaps)
        t0 = time.monotonic()
        code = w.finish(signal.SIGTERM)
        took = time.monotonic() - t0
        t.check(code == 0 and took < 3, "SIGTERM ends the watch promptly (%.2f s, exit %s)"
                % (took, code), w.text()[-800:])

        # A signal ends a window in progress (issue 40: within 200 ms; the collection looks at
        # its stop every 50 ms): a 20 s window is cut, not waited for. The bound leaves room for
        # a busy host's scheduling and the last window's rules; the old watch took ~20 s.
        w = Watch(d, rules, "--no-site", "--pid", sleeper.pid, "--every", "30", "--duration", "20")
        time.sleep(2)
        t0 = time.monotonic()
        code = w.finish(signal.SIGTERM)
        took = time.monotonic() - t0
        t.check(code == 0 and took < 1.0, "SIGTERM in the middle of a 20 s window ends it at once "
                "(%.2f s, exit %s)" % (took, code), w.text()[-800:])

        w = Watch(d, rules, "--no-site", "--pid", sleeper.pid, "--every", "1", "--duration", "1")
        w.wait_windows(1, "--duration = --every: a first window")
        times = window_times(w, 5)
        gaps = [b - a for a, b in zip(times, times[1:])]
        t.check(gaps and 0.8 <= median(gaps) <= 1.5,
                "--every 1 --duration 1: a window that ends late starts the next at once (median "
                "%.2f s; the old schedule: 2.1 s)" % (median(gaps) if gaps else -1),
                (gaps, w.text()[-1500:]))
        w.finish(signal.SIGTERM)
    finally:
        w.finish(signal.SIGKILL)
        sleeper.kill()
        sleeper.wait()

    # ---- the target exits: post-mortem, exit 3 -------------------------------------------
    tg = Target()
    # a directory name with a bidi override and a byte that is not UTF-8: the post-mortem quotes
    # the path of the last report, and must stay valid JSON with no raw control in it
    pm = os.path.join(d, "pm\u202e\udcff")
    w = Watch(d, rules, "--no-site", "--pid", tg.pid, "--every", "0.2", "--duration", "0.05",
              "--rate", "0", "--out", pm)
    try:
        w.wait_windows(1, "exit run: a window")
        tg.exit()
        code = w.finish()
        t.check(code == 3, "the target's exit ends the watch with exit 3", (code, w.text()))
        got = reports(pm, "*-postmortem.json")
        t.check(len(got) == 1, "a post-mortem report is written", os.listdir(pm) if os.path.isdir(pm) else None)
        if got:
            rep = json.load(open(got[0]))
            t.check(rep["target"] == {"pid": tg.pid, "alive": False} and "exited" in rep["watch"]["end"],
                    "the post-mortem says the target exited", rep)
            t.check(os.path.exists(got[0][:-5] + ".md"), "post-mortem Markdown too")
            raw = open(got[0], "rb").read()
            t.check(b"\xff" not in raw and "\u202e".encode() not in raw
                    and rep["watch"]["last_report"] in (None, "") or
                    "\ufffd" in (rep["watch"]["last_report"] or ""),
                    "the post-mortem escapes the path: no raw bidi or broken byte, \\ufffd for it",
                    raw[-300:])
        t.check("has exited" in w.text(), "the exit is logged", w.text())
    finally:
        w.finish(signal.SIGKILL)
        tg.stop()

    # ---- the target is OOM-killed: the evaluated post-mortem, exit 1 ----------------------
    OOM = (
        "import os, sys\n"
        "open('/proc/self/oom_score_adj', 'w').write('1000')\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
        "chunks = []\n"
        "for _ in range(4096):\n"
        "    chunks.append(b'\\x01' * (8 << 20))\n")
    try:
        group = cg.TestCgroup("watch-oom", memory_max_bytes=100 << 20)
    except Exception as e:  # no memory controller to delegate here
        group = None
        print("SKIP OOM post-mortem: no memory cgroup (%s)" % e)
    if group:
        with group:
            pm2 = os.path.join(d, "pm-oom")
            open(hook_log, "w").close()
            victim = group.popen([PY, "-u", "-c", OOM], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            t.check(victim.stdout.readline().startswith("ready"), "OOM target ready")
            w = Watch(d, "--no-site", "--pid", victim.pid, "--every", "0.3", "--duration", "0.1",
                      "--rate", "0", "--out", pm2, "--on-finding", "%s %s" % (PY, hook))
            try:
                w.wait_windows(1, "OOM run: a window")
                victim.stdin.write("go\n")
                victim.stdin.flush()
                # Not reaped until the watch has ended: a zombie whose parent is slow to wait
                # (a busy host, a launcher) is as dead as a reaped pid (CI saw this race).
                info = os.waitid(os.P_PID, victim.pid, os.WEXITED | os.WNOWAIT)
                t.check(info.si_code == os.CLD_KILLED and info.si_status == signal.SIGKILL,
                        "the target was OOM-killed (SIGKILL)", info)
                code = w.finish()
                victim.wait(timeout=WAIT)
                t.check(code == 1, "an OOM kill ends the watch with exit 1", (code, w.text()))
                got = reports(pm2, "*-postmortem.json")
                rep = json.load(open(got[0])) if len(got) == 1 else {}
                sev = {f["id"]: f["severity"] for f in rep.get("findings", [])}
                t.check(sev.get("oom.killed") == "high" and rep["target"].get("alive") is False,
                        "the post-mortem report has oom.killed (high)", (got, sev, rep.get("target")))
                w.wait_for(lambda: got and got[0] in open(hook_log).read(),
                           "--on-finding ran with the post-mortem")
            finally:
                w.finish(signal.SIGKILL)
                if victim.poll() is None:
                    victim.kill()
                    victim.wait()

    # ---- usage and target errors --------------------------------------------------------
    gone = subprocess.Popen(["true"])
    gone.wait()
    for args, want, what in (
            (["--pid", gone.pid], 3, "a pid that is not there: exit 3"),
            (["--pid", os.getpid(), "--on-finding", "x"], 2, "--on-finding without --out: exit 2"),
            (["--pid", os.getpid(), "--listen", "nohost:1"], 2, "a bad --listen: exit 2"),
            (["--pid", os.getpid(), "--every", "0"], 2, "--every 0: exit 2"),
            (["--pid", os.getpid(), "--every", "1", "--duration", "2"], 2,
             "--duration longer than --every: exit 2"),
            (["--pid", os.getpid(), "--duration", "31"], 2,
             "--duration longer than the default --every (30 s): exit 2"),
            (["--pid", os.getpid(), "--out", "/proc/nonexistent/x"], 2, "an --out that cannot be: exit 2"),
            (["--pid", os.getpid(), "--on-finding", "'unbalanced", "--out", d], 2,
             "an --on-finding with unbalanced quotes: exit 2")):
        r = subprocess.run([SOPCTL, "watch"] + [str(a) for a in args], capture_output=True,
                           text=True, timeout=WAIT)
        t.check(r.returncode == want and r.stderr.strip(), what, (r.returncode, r.stderr))

    # ---- pid reuse, in a pid namespace of our own --------------------------------------
    REUSE = r'''
import json, os, subprocess, sys, time
sopctl, rules, log_path = sys.argv[1:4]
def sleeper():
    return subprocess.Popen(["/usr/bin/python3", "-c", "import time; time.sleep(600)"])
result = {"attempts": []}
for attempt in range(4):
    tg = sleeper()
    log = open(log_path, "w")
    w = subprocess.Popen([sopctl, "watch", rules, "--no-site", "--pid", str(tg.pid), "--every",
                          "1", "--duration", "0", "--rate", "0"], stderr=log)
    deadline = time.time() + 90
    while time.time() < deadline and open(log_path).read().count(" window #") < 1:
        time.sleep(0.02)
    tg.kill()
    tg.wait()
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(tg.pid - 1))
    except OSError as e:
        w.kill()
        print(json.dumps({"skip": "cannot set ns_last_pid: %s" % e}))
        sys.exit(0)
    new = sleeper()
    try:
        code = w.wait(timeout=90)
    except subprocess.TimeoutExpired:
        w.kill()
        code = None
    text = open(log_path).read()
    new.kill()
    new.wait()
    result["attempts"].append({"same_pid": new.pid == tg.pid, "code": code, "log": text[-1500:]})
    # Valid only when the pid was reused before the watch looked again; else try again.
    if new.pid == tg.pid and "has exited" not in text:
        break
print(json.dumps(result))
'''
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                           capture_output=True)
    if probe.returncode != 0:
        print("SKIP pid reuse: no pid namespace here (%s)" % probe.stderr.decode().strip())
    else:
        script = os.path.join(d, "reuse.py")
        open(script, "w").write(REUSE)
        r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", PY, script, SOPCTL,
                            rules, os.path.join(d, "reuse.log")],
                           capture_output=True, text=True, timeout=600)
        res = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else {}
        if "skip" in res:
            print("SKIP pid reuse: " + res["skip"])
            t.done()
        last = (res.get("attempts") or [{}])[-1]
        t.check(last.get("same_pid"), "pid reuse: the test got the target's pid again", (r.stderr, res))
        t.check(last.get("code") == 3 and "belongs to another process" in last.get("log", ""),
                "pid reuse: detected, not followed (exit 3)", res)

t.done()
