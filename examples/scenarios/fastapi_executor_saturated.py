# A FastAPI service (uvicorn on asyncio's loop, Debian's python3-fastapi / python3-uvicorn) whose
# `async def` endpoint hands a blocking client call (a slow local backend, 0.5 s) to the default
# executor with run_in_executor(None, ...), under an open-loop load client (a child process
# sending requests at a fixed rate, three times what the executor's min(32, CPUs + 4) threads
# finish): uvicorn's request tasks pile up in the executor's queue, every reply later than the
# last (SOP §5). The web-framework counterpart of asyncio_executor_saturated.py.
# expect: asyncio.tasks_piling
# sopctl: --duration 2
# needs: fastapi uvicorn
# SOP_SCENARIO_INTENSITY not read: the arrival rate follows the executor's own size.
import asyncio
import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import uvicorn
from fastapi import FastAPI

WORKERS = min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's default max_workers
BACKEND_S = 0.5
RATE = 3 * WORKERS / BACKEND_S  # requests per second: 3x what the executor finishes
RUN_S = 60

# The load client: a separate process (its own tasks are not the server's), sending RATE
# requests a second whether or not the earlier ones were answered; it exits with its parent.
CLIENT = r"""
import asyncio, os, sys
port, rate, parent = int(sys.argv[1]), float(sys.argv[2]), os.getppid()
async def one(n):
    try:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"GET /orders/%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % n)
        await r.read()
        w.close()
    except OSError:
        pass
async def main():
    loop, keep, n = asyncio.get_running_loop(), set(), 0
    t0 = loop.time()
    while os.getppid() == parent and loop.time() - t0 < 70:
        n += 1
        t = loop.create_task(one(n))
        keep.add(t)
        t.add_done_callback(keep.discard)
        await asyncio.sleep(1 / rate)
asyncio.run(main())
"""


class Backend(BaseHTTPRequestHandler):
    """A slow inventory service: answers after BACKEND_S."""

    def do_GET(self):
        time.sleep(BACKEND_S)
        body = b'{"stock": 3}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


backend = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
backend.daemon_threads = True
app = FastAPI()
in_flight = [0]


def fetch_stock(oid):
    conn = http.client.HTTPConnection("127.0.0.1", backend.server_address[1], timeout=60)
    try:
        conn.request("GET", "/stock/%d" % oid)
        return conn.getresponse().read()
    finally:
        conn.close()


@app.get("/orders/{oid}")
async def get_order(oid: int):
    in_flight[0] += 1
    try:
        stock = await asyncio.get_running_loop().run_in_executor(None, fetch_stock, oid)
    finally:
        in_flight[0] -= 1
    return {"oid": oid, "stock": stock.decode()}


def driver(server, port):
    """Start the client once the server listens; ready once the queue behind the executor is
    measured (requests in flight well beyond its threads); stop at RUN_S."""
    while not server.started:
        time.sleep(0.05)
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(port), str(RATE)])
    while in_flight[0] < 2 * WORKERS + 10:
        time.sleep(0.02)
    print("ready", flush=True)
    time.sleep(RUN_S)
    client.kill()
    server.should_exit = True


if __name__ == "__main__":
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    server = uvicorn.Server(uvicorn.Config(app, loop="asyncio", log_level="warning",
                                           access_log=False, backlog=2048))
    threading.Thread(target=driver, args=(server, sock.getsockname()[1]), daemon=True).start()
    server.run(sockets=[sock])
