# An asyncio service that, for each request (20 a second), fires an audit-log write with
# asyncio.create_task(...) and drops the task: the write waits out a 3.5 s back-off (longer than
# the 2 s window) before retrying, so about 70 such tasks are pending at any moment, each
# referenced by nothing but the timer it awaits. The requests themselves are kept (a set with a
# done-callback) and finish in 20 ms. Nothing piles up (as many audit tasks end as start, once the
# first have waited out their back-off): the forgotten tasks are the whole finding (SOP §5).
# expect: asyncio.fire_and_forget:info
# sopctl: --duration 2
# SOP_SCENARIO_INTENSITY not read: the load is a fixed request rate, not a size.
import asyncio

RATE = 20
BACKOFF_S = 3.5


async def write_audit(n, stats):
    await asyncio.sleep(BACKOFF_S)  # the audit service is slow: back off, then write
    stats["audited"] += 1


async def handle_request(n, stats):
    asyncio.ensure_future(write_audit(n, stats))  # the bug: the task is dropped
    await asyncio.sleep(0.02)  # the request's own work
    return n


async def main():
    loop = asyncio.get_running_loop()
    stats = {"audited": 0}
    keep = set()
    t0 = loop.time()
    n = 0
    ready = False
    while loop.time() - t0 < 60:
        n += 1
        t = loop.create_task(handle_request(n, stats))
        keep.add(t)
        t.add_done_callback(keep.discard)
        # ready: audit tasks measured ending as fast as they start (the steady state)
        if not ready and stats["audited"] >= RATE:
            print("ready", flush=True)
            ready = True
        await asyncio.sleep(1 / RATE)


asyncio.run(main())
