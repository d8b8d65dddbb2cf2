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

# The client runs on uvloop (cheaper per request), so the server is the bottleneck.
CLIENT = r"""
import asyncio, sys, time
import aiohttp
try:
    import uvloop
    uvloop.install()
except ImportError:
    pass
async def main(port):
    end = time.time() + 60
    async with aiohttp.ClientSession() as s:
        async def one():
            while time.time() < end:
                async with s.get("http://127.0.0.1:%d/" % port) as r:
                    await r.read()
        await asyncio.gather(*[one() for _ in range(16)])
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
