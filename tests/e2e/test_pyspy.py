"""test_pyspy.py — sopctl run as `py-spy` (a link to it; docs/py-spy.md) with the command lines
of the tools that call py-spy: Ray's dashboard (dump, dump --native, record -f flamegraph /
speedscope / raw), kubectl-flame and kubectl-prof (record -s -t [-f raw]), scripts (dump --json,
chrometrace, --idle, --gil, long and short option forms), against real CPython 3.11 and 3.12
targets with a busy thread and a sleeping one. Checks the files (SVG parses as XML, speedscope
JSON has the schema's shape, raw lines are `frames COUNT` with `func (file:line)` frames, chrome
trace events pair up), the exit codes (0 done, 1 failed or refused, 2 usage) and py-spy's
messages. Needs root (reads other processes' memory). Prints "N passed, N failed"."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sopt import SOPCTL, Checks  # noqa: E402

SRC = os.environ.get("SOP_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PYTHONS = ["/root/.pyenv/versions/3.11.7/bin/python3", "/root/.pyenv/versions/3.12.1/bin/python3"]

TARGET = r'''
import threading, time

def pyspy_hot_leaf(n):  # busy about half the time: two targets side by side leave a CPU free
    s = 0
    for i in range(n):
        s += i * i
    time.sleep(0.001)
    return s

def pyspy_hot_outer():
    while True:
        pyspy_hot_leaf(20000)

def pyspy_sleeper():
    while True:
        time.sleep(0.2)

threading.Thread(target=pyspy_sleeper, name="pyspy-sleeper", daemon=True).start()
print("ready", flush=True)
pyspy_hot_outer()
'''

RAW_LINE = re.compile(r"^.+ \d+$")
c = Checks()


def run(argv, cwd, timeout=60):
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def start_target(python, script):
    p = subprocess.Popen([python, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline()
    if line.strip() != "ready":
        p.kill()
        raise RuntimeError("target did not start: %r %s" % (line, p.stderr.read()))
    time.sleep(0.3)
    return p


def stop(p):
    if p.poll() is None:
        p.kill()
    p.wait()


def gone_pid():
    """A pid that existed and no longer does."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def raw_lines(path):
    with open(path) as f:
        return [ln.rstrip("\n") for ln in f if ln.strip()]


def raw_count(lines, needle):
    return sum(int(ln.rsplit(" ", 1)[1]) for ln in lines if needle in ln)


def check_dumps(tag, spy, pid, d):
    rc, out, err = run([spy, "dump", "-p", str(pid)], d)
    c.check(rc == 0 and "pyspy_hot_leaf" in out and "pyspy_sleeper" in out, tag +
            " Ray: py-spy dump -p PID: 0 and both threads' frames", (rc, out[-800:], err))
    rc, out, err = run([spy, "dump", "-p", str(pid), "--native"], d)
    c.check(rc == 0 and "pyspy_hot_outer" in out, tag + " Ray: py-spy dump -p PID --native",
            (rc, out[-800:], err))
    rc, out, err = run([spy, "dump", "--pid", str(pid), "--json"], d)
    try:
        doc = json.loads(out)
        names = {f["name"] for t in doc for f in t["frames"]}
        shape = all({"thread_id", "thread_name", "os_thread_id", "active", "owns_gil", "frames"}
                    <= set(t) for t in doc) and all(
            {"name", "filename", "short_filename", "line"} <= set(f)
            for t in doc for f in t["frames"])
    except (ValueError, KeyError, TypeError) as e:
        names, shape = set(), False
        err += " %s" % e
    c.check(rc == 0 and shape and {"pyspy_hot_leaf", "pyspy_sleeper"} <= names,
            tag + " py-spy dump --pid PID --json: py-spy's document", (rc, out[:600], err))
    rc, out, err = run([spy, "dump", "--pid=%d" % pid, "--nonblocking"], d)
    c.check(rc == 0 and "pyspy_hot_outer" in out, tag + " dump --pid=PID --nonblocking",
            (rc, err))
    rc, out, err = run([spy, "dump", "-p", hex(pid)], d)
    c.check(rc == 0 and "pyspy_hot_outer" in out, tag + " dump -p 0xHEX", (rc, err))
    rc, out, err = run([spy, "dump", "-p", str(pid), "--locals"], d)
    c.check(rc == 1 and "locals" in err and not out, tag + " dump --locals refused: 1",
            (rc, out, err))
    rc, out, err = run([spy, "dump", "-p", str(pid), "-l"], d)
    c.check(rc == 1, tag + " dump -l refused: 1", (rc, err))
    rc, out, err = run([spy, "dump", "-p", str(pid), "--native", "--nonblocking"], d)
    c.check(rc == 1 and "nonblocking" in err, tag + " dump --native --nonblocking: 1 (py-spy)",
            (rc, err))


def check_flamegraphs(tag, spy, pid, d):
    svg = os.path.join(d, "ray.svg")
    rc, out, err = run([spy, "record", "-o", svg, "-p", str(pid), "-d", "2", "-f", "flamegraph"],
                       d)
    ok = rc == 0 and os.path.exists(svg)
    try:
        ET.parse(svg)
        text = open(svg).read()
    except (ET.ParseError, OSError) as e:
        ok, text = False, str(e)
    c.check(ok and "pyspy_hot_leaf" in text,
            tag + " Ray: record -o F.svg -p PID -d 2 -f flamegraph: well-formed SVG", (rc, err))
    kf = os.path.join(d, "kubectl-flame.svg")
    rc, out, err = run([spy, "record", "-p", str(pid), "-o", kf, "-d", "2", "-s", "-t"], d)
    try:
        ET.parse(kf)
        text = open(kf).read()
    except (ET.ParseError, OSError) as e:
        text = str(e)
    c.check(rc == 0 and "thread (" in text and "pyspy_hot_leaf" in text,
            tag + " kubectl-flame: record -p PID -o F -d 2 -s -t", (rc, err, text[:300]))


def check_speedscope(tag, spy, pid, d):
    path = os.path.join(d, "ray-speedscope.txt")  # Ray names every non-SVG profile .txt
    rc, out, err = run([spy, "record", "-o", path, "-p", str(pid), "-d", "2", "-f", "speedscope"],
                       d)
    try:
        doc = json.load(open(path))
        frames = doc["shared"]["frames"]
        ok = (doc["$schema"] == "https://www.speedscope.app/file-format-schema.json" and
              isinstance(frames, list) and doc["profiles"] and
              all(p["type"] == "sampled" for p in doc["profiles"]) and
              any(f["name"] == "pyspy_hot_leaf" and f.get("file") == "pyspy_target.py" and
                  isinstance(f.get("line"), int) for f in frames))
    except (ValueError, KeyError, TypeError, OSError) as e:
        ok, err = False, err + str(e)
    c.check(rc == 0 and ok, tag + " Ray: record -f speedscope: the schema's shape and the "
            "target's functions (name, file, line)", (rc, err))
    chk = subprocess.run([sys.executable, os.path.join(SRC, "scripts/check_speedscope.py"), path],
                         capture_output=True, text=True)
    c.check(chk.returncode == 0, tag + " speedscope file passes scripts/check_speedscope.py",
            chk.stdout + chk.stderr)


def check_raw(tag, spy, pid, d, script):
    base = os.path.basename(script)
    raw = os.path.join(d, "ray-raw.txt")
    rc, out, err = run([spy, "record", "-o", raw, "-p", str(pid), "-d", "2", "-f", "raw"], d)
    lines = raw_lines(raw) if os.path.exists(raw) else []
    c.check(rc == 0 and lines and all(RAW_LINE.match(ln) for ln in lines),
            tag + " Ray: record -f raw: every line `frames COUNT`", (rc, err, lines[:5]))
    leaf = re.compile(r"(^|;)pyspy_hot_leaf \(%s:\d+\)( \d+$|;)" % re.escape(base))
    outer = re.compile(r"(^|;)pyspy_hot_outer \(%s:\d+\);" % re.escape(base))
    c.check(any(leaf.search(ln) and outer.search(ln) for ln in lines),
            tag + " raw frames are `func (file:line)`, root first", lines[:5])
    c.check(not any(ln.startswith(("pid ", "tid ", "thread (", "process ")) for ln in lines),
            tag + " raw without -t/-s: no thread or process frames", lines[:5])
    # kubectl-prof: -s -t -f raw
    kp = os.path.join(d, "kubectl-prof.txt")
    rc, out, err = run([spy, "record", "-p", str(pid), "-o", kp, "-d", "2", "-s", "-t", "-f",
                        "raw"], d)
    lines = raw_lines(kp) if os.path.exists(kp) else []
    pre = re.compile(r'^process %d:"[^;]*";thread \(\d+\)(: [^;]+)?;' % pid)
    c.check(rc == 0 and lines and all(pre.match(ln) and RAW_LINE.match(ln) for ln in lines),
            tag + " kubectl-prof: record -s -t -f raw: process and thread root frames",
            (rc, err, lines[:3]))
    # --idle keeps the sleeping thread; --gil keeps only the GIL holder's samples
    idle = os.path.join(d, "idle.txt")
    rc1, _, err1 = run([spy, "record", "-o", idle, "-p", str(pid), "-d", "1", "-f", "raw",
                        "--idle", "--threads"], d)
    with_idle = raw_count(raw_lines(idle), "pyspy_sleeper") if rc1 == 0 else -1
    busy = os.path.join(d, "busy.txt")
    rc2, _, err2 = run([spy, "record", "-o", busy, "-p", str(pid), "-d", "1", "-f", "raw"], d)
    no_idle = raw_count(raw_lines(busy), "pyspy_sleeper") if rc2 == 0 else -1
    c.check(rc1 == 0 and rc2 == 0 and with_idle > 50 and no_idle < with_idle / 2,
            tag + " --idle keeps the sleeping thread's samples (%d with, %d without)" %
            (with_idle, no_idle), (err1, err2))
    gil = os.path.join(d, "gil.txt")
    rc, _, err = run([spy, "record", "-o", gil, "-p", str(pid), "-d", "1", "-f", "raw", "--gil",
                      "--idle"], d)
    gl = raw_lines(gil) if rc == 0 else []
    c.check(rc == 0 and raw_count(gl, "pyspy_hot_leaf") > 0 and
            raw_count(gl, "pyspy_sleeper") < 10,
            tag + " --gil: the GIL holder's samples only", (rc, err, gl[:4]))


def check_chrometrace(tag, spy, pid, d):
    path = os.path.join(d, "trace.json")
    rc, out, err = run([spy, "record", "-o", path, "-p", str(pid), "-d", "1", "-f",
                        "chrometrace", "--idle"], d)
    try:
        evs = json.load(open(path))
        ok = isinstance(evs, list) and evs and all(
            {"name", "ph", "ts", "pid", "tid", "cat"} <= set(e) for e in evs)
        depth = {}
        for e in evs:
            depth[e["tid"]] = depth.get(e["tid"], 0) + (1 if e["ph"] == "B" else -1)
            ok = ok and depth[e["tid"]] >= 0
        ok = ok and all(v == 0 for v in depth.values())
        names = {e["name"] for e in evs}
    except (ValueError, KeyError, TypeError, OSError) as e:
        ok, names, err = False, set(), err + str(e)
    c.check(rc == 0 and ok and "pyspy_hot_leaf" in names,
            tag + " record -f chrometrace: B/E events that pair up per thread", (rc, err))


def check_forms(tag, spy, pid, d):
    f = os.path.join(d, "forms.txt")
    rc, out, err = run([spy, "record", "--pid=%d" % pid, "--duration=1", "--format=raw",
                        "--output=" + f, "--rate=50", "--nonblocking", "--"], d)
    c.check(rc == 0 and raw_lines(f), tag + " --pid= --duration= --format= --output= --rate= --",
            (rc, err))
    f2 = os.path.join(d, "short.txt")
    rc, out, err = run([spy, "record", "-p%d" % pid, "-d1", "-fraw", "-o" + f2, "-r", "50",
                        "-ti"], d)
    c.check(rc == 0 and raw_lines(f2) and raw_lines(f2)[0].startswith("thread ("),
            tag + " short forms glued and clustered (-p123 -d1 -fraw -ti)", (rc, err))
    rc, out, err = run([spy, "record", "-p", str(pid), "-d", "1", "--native", "-f", "raw", "-o",
                        os.path.join(d, "native.txt")], d)
    c.check(rc == 0 and "native" in err, tag + " record --native: accepted, said on stderr",
            (rc, err))
    rc, out, err = run([spy, "record", "-p", str(pid), "-d", "1"], d)
    made = [n for n in os.listdir(d) if re.match(r"^%d-.*\.svg$" % pid, n)]
    c.check(rc == 0 and made, tag + " record without -o: py-spy's PID-TIME.svg", (rc, err,
                                                                                  os.listdir(d)))


def check_failures(tag, spy, pid, d):
    rc, out, err = run([spy, "top", "-p", str(pid)], d)
    c.check(rc == 1 and "sopctl watch" in err, tag + " top refused: 1", (rc, err))
    dead = gone_pid()
    rc, out, err = run([spy, "dump", "-p", str(dead)], d)
    c.check(rc == 1 and err.startswith("Error: Failed to open process") and not out,
            tag + " dump of a pid that does not exist: 1", (rc, out, err))
    rc, out, err = run([spy, "record", "-p", str(dead), "-o", os.path.join(d, "x.svg"), "-d",
                        "1"], d)
    c.check(rc == 1 and err.startswith("Error:"), tag + " record of a gone pid: 1", (rc, err))
    rc, out, err = run([spy, "dump", "-p", str(pid), "--bogus"], d)
    c.check(rc == 2 and "unexpected argument" in err, tag + " unknown option: 2", (rc, err))
    rc, out, err = run([spy, "record", "-p", str(pid), "-f", "svgz"], d)
    c.check(rc == 2, tag + " bad --format: 2", (rc, err))
    rc, out, err = run([spy, "dump"], d)
    c.check(rc == 2 and "--pid" in err, tag + " dump without --pid: 2", (rc, err))
    rc, out, err = run([spy, "record", "-o", "x.svg", "--", "python3", "x.py"], d)
    c.check(rc == 1, tag + " record -- PROGRAM refused: 1", (rc, err))
    if os.geteuid() == 0 and shutil.which("setpriv"):
        rc, out, err = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", spy,
                            "dump", "-p", str(pid)], d)
        c.check(rc == 1 and "permission" in err.lower(),
                tag + " another user's process: 1 and 'Permission' (Ray's hint)", (rc, err))


def check_until_signal(tag, spy, pid, d):
    path = os.path.join(d, "until.txt")
    p = subprocess.Popen([spy, "record", "-p", str(pid), "-o", path, "-f", "raw"], cwd=d,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    c.check(p.returncode == 0 and raw_lines(path) and "Control-C" in out,
            tag + " record without -d: until SIGINT, then the file", (p.returncode, out, err))


def check_target_exit(tag, spy, python, d):
    script = os.path.join(d, "short_lived.py")
    with open(script, "w") as f:
        f.write("import time\nprint('ready', flush=True)\nt = time.time()\n"
                "while time.time() - t < 1.0:\n    sum(range(1000))\n")
    p = start_target(python, script)
    path = os.path.join(d, "exit.txt")
    t0 = time.time()
    rc, out, err = run([spy, "record", "-p", str(p.pid), "-o", path, "-d", "10", "-f", "raw"], d)
    took = time.time() - t0
    stop(p)
    c.check(rc == 0 and took < 6 and "process exited" in out and raw_lines(path),
            tag + " target exits during record: 0, what was sampled written (%.1f s)" % took,
            (rc, out, err))


def check_python(python, d):
    """Every check against one interpreter's target."""
    tag = "[%s]" % os.path.basename(os.path.dirname(os.path.dirname(python)))
    spy = os.path.join(d, "py-spy")
    work = tempfile.mkdtemp(dir=d)
    script = os.path.join(work, "pyspy_target.py")
    with open(script, "w") as f:
        f.write(TARGET)
    p = start_target(python, script)
    try:
        check_dumps(tag, spy, p.pid, work)
        check_flamegraphs(tag, spy, p.pid, work)
        check_speedscope(tag, spy, p.pid, work)
        check_raw(tag, spy, p.pid, work, script)
        check_chrometrace(tag, spy, p.pid, work)
        check_forms(tag, spy, p.pid, work)
        check_failures(tag, spy, p.pid, work)
        check_until_signal(tag, spy, p.pid, work)
    except Exception as e:  # a thread's exception would be lost: count it
        c.check(False, tag + " checks ran to the end", repr(e))
    finally:
        stop(p)
    check_target_exit(tag, spy, python, work)


def main():
    if not os.path.exists(SOPCTL):
        print("sopctl not found at %s" % SOPCTL)
        sys.exit(1)
    d = tempfile.mkdtemp(prefix="sop-pyspy-")
    try:
        spy = os.path.join(d, "py-spy")
        os.symlink(os.path.abspath(SOPCTL), spy)
        rc, out, err = run([spy, "--version"], d)
        c.check(rc == 0 and re.match(r"^py-spy \d+\.\d+\.\d+ \(sop ", out),
                "py-spy --version: 0 and 'py-spy X.Y.Z (sop ...)'", (rc, out, err))
        rc, out, err = run([spy, "-V"], d)
        c.check(rc == 0 and out.startswith("py-spy "), "py-spy -V", (rc, out))
        for cmd in (["--help"], ["record", "--help"], ["dump", "--help"], ["help", "record"]):
            rc, out, err = run([spy] + cmd, d)
            c.check(rc == 0 and "Usage: py-spy" in out, "py-spy %s: 0" % " ".join(cmd), (rc, err))
        rc, out, err = run([spy], d)
        c.check(rc == 2, "py-spy alone: usage, 2", rc)
        rc, out, err = run([SOPCTL, "version"], d)
        c.check(rc == 0 and out.startswith("sopctl "), "sopctl under its own name is sopctl", out)
        pythons = [p for p in PYTHONS if os.path.exists(p)]
        if not pythons:
            print("skip: none of %s" % PYTHONS)
        # the interpreters side by side: each one's checks are windows of sampling (sleep, not
        # CPU), and none judges a time
        runners = [threading.Thread(target=check_python, args=(python, d)) for python in pythons]
        for r in runners:
            r.start()
        for r in runners:
            r.join()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
