# py_deep_target.py — a CPython target sleeping at the bottom of a deep recursion, for
# tests/e2e/test_dump.py: argv[1] = depth. Prints "ready" when in place.
import sys
import time

sys.setrecursionlimit(100000)


def deep(n):
    if n == 0:
        print("ready", flush=True)
        time.sleep(3600)  # LINE_DEEP_SLEEP
    deep(n - 1)  # LINE_DEEP_REC


deep(int(sys.argv[1]))
