"""forked_workers.py — the bundled misbehaving demo workload (SOP §2.4, §4.4): a parent builds
a large table of small Python objects, forks workers (multiprocessing 'fork') that keep reading
it (refcount writes copy every page: copy-on-write growth) and runs busy threads. Stdlib only.

    python3 forked_workers.py [--mb 300] [--workers 3] [--threads 2] [--seconds 30]

Prints "ready pid=P workers=W1,W2,.. table_mb=M" once every worker has read the whole table,
then stays up until --seconds pass or it receives SIGTERM/SIGINT; the workers die with it."""
import argparse
import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
BYTES_PER_ROW = 190  # tuple(int, str, float) + list slot, measured on CPython 3.11 x86-64

TABLE = []


def die_with_parent():
    """Ask the kernel to SIGKILL this worker when the parent dies, however it dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def worker(ready):
    die_with_parent()
    total, passes = 0, 0
    while True:
        for a, b, c in TABLE:  # touches every tuple, int, str and float: refcount writes
            total += a
        passes += 1
        if passes == 1:
            ready.put(os.getpid())


def spin(stop):
    x = 0
    while not stop.is_set():
        for i in range(10000):
            x += i * i


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=300, help="approximate table size in MiB")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="busy threads in the parent")
    ap.add_argument("--seconds", type=float, default=30.0, help="stay up this long")
    args = ap.parse_args()

    rows = args.mb * 1024 * 1024 // BYTES_PER_ROW
    TABLE.extend((i, str(i), float(i)) for i in range(1000, 1000 + rows))

    ctx = mp.get_context("fork")
    ready = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(ready,), daemon=True) for _ in range(args.workers)]
    for p in procs:
        p.start()

    def stop_all(signum=None, frame=None):
        for p in procs:
            if p.is_alive():
                p.kill()
        for p in procs:
            p.join(timeout=5)
        os._exit(0 if signum in (None, signal.SIGTERM, signal.SIGINT) else 1)

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)

    pids = [ready.get(timeout=120) for _ in procs]
    stop = threading.Event()
    for _ in range(args.threads):
        threading.Thread(target=spin, args=(stop,), daemon=True).start()
    print("ready pid=%d workers=%s table_mb=%d" % (os.getpid(), ",".join(map(str, sorted(pids))),
                                                  args.mb), flush=True)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    stop_all()


if __name__ == "__main__":
    sys.exit(main())
