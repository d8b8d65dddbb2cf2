"""work_busy.py — e2e workload: a parent forks N busy pure-Python worker processes (processes,
not threads: the GIL would serialise threads) and sleeps; meant to run in a cgroup whose CPU
quota is smaller than N. Workers die with the parent (PR_SET_PDEATHSIG). Stdlib only.

    python3 work_busy.py [--workers 4] [--seconds 60]     prints "ready pid=P workers=W1,..\""""
import argparse
import ctypes
import os
import signal
import sys
import time


def spin():
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    x = 0
    while True:
        for i in range(100000):
            x += i * i


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    pids = []
    for _ in range(args.workers):
        pid = os.fork()
        if pid == 0:
            spin()
        pids.append(pid)
    print("ready pid=%d workers=%s" % (os.getpid(), ",".join(map(str, pids))), flush=True)
    time.sleep(args.seconds)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
