# Healthy: the FastAPI service of fastapi_blocking_handler.py with the fix applied. The `async def`
# endpoint runs the same blocking client in the loop's thread pool (await loop.run_in_executor),
# so the event loop stays free while the slow local backend (0.3 s a request) answers. Served by
# uvicorn on asyncio's loop under the same local load client (4 users, 8 at
# SOP_SCENARIO_INTENSITY=2). No rule may warn.
# expect: none
# sopctl: --duration 2
# needs: fastapi uvicorn
import asyncio
import http.client
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import uvicorn
from fastapi import FastAPI

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or 1)
CLIENTS = 4 * INTENSITY
BACKEND_DELAY_S = 0.3
RUN_S = 60


class Backend(BaseHTTPRequestHandler):
    """A slow profile service (another team's): answers after BACKEND_DELAY_S."""

    def do_GET(self):
        time.sleep(BACKEND_DELAY_S)
        body = b'{"name": "user"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


backend = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
backend.daemon_threads = True
app = FastAPI()


def fetch_profile(uid):
    conn = http.client.HTTPConnection("127.0.0.1", backend.server_address[1], timeout=10)
    try:
        conn.request("GET", "/profile/%d" % uid)
        return conn.getresponse().read()
    finally:
        conn.close()


@app.get("/users/{uid}")
async def get_user(uid: int):
    profile = await asyncio.get_running_loop().run_in_executor(None, fetch_profile, uid)
    return {"uid": uid, "profile": profile.decode()}


def load_client(port, stop, done):
    """One user: requests in a row until stop is set."""
    n = 0
    while not stop.is_set():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/users/%d" % n)
            conn.getresponse().read()
            conn.close()
            done.append(n)
        except OSError:
            time.sleep(0.05)
        n += 1


def driver(server, port):
    """Start the load once the server listens; say ready after the first answers; stop at RUN_S."""
    while not server.started:
        time.sleep(0.05)
    stop, done = threading.Event(), []
    for _ in range(CLIENTS):
        threading.Thread(target=load_client, args=(port, stop, done), daemon=True).start()
    while len(done) < 2:
        time.sleep(0.05)
    print("ready", flush=True)
    time.sleep(RUN_S)
    stop.set()
    server.should_exit = True


if __name__ == "__main__":
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, loop="asyncio", log_level="warning",
                                           access_log=False))
    threading.Thread(target=driver, args=(server, sock.getsockname()[1]), daemon=True).start()
    server.run(sockets=[sock])
