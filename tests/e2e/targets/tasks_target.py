"""tasks_target.py N OUT — an asyncio program with every kind of pending task sop names, plus N
filler tasks (each two coroutines deep, parked on an Event), that prints "ready" and writes its own
view of its tasks to OUT (JSON) 0.3 s later. Its view: for every task of asyncio.all_tasks(), the
name, Task.get_stack() (name, file, line of each frame) and the await chain, followed as
CPython's own inspection does (coro.cr_await / gi_yieldfrom while the object has a frame);
what each chain ends on (the type of the innermost awaitable). The loop is idle (in select)
while the view is taken, from another thread, so the tasks do not move under it or under sop.
`tasks_target.py busy`: a loop blocked by a running task, another task cancelling (below).
Works on CPython 3.8-3.13."""
import asyncio
import json
import os
import sys
import threading
import time


def code_name(code):
    return getattr(code, "co_qualname", code.co_name)


def frame_of(obj):
    for attr in ("cr_frame", "gi_frame", "ag_frame"):
        f = getattr(obj, attr, None)
        if f is not None:
            return f
    return None


def chain_of(task):
    out, obj, end = [], task.get_coro(), None
    for _ in range(64):
        f = frame_of(obj)
        if f is None:
            end = type(obj).__name__ if obj is not None else None
            break
        out.append([code_name(f.f_code), f.f_code.co_filename, f.f_lineno])
        nxt = getattr(obj, "cr_await", None) if hasattr(obj, "cr_await") else getattr(
            obj, "gi_yieldfrom", None)
        if nxt is None:
            break
        obj = nxt
    return out, end


def view(loop):
    tasks = []
    for t in asyncio.all_tasks(loop):
        chain, end = chain_of(t)
        stack = [[code_name(f.f_code), f.f_code.co_filename, f.f_lineno] for f in t.get_stack()]
        tasks.append({"name": t.get_name(), "chain": chain, "stack": stack, "ends_on": end})
    return tasks


# ---- the situations ------------------------------------------------------------------------

async def inner(fut):
    await fut


async def middle(fut):
    await inner(fut)


async def outer(fut):
    await middle(fut)


async def filler_leaf(ev):
    await ev.wait()


async def filler(ev):
    await filler_leaf(ev)


async def hold_lock(lock, ev):
    async with lock:
        await ev.wait()


async def want_lock(lock):
    async with lock:
        pass


async def want_sem(sem):
    async with sem:
        pass


async def hold_sem(sem, ev):
    async with sem:
        await ev.wait()


async def consumer(q):
    await q.get()


async def producer(q):
    await q.put(1)


async def sleeper():
    await asyncio.sleep(3600)


async def child(ev):
    await ev.wait()


async def parent_gather(ev):
    await asyncio.gather(child_task(ev, "gather-child-1"), child_task(ev, "gather-child-2"))


def child_task(ev, name):
    t = asyncio.ensure_future(child(ev))
    t.set_name(name)
    return t


async def awaits_task(other):
    await other


def blocking(stop):
    stop.wait()


async def in_executor(stop):
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, blocking, stop)


async def main(n, out):
    loop = asyncio.get_running_loop()
    ev = asyncio.Event()
    stop = threading.Event()
    fut = loop.create_future()
    lock, sem, q, fullq = asyncio.Lock(), asyncio.Semaphore(1), asyncio.Queue(), asyncio.Queue(1)
    fullq.put_nowait(0)
    named = [
        ("chain-3-levels", outer(fut)),
        ("lock-holder", hold_lock(lock, ev)),
        ("lock-waiter-1", want_lock(lock)),
        ("lock-waiter-2", want_lock(lock)),
        ("sem-holder", hold_sem(sem, ev)),
        ("sem-waiter", want_sem(sem)),
        ("queue-consumer", consumer(q)),
        ("queue-producer", producer(fullq)),
        ("sleeper", sleeper()),
        ("gather-parent", parent_gather(ev)),
        ("executor-user", in_executor(stop)),
    ]
    keep = []
    for name, coro in named:
        t = loop.create_task(coro)
        t.set_name(name)
        keep.append(t)
    keep.append(loop.create_task(awaits_task(keep[0]), name="awaits-chain-task"))
    for i in range(n):
        t = loop.create_task(filler(ev))
        t.set_name("filler-%d" % i)
        keep.append(t)
    for _ in range(3):
        await asyncio.sleep(0)
    def report():
        time.sleep(0.3)  # the loop is parked in select by now, every task suspended
        with open(out + ".tmp", "w") as f:
            json.dump({"tasks": view(loop)}, f)
        os.rename(out + ".tmp", out)

    threading.Thread(target=report, daemon=True).start()
    print("ready", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        stop.set()


async def spin(victim):
    victim.cancel()  # processed when the loop runs again: never, while this spins
    print("ready", flush=True)
    while True:
        sum(range(1000))


async def busy():
    """`busy`: task "victim" asked to cancel (cancelling), task "spinner" running (it blocks the
    loop in a plain loop), the main task awaiting the spinner."""
    loop = asyncio.get_running_loop()
    victim = loop.create_task(sleeper(), name="victim")
    await asyncio.sleep(0)
    await loop.create_task(spin(victim), name="spinner")


if __name__ == "__main__":
    if sys.argv[1] == "busy":
        asyncio.run(busy())
    else:
        asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
