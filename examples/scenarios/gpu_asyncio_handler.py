# expect: asyncio.loop_blocked
# verdict: GPU-bound
# sopctl: --duration 3
# needs: torch cuda aiohttp
# SOP_SCENARIO_INTENSITY not read: the model's time per request comes from a measured phase
"""gpu_asyncio_handler.py — SOP §5.5 (issue 25): an aiohttp server whose handler runs a GPU
model synchronously and reads the result with .cpu() on the event loop, under a local load
client (threads of this program, 4 requests in flight): while the GPU works (about 150 ms per
request, sized by a measured warm-up on any GPU) the loop serves no one. asyncio.loop_blocked
gets the §5.5 cause and fix. Prints "ready" after the first answers, exits after 60 s."""
import http.client
import os
import socket
import threading
import time

import torch
from aiohttp import web

RUN_S = 60
CLIENTS = 4
REQUEST_GPU_MS = 150.0

dev = torch.device("cuda")
W = torch.randn(4096, 4096, device=dev) / 64
X = torch.randn(1024, 4096, device=dev)
LAYERS = [1]


def model(x):
    for _ in range(LAYERS[0]):
        x = torch.tanh(x @ W)
    return x


async def predict(request):
    y = model(X)
    rows = y[:4, :4].cpu().tolist()  # the bug: waits for the GPU on the event loop
    return web.json_response({"y": rows})


def load_client(port, stop, done):
    while not stop.is_set():
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/predict")
            conn.getresponse().read()
            conn.close()
            done.append(1)
        except OSError:
            time.sleep(0.05)


def main():
    # measured phase: the time of one layer (over 10), then the layers for REQUEST_GPU_MS
    model(X).sum().item()
    LAYERS[0] = 10
    t0 = time.perf_counter()
    model(X).sum().item()
    per_layer_ms = (time.perf_counter() - t0) * 1e3 / 10
    LAYERS[0] = max(1, int(REQUEST_GPU_MS / max(per_layer_ms, 1e-3)))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = web.Application()
    app.router.add_get("/predict", predict)
    stop, done = threading.Event(), []

    def driver():
        for _ in range(CLIENTS):
            threading.Thread(target=load_client, args=(port, stop, done), daemon=True).start()
        while len(done) < 2 * CLIENTS:
            time.sleep(0.05)
        print("ready %d layers per request" % LAYERS[0], flush=True)
        time.sleep(RUN_S)
        stop.set()
        os._exit(0)

    threading.Thread(target=driver, daemon=True).start()
    web.run_app(app, sock=sock, print=None, handle_signals=False)


if __name__ == "__main__":
    main()
