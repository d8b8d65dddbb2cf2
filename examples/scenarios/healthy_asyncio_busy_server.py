# A busy asyncio service: 200 requests a second, each awaiting an asynchronous downstream call
# (50 ms) and doing a little work; the number of requests in flight stays flat (about 10), so no
# task piles up and the loop is never stuck. No rule may warn.
# sopctl: --duration 2
# SOP_SCENARIO_INTENSITY not read: the load is a fixed request rate, not a size.
import asyncio
import json


async def downstream(n):
    await asyncio.sleep(0.05)  # an async client waiting on its server
    return {"id": n, "items": list(range(20))}


async def handle_request(n):
    body = await downstream(n)
    return json.dumps(body)


async def main():
    loop = asyncio.get_running_loop()
    loop.call_later(1.0, lambda: print("ready", flush=True))
    t0 = loop.time()
    n = 0
    keep = set()
    while loop.time() - t0 < 60:
        n += 1
        t = loop.create_task(handle_request(n))
        keep.add(t)
        t.add_done_callback(keep.discard)
        await asyncio.sleep(0.005)


asyncio.run(main())
