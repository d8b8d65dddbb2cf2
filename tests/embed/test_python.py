"""test_python.py — the Python binding (python/sop, ctypes) under Debian's python3: a program
that imports sop and diagnoses itself (its own Python stacks included: a worker thread's frame
and the frame that called into the library) and a child process (an asyncio loop blocked in
time.sleep: asyncio.loop_blocked names the frame); errors, rules, site files, thresholds, the
watch thread; and `pip install --target` of python/ without PyPI."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

if os.environ.get("SOP_SANITIZE"):
    print("skipped: python3 cannot load a libsop built with -fsanitize=" +
          os.environ["SOP_SANITIZE"])
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from sopt import PY, Checks, Target  # noqa: E402

import sop  # noqa: E402  (PYTHONPATH=python, SOP_LIBRARY=build/libsop.so from ctest)

t = Checks()
SRC = os.environ.get("SOP_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))

t.check(sop.version() == "0.1.0", "sop.version()", sop.version())
t.check(os.path.samefile(sop.library_path(), os.environ["SOP_LIBRARY"]),
        "loads the library SOP_LIBRARY names", sop.library_path())

# ---- self ------------------------------------------------------------------------------------
stop = threading.Event()


def busy_worker_frame():
    x = 0
    while not stop.is_set():
        x += 1


worker = threading.Thread(target=busy_worker_frame, name="busy-worker", daemon=True)
worker.start()


def all_funcs(ev_python):
    return {f.get("func") for th in ev_python.get("threads", []) for f in th.get("frames", [])}


def diagnose_myself():
    return sop.diagnose(duration=0.5)


report = diagnose_myself()
t.check(isinstance(report, dict) and report.get("schema") == 1, "diagnose() returns a dict",
        type(report))
t.check(report.get("target", {}).get("pid") == os.getpid(), "pid=None is this process",
        report.get("target"))
t.check(report.get("target", {}).get("python"), "the report knows this is CPython",
        report.get("target"))
t.check(not any(m.get("probe") == "python" for m in report.get("missing_evidence", [])),
        "the Python probe read this process", report.get("missing_evidence"))

with sop.Engine() as e:
    def evidence_of_myself():
        return e.evidence(duration=0.3)
    ev = evidence_of_myself()
    funcs = all_funcs(ev.get("python", {}))
    t.check("busy_worker_frame" in funcs, "self evidence has the worker thread's frame", funcs)
    t.check("evidence_of_myself" in funcs, "and the frame that called into libsop", funcs)
    thin = e.evidence(duration=0, probes=["python"])
    t.check("python" in thin and "threads" not in thin and "cgroup" not in thin,
            "probes= picks the probes", sorted(thin))
    t.check("busy_worker_frame" in all_funcs(thin.get("python", {})), "...and still reads stacks")
    t.check(len(e.rule_ids) > 3 and "asyncio.loop_blocked" in e.rule_ids, "rule ids", e.rule_ids)

stacks = sop.dump()
t.check("busy_worker_frame" in all_funcs(stacks), "sop.dump() of this process", stacks)


class HeapMarker:
    pass


markers = [HeapMarker() for _ in range(777)]
census = sop.heap(top=1000)
t.check([x["count"] for x in census["types"] if x["name"] == "__main__.HeapMarker"] == [777],
        "sop.heap() of this process counts its objects by class", census.get("types", [])[:5])
md = sop.diagnose(duration=0, format="md", lang="zh")
t.check(isinstance(md, str) and md.startswith("#"), "format='md' returns text", md[:80])
stop.set()
worker.join()

# ---- from an asyncio loop: adiagnose() keeps the loop running -------------------------------------
import asyncio  # noqa: E402


async def loop_main():
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    tk = asyncio.ensure_future(ticker())
    rep = await sop.adiagnose(duration=1.0)
    tk.cancel()
    return rep, ticks


arep, ticks = asyncio.run(loop_main())
t.check(arep.get("target", {}).get("pid") == os.getpid(), "adiagnose() returns the report")
t.check(ticks >= 20, "the event loop kept running during the 1 s window", ticks)
t.check("asyncio.loop_blocked" not in [f["id"] for f in arep.get("findings", [])],
        "and a loop that awaits is not reported blocked", arep.get("findings"))

# ---- a child ------------------------------------------------------------------------------------
BLOCKED = """
import asyncio, time
async def handler():
    while True:
        time.sleep(3)                 # line 5: blocks the event loop
        await asyncio.sleep(0)
async def main():
    print('ready', flush=True)
    await handler()
asyncio.run(main())
"""
child = Target(BLOCKED)
try:
    time.sleep(0.3)
    rep = sop.diagnose(child.pid, duration=0.5)
    ids = {f["id"]: f for f in rep.get("findings", [])}
    lb = ids.get("asyncio.loop_blocked", {})
    t.check(lb, "a child blocked in time.sleep: asyncio.loop_blocked", list(ids))
    t.check("handler" in lb.get("evidence", ""), "the finding names the frame", lb.get("evidence"))
    # A site file turning the rule off, and one adding a rule.
    with tempfile.TemporaryDirectory() as d:
        site = os.path.join(d, "site.lua")
        with open(site, "w") as f:
            f.write('disable "asyncio.loop_blocked"\n'
                    'thresholds { child_rss_kb = 1 }\n'
                    'rule { id = "site.rss", section = "2", severity = "info",\n'
                    '  check = function(ev, th) return hit { symptom = "s",\n'
                    '    evidence = fmt("rss %d kB", ev.proc.rss_kb), cause = "c", fix = "f",\n'
                    '    verify = "v", refs = "https://example.org" } end }\n')
        rep2 = sop.diagnose(child.pid, duration=0.2, site=site,
                            thresholds={"child_rss_kb": 5})
        ids2 = [f["id"] for f in rep2.get("findings", [])]
        t.check("asyncio.loop_blocked" not in ids2 and "site.rss" in ids2,
                "site= disables and adds rules", ids2)
    text = sop.diagnose(child.pid, duration=0, format="text")
    t.check(isinstance(text, str) and str(child.pid) in text, "format='text'", text[:100])
finally:
    child.stop()

# ---- errors -------------------------------------------------------------------------------------
def error_of(fn):
    try:
        fn()
    except sop.SopError as e:
        return e
    return None


e1 = error_of(lambda: sop.diagnose(child.pid, duration=0))
t.check(e1 is not None and e1.code == -3 and str(child.pid) in str(e1),
        "a gone pid raises SopError(SOP_ENOTARGET)", e1)
e2 = error_of(lambda: sop.diagnose(duration=0, thresholds={"no_such_knob": 1}))
t.check(e2 is not None and e2.code == -8 and "no_such_knob" in str(e2),
        "an unknown threshold raises SOP_EUNKNOWNKEY", e2)
e3 = error_of(lambda: sop.diagnose(duration=0, rules="rule {\n"))
t.check(e3 is not None and e3.code == -5 and ":" in str(e3), "bad rules raise SOP_ERULES", e3)
own = ('rule { id = "mine", section = "2", severity = "warn",\n'
       '  check = function(ev) return clear("fine") end }\n')
r3 = sop.diagnose(duration=0, rules=own)
t.check([c["id"] for c in r3.get("cleared", [])] == ["mine"], "rules= Lua source", r3)
try:
    sop.diagnose(duration=0, format="xml")
    t.check(False, "a bad format raises ValueError")
except ValueError:
    t.check(True, "a bad format raises ValueError")
t.check(list(sop.FORMATS)[:4] == ["md", "json", "text", "html"],
        "sop.FORMATS is the library's format table", sop.FORMATS)
page = sop.diagnose(duration=0, format="html")
t.check(isinstance(page, str) and page.startswith("<!DOCTYPE html>") and "</html>" in page,
        "format='html' returns the page", page[:80])

# ---- watch --------------------------------------------------------------------------------------
got = []
done = threading.Event()


def on_report(rep, event):
    got.append((rep, event))
    if len(got) >= 3:
        done.set()


w = sop.Watch(on_report, interval=0.2, duration=0.1)
time.sleep(0.1)
w.trigger()
done.wait(60)
om = w.openmetrics()
t.check('sop_rule_hit{rule="oom.killed"' in om and "sop_watch_runs_total " in om
        and not om.rstrip().endswith("# EOF"), "openmetrics(): the last run's series", om[:500])
w.stop()
t.check(w.openmetrics() == "", "openmetrics() after stop() is empty")
n = len(got)
t.check(n >= 3, "the watch calls back periodically", n)
t.check(all(r and r.get("schema") == 1 and ev["rc"] == 0 and ev["pid"] == os.getpid()
            for r, ev in got), "with reports of this process", got[:1])
t.check(any(ev["on_demand"] for _, ev in got), "trigger() asks for a run", [e for _, e in got])
t.check([ev["seq"] for _, ev in got] == list(range(1, n + 1)), "seq counts runs")
time.sleep(0.5)
t.check(len(got) == n, "stop() stops it")

# ---- silent: the library writes nothing to stdout/stderr of the process it runs in ------------
code = ("import sop, threading\n"
        "sop.diagnose(duration=0.2); sop.diagnose(format='md', duration=0); sop.dump()\n"
        "try:\n    sop.diagnose(1 << 22, duration=0)\nexcept sop.SopError:\n    pass\n"
        "w = sop.Watch(lambda r, e: None, interval=0.05, duration=0.05)\n"
        "import time; time.sleep(0.5); w.stop()\n")
p = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
t.check(p.returncode == 0 and p.stdout == "" and p.stderr == "",
        "nothing on stdout/stderr from the library in a Python process", p.stdout + p.stderr)

# ---- installable without PyPI -------------------------------------------------------------------
with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, "src")
    shutil.copytree(os.path.join(SRC, "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "libsop.so"))
    target = os.path.join(d, "site")
    p = subprocess.run([PY, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                        "--no-deps", "--quiet", "--target", target, src],
                       capture_output=True, text=True, timeout=300)
    t.check(p.returncode == 0, "pip install --no-index --target works", p.stderr[-2000:])
    env = dict(os.environ, PYTHONPATH=target)
    code = ("import os, sop; r = sop.diagnose(os.getppid(), duration=0); "
            "print(sop.__file__); print(r['target']['pid'])")
    p = subprocess.run([PY, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    lines = p.stdout.split()
    t.check(p.returncode == 0 and lines[:1] and lines[0].startswith(target)
            and lines[1:2] == [str(os.getpid())],
            "the pip-installed module diagnoses another process", p.stdout + p.stderr)
t.done()
