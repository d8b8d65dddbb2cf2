# py_churn_target.py — a CPython target whose thread list and stacks change all the time
# (threads start and end, recursion depth swings, code objects are created and freed), so a
# reader from outside meets torn state. For tests/e2e/test_dump.py. Prints "ready".
import random
import threading


def swing(n):
    if n > 0:
        return swing(n - 1) + 1
    # fresh code objects appear and die
    f = eval(compile("lambda x: x + %d" % random.randint(0, 10**6), "<churn>", "eval"))
    return f(0) * 0


def worker():
    for _ in range(50):
        swing(random.randint(0, 60))


def spawner():
    while True:
        ts = [threading.Thread(target=worker) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()


for _ in range(2):
    threading.Thread(target=spawner, daemon=True).start()
print("ready", flush=True)
while True:
    swing(random.randint(0, 200))
