"""test_gil_counter_rewrite.py — a target that rewrites its own GIL switch counter (issue 40
item 6: "988084462785924736 switches/s" printed as measured). CPython keeps switch_number in
its own memory, so a target can write it; a count that moves faster than switches can happen
(engine/bridge/window.h: 1e6/s) is no measurement. Checked on a real CPython 3.8-3.11 target
(there the GIL is in _PyRuntime; the target finds the counter itself: the word 24 bytes after
a switch interval it set to an odd value, which must grow as two threads hand the GIL back and
forth): before the rewrite the rate is measured and gil.handoff_churn decides; while the
target adds 1e15 to the counter every 0.1 s, python.concurrency.gil_switches_per_s is absent
(gil_interval_us stays), missing says why, gil.handoff_churn is unknown, no report text and no
/metrics sample carries the impossible number."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request

from sopt import PY, SOPCTL, Checks, Target, run_json, sopctl

t = Checks()
WAIT = 90  # seconds: only ever a ceiling for polling

TARGET = r'''
import ctypes, signal, struct, sys, threading, time
if not (3, 8) <= sys.version_info[:2] <= (3, 11):
    print("ready skip: the GIL is in _PyRuntime on CPython 3.8-3.11 only, this is %d.%d"
          % sys.version_info[:2], flush=True)
    sys.exit(0)
sys.setswitchinterval(0.004321)  # 4321 us: a word to look for
rt = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
image = ctypes.string_at(rt, 4096)  # _PyRuntime.ceval.gil sits in its first kilobytes


def switches(at):
    return ctypes.c_uint64.from_address(at).value


def pingpong(n):  # hand the GIL to another thread and back, n times
    a, b = threading.Event(), threading.Event()
    def other():
        for _ in range(n):
            a.wait()
            a.clear()
            b.set()
    th = threading.Thread(target=other)
    th.start()
    for _ in range(n):
        a.set()
        b.wait()
        b.clear()
    th.join()


# struct _gil_runtime_state: interval, last_holder, locked (+ pad), switch_number
found = None
for off in range(0, len(image) - 32, 8):
    if struct.unpack_from("Q", image, off)[0] != 4321:
        continue
    before = switches(rt + off + 24)
    pingpong(200)
    grew = switches(rt + off + 24) - before
    if 400 <= grew <= 100000:
        found = rt + off + 24
        break
if not found:
    print("ready skip: switch_number not found after the switch interval", flush=True)
    sys.exit(0)
counter = ctypes.c_uint64.from_address(found)
poke = threading.Event()
signal.signal(signal.SIGUSR1, lambda *a: poke.set())


def poker():  # what the report of issue 40 saw: the counter moved by ~1e18 in a second
    poke.wait()
    while True:
        counter.value += 10 ** 15  # 1e16/s; 2^62 (where sop stops reading it) is ~460 s away
        time.sleep(0.1)


threading.Thread(target=poker, daemon=True).start()
print("ready", hex(found), flush=True)
x = 0
while True:  # one busy thread: gil.handoff_churn has a rate to judge ("one busy thread": clear)
    x += 1
'''


def evidence(pid):
    code, out, err = sopctl("evidence", "--pid", pid, "--duration", "1", timeout=WAIT)
    try:
        return json.loads(out)
    except ValueError:
        return {"error": err[-500:], "code": code}


def concurrency(ev):
    return (ev.get("python") or {}).get("concurrency") or {}


def counter_notes(missing):
    return [m for m in missing or [] if "GIL switch counter" in m.get("reason", "")]


def verdict(report, rule):
    for key, name in (("findings", "hit"), ("cleared", "clear"), ("unknown", "unknown")):
        if any(f.get("id") == rule for f in (report or {}).get(key, [])):
            return name
    return None


def texts(report):
    out = []
    for key in ("findings", "cleared", "unknown"):
        for f in (report or {}).get(key, []):
            out += [str(f.get(k, "")) for k in ("symptom", "evidence", "note", "reason")]
    return " ".join(out)


tg = Target(TARGET)
try:
    if "skip" in (tg.ready_line or ""):
        print("SKIP " + tg.ready_line)
        t.done()

    # ---- before: a measured rate ---------------------------------------------------------
    ev = evidence(tg.pid)
    c = concurrency(ev)
    rate = c.get("gil_switches_per_s")
    t.check(rate is not None and 0 <= rate < 1e6 and c.get("gil_interval_us") == 4321,
            "before the rewrite: gil_switches_per_s measured (%s/s), interval 4321 us" % rate, c)
    t.check(not counter_notes(ev.get("missing")), "before: no note on the counter", ev.get("missing"))
    code, rep, err = run_json("--no-site", "--pid", tg.pid, "--duration", "1", timeout=WAIT)
    t.check(verdict(rep, "gil.handoff_churn") in ("clear", "hit"),
            "before: gil.handoff_churn decides (%s)" % verdict(rep, "gil.handoff_churn"), err[-500:])

    # ---- the target writes its counter ---------------------------------------------------
    os.kill(tg.pid, signal.SIGUSR1)
    time.sleep(0.3)
    ev = evidence(tg.pid)
    c = concurrency(ev)
    t.check("gil_switches_per_s" not in c and c.get("gil_interval_us") == 4321,
            "rewritten: gil_switches_per_s absent, the interval kept", c)
    notes = counter_notes(ev.get("missing"))
    t.check(len(notes) == 1 and notes[0].get("probe") == "python"
            and "moved by" in notes[0]["reason"] and "beyond 1000000/s" in notes[0]["reason"]
            and "not a measurement" in notes[0]["reason"],
            "rewritten: missing says the counter moved beyond 1e6/s, not a measurement", notes)

    code, rep, err = run_json("--no-site", "--pid", tg.pid, "--duration", "1", timeout=WAIT)
    t.check(verdict(rep, "gil.handoff_churn") == "unknown",
            "rewritten: gil.handoff_churn is unknown (%s)" % verdict(rep, "gil.handoff_churn"),
            texts(rep)[:1500])
    t.check(counter_notes((rep or {}).get("missing_evidence")),
            "rewritten: the report's missing evidence carries the note",
            (rep or {}).get("missing_evidence"))
    t.check(not re.search(r"\d{10,}", texts(rep)),
            "rewritten: no verdict text quotes an impossible count", texts(rep)[:1500])

    # ---- /metrics of a watch --------------------------------------------------------------
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "watch.log")
        w = subprocess.Popen([SOPCTL, "watch", "--no-site", "--pid", str(tg.pid), "--every", "1",
                              "--duration", "0.5", "--listen", "127.0.0.1:0"],
                             stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        try:
            deadline = time.time() + WAIT
            while time.time() < deadline and " window #" not in open(log).read():
                time.sleep(0.05)
            port = re.search(r"listening on http://([^/\s]+)/metrics", open(log).read())
            body = ""
            if port:
                with urllib.request.urlopen("http://%s/metrics" % port.group(1), timeout=30) as r:
                    body = r.read().decode()
            t.check(re.search(r'^sop_rule_unknown\{rule="gil\.handoff_churn"[^}]*\} 1$', body, re.M),
                    "/metrics: gil.handoff_churn unknown", (open(log).read()[-800:], body[:1500]))
            huge = [ln for ln in body.splitlines() if ln and not ln.startswith("#")
                    and abs(float(ln.rsplit(" ", 1)[-1])) >= 1e15]
            t.check(body and not huge, "/metrics: no sample carries an impossible number", huge[:5])
        finally:
            w.send_signal(signal.SIGTERM)
            try:
                w.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
finally:
    tg.stop()

t.done()
