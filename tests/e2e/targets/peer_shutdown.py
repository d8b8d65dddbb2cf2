# peer_shutdown.py — a process caught while it shuts down (issue 12). The main script ends
# with a daemon thread "daemon-work" still running; an atexit handler prints "ready atexit"
# and holds until the file argv[1] exists; then, while the interpreter tears down its modules
# (finalizing: the sys module is cleared), an object's __del__ prints "held finalizing" and
# holds until argv[2] exists.
# Each hold gives up by itself after 60 s, so the target always ends; it exits with status 0.
import atexit
import os
import sys
import threading
import time


def wait_for(path, sleep=time.sleep, stat=os.stat, missing=OSError):
    # Only what is bound here: module globals and builtins may be gone while the interpreter
    # tears down.
    n = 0
    while n < 6000:
        try:
            stat(path)
            return
        except missing:
            sleep(0.01)
            n += 1


def daemon_work():
    n = 0
    while True:
        n = (n + sum(range(200))) % 1000003
        time.sleep(0.001)


def at_exit_hold():
    print("ready atexit", flush=True)
    wait_for(sys.argv[1])


class Lingering:
    def __del__(self, write=os.write, wait=wait_for, gate=sys.argv[2]):
        write(1, b"held finalizing\n")
        wait(gate)


threading.Thread(target=daemon_work, name="daemon-work", daemon=True).start()
atexit.register(at_exit_hold)
# On sys, not __main__: with a daemon thread alive, __main__'s dict outlives finalization.
sys.peer_lingering = Lingering()
