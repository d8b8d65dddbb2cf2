"""test_harden3.py — hardening round 3 (issue 28): a root sopctl that a target run as `nobody`
cannot steer. Each test is the one that failed before its fix:
- source lines: a frame whose file name is a symlink to a root-only file, or a readable file
  in a root-only directory, is never quoted; a file the target can read is (the control);
- a FIFO at a mapped libpython's `... (deleted)` path never blocks evidence/dump/heap/watch,
  and SIGTERM stops a watch;
- `watch --out`: a directory others can write is refused; reports are 0600, temp files are
  never followed through a planted symlink; `-o` through another user's symlink is refused;
- heap census amplification (lists that claim 2^40 items): bounded reads and pause, partial;
- fake ranks (another user's processes with RANK/WORLD_SIZE) are not the job;
- a process whose main thread exited (zombie leader) works with every command.
Run as root (skips otherwise). TESTS=name1,name2 runs a subset."""
import glob
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from sopt import SOPCTL, PY, Checks, Target, sopctl  # noqa: E402

C = Checks()


def check(what, cond, detail=""):
    return C.check(cond, what, detail)


def as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def scratch():
    d = tempfile.mkdtemp(prefix="sop-h3-", dir="/tmp")
    os.chmod(d, 0o755)
    return d


# Each "file" the target runs code from has the marker on every line: whichever line a sample
# lands on, its text would carry the marker if it were read.
def marker_file(path, marker, mode):
    with open(path, "w") as f:
        for i in range(1, 41):
            f.write("%s_%02d = %d\n" % (marker, i, i))
    os.chmod(path, mode)


SPIN = r"""
import sys, threading, time
def start(fname):
    ns = {}
    exec(compile("def spin():\n    x = 0\n    while True:\n        x += 1\n", fname, "exec"), ns)
    threading.Thread(target=ns["spin"], daemon=True).start()
for fname in sys.argv[1:]:
    start(fname)
print("ready", flush=True)
time.sleep(600)
"""


def test_source_lines():
    d = scratch()
    try:
        marker_file(os.path.join(d, "readable.py"), "READABLE_CONTROL", 0o644)
        marker_file(os.path.join(d, "rootonly.py"), "ROOTONLY_SECRET", 0o600)
        os.mkdir(os.path.join(d, "closed"), 0o700)
        marker_file(os.path.join(d, "closed", "inner.py"), "CLOSEDDIR_SECRET", 0o644)
        os.symlink(os.path.join(d, "rootonly.py"), os.path.join(d, "link_rootonly.py"))
        os.symlink("closed/inner.py", os.path.join(d, "link_closed.py"))
        files = [os.path.join(d, n) for n in ("readable.py", "link_rootonly.py",
                                              "link_closed.py", "rootonly.py")]
        with Target(None, argv=[PY, "-u", "-c", SPIN] + files, preexec_fn=as_nobody) as t:
            outs = {}
            code, out, err = sopctl("evidence", "--pid", t.pid, "--duration", "1.5")
            check("source: evidence ran", code == 0, err[:300])
            outs["evidence"] = out
            for fmt in ("json", "md"):
                code, out, err = sopctl("run", "--pid", t.pid, "--duration", "1", "--format", fmt)
                check("source: run --format %s ran" % fmt, code in (0, 1), err[:300])
                outs["run " + fmt] = out
            check("source: a file the target can read is quoted (control)",
                  "READABLE_CONTROL" in outs["evidence"], outs["evidence"][:2000])
            for name, text in outs.items():
                check("source: %s quotes no root-only file (via symlink or not)" % name,
                      "ROOTONLY_SECRET" not in text, name)
                check("source: %s quotes nothing from a directory the target cannot search"
                      % name, "CLOSEDDIR_SECRET" not in text, name)
    finally:
        shutil.rmtree(d, ignore_errors=True)


FIFO_LIB = r"""
import mmap, os, sys, time
src, d = sys.argv[1], sys.argv[2]
lib = os.path.join(d, os.path.basename(src))
with open(src, "rb") as f, open(lib, "wb") as g:
    g.write(f.read())
fd = os.open(lib, os.O_RDONLY)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
os.close(fd)
os.unlink(lib)
os.mkfifo(lib + " (deleted)")
print("ready", flush=True)
time.sleep(600)
"""


def libpython():
    for p in sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libpython3*.so.1.0") +
                    glob.glob("/usr/lib/aarch64-linux-gnu/libpython3*.so.1.0")):
        return p
    return None


def timed_sopctl(args, timeout):
    t0 = time.time()
    try:
        code, out, err = sopctl(*args, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", "timed out", time.time() - t0
    return code, out, err, time.time() - t0


def test_fifo_at_mapped_library():
    lib = libpython()
    if not lib:
        print("note: no libpython3*.so.1.0 to map; FIFO check skipped")
        return
    d = scratch()
    os.chown(d, 65534, 65534)
    try:
        with Target(None, argv=[PY, "-u", "-c", FIFO_LIB, lib, d], preexec_fn=as_nobody) as t:
            maps = open("/proc/%d/maps" % t.pid).read()
            check("fifo: the target maps a deleted libpython", "(deleted)" in maps and
                  os.path.basename(lib) in maps)
            check("fifo: a FIFO sits at the (deleted) path", any(
                stat.S_ISFIFO(os.stat(os.path.join(d, n)).st_mode) for n in os.listdir(d)))
            for args in (("evidence", "--pid", t.pid, "--duration", "0.5"),
                         ("run", "--pid", t.pid, "--duration", "0.5"),
                         ("dump", "--pid", t.pid),
                         ("dump", "--pid", t.pid, "--native"),
                         ("heap", "--pid", t.pid)):
                code, out, err, wall = timed_sopctl(args, 60)
                check("fifo: %s answers (%.1f s, exit %s)" % (args[0] + (
                    " --native" if "--native" in args else ""), wall, code),
                      code is not None and code in (0, 1, 3) and wall < 30, err[:300])
            # watch: windows keep finishing, SIGTERM stops it
            w = subprocess.Popen([SOPCTL, "watch", "--pid", str(t.pid), "--every", "0.5",
                                  "--duration", "0.2", "--count", "3"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                w.communicate(timeout=40)
                check("fifo: watch finished its 3 windows (exit %s)" % w.returncode,
                      w.returncode == 0)
            except subprocess.TimeoutExpired:
                w.kill()
                w.communicate()
                check("fifo: watch finished its 3 windows", False, "hung")
            w = subprocess.Popen([SOPCTL, "watch", "--pid", str(t.pid), "--every", "0.5",
                                  "--duration", "0.2"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(2)
            w.send_signal(signal.SIGTERM)
            try:
                w.communicate(timeout=15)
                check("fifo: SIGTERM stops watch (exit %s)" % w.returncode, w.returncode == 0)
            except subprocess.TimeoutExpired:
                w.kill()
                w.communicate()
                check("fifo: SIGTERM stops watch", False, "still running 15 s after SIGTERM")
    finally:
        shutil.rmtree(d, ignore_errors=True)


IDLE = "import time\nprint('ready', flush=True)\ntime.sleep(600)\n"


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_out_dir():
    d = scratch()
    try:
        victim = os.path.join(d, "victim")
        with open(victim, "w") as f:
            f.write("untouched\n")
        shared = os.path.join(d, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        theirs = os.path.join(d, "theirs")
        os.mkdir(theirs, 0o755)
        os.chown(theirs, 65534, 65534)
        with Target(IDLE) as t:
            for name, path, why in (("others can write", shared, "writable by others"),
                                    ("another user's", theirs, "owned by uid 65534")):
                code, out, err = sopctl("watch", "--pid", t.pid, "--out", path, "--count", "1",
                                        "--every", "0.2", "--duration", "0.1", timeout=60)
                check("out: --out in a directory %s is refused (exit %d)" % (name, code),
                      code == 2 and why in err, err[:300])
            code, out, err = sopctl("watch", "--pid", t.pid, "--out", shared, "--out-mode", "0666")
            check("out: --out-mode 0666 is refused", code == 2, err[:300])
            # -o FILE: a symlink another user planted in a directory others can write
            planted = os.path.join(shared, "report.json")
            os.symlink(victim, planted)
            os.lchown(planted, 65534, 65534)
            code, out, err = sopctl("evidence", "--pid", t.pid, "-o", planted)
            check("out: -o through another user's symlink is refused (exit %d)" % code,
                  code == 2 and "refused" in err, err[:300])
            check("out: the victim is untouched", open(victim).read() == "untouched\n")
            fresh = os.path.join(d, "fresh.json")
            code, out, err = sopctl("evidence", "--pid", t.pid, "-o", fresh)
            check("out: -o FILE is created 0600 (%o)" % (mode_of(fresh) if os.path.exists(
                fresh) else 0), code == 0 and mode_of(fresh) == 0o600, err[:300])
            own = os.path.join(d, "own")
        t = Target(IDLE)
        w = subprocess.Popen([SOPCTL, "watch", "--pid", str(t.pid), "--out", own, "--every",
                              "0.3", "--duration", "0.1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        # the names the old writer used for its temporaries, planted now
        stamp = time.strftime("%Y%m%dT%H%M", time.gmtime())
        for sec in range(60):
            for seq in range(1, 12):
                for ext in ("json", "md"):
                    try:
                        os.symlink(victim, os.path.join(own, "sop-%d-%s%02dZ-%d-postmortem.%s.tmp"
                                                        % (t.pid, stamp, sec, seq, ext)))
                    except OSError:
                        pass
        t.stop()
        try:
            out, err = w.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            out, err = w.communicate()
        check("out: the directory made is 0700 (%o)" % mode_of(own), mode_of(own) == 0o700)
        reports = [n for n in os.listdir(own) if n.endswith((".json", ".md"))]
        check("out: the post-mortem was written (%s)" % reports, len(reports) == 2, err[-600:])
        check("out: reports are 0600", reports and all(
            mode_of(os.path.join(own, n)) == 0o600 for n in reports),
            [(n, oct(mode_of(os.path.join(own, n)))) for n in reports])
        check("out: no temporary left behind", not [
            n for n in os.listdir(own) if n.startswith(".sop-")])
        check("out: the planted symlinks were not followed",
              open(victim).read() == "untouched\n")
    finally:
        shutil.rmtree(d, ignore_errors=True)


# 50,000 one-item lists that claim 2^40 items and point at one 65,536-item array: every list
# the census scans would read 512 KiB (25 GB in all). The GC is off, so the target itself
# never looks at them.
AMPLIFY = r"""
import ctypes, gc, sys, time
gc.disable()
big = [str(i) for i in range(65536)]
big_items = ctypes.c_void_p.from_address(id(big) + 24).value
liars = [[0] for _ in range(50000)]
for l in liars:
    ctypes.c_ssize_t.from_address(id(l) + 16).value = 1 << 40
    ctypes.c_void_p.from_address(id(l) + 24).value = big_items
print("ready", flush=True)
time.sleep(600)
"""


def test_heap_amplification():
    with Target(AMPLIFY, timeout=60) as t:
        for args in (("heap", "--pid", t.pid, "--json"),
                     ("heap", "--pid", t.pid, "--stop", "--json")):
            t0 = time.time()
            try:
                code, out, err = sopctl(*args, timeout=120)
            except subprocess.TimeoutExpired:
                code, out, err = None, "", "timed out"
            wall = time.time() - t0
            name = " ".join(str(a) for a in args[:1] + args[3:4])
            check("heap amplification: %s answers in %.1f s (< 8)" % (name, wall),
                  code == 0 and wall < 8, err[:300])
            doc = {}
            try:
                doc = json.loads(out) if code == 0 else {}
            except ValueError:
                pass
            h = doc.get("heap", doc)
            check("heap amplification: %s is marked partial" % name,
                  h.get("complete") is False and "budget" in str(h.get("partial", "")),
                  str(h)[:600])
            if "--stop" in args:
                check("heap amplification: pause %.0f ms (< 4000)" % h.get("pause_ms", -1),
                      0 <= h.get("pause_ms", -1) < 4000, str(h)[:300])
        st = open("/proc/%d/stat" % t.pid).read().rsplit(")", 1)[1].split()[0]
        check("heap amplification: the target runs on (%s)" % st, st not in ("t", "T"))


# Another user's processes that set RANK/LOCAL_RANK/WORLD_SIZE: 300 `sleep`s under one shell of
# nobody's; and nobody's Python processes under a root "launcher".
FAKE_RANKS = r"""
import os, subprocess, sys, time
kids = []
for i in range(300):
    env = dict(os.environ, RANK=str(i), LOCAL_RANK=str(i), WORLD_SIZE="300")
    kids.append(subprocess.Popen(["sleep", "600"], env=env))
print("ready", flush=True)
time.sleep(600)
"""
FOREIGN_UNDER_ROOT = r"""
import os, subprocess, sys, time
def drop():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
kids = []
for i in range(2):
    env = dict(os.environ, RANK=str(i), LOCAL_RANK=str(i), WORLD_SIZE="2")
    kids.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                 env=env, preexec_fn=drop))
print("ready", flush=True)
time.sleep(600)
"""


def test_fake_ranks():
    def nobody_session():
        os.setsid()  # its sleeps are ended with it (killpg), not left to run on
        as_nobody()

    fake = Target(FAKE_RANKS, preexec_fn=nobody_session, timeout=60)
    try:
        t0 = time.time()
        code, out, err = sopctl("run", "--ranks", "--duration", "0.2", "--format", "json",
                                timeout=120)
        wall = time.time() - t0
        check("ranks: 300 fake sleeps are no job (exit %d, %.1f s)" % (code, wall),
              code == 3 and "no rank found" in err and wall < 10, err[:400])
    finally:
        try:
            os.killpg(fake.pid, signal.SIGKILL)
        except OSError:
            pass
        fake.stop()
    with Target(FOREIGN_UNDER_ROOT, preexec_fn=os.setsid, timeout=60) as t:
        time.sleep(0.5)
        code, out, err = sopctl("run", "--ranks", "--pid", t.pid, "--duration", "0.2",
                                timeout=120)
        check("ranks: another user's Python under the launcher is not a rank (exit %d)" % code,
              code == 3 and "another user" in err, err[:400])
        try:
            os.killpg(t.pid, signal.SIGKILL)
        except OSError:
            pass


# A live process whose main thread exited (pthread_exit): its leader is a zombie, a worker runs.
ZOMBIE_LEADER = r"""
import ctypes, threading, time
def zombie_leader_worker():
    print("ready", flush=True)
    x = 0
    while True:
        x += 1
threading.Thread(target=zombie_leader_worker).start()
time.sleep(0.3)
ctypes.CDLL(None).pthread_exit(None)
"""


def test_zombie_leader():
    with Target(ZOMBIE_LEADER) as t:
        time.sleep(0.5)
        st = open("/proc/%d/stat" % t.pid).read().rsplit(")", 1)[1].split()[0]
        check("zombie leader: the leader is a zombie (%s), the process lives" % st, st == "Z" and
              len(os.listdir("/proc/%d/task" % t.pid)) >= 2)
        for args, want in ((("dump", "--pid", t.pid), "zombie_leader_worker"),
                           (("dump", "--pid", t.pid, "--native"), "zombie_leader_worker"),
                           (("heap", "--pid", t.pid), "objects"),
                           (("heap", "--pid", t.pid, "--stop"), "objects"),
                           (("watch", "--pid", t.pid, "--count", "1", "--every", "0.3",
                             "--duration", "0.3"), "window #1")):
            code, out, err = sopctl(*args, timeout=60)
            name = " ".join(str(a) for a in args if not str(a).isdigit() and a != "--pid")
            check("zombie leader: %s works (exit %d)" % (name, code),
                  code == 0 and want in out + err, (out + err)[:400])
        code, out, err = sopctl("run", "--pid", t.pid, "--duration", "0.3")
        check("zombie leader: run works (exit %d)" % code, code in (0, 1), err[:300])


def test_exited_unreaped():
    # A process that has exited but whose parent has not waited yet (an OOM kill on a busy host):
    # no current state to diagnose, a clear exit 3 rather than a report of a live process.
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        for args in (("run", "--pid", p.pid), ("run", "--pid", p.pid, "--duration", "0.2")):
            code, out, err = sopctl(*args)
            check("exited, not reaped: %s: exit 3 naming the zombie (exit %d)"
                  % (" ".join(str(a) for a in args[3:]) or "snapshot", code),
                  code == 3 and "zombie" in err, (out + err)[:300])
    finally:
        p.wait()


TESTS = [test_source_lines, test_fifo_at_mapped_library, test_out_dir, test_heap_amplification,
         test_fake_ranks, test_zombie_leader, test_exited_unreaped]


def main():
    if os.geteuid() != 0:
        print("note: needs root (targets run as nobody); skipped")
        sys.exit(0)
    want = [w for w in os.environ.get("TESTS", "").split(",") if w]
    for t in TESTS:
        if not want or any(w in t.__name__ for w in want):
            t()
    C.done()


if __name__ == "__main__":
    main()
