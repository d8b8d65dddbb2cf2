"""test_listen.py — `sopctl watch --listen` against hostile and picky clients, on a real watch
of a `sleep` this test starts:

- slowloris: 16 connections from one address (127.0.0.2) that send a header line every second
  and never end their request. /healthz from another address (127.0.0.1) must still answer
  while they are open (before the fix every slot was held and it never did); that address
  holds at most 8 of them (the per-address limit), and each is cut once the whole-request
  deadline (5 s) has passed, however it trickles (before the fix the idle timeout, reset by
  every line, never cut one).

The bounds are ceilings for something that takes milliseconds (an answer on loopback) or a
fixed deadline plus a generous margin; none is fitted to this machine's speed."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from sopt import SOPCTL, Checks

t = Checks()
DEADLINE_S = 5  # cli/http.c REQUEST_DEADLINE_S
PER_ADDRESS = 8  # cli/http.c PER_ADDRESS_LIMIT
started = []


def start(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    started.append(p)
    return p


def stop_all():
    for p in reversed(started):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in reversed(started):
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def watch(d, *listen):
    log = os.path.join(d, "watch.log")
    target = start(["sleep", "600"])
    argv = [SOPCTL, "watch", "--no-site", "--pid", str(target.pid), "--every", "5",
            "--duration", "0", "--rate", "0"]
    for a in listen:
        argv += ["--listen", a]
    w = start(argv, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    deadline = time.time() + 60
    while time.time() < deadline and w.poll() is None:
        text = open(log).read()
        if "listening on http://" in text:
            return w, log, text.split("listening on http://")[1].split("/")[0]
        time.sleep(0.05)
    return w, log, None


def get(host, port, path, src="127.0.0.1", timeout=3.0):
    """One GET on a fresh connection from `src`: (status, body) or (None, why)."""
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.bind((src, 0))
        s.connect((host, port))
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as e:
        return None, repr(e)
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1."):
        return None, "no answer (%r)" % data[:200]
    return int(head.split()[1]), body.decode(errors="replace")


def closed_by_server(s):
    """True when the server has ended the connection (EOF or reset); never blocks."""
    s.settimeout(0)
    try:
        return s.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def slowloris(host, port, n, src):
    """n connections from src, each with an unfinished request."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind((src, 0))
        s.settimeout(3)
        try:
            s.connect((host, port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            pass
        socks.append(s)
    return socks


def trickle(socks, i):
    for s in socks:
        s.settimeout(3)
        try:
            s.sendall(b"X-Slow-%d: %s\r\n" % (i, b"a" * 8))
        except OSError:
            pass


d = tempfile.mkdtemp(prefix="sop-listen-")
try:
    w, log, addr = watch(d, "127.0.0.1:0")
    t.check(addr is not None, "watch --listen 127.0.0.1:0 listens", open(log).read())
    if addr is None:
        t.done()
    host, port = addr.rsplit(":", 1)
    port = int(port)

    # ---- slowloris ---------------------------------------------------------------------
    t0 = time.monotonic()
    slow = slowloris(host, port, 16, "127.0.0.2")
    trickle(slow, 0)
    time.sleep(0.5)
    answered_at = None
    code, body = get(host, port, "/healthz", timeout=3.0)
    answered_at = time.monotonic() - t0
    t.check(code == 200 and body.startswith("ok"),
            "/healthz answers beside 16 slow connections from another address", (code, body))
    t.check(code == 200 and answered_at < DEADLINE_S,
            "and before the deadline has cut any of them (%.2f s)" % answered_at)
    code, body = get(host, port, "/metrics", timeout=3.0)
    t.check(code == 200 and "sop_watch_runs" in body, "/metrics answers too", (code, body[:300]))
    refused = sum(closed_by_server(s) for s in slow)
    t.check(refused >= 16 - PER_ADDRESS,
            "one address holds at most %d connections (%d of 16 refused)" % (PER_ADDRESS, refused))

    # every second a line on each; all must be cut by the deadline plus a margin
    cut_at = None
    i = 1
    while time.monotonic() - t0 < DEADLINE_S + 5:
        time.sleep(1)
        trickle(slow, i)
        i += 1
        if all(closed_by_server(s) for s in slow):
            cut_at = time.monotonic() - t0
            break
    t.check(cut_at is not None,
            "every slow request is cut after the %d s deadline, trickle as it may (%s s)"
            % (DEADLINE_S, "%.1f" % cut_at if cut_at else "still open"))
    for s in slow:
        s.close()
    code, body = get(host, port, "/healthz", src="127.0.0.2")
    t.check(code == 200, "the slow address is served again once its requests are cut",
            (code, body))
    t.check(w.poll() is None, "the watch runs on", open(log).read()[-1500:])
finally:
    stop_all()
t.done()
