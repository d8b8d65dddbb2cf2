"""A benchmark target: N idle asyncio tasks (each awaiting one Event), then it prints "ready" and
sleeps. Usage: asyncio_tasks.py N. Ends with its parent's signal or after an hour."""
import asyncio
import sys


async def idle(ev):
    await ev.wait()


async def main(n):
    ev = asyncio.Event()
    tasks = [asyncio.create_task(idle(ev), name="idle-%d" % i) for i in range(n)]
    await asyncio.sleep(0)
    print("ready", len(tasks), flush=True)
    await asyncio.sleep(3600)


asyncio.run(main(int(sys.argv[1])))
