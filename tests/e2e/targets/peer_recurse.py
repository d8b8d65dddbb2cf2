# peer_recurse.py — a stack that never stands still: recursion to a depth (argv[1], default
# 20) and back, forever, on the main thread (the situation of the stack readers' own
# "recursive" live-dump cases). Prints "ready" once the loop is about to start.
import sys


def descend(n):
    if n:
        descend(n - 1)


DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 20
print("ready", flush=True)
while True:
    descend(DEPTH)
