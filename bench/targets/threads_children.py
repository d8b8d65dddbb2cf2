"""threads_children.py — benchmark target: a Python process with N threads and M forked
children, all idle, that prints "ready" once everything is in place and lives until killed
(or until --seconds pass). Usage: threads_children.py [--threads 64] [--children 8]"""
import argparse
import multiprocessing as mp
import os
import sys
import threading
import time


def child(stop_after):
    time.sleep(stop_after)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--children", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=600)
    a = ap.parse_args()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=child, args=(a.seconds,)) for _ in range(a.children)]
    for p in procs:
        p.start()
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait, daemon=True) for _ in range(a.threads - 1)]
    for t in threads:
        t.start()
    print("ready", os.getpid(), flush=True)
    try:
        time.sleep(a.seconds)
    finally:
        for p in procs:
            p.kill()
    sys.exit(0)


if __name__ == "__main__":
    main()
