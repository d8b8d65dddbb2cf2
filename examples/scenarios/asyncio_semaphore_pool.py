# expect: asyncio.lock_convoy
# sopctl: --duration 2
# needs: aiohttp
# SOP_SCENARIO_INTENSITY not read: the queue is the clients in flight minus the pool's slots.
"""asyncio_semaphore_pool.py — SOP §5 (issues 26, 29): an aiohttp server (Debian's
python3-aiohttp) whose handler queries a "database" through a connection pool of 4, modelled as
an asyncio.BoundedSemaphore the pool holds across each query (a 50 ms round trip). A local load
client (threads of this program) keeps 32 requests in flight over keep-alive connections: 28 of
aiohttp's request tasks queue on the pool's semaphore at any moment, whatever the machine's
speed. Written unlike asyncio_lock_convoy.py on purpose: a semaphore not a lock, inside a
library-style class, aiohttp's own tasks rather than the program's, a sleep-like wait rather
than a stream. Prints "ready" once the queue is measured, exits after 60 s."""
import asyncio
import http.client
import os
import socket
import threading
import time

from aiohttp import web

RUN_S = 60
CLIENTS = 32
SLOTS = 4
QUERY_S = 0.05


class Pool:
    """A connection pool: at most SLOTS queries at once."""

    def __init__(self, slots):
        self._slots = asyncio.BoundedSemaphore(slots)
        self.queued = 0
        self.done = 0

    async def _round_trip(self, sql):
        await asyncio.sleep(QUERY_S)  # the database answering
        return [(sql, 1)]

    async def query(self, sql):
        self.queued += 1
        async with self._slots:
            self.queued -= 1
            rows = await self._round_trip(sql)
        self.done += 1
        return rows


async def orders(request):
    rows = await request.app["pool"].query("select * from orders where id = %s" % request.match_info["id"])
    return web.json_response({"rows": len(rows)})


def load_client(port, n, stop):
    conn = None
    while not stop.is_set():
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/orders/%d" % n)
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            conn = None
            time.sleep(0.05)


def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = web.Application()
    app.router.add_get("/orders/{id}", orders)
    stop = threading.Event()

    async def start_pool(app):
        app["pool"] = Pool(SLOTS)

    app.on_startup.append(start_pool)

    def driver():
        while "pool" not in app:
            time.sleep(0.01)
        for n in range(CLIENTS):
            threading.Thread(target=load_client, args=(port, n, stop), daemon=True).start()
        pool = app["pool"]
        # ready: queries served through the pool while most requests queue on it
        while not (pool.done >= 2 * SLOTS and pool.queued >= CLIENTS - 2 * SLOTS):
            time.sleep(0.01)
        print("ready", flush=True)
        time.sleep(RUN_S)
        stop.set()
        os._exit(0)

    threading.Thread(target=driver, daemon=True).start()
    web.run_app(app, sock=sock, print=None, handle_signals=False)


if __name__ == "__main__":
    main()
