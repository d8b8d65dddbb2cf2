# peer_subinterp.py — a process with a second interpreter (issue 12): a threading thread named
# "sub-runner" runs code in a subinterpreter (_xxsubinterpreters on 3.8-3.12, _interpreters on
# 3.13), which parks in sub_outer -> sub_park; the main interpreter keeps its main thread
# (parked in main_park) and an idle thread "main-idle". Prints "ready <module used> <id>"
# once the subinterpreter's code has started (it writes to a pipe) and its thread sleeps, or
# "ready none" when this interpreter has no subinterpreter module.
import os
import threading
import time

try:
    import _interpreters as subi
except ImportError:
    try:
        import _xxsubinterpreters as subi
    except ImportError:
        subi = None

SUB_SOURCE = """
import os, time

def sub_park():
    os.write(%d, b"up")
    while True:
        time.sleep(3600)

def sub_outer():
    sub_park()

sub_outer()
"""


def main_park():
    while True:
        time.sleep(3600)


def idle():
    time.sleep(3600)


def run_sub(interp, fd):
    code = "exec(compile(%r, 'peer_subinterp_code.py', 'exec'))" % (SUB_SOURCE % fd)
    subi.run_string(interp, code)


if __name__ == "__main__":
    threading.Thread(target=idle, name="main-idle", daemon=True).start()
    if subi is None:
        print("ready none", flush=True)
        main_park()
    rfd, wfd = os.pipe()
    interp = subi.create()
    iid = int(interp if isinstance(interp, int) else getattr(interp, "id", interp))
    runner = threading.Thread(target=run_sub, args=(interp, wfd), name="sub-runner", daemon=True)
    runner.start()
    os.read(rfd, 2)
    # Ready once the runner sleeps (a running thread's stack cannot be read from outside).
    for _ in range(3000):
        with open("/proc/self/task/%d/stat" % runner.native_id) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "S":
                break
        time.sleep(0.01)
    print("ready %s %d" % (subi.__name__, iid), flush=True)
    main_park()
