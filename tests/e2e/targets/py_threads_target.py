# py_threads_target.py — a CPython target with known call chains at known lines, for
# tests/e2e/test_dump.py: one thread busy in pure Python, one sleeping inside a recursion,
# one blocked on a lock, the main thread waiting in join(). Prints "ready" when in place.
# Line numbers below are asserted by the test: edit both together.
import sys
import threading
import time

lock = threading.Lock()
lock.acquire()
counter = [0]


def busy_leaf():
    while True: counter[0] += 1  # LINE_BUSY (one line: every instruction of the loop is here)


def busy_outer():
    busy_leaf()  # LINE_BUSY_OUTER


def sleepy(n):
    if n == 0:
        time.sleep(3600)  # LINE_SLEEP
    sleepy(n - 1)  # LINE_SLEEP_REC


def blocked():
    lock.acquire()  # LINE_LOCK


def main():
    threads = [
        threading.Thread(target=busy_outer, name="busy", daemon=True),
        threading.Thread(target=sleepy, args=(3,), name="sleeper", daemon=True),
        threading.Thread(target=blocked, name="locked", daemon=True),
    ]
    for t in threads:
        t.start()
    time.sleep(0.3)
    print("ready", flush=True)
    threads[2].join()  # LINE_MAIN_JOIN


if __name__ == "__main__":
    main()  # LINE_MODULE
