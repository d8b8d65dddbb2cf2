"""sopt.py — shared helpers of the end-to-end tests: start a real target process and wait until
it says it is ready, run sopctl and parse its output, end only the processes a test started,
and count checks into the closing "N passed, N failed" line."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

SOPCTL = os.environ.get("SOPCTL") or os.path.join(os.path.dirname(__file__), "../../build/sopctl")
# The targets' interpreter: Debian's python3 here; SOP_TEST_PYTHON names another (the GPU
# machine's python3 with CUDA torch lives elsewhere).
PY = os.environ.get("SOP_TEST_PYTHON") or "/usr/bin/python3"


SID = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sid")


def pythons_wanted(kind):
    """Which interpreters a test runs targets on: SOP_PYTHONS is 'local' (pyenv 3.8-3.13 and
    Debian's python3, the default), 'sid' (Debian sid's 3.13-3.15 in the sid root, the
    newest tier) or 'all'."""
    return os.environ.get("SOP_PYTHONS", "local") in (kind, "all")


def sid_interpreters():
    """[(tag, minor, path)] of Debian sid's interpreters, run in the sid root through
    tests/e2e/sid/python3.X (a mount namespace and chroot, PID kept), when SOP_PYTHONS asks for
    them. A root that is not built is said, and the list is empty."""
    if not pythons_wanted("sid"):
        return []
    root = os.environ.get("SOP_SID_ROOT", "/var/cache/sop/sid-root")
    out = []
    for minor in (13, 14, 15):
        if os.path.exists("%s/usr/bin/python3.%d" % (root, minor)):
            out.append(("sid-3.%d" % minor, minor, os.path.join(SID, "python3.%d" % minor)))
        else:
            print("skip sid python3.%d: %s/usr/bin/python3.%d absent (scripts/sid-root.sh)" %
                  (minor, root, minor))
    return out


class Checks:
    """Counts and prints checks; safe to call from several threads (a test that runs its
    interpreters side by side)."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.lock = threading.Lock()

    def check(self, cond, what, detail=""):
        with self.lock:
            if cond:
                self.passed += 1
                print("ok   " + what, flush=True)
            else:
                self.failed += 1
                print("FAIL " + what + ("\n     " + str(detail)[:2000] if detail else ""), flush=True)
        return cond

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)


class Target:
    """A process started by the test. `code` is Python source that prints 'ready' when set."""

    def __init__(self, code=None, argv=None, env=None, preexec_fn=None, timeout=30):
        argv = argv or [PY, "-u", "-c", code]
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, preexec_fn=preexec_fn, text=True)
        self.pid = self.p.pid
        deadline = time.time() + timeout
        self.ready_line = None
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line:
                break
            if line.startswith("ready"):
                self.ready_line = line.strip()
                return
        self.stop()
        raise RuntimeError("target did not become ready: %s" % self.p.stderr.read()[:2000])

    def stop(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.pid, 0)
            except OSError:
                pass
            self.p.send_signal(signal.SIGKILL)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def http_get(path, port=None, unix=None, timeout=10, host="127.0.0.1", src=None):
    """GET path from sopctl's --listen: on host:port (from the local address src when given), or
    the Unix socket unix, on a fresh connection. (status, the body's raw bytes: a test of escaping
    must see them undecoded). OSError when nobody answers."""
    with socket.socket(socket.AF_UNIX) if unix else socket.socket() as c:
        c.settimeout(timeout)
        if src and not unix:
            c.bind((src, 0))
        c.connect(unix if unix else (host, port))
        c.sendall(b"GET " + path.encode() + b" HTTP/1.0\r\nHost: sop\r\n\r\n")
        data = b""
        while True:
            part = c.recv(65536)
            if not part:
                break
            data += part
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1."):
        raise OSError("no HTTP answer: %r" % data[:200])
    return int(head.split()[1]), body


def sopctl(*args, user=None, timeout=120):
    """Run sopctl; returns (exit code, stdout, stderr)."""
    argv = [SOPCTL] + [str(a) for a in args]
    if user:
        import pwd
        pw = pwd.getpwnam(user)
        argv = ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
                "--clear-groups"] + argv
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def dump_json(pid, *extra):
    """`sopctl dump --pid PID --json [extra]` -> (exit code, document; {"error": stderr} when
    the output is not JSON)."""
    r = subprocess.run([SOPCTL, "dump", "--pid", str(pid), "--json"] + list(extra),
                       capture_output=True, text=True, timeout=120)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"error": r.stderr[-400:]}


def run_json(*args, **kw):
    code, out, err = sopctl("run", *args, "--format", "json", **kw)
    try:
        return code, json.loads(out), err
    except ValueError:
        return code, None, err + "\nstdout: " + out[:2000]


def ids(report, key="findings", min_severity=None):
    order = {"high": 0, "warn": 1, "info": 2}
    out = []
    for f in (report or {}).get(key, []):
        if min_severity and order.get(f.get("severity"), 9) > order[min_severity]:
            continue
        out.append(f["id"])
    return out
