# One compute thread per CPU the job may use (hashing with the GIL released): the CPUs are busy
# and nobody queues for them beyond what the machine imposes. Not oversubscribed.
# expect: none
# sopctl: --duration 2
import hashlib
import os
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or 1)


def hash_loop(deadline):
    buf = b"x" * (INTENSITY << 22)
    while time.time() < deadline:
        hashlib.sha256(buf).digest()


if __name__ == "__main__":
    deadline = time.time() + 60
    ncpu = len(os.sched_getaffinity(0))
    threads = [threading.Thread(target=hash_loop, args=(deadline,), daemon=True) for _ in range(ncpu)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    print("ready", flush=True)
    for t in threads:
        t.join()
