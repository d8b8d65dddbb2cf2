# py_heap_target.py — a target for tests/e2e/test_heap.py and bench/bench_heap.py: builds a
# known heap (N instances of Node with a list each, plus smaller populations), prints its own
# gc.get_objects() histogram as one JSON line, then waits: each line on stdin is a command
# ("hist": print the histogram again, "grow K": add K more Nodes, "quit"). Type names are
# __name__ for builtins, else __module__.__name__, as sopctl heap names them (one class's name is
# not ASCII).
import collections
import gc
import json
import sys


class Node:
    def __init__(self, i):
        self.i = i
        self.children = [i]


class Leaf:
    __slots__ = ("a", "b")

    def __init__(self, i):
        self.a = i
        self.b = (i, str(i))


class Blob:  # attributes the GC does not track: found through the instance's attributes
    def __init__(self, i):
        self.data = bytearray(1000)
        self.name = "blob-%d" % i


class 样本:  # a class named in Chinese (any letters make a Python 3 identifier)
    def __init__(self, i):
        self.i = i


def qual(t):
    m = getattr(t, "__module__", "builtins")
    return t.__name__ if m == "builtins" else "%s.%s" % (m, t.__name__)


def histogram():
    objs = gc.get_objects()
    hist = collections.Counter(qual(type(o)) for o in objs)
    del objs
    return hist


n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
keep = [Node(i) for i in range(n)]
leaves = [Leaf(i) for i in range(n // 4)]
maps = [{"k": i, "v": [i]} for i in range(n // 10)]
blobs = [Blob(i) for i in range(500)]
samples = [样本(i) for i in range(n // 8)]
gc.collect()
print(json.dumps({"hist": histogram()}), flush=True)
for line in sys.stdin:
    cmd = line.split()
    if not cmd or cmd[0] == "quit":
        break
    if cmd[0] == "grow":
        keep.extend(Node(i) for i in range(int(cmd[1])))
    print(json.dumps({"hist": histogram()}), flush=True)
