# A gunicorn pre-fork server (Debian's gunicorn, run as `python3 -m gunicorn --preload`) sized by
# the usual "2 x CPUs + 1" workers formula, serving a CPU-bound WSGI handler (score() renders a
# report in pure Python, ~20 ms a request). The formula assumes workers that wait on IO; these
# compute, so 2n+1 (4n+1 at SOP_SCENARIO_INTENSITY=2) sync workers, each runnable all the time
# under a local load client (threads of this program, 2 requests in flight per worker), want more
# than twice the CPUs the job may use: every request waits in the run queue (SOP §8.5). The count
# of runnable workers, not the machine's speed, makes the load.
# expect: cpu.oversubscribed
# sopctl: --duration 2
# needs: gunicorn
import ctypes
import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or 1)
RUN_S = 60


def score(n):
    """The CPU-bound part of a request: pure Python, about 20 ms on a 2020s core."""
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i * i) % 1000003
    return acc


def app(environ, start_response):
    body = b"%d\n" % score(200000)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def die_with_parent():
    """In the gunicorn master before exec: SIGTERM it (a graceful stop of its workers) when this
    program dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def load_client(port, stop, done):
    """One user: requests in a row until stop is set."""
    while not stop.is_set():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/report")
            conn.getresponse().read()
            conn.close()
            done.append(1)
        except OSError:
            time.sleep(0.05)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # run the finally below
    ncpu = len(os.sched_getaffinity(0))
    workers = 2 * ncpu * INTENSITY + 1
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    here = os.path.dirname(os.path.abspath(__file__))
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--preload", "--workers", str(workers),
         "--bind", "fd://%d" % sock.fileno(), "--chdir", here, "--log-level", "warning",
         "gunicorn_prefork:app"],
        pass_fds=[sock.fileno()], preexec_fn=die_with_parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        stop, done = threading.Event(), []
        for _ in range(2 * workers):
            threading.Thread(target=load_client, args=(port, stop, done), daemon=True).start()
        deadline = time.time() + 30
        while len(done) < 2 * workers and time.time() < deadline:
            time.sleep(0.05)
        print("ready", flush=True)
        time.sleep(RUN_S)
        stop.set()
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
