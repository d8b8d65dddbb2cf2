"""`record --timeline` on an asyncio program: under the event loop's thread, a lane per
coroutine its callbacks ran (issue 29: which task ran when). A real program with two busy
coroutines taking turns on the loop and a worker thread: each coroutine gets its lane with
samples, the loop runs one callback at a time (no two task lanes overlap in time), and the
worker thread, no event loop, gets none."""
import html
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import sopt  # noqa: E402

C = sopt.Checks()

TARGET = r"""
import asyncio, threading, time

def spin(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        pass

async def crunch_batches():
    while True:
        spin(0.03)
        await asyncio.sleep(0.005)

async def parse_requests():
    while True:
        spin(0.02)
        await asyncio.sleep(0.005)

def worker():
    while True:
        time.sleep(0.01)

async def main():
    threading.Thread(target=worker, name="side", daemon=True).start()
    a = asyncio.ensure_future(crunch_batches())
    b = asyncio.ensure_future(parse_requests())
    n = 0
    while n < 3:                   # both coroutines have run, a few rounds each
        await asyncio.sleep(0.06)
        n += 1
    print("ready", flush=True)
    await asyncio.gather(a, b)

asyncio.run(main())
"""


def main():
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "sop-lanes-%d.svg" % os.getpid())
    try:
        with sopt.Target(TARGET) as t:
            r = subprocess.run([sopt.SOPCTL, "record", "--pid", str(t.pid), "--duration", "2",
                                "--timeline", "-o", out], capture_output=True, text=True, timeout=60)
            C.check(r.returncode == 0, "record --timeline ran", r.stderr[-800:])
            svg = open(out).read() if os.path.exists(out) else ""
            lanes = re.findall(r'<g class="task-lane" data-tid="(\d+)" data-samples="(\d+)" '
                               r'data-task="([^"]*)">(.*?)</g>', svg, re.S)
            by = {html.unescape(name): (int(tid), int(n), body) for tid, n, name, body in lanes}
            for name in ("crunch_batches (<string>)", "parse_requests (<string>)"):
                C.check(name in by and by[name][1] >= 5 and by[name][0] == t.pid,
                        "a lane for %s under the loop thread, with samples" % name,
                        sorted((k, v[:2]) for k, v in by.items()))
            C.check(all(tid == t.pid for tid, _, _ in by.values()),
                    "only the loop thread has task lanes", [v[:2] for v in by.values()])
            # one callback at a time: the lanes' runs never overlap
            runs = []
            for name, (_, _, body) in by.items():
                for a, b in re.findall(r"ran [^,]*, ([0-9.]+)-([0-9.]+) s", body):
                    runs.append((float(a), float(b), name))
            runs.sort()
            overlap = [(x, y) for x, y in zip(runs, runs[1:]) if y[0] < x[1] - 1e-6 and x[2] != y[2]]
            C.check(runs and not overlap, "%d runs, no two coroutines at once" % len(runs), overlap[:3])
    finally:
        if os.path.exists(out):
            os.unlink(out)
    C.done()


if __name__ == "__main__":
    main()
