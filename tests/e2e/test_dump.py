# test_dump.py — `sopctl dump` against real CPython targets (label e2e): for every interpreter
# from /root/.pyenv/versions 3.8-3.13 and Debian's /usr/bin/python3.11, a target with known
# call chains in several threads; plus deep recursion, a target exiting during the dump, a
# non-Python target, ptrace refused (seccomp), and SIGKILL of `dump --native` at random
# moments. Needs root (reads other processes' memory). Prints "N passed, N failed".
import ctypes
import glob
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

SOPCTL = os.environ.get("SOPCTL") or os.path.join(os.environ.get("SOP_BUILD", "build"), "sopctl")
SRC = os.environ.get("SOP_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TARGETS = os.path.join(SRC, "tests", "e2e", "targets")
THREADS_TARGET = os.path.join(TARGETS, "py_threads_target.py")
DEEP_TARGET = os.path.join(TARGETS, "py_deep_target.py")

passed = 0
failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail), flush=True)
    return cond


def markers(path):
    """LINE_* markers of a target script -> line numbers (so the test and target agree)."""
    out = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"# (LINE_[A-Z_]+)", line)
            if m:
                out[m.group(1)] = i
    return out


def interpreters():
    found = []
    for minor in range(8, 14):
        paths = sorted(glob.glob("/root/.pyenv/versions/3.%d.*/bin/python3.%d" % (minor, minor)))
        if paths:
            found.append(paths[-1])
        else:
            print("note: no pyenv CPython 3.%d; skipped" % minor)
    if os.path.exists("/usr/bin/python3.11"):
        found.append("/usr/bin/python3.11")
    else:
        print("note: no /usr/bin/python3.11; skipped")
    return found


def start(argv, ready=True, timeout=20):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if ready:
        line = p.stdout.readline()
        if line.strip() != "ready":
            p.kill()
            raise RuntimeError("target %s did not get ready: %r %s" % (argv, line,
                                                                        p.stderr.read()))
        time.sleep(0.1)  # let the threads settle into their waits
    return p


def stop(p):
    if p.poll() is None:
        p.kill()
    p.wait()


def dump(pid, *extra, preexec=None, timeout=60):
    env = None
    if preexec:  # a seccomp filter may deny ptrace, which LeakSanitizer needs (sanitized builds)
        env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    r = subprocess.run([SOPCTL, "dump", "--pid", str(pid)] + list(extra), capture_output=True,
                       text=True, timeout=timeout, preexec_fn=preexec, env=env)
    return r


def task_states(pid):
    states = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                states[int(t)] = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            pass
    return states


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def find_thread(doc, func):
    for t in doc.get("threads", []):
        if t["frames"] and t["frames"][0]["func"] == func:
            return t
    return None


def check_threads_doc(tag, doc, pid, M, minor):
    def fr(t, i):
        f = t["frames"][i]
        return (f["func"], os.path.basename(f["file"]), f.get("line"))

    tgt = "py_threads_target.py"
    check(tag + " version", doc["python"]["version"].startswith("3.%d." % minor),
          doc["python"].get("version"))
    tids = sorted(t.get("tid", 0) for t in doc["threads"])
    check(tag + " tids are the OS threads", tids == sorted(task_states(pid)), "%s" % tids)

    busy = find_thread(doc, "busy_leaf")
    if check(tag + " busy thread found", busy is not None, json.dumps(doc)[:2000]):
        check(tag + " busy frames", [fr(busy, 0), fr(busy, 1)] ==
              [("busy_leaf", tgt, M["LINE_BUSY"]), ("busy_outer", tgt, M["LINE_BUSY_OUTER"])],
              "%s" % busy["frames"][:3])
        check(tag + " busy holds the GIL", busy["gil"] is True and
              doc.get("gil_holder_tid") == busy.get("tid"),
              "gil=%s holder=%s tid=%s" % (busy["gil"], doc.get("gil_holder_tid"),
                                           busy.get("tid")))
        check(tag + " busy active", busy["state"] == "active", busy["state"])
        check(tag + " busy outer frames are threading's",
              busy["frames"][-1]["func"] in ("Thread._bootstrap", "_bootstrap"),
              busy["frames"][-1]["func"])

    sl = find_thread(doc, "sleepy")
    if check(tag + " sleeper found", sl is not None):
        want = [("sleepy", tgt, M["LINE_SLEEP"])] + [("sleepy", tgt, M["LINE_SLEEP_REC"])] * 3
        check(tag + " sleeper frames", [fr(sl, i) for i in range(4)] == want,
              "%s" % sl["frames"][:5])
        check(tag + " sleeper idle, no GIL", sl["state"] == "idle" and not sl["gil"],
              "%s %s" % (sl["state"], sl["gil"]))

    lk = find_thread(doc, "blocked")
    if check(tag + " lock waiter found", lk is not None):
        check(tag + " lock waiter frame", fr(lk, 0) == ("blocked", tgt, M["LINE_LOCK"]),
              "%s" % lk["frames"][:2])
        check(tag + " lock waiter idle", lk["state"] == "idle" and not lk["gil"], lk["state"])
        check(tag + " lock waiter name (threading's, exact)",
              lk.get("name") == "locked\x1b[31m\n\u540d", repr(lk.get("name")))
    for func, name in (("busy_leaf", "busy"), ("sleepy", "sleeper")):
        t = find_thread(doc, func)
        check(tag + " thread name " + name, t is not None and t.get("name") == name,
              repr(t and t.get("name")))

    main = [t for t in doc["threads"] if t.get("tid") == pid]
    if check(tag + " main thread found", len(main) == 1):
        m = main[0]
        names = [fr(m, i) for i in range(len(m["frames"]))]
        check(tag + " main waits in join",
              names[-2:] == [("main", tgt, M["LINE_MAIN_JOIN"]), ("<module>", tgt,
                                                                  M["LINE_MODULE"])]
              and any(n[0].endswith("join") for n in names), "%s" % names)
        check(tag + " main idle", m["state"] == "idle" and not m["gil"], m["state"])
        check(tag + " main named", m.get("name") == "MainThread", m.get("name"))


def test_matrix():
    M = markers(THREADS_TARGET)
    for py in interpreters():
        minor = int(re.search(r"python3\.(\d+)$", py).group(1))
        tag = py
        p = start([py, THREADS_TARGET])
        try:
            r = dump(p.pid, "--json")
            if not check(tag + " dump exit 0", r.returncode == 0, r.stderr):
                continue
            doc = json.loads(r.stdout)
            check(tag + " pid", doc["pid"] == p.pid)
            check(tag + " executable", os.path.realpath(doc["python"]["executable"]) ==
                  os.path.realpath(py), doc["python"].get("executable"))
            check(tag + " no missing evidence", "missing_evidence" not in doc,
                  "%s" % doc.get("missing_evidence"))
            check_threads_doc(tag, doc, p.pid, M, minor)
            # Text form: py-spy-like header and frame lines.
            r = dump(p.pid)
            check(tag + " text header", r.returncode == 0 and
                  r.stdout.startswith("Process %d: " % p.pid) and
                  "\nPython v3.%d." % minor in r.stdout, r.stdout[:200])
            busy_file = find_thread(doc, "busy_leaf")["frames"][0]["file"]
            check(tag + " text frame line", "    busy_leaf (%s:%d)\n" %
                  (busy_file, M["LINE_BUSY"]) in r.stdout, r.stdout[:1500])
            check(tag + " text escapes control characters",
                  '"locked\\x1b[31m\\x0a\u540d"' in r.stdout and "\x1b" not in r.stdout,
                  repr(r.stdout[-400:]))
            check(tag + " text thread header",
                  re.search(r'^Thread 0x[0-9A-F]+ \(active\+gil\)', r.stdout, re.M) is not None,
                  r.stdout[:600])
            # --native: same Python frames, merged with native ones; the target runs on.
            r = dump(p.pid, "--json", "--native")
            if check(tag + " native exit 0", r.returncode == 0, r.stderr):
                nd = json.loads(r.stdout)
                busy = find_thread(nd, "busy_leaf")
                ok = busy is not None and "native" in busy
                if check(tag + " native present", ok, r.stdout[:800]):
                    pyf = [f["func"] for f in busy["native"] if f.get("lib") == "python"]
                    check(tag + " native merge keeps Python order",
                          pyf == [f["func"] for f in busy["frames"]], "%s" % pyf)
                    check(tag + " native frames present",
                          any(f.get("lib") not in (None, "python") for f in busy["native"]),
                          "%s" % busy["native"][:6])
                    check(tag + " eval frames replaced", not any(
                        f["func"] == "_PyEval_EvalFrameDefault" for f in busy["native"]),
                        "%s" % [f["func"] for f in busy["native"]])
                sl = find_thread(nd, "sleepy")
                check(tag + " native sleeper in a sleep call", sl is not None and any(
                    "sleep" in f["func"] for f in sl.get("native", [])[:4]),
                    "%s" % (sl and [f["func"] for f in sl.get("native", [])[:6]]))
            st = task_states(p.pid)
            check(tag + " target not stopped after --native",
                  all(s not in "tT" for s in st.values()), "%s" % st)
        finally:
            stop(p)


def test_deep():
    M = markers(DEEP_TARGET)
    py = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable
    for depth, bounded in ((1000, False), (3000, True)):
        p = start([py, DEEP_TARGET, str(depth)])
        try:
            t0 = time.monotonic()
            r = dump(p.pid, "--json")
            ms = (time.monotonic() - t0) * 1e3
            if not check("deep %d exit 0" % depth, r.returncode == 0, r.stderr):
                continue
            t = json.loads(r.stdout)["threads"][0]
            fr = t["frames"]
            check("deep %d top frame" % depth, fr[0]["func"] == "deep" and
                  fr[0]["line"] == M["LINE_DEEP_SLEEP"], "%s" % fr[:2])
            check("deep %d next frames" % depth, all(
                f["func"] == "deep" and f["line"] == M["LINE_DEEP_REC"] for f in fr[1:50]))
            if bounded:
                check("deep 3000 bounded at 2048 + truncated",
                      len(fr) == 2048 and t.get("truncated") is True, "%d" % len(fr))
            else:
                check("deep 1000 complete", len(fr) == 1002 and fr[-1]["func"] == "<module>"
                      and not t.get("truncated"), "%d %s" % (len(fr), fr[-1]))
            check("deep %d fast (%.0f ms)" % (depth, ms), ms < 2000)
        finally:
            stop(p)


def test_churn():
    """Torn reads: threads and stacks change under the reader. Every dump must end quickly
    and cleanly (exit 0, valid JSON, bounded frames), whatever it met."""
    churn = os.path.join(TARGETS, "py_churn_target.py")
    for py in ("/usr/bin/python3.11", sorted(glob.glob("/root/.pyenv/versions/3.8.*/bin/python3.8"))[-1:],
               sorted(glob.glob("/root/.pyenv/versions/3.13.*/bin/python3.13"))[-1:]):
        py = py if isinstance(py, str) else (py[0] if py else None)
        if not py or not os.path.exists(py):
            continue
        p = start([py, churn])
        bad, slow, frames = [], 0, 0
        try:
            for _ in range(60):
                t0 = time.monotonic()
                r = dump(p.pid, "--json")
                if time.monotonic() - t0 > 2:
                    slow += 1
                if r.returncode != 0:
                    bad.append((r.returncode, r.stderr[-200:]))
                    continue
                doc = json.loads(r.stdout)
                for t in doc["threads"]:
                    frames += len(t["frames"])
                    if len(t["frames"]) > 2048:
                        bad.append("unbounded")
            check("churn %s: every dump clean" % py, not bad, "%s" % bad[:3])
            check("churn %s: no slow dump" % py, slow == 0, "%d" % slow)
            check("churn %s: frames were read" % py, frames > 60)
        finally:
            stop(p)


def poke(pid, addr, value):
    """Write a pointer into the target's memory (process_vm_writev)."""
    libc = ctypes.CDLL(None, use_errno=True)

    class IoVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    buf = ctypes.c_uint64(value)
    local = IoVec(ctypes.addressof(buf), 8)
    remote = IoVec(addr, 8)
    libc.process_vm_writev.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong,
                                       ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    n = libc.process_vm_writev(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if n != 8:
        raise OSError(ctypes.get_errno(), "process_vm_writev")


def test_corrupt_chain():
    """A frame chain made to loop, and a frame whose code is not a code object (written into
    a sleeping 3.10 target): the dump ends, keeps the frames it could read, and says why."""
    py = (sorted(glob.glob("/root/.pyenv/versions/3.10.*/bin/python3.10")) or [None])[-1]
    if not py:
        print("note: no CPython 3.10; corrupt-chain check skipped")
        return
    F_BACK, F_CODE = 24, 32  # PyFrameObject on 3.10 (probes/python/py_layouts.c)
    for kind in ("loop", "code"):
        p = subprocess.Popen([py, os.path.join(TARGETS, "py_corrupt_target.py")],
                             stdout=subprocess.PIPE, text=True)
        try:
            ids = [int(x) for x in p.stdout.readline().split()]
            frames, junk = ids[:-1], ids[-1]
            if kind == "loop":   # the 6th frame's f_back -> the 3rd frame
                poke(p.pid, frames[5] + F_BACK, frames[2])
            else:                # the 4th frame's f_code -> a list
                poke(p.pid, frames[3] + F_CODE, junk)
            t0 = time.monotonic()
            r = dump(p.pid, "--json", timeout=30)
            took = time.monotonic() - t0
            check("corrupt %s: exit 0 quickly" % kind, r.returncode == 0 and took < 5,
                  "%d %.1fs %s" % (r.returncode, took, r.stderr))
            doc = json.loads(r.stdout)
            t = doc["threads"][0]
            n = 6 if kind == "loop" else 3
            check("corrupt %s: the frames before the damage kept" % kind,
                  len(t["frames"]) == n and t["frames"][0]["func"] == "down",
                  "%d %s" % (len(t["frames"]), t["frames"][:2]))
            reasons = " ".join(m["reason"] for m in doc.get("missing_evidence", []))
            want = "loops" if kind == "loop" else "not a code object"
            check("corrupt %s: reported (%s)" % (kind, want), want in reasons, reasons)
        finally:
            stop(p)


def test_pid_namespace():
    """A target in its own PID namespace (as in a container): its threads call themselves 1,
    2, 3...; the dump must give our tids (NSpid mapping), and --native must stop those."""
    if not os.path.exists("/usr/bin/unshare"):
        print("note: no unshare; PID namespace check skipped")
        return
    pys = ["/usr/bin/python3.11"] + sorted(glob.glob("/root/.pyenv/versions/3.8.*/bin/python3.8"))[-1:]
    for py in pys:
        if not os.path.exists(py):
            continue
        u = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", py, THREADS_TARGET],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        pid = None
        try:
            if u.stdout.readline().strip() != "ready":
                check("pidns %s: target ready" % py, False)
                continue
            with open("/proc/%d/task/%d/children" % (u.pid, u.pid)) as f:
                pid = int(f.read().split()[0])
            time.sleep(0.1)
            for extra in ([], ["--native"]):
                r = dump(pid, "--json", *extra)
                if not check("pidns %s %s: exit 0" % (py, extra), r.returncode == 0, r.stderr):
                    continue
                doc = json.loads(r.stdout)
                tids = sorted(t.get("tid", 0) for t in doc["threads"])
                check("pidns %s %s: our tids" % (py, extra), tids == sorted(task_states(pid)),
                      "%s vs %s" % (tids, sorted(task_states(pid))))
                busy = find_thread(doc, "busy_leaf")
                check("pidns %s %s: GIL holder is the busy thread" % (py, extra),
                      busy is not None and doc.get("gil_holder_tid") == busy.get("tid"))
                if extra:
                    check("pidns %s: native stacks" % py,
                          all(t.get("native") for t in doc["threads"]), r.stdout[:300])
            st = task_states(pid)
            check("pidns %s: not left stopped" % py, all(x not in "tT" for x in st.values()),
                  "%s" % st)
        finally:
            if pid:
                os.kill(pid, signal.SIGKILL)  # init of its namespace: only SIGKILL ends it
            u.kill()
            u.wait()


def test_mount_namespace():
    """A target whose interpreter exists only in its own mount namespace (as in a container
    image): the ELF must be read through /proc/PID/root."""
    import tempfile
    if not (os.path.exists("/usr/bin/unshare") and os.path.exists("/usr/bin/python3.11")):
        print("note: mount namespace check skipped")
        return
    d = tempfile.mkdtemp(prefix="sop-mntns-")
    script = ("mount -t tmpfs none %s && cp /usr/bin/python3.11 %s/ && exec %s/python3.11 %s"
              % (d, d, d, THREADS_TARGET))
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        if not check("mntns: target ready", p.stdout.readline().strip() == "ready"):
            return
        check("mntns: interpreter not visible from here", not os.listdir(d))
        r = dump(p.pid, "--json")
        ok = r.returncode == 0
        doc = json.loads(r.stdout) if ok else {}
        check("mntns: dumped", ok and doc["python"]["executable"] == d + "/python3.11" and
              find_thread(doc, "busy_leaf") is not None, r.stdout[:300] + r.stderr)
    finally:
        stop(p)
        os.rmdir(d)


def test_exit_during_dump():
    py = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable
    bad = []
    for i in range(20):
        p = subprocess.Popen([py, "-c", "import time, threading\n"
                              "for _ in range(8): threading.Thread(target=time.sleep, args=(1,),"
                              " daemon=True).start()\n"
                              "time.sleep(%f)" % (0.02 + 0.01 * i)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 3
        while p.poll() is None and time.monotonic() < deadline:
            r = dump(p.pid, "--json", *(["--native"] if i % 2 else []))
            if r.returncode < 0 or r.returncode not in (0, 3):
                bad.append((r.returncode, r.stderr[-300:]))
            elif r.returncode == 0:
                json.loads(r.stdout)
        p.wait()
    check("exit during dump: clean results only", not bad, "%s" % bad[:3])
    r = dump(p.pid, "--json")
    check("gone pid: exit 3 + message", r.returncode == 3 and "not found" in r.stderr,
          "%d %s" % (r.returncode, r.stderr))


def test_not_python():
    p = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.1)
        r = dump(p.pid, "--json")
        check("not python: exit 3", r.returncode == 3, "%d %s" % (r.returncode, r.stderr))
        doc = json.loads(r.stdout) if r.stdout.strip() else {}
        reasons = [m["reason"] for m in doc.get("missing_evidence", [])]
        check("not python: missing_evidence says so",
              any("not a CPython process" in x for x in reasons), "%s" % doc)
        check("not python: no threads", "threads" not in doc)
    finally:
        stop(p)
    # Older CPython: named as unsupported, not as "not CPython".
    for py in sorted(glob.glob("/root/.pyenv/versions/[23].[0-7].*/bin/python[23].[0-7]")):
        p = subprocess.Popen([py, "-c", "import time; time.sleep(30)"])
        try:
            time.sleep(0.5)
            r = dump(p.pid, "--json")
            reasons = " ".join(m["reason"] for m in json.loads(r.stdout)["missing_evidence"])
            check("old %s: exit 3, named unsupported" % py, r.returncode == 3 and
                  "not supported" in reasons, reasons)
        finally:
            stop(p)


# ptrace refused: the mechanism is a seccomp filter on sopctl that makes ptrace(2) fail with
# EPERM (what a container runtime's seccomp profile does), while process_vm_readv stays
# allowed — so Python stacks are read and native stacks are skipped with a reason.
def deny_ptrace():
    deny_syscall(101)  # __NR_ptrace


def deny_process_vm_readv():
    deny_syscall(310)  # __NR_process_vm_readv


def deny_syscall(nr):
    libc = ctypes.CDLL(None, use_errno=True)

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                    ("k", ctypes.c_uint)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
    ALLOW, ERRNO_EPERM = 0x7FFF0000, 0x00050000 | 1
    prog = (SockFilter * 6)(
        SockFilter(BPF_LD_W_ABS, 0, 0, 4),             # arch
        SockFilter(BPF_JEQ_K, 1, 0, 0xC000003E),       # x86-64?
        SockFilter(BPF_RET_K, 0, 0, ALLOW),
        SockFilter(BPF_LD_W_ABS, 0, 0, 0),             # syscall nr
        SockFilter(BPF_JEQ_K, 0, 1, nr),               # the denied syscall
        SockFilter(BPF_RET_K, 0, 0, ERRNO_EPERM),
    )
    full = (SockFilter * 7)(*prog, SockFilter(BPF_RET_K, 0, 0, ALLOW))
    fprog = SockFprog(7, ctypes.cast(full, ctypes.POINTER(SockFilter)))
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")


def test_ptrace_refused():
    py = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable
    p = start([py, THREADS_TARGET])
    try:
        r = dump(p.pid, "--json", "--native", preexec=deny_ptrace)
        check("ptrace refused: exit 0", r.returncode == 0, "%d %s" % (r.returncode, r.stderr))
        doc = json.loads(r.stdout)
        busy = find_thread(doc, "busy_leaf")
        check("ptrace refused: Python stacks still read", busy is not None and
              busy["frames"][1]["func"] == "busy_outer")
        reasons = [m["reason"] for m in doc.get("missing_evidence", [])
                   if m["probe"] == "native"]
        check("ptrace refused: native skipped with a reason",
              any("ptrace refused" in x for x in reasons), "%s" % doc.get("missing_evidence"))
        check("ptrace refused: no native frames", all("native" not in t for t in
                                                       doc["threads"]))
    finally:
        stop(p)


def test_mem_file_fallback():
    """process_vm_readv refused (EPERM, as some sandboxes do): the same stacks through
    /proc/PID/mem."""
    py = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable
    p = start([py, THREADS_TARGET])
    try:
        a = dump(p.pid, "--json")
        b = dump(p.pid, "--json", preexec=deny_process_vm_readv)
        check("no process_vm_readv: exit 0", b.returncode == 0, b.stderr)
        if a.returncode == 0 and b.returncode == 0:
            fa = {t.get("name"): t["frames"] for t in json.loads(a.stdout)["threads"]}
            fb = {t.get("name"): t["frames"] for t in json.loads(b.stdout)["threads"]}
            check("no process_vm_readv: same stacks via /proc/PID/mem", fa == fb,
                  "%s\n%s" % (fa, fb))
    finally:
        stop(p)


def test_unprivileged():
    """sopctl as nobody against a root target: nothing readable -> exit 3, the reason named."""
    if os.geteuid() != 0 or not os.path.exists("/usr/bin/setpriv"):
        print("note: unprivileged check skipped (needs root and setpriv)")
        return
    py = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable
    p = start([py, THREADS_TARGET])
    try:
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            SOPCTL, "dump", "--json", "--pid", str(p.pid)],
                           capture_output=True, text=True, timeout=30)
        check("unprivileged: exit 3", r.returncode == 3, "%d %s" % (r.returncode, r.stderr))
        check("unprivileged: permission named", "permission denied" in r.stderr.lower() and
              "Permission denied" in r.stdout, r.stdout + r.stderr)
    finally:
        stop(p)


def test_sigkill_native():
    """SIGKILL sopctl at random moments of `dump --native`: the target is never left stopped.
    The kill delays follow this machine's speed: a few dumps are timed first and the delays are
    drawn inside that duration, shrinking when a kill arrives after the dump ended, so that most
    kills land mid-dump on a fast or a slow host alike."""
    py = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable
    p = start([py, THREADS_TARGET])
    rnd = random.Random(1234)
    stopped = []
    landed = tries = 0  # kills that hit a running sopctl (not one that had already finished)
    try:
        took = []
        for _ in range(5):
            t0 = time.monotonic()
            subprocess.run([SOPCTL, "dump", "--native", "--pid", str(p.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            took.append(time.monotonic() - t0)
        hi = sorted(took)[len(took) // 2]  # the median dump, start-up included
        while landed < 30 and tries < 120:
            tries += 1
            d = subprocess.Popen([SOPCTL, "dump", "--native", "--pid", str(p.pid)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rnd.uniform(0.1 * hi, 0.9 * hi))
            d.send_signal(signal.SIGKILL)
            if d.wait() == -signal.SIGKILL:
                landed += 1
            else:
                hi *= 0.8  # the dump had ended: aim earlier
            st = task_states(p.pid)
            if any(s in "tT" for s in st.values()):
                time.sleep(0.05)  # give the kernel's detach a moment, then judge
                st = task_states(p.pid)
                if any(s in "tT" for s in st.values()):
                    stopped.append((tries, st))
        print("sigkill --native: %d of %d kills landed mid-dump (median dump %.0f ms)"
              % (landed, tries, 1000 * sorted(took)[2]))
        check("sigkill --native x%d: never left stopped" % tries, not stopped, "%s" % stopped[:3])
        check("sigkill --native: kills landed mid-dump (%d of %d, median dump %.0f ms)"
              % (landed, tries, 1000 * sorted(took)[2]), landed >= 10)
        a = cpu_ticks(p.pid)
        time.sleep(0.3)
        b = cpu_ticks(p.pid)
        check("sigkill --native: target keeps running", b > a, "%d -> %d" % (a, b))
        r = dump(p.pid, "--json")
        check("sigkill --native: still dumpable", r.returncode == 0 and
              find_thread(json.loads(r.stdout), "busy_leaf") is not None)
    finally:
        stop(p)


def test_tracer_killed_while_stopped():
    """The guarantee --native rests on, with sopctl's exact sequence: a tracer that has
    PTRACE_SEIZE'd and PTRACE_INTERRUPT'ed a thread (which is now stopped, 't') is SIGKILLed;
    the kernel must detach and the thread must run on."""
    py = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable
    p = start([py, THREADS_TARGET])
    try:
        r = dump(p.pid, "--json")
        busy = find_thread(json.loads(r.stdout), "busy_leaf")["tid"]
        rfd, wfd = os.pipe()
        child = os.fork()
        if child == 0:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p,
                                    ctypes.c_void_p]
            ok = libc.ptrace(0x4206, busy, None, None) == 0  # PTRACE_SEIZE
            ok = ok and libc.ptrace(0x4207, busy, None, None) == 0  # PTRACE_INTERRUPT
            if ok:
                os.waitpid(busy, 0x40000000)  # __WALL
            os.write(wfd, b"1" if ok else b"0")
            time.sleep(60)
            os._exit(0)
        os.close(wfd)
        ok = os.read(rfd, 1) == b"1"
        check("tracer: seized and stopped the thread", ok)
        st = task_states(p.pid).get(busy)
        check("tracer: thread is in a ptrace stop", st == "t", "%s" % st)
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        st = task_states(p.pid).get(busy)
        check("tracer killed: thread no longer stopped", st not in ("t", "T"), "%s" % st)
        a = cpu_ticks(p.pid)
        time.sleep(0.3)
        check("tracer killed: target keeps running", cpu_ticks(p.pid) > a)
    finally:
        stop(p)


def main():
    if os.geteuid() != 0:
        print("note: not root; reading other processes may be refused")
    for t in (test_matrix, test_deep, test_churn, test_corrupt_chain, test_pid_namespace,
              test_mount_namespace, test_exit_during_dump, test_not_python,
              test_ptrace_refused, test_mem_file_fallback, test_unprivileged, test_sigkill_native, test_tracer_killed_while_stopped):
        try:
            t()
        except Exception as e:  # a crash in one group is a failure, the rest still run
            check(t.__name__ + " raised", False, repr(e))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
