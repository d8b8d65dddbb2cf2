# py_bench_target.py — benchmark target for bench_dump.py: argv[1] threads, each argv[2] Python
# frames deep (a recursion), then waiting; one of them spins in pure Python so the GIL is
# held. Prints "ready" when every thread is in place.
import sys
import threading

NTHREADS, DEPTH = int(sys.argv[1]), int(sys.argv[2])
started = threading.Barrier(NTHREADS + 1)
forever = threading.Event()


def spin():
    x = 0
    while True:
        x += 1


def dive(n, busy):
    if n <= 1:
        started.wait()
        if busy:
            spin()
        forever.wait()
    else:
        dive(n - 1, busy)


threads = [threading.Thread(target=dive, args=(DEPTH - 3, i == 0), daemon=True)
           for i in range(NTHREADS)]  # run + _bootstrap_inner + _bootstrap = 3 frames more
for t in threads:
    t.start()
started.wait()
print("ready", flush=True)
forever.wait()
