# py_corrupt_target.py — for tests/e2e/test_dump.py on CPython 3.8-3.10 (frame objects): sleeps
# at the bottom of a 20-deep recursion and prints the addresses of its frame objects
# (id(frame), innermost first) and of a list, so the test can corrupt the frame chain from
# outside (a loop, a non-code object) and check the reader reports it instead of looping.
import sys
import time

junk = [1, 2, 3]


def down(n):
    if n == 0:
        f, ids = sys._getframe(), []
        while f is not None:
            ids.append(id(f))
            f = f.f_back
        print(" ".join(str(i) for i in ids + [id(junk)]), flush=True)
        time.sleep(3600)
    down(n - 1)


down(20)
