"""test_hostile_names.py — one escaper for every text output (issue 40, item 5): a real CPython
3.11 target whose argv, thread names (a threading.Thread's, and the comm of a thread that runs
no Python), function and file names, asyncio task and class (module) names hold terminal
escapes (ESC, the C1 CSI U+009B), bidi controls (U+202E, U+2066, U+200E/F, U+061C) and bytes
that are not UTF-8. Every text-producing command and format
(run text/md/json/html, dump text/--json/--tasks, tasks text/--json/--tree, evidence, watch's
one window, watch --listen's /metrics and /report, merge md/text/json, record
collapsed/svg/speedscope/html, heap text/--json) is run against it, and no
output may carry a raw C0 control other than newline and tab (escape.c spells CR too), a C1
control, a bidi/format control or invalid UTF-8 — while each still names the hostile thing in
its escaped form, so the test cannot pass by dropping names. Needs root (reads the target's
memory); skips otherwise."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from sopt import SOPCTL, Checks, http_get  # noqa: E402

PY = "/root/.pyenv/versions/3.11.7/bin/python3"
C = Checks()

# The hostile run of characters every name carries. The target adds "\udcff" to its names: the
# byte 0xff through surrogateescape (os.fsencode gives b"\xff"), a lone surrogate in a str, which
# is not UTF-8 either; argv carries the raw bytes 0xff 0xfe.
HOSTILE = "\u202e\u2066\x1b[31m\u009b31m\u200e\u200f\u061c\u2069"

TARGET = r'''
import asyncio, ctypes, os, sys, threading, time

H = sys.argv[1]                        # HOSTILE, passed as an argument (cmdline shows it too)
BAD = os.fsdecode(b"\xff")             # "\udcff": the invalid byte, surrogateescaped

# A class whose instances the heap census counts under a hostile name: its module (tp_name
# has no control: the census takes a tp_name holding one as no type).
Klass = type("KLASS", (), {})
Klass.__module__ = "MOD" + H + BAD
keep = [Klass() for _ in range(30000)]

# A module file and functions whose names hold the hostile run.
SRC = """
import time
def sleeper(ready):
    ready()
    while True:
        time.sleep(3600)

async def waiter():
    import asyncio
    await asyncio.sleep(3600)
"""
ns = {}
exec(compile(SRC, "FILE" + H + BAD + ".py", "exec"), ns)
def hostile(fn, name):
    fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=name)
    fn.__name__ = fn.__qualname__ = name
    return fn
sleeper = hostile(ns["sleeper"], "FUNC" + H + BAD)
waiter = hostile(ns["waiter"], "CORO" + H + BAD)

loop_ready = threading.Event()

def loop_main():
    async def main():
        asyncio.get_running_loop().create_task(waiter(), name="TASK" + H + BAD)
        await asyncio.sleep(0)
        loop_ready.set()
        await asyncio.sleep(3600)
    asyncio.run(main())

# A thread that runs no Python (pause(3) as its start routine), named through its comm (15
# bytes): ESC, U+202E, the byte 0xff and U+009B.
before = set(os.listdir("/proc/self/task"))
libc = ctypes.CDLL(None)
handle = ctypes.c_ulong()
libc.pthread_create(ctypes.byref(handle), None, ctypes.cast(libc.pause, ctypes.c_void_p), None)
for _ in range(1000):
    new = set(os.listdir("/proc/self/task")) - before
    if new:
        break
    time.sleep(0.001)
with open("/proc/self/task/%s/comm" % new.pop(), "wb") as f:
    f.write(b"OS\x1b[1m\xe2\x80\xae\xff\xc2\x9bX")

threading.Thread(target=loop_main, name="THR" + H + BAD, daemon=True).start()
loop_ready.wait()
sleeper(lambda: print("ready", flush=True))
'''


def bad_chars(data):
    """What must never reach a terminal or a parser, in the bytes data: ["what near context"]
    (the first 5). Newline and tab are the only controls an output writes itself; CR is spelled
    \x0d by escape.c like any other C0 control."""
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return ["invalid UTF-8 near %r" % data[max(0, e.start - 60):e.start + 60]]
    found = []
    for i, ch in enumerate(s):
        cp = ord(ch)
        if (cp < 0x20 and ch not in "\n\t") or cp == 0x7f:
            what = "C0/DEL"
        elif 0x80 <= cp <= 0x9f:
            what = "C1"
        elif (0x202a <= cp <= 0x202e or 0x2066 <= cp <= 0x2069 or
              cp in (0x200e, 0x200f, 0x061c, 0x2028, 0x2029)):
            what = "bidi/line separator"
        else:
            continue
        found.append("%s U+%04X near %r" % (what, cp, s[max(0, i - 60):i + 60]))
        if len(found) >= 5:
            break
    return found


def check_output(what, data, names):
    """data: the bytes a command wrote. names: [(label, regex over the decoded text)] each of
    which must match (the hostile name still there, escaped)."""
    bad = bad_chars(data)
    C.check(not bad, "%s: no raw control, bidi or invalid UTF-8" % what, "; ".join(bad))
    text = data.decode("utf-8", "replace")
    for label, rx in names:
        C.check(re.search(rx, text) is not None, "%s names %s (escaped)" % (what, label),
                "no match for %r in %r" % (rx, text[:1500]))


def sop(*args, timeout=120):
    r = subprocess.run([SOPCTL] + [str(a) for a in args], capture_output=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


# How each format spells U+202E: text, Markdown and HTML as \u202e, JSON as the \u202e escape,
# SVG/XML as '?'. Each regex asks for the marker followed by the escaped first control.
ESC_TEXT = r"\\u202e"
NAME = {
    "argv": r"ARGV" + ESC_TEXT,
    "argv_bytes": r"ARGV\\xff\\xfe",  # terminal text spells the bytes; JSON has \ufffd
    "func": r"FUNC" + ESC_TEXT,
    "file": r"FILE" + ESC_TEXT,
    "thread": r"THR" + ESC_TEXT,
    "os_thread": r"OS\\(x1b|u001b)",
    "task": r"TASK" + ESC_TEXT,
    "coro": r"CORO" + ESC_TEXT,
    "class": r"MOD" + ESC_TEXT,
}


def names(*keys, xml=False):
    out = []
    for k in keys:
        rx = NAME[k]
        if xml:
            rx = rx.replace(ESC_TEXT, r"\?").replace(r"\\(x1b|u001b)", r"\?")
        out.append((k, rx))
    return out


def main():
    if os.geteuid() != 0:
        print("note: needs root (reads the target's memory); skipped")
        sys.exit(0)
    if not os.path.exists(PY):
        print("note: no %s; skipped" % PY)
        sys.exit(0)
    tmp = tempfile.mkdtemp(prefix="sop-hostile-")
    script = os.path.join(tmp, "target.py")
    with open(script, "w") as f:
        f.write(TARGET)
    argv = [PY.encode(), b"-u", script.encode(), HOSTILE.encode(),
            ("ARGV" + HOSTILE).encode(), b"ARGV" + os.fsencode("\udcff") + b"\xfe"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline()
        if line.strip() != b"ready":
            p.kill()
            raise RuntimeError("target not ready: %r %r" % (line, p.stderr.read()[:2000]))
        time.sleep(0.3)
        run_all(p.pid, tmp)
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    C.done()


def run_all(pid, tmp):
    # dump: text (with --native and --tasks too) and JSON
    stack = ["argv", "argv_bytes", "func", "file", "thread", "os_thread"]
    for extra in ([], ["--native"], ["--tasks"]):
        rc, out, err = sop("dump", "--pid", pid, *extra)
        want = stack + (["task"] if extra == ["--tasks"] else [])
        check_output("dump %s" % " ".join(extra), out, names(*want))
        check_output("dump %s (stderr)" % " ".join(extra), err, [])
    rc, out, err = sop("dump", "--pid", pid, "--json", "--tasks")
    check_output("dump --json --tasks", out,
                 names("func", "file", "thread", "os_thread", "task", "coro"))

    # tasks
    for extra in ([], ["--tree"], ["--json"]):
        rc, out, err = sop("tasks", "--pid", pid, *extra)
        check_output("tasks %s" % " ".join(extra), out, names("task", "coro"))
        check_output("tasks %s (stderr)" % " ".join(extra), err, [])

    # run: every format (one window each)
    for fmt in ("text", "md", "json", "html"):
        rc, out, err = sop("run", "--pid", pid, "--duration", "1", "--format", fmt, "--all")
        check_output("run --format %s" % fmt, out, names("argv", "task", "coro"))
        check_output("run --format %s (stderr)" % fmt, err, [])

    # evidence (JSON)
    rc, out, err = sop("evidence", "--pid", pid, "--duration", "1")
    check_output("evidence", out, names("argv", "func", "file", "thread", "task"))

    # heap: text and JSON
    for extra in ([], ["--json"]):
        rc, out, err = sop("heap", "--pid", pid, *extra)
        check_output("heap %s" % " ".join(extra), out, names("class"))
        check_output("heap %s (stderr)" % " ".join(extra), err, [])

    # record: every file format, idle samples kept (the target sleeps)
    for ext, fmt, xml in ((".txt", "collapsed", False), (".svg", "svg", True),
                          (".speedscope.json", "speedscope", False), (".html", "html", True)):
        path = os.path.join(tmp, "rec" + ext)
        rc, out, err = sop("record", "--pid", pid, "--duration", "1", "--idle", "--format", fmt,
                           "-o", path)
        data = open(path, "rb").read() if os.path.exists(path) else b""
        check_output("record %s" % fmt, data, names("func", xml=xml))
        check_output("record %s (stdout+stderr)" % fmt, out + err, [])

    # merge: the run's JSON report merged, in every format merge writes
    rc, out, err = sop("run", "--pid", pid, "--duration", "1", "--format", "json", "--all")
    # a report from another machine may name its node and job as it likes
    doc = json.loads(out.decode("utf-8", "surrogateescape"))
    doc["target"]["node"] = "NODE" + HOSTILE
    doc["target"]["job_id"] = "JOB" + HOSTILE
    rep = os.path.join(tmp, "rank0.json")
    with open(rep, "w") as f:
        json.dump(doc, f)
    for fmt in ("md", "text", "json"):
        rc, out, err = sop("merge", "--format", fmt, rep, rep)
        check_output("merge --format %s" % fmt, out, [("node", r"NODE\\{1,2}u202e")])  # Markdown doubles the \\
        check_output("merge --format %s (stderr)" % fmt, err, [])

    # watch --listen: what a scraper reads (/metrics, /report) and the log
    watch_listen(pid, tmp)

    # watch: one window; its log and any report it wrote
    wdir = os.path.join(tmp, "watch")
    os.mkdir(wdir, 0o700)
    rc, out, err = sop("watch", "--pid", pid, "--every", "1", "--duration", "1", "--count", "1",
                       "--out", wdir, timeout=120)
    check_output("watch (stdout+stderr)", out + err, names("coro"))
    for f in sorted(os.listdir(wdir)):
        check_output("watch report %s" % f, open(os.path.join(wdir, f), "rb").read(), [])


def watch_listen(pid, tmp):
    sock = os.path.join(tmp, "w.sock")
    w = subprocess.Popen([SOPCTL, "watch", "--pid", str(pid), "--every", "1", "--duration",
                          "0.5", "--listen", "127.0.0.1:0", "--listen", "unix:" + sock],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = b""
    try:
        # both listeners logged (the TCP one first, the socket after it) before either is asked
        port, on_sock, deadline = None, False, time.time() + 60
        while (port is None or not on_sock) and time.time() < deadline:
            line = w.stderr.readline()
            if not line:
                break
            log += line
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/", line)
            port = int(m.group(1)) if m else port
            on_sock = on_sock or (b"listening on unix:" + sock.encode()) in line
        C.check(port is not None and on_sock, "watch --listen: the log says where it listens",
                log[-1500:])
        if port is None or not on_sock:
            return
        metrics, report = b"", b""
        while time.time() < deadline and not (metrics and report):
            for path, kw in (("/metrics", {"port": port}), ("/report", {"unix": sock})):
                try:  # 503 until the first window has ended
                    status, body = http_get(path, **kw)
                except OSError:  # not bound yet: ask again
                    status, body = 0, b""
                if status == 200:
                    metrics, report = (body, report) if path == "/metrics" else (metrics, body)
            time.sleep(0.3)
        C.check(b"sop_" in metrics and report, "watch --listen answered /metrics and /report",
                (metrics[:300], report[:300]))
        check_output("watch /metrics", metrics, [])
        check_output("watch /report", report, names("argv"))
    finally:
        w.terminate()
        try:
            _, err = w.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            _, err = w.communicate()
    check_output("watch --listen (log)", log + err, [])


if __name__ == "__main__":
    main()
