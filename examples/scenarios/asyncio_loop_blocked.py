# An asyncio service whose coroutine calls time.sleep (a synchronous call) every half second:
# while it sleeps the whole event loop stops and every other task waits (SOP §5.2).
# expect: asyncio.loop_blocked
# sopctl: --duration 2
import asyncio
import os
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


async def heartbeat():
    while True:
        await asyncio.sleep(0.05)


async def handler_with_sync_sleep():
    while True:
        time.sleep(0.4)          # the bug: blocks the loop; should be await asyncio.sleep(0.4)
        await asyncio.sleep(0.1)


async def main():
    asyncio.get_running_loop().call_later(1.0, lambda: print("ready", flush=True))
    await asyncio.wait_for(asyncio.gather(heartbeat(), *[handler_with_sync_sleep() for _ in range(INTENSITY)]), timeout=60)


try:
    asyncio.run(main())
except asyncio.TimeoutError:
    pass
