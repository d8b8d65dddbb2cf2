# An asyncio service that hands each request's blocking call (0.5 s, a synchronous client) to the
# default executor with loop.run_in_executor(None, ...): requests arrive three times faster than
# the default ThreadPoolExecutor (min(32, CPUs + 4) threads) finishes them, so the request tasks
# pile up in its queue, all waiting on the executor, and every reply gets later (SOP §5).
# expect: asyncio.tasks_piling
# sopctl: --duration 2
# SOP_SCENARIO_INTENSITY not read: the arrival rate follows the executor's own size.
import asyncio
import os
import time

WORKERS = min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's default max_workers
CALL_S = 0.5
RATE = 3 * WORKERS / CALL_S  # requests per second: 3x what the executor can finish


def blocking_call(n):
    time.sleep(CALL_S)  # a synchronous client (requests, a DB driver) waiting on its server
    return n


async def handle_request(n):
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, blocking_call, n)


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
        await asyncio.sleep(1 / RATE)


asyncio.run(main())
