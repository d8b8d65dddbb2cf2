#!/usr/bin/env python3
"""newest_targets.py — the newest CPython releases read from outside as a container's would be
(the newest tier, tests/e2e/newest.sh; Debian sid's 3.13-3.15 in the sid root):

1. GC state: thresholds, counts and collections equal what gc.get_threshold(), gc.get_count()
   and gc.get_stats() say in the target, on every interpreter (sid's 3.13-3.15, pyenv 3.8-3.13,
   Debian's python3.11).
2. One program read alike wherever it runs: chrooted in our mount namespace, in its own mount
   namespace (tests/e2e/sid/python3.X), in its own PID namespace, and in a podman container
   (--rootfs the sid root, runc): the same threads, frames, lines, GC thresholds and version.
3. A version newer than sop knows: sid's 3.15 with its version words patched to 3.16 in a copy of
   the executable. `dump` says "CPython 3.16: layout not known to this sop" (never "not a CPython
   process"), and `run` clears no Python check on evidence it did not read.
4. `record` and `run` on 3.14 and 3.15: a flame graph's folded stacks hold the spinning thread's
   frames; `run` names gil.contention for threads fighting over the GIL; the GIL's switch counter
   is read over a window on 3.13-3.15; an interpreter whose executable was deleted is read.
Needs root. Prints "N passed, N failed"."""
import glob
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sopt  # noqa: E402

C = sopt.Checks()
ROOT = os.environ.get("SOP_SID_ROOT", "/var/cache/sop/sid-root")

GC_PROGRAM = r"""
import gc, os, sys, json
t = gc.get_threshold(); c = gc.get_count(); s = [x["collections"] for x in gc.get_stats()]
line = "ready " + json.dumps({"thresholds": list(t), "counts": list(c), "collections": s}) + "\n"
os.write(1, line.encode())
import time
time.sleep(3600)
"""

PARKED = r"""
import os, sys, threading, time
def c(): time.sleep(3600)
def b(): c()
def a(): b()
threading.Thread(target=a, name="parked", daemon=True).start()
time.sleep(0.3)
os.write(1, b"ready\n")
def main_wait(): time.sleep(3600)
main_wait()
"""

SPIN = r"""
import os, sys, threading
def spin(n):
    x = 0
    while True:
        x += n
for i in range(3):
    threading.Thread(target=spin, args=(i,), name="spinner-%d" % i, daemon=True).start()
os.write(1, b"ready\n")
threading.Event().wait()
"""


dump = sopt.dump_json


def all_interpreters():
    out = [(tag, path) for tag, _, path in sopt.sid_interpreters()]
    for p in sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3")):
        v = p.split("/")[4]
        if int(v.split(".")[1]) >= 8:
            out.append((v, p))
    if os.path.exists("/usr/bin/python3.11"):
        out.append(("debian-3.11", "/usr/bin/python3.11"))
    return out


def gc_state():
    for tag, py in all_interpreters():
        with sopt.Target(argv=[py, "-u", "-c", GC_PROGRAM], timeout=60) as t:
            own = json.loads(t.ready_line.split(" ", 1)[1])
            rc, doc = dump(t.pid)
        gc = doc.get("gc", {})
        counts = gc.get("counts") or [None] * 3
        # the target allocates a few objects after reading its counts (the line it writes)
        near = counts[0] is not None and abs(counts[0] - own["counts"][0]) <= 20 and \
            counts[1:] == own["counts"][1:]
        C.check(rc == 0 and gc.get("thresholds") == own["thresholds"] and near and
                gc.get("collections") == own["collections"],
                "%s: GC thresholds, counts and collections as the target's gc module says" % tag,
                {"sop": gc, "target": own})


def frames_of(doc):
    out = {}
    for th in doc.get("threads", []):
        out[th.get("name")] = [(f.get("func"), f.get("line")) for f in th.get("frames", [])
                               if f.get("file", "").endswith("prog.py")]
    return out


def containers():
    """The same program in four places; every read must agree with the plain chroot's."""
    minor = "3.14"
    if not os.path.exists("%s/usr/bin/python%s" % (ROOT, minor)):
        C.check(False, "sid python%s present" % minor)
        return
    work = tempfile.mkdtemp(prefix="sop-newest-", dir="/tmp")
    os.makedirs(ROOT + work, exist_ok=True)
    prog = os.path.join(work, "prog.py")
    for path in (prog, ROOT + prog):
        with open(path, "w") as f:
            f.write(PARKED)
    reads = {}
    try:
        with sopt.Target(argv=["chroot", ROOT, "python" + minor, "-u", prog], timeout=60) as t:
            reads["chroot"] = dump(t.pid)
        with sopt.Target(argv=[os.path.join(sopt.SID, "python" + minor), "-u", prog],
                         timeout=60) as t:
            reads["mount namespace"] = dump(t.pid)
        # a PID namespace: the interpreter is the child of unshare's fork (--kill-child: it
        # ends with unshare; ended by its pid below as well, since it outlived a killed unshare)
        with sopt.Target(argv=["unshare", "--pid", "--fork", "--kill-child", "--mount",
                               "--mount-proc=%s/proc" % ROOT, "chroot", ROOT, "python" + minor,
                               "-u", prog], timeout=60) as t:
            kids = subprocess.run(["pgrep", "-P", str(t.pid)], capture_output=True,
                                  text=True).stdout.split()
            try:
                reads["pid namespace"] = dump(int(kids[0])) if kids else \
                    (3, {"error": "no child"})
            finally:
                for k in kids:
                    try:
                        os.kill(int(k), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        if shutil.which("podman"):
            name = "sop-newest-%d" % os.getpid()
            argv = ["podman", "--runtime", "runc", "run", "--rm", "--name", name,
                    "--network", "none", "--ulimit", "nofile=4096:4096", "--ulimit",
                    "nproc=4096:4096", "-i", "-v", "%s:%s" % (work, work), "--rootfs", ROOT,
                    "python" + minor, "-u", prog]
            try:
                with sopt.Target(argv=argv, timeout=120) as t:
                    pid = subprocess.run(["podman", "inspect", "--format", "{{.State.Pid}}", name],
                                         capture_output=True, text=True).stdout.strip()
                    reads["podman"] = dump(int(pid)) if pid.isdigit() else \
                        (3, {"error": "podman inspect: %r" % pid})
            finally:
                subprocess.run(["podman", "rm", "-f", name], capture_output=True)
        else:
            print("skip podman: not installed (scripts/install-deps.sh installs it)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(ROOT + work, ignore_errors=True)
    base_rc, base = reads["chroot"]
    want = frames_of(base)
    C.check(base_rc == 0 and want.get("parked", [])[:3] == [("c", 3), ("b", 4), ("a", 5)] and
            [f for f, _ in want.get("MainThread", [])] == ["main_wait", "<module>"],
            "chroot: the parked thread and the main thread read", base.get("error") or want)
    for where, (rc, doc) in reads.items():
        C.check(rc == 0 and frames_of(doc) == want and
                doc.get("python", {}).get("version") == base.get("python", {}).get("version") and
                doc.get("gc", {}).get("thresholds") == base.get("gc", {}).get("thresholds"),
                "%s: read as the chroot's (threads, frames, lines, version, GC)" % where,
                doc.get("error") or {"got": frames_of(doc), "want": want})


TOKEN = r"""
import os, threading
a, b = threading.Event(), threading.Event()
def ping():
    while True:
        a.wait(); a.clear(); b.set()
def pong():
    while True:
        b.wait(); b.clear(); a.set()
threading.Thread(target=ping, daemon=True).start()
threading.Thread(target=pong, daemon=True).start()
a.set()
os.write(1, b"ready\n")
threading.Event().wait()
"""


def gil_counter_and_deleted():
    """The GIL's switch counter over a window (two threads passing a token through Events hand
    the GIL over thousands of times a second), and an interpreter whose executable was deleted
    after it started (read through /proc/PID/map_files)."""
    for tag, minor, py in sopt.sid_interpreters():
        with sopt.Target(argv=[py, "-u", "-c", TOKEN], timeout=60) as t:
            r = subprocess.run([sopt.SOPCTL, "evidence", "--pid", str(t.pid), "--duration", "1"],
                               capture_output=True, text=True, timeout=120)
        try:
            conc = json.loads(r.stdout)["python"]["concurrency"]
        except (ValueError, KeyError):
            conc = {}
        C.check((conc.get("gil_switches_per_s") or 0) >= 1000 and
                conc.get("gil_interval_us") == 5000,
                "%s: the GIL's switch counter and interval read over the window" % tag, conc)
    src = "%s/usr/bin/python3.14" % ROOT
    if not os.path.exists(src):
        return
    gone = "/usr/local/bin/python3.14-sop-deleted"
    shutil.copyfile(src, ROOT + gone)
    os.chmod(ROOT + gone, 0o755)
    try:
        with sopt.Target(argv=["chroot", ROOT, gone, "-u", "-c", PARKED], timeout=60) as t:
            os.unlink(ROOT + gone)
            rc, doc = dump(t.pid)
    finally:
        if os.path.exists(ROOT + gone):
            os.unlink(ROOT + gone)
    names = [th.get("name") for th in doc.get("threads", [])]
    C.check(rc == 0 and "parked" in names and doc.get("python", {}).get("version", "")
            .startswith("3.14"), "deleted executable: read through its mapping", doc.get("error")
            or names)


def elf_symbol_offset(path, name):
    """File offset of symbol `name` (readelf -s, then the section's address-to-offset)."""
    syms = subprocess.run(["readelf", "-sW", path], capture_output=True, text=True).stdout
    addr = None
    for ln in syms.splitlines():
        parts = ln.split()
        if len(parts) >= 8 and parts[7] == name:
            addr = int(parts[1], 16)
    secs = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    for ln in secs.splitlines():
        parts = ln.replace("[ ", "[").split()
        if len(parts) >= 6 and parts[0].startswith("[") and addr is not None:
            try:
                sa, so, sz = int(parts[3], 16), int(parts[4], 16), int(parts[5], 16)
            except ValueError:
                continue
            if sa and sa <= addr < sa + sz:
                return so + (addr - sa)
    return None


def newer_than_known():
    src = "%s/usr/bin/python3.15" % ROOT
    if not os.path.exists(src):
        C.check(False, "sid python3.15 present")
        return
    dst = "%s/usr/local/bin/python3.16-sop-test" % ROOT
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o755)
    try:
        with open(dst, "r+b") as f:
            for sym, off_in in (("_PyRuntime", 8), ("Py_Version", 0)):
                off = elf_symbol_offset(dst, sym)
                C.check(off is not None, "3.16 copy: %s found" % sym)
                f.seek(off + off_in)
                old = struct.unpack("<I", f.read(4))[0]
                C.check(old >> 16 == 0x030F, "3.16 copy: %s held 3.15 (0x%x)" % (sym, old))
                f.seek(off + off_in)
                f.write(struct.pack("<I", (old & 0xFFFF) | 0x03100000))
        with sopt.Target(argv=["chroot", ROOT, "/usr/local/bin/python3.16-sop-test", "-u", "-c",
                               SPIN], timeout=60) as t:
            r = subprocess.run([sopt.SOPCTL, "dump", "--pid", str(t.pid)], capture_output=True,
                               text=True, timeout=60)
            rr = subprocess.run([sopt.SOPCTL, "run", "--pid", str(t.pid), "--duration", "1",
                                 "--format", "json", "--all"], capture_output=True, text=True,
                                timeout=120)
    finally:
        os.unlink(dst)
    text = r.stdout + r.stderr
    C.check(r.returncode != 0 and "CPython 3.16" in text and "layout not known to this sop" in text
            and "not a CPython process" not in text,
            "3.16: dump says the layout is not known, never 'not a CPython process'", text[-600:])
    try:
        rep = json.loads(rr.stdout)
    except ValueError:
        rep = {}
    cleared = {c.get("id"): c for c in rep.get("cleared", [])}
    unknown = {c.get("id"): c for c in rep.get("unknown", [])}
    python_rules = ["gil.contention", "gil.handoff_churn", "gil.free_threaded", "perrow.tiny_ops",
                    "numpy.hidden_copies", "asyncio.loop_blocked", "dataloader.starved"]
    wrong = [i for i in python_rules if i in cleared]
    C.check(rep and not wrong and all(i in unknown for i in python_rules),
            "3.16: run clears no Python check it could not read (unknown instead)",
            {"cleared": {i: cleared[i].get("reason") for i in wrong},
             "missing": [i for i in python_rules if i not in unknown]})
    why = (unknown.get("gil.free_threaded") or {}).get("reason", "")
    C.check("3.16" in why, "3.16: gil.free_threaded unknown, saying why", why)


def record_and_run():
    for tag, minor, py in sopt.sid_interpreters():
        if minor < 14:
            continue
        out = "/tmp/sop-newest-rec-%d.txt" % os.getpid()
        with sopt.Target(argv=[py, "-u", "-c", SPIN], timeout=60) as t:
            r = subprocess.run([sopt.SOPCTL, "record", "--pid", str(t.pid), "--duration", "1",
                                "-o", out], capture_output=True, text=True, timeout=120)
            rr = subprocess.run([sopt.SOPCTL, "run", "--pid", str(t.pid), "--duration", "2",
                                 "--format", "json"], capture_output=True, text=True, timeout=120)
        try:
            with open(out) as f:
                rec = f.read()
            os.unlink(out)
        except OSError:
            rec = ""
        C.check(r.returncode == 0 and any("spin" in ln and "spinner-" in ln
                                          for ln in rec.splitlines()),
                "%s record: folded stacks of the spinning threads" % tag,
                (r.stderr[-300:], rec[:300]))
        try:
            rep = json.loads(rr.stdout)
        except ValueError:
            rep = {}
        ids = [f.get("id") for f in rep.get("findings", [])]
        C.check("gil.contention" in ids, "%s run: three spinning threads draw gil.contention" % tag,
                ids or rr.stderr[-300:])


def main():
    if not sopt.sid_interpreters():
        print("skip: no sid interpreters (SOP_PYTHONS=sid and scripts/sid-root.sh; "
              "tests/e2e/newest.sh does both)")
        sys.exit(77)
    for fn in (gc_state, containers, newer_than_known, record_and_run, gil_counter_and_deleted):
        try:
            fn()
        except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
            C.check(False, fn.__name__ + ": ran", repr(e)[:400])
    C.done()


if __name__ == "__main__":
    main()
