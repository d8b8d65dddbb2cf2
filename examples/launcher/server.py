# server.py — the launcher example's child: a small aiohttp server (Debian's python3-aiohttp)
# with /health, and /block?seconds=S whose handler calls time.sleep on the event loop — the
# classic asyncio mistake (SOP §5) that libsop's asyncio.loop_blocked rule names.
import argparse
import time

from aiohttp import web


def stall_the_loop(seconds):
    # A synchronous call inside a coroutine: the whole event loop stops for `seconds`.
    time.sleep(seconds)


async def health(_request):
    return web.Response(text="ok\n")


async def block(request):
    seconds = min(float(request.query.get("seconds", "5")), 60.0)
    stall_the_loop(seconds)
    return web.Response(text=f"blocked the loop for {seconds:.1f} s\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/block", block)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
