# A socketserver.ThreadingTCPServer (a new thread per connection) on loopback, on CPython 3.10;
# each request computes a pure-Python checksum of its payload. Six client threads of the same
# program keep one short connection each in flight: the handler threads live a fraction of a
# second, but at every tick several of them hold or wait for the GIL and the process runs on
# about one core (SOP §4.1).
# expect: gil.contention
# expect@cpu1: none
#   (on one CPU the threads could not run in parallel anyway: the GIL is not what limits them)
# also@cpu1: cpu.oversubscribed
#   (on one CPU the handler threads also queue for the CPU itself, as in gil_contention.py)
# python: /root/.pyenv/versions/3.10.13/bin/python3
# sopctl: --duration 2
"""Ready once 12 requests have been answered (measured). Exits after 60 s."""
import os
import socket
import socketserver
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
CLIENTS = 6 * INTENSITY
PAYLOAD = bytes(range(256)) * 1200  # 300 KiB per request
answered = [0]
count_lock = threading.Lock()
deadline = time.time() + 60


def checksum(data):
    a, b = 1, 0
    for byte in data:  # Adler-32 by hand: pure-Python work per byte
        a = (a + byte) % 65521
        b = (b + a) % 65521
    return (b << 16) | a


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        n = int(self.rfile.readline())
        data = self.rfile.read(n)
        self.wfile.write(b"%d\n" % checksum(data))


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
port = server.server_address[1]
threading.Thread(target=server.serve_forever, name="acceptor", daemon=True).start()


def client():
    while time.time() < deadline:
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"%d\n" % len(PAYLOAD) + PAYLOAD)
            s.makefile("rb").readline()
        with count_lock:
            answered[0] += 1


for i in range(CLIENTS):
    threading.Thread(target=client, name="client-%d" % i, daemon=True).start()
while answered[0] < 12 and time.time() < deadline:
    time.sleep(0.01)
print("ready", flush=True)
while time.time() < deadline:
    time.sleep(0.5)
