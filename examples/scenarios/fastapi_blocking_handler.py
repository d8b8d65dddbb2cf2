# A FastAPI service served by uvicorn (Debian's python3-fastapi, python3-uvicorn) whose `async def`
# endpoint calls a blocking HTTP client: fetch_profile() asks a slow local backend through
# http.client, so the event loop waits in the standard library's socket read while every other
# request queues (SOP §5.1, §5.2). A local load client (threads of this program) keeps
# 4 (8 at SOP_SCENARIO_INTENSITY=2) requests in flight. The finding names the user's frame
# (fetch_profile in this file) and the leaf below it (socket.py). The backend answers after
# 0.3 s of sleeping, so each stretch lasts 0.3 s on any machine, loaded or not.
# uvicorn is told to run asyncio's own loop (loop="asyncio"): the sampled window measures the
# stretch; on uvloop (uvicorn's default when installed) only the end-of-window snapshot sees it.
# expect: asyncio.loop_blocked
# sopctl: --duration 2
# needs: fastapi uvicorn
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
        return conn.getresponse().read()  # the bug: a blocking read on the event loop
    finally:
        conn.close()


@app.get("/users/{uid}")
async def get_user(uid: int):
    return {"uid": uid, "profile": fetch_profile(uid).decode()}


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
