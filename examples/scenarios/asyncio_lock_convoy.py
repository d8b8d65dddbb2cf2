# An asyncio service that guards its auth-token cache with one asyncio.Lock and, by mistake,
# keeps the lock while it fetches a fresh token from a slow token service (a local TCP server
# answering in 40 ms) on every request: the awaited fetch is serialised, so 40 request workers
# queue on the lock, one at a time through it, whatever the load (SOP §5). Nothing piles up (a
# fixed set of workers): the queue on the lock is the whole problem.
# expect: asyncio.lock_convoy
# sopctl: --duration 2
# SOP_SCENARIO_INTENSITY not read: the queue is the worker count minus one, at any speed.
import asyncio
import socket
import socketserver
import threading
import time

WORKERS = 40
FETCH_S = 0.04


class TokenService(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.recv(64)
        time.sleep(FETCH_S)  # the token service thinking
        self.request.sendall(b"token-%d\n" % int(time.time() * 1000))


class Cache:
    def __init__(self, port):
        self.port = port
        self.lock = asyncio.Lock()
        self.token = None
        self.waiting = 0
        self.fetches = 0

    async def fetch(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(b"GET\n")
        line = await reader.readline()  # the lock is held across this await
        writer.close()
        self.fetches += 1
        return line.strip()

    async def get_token(self):
        self.waiting += 1
        async with self.lock:  # the bug: held across the fetch, not just the cache check
            self.waiting -= 1
            self.token = await self.fetch()
            return self.token


async def worker(cache, n):
    while True:
        token = await cache.get_token()
        _ = (n, token)  # serve the request with it
        await asyncio.sleep(0)


async def main():
    srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), TokenService)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    cache = Cache(srv.server_address[1])
    loop = asyncio.get_running_loop()
    workers = [loop.create_task(worker(cache, i), name="request-worker-%d" % i) for i in range(WORKERS)]
    # Ready once the convoy is measured: tokens fetched through the lock while nearly every
    # worker waits on it.
    while not (cache.fetches >= 5 and cache.waiting >= WORKERS - 2):
        await asyncio.sleep(0.01)
    print("ready", flush=True)
    await asyncio.sleep(60)
    for w in workers:
        w.cancel()


socket.setdefaulttimeout(10)
asyncio.run(main())
