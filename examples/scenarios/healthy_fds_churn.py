# A batch converter: a pool of 8 connections to its store opened at once at start (a burst of
# descriptors, then flat), and per job a temporary file and a pipe to a helper process, each
# closed when the job is done. Descriptors come and go every few milliseconds but do not pile
# up: no leak (SOP §9), whatever the churn.
# expect: none
# sopctl: --duration 3
"""Ready after the pool is open and the first jobs ran. Exits after 60 s."""
import os
import socket
import subprocess
import sys
import tempfile
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
deadline = time.time() + 60
listener = socket.create_server(("127.0.0.1", 0))
port = listener.getsockname()[1]
pool = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]   # the burst
accepted = [listener.accept()[0] for _ in range(8)]
jobs = 0
ready = False
while time.time() < deadline:
    with tempfile.TemporaryFile() as tmp:            # closed at the end of the job
        tmp.write(b"x" * 4096 * INTENSITY)
        tmp.seek(0)
        with subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL) as p:
            p.communicate(tmp.read())                 # pipes closed, child reaped
    jobs += 1
    if not ready and jobs >= 5:
        ready = True
        print("ready", flush=True)
        print("[self-check] descriptors %d after %d jobs" % (len(os.listdir("/proc/self/fd")), jobs),
              file=sys.stderr, flush=True)
    time.sleep(0.02)
