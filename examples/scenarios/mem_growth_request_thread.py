# expect: mem.growth
# cgroup: memory=3000M
# sopctl: --duration 3
"""mem_growth_request_thread.py — SOP §2.2, written another way than mem_growth_small_cache.py:
a threaded server (socketserver.ThreadingTCPServer on loopback, fed by a client thread of the
program itself) appends every request's body, a bytearray, to a per-connection history list kept
in a global registry after the connection closes: the leak lives in handler threads, not in a
loop of the main thread. About 8 MiB/s of anonymous memory; at that rate the 3000 MiB limit is
reached in about six minutes. Ready once the program has measured its anonymous memory growing.
Stops growing at ~450 MiB; exits after 60 s."""
import os
import socket
import socketserver
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
BODY = 32 << 10  # bytes per request
HISTORY = {}     # connection id -> every body it sent, never pruned
LIMIT = 450 << 20
stored = [0]
lock = threading.Lock()


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        history = []
        with lock:
            HISTORY[len(HISTORY)] = history
        while True:
            head = self.request.recv(4)
            if len(head) < 4:
                return
            n = int.from_bytes(head, "big")
            body = bytearray()
            while len(body) < n:
                chunk = self.request.recv(n - len(body))
                if not chunk:
                    return
                body += chunk
            if stored[0] < LIMIT:
                history.append(body)  # kept after the connection closes
                stored[0] += len(body)
            self.request.sendall(b"ok")


def client(port):
    payload = os.urandom(BODY)
    while True:
        with socket.create_connection(("127.0.0.1", port)) as s:
            for _ in range(50):
                s.sendall(len(payload).to_bytes(4, "big") + payload)
                if s.recv(2) != b"ok":
                    return
                time.sleep(0.004 / INTENSITY)  # ~250 requests/s x 32 KiB = 8 MiB/s (x intensity)


def anon_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
a0 = anon_kb()
threading.Thread(target=client, args=(server.server_address[1],), daemon=True).start()
t0 = time.time()
ready = False
while time.time() - t0 < 60:
    if not ready and anon_kb() - a0 >= 16 << 10:  # measured: 16 MiB more than at start
        print("ready", flush=True)
        ready = True
    time.sleep(0.05)
