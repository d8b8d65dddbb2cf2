"""test_launcher.py — the embedding example end to end: examples/launcher starts the aiohttp
server (examples/launcher/server.py, Debian's python3) as its child; a request makes the server
block its event loop in time.sleep; the launcher's health check goes slow, libsop diagnoses the
child, and the JSON report the launcher writes names the blocking frame (asyncio.loop_blocked,
stall_the_loop in server.py). The server keeps serving afterwards; SIGTERM stops both."""
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from sopt import Checks  # noqa: E402

t = Checks()
SRC = os.environ.get("SOP_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
LAUNCHER = os.environ["SOP_LAUNCHER"]
SERVER = os.path.join(SRC, "examples", "launcher", "server.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.status, r.read().decode()


def wait_for(pred, timeout, step=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


with tempfile.TemporaryDirectory(prefix="sop-launcher-") as tmp:
    port = free_port()
    log = os.path.join(tmp, "launcher.log")
    prom = os.path.join(tmp, "sop.prom")
    proc = subprocess.Popen([LAUNCHER, "--port", str(port), "--report-dir", tmp, "--log", log,
                             "--metrics-file", prom,
                             "--interval", "0.5", "--slow-ms", "400", "--duration", "0.5",
                             "--cooldown", "30", "--",
                             "/usr/bin/python3", SERVER, "--port", str(port)])

    def log_text():
        try:
            with open(log) as f:
                return f.read()
        except OSError:
            return ""

    try:
        healthy = wait_for(lambda: "healthy" in log_text(), 60)
        t.check(healthy, "the launcher starts the server and sees it healthy", log_text())
        kids = children_of(proc.pid)
        t.check(len(kids) == 1, "the server is the launcher's child", kids)
        server_pid = kids[0] if kids else -1
        t.check(not glob.glob(os.path.join(tmp, "*.json")), "no report while healthy")

        # Block the event loop for 15 s: long enough for a slow check and a 0.5 s diagnosis
        # even on a loaded machine; the request itself completes afterwards.
        blocked = {}

        def block():
            try:
                blocked["resp"] = get(port, "/block?seconds=15", 60)
            except Exception as e:  # reported below
                blocked["err"] = repr(e)

        th = threading.Thread(target=block)
        th.start()
        reports = wait_for(lambda: glob.glob(os.path.join(tmp, "sop-report-*.json")), 40)
        t.check(reports, "a slow health check produced a report file", log_text())
        report = {}
        if reports:
            with open(sorted(reports)[0]) as f:
                report = json.load(f)
        t.check(report.get("schema") == 1 and report.get("target", {}).get("pid") == server_pid,
                "the report is a sop JSON report about the server", report.get("target"))
        findings = {f["id"]: f for f in report.get("findings", [])}
        lb = findings.get("asyncio.loop_blocked")
        t.check(lb is not None, "the report has asyncio.loop_blocked", list(findings))
        ev = (lb or {}).get("evidence", "")
        t.check("stall_the_loop" in ev and "server.py" in ev,
                "its evidence names the blocking frame (stall_the_loop in server.py)", ev)
        lines = [l for l in log_text().splitlines() if "diagnosis #1" in l]
        t.check(len(lines) == 1 and "asyncio.loop_blocked" in lines[0] and
                os.path.basename(sorted(reports)[0]) in lines[0] if reports else False,
                "the log has a one-line summary naming the finding and the report", log_text())
        om = open(prom).read() if os.path.exists(prom) else ""
        t.check('sop_rule_hit{rule="asyncio.loop_blocked",section="5",severity="warn"} 1' in om,
                "--metrics-file: the diagnosis as Prometheus series", om[:800])
        t.check("no answer after 400 ms: diagnosing" in log_text(),
                "the log says the health check was slow", log_text())

        th.join(60)
        t.check(blocked.get("resp", (0, ""))[0] == 200,
                "the blocking request itself completes", blocked)
        st = get(port, "/health", 10)
        t.check(st == (200, "ok\n"), "the server keeps serving after the diagnosis", st)
        t.check(proc.poll() is None, "the launcher keeps running")
        t.check(not any("diagnosis" in l and "failed" in l for l in log_text().splitlines()),
                "no failed diagnosis in the launcher's log", log_text())
        t.check(len([l for l in log_text().splitlines() if "diagnosing" in l]) == 1,
                "one diagnosis per incident (cooldown)", log_text())
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
    t.check(rc == 0, "SIGTERM stops the launcher cleanly", rc)
    gone = wait_for(lambda: not os.path.exists(f"/proc/{server_pid}"), 10)
    t.check(gone, "and the server with it", server_pid)
    if not gone and server_pid > 0:
        os.kill(server_pid, signal.SIGKILL)
    print(log_text())
t.done()
