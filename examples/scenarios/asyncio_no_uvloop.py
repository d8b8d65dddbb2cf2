# A busy aiohttp server on asyncio's default event loop (no uvloop), with a client process that
# keeps it loaded with small requests: the loop's own Python overhead is the cost (SOP §5.4).
# expect: asyncio.no_uvloop:info
# skip@cpu1: the load client runs in the server's tree and takes the one CPU the server is measured on
# sopctl: --duration 2
# needs: aiohttp
import asyncio
import socket
import subprocess
import sys

from aiohttp import web

# SOP_SCENARIO_INTENSITY not read: its size is the client load, and twice of it starves the server.
# (32 concurrent requests on a shared 2-CPU host: the loop no longer looked busy at all/2, 2 of 2 runs.)

# The client must be much cheaper per request than the server, or the server waits on it (an
# aiohttp client costs about twice the server's CPU per request, which left the server's loop at
# ~50% of a core on 2 CPUs): a raw HTTP/1.1 client on uvloop that pipelines requests on a few
# keep-alive connections and only counts the replies, so the server is the bottleneck.
CLIENT = r"""
import asyncio, sys, time
try:
    import uvloop
    uvloop.install()
except ImportError:
    pass
REQ = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
DEPTH = 1                   # requests in flight per connection
END = b"\r\n\r\nok"     # each reply ends with its 2-byte body
async def conn(port, end):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    tail = b""
    while time.time() < end:
        w.write(REQ * DEPTH)
        got = 0
        while got < DEPTH:
            data = await r.read(65536)
            if not data:
                return
            buf = tail + data
            got += buf.count(END)
            tail = buf[-(len(END) - 1):]
    w.close()
async def main(port):
    end = time.time() + 60
    await asyncio.gather(*[conn(port, end) for _ in range(2)])
asyncio.run(main(int(sys.argv[1])))
"""


SERVED = [0]


async def hello(request):
    SERVED[0] += 1
    return web.Response(text="ok")


async def main():
    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    site = web.SockSite(runner, sock)
    await site.start()
    client = subprocess.Popen([sys.executable, "-c", CLIENT, str(port)])
    # Ready once the load is on: 500 requests served (or 10 s).
    for _ in range(100):
        if SERVED[0] >= 500:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    print("ready", flush=True)
    try:
        await asyncio.sleep(60)
    finally:
        client.kill()


if __name__ == "__main__":
    asyncio.run(main())
