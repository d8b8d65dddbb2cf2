# Healthy: an aiohttp server with nothing to do. It waits in the selector; no rule may warn.
# expect: none
# verdict: waiting
# sopctl: --duration 2
# needs: aiohttp
import asyncio
import socket

from aiohttp import web

# SOP_SCENARIO_INTENSITY not read: an idle server has no work to size.


async def hello(request):
    return web.Response(text="ok")


async def main():
    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    print("ready", flush=True)
    await asyncio.sleep(60)


asyncio.run(main())
